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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use veredicto_core::redact;

use crate::answer::{Capped, Failure};
use crate::{Options, RetrieveError};

pub(crate) struct Net {
    agent: ureq::Agent,
    options: Options,
    start: Instant,
    answered: AtomicBool,
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
    pub(crate) fn new(options: &Options) -> Net {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("veredicto/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Net {
            agent,
            options: options.clone(),
            start: Instant::now(),
            answered: AtomicBool::new(false),
        }
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
        self.post_reading(url, shown, &payload, |reader| {
            let mut de = serde_json::Deserializer::from_reader(reader);
            let value = serde::Deserialize::deserialize(&mut de).and_then(|v| de.end().map(|()| v));
            value.map_err(|e| match e.classify() {
                serde_json::error::Category::Io => Failure::Io(e.into()),
                _ => Failure::Json(e),
            })
        })
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
        let max_attempts = self.options.retries.saturating_add(1);
        let first = Instant::now();
        let mut attempt = 0u32;
        let setup = |reason: String| RetrieveError::Setup {
            uri: shown.to_owned(),
            reason,
        };
        loop {
            attempt += 1;
            let elapsed = self.start.elapsed();
            let Some(left) = self
                .options
                .deadline
                .checked_sub(elapsed)
                .filter(|d| !d.is_zero())
            else {
                return Err(setup(format!(
                    "total deadline of {} passed (raise it with --deadline)",
                    secs(self.options.deadline)
                )));
            };
            let timeout = self.options.timeout.min(left);
            let mut req = self
                .agent
                .post(url)
                .config()
                .timeout_global(Some(timeout))
                .build()
                .header("Content-Type", "application/json")
                .header("Accept", "application/json");
            for (name, value) in &self.options.headers {
                req = req.header(name.as_str(), value.as_str());
            }
            let sent = req.send(payload);
            // (what went wrong, whether to retry, whether it is a timeout)
            let failure: (String, bool, bool) = match sent {
                Ok(resp) if resp.status().is_success() => {
                    let body = resp.into_body().into_with_config().reader();
                    let mut capped = Capped::new(body, self.options.max_answer_bytes);
                    let outcome = read(&mut BufReader::with_capacity(64 << 10, &mut capped));
                    match outcome {
                        Ok(value) => {
                            self.answered.store(true, Ordering::Relaxed);
                            return Ok(value);
                        }
                        Err(_) if capped.tally.over => {
                            return Err(setup(format!(
                                "the answer is larger than {} (raise --max-answer-bytes): {}",
                                bytes(self.options.max_answer_bytes),
                                capped.tally.quote()
                            )))
                        }
                        Err(Failure::Contract(reason)) => return Err(setup(reason)),
                        Err(Failure::OutOfStep(_)) => {
                            return Err(setup("the answer is for another request".into()))
                        }
                        Err(Failure::NoList(reason)) => {
                            return Err(setup(format!("{reason}: {}", capped.tally.quote())))
                        }
                        Err(Failure::Json(e)) => {
                            return Err(setup(format!(
                                "the answer is not JSON ({}): {}",
                                redact::message(&e.to_string()),
                                capped.tally.quote()
                            )))
                        }
                        Err(Failure::Io(e)) => {
                            let e = ureq::Error::from(e);
                            if is_timeout(&e) {
                                classify(e, timeout)
                            } else {
                                (
                                    format!(
                                        "connection closed while reading the answer, after {} ({})",
                                        bytes(capped.tally.bytes()),
                                        redact::short(&redact::secrets_in_text(&e.to_string()))
                                    ),
                                    true,
                                    false,
                                )
                            }
                        }
                    }
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let location = resp
                        .headers()
                        .get("location")
                        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
                    // An error's body is quoted, not parsed: its first bytes are enough.
                    let mut head = Vec::new();
                    let read = resp
                        .into_body()
                        .into_with_config()
                        .reader()
                        .take(ERROR_BODY)
                        .read_to_end(&mut head);
                    let text = String::from_utf8_lossy(&head);
                    let closed = if read.is_err() {
                        " (connection closed while reading the answer)"
                    } else {
                        ""
                    };
                    let what = format!(
                        "HTTP {status}{closed}: {}",
                        redact::short(&redact::secrets_in_text(text.trim()))
                    );
                    if (300..400).contains(&status) {
                        return Err(setup(format!(
                            "HTTP {status}: redirects are not followed (Location: {}); give the final URL",
                            location.as_deref().map_or("none given".to_owned(), |l| redact::short(&redact::url(l)))
                        )));
                    }
                    if (500..600).contains(&status) {
                        self.answered.store(true, Ordering::Relaxed);
                        (what, true, false)
                    } else {
                        return Err(setup(what));
                    }
                }
                Err(e) => classify(e, timeout),
            };
            let (what, retry, timed_out) = failure;
            if !retry {
                return Err(setup(what));
            }
            if attempt >= max_attempts {
                let summary = format!("{what} ({attempt} attempts over {})", secs(first.elapsed()));
                if timed_out && !self.answered.load(Ordering::Relaxed) {
                    return Err(setup(format!("the server never answered: {summary}")));
                }
                return Err(RetrieveError::Case {
                    uri: shown.to_owned(),
                    reason: summary,
                });
            }
            let wait = self.options.retry_wait(attempt);
            std::thread::sleep(wait);
        }
    }
}

/// How much of an error answer's body is read, to quote it.
const ERROR_BODY: u64 = 64 << 10;

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

fn is_timeout(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::TimedOut,
        _ => false,
    }
}

/// (message, retry, is a timeout) for a transport error.
fn classify(e: ureq::Error, timeout: Duration) -> (String, bool, bool) {
    match e {
        e if is_timeout(&e) => (format!("no answer within {}", secs(timeout)), true, true),
        other => (
            format!(
                "cannot reach the server: {}",
                redact::short(&redact::secrets_in_text(&other.to_string()))
            ),
            false,
            false,
        ),
    }
}
