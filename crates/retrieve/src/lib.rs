//! The retriever seam of veredicto: one small trait, [`Retriever`], implemented by
//! veredicto's own index, by run files and by every live retriever a team may deploy
//! (an HTTP search service, a command, pgvector, OpenSearch / Elasticsearch, Qdrant), and
//! one pass of a golden set over it ([`pass`]): embedding the queries when the retriever
//! needs vectors, running the cases with bounded concurrency, per-stage latency, the
//! optional rerank stage and the exactness check's exact search. The exam over a pass,
//! recording and comparison live in the application layer (`veredicto-app`).
//!
//! A retriever is chosen by a URI ([`open`]); the scheme names the backend:
//!
//! | URI | backend |
//! |---|---|
//! | `index:DIR`, `index:DIR?mode=vector\|bm25\|hybrid` | veredicto's own exact index: vectors, its BM25 arm, or both fused ([`own_index`]) |
//! | `fusion:METHOD?PARAMS` with arms | several retrievers or run files fused ([`fusion::FusionRetriever`]) |
//! | `run:FILE`, `run:-` | a run file (TREC or JSONL), `-` = standard input |
//! | `http://…`, `https://…` | an HTTP search service (JSON contract in `docs/retrievers.md`) |
//! | `cmd:PROGRAM ARGS…` | a subprocess speaking the same JSON, one line per request, each answer echoing its request's `id` ([`cmd`]) |
//! | `postgres://USER@HOST:PORT/DB?table=T&id=COL&vector=COL` | pgvector ([`pgvector`]) |
//! | `opensearch+http(s)://…/INDEX?field=F`, `elasticsearch+…` | kNN `_search` ([`engines`]) |
//! | `qdrant+http(s)://…/COLLECTION` | Qdrant points search ([`engines`]) |
//! | `chroma+http(s)://…/COLLECTION` | a Chroma collection's query API ([`chroma`]) |
//! | `vectorize://ACCOUNT_ID/INDEX` | a Cloudflare Vectorize index's REST query API ([`vectorize`]) |
//! | `milvus+http(s)://HOST:19530/COLLECTION` | a Milvus (or Milvus Lite) collection through Milvus' gRPC API ([`milvus`]) |
//!
//! Nothing here stores or prints a credential: [`Retriever::describe`] is the URI with its
//! userinfo and secret query parameters removed ([`veredicto_core::redact::url`]).

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::time::Duration;

use veredicto_core::case::Corpus;
use veredicto_core::run::Run;

mod answer;
pub mod chroma;
pub mod cmd;
pub mod engines;
pub mod fusion;
pub mod http;
pub mod milvus;
mod net;
pub mod own_index;
pub mod pass;
pub mod pgvector;
pub mod run_file;
pub mod template;
mod uri;
pub mod vectorize;

pub use uri::{open, scheme_of, schemes_help, Backend, Scheme, SCHEME_LIST};

/// What the pipeline asks a retriever for one case.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The golden case's ID (for messages; never sent to live retrievers).
    pub case_id: &'a str,
    /// The query text.
    pub query: &'a str,
    /// The query vector: the case's `query_vector`, or the embedder's vector of the query
    /// when the retriever wants vectors and an embedder is given.
    pub vector: Option<&'a [f32]>,
    /// How many results to return (the exam's `--depth`, at least each case's K).
    pub depth: usize,
    /// The chunks the case expects: a retriever that can rank the whole collection (the own
    /// index) reports their exact rank even beyond `depth`.
    pub expected: &'a [String],
    /// Ask for the exact (brute-force) ranking instead of the approximate index's
    /// ([`Retriever::exact_search`]).
    pub exact: bool,
    /// The case's metadata filters, as declared in the golden set
    /// ([`veredicto_core::case::Case::filters`]); `None` when it declares none.
    pub filters: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// A case's filters as equality conditions `(name, value)`, for engines whose filters are
/// equalities on fields: `domain` and each facet (`facets.K` or a top-level `K`) is one
/// condition on the field of that name; each label of `label` / `labels` is one condition
/// on the field `labels` (an array field matches when one element equals). `valid_at` has
/// no equality form: it is refused with the reason.
pub fn filter_equalities(
    filters: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<(String, serde_json::Value)>, String> {
    use serde_json::Value;
    let mut out = Vec::new();
    for (key, value) in filters {
        match (key.as_str(), value) {
            ("valid_at", _) => {
                return Err(
                    "filter `valid_at` has no equivalent on this retriever (a validity window is not an equality); drop it from the case or examine the own index"
                        .to_owned(),
                )
            }
            ("label" | "labels", Value::Array(items)) => {
                out.extend(items.iter().map(|v| ("labels".to_owned(), v.clone())));
            }
            ("label" | "labels", v) => out.push(("labels".to_owned(), v.clone())),
            ("facets", Value::Object(facets)) => {
                out.extend(facets.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            (k, v) => out.push((k.to_owned(), v.clone())),
        }
    }
    Ok(out)
}

/// One result, in rank order.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The chunk ID.
    pub id: String,
    /// The retriever's score, higher is better, when it gives one.
    pub score: Option<f64>,
    /// Where the chunk sits in its document, when the retriever says (an HTTP or `cmd:`
    /// answer's `doc_id`, `start` and `end`; pgvector's `doc`, `start` and `end` columns):
    /// the exam resolves evidence with it before the corpus' span.
    pub span: Option<veredicto_core::evidence::ChunkSpan>,
}

/// A retriever's answer for one case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranking {
    /// The results, best first, at most `depth` of them.
    pub hits: Vec<Hit>,
    /// Ranks known beyond `hits`: chunk ID → (1-based rank, score).
    pub known: BTreeMap<String, (usize, Option<f64>)>,
}

/// Whether a retriever reads query vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vectors {
    /// It ranks from the text alone (a run file).
    Never,
    /// It accepts a vector when given one (HTTP, command).
    Optional,
    /// It cannot search without one (own index, pgvector, OpenSearch kNN, Qdrant).
    Required,
}

/// A retriever under examination.
pub trait Retriever: Send + Sync {
    /// The URI it was opened from, without credentials: what the history records.
    fn describe(&self) -> String;
    /// Short backend name recorded with the run: `index`, `run-file`, `http`, `cmd`, …
    fn kind(&self) -> &'static str;
    /// Whether it reads query vectors.
    fn vectors(&self) -> Vectors;
    /// Whether it can also answer with the exact (brute-force) ranking, for the
    /// exactness check.
    fn exact_search(&self) -> bool {
        false
    }
    /// Whether its ranking comes from embeddings (then the diagnosis may blame the
    /// embedding; otherwise it speaks of "the retriever").
    fn embedding_based(&self) -> bool {
        self.vectors() == Vectors::Required
    }
    /// Checks, before any case runs, what can be checked once (a table and its columns, a
    /// vector dimension). `dimension` is the embedder's, when one is loaded.
    fn prepare(&self, dimension: Option<usize>) -> Result<(), RetrieveError> {
        let _ = dimension;
        Ok(())
    }
    /// The results for one case.
    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError>;
    /// The results for several cases, in order: what [`Retriever::search`] gives for each,
    /// identical bit for bit. By default one case at a time; the own index answers the whole
    /// batch in one pass over its vectors.
    fn search_batch(&self, requests: &[Request<'_>]) -> Result<Vec<Ranking>, RetrieveError> {
        requests.iter().map(|r| self.search(r)).collect()
    }
    /// Whether [`Retriever::search_batch`] answers a batch in one pass (faster than one
    /// case at a time): the exam then sends every case in one batch and times single-query
    /// searches over a sample for the per-query latency (the exam's `latency_sample` setting).
    /// A batch fails as a whole: a batching retriever has no per-case failures.
    fn batched(&self) -> bool {
        false
    }
    /// A whole run known in advance (a run file): queries that are not golden cases are
    /// then counted as ignored, as with a run file read directly.
    fn preloaded(&self) -> Option<&Run> {
        None
    }
    /// The collection's chunks for the diagnosis, when the retriever holds them (the own
    /// index keeps each chunk's record).
    fn corpus(&self) -> Result<Option<Corpus>, RetrieveError> {
        Ok(None)
    }
    /// At least the chunks named by `ids` (those the collection holds), for an exam that
    /// reads only the chunks its report needs (the expected and the retrieved ones); the
    /// batches' chunk counts are the whole collection's. By default the whole
    /// [`Retriever::corpus`]; the own index reads only these chunks' records.
    fn corpus_for(
        &self,
        ids: &std::collections::BTreeSet<&str>,
    ) -> Result<Option<Corpus>, RetrieveError> {
        let _ = ids;
        self.corpus()
    }
    /// The identity of the collection (`sha256:…`), when known.
    fn fingerprint(&self) -> Option<String> {
        None
    }
    /// The embedding model recorded with the collection: (name, fingerprint hash).
    fn model(&self) -> (Option<String>, Option<String>) {
        (None, None)
    }
    /// Refuses an embedder whose fingerprint differs from the collection's, when the
    /// collection records one.
    fn check_model(&self, model_hash: &str) -> Result<(), RetrieveError> {
        let _ = model_hash;
        Ok(())
    }
    /// Which of `ids` the collection holds, asked by ID (at most [`HOLDS_MAX`] IDs, sent in
    /// requests of at most [`HOLDS_BATCH`]): pgvector `WHERE id = ANY($1)`, an `ids` query
    /// for OpenSearch / Elasticsearch, Qdrant's points API, the own index's chunk table.
    /// `None`: the retriever cannot tell (an HTTP service, a command, a run file): "unknown".
    /// The exam asks once, for the expected chunks that no case retrieved.
    fn holds(&self, ids: &[&str]) -> Result<Option<Holding>, RetrieveError> {
        let _ = ids;
        Ok(None)
    }
    /// The stored vectors of the chunks named by `ids` that the collection holds, in `ids`
    /// order, for comparing them with the query model's (`veredicto_vectors::check_vectors`).
    /// `None`: the retriever cannot return vectors. Chroma returns them.
    fn stored_vectors(&self, ids: &[&str]) -> Result<Option<Vec<StoredVector>>, RetrieveError> {
        let _ = ids;
        Ok(None)
    }
    /// How the engine answers `request`'s served (approximate) query, as its planner says
    /// (pgvector: `EXPLAIN`); `None` when it cannot say. Asked once, by the exactness check.
    /// `request.vector` may be `None`: the engine then plans with a vector of its own.
    fn served_plan(
        &self,
        request: &Request<'_>,
    ) -> Result<Option<veredicto_core::exam::ServedPlan>, RetrieveError> {
        let _ = request;
        Ok(None)
    }
    /// Why `request` may get fewer than `request.depth` results, when the engine can tell
    /// (pgvector: fewer rows, or an HNSW scan capped by `hnsw.ef_search`). Asked once, when
    /// some case came back short.
    fn short_cause(
        &self,
        request: &Request<'_>,
    ) -> Result<Option<veredicto_core::exam::ShortCause>, RetrieveError> {
        let _ = request;
        Ok(None)
    }
}

/// A chunk ID and its stored vector ([`Retriever::stored_vectors`]).
pub type StoredVector = (String, Vec<f32>);

/// Most expected chunk IDs one exam asks a retriever about ([`Retriever::holds`]); the rest
/// (in ID order) stay unknown.
pub const HOLDS_MAX: usize = 10_000;
/// Most IDs in one request of [`Retriever::holds`].
pub const HOLDS_BATCH: usize = 500;

/// What a retriever says about which chunk IDs its collection holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    /// The collection as messages name it: ``table `kb` ``, ``index `chunks` ``,
    /// ``collection `kb` ``.
    pub collection: String,
    /// The asked IDs it holds.
    pub present: std::collections::BTreeSet<String>,
}

/// Settings of live retrievers. Defaults: 10 s per request, 5 min in total, 2 retries
/// (waiting 250 ms, then 500 ms) on 5xx answers, timeouts and connections closed mid-answer
/// only; answers of at most 64 MiB; a command gets no environment variable.
#[derive(Debug, Clone)]
pub struct Options {
    /// Per-request timeout.
    pub timeout: Duration,
    /// Total deadline for all requests of one exam or search.
    pub deadline: Duration,
    /// Retries after a 5xx or 429 answer or a timeout (never after another 4xx or a refused connection).
    pub retries: u32,
    /// First wait between attempts; doubled after each retry.
    pub backoff: Duration,
    /// Extra request headers (name, value). Values come from the environment
    /// (`--header-env NAME=ENVVAR`) and are never stored or printed.
    pub headers: Vec<(String, String)>,
    /// JSON pointer to the result list in an HTTP / command response (default `/results`).
    pub results_pointer: String,
    /// JSON pointer to the ID inside one result (default `/id`).
    pub id_pointer: String,
    /// JSON pointer to the score inside one result (default `/score`; absent = no score).
    pub score_pointer: String,
    /// Read a numeric chunk ID as text (an integer, written exactly); by default an ID must
    /// be a string.
    pub id_as_text: bool,
    /// Largest answer read: an HTTP body, a command's answer line (default
    /// [`DEFAULT_MAX_ANSWER_BYTES`]). Answers are parsed as they stream in and only `depth`
    /// results are kept, so this bounds the bytes read, not what is held.
    pub max_answer_bytes: u64,
    /// The environment a `cmd:` program runs with, and nothing else: the caller chooses
    /// it ([`cmd::passed_by_default`] names the variables the command line passes).
    pub command_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// The request body of an HTTP retriever, when not the default contract's.
    pub body_template: Option<template::BodyTemplate>,
    /// A PEM file of root certificates an HTTPS retriever is trusted with, besides the
    /// system's (`--ca-file`).
    pub ca_file: Option<std::path::PathBuf>,
}

/// Default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default total deadline.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);
/// Default largest answer: 64 MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 64 << 20;

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: DEFAULT_TIMEOUT,
            deadline: DEFAULT_DEADLINE,
            retries: 2,
            backoff: Duration::from_millis(250),
            headers: Vec::new(),
            results_pointer: "/results".to_owned(),
            id_pointer: "/id".to_owned(),
            score_pointer: "/score".to_owned(),
            id_as_text: false,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            command_env: Vec::new(),
            body_template: None,
            ca_file: None,
        }
    }
}

impl Options {
    /// How long to wait before retry number `attempt` (1 for the first retry): `backoff`,
    /// doubled after each retry, at most 30 s. Shared by every retrying retriever.
    pub(crate) fn retry_wait(&self, attempt: u32) -> Duration {
        self.backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(Duration::from_secs(30))
    }
}

/// Why retrieving failed.
#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    /// A retriever URI that names no known backend or is malformed.
    #[error("retriever `{uri}`: {reason}")]
    Uri {
        /// The URI, without credentials.
        uri: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The retriever cannot be used at all (a missing table, a dimension mismatch, a
    /// server that never answers, an answer that breaks the contract). The exam stops
    /// with an error.
    #[error("{uri}: {reason}")]
    Setup {
        /// The retriever, without credentials.
        uri: String,
        /// What went wrong.
        reason: String,
    },
    /// The retriever failed for this case only (a 5xx after retries, a timeout after an
    /// earlier success). The case fails with `no_results` and this message.
    #[error("{uri}: {reason}")]
    Case {
        /// The retriever, without credentials.
        uri: String,
        /// What went wrong.
        reason: String,
    },
    /// A chunk ID answered twice for one case under `--duplicates refuse`.
    #[error("{uri}: case `{}`: chunk `{}` is returned twice (ranks {first} and {again}), and --duplicates refuse is set. Several chunks of one document mapped to one ID, or a hybrid merge that returned an ID twice, are common causes; --duplicates keep-first (the default) keeps the first occurrence and reports the others", veredicto_core::redact::short(case), veredicto_core::redact::short(id))]
    Duplicate {
        /// The retriever, without credentials.
        uri: String,
        /// The case ID.
        case: String,
        /// The repeated chunk ID.
        id: String,
        /// 1-based rank of its first occurrence.
        first: usize,
        /// 1-based rank of its repetition.
        again: usize,
    },
    /// The retriever failed for more cases than `--max-retriever-failures` allows, or for
    /// every case: the exam cannot judge the knowledge base, and records nothing.
    #[error("{uri}: {}", failed_message(*failed, *cases, *limit, last_case, last))]
    RetrieverFailed {
        /// The retriever, without credentials.
        uri: String,
        /// Cases it failed for.
        failed: usize,
        /// Cases in the golden set.
        cases: usize,
        /// The limit that was passed.
        limit: veredicto_core::retrieval::FailureLimit,
        /// The last failing case, in case order.
        last_case: String,
        /// Its failure.
        last: String,
    },
    /// A precomputed `query_vector` or an embedder whose dimension the retriever refuses.
    #[error("case `{case}`: field `query_vector` has dimension {got}, the retriever has {want}")]
    QueryDimension {
        /// The case ID.
        case: String,
        /// The vector's dimension.
        got: usize,
        /// The retriever's dimension.
        want: usize,
    },
    /// The retriever needs vectors and the case has none and no embedder is loaded.
    #[error("case `{case}` has no `query_vector` and no embedder is loaded")]
    NoVector {
        /// The case ID.
        case: String,
    },
    /// The embedder failed on a query.
    #[error("embedding the query of case `{case}`")]
    Embed {
        /// The case ID.
        case: String,
        /// What the embedder said.
        #[source]
        source: veredicto_embed::EmbedError,
    },
    /// The reranker failed.
    #[error("reranking case `{case}`")]
    Rerank {
        /// The case ID.
        case: String,
        /// What the reranker said.
        #[source]
        source: veredicto_embed::EmbedError,
    },
    /// A reranker that answered with the wrong number of scores.
    #[error("reranking case `{case}`: {got} scores for {want} passages")]
    RerankCount {
        /// The case ID.
        case: String,
        /// Scores returned.
        got: usize,
        /// Passages sent.
        want: usize,
    },
    /// The own index failed.
    #[error(transparent)]
    Index(#[from] veredicto_index::IndexError),
    /// A run file or a stored record that does not parse.
    #[error(transparent)]
    Format(#[from] veredicto_formats::FormatError),
    /// Reading standard input.
    #[error("reading the run from standard input: {0}")]
    Stdin(#[source] std::io::Error),
    /// The caller stopped the pass ([`pass::Settings::cancel`]).
    #[error("cancelled")]
    Cancelled,
}

/// The text of [`RetrieveError::RetrieverFailed`] after the retriever's name.
fn failed_message(
    failed: usize,
    cases: usize,
    limit: veredicto_core::retrieval::FailureLimit,
    last_case: &str,
    last: &str,
) -> String {
    let how_many = if failed >= cases {
        format!("the retriever failed for every case ({failed} of {cases})")
    } else {
        format!(
            "the retriever failed for {failed} of {cases} cases, more than --max-retriever-failures {limit} allows"
        )
    };
    format!(
        "{how_many}: the exam cannot judge the knowledge base and records nothing. Last failure, case `{}`: {}",
        veredicto_core::redact::short(last_case),
        veredicto_core::redact::message(last)
    )
}

impl RetrieveError {
    /// Whether the error concerns one case only (the exam goes on; the case fails).
    pub fn is_case_only(&self) -> bool {
        matches!(self, RetrieveError::Case { .. })
    }
}

/// The reason a store's vectors cannot be searched with the embedder's, when both dimensions
/// are known and differ (`holder` names what holds the vectors: "collection", "index").
pub(crate) fn dimension_mismatch(
    stored: Option<usize>,
    embedder: Option<usize>,
    holder: &str,
) -> Option<String> {
    match (stored, embedder) {
        (Some(want), Some(got)) if want != got => Some(format!(
            "its vectors have dimension {want}, the embedder's have {got} (another model embedded the {holder}?)"
        )),
        _ => None,
    }
}
