//! `--history`: where the run history lives (the history itself, the baseline and the
//! provenance of a run are `veredicto_app::history`). The flag is a plain string: where the
//! history is is resolved with the other settings, after parsing
//! ([`veredicto_app::Settings::history`]).

use veredicto_app::Overrides;

#[derive(Debug, Clone, clap::Args)]
pub struct HistoryArgs {
    /// Run history: an SQLite file, or a PostgreSQL database
    /// (postgres://user@host:port/db, read as libpq reads it; the password from PGPASSWORD
    /// or ~/.pgpass, never in the URL of a shared command line; TLS with
    /// ?sslmode=verify-full&sslrootcert=FILE). Default: $VEREDICTO_HISTORY, else `history` of
    /// veredicto.toml, else .veredicto/history.db beside veredicto.toml (or in the working
    /// folder without one).
    #[arg(long, value_name = "PATH|URL", global = true)]
    pub history: Option<String>,
}

impl HistoryArgs {
    /// The history the flag names (an empty value names none).
    pub fn flag(&self) -> Option<String> {
        self.history.clone().filter(|h| !h.is_empty())
    }

    /// The flag as a setting over the environment and the project file.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            history: self.flag(),
            ..Overrides::default()
        }
    }
}

pub use veredicto_app::history::{git_revision, DEFAULT_WINDOW};
pub use veredicto_app::Baseline;
