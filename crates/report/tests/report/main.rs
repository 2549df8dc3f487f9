//! veredicto-report's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod audit_snapshots;
mod calibration_render;
mod exactness;
mod html_chromium;
mod html_render;
mod html_support;
mod text_render;
