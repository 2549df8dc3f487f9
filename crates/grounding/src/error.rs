//! Errors of the grounding library. Every one names its file; validation issues also name
//! the YAML/JSON path, the field and (when it can be located) the line.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum GroundingError {
    /// The I/O error is shown in the message, not chained, so that it is printed once.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: {} invalid field(s):\n{}", issues.len(), issues.iter().map(|i| format!("  {i}")).collect::<Vec<_>>().join("\n"))]
    Invalid { path: PathBuf, issues: Vec<Issue> },
    #[error("{path}: {message}")]
    Package { path: PathBuf, message: String },
    /// A file read by the formats library (a policy file).
    #[error(transparent)]
    Format(#[from] veredicto_formats::FormatError),
}

impl GroundingError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        GroundingError::Io {
            path: path.into(),
            error: source,
        }
    }
}

/// One validation problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// `cases[0].answers[1].claims[2].citations[0]`
    pub yaml_path: String,
    pub field: String,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for Issue {
    /// One line: a message that quotes a huge or hostile value is cut and escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = veredicto_core::redact::message(&self.message);
        match self.line {
            Some(l) => write!(
                f,
                "line {l}: {} ({}): {message}",
                self.yaml_path, self.field
            ),
            None => write!(f, "{} ({}): {message}", self.yaml_path, self.field),
        }
    }
}
