//! `veredicto runs list|show`: the run history.

use crate::history_args::HistoryArgs;
use crate::printer::{self, ExitStatus, Format};
use veredicto_core::exam::Verdict;
use veredicto_store::{short_fingerprint, RunFilter};

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

pub fn run(args: RunsArgs) -> anyhow::Result<ExitStatus> {
    let history = args.history.open_read_only()?;
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
            let mut run = history.get(&a.run)?;
            // Runs recorded with typed findings carry their sentences too.
            veredicto_report::findings::fill_exam(&mut run.report);
            let format = a.format.or_json(a.json);
            let text = if format == Format::Json {
                printer::json(&run)?
            } else {
                let m = &run.meta;
                let mut s = format!(
                    "run {} · {} · label {} · tool {} · git {}\ngolden {} · policy {} · corpus {} · retriever {} {}\n",
                    m.id,
                    m.created_at,
                    m.label.as_deref().unwrap_or("-"),
                    m.tool_version,
                    m.git_revision.as_deref().unwrap_or("-"),
                    short_fingerprint(&m.golden_fingerprint),
                    short_fingerprint(&m.policy_fingerprint),
                    m.corpus_fingerprint.as_deref().map(short_fingerprint).unwrap_or("-"),
                    m.config.retriever,
                    m.config.source.as_deref().unwrap_or(""),
                );
                for (stage, l) in &m.latency {
                    s.push_str(&format!(
                        "latency {stage}: p50 {:.2} ms · p95 {:.2} ms · p99 {:.2} ms ({} queries)\n",
                        l.p50_ms, l.p95_ms, l.p99_ms, l.count
                    ));
                }
                s.push('\n');
                let format = match format {
                    Format::Markdown => veredicto_report::Format::Markdown,
                    Format::Junit => veredicto_report::Format::Junit,
                    _ => veredicto_report::Format::Human,
                };
                if matches!(format, veredicto_report::Format::Human) {
                    let color = printer::get().color_stdout();
                    s.push_str(&veredicto_report::render(&run.report, format, color));
                    s
                } else {
                    veredicto_report::render(&run.report, format, false)
                }
            };
            printer::stdout(&text)?;
        }
    }
    Ok(ExitStatus::Success)
}
