//! Reading and writing veredicto's files.
//!
//! Every reader accepts UTF-8 with or without a byte-order mark and LF or CRLF line ends,
//! and reports problems as [`FormatError`] naming file, line and field.

pub mod config;
pub mod corpus;
pub mod documents;
pub mod error;
pub mod golden;
pub mod golden_sqlite;
pub mod json;
pub mod jsonl;
pub mod locate;
pub mod matrix;
pub mod notes;
pub mod policy;
pub mod run;
pub mod signals;
pub mod text;
pub mod traces;
pub mod trec;

pub use error::{FormatError, Result};
