//! One blocking JSON-over-HTTP client for every HTTP peer veredicto talks to (live
//! retrievers, search engines, embeddings, rerank and chat servers), with one rule:
//!
//! - each attempt has a timeout, and no attempt's timeout reaches past the total
//!   [`Deadline`] of the run; no attempt starts after it;
//! - retried: a timeout, a 5xx answer and 429 (too many requests), `retries` times, waiting
//!   `backoff`, `2 backoff`, `4 backoff`, … (at most 30 s), or the server's `Retry-After`
//!   (seconds) on 429 and 503; when the wait would end past the deadline, no retry;
//! - not retried: a refused connection, a host not found, a TLS failure, any other 4xx, a
//!   redirect (never followed: reported with its target), a 2xx body that is not JSON or is
//!   larger than the cap;
//! - secrets never printed: header values are not in `Debug` or errors, a `user:pass@` in
//!   the URL is sent as `Authorization: Basic …` (unless an `Authorization` header is
//!   given) and URLs in errors are redacted; bodies echoed in errors are cut and redacted.
//!
//! TLS: rustls, trusting the system's roots (Mozilla's when it has none) plus a PEM file
//! ([`HttpSettings::ca_file`]).

use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use veredicto_core::redact;

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

/// Which proxy requests go through.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Proxy {
    /// `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` and `NO_PROXY`, as ureq reads them.
    #[default]
    Environment,
    /// Direct connections only.
    Off,
    /// This proxy URL.
    Url(String),
}

/// Longest wait between two attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Settings of one [`HttpClient`].
#[derive(Clone)]
pub struct HttpSettings {
    /// Timeout of one attempt (connecting, sending, reading the answer).
    pub timeout: Duration,
    /// Attempts after the first for a retryable failure.
    pub retries: u32,
    /// First wait between attempts, doubled after each retry (at most [`MAX_BACKOFF`]).
    pub backoff: Duration,
    /// When every request must have ended.
    pub deadline: Option<Deadline>,
    /// Extra headers (name, value); values are secrets (never printed).
    pub headers: Vec<(String, String)>,
    /// The proxy.
    pub proxy: Proxy,
    /// Largest answer body read, in bytes.
    pub max_body: u64,
    /// A PEM file of root certificates trusted besides the system's.
    pub ca_file: Option<PathBuf>,
    /// The `User-Agent` header.
    pub user_agent: String,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            timeout: Duration::from_secs(10),
            retries: 2,
            backoff: Duration::from_millis(250),
            deadline: None,
            headers: Vec::new(),
            proxy: Proxy::Environment,
            max_body: 64 << 20,
            ca_file: None,
            user_agent: concat!("veredicto/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// Header values left out.
impl std::fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        let proxy = match &self.proxy {
            Proxy::Url(u) => Proxy::Url(redact::url(u)),
            other => other.clone(),
        };
        f.debug_struct("HttpSettings")
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("backoff", &self.backoff)
            .field("deadline", &self.deadline)
            .field("headers", &headers)
            .field("proxy", &proxy)
            .field("max_body", &self.max_body)
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl HttpSettings {
    /// The wait before retry number `attempt` (1 for the first retry): `backoff` doubled
    /// `attempt - 1` times, at most [`MAX_BACKOFF`].
    pub fn retry_wait(&self, attempt: u32) -> Duration {
        self.backoff
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(MAX_BACKOFF)
    }
}

/// Why a request failed. URLs are redacted; bodies are cut to 300 characters, redacted.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A setting that cannot be used (a proxy URL, a CA file).
    #[error("{option}: {reason}")]
    Setup {
        /// Which setting.
        option: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The server answered with an error status (after retries when retryable).
    #[error("{url}: HTTP {status} after {attempts} attempt(s): {body}")]
    Status {
        /// The URL, redacted.
        url: String,
        /// The last status.
        status: u16,
        /// Requests made.
        attempts: u32,
        /// The start of the last body.
        body: String,
    },
    /// The server answered with a redirect, which is not followed.
    #[error(
        "{url}: HTTP {status} redirects to `{location}`; redirects are not followed: use that URL"
    )]
    Redirect {
        /// The URL, redacted.
        url: String,
        /// The 3xx status.
        status: u16,
        /// The `Location` header, redacted (empty when there was none).
        location: String,
    },
    /// No answer within the per-attempt timeout, on every attempt.
    #[error("{url}: timed out after {timeout_ms} ms, {attempts} attempt(s)")]
    Timeout {
        /// The URL, redacted.
        url: String,
        /// The last attempt's timeout.
        timeout_ms: u64,
        /// Requests made.
        attempts: u32,
    },
    /// The total deadline passed.
    #[error(
        "{url}: no answer within the total deadline of {deadline_ms} ms ({attempts} attempt(s))"
    )]
    Deadline {
        /// The URL, redacted.
        url: String,
        /// The total deadline.
        deadline_ms: u64,
        /// Requests made.
        attempts: u32,
    },
    /// The server could not be reached (connection refused, host not found, TLS).
    #[error("{url}: request failed after {attempts} attempt(s): {reason}")]
    Transport {
        /// The URL, redacted.
        url: String,
        /// Requests made.
        attempts: u32,
        /// What went wrong, redacted.
        reason: String,
    },
    /// The connection closed while the answer was being read (retried like a timeout).
    #[error("{url}: {reason} ({attempts} attempt(s))")]
    Dropped {
        /// The URL, redacted.
        url: String,
        /// Requests made.
        attempts: u32,
        /// What the reader saw.
        reason: String,
    },
    /// A 2xx body larger than the cap.
    #[error("{url}: the answer is larger than {limit} bytes")]
    TooLarge {
        /// The URL, redacted.
        url: String,
        /// The cap.
        limit: u64,
    },
    /// A 2xx body that is not JSON.
    #[error("{url}: the answer is not JSON ({reason}): {body}")]
    NotJson {
        /// The URL, redacted.
        url: String,
        /// The parser's message.
        reason: String,
        /// The start of the body.
        body: String,
    },
}

impl HttpError {
    /// Whether every attempt timed out (never an answer, never a refusal).
    pub fn is_timeout(&self) -> bool {
        matches!(self, HttpError::Timeout { .. })
    }
}

/// A JSON-over-HTTP client; share one per peer (it remembers whether the peer answered).
pub struct HttpClient {
    agent: ureq::Agent,
    settings: HttpSettings,
    answered: AtomicBool,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Root certificates for ureq: the system's plus `ca_file`.
fn ureq_roots(ca_file: Option<&std::path::Path>) -> Result<ureq::tls::RootCerts, HttpError> {
    let system = crate::tls::system_roots();
    let extra = match ca_file {
        None => Vec::new(),
        Some(path) => crate::tls::read_pem_certificates(path).map_err(|e| HttpError::Setup {
            option: "--ca-file",
            reason: e.to_string(),
        })?,
    };
    if system.is_empty() && extra.is_empty() {
        return Ok(ureq::tls::RootCerts::WebPki);
    }
    let certs: Vec<ureq::tls::Certificate<'static>> = system
        .iter()
        .chain(&extra)
        .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    Ok(ureq::tls::RootCerts::Specific(Arc::new(certs)))
}

impl HttpClient {
    /// A client; fails on an unusable proxy URL or CA file.
    pub fn new(settings: HttpSettings) -> Result<HttpClient, HttpError> {
        let proxy = match &settings.proxy {
            Proxy::Environment => ureq::Proxy::try_from_env(),
            Proxy::Off => None,
            Proxy::Url(p) => Some(ureq::Proxy::new(p).map_err(|e| HttpError::Setup {
                option: "proxy",
                reason: format!("`{}`: {e}", redact::url(p)),
            })?),
        };
        let tls = ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::Rustls)
            .root_certs(ureq_roots(settings.ca_file.as_deref())?)
            .build();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .proxy(proxy)
            .tls_config(tls)
            .user_agent(settings.user_agent.as_str())
            .build()
            .into();
        Ok(HttpClient {
            agent,
            settings,
            answered: AtomicBool::new(false),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// Whether the server has answered at least once (any status) since this client was
    /// made.
    pub fn has_answered(&self) -> bool {
        self.answered.load(Ordering::Relaxed)
    }

    /// POSTs `body` to `url` and parses the 2xx answer (at most `max_body` bytes) as JSON,
    /// under the rule of this module.
    pub fn post_json(&self, url: &str, body: &Value) -> Result<Value, HttpError> {
        let payload = serde_json::to_vec(body).map_err(|e| HttpError::Setup {
            option: "request",
            reason: e.to_string(),
        })?;
        let limit = self.settings.max_body;
        let shown = redact::url(url);
        let read = |reader: &mut dyn Read| -> Result<Value, ReadFailure<HttpError>> {
            let mut text = Vec::new();
            match reader.take(limit.saturating_add(1)).read_to_end(&mut text) {
                Ok(_) => {}
                Err(e) if is_timeout(&e) => return Err(ReadFailure::TimedOut),
                Err(e) => {
                    return Err(ReadFailure::Dropped(format!(
                        "connection closed while reading the answer ({})",
                        redact::secrets_in_text(&e.to_string())
                    )))
                }
            }
            if text.len() as u64 > limit {
                return Err(ReadFailure::Stop(HttpError::TooLarge {
                    url: shown.clone(),
                    limit,
                }));
            }
            serde_json::from_slice(&text).map_err(|e| {
                ReadFailure::Stop(HttpError::NotJson {
                    url: shown.clone(),
                    reason: e.to_string(),
                    body: excerpt(&String::from_utf8_lossy(&text)),
                })
            })
        };
        match self.post_reading(url, &payload, read) {
            Ok(v) => Ok(v),
            Err(PostError::Http(e) | PostError::Read(e)) => Err(e),
        }
    }

    /// POSTs `payload` (JSON) to `url` and hands the 2xx answer's body, as it streams in, to
    /// `read` (which bounds what it reads), under the rule of this module.
    /// [`ReadFailure::Dropped`] and [`ReadFailure::TimedOut`] from `read` are retried like a
    /// timeout; [`ReadFailure::Stop`] ends the request with the reader's error.
    pub fn post_reading<T, E>(
        &self,
        url: &str,
        payload: &[u8],
        read: impl Fn(&mut dyn Read) -> Result<T, ReadFailure<E>>,
    ) -> Result<T, PostError<E>> {
        self.send_reading(url, Some(payload), read)
    }

    /// GETs `url` and hands the 2xx answer's body to `read`, under the same rule as
    /// [`HttpClient::post_reading`] (for APIs that look a resource up by GET only).
    pub fn get_reading<T, E>(
        &self,
        url: &str,
        read: impl Fn(&mut dyn Read) -> Result<T, ReadFailure<E>>,
    ) -> Result<T, PostError<E>> {
        self.send_reading(url, None, read)
    }

    /// POST with `payload`, or GET without one.
    fn send_reading<T, E>(
        &self,
        url: &str,
        payload: Option<&[u8]>,
        read: impl Fn(&mut dyn Read) -> Result<T, ReadFailure<E>>,
    ) -> Result<T, PostError<E>> {
        let (request_url, basic) = split_userinfo(url);
        let shown = redact::url(url);
        let has_authorization = self
            .settings
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"));
        let max_attempts = self.settings.retries.saturating_add(1);
        let deadline_error = |d: &Deadline, attempts: u32| HttpError::Deadline {
            url: shown.clone(),
            deadline_ms: u64::try_from(d.total.as_millis()).unwrap_or(u64::MAX),
            attempts,
        };
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut timeout = self.settings.timeout;
            if let Some(d) = &self.settings.deadline {
                let Some(left) = d.left() else {
                    return Err(PostError::Http(deadline_error(d, attempt - 1)));
                };
                timeout = timeout.min(left);
            }
            let extra: Vec<(&str, String)> = self
                .settings
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.clone()))
                .chain(
                    basic
                        .as_ref()
                        .filter(|_| !has_authorization)
                        .map(|b| ("Authorization", format!("Basic {b}"))),
                )
                .collect();
            let sent = match payload {
                Some(payload) => {
                    let mut req = self
                        .agent
                        .post(&request_url)
                        .config()
                        .timeout_global(Some(timeout))
                        .build()
                        .header("Content-Type", "application/json")
                        .header("Accept", "application/json");
                    for (name, value) in &extra {
                        req = req.header(*name, value.as_str());
                    }
                    req.send(payload)
                }
                None => {
                    let mut req = self
                        .agent
                        .get(&request_url)
                        .config()
                        .timeout_global(Some(timeout))
                        .build()
                        .header("Accept", "application/json");
                    for (name, value) in &extra {
                        req = req.header(*name, value.as_str());
                    }
                    req.call()
                }
            };
            let (failure, retry_after) = match sent {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let header = |name: &str| {
                        resp.headers()
                            .get(name)
                            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                    };
                    let retry_after = header("retry-after")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs)
                        .filter(|_| status == 429 || status == 503);
                    let location = header("location");
                    let mut body = resp.into_body().into_with_config().reader();
                    if (200..300).contains(&status) {
                        match read(&mut body) {
                            Ok(value) => {
                                self.answered.store(true, Ordering::Relaxed);
                                return Ok(value);
                            }
                            Err(ReadFailure::Stop(e)) => {
                                self.answered.store(true, Ordering::Relaxed);
                                return Err(PostError::Read(e));
                            }
                            Err(ReadFailure::TimedOut) => {
                                (self.timed_out(&shown, attempt, timeout), None)
                            }
                            Err(ReadFailure::Dropped(reason)) => (
                                HttpError::Dropped {
                                    url: shown.clone(),
                                    attempts: attempt,
                                    reason,
                                },
                                None,
                            ),
                        }
                    } else {
                        if (300..400).contains(&status) {
                            return Err(PostError::Http(HttpError::Redirect {
                                url: shown,
                                status,
                                location: location
                                    .map(|l| redact::short(&redact::url(&l)))
                                    .unwrap_or_default(),
                            }));
                        }
                        // An error's body is quoted, not parsed: its first bytes are enough.
                        let mut head = Vec::new();
                        let closed = body.take(ERROR_BODY).read_to_end(&mut head).is_err();
                        let text = String::from_utf8_lossy(&head);
                        let err = HttpError::Status {
                            url: shown.clone(),
                            status,
                            attempts: attempt,
                            body: if closed {
                                format!(
                                    "(connection closed while reading the answer) {}",
                                    excerpt(&text)
                                )
                            } else {
                                excerpt(&text)
                            },
                        };
                        if status != 429 && !(500..600).contains(&status) {
                            return Err(PostError::Http(err));
                        }
                        self.answered.store(true, Ordering::Relaxed);
                        (err, retry_after)
                    }
                }
                Err(e) => (self.transport(&shown, attempt, timeout, e), None),
            };
            let retryable = matches!(
                failure,
                HttpError::Timeout { .. } | HttpError::Status { .. } | HttpError::Dropped { .. }
            );
            if !retryable || attempt >= max_attempts {
                return Err(PostError::Http(failure));
            }
            let mut wait = retry_after.unwrap_or_else(|| self.settings.retry_wait(attempt));
            if let Some(d) = &self.settings.deadline {
                match d.left() {
                    Some(left) if left > wait => {}
                    // No time for another attempt after the wait: the deadline ends it.
                    _ => {
                        return Err(PostError::Http(match failure {
                            HttpError::Timeout { .. } => deadline_error(d, attempt),
                            other => other,
                        }))
                    }
                }
                wait = wait.min(d.left().unwrap_or_default());
            }
            std::thread::sleep(wait);
        }
    }

    fn timed_out(&self, url: &str, attempts: u32, timeout: Duration) -> HttpError {
        match &self.settings.deadline {
            // The attempt was cut short by the total deadline, not by its own timeout.
            Some(d) if timeout < self.settings.timeout && d.left().is_none() => {
                HttpError::Deadline {
                    url: url.to_owned(),
                    deadline_ms: u64::try_from(d.total.as_millis()).unwrap_or(u64::MAX),
                    attempts,
                }
            }
            _ => HttpError::Timeout {
                url: url.to_owned(),
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                attempts,
            },
        }
    }

    fn transport(&self, url: &str, attempts: u32, timeout: Duration, e: ureq::Error) -> HttpError {
        match e {
            ureq::Error::Timeout(_) => self.timed_out(url, attempts, timeout),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                self.timed_out(url, attempts, timeout)
            }
            other => HttpError::Transport {
                url: url.to_owned(),
                attempts,
                reason: redact::secrets_in_text(&other.to_string()),
            },
        }
    }
}

/// Whether an error from reading an answer's body is a timeout (ureq wraps its own
/// timeout in the I/O error).
pub fn is_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|u| match u {
                ureq::Error::Timeout(_) => true,
                ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::TimedOut,
                _ => false,
            })
}

/// An error from reading an answer's body as the client words it (`io: Peer
/// disconnected`).
pub fn read_error_text(e: std::io::Error) -> String {
    ureq::Error::from(e).to_string()
}

/// How much of an error answer's body is read, to quote it.
const ERROR_BODY: u64 = 64 << 10;

/// What the reader of a 2xx body ([`HttpClient::post_reading`]) says went wrong.
#[derive(Debug)]
pub enum ReadFailure<E> {
    /// A final error of the caller's (the answer breaks its contract): not retried.
    Stop(E),
    /// The connection closed mid-answer (what was seen): retried.
    Dropped(String),
    /// Reading timed out: retried.
    TimedOut,
}

/// Why [`HttpClient::post_reading`] failed.
#[derive(Debug)]
pub enum PostError<E> {
    /// The request failed under the rule of this module.
    Http(HttpError),
    /// The reader refused the answer.
    Read(E),
}

/// The first 300 characters of a body, secrets redacted, for error messages.
fn excerpt(text: &str) -> String {
    redact::excerpt(&redact::secrets_in_text(text.trim()), 300)
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
    let mut plain = crate::percent_decode(user);
    plain.push(b':');
    plain.extend(crate::percent_decode(pass));
    let stripped = format!("{}{}", &url[..scheme_end + 3], &rest[at + 1..]);
    (stripped, Some(base64(&plain)))
}

/// Standard base64 with padding (RFC 4648 §4).
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn settings_debug_shows_header_names_only() {
        let s = HttpSettings {
            headers: vec![("Authorization".into(), "Bearer sk-secret".into())],
            proxy: Proxy::Url("http://u:pw@proxy:3128".into()),
            ..HttpSettings::default()
        };
        let text = format!("{s:?}");
        assert!(text.contains("Authorization"), "{text}");
        assert!(
            !text.contains("sk-secret") && !text.contains("pw"),
            "{text}"
        );
    }

    #[test]
    fn the_wait_doubles_up_to_thirty_seconds() {
        let s = HttpSettings {
            backoff: Duration::from_millis(250),
            ..HttpSettings::default()
        };
        assert_eq!(s.retry_wait(1), Duration::from_millis(250));
        assert_eq!(s.retry_wait(3), Duration::from_millis(1000));
        assert_eq!(s.retry_wait(40), MAX_BACKOFF);
    }
}
