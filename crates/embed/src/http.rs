//! A blocking JSON-over-HTTP client with timeouts and retries (exponential backoff on 429,
//! 5xx, timeouts and connection errors), shared by the embedding and rerank clients.

use std::time::Duration;

use serde_json::Value;

use crate::EmbedError;

/// Settings common to every HTTP client of this crate.
#[derive(Clone, Debug)]
pub(crate) struct HttpSettings {
    pub timeout: Duration,
    pub retries: u32,
    pub backoff: Duration,
    pub api_key: Option<String>,
    pub proxy: Option<String>,
}

pub(crate) struct HttpClient {
    agent: ureq::Agent,
    settings: HttpSettings,
}

/// Longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Largest response body accepted.
const MAX_BODY: u64 = 512 << 20;

impl HttpClient {
    pub(crate) fn new(settings: HttpSettings) -> Result<Self, EmbedError> {
        let proxy = match &settings.proxy {
            None => None,
            Some(p) => Some(ureq::Proxy::new(p).map_err(|e| EmbedError::InvalidOption {
                option: "proxy",
                reason: format!("`{p}`: {e}"),
            })?),
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(settings.timeout))
            .http_status_as_error(false)
            .proxy(proxy)
            .user_agent(concat!("veredicto-embed/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(HttpClient { agent, settings })
    }

    /// POSTs `body` to `url` and parses the 2xx response as JSON. Retries retryable failures
    /// `retries` times, waiting `backoff`, `2 backoff`, `4 backoff`, ... (or the server's
    /// `Retry-After`, capped at 30 s).
    pub(crate) fn post_json(&self, url: &str, body: &Value) -> Result<Value, EmbedError> {
        let payload = serde_json::to_vec(body).map_err(|e| EmbedError::InvalidOption {
            option: "request",
            reason: e.to_string(),
        })?;
        let max_attempts = self.settings.retries.saturating_add(1);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut req = self
                .agent
                .post(url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json");
            if let Some(key) = &self.settings.api_key {
                req = req.header("Authorization", format!("Bearer {key}"));
            }
            let (failure, retry_after) = match req.send(&payload[..]) {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let text = resp
                        .into_body()
                        .with_config()
                        .limit(MAX_BODY)
                        .read_to_string();
                    match text {
                        Ok(text) if (200..300).contains(&status) => {
                            return serde_json::from_str(&text).map_err(|e| {
                                EmbedError::BadResponse {
                                    url: url.to_string(),
                                    reason: format!("body is not JSON ({e}): {}", excerpt(&text)),
                                }
                            });
                        }
                        Ok(text) => {
                            let err = EmbedError::HttpStatus {
                                url: url.to_string(),
                                status,
                                attempts: attempt,
                                body: excerpt(&text),
                            };
                            if status != 429 && !(500..600).contains(&status) {
                                return Err(err);
                            }
                            (err, retry_after)
                        }
                        Err(e) => (self.transport_error(url, attempt, e), None),
                    }
                }
                Err(e) => (self.transport_error(url, attempt, e), None),
            };
            if attempt >= max_attempts {
                return Err(failure);
            }
            let exp = self
                .settings
                .backoff
                .saturating_mul(1u32 << (attempt - 1).min(16));
            std::thread::sleep(retry_after.unwrap_or(exp).min(MAX_BACKOFF));
        }
    }

    fn transport_error(&self, url: &str, attempts: u32, e: ureq::Error) -> EmbedError {
        match e {
            ureq::Error::Timeout(_) => EmbedError::HttpTimeout {
                url: url.to_string(),
                timeout_ms: self.settings.timeout.as_millis() as u64,
                attempts,
            },
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                EmbedError::HttpTimeout {
                    url: url.to_string(),
                    timeout_ms: self.settings.timeout.as_millis() as u64,
                    attempts,
                }
            }
            other => EmbedError::HttpTransport {
                url: url.to_string(),
                attempts,
                reason: other.to_string(),
            },
        }
    }
}

/// An OpenAI-style endpoint from a base URL: `base` itself when it already ends in
/// `/<path>`, else `base + "/<path>"` when it ends in `/v1`, else `base + "/v1/<path>"`.
pub(crate) fn openai_endpoint(base_url: &str, path: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with(&format!("/{path}")) {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/{path}")
    } else {
        format!("{base}/v1/{path}")
    }
}

/// The first 300 characters of a body, for error messages.
fn excerpt(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}
