//! veredicto-index's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

mod common;
mod damaged_index;
mod format;
mod ingest;
mod precomputed_vectors;
mod search;
mod writer_lock;
mod records;
