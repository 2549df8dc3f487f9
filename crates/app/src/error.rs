//! The application's errors: each library's error, carried whole (its message names the
//! file, line and field), a one-line message for input the application itself refuses, and
//! the context a pipeline adds around a failure ("writing report.html: …"). Every error is
//! an error of the command (exit 2); a gate that says stop is an outcome, not an error.

use std::fmt::Display;

/// Why a pipeline could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Input the application refuses, said in one line.
    #[error("{0}")]
    Message(String),
    /// What the pipeline was doing when `source` happened.
    #[error("{context}")]
    Context {
        /// What was being done (`writing report.html`).
        context: String,
        /// What went wrong.
        #[source]
        source: Box<Error>,
    },
    /// The caller stopped the pipeline.
    #[error("cancelled")]
    Cancelled,
    /// A file of the user's that does not parse.
    #[error(transparent)]
    Format(#[from] veredicto_formats::FormatError),
    /// The run history.
    #[error(transparent)]
    Store(#[from] veredicto_store::StoreError),
    /// A retriever.
    #[error(transparent)]
    Retrieve(Box<veredicto_retrieve::RetrieveError>),
    /// veredicto's own index.
    #[error(transparent)]
    Index(#[from] veredicto_index::IndexError),
    /// A model (local or over HTTP).
    #[error(transparent)]
    Embed(#[from] veredicto_embed::EmbedError),
    /// The grounding audit.
    #[error(transparent)]
    Grounding(#[from] veredicto_grounding::GroundingError),
    /// Suggestions of a model or a judge.
    #[error(transparent)]
    Suggest(#[from] veredicto_grounding::SuggestError),
    /// A judge's reply that could not be read: the suggestions that could are in it (and
    /// were stored).
    #[error(transparent)]
    UnreadableReply(Box<crate::audit::suggest::UnreadableReply>),
    /// An audit target (a case file or a recorded audit run).
    #[error(transparent)]
    Target(#[from] crate::audit::TargetError),
    /// Reading or writing a file, or a pipe.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// JSON (de)serialisation of the application's own values.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl From<veredicto_retrieve::RetrieveError> for Error {
    fn from(e: veredicto_retrieve::RetrieveError) -> Self {
        match e {
            veredicto_retrieve::RetrieveError::Cancelled => Error::Cancelled,
            e => Error::Retrieve(Box::new(e)),
        }
    }
}

impl From<veredicto_index::records::RecordError> for Error {
    fn from(e: veredicto_index::records::RecordError) -> Self {
        match e {
            veredicto_index::records::RecordError::Index(e) => Error::Index(e),
            veredicto_index::records::RecordError::Record(e) => Error::Format(e),
        }
    }
}

impl Error {
    /// A one-line error.
    pub fn msg(text: impl Display) -> Error {
        Error::Message(text.to_string())
    }

    /// Whether the error, or one it wraps, is a closed pipe (a reader that went away).
    pub fn is_broken_pipe(&self) -> bool {
        let mut e: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(err) = e {
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return true;
                }
            }
            e = err.source();
        }
        false
    }
}

/// The application's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Context around a failure, as `anyhow` gives it: the message says what was being done,
/// the failure follows it.
pub trait Context<T> {
    /// Wraps the error with `context`.
    fn context(self, context: impl Display) -> Result<T>;
    /// Wraps the error with the context `f` gives (computed only on failure).
    fn with_context<C: Display>(self, f: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl Display) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: context.to_string(),
            source: Box::new(e.into()),
        })
    }

    fn with_context<C: Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| Error::Context {
            context: f().to_string(),
            source: Box::new(e.into()),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl Display) -> Result<T> {
        self.ok_or_else(|| Error::msg(context))
    }

    fn with_context<C: Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.ok_or_else(|| Error::msg(f()))
    }
}

/// Returns early with a one-line [`Error::Message`].
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::Error::msg(format!($($arg)*)))
    };
}

/// Returns early with a one-line [`Error::Message`] unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            $crate::bail!($($arg)*);
        }
    };
}
