//! veredicto-retrieve's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod chroma;
mod cmd_protocol;
mod common;
mod engines;
mod fusion_retriever;
mod http_answers;
mod http_cmd;
mod own_index_batch;
mod own_index_filters;
mod pgvector;
mod vectorize;
