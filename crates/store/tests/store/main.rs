//! veredicto-store's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod common;
mod acceptances;
mod crash;
mod history;
mod hygiene;
mod postgres;
mod run_chunks;
