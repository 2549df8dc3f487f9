//! One exam described by typed settings, from the retriever's URI to the recorded run:
//! what `veredicto exam` runs, what the workbench's "Run the exam" runs, and what the
//! Python package runs over a retriever URI. The front ends fill an [`ExamJob`] (starting
//! from [`ExamJob::from_settings`], the project's exam with nothing else given) and call
//! [`run`]; opening the retriever, its embedder and reranker happens here, once.

use std::collections::BTreeMap;
use std::path::PathBuf;

use veredicto_core::policy::Policy;
use veredicto_formats::policy::Section;

use crate::models::EmbedderSpec;
use crate::source::Net;
use crate::{
    Baseline, Clock, Context, Events, ExamOutcome, ExamRequest, Recording, Result, Settings,
};

/// How the run is recorded in the history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordJob {
    /// Version label of the corpus/index examined.
    pub label: Option<String>,
    /// Declared chunk size of the corpus.
    pub chunk_size: Option<u32>,
    /// Declared chunk overlap.
    pub chunk_overlap: Option<u32>,
    /// Compare with this baseline after recording.
    pub compare: Option<Baseline>,
    /// A significant drop or a newly failing gold case fails the exam (needs `compare`).
    pub fail_on_regression: bool,
    /// The git revision recorded with the run.
    pub git_revision: Option<String>,
}

/// Everything one exam needs, owned.
#[derive(Debug, Clone)]
pub struct ExamJob {
    /// The golden set (JSONL cases or a BEIR folder).
    pub golden: PathBuf,
    /// The chunk corpus, when given.
    pub corpus: Option<PathBuf>,
    /// The documents the golden set's evidence spans point into.
    pub documents: Option<PathBuf>,
    /// The retriever's URI (`index:DIR`, `run:FILE`, `postgres://…`, `fusion:…`).
    pub retriever: String,
    /// A fusion's arms given for this exam; empty takes the settings' arms.
    pub arms: Vec<String>,
    /// The query embedder, when the retriever needs one.
    pub embedder: EmbedderSpec,
    /// Timeouts, deadline, headers and answer pointers of live retrievers and servers.
    pub net: Net,
    /// Results asked per case.
    pub depth: usize,
    /// Cases sent to the retriever at once.
    pub concurrency: usize,
    /// Ask the engine for its exact ranking too.
    pub exactness_check: bool,
    /// Compare the stored vectors of this many sampled chunks with the query model's.
    pub check_vectors: Option<usize>,
    /// The rerank stage (a cross-encoder folder or a `/rerank` URL).
    pub rerank: Option<String>,
    /// Stage-1 candidates handed to the reranker.
    pub candidates: usize,
    /// Results kept after reranking.
    pub keep: usize,
    /// Cases searched again one at a time for the per-query latency (0: none).
    pub latency_sample: usize,
    /// Put the per-stage latency in the report.
    pub timings: bool,
    /// Diagnosis notes (JSONL `{"id", "note"}`).
    pub notes: Option<PathBuf>,
    /// The exam date for validity windows; `None` takes the clock's today.
    pub as_of: Option<String>,
    /// The exam's policy.
    pub policy: Policy,
    /// Seed of the stored-vector sample, the randomisation test and the bootstrap.
    pub seed: u64,
    /// Record the run in the settings' history; `None` records nothing.
    pub record: Option<RecordJob>,
    /// Examine a golden set that holds drafts no person accepted (`origin: "draft"`);
    /// otherwise such a golden set is refused.
    pub allow_drafts: bool,
}

impl ExamJob {
    /// The exam the settings describe with nothing else given: their golden set, corpus,
    /// source, arms and policy, the default depth and concurrency, recorded in their
    /// history with the git revision of their working folder.
    pub fn from_settings(settings: &Settings) -> Result<ExamJob> {
        let Some(golden) = settings.golden.clone() else {
            crate::bail!(
                "exam needs a golden set: give --golden FILE, or `golden` in veredicto.toml (`veredicto init` writes one)"
            );
        };
        let Some(retriever) = settings.source_uri() else {
            crate::bail!(
                "exam needs something to examine: give --run FILE, --index DIR or --retriever URI (or a [source] in veredicto.toml)"
            );
        };
        let policy = settings.policy_sections(&[Section::Exam])?.exam;
        Ok(ExamJob {
            golden,
            corpus: settings.corpus.clone(),
            documents: None,
            retriever,
            arms: Vec::new(),
            embedder: EmbedderSpec {
                embedder_model: "text-embedding-3-small".into(),
                api_key_env: "OPENAI_API_KEY".into(),
                ..EmbedderSpec::default()
            },
            net: Net::default(),
            depth: veredicto_retrieve::pass::DEFAULT_DEPTH,
            concurrency: veredicto_retrieve::pass::DEFAULT_CONCURRENCY,
            exactness_check: false,
            check_vectors: None,
            rerank: None,
            candidates: 30,
            keep: 10,
            latency_sample: veredicto_retrieve::pass::DEFAULT_LATENCY_SAMPLE,
            timings: false,
            notes: None,
            as_of: None,
            policy,
            seed: veredicto_core::compare::DEFAULT_SEED,
            record: Some(RecordJob {
                git_revision: crate::history::git_revision(&settings.cwd),
                ..RecordJob::default()
            }),
            allow_drafts: false,
        })
    }
}

/// Runs `job`: loads the golden set (and corpus, documents), opens the retriever, the
/// query embedder it needs and the reranker, examines every case and records the run in
/// the settings' history (comparing it with the baseline when asked). The time comes from
/// `clock`; messages and progress go to `events`.
pub fn run(
    job: &ExamJob,
    settings: &Settings,
    clock: &dyn Clock,
    events: Events<'_>,
) -> Result<ExamOutcome> {
    let drafts = crate::drafts::unaccepted(&job.golden)?;
    if let Some((line, id)) = drafts.first() {
        if !job.allow_drafts {
            crate::bail!(
                "{}: line {line}: origin: case {id:?} is a draft no person accepted ({} draft(s) in all): accept or reject each with `veredicto golden accept|reject ID`, or examine them anyway with --allow-drafts",
                job.golden.display(),
                drafts.len()
            );
        }
    }
    let crate::golden::Loaded { cases, corpus, .. } = crate::golden::load(
        &job.golden,
        job.corpus.as_deref(),
        job.documents.as_deref(),
        events,
    )?;
    // One total deadline for every request of the run: retriever, embedder, reranker.
    let deadline = job.net.total_deadline();
    let opened = crate::source::open(&job.retriever, &job.arms, settings, &job.net)?;
    let retriever = opened.retriever;
    let embedder = crate::source::embedder(
        retriever.as_ref(),
        opened.index_dir.as_deref(),
        &job.embedder,
        settings,
        &job.net,
        deadline,
        &cases,
        job.check_vectors.is_some(),
    )?;
    let reranker = match &job.rerank {
        Some(spec) => Some(crate::source::reranker(
            spec,
            settings,
            &job.embedder.api_key_env,
            &job.net,
            deadline,
        )?),
        None => None,
    };
    let notes = match &job.notes {
        Some(p) => veredicto_formats::notes::read_notes(p)?,
        None => BTreeMap::new(),
    };
    let as_of = job.as_of.clone().unwrap_or_else(|| clock.today());
    let corpus_fingerprint = match &job.corpus {
        Some(p) => {
            let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
            Some(veredicto_core::fingerprint::sha256_bytes(&bytes))
        }
        None => None,
    };
    let record = job.record.as_ref().map(|r| Recording {
        history: settings.history.as_str(),
        label: r.label.clone(),
        created_at: clock.now(),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_revision: r.git_revision.clone(),
        chunk_size: r.chunk_size,
        chunk_overlap: r.chunk_overlap,
        compare: r.compare.clone(),
        fail_on_regression: r.fail_on_regression,
        seed: job.seed,
    });
    crate::run_exam(ExamRequest {
        retriever: retriever.as_ref(),
        embedder: embedder.as_deref(),
        cases: &cases,
        policy: &job.policy,
        corpus,
        corpus_fingerprint,
        notes: &notes,
        as_of: &as_of,
        settings: veredicto_retrieve::pass::Settings {
            depth: job.depth,
            concurrency: job.concurrency,
            reranker: reranker.as_deref(),
            candidates: job.candidates,
            keep: job.keep,
            exactness_check: job.exactness_check,
            progress: None,
            latency_sample: job.latency_sample,
            duplicates: settings.duplicates,
            max_retriever_failures: settings.max_retriever_failures,
            cancel: None,
        },
        rerank_spec: job.rerank.as_deref(),
        fusion: opened.fusion.as_ref(),
        check_vectors: job
            .check_vectors
            .map(|n| crate::stored_vectors::CheckVectors {
                chunks: n,
                seed: job.seed,
            }),
        timings: job.timings,
        record,
        drafts: drafts.into_iter().map(|(_, id)| id).collect(),
        events,
    })
}
