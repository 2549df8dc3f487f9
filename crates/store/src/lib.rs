//! veredicto's run history (SPEC §5): every exam, kept append-only in an embedded SQLite
//! database, with per-case rows to aggregate from (STYLE item 7) — or, for a team, in a
//! PostgreSQL database with the same tables and guarantees ([`PgHistory`]; both behind
//! [`RunStore`], opened from a path or URL by [`History::open_spec`]).
//!
//! ```no_run
//! # fn main() -> Result<(), veredicto_store::StoreError> {
//! # let (meta, report): (veredicto_core::history::RunMeta, veredicto_core::exam::ExamReport) = todo!();
//! use veredicto_store::{History, RunFilter};
//! let history = History::open(".veredicto/history.db".as_ref())?;
//! let id = history.record(&meta, &report)?; // one transaction; `meta.id` left empty
//! let runs = history.list(&RunFilter { limit: Some(20), ..RunFilter::default() })?;
//! let run = history.get(&id[..12])?; // a unique prefix, the full ID, or "latest"
//! # Ok(()) }
//! ```
//!
//! Guarantees (details in `docs/history.md`):
//! - **Atomic**: a run is written in one transaction (run row, report, case rows, measure
//!   rows, expected-chunk rows, seal); a crash or `SIGKILL` at any moment leaves either the
//!   whole run or none of it.
//! - **Append-only**: the library has no update or delete; triggers in the database abort
//!   UPDATE, DELETE and replacing INSERTs on every table, and adding rows to a recorded run.
//! - **Durable**: WAL journal with `synchronous=FULL`: a run whose `record` returned survives
//!   a power cut as well as a crash.
//! - **Concurrent**: any number of processes may record and read at once; writers queue on
//!   the WAL write lock for up to 10 s (`busy_timeout`), readers never wait.
//! - **IDs**: ULIDs from `created_at` and OS randomness, strictly increasing in recording
//!   order ([`id`] module docs).

mod acceptance;
mod audit;
mod codec;
mod error;
pub mod id;
mod metric;
mod migrate;
mod pg;
mod run_chunks;
mod schema;
mod store;
pub mod synthetic;
use veredicto_core::time;

pub use acceptance::GateAcceptance;
pub use audit::{AuditCounts, AuditRecordKind, AuditRun, AuditRunMeta, AuditRunSummary};
pub use error::StoreError;
pub use metric::{Metric, UnknownMetric};
pub use migrate::{migrate, MigrateReport};
pub use pg::PgHistory;
pub use store::{is_postgres_url, History, RunStore};

use rusqlite::types::Value;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;
use veredicto_core::exam::{ExamReport, StopReason, Verdict};
use veredicto_core::history::{RecordedRun, RunMeta};

/// How long a writer waits for another process's write transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The SQLite backend of a run history: one SQLite connection (`Send`, not `Sync`). Threads
/// and processes that record at the same time each open their own.
#[derive(Debug)]
pub struct SqliteHistory {
    conn: Connection,
    path: PathBuf,
    journal_mode: String,
}

/// Which runs to list. Every field narrows the selection; the default selects all runs.
/// Runs come newest first (recording order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    /// Golden-set fingerprint, whole or a prefix; `sha256:` may be left out (`3fa2b1`).
    pub golden_fingerprint: Option<String>,
    /// Policy fingerprint, whole or a prefix, as above.
    pub policy_fingerprint: Option<String>,
    /// Exact version label.
    pub label: Option<String>,
    /// Runs created at or after this RFC 3339 time, or this `YYYY-MM-DD` date (UTC).
    pub since: Option<String>,
    /// Runs created at or before this RFC 3339 time, or during or before this date (UTC).
    pub until: Option<String>,
    /// Only accepted or only stopped runs.
    pub verdict: Option<Verdict>,
    /// Runs recorded before this one (ID, unique prefix, or `latest`).
    pub before: Option<String>,
    /// At most this many runs (the newest).
    pub limit: Option<usize>,
}

/// One line of `veredicto runs list`: a run's identity, provenance and headline numbers,
/// read without its report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run ID.
    pub id: String,
    /// When the run was made (RFC 3339, as recorded).
    pub created_at: String,
    /// Version label of the corpus or index.
    pub label: Option<String>,
    /// The exam's verdict.
    pub verdict: Verdict,
    /// Why it stopped (empty when accepted).
    pub reasons: Vec<StopReason>,
    /// Cases in the golden set.
    pub cases: usize,
    /// Gold cases among them.
    pub gold_cases: usize,
    /// Failing cases.
    pub failing: usize,
    /// Failing gold cases.
    pub failing_gold: usize,
    /// Mean Quality Score, 0..100.
    pub mean_quality: f64,
    /// Mean recall at K.
    pub mean_recall: f64,
    /// Mean reciprocal rank at K.
    pub mrr: f64,
    /// Mean nDCG at K.
    pub mean_ndcg: f64,
    /// Golden-set fingerprint (`sha256:…`; [`short_fingerprint`] for display).
    pub golden_fingerprint: String,
    /// Policy fingerprint.
    pub policy_fingerprint: String,
    /// Corpus or index fingerprint, when known.
    pub corpus_fingerprint: Option<String>,
    /// The policy's default K.
    pub top_k: u32,
    /// veredicto version that made the run.
    pub tool_version: String,
    /// Git revision of the project, when there was one.
    pub git_revision: Option<String>,
}

/// A trend: one metric averaged over the cases of each selected run.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendQuery {
    /// The per-case value to average.
    pub metric: Metric,
    /// Which runs: usually a golden fingerprint and `limit: Some(n)` for the last n runs.
    pub runs: RunFilter,
    /// Only cases of this domain.
    pub domain: Option<String>,
    /// Only this case (a per-case time series).
    pub case_id: Option<String>,
}

/// One run's point of a trend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendPoint {
    /// The run ID.
    pub run_id: String,
    /// When the run was made.
    pub created_at: String,
    /// Its version label.
    pub label: Option<String>,
    /// Cases that contributed a value.
    pub cases: usize,
    /// Mean over those cases; `None` when none did (no case of the domain, measure not
    /// computed in that run, noise undefined everywhere).
    pub mean: Option<f64>,
}

/// What [`RunStore::check`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntegrityReport {
    /// Runs in the history.
    pub runs: usize,
    /// `PRAGMA integrity_check` output: `["ok"]` when the file is sound.
    pub integrity: Vec<String>,
    /// Rows that `PRAGMA foreign_key_check` reports.
    pub foreign_key_violations: usize,
    /// IDs of runs whose stored rows do not add up: case rows other than the summary's case
    /// count, expected-chunk rows other than the cases declare, no report, or no seal.
    pub incomplete_runs: Vec<String>,
    /// Grounding audit runs in the history.
    pub audit_runs: usize,
    /// IDs of audit runs whose stored case file no longer has its recorded SHA-256.
    pub altered_audit_runs: Vec<String>,
    /// Written acceptances of ingestion batches in the history.
    #[serde(default)]
    pub gate_acceptances: usize,
    /// IDs of acceptances whose stored rows do not read back (rejection list unreadable or
    /// not as long as its count).
    #[serde(default)]
    pub unreadable_acceptances: Vec<String>,
    /// Runs whose chunk snapshot is kept (for `corpus check`'s drift).
    #[serde(default)]
    pub run_chunks: usize,
    /// Distinct snapshots stored (runs on an unchanged corpus share one).
    #[serde(default)]
    pub chunk_snapshots: usize,
    /// IDs of runs whose kept chunks do not read back (damaged body, wrong fingerprint or
    /// count).
    #[serde(default)]
    pub unreadable_run_chunks: Vec<String>,
}

impl IntegrityReport {
    /// Whether nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.integrity == ["ok"]
            && self.foreign_key_violations == 0
            && self.incomplete_runs.is_empty()
            && self.altered_audit_runs.is_empty()
            && self.unreadable_acceptances.is_empty()
            && self.unreadable_run_chunks.is_empty()
    }
}

/// A fingerprint for display: the first 12 hex digits, without the `sha256:` scheme.
pub fn short_fingerprint(fingerprint: &str) -> &str {
    let hex = fingerprint
        .split_once(':')
        .map_or(fingerprint, |(_, hex)| hex);
    hex.get(..12).unwrap_or(hex)
}

/// Columns of `runs` that make a [`RunSummary`], after `seq`.
pub(crate) const SUMMARY_COLUMNS: &str =
    "seq, id, created_at, label, verdict, reasons, cases, gold_cases, \
     failing, failing_gold, mean_quality, mean_recall, mrr, mean_ndcg, golden_fingerprint, \
     policy_fingerprint, corpus_fingerprint, top_k, tool_version, git_revision";

/// A run's fields that are serialised before the write transaction starts.
pub(crate) struct Prepared<'a> {
    pub(crate) meta: &'a RunMeta,
    pub(crate) report: &'a ExamReport,
    pub(crate) created_ms: i64,
    pub(crate) random: [u8; 10],
    pub(crate) config: String,
    pub(crate) latency: String,
    pub(crate) reasons: String,
    pub(crate) body: Vec<u8>,
    /// The ID to keep (a migrated run); `None`: assign one.
    pub(crate) fixed_id: Option<String>,
}

impl SqliteHistory {
    /// Opens the history at `path`, creating the file, its parent directories and the schema
    /// when absent. Refuses a file made by a newer veredicto or by another program.
    pub fn open(path: &Path) -> Result<SqliteHistory, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|error| StoreError::CreateDir {
                path: dir.to_owned(),
                error,
            })?;
        }
        Self::open_with(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }

    /// Opens an existing history; [`StoreError::Missing`] when there is no file (for
    /// commands that only read, so that a mistyped path is not silently created).
    pub fn open_existing(path: &Path) -> Result<SqliteHistory, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_owned(),
            });
        }
        Self::open_with(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }

    /// Opens an existing history for reading only (`runs list`, `compare`, `report`): works
    /// in a read-only folder or on a read-only file, changes nothing (no journal switch, no
    /// schema upgrade), and any write through it fails. [`StoreError::Missing`] when there is
    /// no file or the file holds no history yet.
    pub fn open_read_only(path: &Path) -> Result<SqliteHistory, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_owned(),
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        match Self::open_with(path, flags) {
            // A WAL database needs its `-shm` (and `-wal`) files; in a folder where they
            // cannot be created, read the file as immutable: nobody can be writing to it
            // through SQLite there, since a writer would need those files too.
            Err(StoreError::Sqlite { error, .. })
                if matches!(
                    error.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
                ) =>
            {
                Self::open_with(path, flags | OpenFlags::SQLITE_OPEN_URI)
            }
            other => other,
        }
    }

    /// Opens `path` with `flags`; with `SQLITE_OPEN_URI` the file is opened as
    /// `file:PATH?mode=ro&immutable=1`.
    fn open_with(path: &Path, flags: OpenFlags) -> Result<SqliteHistory, StoreError> {
        let read_only = flags.contains(OpenFlags::SQLITE_OPEN_READ_ONLY);
        let sql = |operation| {
            let path = path.to_owned();
            move |source| sqlite_error(path, operation, source)
        };
        let conn = if flags.contains(OpenFlags::SQLITE_OPEN_URI) {
            Connection::open_with_flags(immutable_uri(path), flags)
        } else {
            Connection::open_with_flags(path, flags)
        }
        .map_err(sql("opening the database"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(sql("setting the busy timeout"))?;
        // Refuse foreign files before changing anything in them.
        let (application_id, user_version, objects) =
            read_header(&conn).map_err(sql("reading the schema version"))?;
        check_header(path, application_id, user_version)?;
        if user_version == 0 && objects > 0 {
            return Err(StoreError::NotAHistory {
                path: path.to_owned(),
                application_id,
                user_version,
            });
        }
        if read_only {
            if user_version == 0 {
                return Err(StoreError::Missing {
                    path: path.to_owned(),
                });
            }
            let journal_mode: String = conn
                .pragma_query_value(None, "journal_mode", |row| row.get(0))
                .map_err(sql("reading the journal mode"))?;
            conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA query_only = ON;")
                .map_err(sql("configuring the connection"))?;
            conn.set_prepared_statement_cache_capacity(32);
            return Ok(SqliteHistory {
                conn,
                path: path.to_owned(),
                journal_mode,
            });
        }
        // Switching a new file to WAL needs an exclusive lock; when another process is
        // creating the same history at this moment SQLite can answer BUSY at once (without
        // its busy handler, to avoid a deadlock), so retry until the busy timeout.
        let started = std::time::Instant::now();
        let journal_mode: String = loop {
            match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)) {
                Err(e)
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(15));
                }
                other => break other.map_err(sql("switching to WAL"))?,
            }
        };
        conn.execute_batch(
            "PRAGMA synchronous = FULL;
             PRAGMA foreign_keys = ON;
             PRAGMA recursive_triggers = ON;",
        )
        .map_err(sql("configuring the connection"))?;
        conn.set_prepared_statement_cache_capacity(32);
        let history = SqliteHistory {
            conn,
            path: path.to_owned(),
            journal_mode,
        };
        if user_version < schema::SCHEMA_VERSION {
            history.create_schema()?;
        }
        Ok(history)
    }

    /// Creates the schema (or upgrades a version-1 file) in one transaction, unless another
    /// process did meanwhile.
    fn create_schema(&self) -> Result<(), StoreError> {
        const OP: &str = "creating the schema";
        let tx = self.begin(OP)?;
        let (application_id, user_version, objects) =
            read_header(&tx).map_err(|e| self.sql(OP, e))?;
        if user_version == 0 {
            if objects > 0 || application_id != 0 {
                return Err(StoreError::NotAHistory {
                    path: self.path.clone(),
                    application_id,
                    user_version,
                });
            }
            tx.execute_batch(schema::SCHEMA_V1)
                .and_then(|()| tx.execute_batch(&schema::triggers()))
                .and_then(|()| tx.execute_batch(schema::SCHEMA_V2_AUDIT))
                .and_then(|()| tx.execute_batch(&schema::audit_triggers()))
                .and_then(|()| tx.execute_batch(schema::SCHEMA_V3_ACCEPTANCES))
                .and_then(|()| tx.execute_batch(&schema::acceptance_triggers()))
                .and_then(|()| tx.execute_batch(run_chunks::SQLITE_TABLE))
                .and_then(|()| tx.execute_batch(&schema::run_chunks_triggers()))
                .and_then(|()| {
                    tx.execute_batch(&format!(
                        "PRAGMA application_id = {}; PRAGMA user_version = {};",
                        schema::APPLICATION_ID,
                        schema::SCHEMA_VERSION
                    ))
                })
                .map_err(|e| self.sql(OP, e))?;
        } else if user_version < schema::SCHEMA_VERSION {
            // Upgrade an older history: add the tables of each later version (audit runs
            // from 2, gate acceptances from 3); nothing else changes.
            let mut sql = String::new();
            if user_version < 2 {
                sql.push_str(schema::SCHEMA_V2_AUDIT);
                sql.push_str(&schema::audit_triggers());
            }
            sql.push_str(schema::SCHEMA_V3_ACCEPTANCES);
            sql.push_str(&schema::acceptance_triggers());
            sql.push_str(run_chunks::SQLITE_TABLE);
            sql.push_str(&schema::run_chunks_triggers());
            tx.execute_batch(&sql)
                .and_then(|()| {
                    tx.execute_batch(&format!(
                        "PRAGMA user_version = {};",
                        schema::SCHEMA_VERSION
                    ))
                })
                .map_err(|e| self.sql(OP, e))?;
        } else {
            check_header(&self.path, application_id, user_version)?;
        }
        tx.commit().map_err(|e| self.sql(OP, e))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The journal mode SQLite accepted: `wal`, except on file systems without shared
    /// memory, where SQLite keeps its rollback journal (still atomic, but readers and the
    /// writer then block each other).
    pub fn journal_mode(&self) -> &str {
        &self.journal_mode
    }

    /// Records one run in one transaction and returns its new ID. `meta.id` must be empty
    /// (the history assigns IDs; a replay is a new run) and `meta`'s fingerprints must be
    /// the report's. Nothing is written when an error is returned.
    pub fn record(&self, meta: &RunMeta, report: &ExamReport) -> Result<String, StoreError> {
        const OP: &str = "recording a run";
        let prepared = self.prepare(meta, report)?;
        let tx = self.begin(OP)?;
        let id = self.insert(&tx, &prepared)?;
        tx.commit().map_err(|e| self.sql(OP, e))?;
        Ok(id)
    }

    /// Records several runs in one transaction (an import, or building a large history):
    /// all of them or none. Returns their IDs in order.
    pub fn record_many<'a>(
        &self,
        runs: impl IntoIterator<Item = (&'a RunMeta, &'a ExamReport)>,
    ) -> Result<Vec<String>, StoreError> {
        const OP: &str = "recording runs";
        let tx = self.begin(OP)?;
        let mut ids = Vec::new();
        for (meta, report) in runs {
            let prepared = self.prepare(meta, report)?;
            ids.push(self.insert(&tx, &prepared)?);
        }
        tx.commit().map_err(|e| self.sql(OP, e))?;
        Ok(ids)
    }

    fn prepare<'a>(
        &self,
        meta: &'a RunMeta,
        report: &'a ExamReport,
    ) -> Result<Prepared<'a>, StoreError> {
        prepare(&self.path, meta, report)
    }

    /// Records a run copied from another history under its own ID, in one transaction. The
    /// ID must sort after every run recorded here.
    pub fn import(&self, run: &RecordedRun) -> Result<(), StoreError> {
        const OP: &str = "recording a run";
        let meta = RunMeta {
            id: String::new(),
            ..run.meta.clone()
        };
        let mut prepared = self.prepare(&meta, &run.report)?;
        prepared.fixed_id = Some(run.meta.id.clone());
        let tx = self.begin(OP)?;
        self.insert(&tx, &prepared)?;
        tx.commit().map_err(|e| self.sql(OP, e))
    }
}

/// Validates and serialises a run (outside the write lock), for either backend.
pub(crate) fn prepare<'a>(
    location: &Path,
    meta: &'a RunMeta,
    report: &'a ExamReport,
) -> Result<Prepared<'a>, StoreError> {
    if !meta.id.is_empty() {
        return Err(StoreError::IdGiven {
            path: location.to_owned(),
            id: meta.id.clone(),
        });
    }
    for (field, m, r) in [
        (
            "golden_fingerprint",
            &meta.golden_fingerprint,
            &report.golden_fingerprint,
        ),
        (
            "policy_fingerprint",
            &meta.policy_fingerprint,
            &report.policy_fingerprint,
        ),
    ] {
        if m != r {
            return Err(StoreError::Inconsistent {
                path: location.to_owned(),
                field,
                meta: m.clone(),
                report: r.clone(),
            });
        }
    }
    let created_ms =
        time::parse_timestamp_ms(&meta.created_at).ok_or_else(|| StoreError::BadTime {
            path: location.to_owned(),
            field: "created_at",
            value: meta.created_at.clone(),
        })?;
    let random = id::random_bits().map_err(|e| StoreError::NoRandomness {
        path: location.to_owned(),
        message: e.to_string(),
    })?;
    let unstorable = |what| {
        let path = location.to_owned();
        move |error| StoreError::Unstorable { path, what, error }
    };
    // Each JSON value must read back as what was given: JSON has no NaN or infinity
    // (serde_json writes them as null), so a value holding one is refused here rather
    // than stored unreadable.
    let config = serde_json::to_string(&meta.config).map_err(unstorable("config"))?;
    serde_json::from_str::<veredicto_core::history::RunConfig>(&config)
        .map_err(unstorable("config"))?;
    let latency = serde_json::to_string(&meta.latency).map_err(unstorable("latency"))?;
    serde_json::from_str::<
            std::collections::BTreeMap<String, veredicto_core::history::StageLatency>,
        >(&latency)
        .map_err(unstorable("latency"))?;
    let json = serde_json::to_vec(report).map_err(unstorable("report"))?;
    codec::parse(&json).map_err(unstorable("report"))?;
    let body = codec::encode(&json).map_err(|e| StoreError::Unstorable {
        path: location.to_owned(),
        what: "report",
        error: serde_json::Error::io(e),
    })?;
    let reasons = serde_json::to_string(&report.reasons).map_err(unstorable("reasons"))?;
    Ok(Prepared {
        meta,
        report,
        created_ms,
        random,
        config,
        latency,
        reasons,
        body,
        fixed_id: None,
    })
}

impl SqliteHistory {
    /// Writes a prepared run inside the open transaction `tx`.
    fn insert(&self, tx: &Connection, p: &Prepared<'_>) -> Result<String, StoreError> {
        const OP: &str = "recording a run";
        let e = |e| self.sql(OP, e);
        let (meta, report) = (p.meta, p.report);
        let s = &report.summary;

        // The ID is chosen under the write lock, after the newest stored one.
        let newest: Option<String> = tx
            .prepare_cached("SELECT max(id) FROM runs")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .map_err(e)?;
        let run_id = match &p.fixed_id {
            Some(kept) => kept.clone(),
            None => id::next(p.created_ms, p.random, newest.as_deref()),
        };

        tx.prepare_cached(
            "INSERT INTO runs (id, created_at, created_ms, label, golden_fingerprint,
                 policy_fingerprint, corpus_fingerprint, retriever, top_k, embedding_model,
                 model_hash, config, tool_version, git_revision, verdict, reasons, cases,
                 gold_cases, failing, failing_gold, mean_quality, mean_recall, mrr,
                 mean_precision, mean_ndcg, mean_average_precision, hit_rate, over_noise,
                 latency)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                 ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)",
        )
        .and_then(|mut st| {
            st.execute(params![
                run_id,
                meta.created_at,
                p.created_ms,
                meta.label,
                meta.golden_fingerprint,
                meta.policy_fingerprint,
                meta.corpus_fingerprint,
                meta.config.retriever,
                meta.config.top_k,
                meta.config.embedding_model,
                meta.config.model_hash,
                p.config,
                meta.tool_version,
                meta.git_revision,
                verdict_str(report.verdict),
                p.reasons,
                s.cases,
                s.gold_cases,
                s.failing,
                s.failing_gold,
                s.mean_quality,
                s.mean_recall,
                s.mrr,
                s.mean_precision,
                s.mean_ndcg,
                s.mean_average_precision,
                s.hit_rate,
                s.over_noise,
                p.latency,
            ])
        })
        .map_err(e)?;
        let seq = tx.last_insert_rowid();

        tx.prepare_cached("INSERT INTO reports (run, encoding, body) VALUES (?1, ?2, ?3)")
            .and_then(|mut st| st.execute(params![seq, codec::ENCODING, p.body]))
            .map_err(e)?;

        let mut case_st = tx
            .prepare_cached(
                "INSERT INTO cases (run, ordinal, case_id, gold, domain, tags, top_k, retrieved,
                     expected, passed, reasons, documented, recall, quality, precision,
                     reciprocal_rank, ndcg, average_precision, noise, max_noise)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                     ?17, ?18, ?19, ?20)",
            )
            .map_err(e)?;
        let mut measure_st = tx
            .prepare_cached(
                "INSERT INTO case_measures (run, ordinal, measure, value) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(e)?;
        let mut chunk_st = tx
            .prepare_cached(
                "INSERT INTO expected_chunks (run, ordinal, position, chunk_id, rank, score, gold,
                     in_top_k)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(e)?;
        for (ordinal, c) in report.cases.iter().enumerate() {
            let tags = json_strings(c.tags.iter().map(String::as_str));
            let reasons = json_strings(c.reasons.iter().map(|r| r.as_str()));
            case_st
                .execute(params![
                    seq,
                    ordinal,
                    c.id,
                    c.gold,
                    c.domain,
                    tags,
                    c.top_k,
                    c.retrieved,
                    c.expected.len(),
                    c.passed,
                    reasons,
                    c.documented,
                    c.recall,
                    c.quality,
                    c.precision,
                    c.reciprocal_rank,
                    c.ndcg,
                    c.average_precision,
                    c.noise,
                    c.max_noise,
                ])
                .map_err(e)?;
            for (name, value) in &c.measures {
                measure_st
                    .execute(params![seq, ordinal, name, value])
                    .map_err(e)?;
            }
            for (position, x) in c.expected.iter().enumerate() {
                chunk_st
                    .execute(params![
                        seq, ordinal, position, x.id, x.rank, x.score, x.gold, x.in_top_k
                    ])
                    .map_err(e)?;
            }
        }
        tx.prepare_cached("INSERT INTO sealed (run) VALUES (?1)")
            .and_then(|mut st| st.execute([seq]))
            .map_err(e)?;
        Ok(run_id)
    }

    /// Resolves `latest`, a full ID or a unique prefix (case-insensitive; `I`/`L` read as
    /// `1`, `O` as `0`) to a run ID.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<String, StoreError> {
        self.resolve_in("runs", id_or_prefix)
    }

    /// [`History::resolve`] over the IDs of `table` (`runs` or `audit_runs`).
    pub(crate) fn resolve_in(&self, table: &str, id_or_prefix: &str) -> Result<String, StoreError> {
        const OP: &str = "looking up a run";
        let query = id_or_prefix.trim();
        let not_found = || {
            if table == "runs" {
                StoreError::RunNotFound {
                    path: self.path.clone(),
                    query: query.to_owned(),
                }
            } else {
                StoreError::AuditRunNotFound {
                    path: self.path.clone(),
                    query: query.to_owned(),
                }
            }
        };
        if query.eq_ignore_ascii_case("latest") {
            return self
                .conn
                .prepare_cached(&format!("SELECT id FROM {table} ORDER BY seq DESC LIMIT 1"))
                .and_then(|mut st| st.query_row([], |r| r.get(0)).optional())
                .map_err(|e| self.sql(OP, e))?
                .ok_or_else(not_found);
        }
        let prefix = id::normalise(query).ok_or_else(|| StoreError::BadRunRef {
            path: self.path.clone(),
            query: query.to_owned(),
        })?;
        let upper = format!("{prefix:Z<width$}", width = id::ID_LEN);
        let low = format!("{prefix:0<width$}", width = id::ID_LEN);
        let found: Vec<String> = self
            .conn
            .prepare_cached(&format!(
                "SELECT id FROM {table} WHERE id >= ?1 AND id <= ?2 ORDER BY id DESC LIMIT 4"
            ))
            .and_then(|mut st| {
                st.query_map([low, upper], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.sql(OP, e))?;
        match found.len() {
            0 => Err(not_found()),
            1 => Ok(found.into_iter().next().unwrap_or_default()),
            _ => Err(StoreError::AmbiguousPrefix {
                path: self.path.clone(),
                prefix: query.to_owned(),
                candidates: found.into_iter().take(3).collect(),
            }),
        }
    }

    /// The whole run: metadata and exam report, exactly as recorded.
    pub fn get(&self, id_or_prefix: &str) -> Result<RecordedRun, StoreError> {
        const OP: &str = "reading a run";
        let id = self.resolve(id_or_prefix)?;
        let (seq, meta) = self.meta_of(&id)?;
        let (encoding, body): (String, Vec<u8>) = self
            .conn
            .prepare_cached("SELECT encoding, body FROM reports WHERE run = ?1")
            .and_then(|mut st| st.query_row([seq], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(|e| self.sql(OP, e))?;
        let json = codec::decompress(&encoding, &body)
            .map_err(|message| self.corrupt(&id, "report", message))?;
        let report =
            codec::parse(&json).map_err(|err| self.corrupt(&id, "report", err.to_string()))?;
        Ok(RecordedRun { meta, report })
    }

    /// A run's metadata without its report (cheap).
    pub fn meta(&self, id_or_prefix: &str) -> Result<RunMeta, StoreError> {
        let id = self.resolve(id_or_prefix)?;
        self.meta_of(&id).map(|(_, meta)| meta)
    }

    fn meta_of(&self, id: &str) -> Result<(i64, RunMeta), StoreError> {
        const OP: &str = "reading a run";
        type Row = (i64, RunMeta, String, String);
        let (seq, mut meta, config, latency): Row = self
            .conn
            .prepare_cached(
                "SELECT seq, id, created_at, label, golden_fingerprint, policy_fingerprint,
                     corpus_fingerprint, tool_version, git_revision, config, latency
                 FROM runs WHERE id = ?1",
            )
            .and_then(|mut st| {
                st.query_row([id], |r| {
                    Ok((
                        r.get(0)?,
                        RunMeta {
                            id: r.get(1)?,
                            created_at: r.get(2)?,
                            label: r.get(3)?,
                            golden_fingerprint: r.get(4)?,
                            policy_fingerprint: r.get(5)?,
                            corpus_fingerprint: r.get(6)?,
                            config: Default::default(),
                            tool_version: r.get(7)?,
                            git_revision: r.get(8)?,
                            latency: Default::default(),
                        },
                        r.get(9)?,
                        r.get(10)?,
                    ))
                })
                .optional()
            })
            .map_err(|e| self.sql(OP, e))?
            .ok_or_else(|| StoreError::RunNotFound {
                path: self.path.clone(),
                query: id.to_owned(),
            })?;
        meta.config = serde_json::from_str(&config)
            .map_err(|err| self.corrupt(id, "config", err.to_string()))?;
        meta.latency = serde_json::from_str(&latency)
            .map_err(|err| self.corrupt(id, "latency", err.to_string()))?;
        Ok((seq, meta))
    }

    /// A run's summary line.
    pub fn summary(&self, id_or_prefix: &str) -> Result<RunSummary, StoreError> {
        let id = self.resolve(id_or_prefix)?;
        let sql = format!("SELECT {SUMMARY_COLUMNS} FROM runs WHERE id = ?1");
        self.select_summaries(&sql, &[Value::Text(id.clone())])?
            .into_iter()
            .next()
            .map(|(_, s)| s)
            .ok_or(StoreError::RunNotFound {
                path: self.path.clone(),
                query: id,
            })
    }

    /// Runs matching `filter` and recorded before the raw ID `before_id`, newest first.
    pub fn select_runs(
        &self,
        filter: &RunFilter,
        before_id: Option<&str>,
    ) -> Result<Vec<RunSummary>, StoreError> {
        Ok(self
            .select(filter, before_id)?
            .into_iter()
            .map(|(_, s)| s)
            .collect())
    }

    /// The mean of a metric over each selected run's cases (optionally one domain or one
    /// case), oldest run first: a time series for trend plots and slope tests.
    pub fn trend(&self, query: &TrendQuery) -> Result<Vec<TrendPoint>, StoreError> {
        const OP: &str = "computing a trend";
        let runs = self.select(&query.runs, None)?;
        let scope = "(?2 IS NULL OR c.domain = ?2) AND (?3 IS NULL OR c.case_id = ?3)";
        let sql = match query.metric.column() {
            Some(col) => {
                format!(
                    "SELECT avg(c.{col}), count(c.{col}) FROM cases c WHERE c.run = ?1 AND {scope}"
                )
            }
            None => format!(
                "SELECT avg(m.value), count(m.value) FROM case_measures m
                 JOIN cases c ON c.run = m.run AND c.ordinal = m.ordinal
                 WHERE m.run = ?1 AND m.measure = ?4 AND {scope}"
            ),
        };
        let measure = match &query.metric {
            Metric::Measure(name) => Some(name.as_str()),
            _ => None,
        };
        let mut st = self
            .conn
            .prepare_cached(&sql)
            .map_err(|e| self.sql(OP, e))?;
        let mut points = Vec::with_capacity(runs.len());
        for (seq, run) in runs.into_iter().rev() {
            let mut p: Vec<Value> = vec![
                Value::Integer(seq),
                opt_text(query.domain.as_deref()),
                opt_text(query.case_id.as_deref()),
            ];
            if let Some(m) = measure {
                p.push(Value::Text(m.to_owned()));
            }
            let (mean, cases): (Option<f64>, usize) = st
                .query_row(rusqlite::params_from_iter(p), |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .map_err(|e| self.sql(OP, e))?;
            points.push(TrendPoint {
                run_id: run.id,
                created_at: run.created_at,
                label: run.label,
                cases,
                mean,
            });
        }
        Ok(points)
    }

    /// Number of runs in the history.
    pub fn count(&self) -> Result<usize, StoreError> {
        self.conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .map_err(|e| self.sql("counting runs", e))
    }

    /// Checks the file and every run: SQLite's `integrity_check` and `foreign_key_check`,
    /// and that each run's rows add up (case rows = the summary's case count, expected-chunk
    /// rows = what its cases declare, report and seal present).
    pub fn check(&self) -> Result<IntegrityReport, StoreError> {
        const OP: &str = "checking the history";
        let e = |e| self.sql(OP, e);
        let integrity: Vec<String> = self
            .conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .map_err(e)?;
        let foreign_key_violations = self
            .conn
            .prepare("PRAGMA foreign_key_check")
            .and_then(|mut st| st.query_map([], |_| Ok(()))?.count_ok())
            .map_err(e)?;
        let incomplete_runs: Vec<String> = self
            .conn
            .prepare(
                "SELECT r.id FROM runs r
                 LEFT JOIN (SELECT run, count(*) AS n, sum(expected) AS x FROM cases GROUP BY run) c
                     ON c.run = r.seq
                 LEFT JOIN (SELECT run, count(*) AS n FROM expected_chunks GROUP BY run) x
                     ON x.run = r.seq
                 WHERE coalesce(c.n, 0) != r.cases
                    OR coalesce(c.x, 0) != coalesce(x.n, 0)
                    OR NOT EXISTS (SELECT 1 FROM reports WHERE run = r.seq)
                    OR NOT EXISTS (SELECT 1 FROM sealed WHERE run = r.seq)
                 ORDER BY r.seq",
            )
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .map_err(e)?;
        let (audit_runs, altered_audit_runs) = self.check_audit_runs()?;
        let (gate_acceptances, unreadable_acceptances) = self.check_acceptances()?;
        let (run_chunks, chunk_snapshots, unreadable_run_chunks) = self.check_run_chunks()?;
        Ok(IntegrityReport {
            runs: self.count()?,
            integrity,
            foreign_key_violations,
            incomplete_runs,
            audit_runs,
            altered_audit_runs,
            gate_acceptances,
            unreadable_acceptances,
            run_chunks,
            chunk_snapshots,
            unreadable_run_chunks,
        })
    }

    /// Selects runs by `filter` (and strictly before the raw ID `before_id`), newest first,
    /// with their internal keys.
    fn select(
        &self,
        filter: &RunFilter,
        before_id: Option<&str>,
    ) -> Result<Vec<(i64, RunSummary)>, StoreError> {
        let (where_sql, params) = filter_sql(&self.path, filter, before_id, |r| self.resolve(r))?;
        let limit = filter
            .limit
            .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM runs {where_sql} ORDER BY seq DESC LIMIT {limit}"
        );
        self.select_summaries(&sql, &params)
    }

    fn select_summaries(
        &self,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<(i64, RunSummary)>, StoreError> {
        const OP: &str = "listing runs";
        type Raw = (i64, String, String, RunSummary);
        let raw: Vec<Raw> = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut st| {
                st.query_map(rusqlite::params_from_iter(params), |r| {
                    Ok((
                        r.get(0)?,
                        r.get(4)?,
                        r.get(5)?,
                        RunSummary {
                            id: r.get(1)?,
                            created_at: r.get(2)?,
                            label: r.get(3)?,
                            verdict: Verdict::Stop,
                            reasons: Vec::new(),
                            cases: r.get(6)?,
                            gold_cases: r.get(7)?,
                            failing: r.get(8)?,
                            failing_gold: r.get(9)?,
                            mean_quality: r.get(10)?,
                            mean_recall: r.get(11)?,
                            mrr: r.get(12)?,
                            mean_ndcg: r.get(13)?,
                            golden_fingerprint: r.get(14)?,
                            policy_fingerprint: r.get(15)?,
                            corpus_fingerprint: r.get(16)?,
                            top_k: r.get(17)?,
                            tool_version: r.get(18)?,
                            git_revision: r.get(19)?,
                        },
                    ))
                })?
                .collect()
            })
            .map_err(|e| self.sql(OP, e))?;
        raw.into_iter()
            .map(|(seq, verdict, reasons, mut s)| {
                s.verdict = match verdict.as_str() {
                    "accept" => Verdict::Accept,
                    "stop" => Verdict::Stop,
                    other => {
                        return Err(self.corrupt(&s.id, "verdict", format!("`{other}`")));
                    }
                };
                s.reasons = serde_json::from_str(&reasons)
                    .map_err(|err| self.corrupt(&s.id, "reasons", err.to_string()))?;
                Ok((seq, s))
            })
            .collect()
    }

    /// `BEGIN IMMEDIATE`: takes the write lock up front, so that the busy timeout applies
    /// (a deferred transaction that upgrades to a writer can fail at once with BUSY).
    fn begin(&self, operation: &'static str) -> Result<rusqlite::Transaction<'_>, StoreError> {
        rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sql(operation, e))
    }

    fn sql(&self, operation: &'static str, source: rusqlite::Error) -> StoreError {
        sqlite_error(self.path.clone(), operation, source)
    }

    fn corrupt(&self, run: &str, what: &'static str, message: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            run: run.to_owned(),
            what,
            message,
        }
    }
}

/// `file:PATH?mode=ro&immutable=1`, with the characters that end or escape a URI path
/// (`%`, `?`, `#`) percent-encoded.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    uri
}

/// The `WHERE` clause (with bare `?` placeholders, bound in order from the values) that
/// selects runs by `filter` and strictly before the raw ID `before_id`, for either backend.
/// `resolve` turns `filter.before` into a run ID.
pub(crate) fn filter_sql(
    location: &Path,
    filter: &RunFilter,
    before_id: Option<&str>,
    resolve: impl Fn(&str) -> Result<String, StoreError>,
) -> Result<(String, Vec<Value>), StoreError> {
    // Conditions use bare `?` placeholders, bound in order from `params`.
    let mut conds: Vec<String> = Vec::new();
    let mut params: Vec<Value> = Vec::new();
    for (col, value) in [
        ("golden_fingerprint", &filter.golden_fingerprint),
        ("policy_fingerprint", &filter.policy_fingerprint),
    ] {
        if let Some(v) = value {
            let v = if v.contains(':') {
                v.clone()
            } else {
                format!("sha256:{v}")
            };
            if v.starts_with("sha256:") && v.len() == 71 {
                conds.push(format!("{col} = ?"));
                params.push(Value::Text(v));
            } else {
                // A prefix: a range, so the index still serves it.
                let upper = format!("{v}\u{10FFFF}");
                conds.push(format!("{col} >= ? AND {col} < ?"));
                params.extend([Value::Text(v), Value::Text(upper)]);
            }
        }
    }
    if let Some(label) = &filter.label {
        conds.push("label = ?".to_owned());
        params.push(Value::Text(label.clone()));
    }
    for (field, value, end_of_day, op) in [
        ("since", &filter.since, false, ">="),
        ("until", &filter.until, true, "<="),
    ] {
        if let Some(v) = value {
            let ms = time::parse_bound_ms(v, end_of_day).ok_or_else(|| StoreError::BadTime {
                path: location.to_owned(),
                field,
                value: v.clone(),
            })?;
            conds.push(format!("created_ms {op} ?"));
            params.push(Value::Integer(ms));
        }
    }
    if let Some(v) = filter.verdict {
        // A literal, so that the partial index of accepted runs can serve it.
        conds.push(format!("verdict = '{}'", verdict_str(v)));
    }
    if let Some(before) = &filter.before {
        conds.push("id < ?".to_owned());
        params.push(Value::Text(resolve(before)?));
    }
    if let Some(id) = before_id {
        conds.push("id < ?".to_owned());
        params.push(Value::Text(id.to_owned()));
    }
    let where_sql = if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    };
    Ok((where_sql, params))
}

fn sqlite_error(path: PathBuf, operation: &'static str, source: rusqlite::Error) -> StoreError {
    if source.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) {
        return StoreError::Locked {
            path,
            operation,
            waited_ms: u64::try_from(BUSY_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
        };
    }
    StoreError::Sqlite {
        path,
        operation,
        error: source,
    }
}

/// `(application_id, user_version, schema objects)`, read in one statement so that the three
/// come from the same snapshot (another process may be creating the schema meanwhile).
fn read_header(conn: &Connection) -> rusqlite::Result<(i64, i64, i64)> {
    conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id()),
                (SELECT user_version FROM pragma_user_version()),
                (SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%')",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

/// Accepts a new file (both 0) or a veredicto history this build understands.
fn check_header(path: &Path, application_id: i64, user_version: i64) -> Result<(), StoreError> {
    match (application_id, user_version) {
        (0, 0) => Ok(()),
        (schema::APPLICATION_ID, 1..=schema::SCHEMA_VERSION) => Ok(()),
        (schema::APPLICATION_ID, v) if v > schema::SCHEMA_VERSION => Err(StoreError::NewerSchema {
            path: path.to_owned(),
            found: v,
            supported: schema::SCHEMA_VERSION,
        }),
        _ => Err(StoreError::NotAHistory {
            path: path.to_owned(),
            application_id,
            user_version,
        }),
    }
}

pub(crate) fn verdict_str(v: Verdict) -> &'static str {
    match v {
        Verdict::Accept => "accept",
        Verdict::Stop => "stop",
    }
}

fn opt_text(v: Option<&str>) -> Value {
    v.map_or(Value::Null, |s| Value::Text(s.to_owned()))
}

/// A JSON array of strings (tags and reason names need no escaping beyond what serde does).
pub(crate) fn json_strings<'a>(items: impl Iterator<Item = &'a str>) -> String {
    serde_json::to_string(&items.collect::<Vec<_>>()).unwrap_or_else(|_| "[]".to_owned())
}

/// Counts `Ok` rows, failing on the first error.
trait CountOk {
    fn count_ok(self) -> rusqlite::Result<usize>;
}

impl<I: Iterator<Item = rusqlite::Result<()>>> CountOk for I {
    fn count_ok(self) -> rusqlite::Result<usize> {
        let mut n = 0;
        for row in self {
            row?;
            n += 1;
        }
        Ok(n)
    }
}
