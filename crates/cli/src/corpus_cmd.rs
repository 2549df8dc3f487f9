//! `veredicto corpus check`: duplicates, obsolete and suspicious material, drift since the
//! last accepted run (or a previous corpus), aggregation questions. Exit 1 when a threshold
//! of the policy's `[corpus]` table is exceeded.

use crate::history_args::HistoryArgs;
use crate::printer::ExitStatus;
use anyhow::Context;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::PathBuf;
use veredicto_core::hygiene::{self, CheckInput};

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
    let as_of = args.as_of.clone().unwrap_or_else(crate::clock::today_utc);
    let (policy, gold_label) = match &args.policy {
        Some(p) => {
            use veredicto_formats::policy::{PolicyFile, Section};
            let file = PolicyFile::read_sections(p, &[Section::Exam, Section::Corpus])?;
            (file.corpus, file.exam.gold_label)
        }
        None => (
            hygiene::CorpusPolicy::default(),
            veredicto_core::policy::Policy::default().gold_label,
        ),
    };
    let index = match &args.index {
        Some(dir) => Some(veredicto_index::Index::open(dir)?),
        None => None,
    };
    let mut input = CheckInput {
        as_of,
        gold_label,
        ..CheckInput::default()
    };
    match (&args.corpus, &index) {
        (Some(path), _) => {
            for line in veredicto_formats::corpus::read_corpus_lines(path)? {
                input.sources.push(
                    line.raw
                        .get("source")
                        .and_then(|v| v.as_str())
                        .filter(|s| !s.trim().is_empty())
                        .map(str::to_owned),
                );
                input.vectors.push(line.vector);
                input.chunks.push(line.chunk);
            }
        }
        (None, Some(index)) => {
            let corpus = veredicto_index::records::corpus_of(index)?;
            for c in corpus.iter() {
                input.sources.push(None);
                input.vectors.push(None);
                input.chunks.push(c.clone());
            }
        }
        (None, None) => anyhow::bail!("give --corpus FILE or --index DIR"),
    }
    if let Some(index) = &index {
        // The index's vectors (they win over a line's own) and its batch times; checked
        // against the manifest first, as before a search.
        index.check_vectors()?;
        let rows: HashMap<&str, usize> = index.chunks().map(|c| (c.id(), c.row())).collect();
        for (i, c) in input.chunks.iter().enumerate() {
            if let Some(&row) = rows.get(c.id.as_str()) {
                input.vectors[i] = Some(index.vector(row).to_vec());
            }
        }
        let mut times: BTreeMap<String, String> = BTreeMap::new();
        for c in index.chunks() {
            let t = times.entry(c.ingest_batch().to_owned()).or_default();
            if c.ingested_at() > t.as_str() {
                *t = c.ingested_at().to_owned();
            }
        }
        input.batch_times = times;
    }
    if let Some(prev) = &args.since {
        input.previous = Some(veredicto_formats::corpus::read_corpus(prev)?);
    }
    if let Some(g) = &args.golden {
        input.questions = hygiene::golden_questions(&veredicto_formats::golden::read_golden(g)?);
    }
    if let Some(s) = &args.signals {
        let events = veredicto_formats::signals::read_events(
            s,
            &veredicto_formats::signals::FieldMap::default(),
        )?;
        let mut seen = std::collections::BTreeSet::new();
        for e in events {
            if seen.insert(e.event.query.clone()) {
                input
                    .questions
                    .push(("signals".to_owned(), e.at.clone(), e.event.query.clone()));
            }
        }
    }
    if history.is_file() {
        let history = history
            .open_read_only()
            .with_context(|| format!("opening the history {}", history.display()))?;
        if let Some(run) = history.last_accepted(None, None)? {
            let recorded = history.get(&run.id)?;
            input.accepted_chunks = history.run_chunks(&run.id)?;
            input.accepted_batches = Some((run.id, recorded.report.batches));
        }
    }
    let result = hygiene::check(&input, &policy);
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
