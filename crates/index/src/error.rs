//! Errors of the index. Every variant that concerns a file names it (STYLE items 8 and 9).

use std::path::{Path, PathBuf};

/// An error opening, planning, writing or searching an index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A file or folder could not be read, written, synced or renamed.
    #[error("{path}: {error}")]
    Io {
        /// The file or folder concerned.
        path: PathBuf,
        /// The operating system's error, shown in the message, not chained, so that it is
        /// printed once.
        error: std::io::Error,
    },
    /// A file of the index is not what the manifest says it should be (truncated, wrong
    /// size, unparsable line, ...).
    #[error("{path}{}: corrupt index file: {message}", line_suffix(*line))]
    Corrupt {
        /// The file concerned.
        path: PathBuf,
        /// 1-based line number for line-oriented files; 0 when the problem concerns the whole file.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The index folder was written by a newer veredicto with a format this build cannot read.
    #[error(
        "{path}: index format version {found} is newer than this build supports \
         (up to {supported}); upgrade veredicto or rebuild the index"
    )]
    NewerFormat {
        /// The manifest file.
        path: PathBuf,
        /// `format_version` found in the manifest.
        found: u64,
        /// Highest format version this build reads.
        supported: u64,
    },
    /// The index was built with another embedding model than the one given.
    #[error(
        "{path}: the index was built with model {index} but model {given} was given; \
         use the same model, or rebuild the index in full"
    )]
    ModelMismatch {
        /// The manifest file.
        path: PathBuf,
        /// Model fingerprint hash recorded in the index.
        index: String,
        /// Model fingerprint hash given by the caller.
        given: String,
    },
    /// A vector has the wrong number of components.
    #[error("{what}: dimension mismatch: expected {expected}, got {got}")]
    DimensionMismatch {
        /// Which vector (e.g. `query 3`, `vector for chunk "a"`, `index`).
        what: String,
        /// The dimension of the index or of the model.
        expected: usize,
        /// The dimension found.
        got: usize,
    },
    /// A vector holds NaN or infinity, or is all zeros (it cannot be L2-normalised).
    #[error("{what}: {problem}")]
    InvalidVector {
        /// Which vector.
        what: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The number of vectors given to `apply` differs from the number the plan asked for.
    #[error("the plan asked for {expected} vectors to be embedded, but {got} were given")]
    VectorCount {
        /// `Plan::to_embed().len()`.
        expected: usize,
        /// Number of vectors given.
        got: usize,
    },
    /// Two chunks of the new corpus have the same ID.
    #[error("chunk {id:?} appears twice in the corpus (positions {first} and {second}, 0-based)")]
    DuplicateId {
        /// The repeated chunk ID.
        id: String,
        /// Position of its first occurrence.
        first: usize,
        /// Position of the repetition.
        second: usize,
    },
    /// A chunk's metadata cannot be indexed (e.g. a validity date that is not `YYYY-MM-DD`).
    #[error("chunk {id:?}: field `{field}`: {message}")]
    InvalidChunk {
        /// The chunk ID.
        id: String,
        /// The field concerned.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A caller-supplied setting is not acceptable (bad fingerprint hash, dimension 0, ...).
    #[error("{field}: {message}")]
    InvalidArgument {
        /// The setting concerned.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A filter expression could not be parsed.
    #[error("filter {text:?}: {message}")]
    InvalidFilter {
        /// The expression as given.
        text: String,
        /// What is wrong.
        message: String,
    },
    /// Another writer holds the index's lock and did not release it in time.
    #[error(
        "{path}: another writer holds this index's lock ({holder}); gave up after {:.1} s: \
         wait for it to finish, or check that process",
        waited.as_secs_f64()
    )]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it (`PID N`).
        holder: String,
        /// How long this writer waited.
        waited: std::time::Duration,
    },
    /// The index changed on disk after it was opened for this ingest: writing would drop
    /// the other writer's batch.
    #[error(
        "{path}: the index changed since it was opened (another writer committed a batch); \
         open it again and redo the ingest"
    )]
    Conflict {
        /// The manifest file.
        path: PathBuf,
    },
    /// The lexical (BM25) arm could not be built.
    #[error("{path}: building the BM25 arm: {message}")]
    Lexical {
        /// The arm's folder or file concerned.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A lexical (BM25) search on an index that has no BM25 arm.
    #[error(
        "{path}: this index has no BM25 arm (it was ingested without one): ingest it again \
         with a lexical analyser (`veredicto ingest --bm25 english` or `--bm25 spanish`) to \
         add one, or search it with mode=vector"
    )]
    NoLexicalArm {
        /// The manifest file.
        path: PathBuf,
    },
    /// The destination of a write is not usable (e.g. it exists and is not an index folder).
    #[error("{path}: {message}")]
    Destination {
        /// The destination folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn line_suffix(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}")
    }
}

impl IndexError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.to_path_buf(),
            error: source,
        }
    }

    /// A corrupt index file; `line` is 1-based, 0 for the whole file.
    pub fn corrupt(path: &Path, line: usize, message: impl Into<String>) -> Self {
        IndexError::Corrupt {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn argument(field: impl Into<String>, message: impl Into<String>) -> Self {
        IndexError::InvalidArgument {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Result with [`IndexError`].
pub type Result<T, E = IndexError> = std::result::Result<T, E>;
