//! Where the run history lives, and what a new run records about its provenance.

use std::path::Path;
use std::process::Command;
use veredicto_core::history::RunMeta;
use veredicto_store::History;

/// The default history file without a project file, relative to the working folder.
pub const DEFAULT_HISTORY: &str = ".veredicto/history.db";

#[derive(Debug, Clone, clap::Args)]
pub struct HistoryArgs {
    /// Run history: an SQLite file, or a PostgreSQL database
    /// (postgres://user@host:port/db, read as libpq reads it; the password from PGPASSWORD
    /// or ~/.pgpass, never in the URL of a shared command line; TLS with
    /// ?sslmode=verify-full&sslrootcert=FILE). Default: $VEREDICTO_HISTORY, else `history` of
    /// veredicto.toml, else .veredicto/history.db beside veredicto.toml (or in the working
    /// folder without one).
    #[arg(
        long,
        value_name = "PATH|URL",
        default_value = "",
        hide_default_value = true,
        global = true
    )]
    pub history: HistorySpec,
}

/// Where the history is: a file path or a `postgres://` URL, resolved from `--history`,
/// then `VEREDICTO_HISTORY`, then the project file, then the default file.
///
/// `explicit` is false only for the default file (no flag, no variable, no `history` in the
/// project file): a run missing from a history the user chose is a finding, while a default
/// history that does not exist or lacks a run is only "not checked".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySpec {
    spec: String,
    explicit: bool,
}

impl std::str::FromStr for HistorySpec {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if !s.is_empty() {
            return Ok(HistorySpec {
                spec: s.to_owned(),
                explicit: true,
            });
        }
        // A broken project file is reported by the command itself, once, on one line.
        Ok(match crate::project::settings() {
            Ok(settings) => HistorySpec {
                spec: settings.history_or_default(),
                explicit: settings.history.is_some(),
            },
            Err(_) => HistorySpec {
                spec: DEFAULT_HISTORY.to_owned(),
                explicit: false,
            },
        })
    }
}

impl HistorySpec {
    /// The path or URL as given (with any password: never print it; see [`Self::display`]).
    pub fn as_str(&self) -> &str {
        &self.spec
    }

    /// Whether the user chose this history (flag, `VEREDICTO_HISTORY` or the project file's
    /// `history`) rather than getting the default file.
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
        if veredicto_store::is_postgres_url(&self.spec) {
            veredicto_core::redact::url(&self.spec)
        } else {
            self.spec.clone()
        }
    }
}

impl HistoryArgs {
    /// Opens (creating) the history for recording.
    pub fn open(&self) -> anyhow::Result<History> {
        Ok(History::open_spec(self.history.as_str())?)
    }

    /// Opens an existing history for reading.
    pub fn open_existing(&self) -> anyhow::Result<History> {
        Ok(History::open_spec_existing(self.history.as_str())?)
    }

    /// Opens an existing history for commands that only read (works in a read-only folder).
    pub fn open_read_only(&self) -> anyhow::Result<History> {
        Ok(History::open_spec_read_only(self.history.as_str())?)
    }
}

/// Runs of history the cross-run diagnosis and the trends look at, in every command.
pub const DEFAULT_WINDOW: usize = 20;

/// `--baseline`, the same values in every command: `previous` (the last earlier run with
/// the same golden set and policy), `last-accepted` (the last accepted run before it),
/// `none` (no comparison), or a run ID / unique prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Baseline {
    Previous,
    LastAccepted,
    None,
    Run(String),
}

impl std::str::FromStr for Baseline {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
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
    pub fn check(&self, history: &History) -> anyhow::Result<()> {
        if let Baseline::Run(id) = self {
            history
                .resolve(id)
                .map_err(|e| anyhow::anyhow!("--baseline {id}: {e}"))?;
        }
        Ok(())
    }
}

/// The baseline run `which` names for `run`; `None` when the history holds no such run yet
/// or `which` is `none`.
pub fn baseline_of(
    history: &History,
    run: &RunMeta,
    which: &Baseline,
) -> anyhow::Result<Option<String>> {
    Ok(match which {
        Baseline::Previous => history.previous_compatible(run)?.map(|s| s.id),
        Baseline::LastAccepted => history.last_accepted(Some(&run.id), None)?.map(|s| s.id),
        Baseline::None => None,
        Baseline::Run(other) => Some(history.resolve(other)?),
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
