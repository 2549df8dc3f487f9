//! Errors that name the file, the line and the field (STYLE item 9).

use std::path::{Path, PathBuf};

/// An error reading one of veredicto's input files.
///
/// Every variant names the file; parse errors also name the 1-based line and the field, so
/// the CLI can print a one-line message and exit with code 2.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The file could not be opened or read.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        /// Shown in the message, not chained, so that it is printed once.
        error: std::io::Error,
    },
    /// A line (or, for TOML, a key) holds a value that is not acceptable.
    /// The field and the message are cut to a readable length and control characters in
    /// them escaped (a value from the file may be megabytes long or hold terminal escapes).
    #[error(
        "{path}:{line}: field `{}`: {}",
        veredicto_core::redact::short(field),
        veredicto_core::redact::message(message)
    )]
    Invalid {
        path: PathBuf,
        /// 1-based line number; 0 when the problem concerns the whole file.
        line: usize,
        field: String,
        message: String,
    },
    /// A cell of a table (a golden set kept in SQLite) holds a value that is not acceptable.
    #[error(
        "{path}: table `{}`, row {row}, column `{}`: {}",
        veredicto_core::redact::short(table),
        veredicto_core::redact::short(column),
        veredicto_core::redact::message(message)
    )]
    Row {
        path: PathBuf,
        table: String,
        /// The rowid (a view's rows: their position, from 1); 0 for the whole table.
        row: i64,
        column: String,
        message: String,
    },
}

impl FormatError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        FormatError::Io {
            path: path.to_path_buf(),
            error: source,
        }
    }

    pub fn invalid(
        path: &Path,
        line: usize,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        FormatError::Invalid {
            path: path.to_path_buf(),
            line,
            field: field.into(),
            message: message.into(),
        }
    }
}

pub type Result<T, E = FormatError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A 10 MB value in a message made a 10 MB stderr line; ESC in it reached the terminal.
    #[test]
    fn messages_quoting_huge_or_hostile_values_are_cut_and_escaped() {
        let big = format!("unknown chunk `{}\u{1b}[2J`", "x".repeat(10_000_000));
        let e = FormatError::invalid(Path::new("g.jsonl"), 3, "expected", big).to_string();
        assert!(
            e.starts_with("g.jsonl:3: field `expected`: unknown chunk `xxx"),
            "{e}"
        );
        assert!(e.len() < 1000, "{}", e.len());
        assert!(e.contains("characters cut") && !e.contains('\u{1b}'), "{e}");
    }
}
