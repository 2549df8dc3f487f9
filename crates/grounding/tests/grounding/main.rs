//! veredicto-grounding's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

mod examples;
mod hygiene;
mod metrics_props;
mod package_props;
mod package_tamper;
mod review_log;
mod validation;
