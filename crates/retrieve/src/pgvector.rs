//! pgvector (`postgres://user@host:port/db?table=T&id=COL&vector=COL[&metric=…][&where=…]`).
//!
//! - Query vectors are sent as a bound parameter in pgvector's text form and cast in SQL
//!   (`$1::text::vector`), never interpolated into the statement.
//! - `table` (optionally `schema.table`), `id` and `vector` must be plain identifiers
//!   (letters, digits, `_`); they are quoted in the statement.
//! - `metric`: `cosine` (default, `<=>`, score = 1 − distance), `l2` (`<->`, score =
//!   −distance) or `ip` (`<#>`, score = inner product).
//! - `where`: an SQL condition ANDed to the query. It is trusted SQL from the user's own
//!   command line or configuration (like the URI itself), not data: veredicto only refuses
//!   a `;` in it.
//! - `filter.KEY=COLUMN`: a golden case's `filters` key compared with a column, the value
//!   a bound parameter: `COLUMN::text = $n` (`domain`, facets), `$n = ANY(COLUMN::text[])`
//!   for each label (key `labels`). A case whose filters name a key without a column is
//!   refused with that key; `valid_at` has no equivalent here.
//! - `ef_search` / `probes`: set `hnsw.ef_search` / `ivfflat.probes` on each connection, to
//!   examine the setting that is deployed.
//! - The exact ranking (`--exactness-check`) is the same statement in a transaction with
//!   index scans disabled (`SET LOCAL enable_indexscan = off`).
//! - The password comes from the URL or from `PGPASSWORD`; it is never stored or printed.
//!   Connections are plain TCP (no TLS).

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use veredicto_core::redact;

use crate::{Hit, Options, Ranking, Request, RetrieveError, Retriever, Vectors};

/// The distance operator and how a distance becomes a score (higher is better).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Cosine,
    L2,
    Ip,
}

impl Metric {
    fn op(self) -> &'static str {
        match self {
            Metric::Cosine => "<=>",
            Metric::L2 => "<->",
            Metric::Ip => "<#>",
        }
    }

    fn score(self, distance: f64) -> f64 {
        match self {
            Metric::Cosine => 1.0 - distance,
            Metric::L2 | Metric::Ip => -distance,
        }
    }
}

/// A pgvector table.
pub struct PgVector {
    shown: String,
    config: postgres::Config,
    table: String,
    id: String,
    vector: String,
    metric: Metric,
    condition: Option<String>,
    /// `filter.KEY=COLUMN`: the column a case filter's key is compared with.
    filter_columns: std::collections::BTreeMap<String, String>,
    settings: Vec<String>,
    options: Options,
    start: Instant,
    pool: Mutex<Vec<postgres::Client>>,
    dimension: OnceLock<Option<usize>>,
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 3 <= bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn identifier(what: &str, value: &str, dotted: bool) -> Result<String, String> {
    let parts: Vec<&str> = value.split('.').collect();
    let ok = (parts.len() == 1 || (dotted && parts.len() == 2))
        && parts.iter().all(|p| {
            let mut chars = p.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if !ok {
        return Err(format!(
            "`{what}={}` is not a plain identifier (letters, digits and `_`{})",
            redact::short(value),
            if dotted {
                ", optionally schema.table"
            } else {
                ""
            }
        ));
    }
    Ok(parts
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join("."))
}

impl PgVector {
    /// Parses the URI; connects on first use.
    pub fn new(uri: &str, options: &Options) -> Result<PgVector, RetrieveError> {
        let shown = redact::url(uri);
        let bad = |reason: String| RetrieveError::Uri {
            uri: shown.clone(),
            reason,
        };
        let rest = uri
            .split_once("://")
            .map(|(_, r)| r)
            .ok_or_else(|| bad("expected postgres://user@host:port/db?table=…".into()))?;
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, db) = before_query.split_once('/').unwrap_or((before_query, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let mut config = postgres::Config::new();
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || hostport.starts_with('[') => (
                h,
                Some(
                    p.parse::<u16>()
                        .map_err(|_| bad(format!("port `{}` is not a number", redact::short(p))))?,
                ),
            ),
            _ => (hostport, None),
        };
        if host.is_empty() {
            return Err(bad("no host".into()));
        }
        config.host(host.trim_start_matches('[').trim_end_matches(']'));
        config.port(port.unwrap_or(5432));
        let db = percent_decode(db);
        if !db.is_empty() {
            config.dbname(&db);
        }
        match userinfo {
            Some(u) => {
                let (user, password) = match u.split_once(':') {
                    Some((user, p)) => (user, Some(percent_decode(p))),
                    None => (u, None),
                };
                config.user(&percent_decode(user));
                if let Some(p) = password {
                    config.password(p);
                }
            }
            None => {
                config.user(&std::env::var("PGUSER").unwrap_or_else(|_| "postgres".into()));
            }
        }
        if config.get_password().is_none() {
            if let Ok(p) = std::env::var("PGPASSWORD") {
                config.password(p);
            }
        }
        config.connect_timeout(options.timeout);
        config.application_name("veredicto");
        let (mut table, mut id, mut vector) = (None, None, None);
        let (mut metric, mut condition, mut settings) = (Metric::Cosine, None, Vec::new());
        let mut filter_columns = std::collections::BTreeMap::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = percent_decode(v);
            match k {
                "table" => table = Some(identifier("table", &v, true).map_err(bad)?),
                "id" => id = Some(identifier("id", &v, false).map_err(bad)?),
                "vector" => vector = Some(identifier("vector", &v, false).map_err(bad)?),
                "metric" => {
                    metric = match v.as_str() {
                        "cosine" => Metric::Cosine,
                        "l2" => Metric::L2,
                        "ip" => Metric::Ip,
                        other => {
                            return Err(bad(format!(
                                "`metric={}`: expected cosine, l2 or ip",
                                redact::short(other)
                            )))
                        }
                    }
                }
                "where" => {
                    if v.contains(';') {
                        return Err(bad("`where` must be one SQL condition, without `;`".into()));
                    }
                    condition = Some(v);
                }
                "ef_search" | "probes" => {
                    let n: u32 = v.parse().map_err(|_| {
                        bad(format!("`{k}={}` is not a whole number", redact::short(&v)))
                    })?;
                    let name = if k == "ef_search" {
                        "hnsw.ef_search"
                    } else {
                        "ivfflat.probes"
                    };
                    settings.push(format!("SET {name} = {n}"));
                }
                "sslmode" if v == "disable" || v == "prefer" => {}
                k if k.starts_with("filter.") && k.len() > "filter.".len() => {
                    let column = identifier(k, &v, false).map_err(bad)?;
                    filter_columns.insert(k["filter.".len()..].to_owned(), column);
                }
                other => {
                    return Err(bad(format!(
                        "unknown parameter `{}` (known: table, id, vector, metric, where, filter.KEY, ef_search, probes)",
                        redact::short(other)
                    )))
                }
            }
        }
        let need = |v: Option<String>, name: &str| {
            v.ok_or_else(|| bad(format!("missing `{name}=` (table=T&id=COL&vector=COL)")))
        };
        Ok(PgVector {
            table: need(table, "table")?,
            id: need(id, "id")?,
            vector: need(vector, "vector")?,
            shown: shown.clone(),
            config,
            metric,
            condition,
            filter_columns,
            settings,
            options: options.clone(),
            start: Instant::now(),
            pool: Mutex::new(Vec::new()),
            dimension: OnceLock::new(),
        })
    }

    fn setup(&self, reason: String) -> RetrieveError {
        RetrieveError::Setup {
            uri: self.shown.clone(),
            reason,
        }
    }

    fn left(&self) -> Result<Duration, RetrieveError> {
        self.options
            .deadline
            .checked_sub(self.start.elapsed())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                self.setup(format!(
                    "total deadline of {} s passed (raise it with --deadline)",
                    self.options.deadline.as_secs()
                ))
            })
    }

    fn pg_error(&self, e: &postgres::Error) -> String {
        match e.as_db_error() {
            Some(db) => redact::short(db.message()),
            None => redact::short(&redact::secrets_in_text(&e.to_string())),
        }
    }

    fn client(&self) -> Result<postgres::Client, RetrieveError> {
        if let Some(c) = self.pool.lock().ok().and_then(|mut p| p.pop()) {
            return Ok(c);
        }
        let timeout = self.options.timeout.min(self.left()?);
        let mut config = self.config.clone();
        config.connect_timeout(timeout);
        let mut client = config
            .connect(postgres::NoTls)
            .map_err(|e| self.setup(format!("cannot connect: {}", self.pg_error(&e))))?;
        let mut init = format!(
            "SET statement_timeout = {}",
            self.options.timeout.as_millis().max(1)
        );
        for s in &self.settings {
            init.push_str("; ");
            init.push_str(s);
        }
        client
            .batch_execute(&init)
            .map_err(|e| self.setup(self.pg_error(&e)))?;
        Ok(client)
    }

    fn give_back(&self, client: postgres::Client) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(client);
        }
    }

    /// The statement, with `equalities` (column SQL, whether it is the labels array) as
    /// parameters `$3`, `$4`, ….
    fn statement(&self, equalities: &[(&str, bool)]) -> String {
        let dist = format!("{} {} $1::text::vector", self.vector, self.metric.op());
        let mut conditions: Vec<String> = self.condition.iter().map(|c| format!("({c})")).collect();
        for (i, (column, labels)) in equalities.iter().enumerate() {
            let n = i + 3;
            conditions.push(if *labels {
                format!("${n} = ANY({column}::text[])")
            } else {
                format!("{column}::text = ${n}")
            });
        }
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conditions.join(" AND "))
        };
        format!(
            "SELECT {id}::text, ({dist})::float8 FROM {table}{filter} ORDER BY {dist} LIMIT $2",
            id = self.id,
            table = self.table
        )
    }

    /// The vector column's declared dimension, after checking the table and the columns.
    fn inspect(&self, client: &mut postgres::Client) -> Result<Option<usize>, RetrieveError> {
        let exists: Option<String> = client
            .query_one("SELECT to_regclass($1)::text", &[&self.table])
            .map_err(|e| self.setup(self.pg_error(&e)))?
            .get(0);
        let unquoted = self.table.replace('"', "");
        if exists.is_none() {
            return Err(self.setup(format!("table `{unquoted}` does not exist")));
        }
        let rows = client
            .query(
                "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                &[&self.table],
            )
            .map_err(|e| self.setup(self.pg_error(&e)))?;
        let columns: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        let names: Vec<&str> = columns.iter().map(|(n, _)| n.as_str()).collect();
        let find = |col: &str| columns.iter().find(|(n, _)| n == col.trim_matches('"'));
        if find(&self.id).is_none() {
            return Err(self.setup(format!(
                "column `{}` (id=) does not exist in table `{unquoted}` (columns: {})",
                self.id.trim_matches('"'),
                names.join(", ")
            )));
        }
        let Some((_, ty)) = find(&self.vector) else {
            return Err(self.setup(format!(
                "column `{}` (vector=) does not exist in table `{unquoted}` (columns: {})",
                self.vector.trim_matches('"'),
                names.join(", ")
            )));
        };
        if !ty.starts_with("vector") {
            return Err(self.setup(format!(
                "column `{}` of table `{unquoted}` is `{ty}`, not a pgvector `vector`",
                self.vector.trim_matches('"')
            )));
        }
        Ok(ty
            .strip_prefix("vector(")
            .and_then(|d| d.strip_suffix(')'))
            .and_then(|d| d.parse().ok()))
    }
}

/// pgvector's text form of a vector: `[1,2.5,3]`.
fn vector_text(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 10 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&x.to_string());
    }
    s.push(']');
    s
}

impl Retriever for PgVector {
    fn describe(&self) -> String {
        self.shown.clone()
    }

    fn kind(&self) -> &'static str {
        "pgvector"
    }

    fn vectors(&self) -> Vectors {
        Vectors::Required
    }

    fn exact_search(&self) -> bool {
        true
    }

    fn prepare(&self, dimension: Option<usize>) -> Result<(), RetrieveError> {
        let mut client = self.client()?;
        let declared = self.inspect(&mut client)?;
        self.give_back(client);
        let _ = self.dimension.set(declared);
        if let (Some(want), Some(got)) = (declared, dimension) {
            if want != got {
                return Err(self.setup(format!(
                    "the embedder gives vectors of dimension {got}, column `{}` holds dimension {want}",
                    self.vector.trim_matches('"')
                )));
            }
        }
        Ok(())
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        let vector = request.vector.ok_or_else(|| RetrieveError::NoVector {
            case: request.case_id.to_owned(),
        })?;
        if let Some(Some(want)) = self.dimension.get() {
            if vector.len() != *want {
                return Err(RetrieveError::QueryDimension {
                    case: request.case_id.to_owned(),
                    got: vector.len(),
                    want: *want,
                });
            }
        }
        self.left()?;
        let mut client = self.client()?;
        let text = vector_text(vector);
        let limit = request.depth as i64;
        let filters = match request.filters {
            Some(f) => crate::filter_equalities(f)
                .map_err(|reason| self.setup(format!("case `{}`: {reason}", request.case_id)))?,
            None => Vec::new(),
        };
        let mut equalities = Vec::with_capacity(filters.len());
        let mut values = Vec::with_capacity(filters.len());
        for (key, value) in &filters {
            let Some(column) = self.filter_columns.get(key) else {
                return Err(self.setup(format!(
                    "case `{}`: filter `{key}` has no column here: add `&filter.{key}=COLUMN` to the URI",
                    request.case_id
                )));
            };
            equalities.push((column.as_str(), key == "labels"));
            values.push(match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
        let sql = self.statement(&equalities);
        let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&text, &limit];
        params.extend(
            values
                .iter()
                .map(|v| v as &(dyn postgres::types::ToSql + Sync)),
        );
        // A statement cancelled by `statement_timeout` is retried with backoff like an HTTP
        // timeout; any other database error is final. Every attempt stays inside the deadline.
        let max_attempts = self.options.retries.saturating_add(1);
        let first = Instant::now();
        let mut attempt = 0u32;
        let rows = loop {
            attempt += 1;
            let result = if request.exact {
                client.transaction().and_then(|mut tx| {
                    tx.batch_execute(
                        "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off",
                    )?;
                    let rows = tx.query(&sql, &params)?;
                    tx.commit()?;
                    Ok(rows)
                })
            } else {
                client.query(&sql, &params)
            };
            let e = match result {
                Ok(rows) => {
                    self.give_back(client);
                    break rows;
                }
                Err(e) => e,
            };
            let message = self.pg_error(&e);
            let timed_out = e
                .as_db_error()
                .is_some_and(|d| d.code() == &postgres::error::SqlState::QUERY_CANCELED);
            if !timed_out {
                return Err(self.setup(format!("case `{}`: {message}", request.case_id)));
            }
            let wait = self.options.retry_wait(attempt);
            let time_left = self.left().map(|left| left > wait).unwrap_or(false);
            if attempt >= max_attempts || !time_left || client.is_closed() {
                return Err(RetrieveError::Case {
                    uri: self.shown.clone(),
                    reason: format!(
                        "case `{}`: {message} ({attempt} attempts over {:.1} s)",
                        request.case_id,
                        first.elapsed().as_secs_f64()
                    ),
                });
            }
            std::thread::sleep(wait);
        };
        let hits = rows
            .iter()
            .map(|r| {
                let id: Option<String> = r.get(0);
                let d: Option<f64> = r.get(1);
                Hit {
                    id: id.unwrap_or_default(),
                    score: d.map(|d| self.metric.score(d)),
                }
            })
            .collect();
        Ok(Ranking {
            hits,
            known: Default::default(),
        })
    }
}
