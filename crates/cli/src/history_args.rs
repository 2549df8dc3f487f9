//! Where the run history lives, and what a new run records about its provenance.

use std::path::{Path, PathBuf};
use std::process::Command;
use veredicto_core::history::RunMeta;
use veredicto_store::History;

/// The default history file, relative to the working directory.
pub const DEFAULT_HISTORY: &str = ".veredicto/history.db";

#[derive(Debug, Clone, clap::Args)]
pub struct HistoryArgs {
    /// Run history database (SQLite).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_HISTORY, global = true)]
    pub history: PathBuf,
}

impl HistoryArgs {
    /// Opens (creating) the history for recording.
    pub fn open(&self) -> anyhow::Result<History> {
        Ok(History::open(&self.history)?)
    }

    /// Opens an existing history for reading.
    pub fn open_existing(&self) -> anyhow::Result<History> {
        Ok(History::open_existing(&self.history)?)
    }

    /// Opens an existing history for commands that only read (works in a read-only folder).
    pub fn open_read_only(&self) -> anyhow::Result<History> {
        Ok(History::open_read_only(&self.history)?)
    }
}

/// The baseline run `which` names for `run`: `previous` (the last earlier run with the same
/// golden set and policy), `last-accepted` (the last accepted run before it), or a run ID /
/// unique prefix. `None` when the history holds no such run yet.
pub fn baseline(history: &History, run: &RunMeta, which: &str) -> anyhow::Result<Option<String>> {
    Ok(match which {
        "previous" => history.previous_compatible(run)?.map(|s| s.id),
        "last-accepted" => history.last_accepted(Some(&run.id), None)?.map(|s| s.id),
        other => Some(history.resolve(other)?),
    })
}

/// The git revision of the working directory (`HEAD`, with `-dirty` when the tree has
/// changes), or `None` outside a git work tree or without git.
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
