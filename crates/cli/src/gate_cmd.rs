//! `veredicto gate`: the ingestion gate on an index's latest batch (exit 1 while it has more
//! rejected corpus lines than the policy's `[ingest]` table allows and nobody accepted them
//! in writing, in the index's batch record or in the run history), and `veredicto gate
//! accept`, which writes the acceptance to both.

use crate::printer::ExitStatus;
use std::path::PathBuf;
use veredicto_app::{HistorySpec, Settings};

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum GateFormat {
    Human,
    Json,
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct GateArgs {
    #[command(subcommand)]
    pub command: Option<GateCommand>,
    #[command(flatten)]
    pub check: CheckArgs,
    /// The run history where acceptances are recorded and looked up.
    #[command(flatten)]
    pub history: crate::history_args::HistoryArgs,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The index folder whose latest batch is judged.
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    /// Policy TOML whose `[ingest]` table sets `max_rejected` and/or
    /// `max_rejected_percent`; without it (or without the table) no rejection is allowed.
    #[arg(long, value_name = "POLICY.toml")]
    pub policy: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    pub format: GateFormat,
}

#[derive(Debug, clap::Subcommand)]
pub enum GateCommand {
    /// Accept the latest batch's rejections with a written reason (appended to the run
    /// history and to the index's batch record; earlier acceptances are kept).
    Accept(AcceptArgs),
}

#[derive(Debug, clap::Args)]
pub struct AcceptArgs {
    /// The index folder.
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    /// Why these rejections are acceptable (required, not blank).
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    #[arg(long, value_enum, default_value = "human")]
    pub format: GateFormat,
}

impl GateArgs {
    /// `--policy` and `--history` as settings.
    pub fn overrides(&self) -> veredicto_app::Overrides {
        veredicto_app::Overrides {
            policy: match &self.command {
                None => self.check.policy.clone(),
                Some(GateCommand::Accept(_)) => None,
            },
            ..self.history.overrides()
        }
    }
}

pub fn run(args: GateArgs, settings: &Settings) -> anyhow::Result<ExitStatus> {
    match args.command {
        Some(GateCommand::Accept(a)) => accept(a, settings),
        None => check(args.check, settings),
    }
}

/// The gate's outcome for `index` under the policy file (if any), with the acceptances of
/// its latest batch from the index's batch record and from the run history (when there is
/// one; a history that does not exist yet holds none).
pub fn judge(
    index: &std::path::Path,
    policy: &veredicto_core::gate::IngestPolicy,
    history: &HistorySpec,
) -> anyhow::Result<veredicto_core::gate::GateOutcome> {
    let outcome = veredicto_index::judge_latest_batch(index, policy)?;
    if !history.is_file() {
        return Ok(outcome);
    }
    let manifest = veredicto_index::Manifest::read(index)?;
    let Some(batch) = manifest.batches.last() else {
        return Ok(outcome);
    };
    let key = veredicto_core::gate::batch_fingerprint(&batch.name, &batch.time, &batch.rejected);
    let found: Vec<veredicto_core::gate::Acceptance> = history
        .open_read_only()?
        .acceptances(Some(&key))?
        .into_iter()
        .map(|a| veredicto_core::gate::Acceptance {
            time: a.created_at,
            reason: a.reason,
            rejected: a.rejected,
        })
        .collect();
    Ok(outcome.with_acceptances(&format!("history {}", history.display()), &found))
}

fn check(args: CheckArgs, settings: &Settings) -> anyhow::Result<ExitStatus> {
    let Some(index) = args.index else {
        anyhow::bail!("veredicto gate: --index DIR is required");
    };
    let policy = settings
        .policy_sections(&[
            veredicto_formats::policy::Section::Exam,
            veredicto_formats::policy::Section::Ingest,
        ])?
        .ingest;
    let outcome = judge(&index, &policy, &settings.history)?;
    let name = index.display().to_string();
    let text = match args.format {
        GateFormat::Human => veredicto_report::gate::gate_human(&name, &outcome),
        GateFormat::Json => veredicto_report::gate::gate_json(&name, &outcome),
    };
    crate::output::print_stdout(&text)?;
    Ok(ExitStatus::stop_if(outcome.blocks()))
}

fn accept(args: AcceptArgs, settings: &Settings) -> anyhow::Result<ExitStatus> {
    let reason = args.reason.trim();
    if reason.is_empty() {
        anyhow::bail!("--reason: a written reason is required (got an empty text)");
    }
    let manifest = veredicto_index::Manifest::read(&args.index)?;
    let Some(latest) = manifest.batches.last() else {
        anyhow::bail!("{}: the index has no batch", args.index.display());
    };
    let time = crate::clock::now_rfc3339();
    let reason = veredicto_core::redact::secrets_in_text(reason);
    let rejected = latest.rejected.len();
    // The history first: it is the append-only record the gate trusts wherever the index
    // goes; then the index's own batch record.
    let store = settings.history.open()?;
    let recorded = store.record_acceptance(&veredicto_store::GateAcceptance {
        id: String::new(),
        created_at: time.clone(),
        index: project_relative(&args.index, settings),
        batch: latest.name.clone(),
        batch_fingerprint: veredicto_core::gate::batch_fingerprint(
            &latest.name,
            &latest.time,
            &latest.rejected,
        ),
        reason: reason.clone(),
        rejected,
        rejections: latest.rejected.clone(),
        who: who(&settings.env),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
    })?;
    let batch = veredicto_index::accept_latest_batch(
        &args.index,
        veredicto_core::gate::Acceptance {
            time,
            reason,
            rejected,
        },
        veredicto_index::DEFAULT_LOCK_WAIT,
    )?;
    let text = match args.format {
        GateFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "index": args.index.display().to_string(),
                "batch": batch.name,
                "rejected": rejected,
                "acceptances": batch.acceptances,
                "history": store.path().display().to_string(),
                "history_acceptance": recorded,
            }))?
        ),
        GateFormat::Human => format!(
            "{}: batch {}: {} rejected lines accepted ({} acceptance{} in the batch record); \
             recorded in the history {} as {}\n",
            veredicto_core::redact::escape_control(&args.index.display().to_string()),
            veredicto_core::redact::escape_control(&batch.name),
            rejected,
            batch.acceptances.len(),
            if batch.acceptances.len() == 1 {
                ""
            } else {
                "s"
            },
            veredicto_core::redact::escape_control(&store.path().display().to_string()),
            recorded
        ),
    };
    crate::output::print_stdout(&text)?;
    Ok(ExitStatus::Success)
}

/// The index as recorded in the history: relative to the project's folder (that of
/// veredicto.toml, else the working folder) when inside it, else as given.
fn project_relative(index: &std::path::Path, settings: &Settings) -> String {
    let cwd = &settings.cwd;
    let absolute = cwd.join(index);
    let root = settings
        .project
        .as_ref()
        .and_then(|p| p.parent())
        .map(|p| cwd.join(p))
        .unwrap_or_else(|| cwd.clone());
    let clean = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    match clean(&absolute).strip_prefix(clean(&root)) {
        Ok(rest) if !rest.as_os_str().is_empty() => rest.display().to_string(),
        Ok(_) => ".".to_owned(),
        Err(_) => index.display().to_string(),
    }
}

/// Who accepts: the git user name of the working folder, else `$USER` (never a credential:
/// a value that looks like one is masked, and it is cut short).
fn who(env: &veredicto_app::Env) -> Option<String> {
    let git = std::process::Command::new("git")
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

/// `exam --gate-ingest`: the gate on the examined index; `Some(exit 1)` (with the gate's
/// report on stderr) when it blocks, `None` to go on with the exam.
pub fn gate_before_exam(
    args: &crate::exam_cmd::ExamArgs,
    policy: &veredicto_core::gate::IngestPolicy,
    history: &HistorySpec,
) -> anyhow::Result<Option<ExitStatus>> {
    let dir = match (&args.index, args.retriever.as_deref()) {
        (Some(dir), _) => dir.clone(),
        (None, Some(uri)) if uri.starts_with("index:") => PathBuf::from(&uri["index:".len()..]),
        _ => anyhow::bail!(
            "--gate-ingest: needs the examined index (--index DIR or --retriever index:DIR)"
        ),
    };
    let outcome = judge(&dir, policy, history)?;
    let text = veredicto_report::gate::gate_human(&dir.display().to_string(), &outcome);
    if outcome.blocks() {
        crate::printer::stderr_text(&text);
        return Ok(Some(ExitStatus::Stop));
    }
    if outcome.status == veredicto_core::gate::GateStatus::Accepted {
        // Over the policy but accepted in writing: say so, and where it was found.
        for line in text.lines().take(3) {
            crate::printer::stderr_text(&format!("{line}\n"));
        }
    }
    Ok(None)
}
