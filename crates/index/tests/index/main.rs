//! veredicto-index's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;
mod damaged_index;
mod format;
mod ingest;
mod lexical;
mod precomputed_vectors;
mod records;
mod search;
mod writer_lock;
