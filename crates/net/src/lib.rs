//! veredicto's connection policy, in one place for every front end:
//!
//! - [`http`]: one JSON-over-HTTP client (per-attempt timeout, one total deadline, retries
//!   on timeouts, 5xx and 429 with doubling backoff or `Retry-After`, a body cap, redirects
//!   reported and not followed, secrets never printed);
//! - [`pg`]: one PostgreSQL target parser with libpq's rules (URL and key=value forms,
//!   `PGUSER`, `PGPASSWORD`, `~/.pgpass`, `sslmode`, `sslrootcert`, `connect_timeout`) and
//!   connecting over TLS;
//! - [`tls`]: the TLS stack both use (rustls; the system's roots plus a PEM file).

pub mod http;
pub mod pg;
pub mod tls;

pub use http::{Deadline, HttpClient, HttpError, HttpSettings, PostError, Proxy, ReadFailure};
pub use pg::{PgConnectError, PgConnector, PgEnv, PgTarget, PgTargetError, SslMode};

/// Percent-decodes `s` (`%41` → `A`; a `%` not followed by two hex digits stays).
pub(crate) fn percent_decode(s: &str) -> Vec<u8> {
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
