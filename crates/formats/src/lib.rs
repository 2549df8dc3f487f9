//! Reading and writing veredicto's files.
//!
//! Every reader accepts UTF-8 with or without a byte-order mark and LF or CRLF line ends,
//! and reports problems as [`FormatError`] naming file, line and field.

pub mod error;
pub mod text;
pub mod trec;

pub use error::{FormatError, Result};
