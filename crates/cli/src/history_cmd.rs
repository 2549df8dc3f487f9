//! `veredicto history`: copy a history between a file and a PostgreSQL database, and check
//! one.

use crate::history_args::HistoryArgs;
use crate::printer::{self, ExitStatus, Format};
use std::fmt::Write;
use veredicto_app::HistorySpec;

#[derive(Debug, clap::Args)]
pub struct HistoryCmdArgs {
    #[command(subcommand)]
    command: HistoryCommand,
}

#[derive(Debug, clap::Subcommand)]
enum HistoryCommand {
    /// Copy every run of one history into another (a file or postgres:// URL each). Runs
    /// keep their IDs and their seals; runs already in the target are skipped, so an
    /// interrupted copy is resumed by running it again. Verifies every copied run and seal at
    /// the end; refuses a run changed after it was sealed.
    Migrate(MigrateArgs),
    /// Check a history: database integrity, append-only guards, incomplete runs, altered
    /// audit case files, and every seal: a run, audit run, review, acceptance or chunk list
    /// changed after it was recorded is named (exit 0 sound, 1 problems found).
    Check(CheckArgs),
    /// List the written acceptances of ingestion batches' rejected lines (`veredicto gate
    /// accept`), oldest first: when, who, which index and batch, how many lines, why.
    Acceptances(AcceptancesArgs),
}

#[derive(Debug, clap::Args)]
struct AcceptancesArgs {
    #[command(flatten)]
    history: HistoryArgs,
    /// Only the acceptances of this batch label.
    #[arg(long, value_name = "LABEL")]
    batch: Option<String>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct MigrateArgs {
    /// The history to copy from (file path or postgres:// URL); it must exist.
    #[arg(long, value_name = "PATH|URL")]
    from: String,
    /// The history to copy into (created when absent).
    #[arg(long, value_name = "PATH|URL")]
    to: String,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    #[command(flatten)]
    history: HistoryArgs,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    json: bool,
}

impl HistoryCmdArgs {
    /// The `--history` of the subcommand, as a setting.
    pub fn overrides(&self) -> veredicto_app::Overrides {
        match &self.command {
            HistoryCommand::Check(a) => a.history.overrides(),
            HistoryCommand::Acceptances(a) => a.history.overrides(),
            HistoryCommand::Migrate(_) => veredicto_app::Overrides::default(),
        }
    }
}

pub fn run(args: HistoryCmdArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let history = &settings.history;
    match args.command {
        HistoryCommand::Migrate(a) => migrate(a),
        HistoryCommand::Check(a) => check(a, history),
        HistoryCommand::Acceptances(a) => acceptances(a, history),
    }
}

fn acceptances(a: AcceptancesArgs, spec: &HistorySpec) -> anyhow::Result<ExitStatus> {
    let list = veredicto_app::history::acceptances(spec, a.batch.as_deref())?;
    let text = if a.json || a.format == Format::Json {
        veredicto_report::gate::acceptances_json(&spec.display(), &list)
    } else {
        veredicto_report::gate::acceptances_human(&spec.display(), &list)
    };
    printer::stdout(&text)?;
    Ok(ExitStatus::Success)
}

fn migrate(a: MigrateArgs) -> anyhow::Result<ExitStatus> {
    let started = std::time::Instant::now();
    let done = veredicto_app::history::migrate(&a.from, &a.to, printer::events())?;
    let report = &done.report;
    let mut out = String::new();
    if a.json || a.format == Format::Json {
        writeln!(out, "{}", serde_json::to_string_pretty(report)?)?;
    } else {
        writeln!(
            out,
            "migrated {} -> {}: {} runs ({} copied, {} already there), {} audit runs ({} copied, \
             {} records appended), {} gate acceptances ({} copied) in {:.1} s; verified {}",
            done.from,
            done.to,
            report.runs,
            report.copied,
            report.skipped,
            report.audit_runs,
            report.audit_copied,
            report.audit_records_appended,
            report.gate_acceptances,
            report.gate_acceptances_copied,
            started.elapsed().as_secs_f64(),
            report.digest
        )?;
        if report.run_chunks > 0 {
            writeln!(
                out,
                "chunk lists of {} runs ({} copied), read back equal",
                report.run_chunks, report.run_chunks_copied
            )?;
        }
        writeln!(
            out,
            "seals: {} carried and verified; head of the copy {}",
            report.seals,
            report.head.as_deref().unwrap_or("(none)")
        )?;
    }
    printer::stdout(&out)?;
    Ok(ExitStatus::Success)
}

fn check(a: CheckArgs, spec: &HistorySpec) -> anyhow::Result<ExitStatus> {
    let done = veredicto_app::history::check(spec)?;
    let (report, head) = (&done.report, done.head.as_deref());
    let mut out = String::new();
    if a.json || a.format == Format::Json {
        let mut value = serde_json::to_value(report)?;
        if let Some(seals) = value.get_mut("seals").and_then(|s| s.as_object_mut()) {
            seals.insert("head".to_owned(), serde_json::json!(head));
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        writeln!(
            out,
            "{}: {} runs, {} audit runs",
            done.path, report.runs, report.audit_runs
        )?;
        writeln!(out, "integrity: {}", report.integrity.join("; "))?;
        if report.foreign_key_violations > 0 {
            writeln!(
                out,
                "foreign key violations: {}",
                report.foreign_key_violations
            )?;
        }
        for id in &report.incomplete_runs {
            writeln!(out, "incomplete run: {id}")?;
        }
        for id in &report.altered_audit_runs {
            writeln!(out, "audit run with an altered case file: {id}")?;
        }
        writeln!(out, "gate acceptances: {}", report.gate_acceptances)?;
        for id in &report.unreadable_acceptances {
            writeln!(out, "gate acceptance that does not read back: {id}")?;
        }
        if report.run_chunks > 0 || !report.unreadable_run_chunks.is_empty() {
            writeln!(
                out,
                "chunk lists: {} runs, {} distinct stored",
                report.run_chunks, report.chunk_snapshots
            )?;
        }
        for id in &report.unreadable_run_chunks {
            writeln!(out, "run whose chunk list does not read back: {id}")?;
        }
        write_seals(&mut out, &report.seals, head)?;
        writeln!(
            out,
            "{}",
            if report.is_ok() {
                "ok"
            } else {
                "PROBLEMS FOUND"
            }
        )?;
    }
    printer::stdout(&out)?;
    Ok(ExitStatus::stop_if(!report.is_ok()))
}

/// What `history check` says about the seals.
fn write_seals(
    out: &mut String,
    seals: &veredicto_store::SealCheck,
    head: Option<&str>,
) -> std::fmt::Result {
    use veredicto_store::SealProblem;
    if !seals.sealed {
        return writeln!(
            out,
            "seals: none yet (written by an earlier veredicto; sealed when next opened for writing)"
        );
    }
    writeln!(
        out,
        "seals: {}, head {}",
        seals.seals,
        head.unwrap_or("(none)")
    )?;
    if seals.sealed_at_upgrade > 0 {
        writeln!(
            out,
            "sealed when the history was upgraded, not when written: {} items ({} runs); a \
             change made to them before the upgrade cannot be detected",
            seals.sealed_at_upgrade, seals.runs_sealed_at_upgrade
        )?;
    }
    if let Some(b) = &seals.first_break {
        let what = match b.problem {
            SealProblem::Content => format!("{} was changed after it was sealed", b.item),
            SealProblem::Missing => format!("{} was removed after it was sealed", b.item),
            SealProblem::Link => format!(
                "the seal of {} does not follow from the seal before it (a seal was changed, \
                 removed or inserted)",
                b.item
            ),
        };
        writeln!(
            out,
            "broken seal: {what} (seal {} of {}; {} broken in all)",
            b.position, seals.seals, seals.broken
        )?;
    }
    for item in &seals.unsealed {
        writeln!(out, "unsealed: {item}")?;
    }
    Ok(())
}
