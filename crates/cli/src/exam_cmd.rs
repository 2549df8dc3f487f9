//! `veredicto exam`: the golden-set acceptance exam over a retriever's results.

use crate::history_args::HistoryArgs;
use anyhow::Context;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use veredicto_core::case::Corpus;
use veredicto_core::policy::Policy;
use veredicto_formats as formats;
use veredicto_report::Format;
use veredicto_retrieve::conclude::{Baseline, Notice, Recording};
use veredicto_retrieve::ExamRequest;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FormatArg {
    Human,
    Json,
    Markdown,
    Junit,
}

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("source").required(true).multiple(false))]
pub struct ExamArgs {
    /// Golden set: JSONL cases, or a BEIR folder (queries.jsonl + qrels/test.tsv).
    #[arg(long, value_name = "GOLDEN")]
    pub golden: PathBuf,
    /// The retriever's results: TREC run (`qid Q0 docid rank score tag`) or JSONL; `-` reads
    /// standard input. Short for `--retriever run:FILE`.
    #[arg(long, value_name = "RUN", group = "source")]
    pub run: Option<String>,
    /// Run every case against veredicto's index. Short for `--retriever index:DIR`.
    #[arg(long, value_name = "DIR", group = "source")]
    pub index: Option<PathBuf>,
    /// The retriever to examine, live: `index:DIR`, `run:FILE`, `http(s)://…`,
    /// `cmd:PROGRAM ARGS…` (see docs/retrievers.md).
    #[arg(long, value_name = "URI", group = "source")]
    pub retriever: Option<String>,
    #[command(flatten)]
    pub embedder: crate::models::EmbedderArgs,
    /// Results asked per case (ranks of expected chunks beyond it are "not within depth").
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::exam::DEFAULT_DEPTH)]
    pub depth: usize,
    /// Cases sent to the retriever at once (results are assembled in case order).
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::exam::DEFAULT_CONCURRENCY, value_parser = crate::retriever_args::concurrency)]
    pub concurrency: usize,
    /// Also ask the engine for its exact ranking and attribute misses to the ANN index.
    #[arg(long)]
    pub exactness_check: bool,
    #[command(flatten)]
    pub net: crate::retriever_args::NetArgs,
    /// Rerank stage: a cross-encoder model folder, or an HTTP `/rerank` URL.
    #[arg(long, value_name = "MODEL_DIR|URL")]
    pub rerank: Option<String>,
    /// Stage-1 candidates handed to the reranker.
    #[arg(long, value_name = "N", default_value_t = 30, requires = "rerank")]
    pub candidates: usize,
    /// Results kept after reranking (at least each case's K).
    #[arg(long, value_name = "M", default_value_t = 10, requires = "rerank")]
    pub keep: usize,
    /// Write the retrieved lists as a TREC run (any tool can re-score them).
    #[arg(long, value_name = "FILE")]
    pub save_run: Option<PathBuf>,
    /// Include per-stage latency in the JSON (it differs on every run).
    #[arg(long)]
    pub timings: bool,
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
    #[command(flatten)]
    pub record: RecordArgs,
}

/// Recording the run in the history and comparing it with a baseline.
#[derive(Debug, Clone, clap::Args)]
pub struct RecordArgs {
    #[command(flatten)]
    pub history: HistoryArgs,
    /// Do not record this run in the history.
    #[arg(long, conflicts_with_all = ["compare", "fail_on_regression"])]
    pub no_record: bool,
    /// Version label of the corpus/index this run examined (recorded with the run).
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Compare with a baseline from the history after the exam.
    #[arg(long)]
    pub compare: bool,
    /// The baseline: `previous` (the last run with the same golden set and policy),
    /// `last-accepted`, or a run ID / unique prefix.
    #[arg(long, value_name = "RUN", default_value = "previous")]
    pub baseline: String,
    /// Exit 1 on a statistically significant drop or a newly failing gold case, even when
    /// the absolute gate accepts (implies --compare).
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Seed of the randomisation test and the bootstrap.
    #[arg(long, value_name = "N", default_value_t = veredicto_core::compare::DEFAULT_SEED)]
    pub seed: u64,
    /// Declared chunk size of the corpus (recorded with the run's configuration).
    #[arg(long, value_name = "TOKENS")]
    pub chunk_size: Option<u32>,
    /// Declared chunk overlap (recorded with the run's configuration).
    #[arg(long, value_name = "TOKENS")]
    pub chunk_overlap: Option<u32>,
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
    let corpus = match &args.corpus {
        Some(p) => Some(Corpus::new(formats::corpus::read_corpus(p)?)),
        None => None,
    };
    let uri = match (&args.run, &args.index, &args.retriever) {
        (Some(run), _, _) => format!("run:{run}"),
        (_, Some(dir), _) => format!("index:{}", dir.display()),
        (_, _, Some(uri)) => uri.clone(),
        _ => anyhow::bail!("give --retriever URI, --index DIR or --run FILE"),
    };
    // One total deadline for every request of the run: retriever, embedder, reranker.
    let deadline = args.net.total_deadline();
    let retriever = veredicto_retrieve::open(&uri, &args.net.options()?)?;
    let embedder = crate::retriever_args::load_embedder(
        retriever.as_ref(),
        &args.embedder,
        &args.net,
        deadline,
        &cases,
    )?;
    let reranker = match &args.rerank {
        Some(spec) => Some(crate::models::load_reranker(
            spec,
            &args.embedder.api_key_env,
            Some(args.net.embedder_net()),
            Some(deadline),
        )?),
        None => None,
    };
    let notes = match &args.notes {
        Some(p) => formats::notes::read_notes(p)?,
        None => BTreeMap::new(),
    };
    let as_of = args.as_of.clone().unwrap_or_else(crate::clock::today_utc);
    let corpus_fingerprint = match &args.corpus {
        Some(p) => Some(file_fingerprint(p)?),
        None => None,
    };
    let rec = &args.record;
    let record = (!rec.no_record).then(|| {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Recording {
            history: rec.history.history.as_str(),
            label: rec.label.clone(),
            created_at: crate::clock::now_rfc3339(),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_revision: crate::history_args::git_revision(&cwd),
            chunk_size: rec.chunk_size,
            chunk_overlap: rec.chunk_overlap,
            compare: (rec.compare || rec.fail_on_regression)
                .then(|| Baseline::parse(&rec.baseline)),
            fail_on_regression: rec.fail_on_regression,
            seed: rec.seed,
        }
    });
    let print_notice = |n: &Notice| eprintln!("veredicto: {n}");
    let outcome = veredicto_retrieve::run_exam(ExamRequest {
        retriever: retriever.as_ref(),
        embedder: embedder.as_deref(),
        cases: &cases,
        policy: &policy,
        corpus,
        corpus_fingerprint,
        notes: &notes,
        as_of: &as_of,
        settings: veredicto_retrieve::exam::Settings {
            depth: args.depth,
            concurrency: args.concurrency,
            reranker: reranker.as_deref(),
            candidates: args.candidates,
            keep: args.keep,
            exactness_check: args.exactness_check,
        },
        rerank_spec: args.rerank.as_deref(),
        timings: args.timings,
        record,
        notify: Some(&print_notice),
    })?;
    if let Some(path) = &args.save_run {
        crate::retrieval::write_trec_run(path, &outcome.retrieval.run, "veredicto")?;
    }
    let format = match (args.json, args.format) {
        (true, _) | (_, FormatArg::Json) => Format::Json,
        (_, FormatArg::Human) => Format::Human,
        (_, FormatArg::Markdown) => Format::Markdown,
        (_, FormatArg::Junit) => Format::Junit,
    };
    let color = args.out.is_none()
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text = outcome.render(format, color)?;
    match &args.out {
        Some(path) => crate::output::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => crate::output::print_stdout(&text)?,
    }
    if outcome.regression {
        eprintln!("veredicto: regression against the baseline (--fail-on-regression)");
    }
    Ok(ExitCode::from(outcome.exit_code()))
}

/// `sha256:` of a file's bytes.
pub fn file_fingerprint(path: &std::path::Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(veredicto_core::fingerprint::sha256_bytes(&bytes))
}
