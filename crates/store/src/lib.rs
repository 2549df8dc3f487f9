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
//! - **Tamper-evident**: every item is sealed when written with the SHA-256 of its content,
//!   chained to the previous seal; [`RunStore::check`] recomputes the chain and names the
//!   first item that was changed (`seal` module docs say exactly what a seal covers).
//! - **Durable**: WAL journal with `synchronous=FULL`: a run whose `record` returned survives
//!   a power cut as well as a crash.
//! - **Concurrent**: any number of processes may record and read at once; writers queue on
//!   the WAL write lock for up to 10 s (`busy_timeout`), readers never wait.
//! - **IDs**: ULIDs from `created_at` and OS randomness, strictly increasing in recording
//!   order ([`id`] module docs).

mod acceptance;
mod audit;
mod backend;
mod codec;
mod error;
pub mod id;
mod metric;
mod migrate;
mod pg;
mod run_chunks;
mod schema;
mod seal;
mod sqlite;
mod store;
pub mod synthetic;
use veredicto_core::time;

pub use error::StoreError;
pub use metric::{Metric, UnknownMetric};
pub use migrate::{migrate, MigrateReport};
pub use pg::PgHistory;
pub use seal::{
    ItemRef, Seal, SealBreak, SealCheck, SealKind, SealOrigin, SealProblem, StoredItem,
};
pub use sqlite::{SqliteHistory, BUSY_TIMEOUT};
pub use store::{is_postgres_url, History, RunStore};
pub use veredicto_core::history::{
    short_fingerprint, AuditCounts, AuditRecordKind, AuditRun, AuditRunMeta, AuditRunSummary,
    GateAcceptance, RunSummary,
};

use serde::{Deserialize, Serialize};
use veredicto_core::exam::Verdict;

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
    /// Every item's seal recomputed: the first that does not match, items without one, and
    /// how many were sealed only when the history was upgraded.
    #[serde(default)]
    pub seals: SealCheck,
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
            && self.seals.is_ok()
    }
}
