//! veredicto-grounding's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod examples;
mod hygiene;
mod metrics_props;
mod package_props;
mod package_tamper;
mod review_log;
mod validation;
