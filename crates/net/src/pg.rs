//! A PostgreSQL target with libpq's rules, and connecting to it over TLS (rustls).
//!
//! Two forms, as libpq reads them:
//! - a URL, `postgres://` or `postgresql://`:
//!   `postgres://[user[:password]@][host][:port][,host[:port]…][/dbname][?key=value&…]`,
//!   percent-encoded; a host that starts with `/` (`%2Fvar%2Frun%2Fpostgresql`) is a Unix
//!   socket folder; query parameters override the parts before them;
//! - key=value pairs: `host=db.example port=5432 dbname=team user=ann sslmode=verify-full`,
//!   values in single quotes when they hold spaces (`\'` and `\\` escaped).
//!
//! Defaults, in libpq's order (the environment is read through [`PgEnv`]):
//! - host: `PGHOST`, else `localhost` (libpq would try its Unix socket folder first);
//! - port: `PGPORT`, else 5432; database: `PGDATABASE`, else the user name;
//! - user: `PGUSER`, else the operating-system user (`USER`, `LOGNAME`);
//! - password: the target's, else `PGPASSWORD`, else the password file (`passfile`,
//!   `PGPASSFILE`, else `~/.pgpass`): lines `host:port:database:user:password`, `*` for any,
//!   `\:` and `\\` escaped, the first matching line wins (for a Unix socket the host field
//!   `localhost` matches); a file that group or others may read is ignored, as libpq does;
//! - `sslmode`: `PGSSLMODE`, else `prefer`; `sslrootcert`: `PGSSLROOTCERT`, else
//!   `~/.postgresql/root.crt`; `connect_timeout` (seconds): `PGCONNECT_TIMEOUT`;
//!   `application_name`: `PGAPPNAME`; `options`: `PGOPTIONS`.
//!
//! `sslmode` (libpq's meanings): `disable` plain only; `allow` plain, then TLS when the
//! server refuses plain; `prefer` TLS when the server offers it, else plain; `require` TLS,
//! certificate not checked (checked against the root certificate when `sslrootcert` is given
//! or `~/.postgresql/root.crt` exists, as libpq does); `verify-ca` TLS, the certificate must
//! chain to the root certificate; `verify-full` also the host name. `sslrootcert=system`
//! trusts the system's roots and needs `verify-full`. Unix sockets never use TLS.
//!
//! The password never appears in `Debug`, `Display` or an error: the target shows itself as
//! `postgres://user:***@host:port/db`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use veredicto_core::redact;

use crate::tls::{self, Check, Roots};

/// The environment a target is resolved in: `PG*` variables, the user's name and home.
/// [`PgEnv::from_process`] reads the process's; tests build their own.
#[derive(Clone, Default)]
pub struct PgEnv {
    vars: BTreeMap<String, String>,
}

/// Names only (values may be secrets).
impl std::fmt::Debug for PgEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgEnv")
            .field("vars", &self.vars.keys().collect::<Vec<_>>())
            .finish()
    }
}

const ENV_NAMES: [&str; 14] = [
    "PGHOST",
    "PGPORT",
    "PGDATABASE",
    "PGUSER",
    "PGPASSWORD",
    "PGPASSFILE",
    "PGSSLMODE",
    "PGSSLROOTCERT",
    "PGCONNECT_TIMEOUT",
    "PGAPPNAME",
    "PGOPTIONS",
    "USER",
    "LOGNAME",
    "HOME",
];

impl PgEnv {
    /// No variables at all.
    pub fn empty() -> PgEnv {
        PgEnv::default()
    }

    /// The process's variables that libpq reads, and `USER`, `LOGNAME`, `HOME`.
    pub fn from_process() -> PgEnv {
        let mut env = PgEnv::empty();
        for name in ENV_NAMES {
            if let Ok(v) = std::env::var(name) {
                env = env.with(name, v);
            }
        }
        env
    }

    /// With `name` set to `value`.
    pub fn with(mut self, name: &str, value: impl Into<String>) -> PgEnv {
        self.vars.insert(name.to_owned(), value.into());
        self
    }

    /// A variable, `None` when unset or empty (libpq treats both alike).
    fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }
}

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SslMode {
    /// Plain only.
    Disable,
    /// Plain, then TLS when the server refuses plain.
    Allow,
    /// TLS when offered, else plain (the default).
    Prefer,
    /// TLS; the certificate is not checked (unless a root certificate is there).
    Require,
    /// TLS; the certificate chains to the root certificate.
    VerifyCa,
    /// TLS; the chain and the host name.
    VerifyFull,
}

impl SslMode {
    /// libpq's name.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

impl std::str::FromStr for SslMode {
    type Err = String;
    fn from_str(s: &str) -> Result<SslMode, String> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                "sslmode `{}`: expected disable, allow, prefer, require, verify-ca or verify-full",
                redact::short(other)
            ))
            }
        })
    }
}

impl std::fmt::Display for SslMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the root certificate for `verify-ca` / `verify-full` comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// A PEM file (`sslrootcert=FILE`).
    File(PathBuf),
    /// The system's roots (`sslrootcert=system`).
    System,
}

/// One host of a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PgHost {
    /// A host name or IP address.
    Tcp(String),
    /// A Unix socket folder.
    Unix(PathBuf),
}

/// Where the password came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasswordSource {
    /// No password.
    None,
    /// The URL or a `password=` pair.
    Target,
    /// `PGPASSWORD`.
    Environment,
    /// A line of this password file.
    PassFile(PathBuf),
}

/// A bad target: one sentence, never with the password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PgTargetError(pub String);

/// A resolved PostgreSQL target.
#[derive(Clone)]
pub struct PgTarget {
    hosts: Vec<PgHost>,
    ports: Vec<u16>,
    user: String,
    password: Option<String>,
    password_source: PasswordSource,
    /// Why a password file was not read, when it was there but ignored.
    passfile_ignored: Option<String>,
    dbname: String,
    sslmode: SslMode,
    sslrootcert: Option<RootCert>,
    /// `~/.postgresql/root.crt`, libpq's default root certificate.
    default_root: Option<PathBuf>,
    connect_timeout: Option<Duration>,
    application_name: Option<String>,
    options: Option<String>,
}

/// Keys a target understands (libpq's names).
const KEYS: [&str; 11] = [
    "host",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "sslmode",
    "sslrootcert",
    "connect_timeout",
    "application_name",
    "options",
];

/// libpq keys refused with a reason rather than as unknown.
fn unsupported(key: &str) -> Option<&'static str> {
    match key {
        "sslcert" | "sslkey" | "sslpassword" | "sslcertmode" => {
            Some("client certificates are not supported; authenticate with a password")
        }
        "hostaddr" => Some("`hostaddr` is not supported; give the address as `host`"),
        _ => None,
    }
}

impl PgTarget {
    /// Parses a URL or key=value target; every parameter must be one libpq knows.
    pub fn parse(text: &str, env: &PgEnv) -> Result<PgTarget, PgTargetError> {
        let (target, extras) = PgTarget::parse_with_extras(text, env)?;
        if let Some((k, _)) = extras.first() {
            return Err(PgTargetError(format!(
                "unknown parameter `{}` (known: {})",
                redact::short(k),
                KEYS.join(", ")
            )));
        }
        Ok(target)
    }

    /// [`PgTarget::parse`], with the URL's query parameters that are not libpq's returned
    /// as they were written (not percent-decoded), in order, for the caller to read.
    pub fn parse_with_extras(
        text: &str,
        env: &PgEnv,
    ) -> Result<(PgTarget, Vec<(String, String)>), PgTargetError> {
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        let (params, extras) =
            if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
                parse_url(text)?
            } else if text.contains('=') || text.is_empty() {
                (parse_pairs(text)?, Vec::new())
            } else {
                return Err(PgTargetError(
                    "expected postgres://user@host:port/db or key=value pairs (host=… dbname=…)"
                        .to_owned(),
                ));
            };
        Ok((resolve(params, env)?, extras))
    }

    /// The hosts, in the order tried.
    pub fn hosts(&self) -> &[PgHost] {
        &self.hosts
    }

    /// The port of each host (one for all, or one each).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The user name.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The database name.
    pub fn dbname(&self) -> &str {
        &self.dbname
    }

    /// Whether a password was found, and where (the password itself is never handed out).
    pub fn password_source(&self) -> &PasswordSource {
        &self.password_source
    }

    /// Why a password file that is there was not read (group or world may read it, or
    /// it is not a plain file).
    pub fn passfile_ignored(&self) -> Option<&str> {
        self.passfile_ignored.as_deref()
    }

    /// The `sslmode`.
    pub fn sslmode(&self) -> SslMode {
        self.sslmode
    }

    /// The `sslrootcert`, when given.
    pub fn sslrootcert(&self) -> Option<&RootCert> {
        self.sslrootcert.as_ref()
    }

    /// The `connect_timeout`, when given (libpq's minimum of 2 s applied).
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// `host:port` of the first host (the socket folder for a Unix socket).
    pub fn host_port(&self) -> String {
        let port = self.ports.first().copied().unwrap_or(5432);
        match self.hosts.first() {
            Some(PgHost::Tcp(h)) if h.contains(':') => format!("[{h}]:{port}"),
            Some(PgHost::Tcp(h)) => format!("{h}:{port}"),
            Some(PgHost::Unix(p)) => format!("{}:{port}", p.display()),
            None => format!("localhost:{port}"),
        }
    }

    /// A `postgres::Config` for this target: hosts, ports, user, password, database,
    /// `application_name` (default `veredicto`), `options`, and the connect timeout
    /// (`connect_timeout`, else `default_timeout`). [`PgTarget::connect`] sets the TLS mode.
    pub fn config(&self, default_timeout: Duration) -> postgres::Config {
        let mut config = postgres::Config::new();
        for host in &self.hosts {
            match host {
                PgHost::Tcp(h) => config.host(h),
                PgHost::Unix(p) => config.host_path(p),
            };
        }
        for port in &self.ports {
            config.port(*port);
        }
        config.user(&self.user);
        config.dbname(&self.dbname);
        if let Some(p) = &self.password {
            config.password(p);
        }
        config.application_name(self.application_name.as_deref().unwrap_or("veredicto"));
        if let Some(o) = &self.options {
            config.options(o);
        }
        config.connect_timeout(self.connect_timeout.unwrap_or(default_timeout));
        config
    }

    /// The TLS set-up for `sslmode`: the mode `postgres` negotiates, and the certificate
    /// check with its roots.
    fn tls_plan(&self) -> Result<Plan, PgConnectError> {
        if self.hosts.iter().all(|h| matches!(h, PgHost::Unix(_))) {
            return Ok(Plan::Plain);
        }
        let default_root = self.default_root.as_ref().filter(|p| p.is_file());
        let roots = |mode: SslMode| -> Result<Roots, PgConnectError> {
            match (&self.sslrootcert, default_root) {
                (Some(RootCert::File(p)), _) => Ok(Roots::File(p.clone())),
                (Some(RootCert::System), _) => Ok(Roots::System),
                (None, Some(p)) => Ok(Roots::File(p.clone())),
                (None, None) => Err(PgConnectError::Setup(format!(
                    "sslmode={mode} needs the server's root certificate: give sslrootcert=FILE \
                     (a PEM file) or sslrootcert=system (the system's roots){}",
                    match &self.default_root {
                        Some(p) => format!("; {} does not exist", p.display()),
                        None => String::new(),
                    }
                ))),
            }
        };
        Ok(match self.sslmode {
            SslMode::Disable => Plan::Plain,
            SslMode::Allow => Plan::PlainThenTls,
            SslMode::Prefer => Plan::Tls(postgres::config::SslMode::Prefer, Check::None, None),
            SslMode::Require => {
                // libpq: with a root certificate at hand, `require` checks the chain.
                match (&self.sslrootcert, default_root) {
                    (None, None) => {
                        Plan::Tls(postgres::config::SslMode::Require, Check::None, None)
                    }
                    _ => Plan::Tls(
                        postgres::config::SslMode::Require,
                        Check::Chain,
                        Some(roots(SslMode::Require)?),
                    ),
                }
            }
            SslMode::VerifyCa => Plan::Tls(
                postgres::config::SslMode::Require,
                Check::Chain,
                Some(roots(SslMode::VerifyCa)?),
            ),
            SslMode::VerifyFull => Plan::Tls(
                postgres::config::SslMode::Require,
                Check::Full,
                Some(roots(SslMode::VerifyFull)?),
            ),
        })
    }

    /// A [`PgConnector`] for this target (root certificates read once).
    pub fn connector(&self) -> Result<PgConnector, PgConnectError> {
        let plan = self.tls_plan()?;
        let tls = match &plan {
            Plan::Plain => None,
            Plan::PlainThenTls => Some(tls::client_config(Check::None, None)),
            Plan::Tls(_, check, roots) => Some(tls::client_config(*check, roots.as_ref())),
        }
        .transpose()
        .map_err(|e| PgConnectError::Setup(format!("sslrootcert: {e}")))?;
        let roots = match &plan {
            Plan::Tls(_, _, Some(Roots::File(p))) => Some(format!("sslrootcert {}", p.display())),
            Plan::Tls(_, _, Some(_)) => Some("sslrootcert=system".to_owned()),
            _ => None,
        };
        Ok(PgConnector {
            roots,
            plan,
            tls: tls.map(tokio_postgres_rustls::MakeRustlsConnect::new),
            target: self.describe(),
            sslmode: self.sslmode,
            passfile_ignored: self.passfile_ignored.clone(),
        })
    }

    /// Connects with `config` (from [`PgTarget::config`], tuned by the caller) under this
    /// target's `sslmode`.
    pub fn connect(&self, config: postgres::Config) -> Result<postgres::Client, PgConnectError> {
        self.connector()?.connect(config)
    }

    /// `postgres://user:***@host:port/db` (`:***` only when there is a password).
    pub fn describe(&self) -> String {
        let hosts: Vec<String> = self
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let port = self
                    .ports
                    .get(i)
                    .or(self.ports.first())
                    .copied()
                    .unwrap_or(5432);
                match h {
                    PgHost::Tcp(h) if h.contains(':') => format!("[{h}]:{port}"),
                    PgHost::Tcp(h) => format!("{h}:{port}"),
                    PgHost::Unix(p) => format!("{}:{port}", encode(&p.to_string_lossy())),
                }
            })
            .collect();
        format!(
            "postgres://{}{}@{}/{}",
            encode(&self.user),
            if self.password.is_some() { ":***" } else { "" },
            hosts.join(","),
            encode(&self.dbname)
        )
    }
}

impl std::fmt::Display for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Without the password.
impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTarget")
            .field("target", &self.describe())
            .field("password", &self.password_source)
            .field("sslmode", &self.sslmode)
            .field("sslrootcert", &self.sslrootcert)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

/// How TLS is negotiated.
#[derive(Debug, Clone)]
enum Plan {
    Plain,
    PlainThenTls,
    Tls(postgres::config::SslMode, Check, Option<Roots>),
}

/// Connects to one target again and again with the TLS set-up read once (a pool's
/// connections).
#[derive(Clone)]
pub struct PgConnector {
    plan: Plan,
    /// The root certificates checked against, for messages.
    roots: Option<String>,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    target: String,
    sslmode: SslMode,
    passfile_ignored: Option<String>,
}

impl std::fmt::Debug for PgConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConnector")
            .field("target", &self.target)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl PgConnector {
    /// Connects with `config` under the target's `sslmode`.
    pub fn connect(
        &self,
        mut config: postgres::Config,
    ) -> Result<postgres::Client, PgConnectError> {
        let result = match (&self.plan, &self.tls) {
            (Plan::Plain, _) | (_, None) => {
                config.ssl_mode(postgres::config::SslMode::Disable);
                config.connect(postgres::NoTls)
            }
            (Plan::PlainThenTls, Some(tls)) => {
                config.ssl_mode(postgres::config::SslMode::Disable);
                match config.connect(postgres::NoTls) {
                    // The server answered and refused: try again with TLS.
                    Err(e) if e.as_db_error().is_some() => {
                        config.ssl_mode(postgres::config::SslMode::Require);
                        config.connect(tls.clone())
                    }
                    other => other,
                }
            }
            (Plan::Tls(mode, _, _), Some(tls)) => {
                config.ssl_mode(*mode);
                config.connect(tls.clone())
            }
        };
        result.map_err(|e| self.error(e))
    }

    fn error(&self, e: postgres::Error) -> PgConnectError {
        let tls_problem = tls::certificate_problem(&e).map(|p| match &self.roots {
            Some(roots) => format!("{p} (sslmode={}, {roots})", self.sslmode),
            None => format!("{p} (sslmode={})", self.sslmode),
        });
        let message = connect_message(&e);
        let no_tls = e.as_db_error().is_none() && message.contains("server does not support TLS");
        let hint = if no_tls {
            Some(format!(
                "the server does not accept TLS connections, and sslmode={} requires TLS",
                self.sslmode
            ))
        } else if e.as_db_error().is_some_and(|d| {
            d.code() == &postgres::error::SqlState::INVALID_PASSWORD
                || d.code() == &postgres::error::SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        }) {
            self.passfile_ignored.clone()
        } else {
            None
        };
        PgConnectError::Connect {
            message,
            tls_problem: tls_problem.or(hint),
            error: e,
        }
    }
}

/// Why connecting failed.
#[derive(Debug, thiserror::Error)]
pub enum PgConnectError {
    /// The TLS set-up is not usable (no or a bad root certificate): nothing was sent.
    #[error("{0}")]
    Setup(String),
    /// The connection failed.
    #[error("{}", match tls_problem { Some(p) => format!("{p}: {message}"), None => message.clone() })]
    Connect {
        /// The driver's message on one line, without credentials.
        message: String,
        /// What the TLS checks refused, or a hint (TLS refused by the server, a password
        /// file ignored).
        tls_problem: Option<String>,
        /// The driver's error.
        error: postgres::Error,
    },
}

impl PgConnectError {
    /// Whether the server answered (a wrong password, no such database): trying again
    /// gives the same answer. TLS refusals count as answers too.
    pub fn server_answered(&self) -> bool {
        match self {
            PgConnectError::Setup(_) => true,
            PgConnectError::Connect {
                error, tls_problem, ..
            } => error.as_db_error().is_some() || tls_problem.is_some(),
        }
    }

    /// The driver's error, when there is one.
    pub fn postgres(&self) -> Option<&postgres::Error> {
        match self {
            PgConnectError::Setup(_) => None,
            PgConnectError::Connect { error, .. } => Some(error),
        }
    }
}

/// The driver's message on one line, without credentials: `SEVERITY: message` for the
/// server's answers, else the error and its causes.
pub fn connect_message(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut t = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                let more = s.to_string();
                if !t.contains(&more) {
                    t.push_str(&format!(": {more}"));
                }
                source = s.source();
            }
            t
        }
    };
    redact::escape_control(&redact::secrets_in_text(&text))
}

// ---------------------------------------------------------------------------------------
// Parsing

/// Parameters as written (decoded), by libpq key.
type Params = BTreeMap<String, String>;

fn bad(reason: String) -> PgTargetError {
    PgTargetError(reason)
}

fn decode(s: &str) -> Result<String, PgTargetError> {
    String::from_utf8(crate::percent_decode(s))
        .map_err(|_| bad(format!("`{}` is not UTF-8 once decoded", redact::short(s))))
}

/// Percent-encodes what a URL part cannot hold.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn parse_url(text: &str) -> Result<(Params, Vec<(String, String)>), PgTargetError> {
    let mut params = Params::new();
    let rest = &text[text.find("://").map_or(0, |i| i + 3)..];
    let rest = rest.split('#').next().unwrap_or("");
    let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, db) = before_query.split_once('/').unwrap_or((before_query, ""));
    // The last `@` ends the user part (a password may hold an `@`).
    let (userinfo, hostlist) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if let Some(u) = userinfo {
        let (user, password) = match u.split_once(':') {
            Some((user, p)) => (user, Some(p)),
            None => (u, None),
        };
        if !user.is_empty() {
            params.insert("user".into(), decode(user)?);
        }
        if let Some(p) = password {
            params.insert("password".into(), decode(p)?);
        }
    }
    let (mut hosts, mut ports) = (Vec::new(), Vec::new());
    if !hostlist.is_empty() {
        for part in hostlist.split(',') {
            let (host, port) = if let Some(v6) = part.strip_prefix('[') {
                let (h, after) = v6
                    .split_once(']')
                    .ok_or_else(|| bad(format!("`{}`: `[` without `]`", redact::short(part))))?;
                match after {
                    "" => (h.to_owned(), None),
                    p if p.starts_with(':') => (h.to_owned(), Some(&p[1..])),
                    _ => return Err(bad(format!("`{}` is not host:port", redact::short(part)))),
                }
            } else {
                match part.rsplit_once(':') {
                    Some((h, p)) => (decode(h)?, Some(p)),
                    None => (decode(part)?, None),
                }
            };
            hosts.push(host);
            ports.push(port.unwrap_or("").to_owned());
        }
        if hosts.iter().any(|h| !h.is_empty()) {
            params.insert("host".into(), hosts.join(","));
        }
        if ports.iter().any(|p| !p.is_empty()) {
            params.insert("port".into(), ports.join(","));
        }
    }
    if !db.is_empty() {
        params.insert("dbname".into(), decode(db)?);
    }
    let mut extras = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(k)?;
        if KEYS.contains(&key.as_str()) {
            params.insert(key, decode(v)?);
        } else if let Some(reason) = unsupported(&key) {
            return Err(bad(format!("`{key}`: {reason}")));
        } else {
            extras.push((k.to_owned(), v.to_owned()));
        }
    }
    Ok((params, extras))
}

fn parse_pairs(text: &str) -> Result<Params, PgTargetError> {
    let mut params = Params::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(bad(format!(
                "`{}` has no `=` (expected key=value pairs)",
                redact::short(&key)
            )));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(bad(format!("`{key}`: unterminated quoted value"))),
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        if let Some(reason) = unsupported(&key) {
            return Err(bad(format!("`{key}`: {reason}")));
        }
        if !KEYS.contains(&key.as_str()) {
            return Err(bad(format!(
                "unknown parameter `{}` (known: {})",
                redact::short(&key),
                KEYS.join(", ")
            )));
        }
        params.insert(key, value);
    }
    Ok(params)
}

fn resolve(mut params: Params, env: &PgEnv) -> Result<PgTarget, PgTargetError> {
    let target_password = params.remove("password");
    let mut take = |key: &str, var: &str| -> Option<String> {
        params
            .remove(key)
            .filter(|v| !v.is_empty())
            .or_else(|| env.get(var).map(str::to_owned))
    };
    let host_text = take("host", "PGHOST").unwrap_or_else(|| "localhost".to_owned());
    let port_text = take("port", "PGPORT");
    let user = take("user", "PGUSER")
        .or_else(|| env.get("USER").map(str::to_owned))
        .or_else(|| env.get("LOGNAME").map(str::to_owned))
        .ok_or_else(|| {
            bad(
                "no user name: give one in the target (postgres://USER@host/db) or in PGUSER"
                    .into(),
            )
        })?;
    let dbname = take("dbname", "PGDATABASE").unwrap_or_else(|| user.clone());
    let passfile = take("passfile", "PGPASSFILE");
    let sslmode: SslMode = take("sslmode", "PGSSLMODE")
        .map(|s| s.parse())
        .transpose()
        .map_err(bad)?
        .unwrap_or(SslMode::Prefer);
    let sslrootcert = take("sslrootcert", "PGSSLROOTCERT").map(|s| {
        if s == "system" {
            RootCert::System
        } else {
            RootCert::File(expand_home(&s, env))
        }
    });
    let connect_timeout = take("connect_timeout", "PGCONNECT_TIMEOUT")
        .map(|s| {
            s.trim().parse::<i64>().map_err(|_| {
                bad(format!(
                    "connect_timeout `{}` is not a whole number of seconds",
                    redact::short(&s)
                ))
            })
        })
        .transpose()?
        .filter(|s| *s > 0)
        // libpq waits at least 2 s.
        .map(|s| Duration::from_secs(s.max(2).unsigned_abs()));
    let application_name = take("application_name", "PGAPPNAME");
    let options = take("options", "PGOPTIONS");

    let hosts: Vec<PgHost> = host_text
        .split(',')
        .map(|h| {
            if h.is_empty() {
                PgHost::Tcp("localhost".to_owned())
            } else if h.starts_with('/') {
                PgHost::Unix(PathBuf::from(h))
            } else {
                PgHost::Tcp(h.to_owned())
            }
        })
        .collect();
    let ports: Vec<u16> = match port_text {
        None => vec![5432],
        Some(text) => text
            .split(',')
            .map(|p| {
                if p.is_empty() {
                    return Ok(5432);
                }
                p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                    bad(format!(
                        "port `{}` is not a number from 1 to 65535",
                        redact::short(p)
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
    };
    if ports.len() != 1 && ports.len() != hosts.len() {
        return Err(bad(format!(
            "{} ports for {} hosts (give one port, or one per host)",
            ports.len(),
            hosts.len()
        )));
    }
    if sslrootcert == Some(RootCert::System) && sslmode != SslMode::VerifyFull {
        return Err(bad(format!(
            "sslrootcert=system needs sslmode=verify-full (not {sslmode}): the system's roots \
             vouch for host names only"
        )));
    }
    let home = env.home();
    let mut target = PgTarget {
        hosts,
        ports,
        user,
        password: None,
        password_source: PasswordSource::None,
        passfile_ignored: None,
        dbname,
        sslmode,
        sslrootcert,
        default_root: home
            .as_ref()
            .map(|h| h.join(".postgresql").join("root.crt")),
        connect_timeout,
        application_name,
        options,
    };
    if let Some(p) = target_password {
        target.password = Some(p);
        target.password_source = PasswordSource::Target;
    } else if let Some(p) = env.get("PGPASSWORD") {
        target.password = Some(p.to_owned());
        target.password_source = PasswordSource::Environment;
    } else {
        let file = passfile
            .map(|f| expand_home(&f, env))
            .or_else(|| home.map(|h| h.join(".pgpass")));
        if let Some(file) = file {
            match password_from_file(&file, &target) {
                Ok(Some(p)) => {
                    target.password = Some(p);
                    target.password_source = PasswordSource::PassFile(file);
                }
                Ok(None) => {}
                Err(why) => target.passfile_ignored = Some(why),
            }
        }
    }
    Ok(target)
}

fn expand_home(path: &str, env: &PgEnv) -> PathBuf {
    match (path.strip_prefix("~/"), env.home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// The password of the first line of `file` matching the target's first host, port,
/// database and user; `Err` with a reason when the file is there but ignored.
fn password_from_file(file: &Path, target: &PgTarget) -> Result<Option<String>, String> {
    let Ok(meta) = std::fs::metadata(file) else {
        return Ok(None);
    };
    if !meta.is_file() {
        return Err(format!(
            "password file {} is not a plain file, so it was ignored",
            file.display()
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "password file {} has group or world access, so it was ignored (as libpq does); \
                 make it private: chmod 0600 {}",
                file.display(),
                file.display()
            ));
        }
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("password file {}: {e}", file.display()))?;
    let host = match target.hosts.first() {
        Some(PgHost::Tcp(h)) => h.clone(),
        Some(PgHost::Unix(_)) | None => "localhost".to_owned(),
    };
    let port = target.ports.first().copied().unwrap_or(5432).to_string();
    Ok(lookup_pgpass(
        &text,
        &host,
        &port,
        &target.dbname,
        &target.user,
    ))
}

/// The password of the first line of a password file matching (host, port, database,
/// user); `*` in a field matches anything.
pub fn lookup_pgpass(text: &str, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass(line.trim_end_matches('\r'));
            let [fh, fp, fd, fu, pw] = fields.as_slice() else {
                return None;
            };
            let ok = |f: &str, v: &str| f == "*" || f == v;
            (ok(fh, host) && ok(fp, port) && ok(fd, db) && ok(fu, user)).then(|| pw.clone())
        })
}

/// A password-file line's fields: `:` separates, `\` escapes the next character; the fifth
/// field (the password) takes the rest of the line.
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(f)) = (chars.next(), fields.last_mut()) {
                    f.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    fields
}
