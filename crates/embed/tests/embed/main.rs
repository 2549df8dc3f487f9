//! veredicto-embed's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
mod cross_tiny;
mod deberta_tiny;
mod e5_reference;
mod http;
mod local_tiny;
mod minilm_reference;
