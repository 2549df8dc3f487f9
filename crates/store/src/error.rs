//! The store's errors. Every variant names the history database it is about (STYLE items 8
//! and 9), so a message printed by the CLI says which file to look at.

use std::path::PathBuf;

/// Everything that can go wrong opening, writing or reading a run history.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The directory that should hold the database could not be created.
    #[error("{path}: cannot create the history's directory: {error}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error. Shown in the message, not chained, so that it is printed once.
        error: std::io::Error,
    },

    /// [`History::open_existing`](crate::History::open_existing) found no database.
    #[error("{path}: no run history here (record a run first)")]
    Missing {
        /// The database file.
        path: PathBuf,
    },

    /// SQLite failed while doing `operation`.
    #[error("{path}: {operation}: {error}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What the store was doing (`recording a run`, `listing runs`...).
        operation: &'static str,
        /// SQLite's error. Shown in the message, not chained, so that it is printed once.
        error: rusqlite::Error,
    },

    /// PostgreSQL failed while doing `operation`.
    #[error("{path}: {operation}: {}", postgres_message(source))]
    Postgres {
        /// The database URL, without credentials.
        path: PathBuf,
        /// What the store was doing.
        operation: &'static str,
        /// The client's error.
        source: postgres::Error,
    },

    /// The PostgreSQL server could not be reached or refused the connection.
    #[error(
        "{path}: cannot connect to PostgreSQL at {host}, database {database} \
         ({attempts} attempt{}): {message}",
        if *attempts == 1 { "" } else { "s" }
    )]
    Connect {
        /// The database URL, without credentials.
        path: PathBuf,
        /// Host and port.
        host: String,
        /// Database name.
        database: String,
        /// How many times it tried.
        attempts: u32,
        /// The last error, without credentials.
        message: String,
    },

    /// A history URL that cannot be parsed.
    #[error("{path}: not a usable PostgreSQL URL: {message}")]
    BadUrl {
        /// The URL, without credentials.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// `history migrate` cannot copy a run without breaking the target's order, or the copy
    /// does not match its source.
    #[error("{path}: {message}")]
    Migrate {
        /// The target history.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },

    /// Another process held the write lock for longer than the busy timeout.
    #[error(
        "{path}: {operation}: the history is locked by another process \
         (waited {waited_ms} ms)"
    )]
    Locked {
        /// The database file.
        path: PathBuf,
        /// What the store was doing.
        operation: &'static str,
        /// How long it waited for the lock.
        waited_ms: u64,
    },

    /// The database was written by a newer veredicto whose schema this one does not know.
    #[error(
        "{path}: the history has schema version {found}, newer than the {supported} this \
         veredicto understands; upgrade veredicto (the file was not modified)"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// `PRAGMA user_version` of the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },

    /// The file is a SQLite database, but not a veredicto history.
    #[error(
        "{path}: not a veredicto run history (application_id {application_id:#010x}, \
         user_version {user_version}); choose another path"
    )]
    NotAHistory {
        /// The database file.
        path: PathBuf,
        /// `PRAGMA application_id` of the file.
        application_id: i64,
        /// `PRAGMA user_version` of the file.
        user_version: i64,
    },

    /// No run has this ID, or starts with this prefix.
    #[error("{path}: no run matches `{query}`")]
    RunNotFound {
        /// The database file.
        path: PathBuf,
        /// What was asked for.
        query: String,
    },

    /// No grounding audit run has this ID, or starts with this prefix.
    #[error("{path}: no audit run matches `{query}` (record one with `veredicto audit record`)")]
    AuditRunNotFound {
        /// The database file.
        path: PathBuf,
        /// What was asked for.
        query: String,
    },

    /// Several runs start with this prefix.
    #[error(
        "{path}: run prefix `{prefix}` is ambiguous: it matches {} and more; give more characters",
        candidates.join(", ")
    )]
    AmbiguousPrefix {
        /// The database file.
        path: PathBuf,
        /// The prefix given.
        prefix: String,
        /// The first matching IDs, newest first.
        candidates: Vec<String>,
    },

    /// A run reference that cannot be a run ID or prefix (IDs use Crockford base32).
    #[error(
        "{path}: `{query}` is not a run ID, a prefix of one, or `latest` \
         (run IDs are 26 characters of 0-9 and A-Z without I, L, O, U)"
    )]
    BadRunRef {
        /// The database file.
        path: PathBuf,
        /// What was given.
        query: String,
    },

    /// A time that is not RFC 3339 (or, for filters, a `YYYY-MM-DD` date).
    #[error(
        "{path}: {field}: `{}` is not an RFC 3339 time or a YYYY-MM-DD date",
        veredicto_core::redact::short(value)
    )]
    BadTime {
        /// The database file.
        path: PathBuf,
        /// Which field (`created_at`, `since`, `until`).
        field: &'static str,
        /// The value given.
        value: String,
    },

    /// [`RunMeta::id`](veredicto_core::history::RunMeta) was set: the history assigns IDs.
    #[error(
        "{path}: the run already has ID `{id}`; the history assigns run IDs, so RunMeta.id \
         must be empty (a replay is recorded as a new run)"
    )]
    IdGiven {
        /// The database file.
        path: PathBuf,
        /// The ID found in the metadata.
        id: String,
    },

    /// The run's metadata and its report disagree on a fingerprint.
    #[error("{path}: run metadata and report disagree on {field}: `{meta}` vs `{report}`")]
    Inconsistent {
        /// The database file.
        path: PathBuf,
        /// Which field.
        field: &'static str,
        /// The metadata's value.
        meta: String,
        /// The report's value.
        report: String,
    },

    /// Part of the run cannot be stored so that it reads back identically (for example a
    /// NaN, which JSON cannot hold). Nothing was written.
    #[error(
        "{path}: cannot record the run: its {what} does not survive a JSON round trip: {error}"
    )]
    Unstorable {
        /// The database file.
        path: PathBuf,
        /// `report`, `config` or `latency`.
        what: &'static str,
        /// The serialisation error. Shown in the message, not chained, so that it is printed once.
        error: serde_json::Error,
    },

    /// A stored value could not be read back.
    #[error("{path}: run {run}: stored {what} is unreadable: {message}")]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// The run ID.
        run: String,
        /// Which value.
        what: &'static str,
        /// What went wrong.
        message: String,
    },

    /// A stored value is not of the type the store wrote there (the database was edited).
    #[error("{path}: {operation}: a stored value is unreadable: {message}")]
    BadValue {
        /// The database file.
        path: PathBuf,
        /// What the store was doing.
        operation: &'static str,
        /// Which column, what it holds.
        message: String,
    },

    /// A value given to the history is not acceptable (an empty reason, counts that do not
    /// add up). Nothing was written.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The database file.
        path: PathBuf,
        /// Which field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },

    /// The operating system's random source failed (needed for run IDs).
    #[error("{path}: cannot draw random bits for a run ID: {message}")]
    NoRandomness {
        /// The database file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
}

/// A PostgreSQL error with the server's message, detail and hint when there are some, on
/// one line and without credentials.
fn postgres_message(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => {
            let mut t = format!(
                "{}: {} (SQLSTATE {})",
                db.severity(),
                db.message(),
                db.code().code()
            );
            if let Some(d) = db.detail() {
                t.push_str(&format!("; {d}"));
            }
            if let Some(h) = db.hint() {
                t.push_str(&format!("; hint: {h}"));
            }
            t
        }
        None => e.to_string(),
    };
    veredicto_core::redact::escape_control(&veredicto_core::redact::secrets_in_text(&text))
}
