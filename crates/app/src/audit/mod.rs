//! The grounding audit's pipelines: opening what an audit works on ([`target`]: a case
//! file, or an audit run in the history), and the commands over it.

pub mod target;

pub use target::{AuditTarget, TargetError, TargetRef};
