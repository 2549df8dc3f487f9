//! `veredicto runs list|show`: the run history.

use crate::history_args::HistoryArgs;
use crate::printer::{self, ExitStatus, Format};
use veredicto_core::exam::Verdict;
use veredicto_store::RunFilter;

#[derive(Debug, clap::Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: RunsCommand,
    #[command(flatten)]
    pub history: HistoryArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// List recorded runs, newest first.
    List(ListArgs),
    /// Show one run (ID, unique prefix, or `latest`).
    Show(ShowArgs),
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum VerdictArg {
    Accept,
    Stop,
}

/// Filters shared by the commands that select runs.
#[derive(Debug, Clone, clap::Args)]
pub struct FilterArgs {
    /// Golden-set fingerprint (or a prefix of its hex).
    #[arg(long, value_name = "FP")]
    pub golden: Option<String>,
    /// Version label.
    #[arg(long)]
    pub label: Option<String>,
    /// Runs on or after this date (YYYY-MM-DD) or RFC 3339 time.
    #[arg(long, value_name = "DATE", value_parser = crate::date_args::bound)]
    pub since: Option<String>,
    /// Runs on or before this date or time.
    #[arg(long, value_name = "DATE", value_parser = crate::date_args::bound)]
    pub until: Option<String>,
    /// Only accepted or only stopped runs.
    #[arg(long, value_enum)]
    pub verdict: Option<VerdictArg>,
}

impl FilterArgs {
    pub fn filter(&self, limit: Option<usize>) -> RunFilter {
        RunFilter {
            golden_fingerprint: self.golden.clone(),
            label: self.label.clone(),
            since: self.since.clone(),
            until: self.until.clone(),
            verdict: self.verdict.map(|v| match v {
                VerdictArg::Accept => Verdict::Accept,
                VerdictArg::Stop => Verdict::Stop,
            }),
            limit,
            ..RunFilter::default()
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// At most this many runs (0: all).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    #[arg(long, value_parser = printer::formats(&["human", "json"]), default_value = "human")]
    pub format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Run ID, unique prefix, or `latest`.
    #[arg(default_value = "latest")]
    pub run: String,
    /// Output format: json is the whole recorded run (provenance and report); markdown and
    /// junit render its report.
    #[arg(long, value_parser = printer::formats(&["human", "json", "markdown", "junit"]), default_value = "human")]
    pub format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: RunsArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let history = settings.history.open_read_only()?;
    match args.command {
        RunsCommand::List(a) => {
            let limit = (a.limit > 0).then_some(a.limit);
            let runs = history.list(&a.filter.filter(limit))?;
            let text = match a.format.or_json(a.json) {
                Format::Json => printer::json(&runs)?,
                _ => veredicto_report::runs::list_table(&runs),
            };
            printer::stdout(&text)?;
        }
        RunsCommand::Show(a) => {
            let run = history.get(&a.run)?;
            let text = match a.format.or_json(a.json) {
                Format::Json => veredicto_report::json::run(&run),
                Format::Markdown => veredicto_report::markdown::render(&run.report),
                Format::Junit => veredicto_report::junit::render(&run.report),
                _ => {
                    let color = printer::get().color_stdout();
                    let mut s = veredicto_report::runs::run_header(&run.meta);
                    s.push_str(&veredicto_report::human::render(&run.report, color));
                    s
                }
            };
            printer::stdout(&text)?;
        }
    }
    Ok(ExitStatus::Success)
}
