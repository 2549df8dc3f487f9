//! Unary gRPC calls with tonic's client (`tonic::client::Grpc` over a `tonic` channel, prost
//! messages through `tonic_prost::ProstCodec`) on a one-worker tokio runtime, over TCP or
//! TLS (rustls, with the same roots as every HTTPS connection: the system's, Mozilla's when
//! it has none, plus `--ca-file`; the host name is checked). The rule is every live
//! retriever's (`crate::net`): a per-attempt timeout, one total deadline, retries waiting
//! 250 ms then 500 ms (`--retries`, `--backoff` doubling), a cap on the answer's size
//! (tonic's largest decoded message), and the same failure classes:
//!
//! - a refused connection, a refused certificate, a gRPC status other than the ones below,
//!   an answer that is not a gRPC message: [`RetrieveError::Setup`] at once (every case would
//!   fail the same way);
//! - a timeout, the statuses `UNAVAILABLE` (14) and `RESOURCE_EXHAUSTED` (8) — gRPC's 503 and
//!   429, which is also what an HTTP 5xx or 429 without a gRPC status counts as — and a
//!   connection or stream closed while the answer was being read are retried; when they
//!   persist the error is [`RetrieveError::Setup`] if the server never answered (an
//!   unresponsive server stops the exam), else [`RetrieveError::Case`];
//! - the total deadline passing is [`RetrieveError::Setup`].
//!
//! A connection is opened on first use and kept (HTTP/2 multiplexes the cases in flight on
//! it); after a failure the next attempt opens a new one.

use std::error::Error as StdError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};
use tonic::transport::{Channel as Transport, Endpoint};
use tonic::Code;
use veredicto_core::redact;

use crate::{Options, RetrieveError};

/// A gRPC channel to one server.
pub(crate) struct Channel {
    /// `HOST:PORT`
    authority: String,
    /// The host name the certificate must name, for TLS.
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    runtime: tokio::runtime::Runtime,
    kept: Mutex<Option<Transport>>,
    options: Options,
    /// When the total deadline passes.
    deadline: Instant,
    answered: AtomicBool,
}

/// How one attempt failed.
enum Attempt {
    /// The server cannot be reached (connection refused, DNS, a refused certificate): not
    /// retried.
    Unreachable(String),
    /// No answer within the attempt's timeout: retried.
    TimedOut,
    /// The connection or the stream broke: retried.
    Dropped(String),
    /// A gRPC status: retried when `UNAVAILABLE` or `RESOURCE_EXHAUSTED`.
    Status(i32, String),
    /// An answer that breaks the protocol or the size cap: not retried.
    Broken(String),
}

/// Why the connector failed (carried through tonic's error chain).
#[derive(Debug)]
enum ConnectFailure {
    Unreachable(String),
}

impl std::fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectFailure::Unreachable(s) => f.write_str(s),
        }
    }
}

impl StdError for ConnectFailure {}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 || s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// gRPC's name of a status code, for messages.
fn status_name(code: i32) -> &'static str {
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

/// The connector's failure, or a refused certificate, anywhere in `err`'s chain.
fn connect_failure(err: &(dyn StdError + 'static)) -> Option<String> {
    if let Some(problem) = veredicto_net::tls::certificate_problem(err) {
        return Some(problem);
    }
    let mut cur: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(ConnectFailure::Unreachable(s)) = e.downcast_ref::<ConnectFailure>() {
            return Some(s.clone());
        }
        cur = e.source();
    }
    None
}

/// The messages of `err`'s chain, joined.
fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

impl Channel {
    /// A channel to `authority` (`HOST:PORT`), over TLS when `tls`; nothing is connected
    /// yet. The total deadline starts now.
    pub(crate) fn new(authority: &str, tls: bool, options: &Options) -> Result<Channel, String> {
        let tls = if tls {
            let roots = match &options.ca_file {
                Some(path) => veredicto_net::tls::Roots::SystemAnd(path.clone()),
                None => veredicto_net::tls::Roots::System,
            };
            let mut config =
                veredicto_net::tls::client_config(veredicto_net::tls::Check::Full, Some(&roots))
                    .map_err(|e| match e {
                        veredicto_net::tls::TlsError::CaFile { .. } => format!("--ca-file: {e}"),
                        other => other.to_string(),
                    })?;
            config.alpn_protocols = vec![b"h2".to_vec()];
            let host = authority
                .rsplit_once(':')
                .map_or(authority, |(h, _)| h)
                .trim_start_matches('[')
                .trim_end_matches(']');
            let name = ServerName::try_from(host.to_owned()).map_err(|_| {
                format!("`{}` is not a host name TLS can check", redact::short(host))
            })?;
            Some((Arc::new(config), name))
        } else {
            None
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("veredicto-grpc")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the gRPC client: {e}"))?;
        Ok(Channel {
            authority: authority.to_owned(),
            tls,
            runtime,
            kept: Mutex::new(None),
            options: options.clone(),
            deadline: Instant::now() + options.deadline,
            answered: AtomicBool::new(false),
        })
    }

    /// Calls `method` (`/package.Service/Method`) with `message` and gives the decoded
    /// answer. `shown` names the retriever in errors.
    pub(crate) fn call<Q, A>(
        &self,
        method: &str,
        message: &Q,
        shown: &str,
    ) -> Result<A, RetrieveError>
    where
        Q: prost::Message + Clone + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + 'static,
    {
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
                match tokio::time::timeout(limit, self.attempt::<Q, A>(method, message)).await {
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
                    self.forget();
                    return Err(setup(format!(
                        "cannot reach the server: {}",
                        redact::short(&reason)
                    )));
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
        if let Ok(mut s) = self.kept.lock() {
            *s = None;
        }
    }

    /// The kept connection, or a new one.
    async fn transport(&self) -> Result<Transport, Attempt> {
        if let Some(t) = self.kept.lock().ok().and_then(|s| s.clone()) {
            return Ok(t);
        }
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let endpoint = Endpoint::from_shared(format!("{scheme}://{}", self.authority))
            .and_then(|e| e.user_agent("veredicto"))
            .map_err(|e| Attempt::Broken(format!("not a gRPC address: {e}")))?
            .tcp_nodelay(true)
            .initial_stream_window_size(1 << 20)
            .initial_connection_window_size(4 << 20);
        let authority = self.authority.clone();
        let tcp = move || {
            let authority = authority.clone();
            async move {
                let tcp = tokio::net::TcpStream::connect(&authority)
                    .await
                    .map_err(|e| ConnectFailure::Unreachable(format!("{authority}: {e}")))?;
                let _ = tcp.set_nodelay(true);
                Ok::<_, ConnectFailure>(tcp)
            }
        };
        let connected = match &self.tls {
            None => {
                endpoint
                    .connect_with_connector(tower::service_fn(move |_| {
                        let tcp = tcp();
                        async move { tcp.await.map(TokioIo::new) }
                    }))
                    .await
            }
            Some((config, name)) => {
                let connector = tokio_rustls::TlsConnector::from(config.clone());
                let name = name.clone();
                let authority = self.authority.clone();
                endpoint
                    .connect_with_connector(tower::service_fn(move |_| {
                        let (tcp, connector, name) = (tcp(), connector.clone(), name.clone());
                        let authority = authority.clone();
                        async move {
                            let stream = connector.connect(name, tcp.await?).await.map_err(|e| {
                                match veredicto_net::tls::certificate_problem(&e) {
                                    Some(problem) => ConnectFailure::Unreachable(format!(
                                        "TLS with {authority}: {problem} (trust its certificate authority with --ca-file)"
                                    )),
                                    None => ConnectFailure::Unreachable(format!(
                                        "TLS with {authority}: {e}"
                                    )),
                                }
                            })?;
                            Ok::<_, ConnectFailure>(TokioIo::new(stream))
                        }
                    }))
                    .await
            }
        };
        let transport = connected.map_err(|e| match connect_failure(&e) {
            Some(reason) => Attempt::Unreachable(reason),
            None => Attempt::Broken(format!(
                "{} does not speak gRPC: {}",
                self.authority,
                redact::short(&chain(&e))
            )),
        })?;
        if let Ok(mut s) = self.kept.lock() {
            *s = Some(transport.clone());
        }
        Ok(transport)
    }

    async fn attempt<Q, A>(&self, method: &str, message: &Q) -> Result<A, Attempt>
    where
        Q: prost::Message + Clone + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + 'static,
    {
        let cap = usize::try_from(self.options.max_answer_bytes).unwrap_or(usize::MAX);
        let mut grpc =
            tonic::client::Grpc::new(self.transport().await?).max_decoding_message_size(cap);
        grpc.ready().await.map_err(|e| match connect_failure(&e) {
            Some(reason) => Attempt::Unreachable(reason),
            None => Attempt::Dropped(format!("connection closed ({})", redact::short(&chain(&e)))),
        })?;
        let mut request = tonic::Request::new(message.clone());
        for (name, value) in &self.options.headers {
            // a header value that cannot be sent; its value is never printed
            let key = AsciiMetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes()).map_err(
                |_| {
                    Attempt::Broken(format!(
                        "the request header `{}` cannot be sent",
                        redact::short(name)
                    ))
                },
            )?;
            let value = AsciiMetadataValue::try_from(value.as_str()).map_err(|_| {
                Attempt::Broken(format!(
                    "the value of the request header `{}` cannot be sent",
                    redact::short(name)
                ))
            })?;
            request.metadata_mut().insert(key, value);
        }
        let path = http::uri::PathAndQuery::try_from(method)
            .map_err(|e| Attempt::Broken(format!("not a gRPC method `{method}`: {e}")))?;
        let codec = tonic_prost::ProstCodec::<Q, A>::default();
        match grpc.unary(request, path, codec).await {
            Ok(answer) => Ok(answer.into_inner()),
            Err(status) => Err(classify(&status, cap)),
        }
    }
}

/// What a failed call's status means for the retry rule.
fn classify(status: &tonic::Status, cap: usize) -> Attempt {
    let message = status.message();
    // A status made on this side from a transport failure carries its cause.
    if let Some(source) = StdError::source(status) {
        if let Some(reason) = connect_failure(source) {
            return Attempt::Unreachable(reason);
        }
        return Attempt::Dropped(format!(
            "connection closed while reading the answer ({})",
            redact::short(&chain(source))
        ));
    }
    if status.code() == Code::OutOfRange && message.contains("message length too large") {
        return Attempt::Broken(format!(
            "the answer is larger than {} (raise --max-answer-bytes)",
            crate::net::bytes(cap as u64)
        ));
    }
    if message.starts_with("protocol error: missing grpc-status trailer") {
        return Attempt::Dropped(
            "the answer ended without a gRPC status (connection closed while reading the answer)"
                .to_owned(),
        );
    }
    if let Some(http) = message
        .strip_prefix("grpc-status header missing, mapped from HTTP status code ")
        .and_then(|c| c.trim().parse::<u16>().ok())
    {
        let what = format!("HTTP {http} from the gRPC endpoint");
        return if http >= 500 || http == 429 {
            Attempt::Status(14, what)
        } else {
            Attempt::Broken(what)
        };
    }
    if status.code() == Code::Internal && message.starts_with("failed to decode") {
        return Attempt::Broken(format!(
            "the answer does not parse: {}",
            redact::short(message)
        ));
    }
    if status.code() == Code::Internal && message.contains("compressed-flag") {
        return Attempt::Broken(format!(
            "the answer is compressed, although none was asked for ({})",
            redact::short(message)
        ));
    }
    Attempt::Status(status.code() as i32, message.to_owned())
}
