//! Unary gRPC calls over HTTP/2 without TLS (`h2` on a one-worker tokio runtime), under the
//! same rule as every live retriever's HTTP (`crate::net`): a per-attempt timeout, one total
//! deadline, retries waiting 250 ms then 500 ms (`--retries`, `--backoff` doubling), a cap on
//! the answer's size, and the same failure classes:
//!
//! - a refused connection, a gRPC status other than the ones below, an answer that is not a
//!   gRPC message: [`RetrieveError::Setup`] at once (every case would fail the same way);
//! - a timeout, the statuses `UNAVAILABLE` (14) and `RESOURCE_EXHAUSTED` (8) — gRPC's 503 and
//!   429 — and a connection or stream closed while the answer was being read are retried;
//!   when they persist the error is [`RetrieveError::Setup`] if the server never answered
//!   (an unresponsive server stops the exam), else [`RetrieveError::Case`];
//! - the total deadline passing is [`RetrieveError::Setup`].
//!
//! A connection is opened on first use and kept (HTTP/2 multiplexes the cases in flight on
//! it); after a failure the next attempt opens a new one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use veredicto_core::redact;

use crate::{Options, RetrieveError};

/// A gRPC channel to one server.
pub(crate) struct Channel {
    /// `HOST:PORT`
    authority: String,
    runtime: tokio::runtime::Runtime,
    sender: Mutex<Option<h2::client::SendRequest<Bytes>>>,
    options: Options,
    /// When the total deadline passes.
    deadline: Instant,
    answered: AtomicBool,
}

/// How one attempt failed.
enum Attempt {
    /// The server cannot be reached (connection refused, DNS): not retried.
    Unreachable(String),
    /// No answer within the attempt's timeout: retried.
    TimedOut,
    /// The connection or the stream broke: retried.
    Dropped(String),
    /// A gRPC status: retried when `UNAVAILABLE` or `RESOURCE_EXHAUSTED`.
    Status(u32, String),
    /// An answer that breaks the protocol or the size cap: not retried.
    Broken(String),
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 || s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// gRPC's name of a status code, for messages.
fn status_name(code: u32) -> &'static str {
    match code {
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        _ => "unknown status",
    }
}

/// `grpc-message` is percent-encoded.
fn grpc_message(v: Option<&http::HeaderValue>) -> String {
    let raw = v.map(|v| v.as_bytes()).unwrap_or_default();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if raw[i] == b'%' && i + 2 < raw.len() {
            if let (Some(h), Some(l)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Channel {
    /// A channel to `authority` (`HOST:PORT`); nothing is connected yet. The total
    /// deadline starts now.
    pub(crate) fn new(authority: &str, options: &Options) -> Result<Channel, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("veredicto-grpc")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the gRPC client: {e}"))?;
        Ok(Channel {
            authority: authority.to_owned(),
            runtime,
            sender: Mutex::new(None),
            options: options.clone(),
            deadline: Instant::now() + options.deadline,
            answered: AtomicBool::new(false),
        })
    }

    /// Calls `method` (`/package.Service/Method`) with the encoded request `message` and
    /// gives the encoded answer. `shown` names the retriever in errors.
    pub(crate) fn call(
        &self,
        method: &str,
        message: &[u8],
        shown: &str,
    ) -> Result<Vec<u8>, RetrieveError> {
        let setup = |reason: String| RetrieveError::Setup {
            uri: shown.to_owned(),
            reason,
        };
        let first = Instant::now();
        let mut attempts = 0u32;
        let (what, timed_out) = loop {
            let now = Instant::now();
            if now >= self.deadline {
                return Err(setup(format!(
                    "total deadline of {} passed (raise it with --deadline)",
                    secs(self.options.deadline)
                )));
            }
            attempts += 1;
            let limit = self.options.timeout.min(self.deadline - now);
            let outcome = self.runtime.block_on(async {
                match tokio::time::timeout(limit, self.attempt(method, message)).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(Attempt::TimedOut),
                }
            });
            let (what, timed_out) = match outcome {
                Ok(answer) => {
                    self.answered.store(true, Ordering::Relaxed);
                    return Ok(answer);
                }
                Err(Attempt::Unreachable(reason)) => {
                    return Err(setup(format!(
                        "cannot reach the server: {}",
                        redact::short(&reason)
                    )))
                }
                Err(Attempt::Broken(reason)) => return Err(setup(reason)),
                Err(Attempt::Status(code, message)) => {
                    let what = format!(
                        "gRPC status {code} ({}): {}",
                        status_name(code),
                        redact::short(&redact::secrets_in_text(&message))
                    );
                    if code != 8 && code != 14 {
                        return Err(setup(what));
                    }
                    (what, false)
                }
                Err(Attempt::TimedOut) => {
                    self.forget();
                    (format!("no answer within {}", secs(limit)), true)
                }
                Err(Attempt::Dropped(reason)) => {
                    self.forget();
                    (reason, false)
                }
            };
            if attempts > self.options.retries {
                break (what, timed_out);
            }
            let wait = self.options.retry_wait(attempts);
            if Instant::now() + wait >= self.deadline {
                break (what, timed_out);
            }
            std::thread::sleep(wait);
        };
        let summary = format!(
            "{what} ({attempts} attempts over {})",
            secs(first.elapsed())
        );
        if timed_out && !self.answered.load(Ordering::Relaxed) {
            return Err(setup(format!("the server never answered: {summary}")));
        }
        Err(RetrieveError::Case {
            uri: shown.to_owned(),
            reason: summary,
        })
    }

    /// Drops the kept connection: the next attempt opens a new one.
    fn forget(&self) {
        if let Ok(mut s) = self.sender.lock() {
            *s = None;
        }
    }

    /// The kept connection, or a new one.
    async fn sender(&self) -> Result<h2::client::SendRequest<Bytes>, Attempt> {
        if let Some(s) = self.sender.lock().ok().and_then(|s| s.clone()) {
            return Ok(s);
        }
        let tcp = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| Attempt::Unreachable(format!("{}: {e}", self.authority)))?;
        let _ = tcp.set_nodelay(true);
        let (sender, connection) = h2::client::Builder::new()
            .initial_window_size(1 << 20)
            .initial_connection_window_size(4 << 20)
            .handshake::<_, Bytes>(tcp)
            .await
            .map_err(|e| {
                Attempt::Broken(format!(
                    "{} does not speak gRPC (HTTP/2 without TLS): {e}",
                    self.authority
                ))
            })?;
        self.runtime.spawn(async move {
            let _ = connection.await;
        });
        if let Ok(mut s) = self.sender.lock() {
            *s = Some(sender.clone());
        }
        Ok(sender)
    }

    async fn attempt(&self, method: &str, message: &[u8]) -> Result<Vec<u8>, Attempt> {
        let dropped = |e: h2::Error| {
            if e.is_io() || e.is_go_away() || e.is_reset() || e.is_remote() {
                Attempt::Dropped(format!(
                    "connection closed while reading the answer ({})",
                    redact::short(&e.to_string())
                ))
            } else {
                Attempt::Broken(format!("HTTP/2: {}", redact::short(&e.to_string())))
            }
        };
        let sender = self.sender().await?;
        let mut sender = sender.ready().await.map_err(dropped)?;
        let mut request = http::Request::builder()
            .method("POST")
            .uri(format!("http://{}{method}", self.authority))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("user-agent", "veredicto");
        for (name, value) in &self.options.headers {
            request = request.header(name.to_ascii_lowercase(), value.as_str());
        }
        let request = request.body(()).map_err(|e| {
            // a header value that cannot be sent; its value is never printed
            Attempt::Broken(format!(
                "a request header cannot be sent: {}",
                redact::short(&e.to_string())
            ))
        })?;
        let mut framed = Vec::with_capacity(message.len() + 5);
        framed.push(0);
        framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
        framed.extend_from_slice(message);
        let (response, mut stream) = sender.send_request(request, false).map_err(dropped)?;
        stream
            .send_data(Bytes::from(framed), true)
            .map_err(dropped)?;
        let response = response.await.map_err(dropped)?;
        let (parts, mut body) = response.into_parts();
        if parts.status != http::StatusCode::OK {
            let what = format!("HTTP {} from the gRPC endpoint", parts.status.as_u16());
            return if parts.status.is_server_error() || parts.status.as_u16() == 429 {
                Err(Attempt::Status(14, what))
            } else {
                Err(Attempt::Broken(what))
            };
        }
        // A trailers-only answer carries its status in the headers.
        if let Some(code) = parts.headers.get("grpc-status") {
            let code = code.to_str().ok().and_then(|c| c.parse().ok()).unwrap_or(2);
            if code != 0 {
                return Err(Attempt::Status(
                    code,
                    grpc_message(parts.headers.get("grpc-message")),
                ));
            }
        }
        let cap = self.options.max_answer_bytes;
        let mut data = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(dropped)?;
            let _ = body.flow_control().release_capacity(chunk.len());
            if (data.len() + chunk.len()) as u64 > cap.saturating_add(5) {
                return Err(Attempt::Broken(format!(
                    "the answer is larger than {} (raise --max-answer-bytes)",
                    crate::net::bytes(cap)
                )));
            }
            data.extend_from_slice(&chunk);
        }
        let trailers = body.trailers().await.map_err(dropped)?;
        if let Some(t) = &trailers {
            let code = t
                .get("grpc-status")
                .and_then(|c| c.to_str().ok())
                .and_then(|c| c.parse().ok())
                .unwrap_or(2);
            if code != 0 {
                return Err(Attempt::Status(code, grpc_message(t.get("grpc-message"))));
            }
        } else if parts.headers.get("grpc-status").is_none() {
            return Err(Attempt::Dropped(
                "the answer ended without a gRPC status (connection closed while reading the answer)"
                    .to_owned(),
            ));
        }
        match data.as_slice() {
            [0, a, b, c, d, rest @ ..]
                if u32::from_be_bytes([*a, *b, *c, *d]) as usize == rest.len() =>
            {
                Ok(rest.to_vec())
            }
            [1, ..] => Err(Attempt::Broken(
                "the answer is compressed, although none was asked for".to_owned(),
            )),
            _ => Err(Attempt::Broken(format!(
                "the answer is not one gRPC message ({} bytes)",
                data.len()
            ))),
        }
    }
}
