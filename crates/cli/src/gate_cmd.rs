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
    let outcome = veredicto_app::gate::judge(&index, &policy, &settings.history)?;
    let name = index.display().to_string();
    let text = match args.format {
        GateFormat::Human => veredicto_report::gate::gate_human(&name, &outcome),
        GateFormat::Json => veredicto_report::gate::gate_json(&name, &outcome),
    };
    crate::output::print_stdout(&text)?;
    Ok(ExitStatus::stop_if(outcome.blocks()))
}

fn accept(args: AcceptArgs, settings: &Settings) -> anyhow::Result<ExitStatus> {
    let done = veredicto_app::gate::accept(
        &veredicto_app::gate::AcceptRequest {
            index_as_recorded: veredicto_app::gate::project_relative(
                &args.index,
                &settings.cwd,
                settings.project.as_deref(),
            ),
            index: args.index.clone(),
            reason: args.reason.clone(),
            time: crate::clock::now_rfc3339(),
            who: veredicto_app::gate::who(&settings.cwd, &settings.env),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        &settings.history,
    )?;
    let (batch, rejected) = (&done.batch, done.rejected);
    let text = match args.format {
        GateFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "index": args.index.display().to_string(),
                "batch": batch.name,
                "rejected": rejected,
                "acceptances": batch.acceptances,
                "history": done.history,
                "history_acceptance": done.history_acceptance,
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
            veredicto_core::redact::escape_control(&done.history),
            done.history_acceptance
        ),
    };
    crate::output::print_stdout(&text)?;
    Ok(ExitStatus::Success)
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
    let outcome = veredicto_app::gate::judge(&dir, policy, history)?;
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
