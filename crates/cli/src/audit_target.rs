//! Opening an audit target (`veredicto_grounding::target`) from the command line: a case
//! file, or an audit run in the history `--history` names. Warnings go to stderr.

use crate::history_args::HistoryArgs;
use anyhow::bail;
use std::path::Path;
use veredicto_app::audit::target::{self, TargetRef};

pub use veredicto_app::audit::AuditTarget as Target;

/// A case file when `arg` names an existing file, else an audit run (ID, unique prefix
/// or `latest`) in the history.
pub fn open(arg: &str, history: &HistoryArgs) -> anyhow::Result<Target> {
    match target::resolve(arg)? {
        TargetRef::File(path) => from_file(&path),
        TargetRef::Run(reference) => {
            if !history.history.is_file() {
                bail!(
                    "`{arg}` is not a case file, and there is no history at {} to find an audit run in \
                     (record one with `veredicto audit record CASES`, or pass --history)",
                    history.history.display()
                );
            }
            Ok(Target::from_run(history.open_existing()?, &reference)?)
        }
    }
}

/// A case file with the logs beside it; a torn last record is left out with a warning.
pub fn from_file(path: &Path) -> anyhow::Result<Target> {
    let t = Target::from_file(path)?;
    warn(&t.warnings);
    Ok(t)
}

/// For a case file also recorded as an audit run in the history: the note that records
/// appended to the file stay out of the run.
pub fn recorded_elsewhere(t: &Target, history: &HistoryArgs) -> Option<String> {
    if t.run_meta().is_some() || !history.history.is_file() {
        return None;
    }
    let h = history.open_existing().ok()?;
    t.recorded_elsewhere(&h, &history.history.display())
}

/// Prints the warnings of a read or an append to stderr (shown even under `-q`).
pub fn warn(warnings: &[String]) {
    for w in warnings {
        crate::printer::stderr_text(&format!("{w}\n"));
    }
}
