//! veredicto-retrieve's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

mod cmd_protocol;
mod common;
mod engines;
mod http_answers;
mod http_cmd;
mod own_index_batch;
mod own_index_filters;
mod pgvector;
