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
mod live_spans;
mod milvus;
mod own_index_batch;
mod own_index_filters;
mod pgvector;
mod stored_vectors;
mod vectorize;

/// The exam as these tests read it: its findings worded, as every renderer words them.
mod worded {
    use veredicto_app::exam::{Examined, Inputs};
    use veredicto_embed::Embedder;
    use veredicto_retrieve::pass::Settings;
    use veredicto_retrieve::{RetrieveError, Retriever};

    #[allow(clippy::result_large_err)] // the retrievers' own error, as the exam returns it
    pub fn examine(
        retriever: &dyn Retriever,
        embedder: Option<&dyn Embedder>,
        inputs: &Inputs<'_>,
        settings: &Settings<'_>,
    ) -> Result<Examined, RetrieveError> {
        veredicto_app::exam::examine(retriever, embedder, inputs, settings).map(|mut e| {
            e.report = veredicto_report::findings::worded_exam(&e.report);
            e
        })
    }
}
