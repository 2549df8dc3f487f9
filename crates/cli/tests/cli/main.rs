//! veredicto's integration tests as one binary (one link for the crate): each
//! module below was a test file of its own.

// Tests may say on their output what they skipped and why.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod action_cli;
mod audit_citations_cli;
mod audit_cli;
mod audit_integrity;
mod audit_relevance_cli;
mod audit_runs_cli;
mod boost_cli;
mod calibrate_cli;
mod check_vectors_cli;
mod common;
mod damaged_index_cli;
mod dates_cli;
mod docs_pages;
mod drafts_cli;
mod drift_cli;
mod exam_bad_input;
mod exam_cli;
mod first_hour;
mod friday_story;
mod fusion_cli;
mod gate_cli;
mod golden_cli;
mod history_cli;
mod history_postgres_cli;
mod hygiene_cli;
mod index_cli;
mod ingest_safety_cli;
mod live_retriever_cli;
mod matrix_cli;
mod models_cli;
mod pgvector_cli;
mod project_cli;
mod project_trust_cli;
mod retriever_answers_cli;
mod retriever_cli;
mod scifact_chunkings;
mod search_spans_cli;
mod serve_cli;
mod signals_corpus_cli;
mod signals_memory;
mod signals_traces_cli;
mod snapshots_cli;
#[path = "../../../embed/tests/embed/common/mod.rs"]
mod tiny;
mod trec_quicktest;
