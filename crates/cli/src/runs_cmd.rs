//! `veredicto runs list|show`: the run history.

use crate::exam_cmd::FormatArg;
use crate::history_args::HistoryArgs;
use std::process::ExitCode;
use veredicto_core::exam::Verdict;
use veredicto_store::{short_fingerprint, RunFilter, RunSummary};

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
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Runs on or before this date or time.
    #[arg(long, value_name = "DATE")]
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
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Run ID, unique prefix, or `latest`.
    #[arg(default_value = "latest")]
    pub run: String,
    /// Output format of the stored report.
    #[arg(long, value_enum, default_value = "human")]
    pub format: FormatArg,
    /// The whole recorded run (provenance + report) as JSON.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

pub fn run(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let history = args.history.open_read_only()?;
    match args.command {
        RunsCommand::List(a) => {
            let limit = (a.limit > 0).then_some(a.limit);
            let runs = history.list(&a.filter.filter(limit))?;
            let text = if a.json {
                let mut s = serde_json::to_string_pretty(&runs)?;
                s.push('\n');
                s
            } else {
                list_table(&runs)
            };
            crate::output::print_stdout(&text)?;
        }
        RunsCommand::Show(a) => {
            let run = history.get(&a.run)?;
            let text = if a.json {
                let mut s = serde_json::to_string_pretty(&run)?;
                s.push('\n');
                s
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
                let format = match a.format {
                    FormatArg::Human => veredicto_report::Format::Human,
                    FormatArg::Json => veredicto_report::Format::Json,
                    FormatArg::Markdown => veredicto_report::Format::Markdown,
                    FormatArg::Junit => veredicto_report::Format::Junit,
                };
                if matches!(format, veredicto_report::Format::Human) {
                    s.push_str(&veredicto_report::render(&run.report, format, false));
                    s
                } else {
                    veredicto_report::render(&run.report, format, false)
                }
            };
            crate::output::print_stdout(&text)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn list_table(runs: &[RunSummary]) -> String {
    let header = [
        "run",
        "created",
        "label",
        "verdict",
        "cases",
        "failing",
        "gold fail",
        "mean QS",
        "recall",
        "MRR",
        "golden",
    ];
    let rows: Vec<[String; 11]> = runs
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                r.created_at.clone(),
                r.label.clone().unwrap_or_default(),
                match r.verdict {
                    Verdict::Accept => "accept".to_owned(),
                    Verdict::Stop => "STOP".to_owned(),
                },
                r.cases.to_string(),
                r.failing.to_string(),
                r.failing_gold.to_string(),
                format!("{:.1}", r.mean_quality),
                format!("{:.3}", r.mean_recall),
                format!("{:.3}", r.mrr),
                short_fingerprint(&r.golden_fingerprint).to_owned(),
            ]
            // A label or time with ESC… must not drive the terminal.
            .map(|cell| veredicto_core::redact::escape_control(&cell))
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    let mut out = line(header.map(str::to_owned).to_vec());
    out.push('\n');
    for row in rows {
        out.push_str(&line(row.to_vec()));
        out.push('\n');
    }
    if runs.is_empty() {
        out.push_str("(no runs)\n");
    }
    out
}
