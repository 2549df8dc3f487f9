//! veredicto-formats's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod evidence_golden;
mod evidence_policy;
mod traces_memory;
mod trec_cwl;
