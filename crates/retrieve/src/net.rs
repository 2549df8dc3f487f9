//! JSON over HTTP for live retrievers: a per-request timeout, one total deadline for the
//! whole exam, and retries with exponential backoff on 5xx answers and timeouts only.
//!
//! How failures are classified (so that a dead server fails fast and one bad case does not
//! stop the exam):
//! - refused connection, DNS failure, TLS failure, a 4xx answer, a redirect (never
//!   followed), a body that is not JSON or larger than `--max-answer-bytes`:
//!   [`RetrieveError::Setup`] at once (every case would fail the same way);
//! - timeouts, 5xx answers and a connection closed while the answer was being read are
//!   retried; when they persist, the error is
//!   [`RetrieveError::Setup`] if the server has never answered yet (an unresponsive
//!   server: 3 attempts of 10 s by default, then the exam stops), else
//!   [`RetrieveError::Case`] (this case fails with `no_results`);
//! - the total deadline passing is [`RetrieveError::Setup`].

use std::io::{BufReader, Read};
use std::time::{Duration, Instant};

use serde_json::Value;
use veredicto_core::redact;
use veredicto_net::{HttpClient, HttpError, HttpSettings, PostError, Proxy, ReadFailure};

use crate::answer::{Capped, Failure};
use crate::{Options, RetrieveError};

/// A live retriever's HTTP: veredicto's one client (`veredicto_net::http`) with this
/// crate's failure classes and messages.
pub(crate) struct Net {
    client: HttpClient,
    options: Options,
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 || s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

impl Net {
    /// The client for `options`; the total deadline starts now. Fails on a `--ca-file`
    /// that cannot be used (the reason, for the caller to attach to the URI).
    pub(crate) fn new(options: &Options) -> Result<Net, String> {
        let client = HttpClient::new(HttpSettings {
            timeout: options.timeout,
            retries: options.retries,
            backoff: options.backoff,
            deadline: Some(veredicto_net::Deadline::after(options.deadline)),
            headers: options.headers.clone(),
            proxy: Proxy::Environment,
            max_body: options.max_answer_bytes,
            ca_file: options.ca_file.clone(),
            ..HttpSettings::default()
        })
        .map_err(|e| e.to_string())?;
        Ok(Net {
            client,
            options: options.clone(),
        })
    }

    /// POSTs `body` to `url` and parses the 2xx answer as JSON. `shown` is the URL as
    /// messages may print it (without credentials).
    pub(crate) fn post(
        &self,
        url: &str,
        shown: &str,
        body: &Value,
    ) -> Result<Value, RetrieveError> {
        let payload = serde_json::to_vec(body).unwrap_or_default();
        self.reading(url, shown, Some(&payload), read_json)
    }

    /// GETs `url` and parses the 2xx answer as JSON, under the same rule as
    /// [`Net::post`].
    pub(crate) fn get(&self, url: &str, shown: &str) -> Result<Value, RetrieveError> {
        self.reading(url, shown, None, read_json)
    }

    /// POSTs `payload` (JSON) to `url` and gives the 2xx answer's body, as it streams in
    /// (at most `--max-answer-bytes`), to `read`. A [`Failure::Contract`] from `read` is
    /// an error of the retriever's setup with its text as the reason.
    pub(crate) fn post_reading<T>(
        &self,
        url: &str,
        shown: &str,
        payload: &[u8],
        read: impl Fn(&mut dyn Read) -> Result<T, Failure>,
    ) -> Result<T, RetrieveError> {
        self.reading(url, shown, Some(payload), read)
    }

    /// POST with `payload`, or GET without one.
    fn reading<T>(
        &self,
        url: &str,
        shown: &str,
        payload: Option<&[u8]>,
        read: impl Fn(&mut dyn Read) -> Result<T, Failure>,
    ) -> Result<T, RetrieveError> {
        let setup = |reason: String| RetrieveError::Setup {
            uri: shown.to_owned(),
            reason,
        };
        let limit = self.options.max_answer_bytes;
        let first = Instant::now();
        let answer = |body: &mut dyn Read| {
            let mut capped = Capped::new(body, limit);
            let outcome = read(&mut BufReader::with_capacity(64 << 10, &mut capped));
            let stop = ReadFailure::Stop;
            match outcome {
                Ok(value) => Ok(value),
                Err(_) if capped.tally.over => Err(stop(format!(
                    "the answer is larger than {} (raise --max-answer-bytes): {}",
                    bytes(limit),
                    capped.tally.quote()
                ))),
                Err(Failure::Contract(reason)) => Err(stop(reason)),
                Err(Failure::OutOfStep(_)) => Err(stop("the answer is for another request".into())),
                Err(Failure::NoList(reason)) => {
                    Err(stop(format!("{reason}: {}", capped.tally.quote())))
                }
                Err(Failure::Json(e)) => Err(stop(format!(
                    "the answer is not JSON ({}): {}",
                    redact::message(&e.to_string()),
                    capped.tally.quote()
                ))),
                Err(Failure::Io(e)) if veredicto_net::http::is_timeout(&e) => {
                    Err(ReadFailure::TimedOut)
                }
                Err(Failure::Io(e)) => Err(ReadFailure::Dropped(format!(
                    "connection closed while reading the answer, after {} ({})",
                    bytes(capped.tally.bytes()),
                    redact::short(&redact::secrets_in_text(
                        &veredicto_net::http::read_error_text(e)
                    ))
                ))),
            }
        };
        let outcome = match payload {
            Some(payload) => self.client.post_reading(url, payload, answer),
            None => self.client.get_reading(url, answer),
        };
        let e = match outcome {
            Ok(value) => return Ok(value),
            Err(PostError::Read(reason)) => return Err(setup(reason)),
            Err(PostError::Http(e)) => e,
        };
        // (what went wrong, whether it is a timeout, attempts) of a retryable failure
        let (what, timed_out, attempts) = match e {
            HttpError::Deadline { .. } => {
                return Err(setup(format!(
                    "total deadline of {} passed (raise it with --deadline)",
                    secs(self.options.deadline)
                )))
            }
            HttpError::Timeout {
                timeout_ms,
                attempts,
                ..
            } => (
                format!(
                    "no answer within {}",
                    secs(Duration::from_millis(timeout_ms))
                ),
                true,
                attempts,
            ),
            HttpError::Status {
                status,
                attempts,
                body,
                ..
            } => {
                let (closed, body) =
                    match body.strip_prefix("(connection closed while reading the answer) ") {
                        Some(rest) => (" (connection closed while reading the answer)", rest),
                        None => ("", body.as_str()),
                    };
                let what = format!("HTTP {status}{closed}: {}", redact::short(body));
                if status != 429 && !(500..600).contains(&status) {
                    return Err(setup(what));
                }
                (what, false, attempts)
            }
            HttpError::Dropped {
                reason, attempts, ..
            } => (reason, false, attempts),
            HttpError::Redirect {
                status, location, ..
            } => {
                return Err(setup(format!(
                    "HTTP {status}: redirects are not followed (Location: {}); give the final URL",
                    if location.is_empty() {
                        "none given"
                    } else {
                        location.as_str()
                    }
                )))
            }
            HttpError::Transport { reason, .. } => {
                return Err(setup(format!(
                    "cannot reach the server: {}",
                    redact::short(&reason)
                )))
            }
            other => return Err(setup(other.to_string())),
        };
        let summary = format!(
            "{what} ({attempts} attempts over {})",
            secs(first.elapsed())
        );
        if timed_out && !self.client.has_answered() {
            return Err(setup(format!("the server never answered: {summary}")));
        }
        Err(RetrieveError::Case {
            uri: shown.to_owned(),
            reason: summary,
        })
    }
}

/// Reads a whole answer as one JSON value.
fn read_json(reader: &mut dyn Read) -> Result<Value, Failure> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let value = serde::Deserialize::deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    value.map_err(|e| match e.classify() {
        serde_json::error::Category::Io => Failure::Io(e.into()),
        _ => Failure::Json(e),
    })
}

/// A size for messages: `64 MiB`, `1.5 KiB`, `12 bytes`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            let v = n as f64 / size as f64;
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{n} bytes")
}
