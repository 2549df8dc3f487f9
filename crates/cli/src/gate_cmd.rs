//! `veredicto gate`: the ingestion gate on an index's latest batch (exit 1 while it has more
//! rejected corpus lines than the policy's `[ingest]` table allows and nobody accepted them
//! in writing), and `veredicto gate accept`.

use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Accept the latest batch's rejections with a written reason (appended to the
    /// index's batch record; earlier acceptances are kept).
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

pub fn run(args: GateArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(GateCommand::Accept(a)) => accept(a),
        None => check(args.check),
    }
}

/// The gate's outcome for `index` under the policy file (if any).
pub fn judge(
    index: &std::path::Path,
    policy: Option<&std::path::Path>,
) -> anyhow::Result<veredicto_core::gate::GateOutcome> {
    let policy = match policy {
        Some(p) => veredicto_formats::policy::read_ingest_policy(p)?,
        None => Default::default(),
    };
    Ok(veredicto_index::judge_latest_batch(index, &policy)?)
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let Some(index) = args.index else {
        anyhow::bail!("veredicto gate: --index DIR is required");
    };
    let outcome = judge(&index, args.policy.as_deref())?;
    let name = index.display().to_string();
    let text = match args.format {
        GateFormat::Human => veredicto_report::gate::gate_human(&name, &outcome),
        GateFormat::Json => veredicto_report::gate::gate_json(&name, &outcome),
    };
    crate::output::print_stdout(&text)?;
    Ok(if outcome.blocks() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn accept(args: AcceptArgs) -> anyhow::Result<ExitCode> {
    let reason = args.reason.trim();
    if reason.is_empty() {
        anyhow::bail!("--reason: a written reason is required (got an empty text)");
    }
    let manifest = veredicto_index::Manifest::read(&args.index)?;
    let rejected = manifest.batches.last().map_or(0, |b| b.rejected.len());
    let batch = veredicto_index::accept_latest_batch(
        &args.index,
        veredicto_core::gate::Acceptance {
            time: crate::clock::now_rfc3339(),
            reason: veredicto_core::redact::secrets_in_text(reason),
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
            }))?
        ),
        GateFormat::Human => format!(
            "{}: batch {}: {} rejected lines accepted ({} acceptance{} recorded)\n",
            veredicto_core::redact::escape_control(&args.index.display().to_string()),
            veredicto_core::redact::escape_control(&batch.name),
            rejected,
            batch.acceptances.len(),
            if batch.acceptances.len() == 1 {
                ""
            } else {
                "s"
            }
        ),
    };
    crate::output::print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `exam --gate-ingest`: the gate on the examined index; `Some(exit 1)` (with the gate's
/// report on stderr) when it blocks, `None` to go on with the exam.
pub fn gate_before_exam(args: &crate::exam_cmd::ExamArgs) -> anyhow::Result<Option<ExitCode>> {
    let dir = match (&args.index, args.retriever.as_deref()) {
        (Some(dir), _) => dir.clone(),
        (None, Some(uri)) if uri.starts_with("index:") => PathBuf::from(&uri["index:".len()..]),
        _ => anyhow::bail!(
            "--gate-ingest: needs the examined index (--index DIR or --retriever index:DIR)"
        ),
    };
    let outcome = judge(&dir, args.policy.as_deref())?;
    if outcome.blocks() {
        let text = veredicto_report::gate::gate_human(&dir.display().to_string(), &outcome);
        eprint!("{text}");
        return Ok(Some(ExitCode::from(1)));
    }
    Ok(None)
}
