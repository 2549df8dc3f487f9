//! The run history as the pipelines use it: where it is ([`HistorySpec`]), opening it,
//! which recorded run a new run is compared with ([`Baseline`], the same values in every
//! command), the recent runs the cross-run diagnosis reads, and what a new run records
//! about where it was made.

use std::path::Path;
use std::process::Command;

use veredicto_core::history::{RecordedRun, RunMeta};
use veredicto_store::{History, RunFilter};

use crate::{Error, Result};

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
