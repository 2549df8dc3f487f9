//! `veredicto exam`: the golden-set acceptance exam over a retriever's results.

use crate::history_args::HistoryArgs;
use anyhow::Context;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use veredicto_core::case::Corpus;
use veredicto_core::compare::{self, CompareOptions, Comparison};
use veredicto_core::exam::{self, ExamInput, ExamReport, Verdict};
use veredicto_core::history::{RecordedRun, RunConfig, RunMeta};
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
    #[arg(
        long,
        value_name = "RUN",
        required_unless_present = "index",
        conflicts_with = "index"
    )]
    pub run: Option<PathBuf>,
    /// Run every case against veredicto's index instead of reading a run file.
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    #[command(flatten)]
    pub embedder: crate::models::EmbedderArgs,
    /// Results listed per case with --index (ranks of expected chunks are exact at any depth).
    #[arg(long, value_name = "N", default_value_t = 100, requires = "index")]
    pub depth: usize,
    /// Rerank stage: a cross-encoder model folder, or an HTTP `/rerank` URL.
    #[arg(long, value_name = "MODEL_DIR|URL", requires = "index")]
    pub rerank: Option<String>,
    /// Stage-1 candidates handed to the reranker.
    #[arg(long, value_name = "N", default_value_t = 30, requires = "rerank")]
    pub candidates: usize,
    /// Results kept after reranking (at least each case's K).
    #[arg(long, value_name = "M", default_value_t = 10, requires = "rerank")]
    pub keep: usize,
    /// Write the retrieved lists as a TREC run (any tool can re-score them).
    #[arg(long, value_name = "FILE", requires = "index")]
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
    let mut corpus = match &args.corpus {
        Some(p) => Some(Corpus::new(formats::corpus::read_corpus(p)?)),
        None => None,
    };
    let mut latency = std::collections::BTreeMap::new();
    let mut stage1 = None;
    let mut index_fp = None;
    let mut model_info: (Option<String>, Option<String>) = (None, None);
    let run = match (&args.run, &args.index) {
        (Some(path), _) => formats::run::read_run(path)?,
        (None, Some(dir)) => {
            let index = veredicto_index::Index::open(dir)?;
            let needs_model = cases.iter().any(|c| c.query_vector.is_none());
            let embedder = if needs_model {
                let e = args.embedder.load_for_index(Some(dir))?;
                crate::models::check_index_model(&index, e.as_ref())?;
                Some(e)
            } else {
                None
            };
            let reranker = match &args.rerank {
                Some(spec) => Some(crate::models::load_reranker(
                    spec,
                    &args.embedder.api_key_env,
                )?),
                None => None,
            };
            let k_of = |c: &veredicto_core::case::Case| {
                c.top_k
                    .unwrap_or(policy.thresholds(c.domain.as_deref()).top_k)
                    as usize
            };
            let r = veredicto_index::retriever::retrieve(
                &index,
                embedder.as_deref(),
                &cases,
                k_of,
                &veredicto_index::retriever::Settings {
                    depth: args.depth,
                    reranker: reranker.as_deref(),
                    candidates: args.candidates,
                    keep: args.keep,
                },
            )?;
            if corpus.is_none() {
                corpus = Some(veredicto_index::retriever::corpus_of(&index)?);
            }
            if let Some(path) = &args.save_run {
                crate::retrieval::write_trec_run(path, &r.run, "veredicto")?;
            }
            latency = r.latency;
            stage1 = r.stage1;
            let m = index.manifest();
            index_fp = Some(m.corpus_hash.clone());
            model_info = (
                m.model
                    .get("name")
                    .and_then(|v| v.as_str())
                    .map(str::to_owned),
                Some(m.model_hash.clone()),
            );
            r.run
        }
        (None, None) => anyhow::bail!("give --run FILE or --index DIR"),
    };
    let notes = match &args.notes {
        Some(p) => formats::notes::read_notes(p)?,
        None => BTreeMap::new(),
    };
    let as_of = args.as_of.clone().unwrap_or_else(crate::clock::today_utc);
    let mut report = exam::evaluate(ExamInput {
        cases: &cases,
        run: &run,
        corpus: corpus.as_ref(),
        policy: &policy,
        notes: &notes,
        as_of: Some(&as_of),
    });
    if let Some(s1) = &stage1 {
        // Stage 1 at N candidates: the ceiling of the reranker.
        let at_n: Vec<_> = cases
            .iter()
            .map(|c| veredicto_core::case::Case {
                top_k: Some(args.candidates as u32),
                ..c.clone()
            })
            .collect();
        let r1 = exam::evaluate(ExamInput {
            cases: &at_n,
            run: s1,
            corpus: corpus.as_ref(),
            policy: &policy,
            notes: &notes,
            as_of: Some(&as_of),
        });
        report.stages = vec![
            stage_summary("retrieval", args.candidates as u32, &r1),
            stage_summary("rerank", policy.top_k, &report),
        ];
    }
    if args.timings {
        report.latency = latency.clone();
    }
    let config = RunConfig {
        retriever: if args.index.is_some() {
            "index"
        } else {
            "run-file"
        }
        .to_owned(),
        source: args
            .run
            .as_ref()
            .or(args.index.as_ref())
            .map(|p| p.display().to_string()),
        embedding_model: model_info.0,
        model_hash: model_info.1,
        rerank: args.rerank.clone(),
        field: Some(
            serde_json::to_value(policy.field)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
        ),
        top_k: policy.top_k,
        ..RunConfig::default()
    };
    let corpus_fingerprint = match (&args.corpus, index_fp) {
        (Some(p), _) => Some(file_fingerprint(p)?),
        (None, fp) => fp,
    };
    let output = Output {
        format: args.format,
        json: args.json,
        out: args.out.clone(),
    };
    conclude(
        report,
        Provenance {
            config,
            corpus_fingerprint,
            latency,
        },
        corpus.as_ref(),
        &args.record,
        &output,
    )
}

fn stage_summary(stage: &str, k: u32, r: &ExamReport) -> veredicto_core::exam::StageSummary {
    veredicto_core::exam::StageSummary {
        stage: stage.to_owned(),
        k,
        mean_recall: r.summary.mean_recall,
        mrr: r.summary.mrr,
        mean_ndcg: r.summary.mean_ndcg,
        full_recall_cases: r.cases.iter().filter(|c| c.recall >= 1.0).count(),
    }
}

/// `sha256:` of a file's bytes.
pub fn file_fingerprint(path: &std::path::Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(veredicto_core::fingerprint::sha256_bytes(&bytes))
}

/// How the report is printed.
pub struct Output {
    pub format: FormatArg,
    pub json: bool,
    pub out: Option<PathBuf>,
}

/// What a run records besides its report.
pub struct Provenance {
    pub config: RunConfig,
    pub corpus_fingerprint: Option<String>,
    pub latency: std::collections::BTreeMap<String, veredicto_core::history::StageLatency>,
}

/// Records the run, compares it with its baseline when asked, prints the report and turns
/// the verdict into the exit code. Shared by every retriever behind `exam`.
pub fn conclude(
    report: ExamReport,
    provenance: Provenance,
    corpus: Option<&Corpus>,
    record: &RecordArgs,
    output: &Output,
) -> anyhow::Result<ExitCode> {
    let compare_wanted = record.compare || record.fail_on_regression;
    let mut provenance = provenance;
    provenance.config.chunk_size = record.chunk_size;
    provenance.config.chunk_overlap = record.chunk_overlap;
    let latency_text: String = provenance
        .latency
        .iter()
        .map(|(stage, l)| {
            format!(
                "latency {stage}: p50 {:.2} ms · p95 {:.2} ms · p99 {:.2} ms · max {:.2} ms ({} queries)\n",
                l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms, l.count
            )
        })
        .collect();
    let mut comparison: Option<Comparison> = None;
    if !record.no_record {
        let history = record.history.open()?;
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let meta = RunMeta {
            id: String::new(),
            created_at: crate::clock::now_rfc3339(),
            label: record.label.clone(),
            golden_fingerprint: report.golden_fingerprint.clone(),
            policy_fingerprint: report.policy_fingerprint.clone(),
            corpus_fingerprint: provenance.corpus_fingerprint,
            config: provenance.config,
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_revision: crate::history_args::git_revision(&cwd),
            latency: provenance.latency,
        };
        let id = history.record(&meta, &report)?;
        eprintln!(
            "veredicto: recorded run {id} in {}",
            record.history.history.display()
        );
        if compare_wanted {
            let new = RecordedRun {
                meta: RunMeta {
                    id: id.clone(),
                    ..meta
                },
                report: report.clone(),
            };
            match crate::history_args::baseline(&history, &new.meta, &record.baseline)? {
                Some(base_id) => {
                    let base = history.get(&base_id)?;
                    let opts = CompareOptions {
                        seed: record.seed,
                        corpus,
                        ..CompareOptions::default()
                    };
                    comparison = Some(compare::compare(&base, &new, &opts));
                }
                None => eprintln!(
                    "veredicto: no baseline ({}) in the history yet: nothing to compare with",
                    record.baseline
                ),
            }
        }
    }

    let format = match (output.json, output.format) {
        (true, _) | (_, FormatArg::Json) => Format::Json,
        (_, FormatArg::Human) => Format::Human,
        (_, FormatArg::Markdown) => Format::Markdown,
        (_, FormatArg::Junit) => Format::Junit,
    };
    let color = output.out.is_none()
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let mut text = veredicto_report::render(&report, format, color);
    if matches!(format, Format::Human) {
        for s in &report.stages {
            text.push_str(&format!(
                "stage {} @{}: mean recall {:.3} · MRR {:.3} · mean nDCG {:.3} · {} cases with every expected chunk\n",
                s.stage, s.k, s.mean_recall, s.mrr, s.mean_ndcg, s.full_recall_cases
            ));
        }
        text.push_str(&latency_text);
    }
    if let Some(c) = &comparison {
        match format {
            Format::Human => {
                text.push('\n');
                text.push_str(&veredicto_report::comparison::human(c));
            }
            Format::Markdown => text.push_str(&veredicto_report::comparison::markdown(c)),
            Format::Json => {
                let mut value = serde_json::to_value(&report)?;
                if let Some(map) = value.as_object_mut() {
                    map.insert("comparison".to_owned(), serde_json::to_value(c)?);
                }
                text = serde_json::to_string_pretty(&value)?;
                text.push('\n');
            }
            Format::Junit => {}
        }
    }
    match &output.out {
        Some(path) => crate::output::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => crate::output::print_stdout(&text)?,
    }
    let regression = record.fail_on_regression && comparison.as_ref().is_some_and(|c| c.regression);
    if regression {
        eprintln!("veredicto: regression against the baseline (--fail-on-regression)");
    }
    Ok(match (report.verdict, regression) {
        (Verdict::Accept, false) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}
