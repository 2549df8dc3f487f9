//! Opening an audit target from the command line: a case file, or an audit run in the
//! history `--history` names (`veredicto_app::audit::open`); warnings go to stderr.

use std::path::Path;
use veredicto_app::HistorySpec;

pub use veredicto_app::audit::AuditTarget as Target;

/// A case file when `arg` names an existing file, else an audit run (ID, unique prefix
/// or `latest`) in the history.
pub fn open(arg: &str, history: &HistorySpec) -> anyhow::Result<Target> {
    Ok(veredicto_app::audit::open(
        arg,
        history,
        crate::printer::events(),
    )?)
}

/// A case file with the logs beside it; a torn last record is left out with a warning.
pub fn from_file(path: &Path) -> anyhow::Result<Target> {
    Ok(veredicto_app::audit::open_file(
        path,
        crate::printer::events(),
    )?)
}

/// The warnings of an append, and for a case file also recorded as an audit run in the
/// history, the note that records appended to the file stay out of the run.
pub fn appended(t: &Target, warnings: &[String], history: &HistorySpec) {
    veredicto_app::audit::warn(warnings, crate::printer::events());
    if let Some(note) = veredicto_app::audit::recorded_elsewhere(t, history) {
        crate::printer::status(&note);
    }
}
