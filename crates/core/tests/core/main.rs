//! veredicto-core's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod compare_compat;
mod compare_patterns;
mod compare_rack;
mod compare_significance;
mod compare_stats;
mod compare_support;
mod diagnosis_checklist;
mod evidence_reference;
mod exam_props;
mod fusion_ranx;
mod measure_props;
mod measures_doc;
mod noise_findings;
mod seed_examples;
mod structural_noise_reasons;
