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
    #[error("{path}:{line}: field `{field}`: {message}")]
    Invalid {
        path: PathBuf,
        /// 1-based line number; 0 when the problem concerns the whole file.
        line: usize,
        field: String,
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
