//! A blocking JSON-over-HTTP client with timeouts and retries (exponential backoff on 429,
//! 5xx, timeouts and connection errors), shared by the embedding and rerank clients.

use std::time::{Duration, Instant};

use serde_json::Value;
use veredicto_core::redact;

use crate::EmbedError;

/// Settings common to every HTTP client of this crate.
#[derive(Clone, Debug)]
pub(crate) struct HttpSettings {
    pub timeout: Duration,
    pub retries: u32,
    pub backoff: Duration,
    pub api_key: Option<String>,
    pub proxy: Option<String>,
    /// When every request of the run must have ended ([`Deadline`]).
    pub deadline: Option<Deadline>,
}

/// A total deadline shared by every request of a run: no attempt starts after it, and no
/// attempt's timeout reaches beyond it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    /// When the run started.
    pub start: Instant,
    /// How long it may take in all.
    pub total: Duration,
}

impl Deadline {
    /// A deadline `total` from now.
    pub fn after(total: Duration) -> Deadline {
        Deadline {
            start: Instant::now(),
            total,
        }
    }

    /// Time left, `None` once it passed.
    pub fn left(&self) -> Option<Duration> {
        self.total
            .checked_sub(self.start.elapsed())
            .filter(|d| !d.is_zero())
    }
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
                reason: format!("`{}`: {e}", redact::url(p)),
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
    ///
    /// Credentials in `url` are used, never shown: a `user:pass@` userinfo is taken out of
    /// the request line and sent as `Authorization: Basic …` (unless an API key is set, whose
    /// bearer token wins); secret query parameters (`?key=…`) are sent as given. Errors name
    /// the URL without credentials and echo response bodies with secrets redacted.
    pub(crate) fn post_json(&self, url: &str, body: &Value) -> Result<Value, EmbedError> {
        let (request_url, basic) = split_userinfo(url);
        let url = &redact::url(url);
        let payload = serde_json::to_vec(body).map_err(|e| EmbedError::InvalidOption {
            option: "request",
            reason: e.to_string(),
        })?;
        let max_attempts = self.settings.retries.saturating_add(1);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut timeout = self.settings.timeout;
            if let Some(deadline) = &self.settings.deadline {
                let Some(left) = deadline.left() else {
                    return Err(EmbedError::HttpDeadline {
                        url: url.to_string(),
                        deadline_ms: deadline.total.as_millis() as u64,
                        attempts: attempt - 1,
                    });
                };
                timeout = timeout.min(left);
            }
            let mut req = self
                .agent
                .post(&request_url)
                .config()
                .timeout_global(Some(timeout))
                .build()
                .header("Content-Type", "application/json")
                .header("Accept", "application/json");
            if let Some(key) = &self.settings.api_key {
                req = req.header("Authorization", format!("Bearer {key}"));
            } else if let Some(basic) = &basic {
                req = req.header("Authorization", format!("Basic {basic}"));
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
                        Err(e) => (self.transport_error(url, attempt, timeout, e), None),
                    }
                }
                Err(e) => (self.transport_error(url, attempt, timeout, e), None),
            };
            if attempt >= max_attempts {
                return Err(failure);
            }
            let exp = self
                .settings
                .backoff
                .saturating_mul(1u32 << (attempt - 1).min(16));
            let mut wait = retry_after.unwrap_or(exp).min(MAX_BACKOFF);
            if let Some(deadline) = &self.settings.deadline {
                match deadline.left() {
                    Some(left) if left > wait => {}
                    // No time for another attempt after the wait: the deadline ends the run.
                    _ => {
                        return Err(match failure {
                            EmbedError::HttpTimeout { .. } => EmbedError::HttpDeadline {
                                url: url.to_string(),
                                deadline_ms: deadline.total.as_millis() as u64,
                                attempts: attempt,
                            },
                            other => other,
                        })
                    }
                }
                wait = wait.min(deadline.left().unwrap_or_default());
            }
            std::thread::sleep(wait);
        }
    }

    fn transport_error(
        &self,
        url: &str,
        attempts: u32,
        timeout: Duration,
        e: ureq::Error,
    ) -> EmbedError {
        let timed_out = || match &self.settings.deadline {
            // The attempt was cut short by the total deadline, not by its own timeout.
            Some(d) if timeout < self.settings.timeout && d.left().is_none() => {
                EmbedError::HttpDeadline {
                    url: url.to_string(),
                    deadline_ms: d.total.as_millis() as u64,
                    attempts,
                }
            }
            _ => EmbedError::HttpTimeout {
                url: url.to_string(),
                timeout_ms: timeout.as_millis() as u64,
                attempts,
            },
        };
        match e {
            ureq::Error::Timeout(_) => timed_out(),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => timed_out(),
            other => EmbedError::HttpTransport {
                url: url.to_string(),
                attempts,
                reason: redact::secrets_in_text(&other.to_string()),
            },
        }
    }
}

/// An OpenAI-style endpoint from a base URL: `base` itself when its path already ends in
/// `/<path>`, else `base + "/<path>"` when it ends in `/v1`, else `base + "/v1/<path>"`. A
/// query string (`?api-version=…&key=…`) stays after the path; a fragment is dropped.
pub(crate) fn openai_endpoint(base_url: &str, path: &str) -> String {
    let base_url = base_url.split('#').next().unwrap_or("");
    let (base, query) = match base_url.find('?') {
        Some(q) => (&base_url[..q], &base_url[q..]),
        None => (base_url, ""),
    };
    let base = base.trim_end_matches('/');
    if base.ends_with(&format!("/{path}")) {
        format!("{base}{query}")
    } else if base.ends_with("/v1") {
        format!("{base}/{path}{query}")
    } else {
        format!("{base}/v1/{path}{query}")
    }
}

/// `url` without its `user:pass@` userinfo, and the `user:pass` (percent-decoded) in base64
/// for an `Authorization: Basic` header when there was one.
fn split_userinfo(url: &str) -> (String, Option<String>) {
    let Some(scheme_end) = url.find("://") else {
        return (url.to_string(), None);
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return (url.to_string(), None);
    };
    let userinfo = &rest[..at];
    let (user, pass) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let mut plain = percent_decode(user);
    plain.push(b':');
    plain.extend(percent_decode(pass));
    let stripped = format!("{}{}", &url[..scheme_end + 3], &rest[at + 1..]);
    (stripped, Some(base64(&plain)))
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The first 300 characters of a body, secrets redacted, for error messages.
fn excerpt(text: &str) -> String {
    redact::excerpt(&redact::secrets_in_text(text.trim()), 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_query_stays_after_the_endpoint_path() {
        assert_eq!(
            openai_endpoint("https://h/openai?api-version=1&key=k", "embeddings"),
            "https://h/openai/v1/embeddings?api-version=1&key=k"
        );
        assert_eq!(
            openai_endpoint("https://h/v1/?key=k", "chat/completions"),
            "https://h/v1/chat/completions?key=k"
        );
        assert_eq!(
            openai_endpoint("https://h/v1/embeddings?key=k", "embeddings"),
            "https://h/v1/embeddings?key=k"
        );
        assert_eq!(
            openai_endpoint("http://h:1", "embeddings"),
            "http://h:1/v1/embeddings"
        );
    }

    #[test]
    fn userinfo_becomes_basic_auth() {
        let (u, b) = split_userinfo("http://Aladdin:open%20sesame@h:8/v1?x=1");
        assert_eq!(u, "http://h:8/v1?x=1");
        assert_eq!(b.as_deref(), Some("QWxhZGRpbjpvcGVuIHNlc2FtZQ=="));
        assert_eq!(split_userinfo("http://h/a@b").1, None);
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
