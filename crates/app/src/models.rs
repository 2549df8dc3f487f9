//! Choosing and loading the embedder and the reranker: a known model's name resolved in the
//! models folder, the model an index was built with, the default model, an OpenAI-compatible
//! embeddings server, a cross-encoder folder or an HTTP rerank server. Every front end loads
//! models through here, with the environment it resolved its settings from (never the
//! process's own), so the command line, the Python package and the workbench choose the same
//! model for the same inputs.

use crate::{Context, Env, Error, Result, Settings};
use std::path::{Path, PathBuf};
use std::time::Duration;
use veredicto_core::case::Case;
use veredicto_embed::{
    CrossEncoder, Deadline, Embedder, HttpRerankConfig, HttpReranker, OpenAiConfig, OpenAiEmbedder,
    Reranker,
};
use veredicto_retrieve::Retriever;

/// The model used when neither a model is named nor an index's recorded model decides: the
/// multilingual one, since the knowledge bases veredicto is made for are often not English
/// (all-MiniLM-L6-v2 is English-only). Looked up in the models folder ([`models_root`]),
/// then in `models/multilingual-e5-small` of the working folder (where
/// `scripts/fetch-e5.sh` puts it in a checkout).
pub const DEFAULT_MODEL: &str = "multilingual-e5-small";

/// The network settings of an embeddings or rerank server: per-request timeout, retries and
/// the PEM file of extra root certificates.
#[derive(Debug, Clone)]
pub struct HttpNet {
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retries after a 5xx or 429 answer or a timeout.
    pub retries: u32,
    /// Root certificates trusted besides the system's.
    pub ca_file: Option<PathBuf>,
}

impl From<(Duration, u32)> for HttpNet {
    fn from((timeout, retries): (Duration, u32)) -> HttpNet {
        HttpNet {
            timeout,
            retries,
            ca_file: None,
        }
    }
}

/// Which embedder to load, as a front end was told.
#[derive(Debug, Clone, Default)]
pub struct EmbedderSpec {
    /// A known model's name or a model folder; `None` takes the settings' model, else the
    /// index's recorded model, else [`DEFAULT_MODEL`].
    pub model: Option<String>,
    /// `openai:URL`: an OpenAI-compatible embeddings server instead of a local model.
    pub embedder: Option<String>,
    /// The model name sent to the embeddings server.
    pub embedder_model: String,
    /// The environment variable holding the server's API key (sent as a bearer token; its
    /// value is never stored or printed).
    pub api_key_env: String,
}

impl EmbedderSpec {
    /// Whether a model or a server was named explicitly.
    pub fn explicit(&self) -> bool {
        self.embedder.is_some() || self.model.is_some()
    }
}

/// What loading a model needs of the settings: the environment (the models folder, the API
/// keys) and the settings' model.
#[derive(Debug, Clone, Copy)]
pub struct ModelPlaces<'a> {
    /// The environment the settings were resolved from.
    pub env: &'a Env,
    /// The settings' model (flag, environment, project file), if any.
    pub model: Option<&'a str>,
}

impl<'a> ModelPlaces<'a> {
    /// The places of these settings.
    pub fn of(settings: &'a Settings) -> ModelPlaces<'a> {
        ModelPlaces {
            env: &settings.env,
            model: settings.model.as_deref(),
        }
    }
}

/// The models folder: `VEREDICTO_MODELS`, else `$XDG_CACHE_HOME/veredicto/models`, else
/// `~/.cache/veredicto/models`.
pub fn models_root(env: &Env) -> Result<PathBuf> {
    let var = |k: &str| env.get_os(k).map(PathBuf::from);
    veredicto_embed::models_root(var("VEREDICTO_MODELS"), var("XDG_CACHE_HOME"), var("HOME"))
        .ok_or_else(|| Error::Message("no models folder: set VEREDICTO_MODELS (or HOME)".into()))
}

/// A known model's folder under [`models_root`] (it must have been fetched), or any other
/// value as a folder.
pub fn resolve_model(spec: &str, env: &Env) -> Result<PathBuf> {
    let Some(m) = veredicto_embed::known_model(spec) else {
        return Ok(PathBuf::from(spec));
    };
    let dir = models_root(env)?.join(m.name);
    if !dir.is_dir() {
        return Err(Error::Message(format!(
            "model {} is not fetched (looked in {}); run `veredicto models fetch {}`",
            m.name,
            dir.display(),
            m.name
        )));
    }
    Ok(dir)
}

/// The folder of [`DEFAULT_MODEL`]: under the models folder `root` when fetched there, else
/// `models/multilingual-e5-small` of the working folder; an error naming both places and
/// the command that fetches it otherwise.
fn default_model_dir(root: Option<PathBuf>) -> Result<PathBuf> {
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
    Err(Error::Message(format!(
        "the default model {DEFAULT_MODEL} is not fetched (looked in {looked}); run `veredicto models fetch {DEFAULT_MODEL}`, or pass --model NAME|DIR"
    )))
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

/// The API key in the environment variable `var`, when set and not empty.
fn api_key(env: &Env, var: &str) -> Option<String> {
    env.get(var).filter(|k| !k.is_empty())
}

/// Loads the embedder `spec` names: its server, else its local model (else the places'
/// model), else the model recorded in the index at `index_dir` (when there is one), else
/// [`DEFAULT_MODEL`]. `net` and `deadline` bound every request to an embeddings server.
pub fn load_embedder(
    spec: &EmbedderSpec,
    places: ModelPlaces<'_>,
    index_dir: Option<&Path>,
    net: Option<HttpNet>,
    deadline: Option<Deadline>,
) -> Result<Box<dyn Embedder>> {
    if let Some(server) = &spec.embedder {
        let url = server.strip_prefix("openai:").ok_or_else(|| {
            Error::Message(format!(
                "--embedder must be `openai:URL`, got `{}`",
                veredicto_core::redact::url(server)
            ))
        })?;
        let mut cfg = OpenAiConfig::new(url, spec.embedder_model.clone());
        cfg.api_key = api_key(places.env, &spec.api_key_env);
        if let Some(net) = net {
            cfg.timeout = net.timeout;
            cfg.retries = net.retries;
            cfg.ca_file = net.ca_file;
        }
        cfg.deadline = deadline;
        let e = OpenAiEmbedder::new(cfg);
        let url = e.url().to_owned();
        e.probe()
            .context(format!("probing the embeddings server at {url}"))?;
        return Ok(Box::new(e));
    }
    let model = spec.model.as_deref().or(places.model);
    let dir = match (model, index_dir.and_then(recorded_model)) {
        (Some(name), _) => resolve_model(name, places.env)?,
        (None, Some((folder, name))) => {
            if !folder.is_dir() {
                let hint = match veredicto_embed::known_model(&name) {
                    Some(m) => format!("run `veredicto models fetch {}`", m.name),
                    None => "pass --model".to_string(),
                };
                return Err(Error::Message(format!(
                    "the index was built with model {name} from {}, which is no longer there; {hint}",
                    folder.display()
                )));
            }
            folder
        }
        (None, None) => default_model_dir(models_root(places.env).ok())?,
    };
    Ok(veredicto_embed::load_local_embedder(&dir, None)?)
}

/// The embedder a retriever needs: for one that requires vectors, the model when a case has
/// no `query_vector` (checked against the collection's model when it records one); for one
/// that accepts vectors, only when a model or server is named explicitly. `None` when none
/// is needed. `index_dir`: the own index the retriever reads (alone or as an arm of a
/// fusion): the model it was built with is the default.
pub fn embedder_for(
    retriever: &dyn Retriever,
    index_dir: Option<&Path>,
    spec: &EmbedderSpec,
    places: ModelPlaces<'_>,
    net: HttpNet,
    deadline: Deadline,
    cases: &[Case],
) -> Result<Option<Box<dyn Embedder>>> {
    if !crate::exam::needs_embedder(retriever, cases, spec.explicit()) {
        return Ok(None);
    }
    let e = load_embedder(spec, places, index_dir, Some(net), Some(deadline))?;
    retriever.check_model(&crate::ingest::index_fingerprint(e.as_ref()).hash)?;
    Ok(Some(e))
}

/// `--rerank MODEL_DIR|URL`: a local cross-encoder folder, or an HTTP `/rerank` endpoint
/// whose API key is read from the environment variable `api_key_env`; `net` and `deadline`
/// bound the latter's requests.
pub fn load_reranker(
    spec: &str,
    env: &Env,
    api_key_env: &str,
    net: Option<HttpNet>,
    deadline: Option<Deadline>,
) -> Result<Box<dyn Reranker>> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        let mut cfg = HttpRerankConfig::new(spec);
        cfg.api_key = api_key(env, api_key_env);
        if let Some(net) = net {
            cfg.timeout = net.timeout;
            cfg.retries = net.retries;
            cfg.ca_file = net.ca_file;
        }
        cfg.deadline = deadline;
        Ok(Box::new(HttpReranker::new(cfg)))
    } else {
        Ok(Box::new(CrossEncoder::load(Path::new(spec))?))
    }
}
