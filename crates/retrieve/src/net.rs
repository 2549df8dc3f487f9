//! JSON over HTTP for live retrievers: a per-request timeout, one total deadline for the
//! whole exam, and retries with exponential backoff on 5xx answers and timeouts only.
//!
//! How failures are classified (so that a dead server fails fast and one bad case does not
//! stop the exam):
//! - refused connection, DNS failure, TLS failure, a 4xx answer, a body that is not JSON:
//!   [`RetrieveError::Setup`] at once (every case would fail the same way);
//! - timeouts and 5xx answers are retried; when they persist, the error is
//!   [`RetrieveError::Setup`] if the server has never answered yet (an unresponsive
//!   server: 3 attempts of 10 s by default, then the exam stops), else
//!   [`RetrieveError::Case`] (this case fails with `no_results`);
//! - the total deadline passing is [`RetrieveError::Setup`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use veredicto_core::redact;

use crate::{Options, RetrieveError};

/// Largest response body accepted.
const MAX_BODY: u64 = 64 << 20;

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
            let sent = req.send(&payload[..]);
            // (what went wrong, whether to retry)
            let failure: (String, bool, bool) = match sent {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let text = resp
                        .into_body()
                        .with_config()
                        .limit(MAX_BODY)
                        .read_to_string();
                    match text {
                        Ok(text) if (200..300).contains(&status) => {
                            self.answered.store(true, Ordering::Relaxed);
                            return serde_json::from_str(&text).map_err(|e| {
                                setup(format!(
                                    "the answer is not JSON ({e}): {}",
                                    redact::short(&redact::secrets_in_text(text.trim()))
                                ))
                            });
                        }
                        Ok(text) => {
                            let what = format!(
                                "HTTP {status}: {}",
                                redact::short(&redact::secrets_in_text(text.trim()))
                            );
                            if (500..600).contains(&status) {
                                self.answered.store(true, Ordering::Relaxed);
                                (what, true, false)
                            } else {
                                return Err(setup(what));
                            }
                        }
                        Err(e) => classify(e, timeout),
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

/// (message, retry, is a timeout) for a transport error.
fn classify(e: ureq::Error, timeout: Duration) -> (String, bool, bool) {
    match e {
        ureq::Error::Timeout(_) => (format!("no answer within {}", secs(timeout)), true, true),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            (format!("no answer within {}", secs(timeout)), true, true)
        }
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
