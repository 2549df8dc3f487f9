//! `veredicto exam`: the golden-set acceptance exam over a retriever's results.

use anyhow::Context;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use veredicto_core::case::Corpus;
use veredicto_core::exam::{self, ExamInput, Verdict};
use veredicto_core::policy::Policy;
use veredicto_formats as formats;
use veredicto_report::Format;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FormatArg {
    Human,
    Json,
    Markdown,
    Junit,
}

#[derive(Debug, clap::Args)]
pub struct ExamArgs {
    /// Golden set: JSONL cases, or a BEIR folder (queries.jsonl + qrels/test.tsv).
    #[arg(long, value_name = "GOLDEN")]
    pub golden: PathBuf,
    /// The retriever's results: TREC run (`qid Q0 docid rank score tag`) or JSONL.
    #[arg(long, value_name = "RUN")]
    pub run: PathBuf,
    /// Chunk JSONL (or BEIR corpus.jsonl): gold labels, domains, validity, text for the diagnosis.
    #[arg(long, value_name = "CORPUS")]
    pub corpus: Option<PathBuf>,
    /// Policy TOML; the documented defaults when absent.
    #[arg(long, value_name = "POLICY.toml")]
    pub policy: Option<PathBuf>,
    /// Diagnosis notes: JSONL `{"id": CASE_ID, "note": "..."}`.
    #[arg(long, value_name = "NOTES")]
    pub notes: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: FormatArg,
    /// Shorthand for `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Exam date (YYYY-MM-DD) for validity windows in the diagnosis; default: today (UTC).
    #[arg(long, value_name = "DATE", value_parser = parse_date)]
    pub as_of: Option<String>,
}

fn parse_date(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if ok {
        Ok(s.to_owned())
    } else {
        Err(format!("expected a date as YYYY-MM-DD, got `{s}`"))
    }
}

pub fn run(args: ExamArgs) -> anyhow::Result<ExitCode> {
    let policy = match &args.policy {
        Some(p) => formats::policy::read_policy(p)?,
        None => Policy::default(),
    };
    let cases = formats::golden::read_golden(&args.golden)?;
    let run = formats::run::read_run(&args.run)?;
    let corpus = match &args.corpus {
        Some(p) => Some(Corpus::new(formats::corpus::read_corpus(p)?)),
        None => None,
    };
    let notes = match &args.notes {
        Some(p) => formats::notes::read_notes(p)?,
        None => BTreeMap::new(),
    };
    let as_of = args.as_of.clone().unwrap_or_else(crate::clock::today_utc);
    let report = exam::evaluate(ExamInput {
        cases: &cases,
        run: &run,
        corpus: corpus.as_ref(),
        policy: &policy,
        notes: &notes,
        as_of: Some(&as_of),
    });
    let format = match (args.json, args.format) {
        (true, _) | (_, FormatArg::Json) => Format::Json,
        (_, FormatArg::Human) => Format::Human,
        (_, FormatArg::Markdown) => Format::Markdown,
        (_, FormatArg::Junit) => Format::Junit,
    };
    let color = args.out.is_none()
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = veredicto_report::render(&report, format, color);
    match &args.out {
        Some(path) => crate::output::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => crate::output::print_stdout(&text)?,
    }
    Ok(match report.verdict {
        Verdict::Accept => ExitCode::SUCCESS,
        Verdict::Stop => ExitCode::from(1),
    })
}
