//! veredicto's domain types and the acceptance exam.
//!
//! Pure: no I/O, no clock, no threads. Everything here is a function of its inputs, so the
//! same inputs always give the same report.

pub mod aggregation;
pub mod boost;
pub mod case;
pub mod compare;
pub mod diagnosis;
pub mod evidence;
pub mod exam;
pub mod fingerprint;
pub mod fusion;
pub mod gate;
pub mod history;
pub mod hygiene;
pub mod measure;
pub mod policy;
pub mod redact;
pub mod retrieval;
pub mod run;
pub mod signals;
pub mod snapshot;
pub mod time;
pub mod traces;
pub mod trec;
pub mod tune;
