//! The seam between the history's users and its two backends: [`RunStore`], what a history
//! does, written once here for every [`Backend`] (the SQLite file, the default, and a
//! PostgreSQL database shared by a team); and [`History`], which opens either from a spec (a
//! path or a `postgres://` URL) and adds what both share (baselines, latest runs).
//!
//! The exam runs' logic is below; audit runs, gate acceptances and the runs' chunk lists
//! have theirs in `audit.rs`, `acceptance.rs` and `run_chunks.rs`, over the same seam.

use crate::backend::{values, Backend, BadValue, Col, Conn, ConnExt, Lock, Row, Value};
use crate::pg::PgHistory;
use crate::seal::{self, ItemRef, Seal, SealKind, StoredItem, RUN_COLUMNS};
use crate::{
    acceptance, audit, codec, id, run_chunks, time, GateAcceptance, IntegrityReport, Metric,
    RunFilter, RunSummary, SqliteHistory, StoreError, TrendPoint, TrendQuery,
};
use std::path::Path;
use veredicto_core::exam::{ExamReport, Verdict};
use veredicto_core::history::{AuditRecordKind, AuditRun, AuditRunMeta, AuditRunSummary};
use veredicto_core::history::{RecordedRun, RunMeta};
use veredicto_core::snapshot::ChunkSnapshot;

/// What a run history backend does. Every method that writes does so in one transaction
/// (all of it or nothing); every error names the history (a file path, or a PostgreSQL URL
/// without credentials).
pub trait RunStore: Send {
    /// Where the history is, for messages: the file path or the URL without credentials.
    fn location(&self) -> &Path;
    /// `wal` or SQLite's fallback journal for a file; `postgresql` for a server.
    fn journal_mode(&self) -> &str;
    /// Records one run and returns its new ID (`meta.id` must be empty).
    fn record(&self, meta: &RunMeta, report: &ExamReport) -> Result<String, StoreError>;
    /// Records several runs in one transaction, returning their IDs in order.
    fn record_all(&self, runs: &[(&RunMeta, &ExamReport)]) -> Result<Vec<String>, StoreError>;
    /// Records a run copied from another history under its own ID, which must sort after
    /// every run recorded here.
    fn import(&self, run: &RecordedRun) -> Result<(), StoreError>;
    /// Resolves `latest`, a full run ID or a unique prefix to a run ID.
    fn resolve(&self, id_or_prefix: &str) -> Result<String, StoreError>;
    /// The whole run, exactly as recorded.
    fn get(&self, id_or_prefix: &str) -> Result<RecordedRun, StoreError>;
    /// A run's metadata without its report.
    fn meta(&self, id_or_prefix: &str) -> Result<RunMeta, StoreError>;
    /// A run's summary line.
    fn summary(&self, id_or_prefix: &str) -> Result<RunSummary, StoreError>;
    /// Runs matching `filter` and recorded before the raw ID `before_id`, newest first.
    fn select_runs(
        &self,
        filter: &RunFilter,
        before_id: Option<&str>,
    ) -> Result<Vec<RunSummary>, StoreError>;
    /// A metric's mean over each selected run's cases, oldest run first.
    fn trend(&self, query: &TrendQuery) -> Result<Vec<TrendPoint>, StoreError>;
    /// Number of runs.
    fn count(&self) -> Result<usize, StoreError>;
    /// Checks the database and every run.
    fn check(&self) -> Result<IntegrityReport, StoreError>;
    /// Records an audit run (`meta.id` must be empty) with records made before it.
    fn record_audit_run(
        &self,
        meta: &AuditRunMeta,
        cases: &[u8],
        notes: Option<&[u8]>,
        records: &[(AuditRecordKind, String)],
    ) -> Result<String, StoreError>;
    /// Records an audit run copied from another history under its own ID, with records.
    fn import_audit_run(
        &self,
        run: &AuditRun,
        records: &[(AuditRecordKind, String)],
    ) -> Result<(), StoreError>;
    /// Appends records to a recorded audit run.
    fn append_audit_records(
        &self,
        run: &str,
        records: &[(AuditRecordKind, String)],
    ) -> Result<(), StoreError>;
    /// Resolves `latest`, a full audit run ID or a unique prefix.
    fn resolve_audit(&self, id_or_prefix: &str) -> Result<String, StoreError>;
    /// The whole audit run, its case file checked against its SHA-256.
    fn audit_run(&self, id_or_prefix: &str) -> Result<AuditRun, StoreError>;
    /// The records of `kind` of an audit run, in the order they were appended.
    fn audit_records(
        &self,
        id_or_prefix: &str,
        kind: AuditRecordKind,
    ) -> Result<Vec<String>, StoreError>;
    /// Audit runs, newest first.
    fn audit_runs(&self, limit: Option<usize>) -> Result<Vec<AuditRunSummary>, StoreError>;
    /// IDs of the audit runs recorded from a case file with these exact bytes, newest first.
    fn audit_runs_of(&self, cases: &[u8]) -> Result<Vec<String>, StoreError>;
    /// The run an audit run is compared with by default.
    fn previous_audit_run(&self, id_or_prefix: &str) -> Result<Option<String>, StoreError>;
    /// Appends a written acceptance of an ingestion batch's rejections and returns its ID:
    /// a new one when `a.id` is empty, else `a.id` (a migrated acceptance, which must sort
    /// after every acceptance recorded here). There is no update or delete.
    fn record_acceptance(&self, a: &GateAcceptance) -> Result<String, StoreError>;
    /// Acceptances, oldest first; only those of one batch when `batch_fingerprint` is given.
    fn acceptances(
        &self,
        batch_fingerprint: Option<&str>,
    ) -> Result<Vec<GateAcceptance>, StoreError>;
    /// Keeps the chunks a recorded run read (its full ID); the snapshot's body is stored
    /// only when no earlier run's has the same fingerprint. Returns the bytes stored.
    fn record_run_chunks(&self, run: &str, snapshot: &ChunkSnapshot) -> Result<usize, StoreError>;
    /// The chunks a run (its full ID) read, when they were kept.
    fn run_chunks(&self, run: &str) -> Result<Option<ChunkSnapshot>, StoreError>;
    /// IDs of the runs whose chunks were kept, in recording order.
    fn runs_with_chunks(&self) -> Result<Vec<String>, StoreError>;
    /// The seals, in chain order (none for an older history opened read-only).
    fn seals(&self) -> Result<Vec<Seal>, StoreError>;
    /// Items exactly as stored, each with its seal, for copying into another history
    /// (`history migrate`).
    fn export(&self, what: ItemRef<'_>) -> Result<Vec<StoredItem>, StoreError>;
    /// Appends items exported from another history, in one transaction, value for value
    /// and each sealed with its source seal's origin. Nothing is written when an item's
    /// content here would differ from what its source seal covers ([`StoreError::Migrate`]),
    /// or an ID would not sort after those recorded here.
    fn import_items(&self, items: &[StoredItem]) -> Result<(), StoreError>;
}

/// The history's logic, once, for every backend.
impl<B: Backend> RunStore for B {
    fn location(&self) -> &Path {
        Conn::location(self)
    }
    fn journal_mode(&self) -> &str {
        Backend::journal_mode(self)
    }
    fn record(&self, meta: &RunMeta, report: &ExamReport) -> Result<String, StoreError> {
        Ok(record_runs(self, &[(meta, report)])?
            .into_iter()
            .next()
            .unwrap_or_default())
    }
    fn record_all(&self, runs: &[(&RunMeta, &ExamReport)]) -> Result<Vec<String>, StoreError> {
        record_runs(self, runs)
    }
    fn import(&self, run: &RecordedRun) -> Result<(), StoreError> {
        import_run(self, run)
    }
    fn resolve(&self, id_or_prefix: &str) -> Result<String, StoreError> {
        resolve_in(self, Table::Runs, id_or_prefix)
    }
    fn get(&self, id_or_prefix: &str) -> Result<RecordedRun, StoreError> {
        get_run(self, id_or_prefix)
    }
    fn meta(&self, id_or_prefix: &str) -> Result<RunMeta, StoreError> {
        let id = resolve_in(self, Table::Runs, id_or_prefix)?;
        meta_of(self, &id).map(|(_, meta)| meta)
    }
    fn summary(&self, id_or_prefix: &str) -> Result<RunSummary, StoreError> {
        summary_of(self, id_or_prefix)
    }
    fn select_runs(
        &self,
        filter: &RunFilter,
        before_id: Option<&str>,
    ) -> Result<Vec<RunSummary>, StoreError> {
        Ok(select(self, filter, before_id)?
            .into_iter()
            .map(|(_, s)| s)
            .collect())
    }
    fn trend(&self, query: &TrendQuery) -> Result<Vec<TrendPoint>, StoreError> {
        trend(self, query)
    }
    fn count(&self) -> Result<usize, StoreError> {
        count_runs(self)
    }
    fn check(&self) -> Result<IntegrityReport, StoreError> {
        check(self)
    }
    fn record_audit_run(
        &self,
        meta: &AuditRunMeta,
        cases: &[u8],
        notes: Option<&[u8]>,
        records: &[(AuditRecordKind, String)],
    ) -> Result<String, StoreError> {
        audit::record_audit_run(self, meta, cases, notes, records)
    }
    fn import_audit_run(
        &self,
        run: &AuditRun,
        records: &[(AuditRecordKind, String)],
    ) -> Result<(), StoreError> {
        audit::import_audit_run(self, run, records)
    }
    fn append_audit_records(
        &self,
        run: &str,
        records: &[(AuditRecordKind, String)],
    ) -> Result<(), StoreError> {
        audit::append_audit_records(self, run, records)
    }
    fn resolve_audit(&self, id_or_prefix: &str) -> Result<String, StoreError> {
        resolve_in(self, Table::AuditRuns, id_or_prefix)
    }
    fn audit_run(&self, id_or_prefix: &str) -> Result<AuditRun, StoreError> {
        audit::audit_run(self, id_or_prefix)
    }
    fn audit_records(
        &self,
        id_or_prefix: &str,
        kind: AuditRecordKind,
    ) -> Result<Vec<String>, StoreError> {
        audit::audit_records(self, id_or_prefix, kind)
    }
    fn audit_runs(&self, limit: Option<usize>) -> Result<Vec<AuditRunSummary>, StoreError> {
        audit::audit_runs(self, limit)
    }
    fn audit_runs_of(&self, cases: &[u8]) -> Result<Vec<String>, StoreError> {
        audit::audit_runs_of(self, cases)
    }
    fn previous_audit_run(&self, id_or_prefix: &str) -> Result<Option<String>, StoreError> {
        audit::previous_audit_run(self, id_or_prefix)
    }
    fn record_acceptance(&self, a: &GateAcceptance) -> Result<String, StoreError> {
        acceptance::record_acceptance(self, a)
    }
    fn acceptances(
        &self,
        batch_fingerprint: Option<&str>,
    ) -> Result<Vec<GateAcceptance>, StoreError> {
        acceptance::acceptances(self, batch_fingerprint)
    }
    fn record_run_chunks(&self, run: &str, snapshot: &ChunkSnapshot) -> Result<usize, StoreError> {
        run_chunks::record_run_chunks(self, run, snapshot)
    }
    fn run_chunks(&self, run: &str) -> Result<Option<ChunkSnapshot>, StoreError> {
        run_chunks::run_chunks(self, run)
    }
    fn runs_with_chunks(&self) -> Result<Vec<String>, StoreError> {
        run_chunks::runs_with_chunks(self)
    }
    fn seals(&self) -> Result<Vec<Seal>, StoreError> {
        seal::seals(self)
    }
    fn export(&self, what: ItemRef<'_>) -> Result<Vec<StoredItem>, StoreError> {
        seal::export(self, what)
    }
    fn import_items(&self, items: &[StoredItem]) -> Result<(), StoreError> {
        let Some(first) = items.first() else {
            return Ok(());
        };
        const OP: &str = "copying an item";
        let lock = seal::lock_of(self, &first.item)?;
        self.write(OP, lock, |c| {
            items.iter().try_for_each(|item| seal::import(c, item))
        })
    }
}

/// A run history, SQLite or PostgreSQL. Methods come from [`RunStore`] (through `Deref`) and
/// the shared queries below. `Send`, not `Sync`: threads that record at once each open
/// their own.
pub struct History {
    store: Box<dyn RunStore>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("location", &self.store.location())
            .finish()
    }
}

impl std::ops::Deref for History {
    type Target = dyn RunStore;
    fn deref(&self) -> &Self::Target {
        &*self.store
    }
}

/// Whether a history spec names a PostgreSQL database rather than a file.
pub fn is_postgres_url(spec: &str) -> bool {
    let lower = spec.get(..13).unwrap_or(spec).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

impl History {
    /// Opens the SQLite history at `path`, creating it when absent.
    pub fn open(path: &Path) -> Result<History, StoreError> {
        Ok(History::from(SqliteHistory::open(path)?))
    }

    /// Opens an existing SQLite history ([`StoreError::Missing`] when there is no file).
    pub fn open_existing(path: &Path) -> Result<History, StoreError> {
        Ok(History::from(SqliteHistory::open_existing(path)?))
    }

    /// Opens an existing SQLite history for reading only: works in a read-only folder, changes
    /// nothing ([`StoreError::Missing`] when there is no file).
    pub fn open_read_only(path: &Path) -> Result<History, StoreError> {
        Ok(History::from(SqliteHistory::open_read_only(path)?))
    }

    /// Opens the history `spec` names: a `postgres://` or `postgresql://` URL (the schema
    /// is created when absent), or a file path (created when absent).
    pub fn open_spec(spec: &str) -> Result<History, StoreError> {
        if is_postgres_url(spec) {
            Ok(History::from(PgHistory::connect(spec)?))
        } else {
            History::open(Path::new(spec))
        }
    }

    /// [`History::open_spec`] for an existing history: a file must exist already.
    pub fn open_spec_existing(spec: &str) -> Result<History, StoreError> {
        if is_postgres_url(spec) {
            Ok(History::from(PgHistory::connect(spec)?))
        } else {
            History::open_existing(Path::new(spec))
        }
    }

    /// [`History::open_spec_existing`] for commands that only read: a file is opened
    /// read-only (it works in a read-only folder and changes nothing).
    pub fn open_spec_read_only(spec: &str) -> Result<History, StoreError> {
        if is_postgres_url(spec) {
            Ok(History::from(PgHistory::connect(spec)?))
        } else {
            History::open_read_only(Path::new(spec))
        }
    }

    /// The file path, or the URL without credentials.
    pub fn path(&self) -> &Path {
        self.store.location()
    }

    /// Records several runs in one transaction (an import, or building a large history):
    /// all of them or none. Returns their IDs in order.
    pub fn record_many<'a>(
        &self,
        runs: impl IntoIterator<Item = (&'a RunMeta, &'a ExamReport)>,
    ) -> Result<Vec<String>, StoreError> {
        let runs: Vec<_> = runs.into_iter().collect();
        self.store.record_all(&runs)
    }

    /// Runs matching `filter`, newest first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.store.select_runs(filter, None)
    }

    /// The newest run matching `filter`.
    pub fn latest(&self, filter: &RunFilter) -> Result<Option<RunSummary>, StoreError> {
        let filter = RunFilter {
            limit: Some(1),
            ..filter.clone()
        };
        Ok(self.list(&filter)?.into_iter().next())
    }

    /// The newest run recorded before `run` with the same golden set and policy (so the same
    /// cases, thresholds and K): the default baseline of `veredicto compare`. `run.id` need
    /// not be in this history; an empty `run.id` (a run not recorded) considers every run.
    pub fn previous_compatible(&self, run: &RunMeta) -> Result<Option<RunSummary>, StoreError> {
        let filter = RunFilter {
            golden_fingerprint: Some(run.golden_fingerprint.clone()),
            policy_fingerprint: Some(run.policy_fingerprint.clone()),
            limit: Some(1),
            ..RunFilter::default()
        };
        let before = (!run.id.is_empty()).then_some(run.id.as_str());
        Ok(self.store.select_runs(&filter, before)?.into_iter().next())
    }

    /// The newest accepted run recorded before `before` (a run ID, unique prefix or
    /// `latest`; `None`: any), of this golden set when given (whole fingerprint or prefix):
    /// `--baseline last-accepted`.
    pub fn last_accepted(
        &self,
        before: Option<&str>,
        golden_fingerprint: Option<&str>,
    ) -> Result<Option<RunSummary>, StoreError> {
        self.latest(&RunFilter {
            golden_fingerprint: golden_fingerprint.map(str::to_owned),
            verdict: Some(Verdict::Accept),
            before: before.map(str::to_owned),
            ..RunFilter::default()
        })
    }
}

impl From<SqliteHistory> for History {
    fn from(h: SqliteHistory) -> History {
        History { store: Box::new(h) }
    }
}

impl From<PgHistory> for History {
    fn from(h: PgHistory) -> History {
        History { store: Box::new(h) }
    }
}

// ---- exam runs ----

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

/// Validates and serialises a run (outside the write lock).
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

fn record_runs(
    b: &impl Backend,
    runs: &[(&RunMeta, &ExamReport)],
) -> Result<Vec<String>, StoreError> {
    const OP: &str = "recording a run";
    let prepared = runs
        .iter()
        .map(|(meta, report)| prepare(Conn::location(b), meta, report))
        .collect::<Result<Vec<_>, _>>()?;
    b.write(OP, Lock::Runs, |c| {
        prepared.iter().map(|p| insert_run(c, p)).collect()
    })
}

fn import_run(b: &impl Backend, run: &RecordedRun) -> Result<(), StoreError> {
    const OP: &str = "recording a run";
    let meta = RunMeta {
        id: String::new(),
        ..run.meta.clone()
    };
    let mut p = prepare(Conn::location(b), &meta, &run.report)?;
    p.fixed_id = Some(run.meta.id.clone());
    b.write(OP, Lock::Runs, |c| insert_run(c, &p).map(drop))
}

/// Columns of `cases`, as `insert_run` writes them.
pub(crate) const CASE_COLUMNS: [(&str, Col); 20] = [
    ("run", Col::Int),
    ("ordinal", Col::Int),
    ("case_id", Col::Text),
    ("gold", Col::Int),
    ("domain", Col::Text),
    ("tags", Col::Text),
    ("top_k", Col::Int),
    ("retrieved", Col::Int),
    ("expected", Col::Int),
    ("passed", Col::Int),
    ("reasons", Col::Text),
    ("documented", Col::Int),
    ("recall", Col::Real),
    ("quality", Col::Real),
    ("\"precision\"", Col::Real),
    ("reciprocal_rank", Col::Real),
    ("ndcg", Col::Real),
    ("average_precision", Col::Real),
    ("noise", Col::Int),
    ("max_noise", Col::Int),
];

pub(crate) const MEASURE_COLUMNS: [(&str, Col); 4] = [
    ("run", Col::Int),
    ("ordinal", Col::Int),
    ("measure", Col::Text),
    ("value", Col::Real),
];

pub(crate) const CHUNK_COLUMNS: [(&str, Col); 8] = [
    ("run", Col::Int),
    ("ordinal", Col::Int),
    ("position", Col::Int),
    ("chunk_id", Col::Text),
    ("rank", Col::Int),
    ("score", Col::Real),
    ("gold", Col::Int),
    ("in_top_k", Col::Int),
];

/// Writes a prepared run inside the open write transaction `c`: the run row, its report,
/// every case, measure and expected-chunk row, its `sealed` marker, and last its seal in the
/// chain.
fn insert_run(c: &dyn Conn, p: &Prepared<'_>) -> Result<String, StoreError> {
    const OP: &str = "recording a run";
    let (meta, report) = (p.meta, p.report);
    let s = &report.summary;
    // The ID is chosen under the write lock, after the newest stored one.
    let (seq, newest) = c.one(
        OP,
        "SELECT coalesce(max(seq), 0) + 1, max(id) FROM runs",
        &[],
        |r| Ok((r.int(0)?, r.opt_text(1)?)),
    )?;
    let run_id = match &p.fixed_id {
        Some(kept) => kept.clone(),
        None => id::next(p.created_ms, p.random, newest.as_deref()),
    };
    c.execute(
        OP,
        &format!(
            "INSERT INTO runs (seq, {}) VALUES ({})",
            RUN_COLUMNS.join(", "),
            (1..=RUN_COLUMNS.len() + 1)
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        // In the order of `RUN_COLUMNS`.
        &values![
            seq,
            &run_id,
            &meta.created_at,
            p.created_ms,
            meta.label.as_deref(),
            &meta.golden_fingerprint,
            &meta.policy_fingerprint,
            meta.corpus_fingerprint.as_deref(),
            &meta.config.retriever,
            meta.config.top_k,
            meta.config.embedding_model.as_deref(),
            meta.config.model_hash.as_deref(),
            &p.config,
            &meta.tool_version,
            meta.git_revision.as_deref(),
            verdict_str(report.verdict),
            &p.reasons,
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
            &p.latency,
        ],
    )?;
    c.execute(
        OP,
        "INSERT INTO reports (run, encoding, body) VALUES (?1, ?2, ?3)",
        &values![seq, codec::ENCODING, p.body.as_slice()],
    )?;
    let (mut cases, mut measures, mut chunks) = (Vec::new(), Vec::new(), Vec::new());
    for (ordinal, k) in report.cases.iter().enumerate() {
        cases.push(
            values![
                seq,
                ordinal,
                &k.id,
                k.gold,
                k.domain.as_deref(),
                json_strings(k.tags.iter().map(String::as_str)),
                k.top_k,
                k.retrieved,
                k.expected.len(),
                k.passed,
                json_strings(k.reasons.iter().map(|r| r.as_str())),
                k.documented,
                k.recall,
                k.quality,
                k.precision,
                k.reciprocal_rank,
                k.ndcg,
                k.average_precision,
                k.noise,
                k.max_noise,
            ]
            .to_vec(),
        );
        for (name, value) in &k.measures {
            measures.push(values![seq, ordinal, name, *value].to_vec());
        }
        for (position, x) in k.expected.iter().enumerate() {
            chunks.push(
                values![seq, ordinal, position, &x.id, x.rank, x.score, x.gold, x.in_top_k]
                    .to_vec(),
            );
        }
    }
    c.insert_rows(OP, "cases", &CASE_COLUMNS, &cases)?;
    c.insert_rows(OP, "case_measures", &MEASURE_COLUMNS, &measures)?;
    c.insert_rows(OP, "expected_chunks", &CHUNK_COLUMNS, &chunks)?;
    c.execute(OP, "INSERT INTO sealed (run) VALUES (?1)", &values![seq])?;
    seal::seal(c, SealKind::Run, &run_id, 0)?;
    Ok(run_id)
}

/// The tables whose rows have public IDs that resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Runs,
    AuditRuns,
}

/// Resolves `latest`, a full ID or a unique prefix (case-insensitive; `I`/`L` read as `1`,
/// `O` as `0`) to an ID of `table`.
pub(crate) fn resolve_in(
    c: &dyn Conn,
    table: Table,
    id_or_prefix: &str,
) -> Result<String, StoreError> {
    const OP: &str = "looking up a run";
    let query = id_or_prefix.trim();
    let path = || c.location().to_owned();
    let not_found = || match table {
        Table::Runs => StoreError::RunNotFound {
            path: path(),
            query: query.to_owned(),
        },
        Table::AuditRuns => StoreError::AuditRunNotFound {
            path: path(),
            query: query.to_owned(),
        },
    };
    let name = match table {
        Table::Runs => "runs",
        Table::AuditRuns => "audit_runs",
    };
    if query.eq_ignore_ascii_case("latest") {
        return c
            .first(
                OP,
                &format!("SELECT id FROM {name} ORDER BY seq DESC LIMIT 1"),
                &[],
                |r| r.text(0),
            )?
            .ok_or_else(not_found);
    }
    let prefix = id::normalise(query).ok_or_else(|| StoreError::BadRunRef {
        path: path(),
        query: query.to_owned(),
    })?;
    let upper = format!("{prefix:Z<width$}", width = id::ID_LEN);
    let low = format!("{prefix:0<width$}", width = id::ID_LEN);
    let found = c.rows(
        OP,
        &format!("SELECT id FROM {name} WHERE id >= ?1 AND id <= ?2 ORDER BY id DESC LIMIT 4"),
        &values![low, upper],
        |r| r.text(0),
    )?;
    match found.len() {
        0 => Err(not_found()),
        1 => Ok(found.into_iter().next().unwrap_or_default()),
        _ => Err(StoreError::AmbiguousPrefix {
            path: path(),
            prefix: query.to_owned(),
            candidates: found.into_iter().take(3).collect(),
        }),
    }
}

/// The whole run: metadata and exam report, exactly as recorded.
fn get_run(c: &dyn Conn, id_or_prefix: &str) -> Result<RecordedRun, StoreError> {
    const OP: &str = "reading a run";
    let id = resolve_in(c, Table::Runs, id_or_prefix)?;
    let (seq, meta) = meta_of(c, &id)?;
    let (encoding, body) = c.one(
        OP,
        "SELECT encoding, body FROM reports WHERE run = ?1",
        &values![seq],
        |r| Ok((r.text(0)?, r.blob(1)?)),
    )?;
    let json =
        codec::decompress(&encoding, &body).map_err(|message| c.corrupt(&id, "report", message))?;
    let report = codec::parse(&json).map_err(|err| c.corrupt(&id, "report", err.to_string()))?;
    Ok(RecordedRun { meta, report })
}

fn meta_of(c: &dyn Conn, id: &str) -> Result<(i64, RunMeta), StoreError> {
    const OP: &str = "reading a run";
    let raw = c.first(
        OP,
        "SELECT seq, id, created_at, label, golden_fingerprint, policy_fingerprint,
             corpus_fingerprint, tool_version, git_revision, config, latency
         FROM runs WHERE id = ?1",
        &values![id],
        |r| {
            Ok((
                r.int(0)?,
                RunMeta {
                    id: r.text(1)?,
                    created_at: r.text(2)?,
                    label: r.opt_text(3)?,
                    golden_fingerprint: r.text(4)?,
                    policy_fingerprint: r.text(5)?,
                    corpus_fingerprint: r.opt_text(6)?,
                    config: Default::default(),
                    tool_version: r.text(7)?,
                    git_revision: r.opt_text(8)?,
                    latency: Default::default(),
                },
                r.text(9)?,
                r.text(10)?,
            ))
        },
    )?;
    let (seq, mut meta, config, latency) = raw.ok_or_else(|| StoreError::RunNotFound {
        path: c.location().to_owned(),
        query: id.to_owned(),
    })?;
    meta.config =
        serde_json::from_str(&config).map_err(|err| c.corrupt(id, "config", err.to_string()))?;
    meta.latency =
        serde_json::from_str(&latency).map_err(|err| c.corrupt(id, "latency", err.to_string()))?;
    Ok((seq, meta))
}

/// Columns of `runs` that make a [`RunSummary`], after `seq`.
const SUMMARY_COLUMNS: &str = "seq, id, created_at, label, verdict, reasons, cases, gold_cases, \
     failing, failing_gold, mean_quality, mean_recall, mrr, mean_ndcg, golden_fingerprint, \
     policy_fingerprint, corpus_fingerprint, top_k, tool_version, git_revision";

fn summary_of(c: &dyn Conn, id_or_prefix: &str) -> Result<RunSummary, StoreError> {
    let id = resolve_in(c, Table::Runs, id_or_prefix)?;
    let sql = format!("SELECT {SUMMARY_COLUMNS} FROM runs WHERE id = ?1");
    summaries(c, &sql, &values![&id])?
        .into_iter()
        .next()
        .map(|(_, s)| s)
        .ok_or(StoreError::RunNotFound {
            path: c.location().to_owned(),
            query: id,
        })
}

/// Selects runs by `filter` (and strictly before the raw ID `before_id`), newest first,
/// with their internal keys.
fn select(
    c: &dyn Conn,
    filter: &RunFilter,
    before_id: Option<&str>,
) -> Result<Vec<(i64, RunSummary)>, StoreError> {
    let (where_sql, params) = filter_sql(c.location(), filter, before_id, |r| {
        resolve_in(c, Table::Runs, r)
    })?;
    let limit = filter
        .limit
        .map_or_else(String::new, |n| format!(" LIMIT {n}"));
    let sql = format!("SELECT {SUMMARY_COLUMNS} FROM runs {where_sql} ORDER BY seq DESC{limit}");
    summaries(c, &sql, &params)
}

fn summaries(
    c: &dyn Conn,
    sql: &str,
    params: &[Value],
) -> Result<Vec<(i64, RunSummary)>, StoreError> {
    const OP: &str = "listing runs";
    let raw = c.rows(OP, sql, params, |r| {
        Ok((r.int(0)?, r.text(4)?, r.text(5)?, summary_row(r)?))
    })?;
    raw.into_iter()
        .map(|(seq, verdict, reasons, mut s)| {
            s.verdict = match verdict.as_str() {
                "accept" => Verdict::Accept,
                "stop" => Verdict::Stop,
                other => return Err(c.corrupt(&s.id, "verdict", format!("`{other}`"))),
            };
            s.reasons = serde_json::from_str(&reasons)
                .map_err(|err| c.corrupt(&s.id, "reasons", err.to_string()))?;
            Ok((seq, s))
        })
        .collect()
}

fn summary_row(r: &Row) -> Result<RunSummary, BadValue> {
    Ok(RunSummary {
        id: r.text(1)?,
        created_at: r.text(2)?,
        label: r.opt_text(3)?,
        verdict: Verdict::Stop,
        reasons: Vec::new(),
        cases: r.count(6)?,
        gold_cases: r.count(7)?,
        failing: r.count(8)?,
        failing_gold: r.count(9)?,
        mean_quality: r.real(10)?,
        mean_recall: r.real(11)?,
        mrr: r.real(12)?,
        mean_ndcg: r.real(13)?,
        golden_fingerprint: r.text(14)?,
        policy_fingerprint: r.text(15)?,
        corpus_fingerprint: r.opt_text(16)?,
        top_k: u32::try_from(r.int(17)?).unwrap_or(0),
        tool_version: r.text(18)?,
        git_revision: r.opt_text(19)?,
    })
}

/// The mean of a metric over each selected run's cases (optionally one domain or one case),
/// oldest run first: a time series for trend plots and slope tests. The values are read in
/// case order and averaged as SQLite's `avg()` averages them, on both backends.
fn trend(c: &dyn Conn, query: &TrendQuery) -> Result<Vec<TrendPoint>, StoreError> {
    const OP: &str = "computing a trend";
    let runs = select(c, &query.runs, None)?;
    let scope = "(CAST(?2 AS TEXT) IS NULL OR c.domain = ?2) \
                 AND (CAST(?3 AS TEXT) IS NULL OR c.case_id = ?3)";
    let sql = match query.metric.column() {
        Some(col) => format!(
            "SELECT c.\"{col}\" FROM cases c
             WHERE c.run = ?1 AND c.\"{col}\" IS NOT NULL AND {scope} ORDER BY c.ordinal"
        ),
        None => format!(
            "SELECT m.value FROM case_measures m
             JOIN cases c ON c.run = m.run AND c.ordinal = m.ordinal
             WHERE m.run = ?1 AND m.measure = ?4 AND {scope} ORDER BY m.ordinal"
        ),
    };
    let mut points = Vec::with_capacity(runs.len());
    for (seq, run) in runs.into_iter().rev() {
        let mut p = values![
            seq,
            query.domain.as_deref(),
            query.case_id.as_deref(),
            Value::Null
        ]
        .to_vec();
        match &query.metric {
            Metric::Measure(name) => p[3] = Value::from(name),
            _ => {
                p.pop();
            }
        }
        let values = c.rows(OP, &sql, &p, |r| r.real(0))?;
        points.push(TrendPoint {
            run_id: run.id,
            created_at: run.created_at,
            label: run.label,
            cases: values.len(),
            mean: sqlite_avg(&values),
        });
    }
    Ok(points)
}

/// The mean SQLite's `avg()` computes: a Kahan-Babuska-Neumaier sum divided by the count;
/// `None` for no values.
fn sqlite_avg(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let (mut sum, mut err) = (0.0f64, 0.0f64);
    for &r in values {
        let t = sum + r;
        if sum.abs() > r.abs() {
            err += (sum - t) + r;
        } else {
            err += (r - t) + sum;
        }
        sum = t;
    }
    if !err.is_nan() {
        sum += err;
    }
    #[allow(clippy::cast_precision_loss)]
    Some(sum / values.len() as f64)
}

fn count_runs(c: &dyn Conn) -> Result<usize, StoreError> {
    c.one("counting runs", "SELECT count(*) FROM runs", &[], |r| {
        r.count(0)
    })
}

/// Checks the database and every run: the database's own soundness
/// ([`Backend::check_database`]), that each run's rows add up (case rows = the summary's case
/// count, expected-chunk rows = what its cases declare, report and `sealed` marker present),
/// the audit runs' case files, the gate acceptances, the runs' chunk lists, and every seal
/// (each item's content and each link of the chain, `seal.rs`).
fn check(b: &impl Backend) -> Result<IntegrityReport, StoreError> {
    const OP: &str = "checking the history";
    let (integrity, foreign_key_violations) = b.check_database()?;
    let incomplete_runs = b.rows(
        OP,
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
        &[],
        |r| r.text(0),
    )?;
    let (audit_runs, altered_audit_runs) = audit::check_audit_runs(b)?;
    let (gate_acceptances, unreadable_acceptances) = acceptance::check_acceptances(b)?;
    let (run_chunks, chunk_snapshots, unreadable_run_chunks) = run_chunks::check_run_chunks(b)?;
    let seals = seal::check(b)?;
    Ok(IntegrityReport {
        runs: count_runs(b)?,
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
        seals,
    })
}

/// The `WHERE` clause (with placeholders `?1`, `?2`, … bound in order from the values) that
/// selects runs by `filter` and strictly before the raw ID `before_id`. `resolve` turns
/// `filter.before` into a run ID.
fn filter_sql(
    location: &Path,
    filter: &RunFilter,
    before_id: Option<&str>,
    resolve: impl Fn(&str) -> Result<String, StoreError>,
) -> Result<(String, Vec<Value>), StoreError> {
    let mut conds: Vec<String> = Vec::new();
    let mut params: Vec<Value> = Vec::new();
    // The placeholder of the next parameter, which it adds.
    fn bind(v: Value, params: &mut Vec<Value>) -> String {
        params.push(v);
        format!("?{}", params.len())
    }
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
                let p = bind(Value::Text(v), &mut params);
                conds.push(format!("{col} = {p}"));
            } else {
                // A prefix: a range, so the index still serves it.
                let upper = format!("{v}\u{10FFFF}");
                let low = bind(Value::Text(v), &mut params);
                let high = bind(Value::Text(upper), &mut params);
                conds.push(format!("{col} >= {low} AND {col} < {high}"));
            }
        }
    }
    if let Some(label) = &filter.label {
        let p = bind(Value::from(label), &mut params);
        conds.push(format!("label = {p}"));
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
            let p = bind(Value::Int(ms), &mut params);
            conds.push(format!("created_ms {op} {p}"));
        }
    }
    if let Some(v) = filter.verdict {
        // A literal, so that the partial index of accepted runs can serve it.
        conds.push(format!("verdict = '{}'", verdict_str(v)));
    }
    if let Some(before) = &filter.before {
        let p = bind(Value::Text(resolve(before)?), &mut params);
        conds.push(format!("id < {p}"));
    }
    if let Some(id) = before_id {
        let p = bind(Value::from(id), &mut params);
        conds.push(format!("id < {p}"));
    }
    let where_sql = if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    };
    Ok((where_sql, params))
}

pub(crate) fn verdict_str(v: Verdict) -> &'static str {
    match v {
        Verdict::Accept => "accept",
        Verdict::Stop => "stop",
    }
}

/// A JSON array of strings (tags and reason names need no escaping beyond what serde does).
fn json_strings<'a>(items: impl Iterator<Item = &'a str>) -> String {
    serde_json::to_string(&items.collect::<Vec<_>>()).unwrap_or_else(|_| "[]".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_is_sqlites() {
        assert_eq!(sqlite_avg(&[]), None);
        assert_eq!(sqlite_avg(&[1.0, 2.0]), Some(1.5));
        // Compensated: 0.1 ten times sums to exactly 1.
        assert_eq!(sqlite_avg(&[0.1; 10]), Some(0.1));
    }
}
