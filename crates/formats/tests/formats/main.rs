//! veredicto-formats's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

mod evidence_golden;
mod evidence_policy;
mod trec_cwl;
