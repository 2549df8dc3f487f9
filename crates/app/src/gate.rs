//! The ingestion gate: an index's latest batch judged under the policy's `[ingest]` table,
//! with the written acceptances of its rejections found in the index's batch record and in
//! the run history ([`judge`]); and the acceptance itself, written to both ([`accept`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use veredicto_core::gate::{Acceptance, GateOutcome, IngestPolicy};
use veredicto_core::history::GateAcceptance;
use veredicto_index::BatchRecord;

use crate::{Env, Error, HistorySpec, Result};

/// The gate's outcome for `index` under `policy`, with the acceptances of its latest batch
/// from the index's batch record and from the run history (when there is one; a history
/// that does not exist yet holds none).
pub fn judge(index: &Path, policy: &IngestPolicy, history: &HistorySpec) -> Result<GateOutcome> {
    let outcome = veredicto_index::judge_latest_batch(index, policy)?;
    if !history.is_file() {
        return Ok(outcome);
    }
    let manifest = veredicto_index::Manifest::read(index)?;
    let Some(batch) = manifest.batches.last() else {
        return Ok(outcome);
    };
    let key = veredicto_core::gate::batch_fingerprint(&batch.name, &batch.time, &batch.rejected);
    let found: Vec<Acceptance> = history
        .open_read_only()?
        .acceptances(Some(&key))?
        .into_iter()
        .map(|a| Acceptance {
            time: a.created_at,
            reason: a.reason,
            rejected: a.rejected,
        })
        .collect();
    Ok(outcome.with_acceptances(&format!("history {}", history.display()), &found))
}

/// An acceptance of the latest batch's rejected lines.
#[derive(Debug, Clone, Default)]
pub struct AcceptRequest {
    /// The index folder.
    pub index: PathBuf,
    /// Why these rejections are acceptable (not blank; a secret in it is masked).
    pub reason: String,
    /// When (RFC 3339; the caller reads the clock).
    pub time: String,
    /// The index as the history records it ([`project_relative`]).
    pub index_as_recorded: String,
    /// Who accepts ([`who`]).
    pub who: Option<String>,
    /// The version of the tool recording it.
    pub tool_version: String,
}

/// What [`accept`] wrote.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The batch record after the acceptance (with every acceptance so far).
    pub batch: BatchRecord,
    /// How many rejected lines were accepted.
    pub rejected: usize,
    /// The history written to, as messages may show it.
    pub history: String,
    /// The ID of the acceptance in the history.
    pub history_acceptance: String,
}

/// Accepts the latest batch's rejections: first in the history (the append-only record the
/// gate trusts wherever the index goes), then in the index's own batch record.
pub fn accept(request: &AcceptRequest, history: &HistorySpec) -> Result<Accepted> {
    let reason = request.reason.trim();
    if reason.is_empty() {
        return Err(Error::msg(
            "--reason: a written reason is required (got an empty text)",
        ));
    }
    let manifest = veredicto_index::Manifest::read(&request.index)?;
    let Some(latest) = manifest.batches.last() else {
        return Err(Error::msg(format!(
            "{}: the index has no batch",
            request.index.display()
        )));
    };
    let reason = veredicto_core::redact::secrets_in_text(reason);
    let rejected = latest.rejected.len();
    let store = history.open()?;
    let recorded = store.record_acceptance(&GateAcceptance {
        id: String::new(),
        created_at: request.time.clone(),
        index: request.index_as_recorded.clone(),
        batch: latest.name.clone(),
        batch_fingerprint: veredicto_core::gate::batch_fingerprint(
            &latest.name,
            &latest.time,
            &latest.rejected,
        ),
        reason: reason.clone(),
        rejected,
        rejections: latest.rejected.clone(),
        who: request.who.clone(),
        tool_version: request.tool_version.clone(),
    })?;
    let batch = veredicto_index::accept_latest_batch(
        &request.index,
        Acceptance {
            time: request.time.clone(),
            reason,
            rejected,
        },
        veredicto_index::DEFAULT_LOCK_WAIT,
    )?;
    Ok(Accepted {
        batch,
        rejected,
        history: store.path().display().to_string(),
        history_acceptance: recorded,
    })
}

/// The index as recorded in the history: relative to the project's folder (that of
/// `project`, the project file, else `cwd`) when inside it, else as given.
pub fn project_relative(index: &Path, cwd: &Path, project: Option<&Path>) -> String {
    let absolute = cwd.join(index);
    let root = project
        .and_then(|p| p.parent())
        .map(|p| cwd.join(p))
        .unwrap_or_else(|| cwd.to_path_buf());
    let clean = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    match clean(&absolute).strip_prefix(clean(&root)) {
        Ok(rest) if !rest.as_os_str().is_empty() => rest.display().to_string(),
        Ok(_) => ".".to_owned(),
        Err(_) => index.display().to_string(),
    }
}

/// Who accepts: the git user name in `cwd`, else `$USER` of `env` (never a credential: a
/// value that looks like one is masked, and it is cut short).
pub fn who(cwd: &Path, env: &Env) -> Option<String> {
    let git = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["config", "user.name"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let name = git.or_else(|| {
        ["USER", "USERNAME", "LOGNAME"]
            .iter()
            .find_map(|v| env.get(v).filter(|s| !s.trim().is_empty()))
    })?;
    Some(veredicto_core::redact::short(
        &veredicto_core::redact::secrets_in_text(name.trim()),
    ))
}
