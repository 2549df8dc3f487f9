//! The run history as the pipelines use it: where it is ([`HistorySpec`]), opening it,
//! which recorded run a new run is compared with ([`Baseline`], the same values in every
//! command), the recent runs the cross-run diagnosis reads, and what a new run records
//! about where it was made.

use std::path::Path;
use std::process::Command;

use veredicto_core::history::{RecordedRun, RunMeta};
use veredicto_store::{History, RunFilter};

use crate::{Error, Events, Result};

/// The default history file without a project file, relative to the working folder.
pub const DEFAULT_HISTORY: &str = ".veredicto/history.db";

/// Runs of history the cross-run diagnosis and the trends look at, in every command.
pub const DEFAULT_WINDOW: usize = 20;

/// Where the history is: a file path or a `postgres://` URL.
///
/// `explicit` is false only for the default file (no flag, no variable, no `history` in the
/// project file): a run missing from a history the user chose is a finding, while a default
/// history that does not exist or lacks a run is only "not checked".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySpec {
    spec: String,
    explicit: bool,
}

impl HistorySpec {
    /// A history the user named (flag, environment, project file).
    pub fn chosen(spec: impl Into<String>) -> HistorySpec {
        HistorySpec {
            spec: spec.into(),
            explicit: true,
        }
    }

    /// The default history (nobody named one).
    pub fn default_at(spec: impl Into<String>) -> HistorySpec {
        HistorySpec {
            spec: spec.into(),
            explicit: false,
        }
    }

    /// The path or URL as given (with any password: never print it; see [`Self::display`]).
    pub fn as_str(&self) -> &str {
        &self.spec
    }

    /// Whether the user chose this history rather than getting the default file.
    pub fn is_explicit(&self) -> bool {
        self.explicit
    }

    /// Whether a history may be there to read: the file exists, or it is a database (whose
    /// absence the connection reports).
    pub fn is_file(&self) -> bool {
        veredicto_store::is_postgres_url(&self.spec) || Path::new(&self.spec).is_file()
    }

    /// For messages: the path, or the URL without credentials.
    pub fn display(&self) -> String {
        shown(&self.spec)
    }

    /// Opens (creating) the history for recording.
    pub fn open(&self) -> Result<History> {
        Ok(History::open_spec(&self.spec)?)
    }

    /// Opens an existing history for reading and appending.
    pub fn open_existing(&self) -> Result<History> {
        Ok(History::open_spec_existing(&self.spec)?)
    }

    /// Opens an existing history for commands that only read (works in a read-only folder).
    pub fn open_read_only(&self) -> Result<History> {
        Ok(History::open_spec_read_only(&self.spec)?)
    }
}

impl Default for HistorySpec {
    fn default() -> Self {
        HistorySpec::default_at(DEFAULT_HISTORY)
    }
}

/// A history as messages may show it: the path, or the URL without credentials.
pub fn shown(spec: &str) -> String {
    if veredicto_store::is_postgres_url(spec) {
        veredicto_core::redact::url(spec)
    } else {
        spec.to_owned()
    }
}

/// Which recorded run a run is compared with, the same values in every command:
/// `previous` (the last earlier run with the same golden set and policy), `last-accepted`
/// (the last accepted run before it), `none` (no comparison), or a run ID / unique prefix.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Baseline {
    /// The last earlier run with the same golden set and policy.
    #[default]
    Previous,
    /// The last accepted run before this one.
    LastAccepted,
    /// No comparison.
    None,
    /// A run ID or a unique prefix of one.
    Run(String),
}

impl std::str::FromStr for Baseline {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Ok(match s.trim() {
            "previous" => Baseline::Previous,
            "last-accepted" => Baseline::LastAccepted,
            "none" => Baseline::None,
            "" => return Err("expected previous, last-accepted, none or a run ID".to_owned()),
            other => {
                // Run IDs are ULIDs: Crockford base32 (no I, L, O, U), 26 characters; a
                // unique prefix is enough.
                let crockford = |c: char| {
                    c.is_ascii_alphanumeric()
                        && !matches!(c.to_ascii_uppercase(), 'I' | 'L' | 'O' | 'U')
                };
                if other.len() > 26 || !other.chars().all(crockford) {
                    let hint = veredicto_formats::config::did_you_mean(
                        other,
                        ["previous", "last-accepted", "none"],
                    )
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                    return Err(format!(
                        "`{}` is neither previous, last-accepted, none nor a run ID{hint}",
                        veredicto_core::redact::short(other)
                    ));
                }
                Baseline::Run(other.to_owned())
            }
        })
    }
}

impl std::fmt::Display for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Baseline::Previous => f.write_str("previous"),
            Baseline::LastAccepted => f.write_str("last-accepted"),
            Baseline::None => f.write_str("none"),
            Baseline::Run(id) => f.write_str(id),
        }
    }
}

impl Baseline {
    /// Checks, before anything is recorded, that a baseline named by run ID is in the
    /// history (a typo found after the run was written left a run nobody wanted).
    pub fn check(&self, history: &History) -> Result<()> {
        if let Baseline::Run(id) = self {
            history
                .resolve(id)
                .map_err(|e| Error::msg(format!("--baseline {id}: {e}")))?;
        }
        Ok(())
    }

    /// The baseline's run ID for `run`; `None` when the history holds no such run yet or
    /// the baseline is `none`.
    pub fn resolve(&self, history: &History, run: &RunMeta) -> Result<Option<String>> {
        Ok(match self {
            Baseline::Previous => history.previous_compatible(run)?.map(|s| s.id),
            Baseline::LastAccepted => history.last_accepted(Some(&run.id), None)?.map(|s| s.id),
            Baseline::None => None,
            Baseline::Run(other) => Some(history.resolve(other)?),
        })
    }
}

/// The last `window` runs of `run`'s golden set up to and including it, oldest first.
pub fn recent_runs(
    history: &History,
    run: &RecordedRun,
    window: usize,
) -> Result<Vec<RecordedRun>> {
    let mut ids: Vec<String> = history
        .list(&RunFilter {
            golden_fingerprint: Some(run.meta.golden_fingerprint.clone()),
            before: Some(run.meta.id.clone()),
            limit: Some(window.saturating_sub(1)),
            ..RunFilter::default()
        })?
        .into_iter()
        .map(|s| s.id)
        .collect();
    ids.reverse();
    let mut runs = Vec::with_capacity(ids.len() + 1);
    for id in ids {
        runs.push(history.get(&id)?);
    }
    runs.push(run.clone());
    Ok(runs)
}

/// The chunk list the history kept for the run the cross-run diagnosis compares the newest
/// of `runs` with (the last accepted one before it), when it kept one.
pub fn baseline_chunks(
    history: &History,
    runs: &[RecordedRun],
) -> Result<Option<veredicto_core::snapshot::ChunkSnapshot>> {
    match veredicto_core::compare::regression_baseline(runs) {
        Some(i) => Ok(history.run_chunks(&runs[i].meta.id)?),
        None => Ok(None),
    }
}

/// The git revision of the folder `dir` (`HEAD`, with `-dirty` when the tree has changes),
/// or `None` outside a git work tree or without git. The caller chooses the folder (the
/// command line gives its working folder).
pub fn git_revision(dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let rev = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    let dirty = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
    Some(if dirty { format!("{rev}-dirty") } else { rev })
}

/// A comparison of a recorded run with its baseline (`compare`).
#[derive(Debug, Clone)]
pub struct CompareRequest<'a> {
    /// The run to judge (ID, unique prefix, `latest`).
    pub run: &'a str,
    /// Its baseline (`none` is refused: a comparison needs one).
    pub baseline: Baseline,
    /// The current corpus, to tell the ingest batch of chunks that displaced expected ones.
    pub corpus: Option<&'a Path>,
    /// The documents the corpus' chunks are located in ([`crate::golden::load_corpus`]).
    pub documents: Option<&'a Path>,
    /// Seed of the randomisation test and the bootstrap.
    pub seed: u64,
    /// Monte-Carlo sign patterns when exact enumeration is too large.
    pub permutations: usize,
    /// Bootstrap resamples for the confidence intervals.
    pub bootstrap: usize,
    /// Runs of history the cross-run diagnosis looks at.
    pub window: usize,
}

/// A run, its baseline, their comparison and the cross-run diagnosis.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The baseline run.
    pub base: RecordedRun,
    /// The run judged.
    pub new: RecordedRun,
    /// The comparison (significance, displaced chunks).
    pub comparison: veredicto_core::compare::Comparison,
    /// The cross-run diagnosis of the recent history.
    pub diagnosis: veredicto_core::compare::RunsDiagnosis,
}

/// Compares a recorded run of the history at `spec` with its baseline.
pub fn compare_runs(spec: &HistorySpec, req: &CompareRequest<'_>) -> Result<Compared> {
    let corpus = read_corpus(req.corpus, req.documents)?;
    compare_runs_over(spec, req, corpus.as_ref())
}

/// [`compare_runs`] over a corpus already read (`req.corpus` and `req.documents` are not
/// read again): a server that keeps the corpus between requests.
pub fn compare_runs_over(
    spec: &HistorySpec,
    req: &CompareRequest<'_>,
    corpus: Option<&veredicto_core::case::Corpus>,
) -> Result<Compared> {
    use veredicto_core::compare::{self, CompareOptions, DiagnoseOptions};
    if req.baseline == Baseline::None {
        crate::bail!(
            "--baseline none: compare needs a baseline (previous, last-accepted or a run ID)"
        );
    }
    let history = spec.open_read_only()?;
    let new = history.get(req.run)?;
    let Some(base_id) = req.baseline.resolve(&history, &new.meta)? else {
        crate::bail!(
            "no {} baseline for run {} in {}",
            req.baseline,
            new.meta.id,
            spec.display()
        );
    };
    let base = history.get(&base_id)?;
    let comparison = compare::compare(
        &base,
        &new,
        &CompareOptions {
            seed: req.seed,
            permutations: req.permutations,
            bootstrap: req.bootstrap,
            corpus,
            ..CompareOptions::default()
        },
    );
    let runs = recent_runs(&history, &new, req.window)?;
    let accepted_chunks = baseline_chunks(&history, &runs)?;
    let diagnosis = compare::diagnose_runs_with_chunks(
        &runs,
        corpus,
        accepted_chunks.as_ref(),
        &DiagnoseOptions {
            seed: req.seed,
            ..DiagnoseOptions::default()
        },
    );
    Ok(Compared {
        base,
        new,
        comparison,
        diagnosis,
    })
}

/// One recorded run to report on (`report`).
#[derive(Debug, Clone)]
pub struct ReportRequest<'a> {
    /// The run (ID, unique prefix, `latest`).
    pub run: &'a str,
    /// The baseline of the comparison (`none`: no comparison).
    pub baseline: Baseline,
    /// The current corpus (ingest batches of displacing chunks).
    pub corpus: Option<&'a Path>,
    /// The documents the corpus' chunks are located in ([`crate::golden::load_corpus`]).
    pub documents: Option<&'a Path>,
    /// Runs of history for the trends and the cross-run diagnosis.
    pub window: usize,
    /// Seed of the randomisation test and the bootstrap.
    pub seed: u64,
}

/// Everything a run's report shows: the run, its comparison with the baseline (when there
/// is one), the cross-run diagnosis and the recent runs the trends are drawn from.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The run reported on.
    pub current: RecordedRun,
    /// Its comparison with the baseline, when the history holds one.
    pub comparison: Option<veredicto_core::compare::Comparison>,
    /// The cross-run diagnosis.
    pub diagnosis: veredicto_core::compare::RunsDiagnosis,
    /// The recent runs of its golden set, oldest first, ending with it.
    pub history: Vec<RecordedRun>,
}

/// Gathers what the report of a recorded run of the history at `spec` shows.
pub fn report_run(spec: &HistorySpec, req: &ReportRequest<'_>) -> Result<RunReport> {
    let corpus = read_corpus(req.corpus, req.documents)?;
    report_run_over(spec, req, corpus.as_ref())
}

/// [`report_run`] over a corpus already read (`req.corpus` and `req.documents` are not read
/// again): a server that keeps the corpus between requests.
pub fn report_run_over(
    spec: &HistorySpec,
    req: &ReportRequest<'_>,
    corpus: Option<&veredicto_core::case::Corpus>,
) -> Result<RunReport> {
    use veredicto_core::compare::{self, CompareOptions, DiagnoseOptions};
    let history = spec.open_read_only()?;
    let current = history.get(req.run)?;
    let comparison = match req.baseline.resolve(&history, &current.meta)? {
        Some(id) => {
            let base = history.get(&id)?;
            Some(compare::compare(
                &base,
                &current,
                &CompareOptions {
                    seed: req.seed,
                    corpus,
                    ..CompareOptions::default()
                },
            ))
        }
        None => None,
    };
    let runs = recent_runs(&history, &current, req.window)?;
    let accepted_chunks = baseline_chunks(&history, &runs)?;
    let diagnosis = compare::diagnose_runs_with_chunks(
        &runs,
        corpus,
        accepted_chunks.as_ref(),
        &DiagnoseOptions {
            seed: req.seed,
            ..DiagnoseOptions::default()
        },
    );
    Ok(RunReport {
        current,
        comparison,
        diagnosis,
        history: runs,
    })
}

/// The corpus at `path`, when given, its chunks located in `documents` when given.
fn read_corpus(
    path: Option<&Path>,
    documents: Option<&Path>,
) -> Result<Option<veredicto_core::case::Corpus>> {
    let docs = crate::golden::documents(documents)?;
    Ok(match path {
        Some(p) => Some(crate::golden::load_corpus(p, docs.as_ref(), crate::Events::silent())?.0),
        None => None,
    })
}

/// A history copied into another.
#[derive(Debug, Clone)]
pub struct Migrated {
    /// What was copied and verified.
    pub report: veredicto_store::MigrateReport,
    /// The source, as messages show it.
    pub from: String,
    /// The target, as messages show it.
    pub to: String,
}

/// Copies every run of the history at `from` (which must exist) into the one at `to`
/// (created when absent): runs keep their IDs and seals, runs already there are skipped
/// (an interrupted copy is resumed by running it again), everything copied is verified.
/// Progress goes to `events` as runs copied.
pub fn migrate(from: &str, to: &str, events: Events<'_>) -> Result<Migrated> {
    let source = History::open_spec_existing(from)?;
    let target = History::open_spec(to)?;
    let report = veredicto_store::migrate(&source, &target, |done, total| {
        if done % 100 == 0 || done == total {
            events.progress("runs migrated", done as u64, total as u64, done == total);
        }
    })?;
    Ok(Migrated {
        report,
        from: source.path().display().to_string(),
        to: target.path().display().to_string(),
    })
}

/// A history checked.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The history, as messages show it.
    pub path: String,
    /// What the check found.
    pub report: veredicto_store::IntegrityReport,
    /// The digest of the newest seal, if any.
    pub head: Option<String>,
}

/// Checks the history at `spec`: database integrity, append-only guards, incomplete runs,
/// altered audit case files, and every seal.
pub fn check(spec: &HistorySpec) -> Result<Checked> {
    let history = spec.open_existing()?;
    let report = history.check()?;
    let head = history.seals()?.last().map(|s| s.digest.clone());
    Ok(Checked {
        path: history.path().display().to_string(),
        report,
        head,
    })
}

/// The written acceptances of ingestion batches' rejected lines in the history at `spec`
/// (of `batch` only, when given), oldest first; none when there is no history yet.
pub fn acceptances(
    spec: &HistorySpec,
    batch: Option<&str>,
) -> Result<Vec<veredicto_store::GateAcceptance>> {
    if !spec.is_file() {
        return Ok(Vec::new());
    }
    Ok(spec
        .open_read_only()?
        .acceptances(None)?
        .into_iter()
        .filter(|x| batch.is_none_or(|b| x.batch == b))
        .collect())
}
