//! [`OpenAiEmbedder`]: the OpenAI `/v1/embeddings` contract (OpenAI, Ollama, TEI, vLLM, ...).

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};

use crate::http::{HttpClient, HttpSettings};
use crate::{EmbedError, Embedder, ModelFingerprint, TextKind};

/// Settings of an [`OpenAiEmbedder`]. The API key is passed in (the CLI reads it from an
/// environment variable; this library reads none).
#[derive(Clone)]
pub struct OpenAiConfig {
    /// The server: `http://host:port`, `.../v1` or the full `.../v1/embeddings` URL.
    pub base_url: String,
    /// The `model` field sent with every request.
    pub model: String,
    /// Sent as `Authorization: Bearer <key>` when given.
    pub api_key: Option<String>,
    /// Timeout of one request (connect + send + receive). Default 60 s.
    pub timeout: Duration,
    /// Retries after a 429, a 5xx or a timeout (never after a refused connection). Default 4.
    pub retries: u32,
    /// First wait between attempts, doubled each retry. Default 500 ms.
    pub backoff: Duration,
    /// Texts per request. Default 64.
    pub batch_size: usize,
    /// The expected vector dimension; when `None` the first response (or
    /// [`OpenAiEmbedder::probe`]) sets it. Every vector must have it.
    pub dimensions: Option<usize>,
    /// Prepended to queries.
    pub query_prefix: String,
    /// Prepended to passages.
    pub passage_prefix: String,
    /// HTTP proxy URL (no proxy when `None`).
    pub proxy: Option<String>,
    /// A PEM file of root certificates trusted besides the system's (`--ca-file`).
    pub ca_file: Option<std::path::PathBuf>,
    /// The run's total deadline: no request starts after it and none lasts beyond it
    /// (`None`: only the per-request timeout and the retries bound a call).
    pub deadline: Option<crate::Deadline>,
}

/// Without the key, and the URLs without credentials.
impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &veredicto_core::redact::url(&self.base_url))
            .field("model", &self.model)
            .field(
                "api_key",
                &self
                    .api_key
                    .as_ref()
                    .map(|_| veredicto_core::redact::REDACTED),
            )
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("batch_size", &self.batch_size)
            .field("dimensions", &self.dimensions)
            .field(
                "proxy",
                &self.proxy.as_deref().map(veredicto_core::redact::url),
            )
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl OpenAiConfig {
    /// Defaults for `base_url` and `model`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            retries: 4,
            backoff: Duration::from_millis(500),
            batch_size: 64,
            dimensions: None,
            query_prefix: String::new(),
            passage_prefix: String::new(),
            proxy: None,
            ca_file: None,
            deadline: None,
        }
    }

    /// The embeddings endpoint: `base_url` itself when it ends in `/embeddings`, else
    /// `base_url + "/embeddings"` when it ends in `/v1`, else `base_url + "/v1/embeddings"`.
    pub fn endpoint(&self) -> String {
        crate::http::openai_endpoint(&self.base_url, "embeddings")
    }
}

/// An embedder backed by an OpenAI-compatible embeddings server.
pub struct OpenAiEmbedder {
    cfg: OpenAiConfig,
    /// Where requests go (may carry credentials).
    endpoint: String,
    /// The endpoint without credentials, for messages and fingerprints.
    url: String,
    client: Result<HttpClient, String>,
    unprobed: ModelFingerprint,
    probed: OnceLock<ModelFingerprint>,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("url", &self.url)
            .field("model", &self.cfg.model)
            .finish_non_exhaustive()
    }
}

impl OpenAiEmbedder {
    /// A client for `cfg`; nothing is sent until [`OpenAiEmbedder::probe`] or
    /// [`Embedder::embed`].
    pub fn new(cfg: OpenAiConfig) -> Self {
        let client = HttpClient::new(HttpSettings {
            timeout: cfg.timeout,
            retries: cfg.retries,
            backoff: cfg.backoff,
            api_key: cfg.api_key.clone(),
            proxy: cfg.proxy.clone(),
            ca_file: cfg.ca_file.clone(),
            deadline: cfg.deadline,
        })
        .map_err(|e| e.to_string());
        let unprobed = ModelFingerprint {
            name: cfg.model.clone(),
            architecture: "openai-compatible".into(),
            files: BTreeMap::new(),
            pooling: "server".into(),
            normalize: false,
            dim: cfg.dimensions.unwrap_or(0),
            max_tokens: 0,
            query_prefix: cfg.query_prefix.clone(),
            passage_prefix: cfg.passage_prefix.clone(),
        };
        let probed = OnceLock::new();
        if cfg.dimensions.is_some() {
            let _ = probed.set(unprobed.clone());
        }
        let endpoint = cfg.endpoint();
        OpenAiEmbedder {
            url: veredicto_core::redact::url(&endpoint),
            endpoint,
            cfg,
            client,
            unprobed,
            probed,
        }
    }

    /// The URL requests are sent to, without credentials (userinfo, secret parameters).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Learns the vector dimension (one request embedding a short text, unless already
    /// known) so that [`Embedder::fingerprint`] and [`Embedder::dim`] are complete.
    pub fn probe(&self) -> Result<usize, EmbedError> {
        if let Some(fp) = self.probed.get() {
            return Ok(fp.dim);
        }
        let v = self.request(&["dimension probe"])?;
        Ok(v.first().map_or(0, Vec::len))
    }

    fn request(&self, inputs: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let client = self
            .client
            .as_ref()
            .map_err(|reason| EmbedError::InvalidOption {
                option: "proxy",
                reason: reason.clone(),
            })?;
        let body = json!({ "model": self.cfg.model, "input": inputs });
        let resp = client.post_json(&self.endpoint, &body)?;
        let vectors = parse_embeddings(&self.url, &resp, inputs.len())?;
        for (i, v) in vectors.iter().enumerate() {
            let expected = match self.probed.get() {
                Some(fp) => fp.dim,
                None => {
                    let mut fp = self.unprobed.clone();
                    fp.dim = v.len();
                    let _ = self.probed.set(fp);
                    self.probed.get().map_or(v.len(), |fp| fp.dim)
                }
            };
            if v.len() != expected || v.is_empty() {
                return Err(EmbedError::DimensionMismatch {
                    expected,
                    got: v.len(),
                    context: format!("{} model `{}`, input {i}", self.url, self.cfg.model),
                });
            }
        }
        Ok(vectors)
    }
}

fn parse_embeddings(url: &str, resp: &Value, n: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let bad = |reason: String| EmbedError::BadResponse {
        url: url.to_string(),
        reason,
    };
    let data = resp
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `data` array".into()))?;
    if data.len() != n {
        return Err(bad(format!("{} embeddings for {n} inputs", data.len())));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for (pos, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            Some(i) => i
                .as_u64()
                .map(|i| i as usize)
                .ok_or_else(|| bad(format!("data[{pos}].index is not an integer")))?,
            None => pos,
        };
        if index >= n || out[index].is_some() {
            return Err(bad(format!(
                "data[{pos}].index {index} is out of range or repeated"
            )));
        }
        let emb = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                bad(format!(
                    "data[{pos}].embedding is not an array of numbers (request floats, not base64)"
                ))
            })?;
        let v = emb
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| bad(format!("data[{pos}].embedding has a non-number")))?;
        out[index] = Some(v);
    }
    Ok(out.into_iter().flatten().collect())
}

impl Embedder for OpenAiEmbedder {
    fn fingerprint(&self) -> &ModelFingerprint {
        self.probed.get().unwrap_or(&self.unprobed)
    }

    fn dim(&self) -> usize {
        self.fingerprint().dim
    }

    fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.cfg.batch_size == 0 {
            return Err(EmbedError::InvalidOption {
                option: "batch_size",
                reason: "must be at least 1".into(),
            });
        }
        let prefix = match kind {
            TextKind::Query => &self.cfg.query_prefix,
            TextKind::Passage => &self.cfg.passage_prefix,
        };
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.cfg.batch_size) {
            let owned: Vec<String> = chunk.iter().map(|t| format!("{prefix}{t}")).collect();
            let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
            out.extend(self.request(&refs)?);
        }
        Ok(out)
    }
}
