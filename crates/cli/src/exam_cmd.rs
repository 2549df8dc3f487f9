//! `veredicto exam`: the golden-set acceptance exam over a retriever's results.

use crate::history_args::HistoryArgs;
use anyhow::Context;
use std::path::PathBuf;
use veredicto_app::exam_job::{ExamJob, RecordJob};
use veredicto_app::{Overrides, Settings};
use veredicto_core::policy::Policy;
use veredicto_formats::config::Source;
use veredicto_formats::config::Source as FlagSource;
use veredicto_formats::policy::{PolicyFile, Section};
use veredicto_report::Format;

#[derive(Debug, Clone, clap::Args)]
#[command(group = clap::ArgGroup::new("source").multiple(false))]
pub struct ExamArgs {
    /// Golden set: JSONL cases, or a BEIR folder (queries.jsonl + qrels/test.tsv). Default:
    /// `golden` of veredicto.toml.
    #[arg(long, value_name = "GOLDEN")]
    pub golden: Option<PathBuf>,
    /// The retriever's results: TREC run (`qid Q0 docid rank score tag`) or JSONL; `-` reads
    /// standard input. Short for `--retriever run:FILE`.
    #[arg(long, value_name = "RUN", group = "source")]
    pub run: Option<String>,
    /// Run every case against veredicto's index. Short for `--retriever index:DIR`.
    #[arg(long, value_name = "DIR", group = "source")]
    pub index: Option<PathBuf>,
    /// First run the ingestion gate on the index (`--index` or `--retriever index:DIR`)
    /// with the policy's `[ingest]` table: exit 1 without examining while its latest batch
    /// has more rejected corpus lines than allowed and nobody accepted them.
    #[arg(long)]
    pub gate_ingest: bool,
    /// The retriever to examine, live, by its URI: every scheme is listed at the end of this
    /// help.
    #[arg(long, value_name = "URI", group = "source")]
    pub retriever: Option<String>,
    /// An arm of a `fusion:` retriever (repeatable, in order; `run:FILE` for a run file):
    /// `--retriever 'fusion:rrf?k=60' --arm 'index:kb?mode=bm25' --arm index:kb`. Default:
    /// `VEREDICTO_ARMS`, else `[retriever] arms` of veredicto.toml.
    #[arg(long = "arm", value_name = "URI")]
    pub arm: Vec<String>,
    #[command(flatten)]
    pub embedder: crate::models::EmbedderArgs,
    /// Results asked per case (ranks of expected chunks beyond it are "not within depth").
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::pass::DEFAULT_DEPTH)]
    pub depth: usize,
    /// Cases sent to the retriever at once (results are assembled in case order).
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::pass::DEFAULT_CONCURRENCY, value_parser = crate::retriever_args::concurrency)]
    pub concurrency: usize,
    /// Also ask the engine for its exact ranking and attribute misses to the ANN index.
    #[arg(long)]
    pub exactness_check: bool,
    /// Compare the stored vectors of N chunks sampled from --corpus (by --seed) with their
    /// texts embedded by the query model: a table embedded with another model is named
    /// (pgvector, Qdrant, Chroma).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub check_vectors: Option<u64>,
    #[command(flatten)]
    pub net: crate::retriever_args::NetArgs,
    #[command(flatten)]
    pub answers: crate::retriever_args::AnswerArgs,
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
    /// Examine a golden set that holds drafts no person accepted (`origin: "draft"`, from
    /// `veredicto golden draft`); without it such a golden set is refused. They are counted
    /// on standard error.
    #[arg(long)]
    pub allow_drafts: bool,
    /// With the own index (one batched pass for all cases): cases searched again one at a
    /// time for the search stage's per-query latency, evenly spaced in the golden set; taken
    /// only when the latency is shown or recorded (human report, --timings, the history).
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::pass::DEFAULT_LATENCY_SAMPLE)]
    pub latency_sample: usize,
    /// Chunk JSONL (or BEIR corpus.jsonl): gold labels, domains, validity, text for the diagnosis.
    #[arg(long, value_name = "CORPUS")]
    pub corpus: Option<PathBuf>,
    /// Documents JSONL (`id`, `text`): the golden set's quotes are located in them, the
    /// corpus' chunk offsets checked against them, chunks without offsets located by text.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// Policy TOML; default: the `[policy]` of veredicto.toml, else the documented defaults.
    #[arg(long, value_name = "POLICY.toml")]
    pub policy: Option<PathBuf>,
    /// Diagnosis notes: JSONL `{"id": CASE_ID, "note": "..."}`.
    #[arg(long, value_name = "NOTES")]
    pub notes: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json", "markdown", "junit"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Exam date (YYYY-MM-DD) for validity windows in the diagnosis; default: today (UTC).
    #[arg(long, value_name = "DATE", value_parser = crate::date_args::date)]
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
    /// `last-accepted`, `none`, or a run ID / unique prefix.
    #[arg(long, value_name = "RUN", default_value = "previous")]
    pub baseline: crate::history_args::Baseline,
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

impl ExamArgs {
    /// What the flags say about the shared settings (golden set, corpus, source, policy,
    /// history, model, the answer rules).
    pub fn overrides(&self) -> Overrides {
        let source = match (&self.run, &self.index, &self.retriever) {
            (Some(run), _, _) => Some(FlagSource::Run(PathBuf::from(run))),
            (_, Some(dir), _) => Some(FlagSource::Index(dir.clone())),
            (_, _, Some(uri)) => Some(FlagSource::Retriever(uri.clone())),
            _ => None,
        };
        Overrides {
            golden: self.golden.clone(),
            corpus: self.corpus.clone(),
            source,
            policy: self.policy.clone(),
            history: self.record.history.flag(),
            model: self.embedder.model.clone(),
            duplicates: self.answers.duplicates,
            max_retriever_failures: self.answers.max_retriever_failures,
            arms: Some(self.arm.clone()),
        }
    }
}

pub fn run(args: ExamArgs, settings: &Settings) -> anyhow::Result<crate::printer::ExitStatus> {
    let (args, golden, policy) = resolve(args, settings)?;
    if args.gate_ingest {
        // The same policy as the exam's (flag, else the project's), its `[ingest]` table.
        if let Some(_blocked) =
            crate::gate_cmd::gate_before_exam(&args, &policy.ingest, &settings.history)?
        {
            return Ok(crate::printer::ExitStatus::Stop);
        }
    }
    let outcome = outcome_of(
        &args,
        settings,
        &golden,
        policy.exam,
        None,
        crate::printer::events(),
    )?;
    render(&args, &outcome)
}

/// Runs the exam the arguments describe (recording it unless `--no-record`), with what the
/// flags leave out taken from `settings` (the environment and veredicto.toml under the
/// arguments' own flags); `top_k` overrides the policy's default K (the matrix's
/// per-configuration top-K).
pub fn outcome(
    args: &ExamArgs,
    settings: &Settings,
    top_k: Option<u32>,
) -> anyhow::Result<veredicto_app::ExamOutcome> {
    let (args, golden, policy) = resolve(args.clone(), settings)?;
    outcome_of(
        &args,
        settings,
        &golden,
        policy.exam,
        top_k,
        crate::printer::events(),
    )
}

/// The arguments with the resolved source and corpus filled in, the golden set's path and
/// the policy (flags, else the environment and veredicto.toml: see docs/config.md). Every
/// check that can fail before the run is recorded happens here.
fn resolve(args: ExamArgs, settings: &Settings) -> anyhow::Result<(ExamArgs, PathBuf, PolicyFile)> {
    let mut args = args;
    let golden = match (&args.golden, &settings.golden) {
        (Some(g), _) | (None, Some(g)) => g.clone(),
        (None, None) => anyhow::bail!(
            "exam needs a golden set: give --golden FILE, or `golden` in veredicto.toml (`veredicto init` writes one)"
        ),
    };
    if args.corpus.is_none() {
        args.corpus = settings.corpus.clone();
    }
    // The `[ingest]` table is read for the ingestion gate only.
    let sections: &[Section] = if args.gate_ingest {
        &[Section::Exam, Section::Ingest]
    } else {
        &[Section::Exam]
    };
    let policy = settings.policy_sections(sections)?;
    if (args.run.is_none() && args.index.is_none() && args.retriever.is_none())
        && settings.source.is_some()
    {
        match settings.source.clone() {
            Some(Source::Index(d)) => args.index = Some(d),
            Some(Source::Run(f)) => args.run = Some(f.display().to_string()),
            Some(Source::Retriever(u)) => args.retriever = Some(u),
            None => {}
        }
    }
    // Everything the run will need is checked before anything is recorded: a baseline
    // named by run ID must be in the history now, not after the run was written.
    if !args.record.no_record
        && (args.record.compare || args.record.fail_on_regression)
        && matches!(args.record.baseline, crate::history_args::Baseline::Run(_))
    {
        if !settings.history.is_file() {
            anyhow::bail!(
                "--baseline {}: there is no history at {} yet",
                args.record.baseline,
                settings.history.display()
            );
        }
        args.record
            .baseline
            .check(&settings.history.open_read_only()?)?;
    }
    Ok((args, golden, policy))
}

fn outcome_of(
    args: &ExamArgs,
    settings: &Settings,
    golden: &std::path::Path,
    mut policy: Policy,
    top_k: Option<u32>,
    events: veredicto_app::Events<'_>,
) -> anyhow::Result<veredicto_app::ExamOutcome> {
    if let Some(k) = top_k {
        policy.top_k = k;
    }
    let Some(retriever) = crate::retriever_args::source_uri(
        args.run.as_deref(),
        args.index.as_deref(),
        args.retriever.as_deref(),
    ) else {
        anyhow::bail!(
            "exam needs something to examine: give --run FILE, --index DIR or --retriever URI (or a [source] in veredicto.toml)"
        );
    };
    let rec = &args.record;
    let record = (!rec.no_record).then(|| RecordJob {
        label: rec.label.clone(),
        chunk_size: rec.chunk_size,
        chunk_overlap: rec.chunk_overlap,
        compare: ((rec.compare || rec.fail_on_regression)
            && rec.baseline != crate::history_args::Baseline::None)
            .then(|| rec.baseline.clone()),
        fail_on_regression: rec.fail_on_regression,
        git_revision: crate::history_args::git_revision(&settings.cwd),
    });
    // Latency is shown by the human report, put in the JSON by --timings, and recorded.
    let latency_shown = args.timings
        || record.is_some()
        || matches!(
            args.format.or_json(args.json),
            crate::printer::Format::Human
        );
    let job = ExamJob {
        golden: golden.to_owned(),
        corpus: args.corpus.clone(),
        documents: args.documents.clone(),
        retriever,
        arms: args.arm.clone(),
        embedder: args.embedder.spec(),
        net: args.net.net()?,
        depth: args.depth,
        concurrency: args.concurrency,
        exactness_check: args.exactness_check,
        check_vectors: args.check_vectors.map(|n| n as usize),
        rerank: args.rerank.clone(),
        candidates: args.candidates,
        keep: args.keep,
        latency_sample: if latency_shown {
            args.latency_sample
        } else {
            0
        },
        timings: args.timings,
        notes: args.notes.clone(),
        as_of: args.as_of.clone(),
        policy,
        seed: rec.seed,
        record,
        allow_drafts: args.allow_drafts,
    };
    // A bar on a terminal, a line every few seconds in CI logs (stderr only).
    Ok(veredicto_app::exam_job::run(
        &job,
        settings,
        &crate::clock::SystemClock,
        events,
    )?)
}

fn render(
    args: &ExamArgs,
    outcome: &veredicto_app::ExamOutcome,
) -> anyhow::Result<crate::printer::ExitStatus> {
    if let Some(path) = &args.save_run {
        crate::retrieval::save_run(path, &outcome.retrieval.run, "veredicto")?;
    }
    let format = match args.format.or_json(args.json) {
        crate::printer::Format::Json => Format::Json,
        crate::printer::Format::Markdown => Format::Markdown,
        crate::printer::Format::Junit => Format::Junit,
        _ => Format::Human,
    };
    let color = args.out.is_none() && crate::printer::get().color_stdout();
    let text = outcome.render(format, color)?;
    match &args.out {
        Some(path) => crate::output::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => crate::printer::stdout(&text)?,
    }
    if outcome.regression {
        crate::printer::warn("regression against the baseline (--fail-on-regression)");
    }
    Ok(match outcome.exit_code() {
        0 => crate::printer::ExitStatus::Success,
        1 => crate::printer::ExitStatus::Stop,
        _ => crate::printer::ExitStatus::Error,
    })
}
