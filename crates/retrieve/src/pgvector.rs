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
//! - `doc=COL&start=COL&end=COL`: the columns that say where each row's chunk sits in its
//!   document (its `doc_id`, and character offsets, end exclusive), read with each result so
//!   that evidence spans are resolved without a corpus; the three together or none.
//! - `ef_search` / `probes`: set `hnsw.ef_search` / `ivfflat.probes` on each connection, to
//!   examine the setting that is deployed.
//! - The exact ranking (`--exactness-check`) is the same statement ordered by `distance + 0`
//!   (an expression no index provides) in a transaction with index scans disabled and
//!   sequential scans enabled (`SET LOCAL`), so it stays exact when a database sets
//!   `enable_seqscan = off`.
//! - After the exam's search: which unretrieved expected chunks the table holds
//!   (`WHERE id::text = ANY($1)`, with the URI's `where`); when answers come back short, why
//!   (fewer rows, or the plan's HNSW scan capped by `hnsw.ef_search`); with the exactness
//!   check, `EXPLAIN` of the served statement (an ANN index in the plan, or an exact scan).
//! - The connection follows libpq's rules, as the PostgreSQL history's does
//!   (`veredicto_net::pg`): the user from the URL, `PGUSER` or the OS user; the password from
//!   the URL, `PGPASSWORD` or `~/.pgpass`; TLS as `sslmode` says (`prefer` by default;
//!   `verify-full` with `sslrootcert=FILE` checks the certificate and the host name). The
//!   password is never stored or printed.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use veredicto_core::redact;

use crate::{Hit, Holding, Options, Ranking, Request, RetrieveError, Retriever, Vectors};

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

/// Equality conditions of a request's filters: (column SQL, whether it is the labels array).
type Equalities<'s> = Vec<(&'s str, bool)>;

/// A pgvector table.
pub struct PgVector {
    shown: String,
    config: postgres::Config,
    /// Connects with the TLS set-up `sslmode` asks for.
    connector: veredicto_net::PgConnector,
    table: String,
    id: String,
    vector: String,
    metric: Metric,
    condition: Option<String>,
    /// `doc`, `start`, `end`: the span columns, quoted.
    span_columns: Option<[String; 3]>,
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
        // The connection part follows libpq's rules (user, PGUSER, PGPASSWORD, ~/.pgpass,
        // sslmode, sslrootcert, …); the rest of the query is this retriever's.
        let (target, extras) =
            veredicto_net::PgTarget::parse_with_extras(uri, &veredicto_net::PgEnv::from_process())
                .map_err(|e| bad(e.to_string()))?;
        let connector = target.connector().map_err(|e| bad(e.to_string()))?;
        let config = target.config(options.timeout);
        let (mut table, mut id, mut vector) = (None, None, None);
        let (mut metric, mut condition, mut settings) = (Metric::Cosine, None, Vec::new());
        let mut filter_columns = std::collections::BTreeMap::new();
        let mut span: [Option<String>; 3] = [None, None, None];
        for (k, v) in &extras {
            let k = k.as_str();
            let v = percent_decode(v);
            match k {
                "table" => table = Some(identifier("table", &v, true).map_err(bad)?),
                "id" => id = Some(identifier("id", &v, false).map_err(bad)?),
                "vector" => vector = Some(identifier("vector", &v, false).map_err(bad)?),
                "doc" => span[0] = Some(identifier("doc", &v, false).map_err(bad)?),
                "start" => span[1] = Some(identifier("start", &v, false).map_err(bad)?),
                "end" => span[2] = Some(identifier("end", &v, false).map_err(bad)?),
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
                k if k.starts_with("filter.") && k.len() > "filter.".len() => {
                    let column = identifier(k, &v, false).map_err(bad)?;
                    filter_columns.insert(k["filter.".len()..].to_owned(), column);
                }
                other => {
                    return Err(bad(format!(
                        "unknown parameter `{}` (known: table, id, vector, doc, start, end, metric, where, filter.KEY, ef_search, probes, and libpq's sslmode, sslrootcert, connect_timeout, …)",
                        redact::short(other)
                    )))
                }
            }
        }
        let need = |v: Option<String>, name: &str| {
            v.ok_or_else(|| bad(format!("missing `{name}=` (table=T&id=COL&vector=COL)")))
        };
        let span_columns = match span {
            [Some(d), Some(s), Some(e)] => Some([d, s, e]),
            [None, None, None] => None,
            _ => return Err(bad(
                "`doc`, `start` and `end` name the span columns together: give all three or none"
                    .into(),
            )),
        };
        Ok(PgVector {
            table: need(table, "table")?,
            id: need(id, "id")?,
            vector: need(vector, "vector")?,
            shown: shown.clone(),
            config,
            connector,
            metric,
            condition,
            span_columns,
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
        let mut client = self.connector.connect(config).map_err(|e| {
            self.setup(format!(
                "cannot connect: {}",
                match &e {
                    veredicto_net::PgConnectError::Connect {
                        error,
                        tls_problem: None,
                        ..
                    } => self.pg_error(error),
                    other => redact::short(&other.to_string()),
                }
            ))
        })?;
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

    /// The `WHERE` clause: the URI's condition, then `equalities` (column SQL, whether it
    /// is the labels array) as parameters `$first`, `$first + 1`, …; empty without any.
    fn filter_sql(&self, equalities: &[(&str, bool)], first: usize) -> String {
        let mut conditions: Vec<String> = self.condition.iter().map(|c| format!("({c})")).collect();
        for (i, (column, labels)) in equalities.iter().enumerate() {
            let n = i + first;
            conditions.push(if *labels {
                format!("${n} = ANY({column}::text[])")
            } else {
                format!("{column}::text = ${n}")
            });
        }
        if conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conditions.join(" AND "))
        }
    }

    /// A result row's span (`doc`, `start`, `end` columns), when the URI names them: a row
    /// whose three are NULL has none; a partial or negative one, or `start` after `end`, is
    /// refused.
    fn span_of_row(
        &self,
        row: &postgres::Row,
        id: &str,
        case: &str,
    ) -> Result<Option<veredicto_core::evidence::ChunkSpan>, RetrieveError> {
        if self.span_columns.is_none() {
            return Ok(None);
        }
        let doc: Option<String> = row.get(2);
        let start: Option<i64> = row.get(3);
        let end: Option<i64> = row.get(4);
        let bad = |what: &str| {
            self.setup(format!(
                "case `{}`: row `{}`: {what}",
                redact::short(case),
                redact::short(id)
            ))
        };
        match (doc, start, end) {
            (None, None, None) => Ok(None),
            (Some(doc_id), Some(s), Some(e)) if !doc_id.is_empty() && 0 <= s && s <= e => {
                Ok(Some(veredicto_core::evidence::ChunkSpan {
                    doc_id,
                    start: s as usize,
                    end: e as usize,
                }))
            }
            (Some(doc_id), Some(s), Some(e)) => Err(bad(&format!(
                "the span columns read document `{}` characters {s}..{e}: a span needs a document ID and 0 <= start <= end",
                redact::short(&doc_id)
            ))),
            _ => Err(bad(
                "the span columns (doc, start, end) are NULL in part: give all three or none",
            )),
        }
    }

    /// The statement, with `equalities` as parameters `$3`, `$4`, …. The served statement
    /// orders by the distance operator, which an ANN index can answer; the exact one
    /// (`exact`) orders by `distance + 0`, an expression no index provides, so that it is a
    /// scan and a sort whatever the planner settings of the database.
    fn statement(&self, equalities: &[(&str, bool)], exact: bool) -> String {
        let dist = format!("{} {} $1::text::vector", self.vector, self.metric.op());
        let order = if exact {
            format!("({dist}) + 0")
        } else {
            dist.clone()
        };
        let span = match &self.span_columns {
            Some([d, s, e]) => format!(", {d}::text, {s}::int8, {e}::int8"),
            None => String::new(),
        };
        format!(
            "SELECT {id}::text, ({dist})::float8{span} FROM {table}{filter} ORDER BY {order} LIMIT $2",
            id = self.id,
            table = self.table,
            filter = self.filter_sql(equalities, 3)
        )
    }

    /// A request's filters as equality conditions on mapped columns and their values.
    fn bind_filters<'s>(
        &'s self,
        request: &Request<'_>,
    ) -> Result<(Equalities<'s>, Vec<String>), RetrieveError> {
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
        Ok((equalities, values))
    }

    /// The table as findings name it.
    fn collection(&self) -> String {
        let name = self.table.replace('"', "");
        match self.condition {
            Some(_) => format!("table `{name}` (rows matching the URI's `where`)"),
            None => format!("table `{name}`"),
        }
    }

    /// `EXPLAIN (FORMAT JSON)` of the served or exact statement of `request`, with the
    /// request's vector or, without one, a vector of the table (`None` when it holds none).
    pub fn explain(
        &self,
        request: &Request<'_>,
        exact: bool,
    ) -> Result<Option<serde_json::Value>, RetrieveError> {
        self.left()?;
        let mut client = self.client()?;
        let text = match request.vector {
            Some(v) => vector_text(v),
            None => {
                let sample = format!(
                    "SELECT {v}::text FROM {t} WHERE {v} IS NOT NULL LIMIT 1",
                    v = self.vector,
                    t = self.table
                );
                match client
                    .query_opt(&sample, &[])
                    .map_err(|e| self.setup(self.pg_error(&e)))?
                {
                    Some(row) => row.get(0),
                    None => {
                        self.give_back(client);
                        return Ok(None);
                    }
                }
            }
        };
        let (equalities, values) = self.bind_filters(request)?;
        let sql = format!(
            "EXPLAIN (FORMAT JSON) {}",
            self.statement(&equalities, exact)
        );
        let limit = request.depth as i64;
        let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&text, &limit];
        params.extend(
            values
                .iter()
                .map(|v| v as &(dyn postgres::types::ToSql + Sync)),
        );
        let result = if exact {
            client.transaction().and_then(|mut tx| {
                tx.batch_execute(EXACT_SETTINGS)?;
                let row = tx.query_one(&sql, &params)?;
                tx.commit()?;
                Ok(row)
            })
        } else {
            client.query_one(&sql, &params)
        };
        let row = result.map_err(|e| self.setup(format!("EXPLAIN: {}", self.pg_error(&e))))?;
        self.give_back(client);
        let plan: JsonText = row
            .try_get(0)
            .map_err(|e| self.setup(format!("EXPLAIN: {}", self.pg_error(&e))))?;
        let plan = serde_json::from_str(&plan.0)
            .map_err(|e| self.setup(format!("EXPLAIN: not JSON: {e}")))?;
        Ok(Some(plan))
    }

    /// A server setting as the connections see it (`SHOW`), when it is a whole number.
    fn setting(&self, name: &str) -> Result<Option<u32>, RetrieveError> {
        let mut client = self.client()?;
        let value: Result<String, _> = client
            .query_one(&format!("SHOW {name}"), &[])
            .and_then(|row| row.try_get(0));
        self.give_back(client);
        Ok(value.ok().and_then(|v| v.trim().parse().ok()))
    }

    /// The installed pgvector version (`extversion`).
    fn version(&self) -> Result<String, RetrieveError> {
        let mut client = self.client()?;
        let row = client
            .query_opt(
                "SELECT extversion::text FROM pg_extension WHERE extname = 'vector'",
                &[],
            )
            .map_err(|e| self.setup(self.pg_error(&e)))?;
        self.give_back(client);
        Ok(row.map_or_else(|| "unknown".to_owned(), |r| r.get(0)))
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
        for (param, column) in ["doc", "start", "end"]
            .iter()
            .zip(self.span_columns.iter().flatten())
        {
            if find(column).is_none() {
                return Err(self.setup(format!(
                    "column `{}` ({param}=) does not exist in table `{unquoted}` (columns: {})",
                    column.trim_matches('"'),
                    names.join(", ")
                )));
            }
        }
        Ok(ty
            .strip_prefix("vector(")
            .and_then(|d| d.strip_suffix(')'))
            .and_then(|d| d.parse().ok()))
    }
}

/// The planner settings of the exact statement's transaction: no index scans, and sequential
/// scans allowed even where the database turned them off (its ORDER BY expression already
/// keeps any index out; these make the plan's intent plain).
const EXACT_SETTINGS: &str =
    "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; \
     SET LOCAL enable_indexonlyscan = off; SET LOCAL enable_seqscan = on";

/// The ANN index an `EXPLAIN (FORMAT JSON)` plan scans: the first index scan ordered by an
/// operator (`Order By`: the distance), as only an HNSW or IVFFlat index answers.
pub fn ann_index_of_plan(plan: &serde_json::Value) -> Option<String> {
    match plan {
        serde_json::Value::Object(node) => {
            let ordered_scan = node
                .get("Node Type")
                .and_then(|t| t.as_str())
                .is_some_and(|t| t.starts_with("Index"))
                && node.contains_key("Order By");
            if ordered_scan {
                if let Some(name) = node.get("Index Name").and_then(|n| n.as_str()) {
                    return Some(name.to_owned());
                }
            }
            node.values().find_map(ann_index_of_plan)
        }
        serde_json::Value::Array(items) => items.iter().find_map(ann_index_of_plan),
        _ => None,
    }
}

/// A `json` value as its text (what `EXPLAIN (FORMAT JSON)` returns).
struct JsonText(String);

impl<'a> postgres::types::FromSql<'a> for JsonText {
    fn from_sql(
        _: &postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(JsonText(std::str::from_utf8(raw)?.to_owned()))
    }

    fn accepts(ty: &postgres::types::Type) -> bool {
        *ty == postgres::types::Type::JSON
    }
}

/// Whether pgvector `version` (`0.6.2`) has iterative index scans (0.8.0 and later).
fn has_iterative_scan(version: &str) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (0, 8)
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

    fn holds(&self, ids: &[&str]) -> Result<Option<Holding>, RetrieveError> {
        let sql = format!(
            "SELECT {id}::text FROM {table} WHERE {id}::text = ANY($1){condition}",
            id = self.id,
            table = self.table,
            condition = self
                .condition
                .as_ref()
                .map(|c| format!(" AND ({c})"))
                .unwrap_or_default()
        );
        let mut present = std::collections::BTreeSet::new();
        let mut client = self.client()?;
        for batch in ids.chunks(crate::HOLDS_BATCH) {
            self.left()?;
            let batch: Vec<&str> = batch.to_vec();
            let rows = client.query(&sql, &[&batch]).map_err(|e| {
                self.setup(format!(
                    "asking which expected chunks the table holds: {}",
                    self.pg_error(&e)
                ))
            })?;
            present.extend(rows.iter().filter_map(|r| r.get::<_, Option<String>>(0)));
        }
        self.give_back(client);
        Ok(Some(Holding {
            collection: self.collection(),
            present,
        }))
    }

    /// `SELECT id::text, vector::text FROM table WHERE id::text = ANY($1) [AND (where)]`,
    /// [`crate::HOLDS_BATCH`] IDs a statement; pgvector's text form `[x,y,…]` is read as
    /// numbers.
    fn stored_vectors(
        &self,
        ids: &[&str],
    ) -> Result<Option<Vec<crate::StoredVector>>, RetrieveError> {
        let sql = format!(
            "SELECT {id}::text, {vector}::text FROM {table} WHERE {id}::text = ANY($1){condition}",
            id = self.id,
            vector = self.vector,
            table = self.table,
            condition = self
                .condition
                .as_ref()
                .map(|c| format!(" AND ({c})"))
                .unwrap_or_default()
        );
        let mut found = std::collections::BTreeMap::new();
        let mut client = self.client()?;
        for batch in ids.chunks(crate::HOLDS_BATCH) {
            self.left()?;
            let batch: Vec<&str> = batch.to_vec();
            let rows = client.query(&sql, &[&batch]).map_err(|e| {
                self.setup(format!("reading stored vectors: {}", self.pg_error(&e)))
            })?;
            for row in rows {
                let (Some(id), Some(text)) = (
                    row.get::<_, Option<String>>(0),
                    row.get::<_, Option<String>>(1),
                ) else {
                    continue;
                };
                let v: Vec<f32> = serde_json::from_str(&text).map_err(|_| {
                    self.setup(format!(
                        "reading stored vectors: column `{}` of `{}` is not a vector: {}",
                        self.vector.trim_matches('"'),
                        redact::short(&id),
                        redact::short(&text)
                    ))
                })?;
                found.insert(id, v);
            }
        }
        self.give_back(client);
        Ok(Some(
            ids.iter()
                .filter_map(|id| found.remove(*id).map(|v| ((*id).to_owned(), v)))
                .collect(),
        ))
    }

    fn served_plan(
        &self,
        request: &Request<'_>,
    ) -> Result<Option<veredicto_core::exam::ServedPlan>, RetrieveError> {
        let Some(plan) = self.explain(request, false)? else {
            return Ok(None);
        };
        let ann_index = ann_index_of_plan(&plan);
        let method = match &ann_index {
            Some(name) => {
                let mut client = self.client()?;
                let row = client
                    .query_opt(
                        "SELECT a.amname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
                         JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = to_regclass($1) AND c.relname = $2",
                        &[&self.table, name],
                    )
                    .map_err(|e| self.setup(self.pg_error(&e)))?;
                self.give_back(client);
                row.map(|r| r.get::<_, String>(0))
            }
            None => None,
        };
        Ok(Some(veredicto_core::exam::ServedPlan { ann_index, method }))
    }

    fn short_cause(
        &self,
        request: &Request<'_>,
    ) -> Result<Option<veredicto_core::exam::ShortCause>, RetrieveError> {
        use veredicto_core::exam::ShortCause;
        let asked = request.depth;
        // The rows the statement can return at all, counted up to the depth asked.
        let (equalities, values) = self.bind_filters(request)?;
        let count = format!(
            "SELECT count(*) FROM (SELECT 1 FROM {table}{filter} LIMIT $1) s",
            table = self.table,
            filter = self.filter_sql(&equalities, 2)
        );
        let limit = asked as i64;
        let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&limit];
        params.extend(
            values
                .iter()
                .map(|v| v as &(dyn postgres::types::ToSql + Sync)),
        );
        let mut client = self.client()?;
        let rows: i64 = client
            .query_one(&count, &params)
            .map_err(|e| self.setup(self.pg_error(&e)))?
            .get(0);
        self.give_back(client);
        let rows = usize::try_from(rows).unwrap_or(0);
        if rows < asked {
            return Ok(Some(ShortCause::FewerRows { rows, asked }));
        }
        let Some(plan) = self.served_plan(request)? else {
            return Ok(None);
        };
        let Some(index) = plan.ann_index else {
            return Ok(None);
        };
        let version = self.version()?;
        Ok(match plan.method.as_deref() {
            Some("hnsw") => {
                self.setting("hnsw.ef_search")?
                    .map(|ef_search| ShortCause::HnswEfSearch {
                        index,
                        ef_search,
                        asked,
                        iterative_scan: has_iterative_scan(&version),
                        version,
                    })
            }
            Some("ivfflat") => {
                self.setting("ivfflat.probes")?
                    .map(|probes| ShortCause::IvfflatProbes {
                        index,
                        probes,
                        asked,
                        version,
                    })
            }
            _ => None,
        })
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
        let (equalities, values) = self.bind_filters(request)?;
        let mut client = self.client()?;
        let text = vector_text(vector);
        let limit = request.depth as i64;
        let sql = self.statement(&equalities, request.exact);
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
                    tx.batch_execute(EXACT_SETTINGS)?;
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
                let id = id.unwrap_or_default();
                let span = self.span_of_row(r, &id, request.case_id)?;
                Ok(Hit {
                    id,
                    score: d.map(|d| self.metric.score(d)),
                    span,
                })
            })
            .collect::<Result<_, RetrieveError>>()?;
        Ok(Ranking {
            hits,
            known: Default::default(),
        })
    }
}
