//! [`HttpReranker`]: rerank servers speaking the text-embeddings-inference `/rerank` contract
//! or the Cohere / Jina one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

use crate::http::{HttpClient, HttpSettings};
use crate::{EmbedError, Reranker, RerankerFingerprint};

/// Which JSON contract a rerank server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RerankApi {
    /// text-embeddings-inference: `{"query", "texts"}` -> `[{"index", "score"}]`.
    Tei,
    /// Cohere / Jina: `{"model", "query", "documents", "top_n"}` ->
    /// `{"results": [{"index", "relevance_score"}]}`.
    Cohere,
    /// Start with Cohere when a model is configured, else TEI; switch to the other contract
    /// once if the server rejects the request with 400, 404, 405, 415 or 422. Responses of
    /// either shape are understood whatever was sent.
    Auto,
}

impl RerankApi {
    fn name(self) -> &'static str {
        match self {
            RerankApi::Tei => "tei",
            RerankApi::Cohere => "cohere",
            RerankApi::Auto => "auto",
        }
    }
}

/// Settings of an [`HttpReranker`].
#[derive(Clone)]
pub struct HttpRerankConfig {
    /// The full URL posted to (e.g. `http://localhost:8080/rerank`,
    /// `https://api.cohere.com/v2/rerank`).
    pub url: String,
    /// The `model` field (Cohere / Jina require one).
    pub model: Option<String>,
    /// Sent as `Authorization: Bearer <key>` when given.
    pub api_key: Option<String>,
    /// The contract; default [`RerankApi::Auto`].
    pub api: RerankApi,
    /// Timeout of one request. Default 60 s.
    pub timeout: Duration,
    /// Retries after a 429, a 5xx or a timeout (never after a refused connection). Default 4.
    pub retries: u32,
    /// First wait between attempts, doubled each retry. Default 500 ms.
    pub backoff: Duration,
    /// Passages per request. Default 64.
    pub batch_size: usize,
    /// HTTP proxy URL (no proxy when `None`).
    pub proxy: Option<String>,
    /// A PEM file of root certificates trusted besides the system's (`--ca-file`).
    pub ca_file: Option<std::path::PathBuf>,
    /// The run's total deadline: no request starts after it and none lasts beyond it
    /// (`None`: only the per-request timeout and the retries bound a call).
    pub deadline: Option<crate::Deadline>,
}

/// Without the key, and the URLs without credentials.
impl std::fmt::Debug for HttpRerankConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpRerankConfig")
            .field("url", &veredicto_core::redact::url(&self.url))
            .field("model", &self.model)
            .field(
                "api_key",
                &self
                    .api_key
                    .as_ref()
                    .map(|_| veredicto_core::redact::REDACTED),
            )
            .field("api", &self.api)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field(
                "proxy",
                &self.proxy.as_deref().map(veredicto_core::redact::url),
            )
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl HttpRerankConfig {
    /// Defaults for `url`.
    pub fn new(url: impl Into<String>) -> Self {
        HttpRerankConfig {
            url: url.into(),
            model: None,
            api_key: None,
            api: RerankApi::Auto,
            timeout: Duration::from_secs(60),
            retries: 4,
            backoff: Duration::from_millis(500),
            batch_size: 64,
            proxy: None,
            ca_file: None,
            deadline: None,
        }
    }
}

/// A reranker backed by an HTTP rerank server.
pub struct HttpReranker {
    cfg: HttpRerankConfig,
    client: Result<HttpClient, String>,
    fingerprint: RerankerFingerprint,
    /// 0 unknown, 1 TEI, 2 Cohere: the contract the server accepted.
    detected: AtomicU8,
}

impl std::fmt::Debug for HttpReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpReranker")
            .field("url", &veredicto_core::redact::url(&self.cfg.url))
            .field("api", &self.cfg.api)
            .finish_non_exhaustive()
    }
}

impl HttpReranker {
    /// A client for `cfg`; nothing is sent until [`Reranker::score`].
    pub fn new(cfg: HttpRerankConfig) -> Self {
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
        let fingerprint = RerankerFingerprint {
            name: cfg
                .model
                .clone()
                .unwrap_or_else(|| veredicto_core::redact::url(&cfg.url)),
            architecture: "http".into(),
            files: BTreeMap::new(),
            max_tokens: 0,
            score: cfg.api.name().into(),
        };
        let detected = AtomicU8::new(match cfg.api {
            RerankApi::Tei => 1,
            RerankApi::Cohere => 2,
            RerankApi::Auto => 0,
        });
        HttpReranker {
            cfg,
            client,
            fingerprint,
            detected,
        }
    }

    /// The contract in use: the configured one, or what auto-detection settled on
    /// ([`RerankApi::Auto`] before the first request).
    pub fn api(&self) -> RerankApi {
        match self.detected.load(Ordering::Relaxed) {
            1 => RerankApi::Tei,
            2 => RerankApi::Cohere,
            _ => RerankApi::Auto,
        }
    }

    fn body(&self, api: RerankApi, query: &str, passages: &[&str]) -> Value {
        match api {
            RerankApi::Cohere => {
                let mut b = json!({
                    "query": query,
                    "documents": passages,
                    "top_n": passages.len(),
                    "return_documents": false,
                });
                if let Some(m) = &self.cfg.model {
                    b["model"] = json!(m);
                }
                b
            }
            _ => {
                let mut b = json!({
                    "query": query,
                    "texts": passages,
                    "truncate": true,
                    "raw_scores": false,
                });
                if let Some(m) = &self.cfg.model {
                    b["model"] = json!(m);
                }
                b
            }
        }
    }

    fn score_batch(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let client = self
            .client
            .as_ref()
            .map_err(|reason| EmbedError::InvalidOption {
                option: "proxy",
                reason: reason.clone(),
            })?;
        let first = match self.api() {
            RerankApi::Auto if self.cfg.model.is_some() => RerankApi::Cohere,
            RerankApi::Auto => RerankApi::Tei,
            known => known,
        };
        let resp = match client.post_json(&self.cfg.url, &self.body(first, query, passages)) {
            Ok(r) => {
                self.remember(first);
                r
            }
            Err(EmbedError::HttpStatus { status, .. })
                if self.cfg.api == RerankApi::Auto
                    && self.api() == RerankApi::Auto
                    && matches!(status, 400 | 404 | 405 | 415 | 422) =>
            {
                let other = if first == RerankApi::Tei {
                    RerankApi::Cohere
                } else {
                    RerankApi::Tei
                };
                let r = client.post_json(&self.cfg.url, &self.body(other, query, passages))?;
                self.remember(other);
                r
            }
            Err(e) => return Err(e),
        };
        parse_scores(
            &veredicto_core::redact::url(&self.cfg.url),
            &resp,
            passages.len(),
        )
    }

    fn remember(&self, api: RerankApi) {
        let code = match api {
            RerankApi::Tei => 1,
            RerankApi::Cohere => 2,
            RerankApi::Auto => 0,
        };
        let _ = self
            .detected
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Scores in input order from a TEI array or a Cohere/Jina `results` object.
fn parse_scores(url: &str, resp: &Value, n: usize) -> Result<Vec<f32>, EmbedError> {
    let bad = |reason: String| EmbedError::BadResponse {
        url: url.to_string(),
        reason,
    };
    let (items, key) = if let Some(a) = resp.as_array() {
        (a, "score")
    } else if let Some(a) = resp.get("results").and_then(Value::as_array) {
        (a, "relevance_score")
    } else {
        return Err(bad(
            "expected a JSON array [{index, score}] (TEI) or {\"results\": [{index, relevance_score}]} (Cohere/Jina)".into(),
        ));
    };
    let mut out: Vec<Option<f32>> = vec![None; n];
    for (pos, item) in items.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map(|i| i as usize)
            .ok_or_else(|| bad(format!("item {pos} has no integer `index`")))?;
        let score = item
            .get(key)
            .or_else(|| item.get("score"))
            .and_then(Value::as_f64)
            .ok_or_else(|| bad(format!("item {pos} has no numeric `{key}`")))?;
        if index >= n || out[index].is_some() {
            return Err(bad(format!(
                "item {pos}: index {index} is out of range or repeated"
            )));
        }
        out[index] = Some(score as f32);
    }
    out.into_iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| bad(format!("no score for passage {i} of {n}"))))
        .collect()
}

impl Reranker for HttpReranker {
    fn fingerprint(&self) -> &RerankerFingerprint {
        &self.fingerprint
    }

    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        if self.cfg.batch_size == 0 {
            return Err(EmbedError::InvalidOption {
                option: "batch_size",
                reason: "must be at least 1".into(),
            });
        }
        let mut out = Vec::with_capacity(passages.len());
        for chunk in passages.chunks(self.cfg.batch_size) {
            out.extend(self.score_batch(query, chunk)?);
        }
        Ok(out)
    }
}
