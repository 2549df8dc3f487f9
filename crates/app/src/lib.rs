//! veredicto's application layer: every pipeline as a library function, with typed
//! settings in and a typed outcome out, for the three front ends (the `veredicto` command
//! line, the Python package, the web workbench). A front end parses its own input into
//! these types, calls one function, and renders the outcome; it never repeats a pipeline.
//!
//! Rules every function here keeps:
//! - nothing prints and nothing exits: messages leave as [`Message`] values through the
//!   caller's [`Events`] (which may also cancel a long pipeline), results leave as values;
//! - nothing reads the command line, the environment, the working folder or the clock:
//!   the caller passes what they give (the time as `created_at` / `as_of`, the folder a git
//!   revision is read from, the environment the settings are resolved from);
//! - errors are [`Error`] values whose message names the file, line and field.

pub mod audit;
pub mod calibrate;
pub mod chat;
pub mod chunk;
pub mod claims;
pub mod corpus;
pub mod drafts;
pub mod embed;
mod error;
pub mod events;
pub mod exam;
pub mod exam_job;
pub mod files;
pub mod gate;
pub mod golden;
pub mod golden_edits;
pub mod history;
pub mod index;
pub mod ingest;
pub mod init;
mod live;
pub mod matrix;
pub mod models;
pub mod project;
pub mod relevance;
pub mod retriever;
pub mod settings;
pub mod signals;
pub mod source;
pub mod stored_vectors;
pub mod trec;
pub mod tune;
pub mod workbench;

pub use error::{Context, Error, Result};
pub use events::{Events, Message, Progress};
pub use exam::{run_exam, ExamOutcome, ExamRequest, Notice, Recording};
pub use history::{Baseline, HistorySpec};
pub use settings::{Clock, Env, FixedClock, Overrides, Settings};
