//! `--history`: where the run history lives (the history itself, the baseline and the
//! provenance of a run are `veredicto_app::history`).

use veredicto_store::History;

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

/// Where the history is ([`veredicto_app::HistorySpec`]), resolved from `--history`, then
/// `VEREDICTO_HISTORY`, then the project file, then the default file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySpec(pub veredicto_app::HistorySpec);

impl std::str::FromStr for HistorySpec {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if !s.is_empty() {
            return Ok(HistorySpec(veredicto_app::HistorySpec::chosen(s)));
        }
        // A broken project file is reported by the command itself, once, on one line.
        Ok(HistorySpec(match crate::project::settings() {
            Ok(settings) if settings.history.is_some() => {
                veredicto_app::HistorySpec::chosen(settings.history_or_default())
            }
            Ok(settings) => veredicto_app::HistorySpec::default_at(settings.history_or_default()),
            Err(_) => veredicto_app::HistorySpec::default(),
        }))
    }
}

impl std::ops::Deref for HistorySpec {
    type Target = veredicto_app::HistorySpec;
    fn deref(&self) -> &veredicto_app::HistorySpec {
        &self.0
    }
}

impl HistoryArgs {
    /// The history the arguments name.
    pub fn spec(&self) -> veredicto_app::HistorySpec {
        self.history.0.clone()
    }

    /// Opens (creating) the history for recording.
    pub fn open(&self) -> anyhow::Result<History> {
        Ok(self.history.open()?)
    }

    /// Opens an existing history for commands that only read (works in a read-only folder).
    pub fn open_read_only(&self) -> anyhow::Result<History> {
        Ok(self.history.open_read_only()?)
    }
}

pub use veredicto_app::history::{git_revision, DEFAULT_WINDOW};
pub use veredicto_app::Baseline;
