//! The seam between the history's users and its two backends: [`RunStore`], implemented by
//! [`SqliteHistory`] (a file, the default) and [`PgHistory`] (a PostgreSQL database shared
//! by a team), and [`History`], which opens either from a spec (a path or a `postgres://`
//! URL) and adds what both share (baselines, latest runs).

use crate::audit::{AuditRecordKind, AuditRun, AuditRunMeta, AuditRunSummary};
use crate::pg::PgHistory;
use crate::{
    GateAcceptance, IntegrityReport, RunFilter, RunSummary, SqliteHistory, StoreError, TrendPoint,
    TrendQuery,
};
use std::path::Path;
use veredicto_core::exam::{ExamReport, Verdict};
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
}

/// Implements [`RunStore`] for a backend whose inherent methods have the trait's names.
macro_rules! delegate_run_store {
    ($backend:ty) => {
        impl RunStore for $backend {
            fn location(&self) -> &Path {
                self.path()
            }
            fn journal_mode(&self) -> &str {
                <$backend>::journal_mode(self)
            }
            fn record(&self, meta: &RunMeta, report: &ExamReport) -> Result<String, StoreError> {
                <$backend>::record(self, meta, report)
            }
            fn record_all(
                &self,
                runs: &[(&RunMeta, &ExamReport)],
            ) -> Result<Vec<String>, StoreError> {
                <$backend>::record_many(self, runs.iter().copied())
            }
            fn import(&self, run: &RecordedRun) -> Result<(), StoreError> {
                <$backend>::import(self, run)
            }
            fn resolve(&self, id_or_prefix: &str) -> Result<String, StoreError> {
                <$backend>::resolve(self, id_or_prefix)
            }
            fn get(&self, id_or_prefix: &str) -> Result<RecordedRun, StoreError> {
                <$backend>::get(self, id_or_prefix)
            }
            fn meta(&self, id_or_prefix: &str) -> Result<RunMeta, StoreError> {
                <$backend>::meta(self, id_or_prefix)
            }
            fn summary(&self, id_or_prefix: &str) -> Result<RunSummary, StoreError> {
                <$backend>::summary(self, id_or_prefix)
            }
            fn select_runs(
                &self,
                filter: &RunFilter,
                before_id: Option<&str>,
            ) -> Result<Vec<RunSummary>, StoreError> {
                <$backend>::select_runs(self, filter, before_id)
            }
            fn trend(&self, query: &TrendQuery) -> Result<Vec<TrendPoint>, StoreError> {
                <$backend>::trend(self, query)
            }
            fn count(&self) -> Result<usize, StoreError> {
                <$backend>::count(self)
            }
            fn check(&self) -> Result<IntegrityReport, StoreError> {
                <$backend>::check(self)
            }
            fn record_audit_run(
                &self,
                meta: &AuditRunMeta,
                cases: &[u8],
                notes: Option<&[u8]>,
                records: &[(AuditRecordKind, String)],
            ) -> Result<String, StoreError> {
                <$backend>::record_audit_run(self, meta, cases, notes, records)
            }
            fn import_audit_run(
                &self,
                run: &AuditRun,
                records: &[(AuditRecordKind, String)],
            ) -> Result<(), StoreError> {
                <$backend>::import_audit_run(self, run, records)
            }
            fn append_audit_records(
                &self,
                run: &str,
                records: &[(AuditRecordKind, String)],
            ) -> Result<(), StoreError> {
                <$backend>::append_audit_records(self, run, records)
            }
            fn resolve_audit(&self, id_or_prefix: &str) -> Result<String, StoreError> {
                <$backend>::resolve_audit(self, id_or_prefix)
            }
            fn audit_run(&self, id_or_prefix: &str) -> Result<AuditRun, StoreError> {
                <$backend>::audit_run(self, id_or_prefix)
            }
            fn audit_records(
                &self,
                id_or_prefix: &str,
                kind: AuditRecordKind,
            ) -> Result<Vec<String>, StoreError> {
                <$backend>::audit_records(self, id_or_prefix, kind)
            }
            fn audit_runs(&self, limit: Option<usize>) -> Result<Vec<AuditRunSummary>, StoreError> {
                <$backend>::audit_runs(self, limit)
            }
            fn audit_runs_of(&self, cases: &[u8]) -> Result<Vec<String>, StoreError> {
                <$backend>::audit_runs_of(self, cases)
            }
            fn previous_audit_run(&self, id_or_prefix: &str) -> Result<Option<String>, StoreError> {
                <$backend>::previous_audit_run(self, id_or_prefix)
            }
            fn record_acceptance(&self, a: &GateAcceptance) -> Result<String, StoreError> {
                <$backend>::record_acceptance(self, a)
            }
            fn acceptances(
                &self,
                batch_fingerprint: Option<&str>,
            ) -> Result<Vec<GateAcceptance>, StoreError> {
                <$backend>::acceptances(self, batch_fingerprint)
            }
            fn record_run_chunks(
                &self,
                run: &str,
                snapshot: &ChunkSnapshot,
            ) -> Result<usize, StoreError> {
                <$backend>::record_run_chunks(self, run, snapshot)
            }
            fn run_chunks(&self, run: &str) -> Result<Option<ChunkSnapshot>, StoreError> {
                <$backend>::run_chunks(self, run)
            }
            fn runs_with_chunks(&self) -> Result<Vec<String>, StoreError> {
                <$backend>::runs_with_chunks(self)
            }
        }
    };
}

delegate_run_store!(SqliteHistory);
delegate_run_store!(PgHistory);

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
