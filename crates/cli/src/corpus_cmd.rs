//! `veredicto corpus check`: duplicates, obsolete and suspicious material, drift since the
//! last accepted run (or a previous corpus), aggregation questions. Exit 1 when a threshold
//! of the policy's `[corpus]` table is exceeded.

use crate::history_args::HistoryArgs;
use crate::printer::ExitStatus;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct CorpusArgs {
    #[command(subcommand)]
    pub command: CorpusCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum CorpusCommand {
    /// Check the corpus' hygiene (exit 0 clean or within the policy, 1 a threshold exceeded).
    Check(Box<CheckArgs>),
}

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("chunks").required(true).multiple(true))]
pub struct CheckArgs {
    /// The corpus (chunk JSONL or BEIR corpus.jsonl).
    #[arg(long, value_name = "FILE", group = "chunks")]
    pub corpus: Option<PathBuf>,
    /// veredicto's index: its vectors find near duplicates, its batch records order the
    /// batches; without --corpus, its chunks are the ones checked.
    #[arg(long, value_name = "DIR", group = "chunks")]
    pub index: Option<PathBuf>,
    /// The policy file: its `[corpus]` table (thresholds) and its `gold_label`.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The golden set, checked for aggregation questions.
    #[arg(long, value_name = "FILE|DIR")]
    pub golden: Option<PathBuf>,
    /// A signals file (or log in canonical form), whose queries are checked for aggregations.
    #[arg(long, value_name = "FILE")]
    pub signals: Option<PathBuf>,
    /// A previous corpus file: what entered, changed and left since it.
    #[arg(long, value_name = "CORPUS")]
    pub since: Option<PathBuf>,
    /// The date for validity (`valid_to`); default today (UTC).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = crate::date_args::date)]
    pub as_of: Option<String>,
    #[command(flatten)]
    pub history: HistoryArgs,
    #[arg(long, value_enum, default_value_t = crate::signals_cmd::OutFormat::Human)]
    pub format: crate::signals_cmd::OutFormat,
}

impl CorpusArgs {
    /// The `--history` of the subcommand, as a setting.
    pub fn overrides(&self) -> veredicto_app::Overrides {
        match &self.command {
            CorpusCommand::Check(a) => a.history.overrides(),
        }
    }
}

pub fn run(args: CorpusArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    match args.command {
        CorpusCommand::Check(a) => check(*a, &settings.history),
    }
}

fn check(args: CheckArgs, history: &veredicto_app::HistorySpec) -> anyhow::Result<ExitStatus> {
    let result = veredicto_app::corpus::check(
        &veredicto_app::corpus::CheckRequest {
            corpus: args.corpus,
            index: args.index,
            policy: args.policy,
            golden: args.golden,
            signals: args.signals,
            since: args.since,
            as_of: args.as_of.unwrap_or_else(crate::clock::today_utc),
        },
        history,
    )?;
    let text = match args.format {
        crate::signals_cmd::OutFormat::Json => veredicto_report::corpus::json(&result),
        crate::signals_cmd::OutFormat::Human => veredicto_report::corpus::human(&result),
    };
    let json = args.format == crate::signals_cmd::OutFormat::Json;
    let mut w = crate::output::human_stdout(json);
    match w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(ExitStatus::stop_if(!result.breaches.is_empty()))
}
