//! The exam: one pass of the golden set over a retriever ([`veredicto_retrieve::pass`]),
//! the exam over what came back ([`examine`]: the report, stage summaries, the exactness
//! check, what the collection lacks), and the whole exam as one call ([`run_exam`]: the
//! run recorded in the history and compared with its baseline, the decision).
//! `veredicto exam` is [`run_exam`] plus argument parsing and printing; calibration and a
//! matrix of configurations call it too.
//!
//! What [`run_exam`] does, in order:
//! 1. the chunks for the diagnosis: the caller's corpus, else the retriever's own;
//! 2. retrieval and the exam ([`examine`]): stage summaries with a rerank stage, the
//!    retriever's failures in the failing cases' diagnosis, the exactness check;
//! 3. the run's configuration ([`RunConfig`]), without credentials;
//! 4. when asked, the run is recorded in the history and compared with its baseline;
//! 5. the decision: accepted when the gate accepts and no regression is to fail on.
//!
//! Nothing here prints: messages for the user are [`Notice`]s handed to the caller's
//! [`Events`] as they happen, and [`ExamOutcome::render`] gives the report's text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use veredicto_core::case::{Case, Corpus};
use veredicto_core::compare::{self, CompareOptions, Comparison};
use veredicto_core::diagnosis::{Check, DiagnosisFinding, Finding};
use veredicto_core::exam::stages::{exactness, k_of, stage_summary};
use veredicto_core::exam::{self as core_exam, ExamInput, ExamReport, Verdict};
use veredicto_core::history::{RecordedRun, RunConfig, RunMeta};
use veredicto_core::policy::Policy;
use veredicto_core::run::Run;
use veredicto_embed::Embedder;
use veredicto_report::Format;
use veredicto_retrieve::pass::{self, Retrieval, Settings};
use veredicto_retrieve::{RetrieveError, Retriever, Vectors};
use veredicto_store::History;

use crate::history::Baseline;
use crate::{Events, Result};

/// Everything one exam needs. The caller opens the retriever, loads the embedder and the
/// reranker (the latter goes in [`Settings::reranker`]) and reads the files; the clock and
/// the working tree are read by the caller too (`created_at`, `git_revision` in
/// [`Recording`]), so that this call is deterministic given its inputs.
pub struct ExamRequest<'a> {
    /// The retriever under examination.
    pub retriever: &'a dyn Retriever,
    /// The query embedder, when the retriever reads vectors and cases lack them
    /// ([`needs_embedder`]).
    pub embedder: Option<&'a dyn Embedder>,
    /// The golden cases.
    pub cases: &'a [Case],
    /// The policy.
    pub policy: &'a Policy,
    /// Chunks given by the caller (a corpus file); `None` takes the retriever's own
    /// ([`Retriever::corpus`]), when it holds them.
    pub corpus: Option<Corpus>,
    /// The identity of the caller's corpus file (`sha256:…`); `None` takes the retriever's
    /// ([`Retriever::fingerprint`]).
    pub corpus_fingerprint: Option<String>,
    /// Diagnosis notes per case ID.
    pub notes: &'a BTreeMap<String, String>,
    /// The exam date (`YYYY-MM-DD`) for validity windows.
    pub as_of: &'a str,
    /// Depth, concurrency, the rerank stage, the exactness check.
    pub settings: Settings<'a>,
    /// The rerank stage as the user named it (model folder or URL), recorded with the run
    /// without credentials.
    pub rerank_spec: Option<&'a str>,
    /// The fusion retriever's handle when the retriever is one
    /// ([`crate::retriever::Opened::fusion`]): the report gets its per-arm section.
    pub fusion: Option<&'a crate::retriever::FusionHandle>,
    /// The stored-vector check (`--check-vectors N`): needs `corpus` (the chunks' texts) and
    /// `embedder` (the query model); asked before the first case.
    pub check_vectors: Option<crate::stored_vectors::CheckVectors>,
    /// Put the per-stage latency in the report (it differs on every run, so the JSON is no
    /// longer byte-identical across runs).
    pub timings: bool,
    /// Record the run in a history (and compare it); `None` records nothing.
    pub record: Option<Recording<'a>>,
    /// IDs of the golden cases that are drafts no person accepted (`origin: "draft"`),
    /// examined because the caller allowed them: the report counts them as a warning.
    pub drafts: Vec<String>,
    /// Receives each [`Notice`] as it happens (as a note; they are also in
    /// [`ExamOutcome::notices`]) and the progress of the pass; its cancellation flag stops
    /// the pass.
    pub events: Events<'a>,
}

/// How a run is recorded, and whether it is compared with a baseline.
#[derive(Debug, Clone)]
pub struct Recording<'a> {
    /// The history: an SQLite file path or a `postgres://` URL (opened, and created when
    /// absent, only after the exam ran).
    pub history: &'a str,
    /// Version label of the corpus/index this run examined.
    pub label: Option<String>,
    /// When the run was made (RFC 3339).
    pub created_at: String,
    /// The version of the tool that ran the exam.
    pub tool_version: String,
    /// The git revision of the working tree, when there is one.
    pub git_revision: Option<String>,
    /// Declared chunk size of the corpus.
    pub chunk_size: Option<u32>,
    /// Declared chunk overlap.
    pub chunk_overlap: Option<u32>,
    /// Compare with this baseline after recording; `None` compares with nothing.
    pub compare: Option<Baseline>,
    /// A statistically significant drop or a newly failing gold case makes the exam fail
    /// even when the gate accepts (needs `compare`).
    pub fail_on_regression: bool,
    /// Seed of the randomisation test and the bootstrap of the comparison.
    pub seed: u64,
}

/// Something the user should be told while the exam runs (not an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Golden cases that got no results: absent from a run file (`in_run`), or the live
    /// retriever failed for them. They fail with `no_results`.
    CasesWithoutResults {
        /// Their IDs, in case order.
        ids: Vec<String>,
        /// Whether the retriever is a run known in advance (then they are "not in the run").
        in_run: bool,
    },
    /// The run was recorded.
    Recorded {
        /// Its ID.
        id: String,
        /// The history, without credentials.
        history: String,
    },
    /// No baseline to compare with yet.
    NoBaseline {
        /// The baseline asked for.
        baseline: String,
    },
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::CasesWithoutResults { ids, in_run } => {
                let what = if *in_run {
                    "not in the run"
                } else {
                    "failed in the retriever"
                };
                write!(
                    f,
                    "{} golden case(s) {what} (they fail with no_results): {}",
                    ids.len(),
                    veredicto_core::redact::short(&ids.join(", "))
                )
            }
            Notice::Recorded { id, history } => write!(f, "recorded run {id} in {history}"),
            Notice::NoBaseline { baseline } => write!(
                f,
                "no baseline ({baseline}) in the history yet: nothing to compare with"
            ),
        }
    }
}

/// What an exam concluded.
#[derive(Debug)]
pub struct ExamOutcome {
    /// The report (per-stage latency in it only when [`ExamRequest::timings`]).
    pub report: ExamReport,
    /// What was retrieved: the run (for a TREC file), the failures, the per-stage latency.
    pub retrieval: Retrieval,
    /// The configuration recorded with the run (the retriever without credentials).
    pub config: RunConfig,
    /// The recorded run's ID, when it was recorded.
    pub run_id: Option<String>,
    /// The comparison with the baseline, when asked for and one was found.
    pub comparison: Option<Comparison>,
    /// A regression against the baseline that the exam fails on
    /// ([`Recording::fail_on_regression`]).
    pub regression: bool,
    /// The notices, in the order they were given.
    pub notices: Vec<Notice>,
}

impl ExamOutcome {
    /// Whether the knowledge base may be deployed: the gate accepts and there is no
    /// regression to fail on.
    pub fn accepted(&self) -> bool {
        self.report.verdict == Verdict::Accept && !self.regression
    }

    /// The process exit code of the decision: 0 accepted, 1 stop.
    pub fn exit_code(&self) -> u8 {
        if self.accepted() {
            0
        } else {
            1
        }
    }

    /// The report as text: the report renderer's output, then (human format) one line per
    /// stage summary and per stage latency, then the comparison when there is one (in JSON,
    /// a `comparison` member of the report object; in JUnit, the regressions).
    pub fn render(&self, format: Format, color: bool) -> Result<String, serde_json::Error> {
        let report = &self.report;
        let mut text = veredicto_report::render(report, format, color);
        if matches!(format, Format::Human) {
            for s in &report.stages {
                text.push_str(&format!(
                    "stage {} @{}: mean recall {:.3} · MRR {:.3} · mean nDCG {:.3} · {} cases with every expected chunk\n",
                    s.stage, s.k, s.mean_recall, s.mrr, s.mean_ndcg, s.full_recall_cases
                ));
            }
            for (stage, l) in &self.retrieval.latency {
                let batch = l.batch_ms.zip(l.queries);
                if l.count == 0 {
                    if let Some((ms, n)) = batch {
                        text.push_str(&format!(
                            "latency {stage}: one batched pass of {n} queries in {ms:.2} ms (no single-query sample)\n"
                        ));
                    }
                    continue;
                }
                let source = match batch {
                    Some((ms, n)) => format!(
                        "single-query searches of {} of {n} queries, after one batched pass of all in {ms:.2} ms",
                        l.count
                    ),
                    None => format!("{} queries", l.count),
                };
                text.push_str(&format!(
                    "latency {stage}: p50 {:.2} ms · p95 {:.2} ms · p99 {:.2} ms · max {:.2} ms ({source})\n",
                    l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms
                ));
            }
        }
        if let Some(c) = &self.comparison {
            match format {
                Format::Human => {
                    text.push('\n');
                    text.push_str(&veredicto_report::comparison::human(c));
                }
                Format::Markdown => text.push_str(&veredicto_report::comparison::markdown(c)),
                Format::Json => {
                    text = veredicto_report::json::exam_with_comparison(report, Some(c));
                }
                // Newly failing cases carry type="regression", and a `regression` test
                // case fails when the comparison found one.
                Format::Junit => {
                    text = veredicto_report::junit::render_with_comparison(report, Some(c));
                }
            }
        }
        Ok(text)
    }
}

/// Whether an embedder must be loaded for `retriever`: one that requires vectors needs it
/// when a case has no `query_vector`; one that accepts vectors gets one only when the user
/// named an embedder explicitly (`explicit`); one that reads no vectors never.
pub fn needs_embedder(retriever: &dyn Retriever, cases: &[Case], explicit: bool) -> bool {
    match retriever.vectors() {
        Vectors::Never => false,
        Vectors::Optional => explicit,
        Vectors::Required => cases.iter().any(|c| c.query_vector.is_none()),
    }
}

/// Runs the exam: retrieval, the report, recording and comparison as asked, the decision.
pub fn run_exam(request: ExamRequest<'_>) -> Result<ExamOutcome> {
    let ExamRequest {
        retriever,
        embedder,
        cases,
        policy,
        corpus,
        corpus_fingerprint,
        notes,
        as_of,
        settings,
        rerank_spec,
        fusion,
        check_vectors,
        timings,
        record,
        drafts,
        events,
    } = request;
    let mut notices = Vec::new();
    let mut tell = |notice: Notice| {
        events.note(notice.to_string());
        notices.push(notice);
    };
    // A declared fusion stage is fixed: a fusion with other parameters is not this policy's.
    if let (Some(declared), Some(handle)) = (&policy.fusion, fusion) {
        let declared_canonical = declared
            .parse::<veredicto_core::fusion::Fusion>()
            .map(|f| f.to_string())
            .unwrap_or_else(|_| declared.clone());
        if declared_canonical != handle.method {
            crate::bail!(
                "the policy declares the fusion stage `{declared_canonical}` (fusion = \"{declared}\"), and the retriever fuses by `{}`: examine `--retriever 'fusion:{declared_canonical}'`, or change the policy (veredicto tune --write-policy)",
                handle.method
            );
        }
    }
    // Without a reranker, the exam reads only the chunks its report needs, after retrieval.
    let corpus = match corpus {
        Some(c) => Some(c),
        None if settings.reranker.is_none() => None,
        None => retriever.corpus()?,
    };
    if settings.reranker.is_some() && corpus.is_none() {
        crate::bail!(
            "--rerank needs the chunks' texts: give --corpus FILE (the own index keeps them)"
        );
    }
    // The stored-vector check first: a retriever that cannot return vectors, or a table
    // made by another model, is known before the cases run.
    let stored_vectors = match check_vectors {
        Some(ask) => {
            let Some(chunks) = corpus.as_ref() else {
                crate::bail!(
                    "--check-vectors needs the chunks' texts to embed: give --corpus FILE"
                );
            };
            let Some(embedder) = embedder else {
                crate::bail!("--check-vectors needs the query model: give --model or --embedder");
            };
            Some(crate::stored_vectors::check(
                retriever, embedder, chunks, ask,
            )?)
        }
        None => None,
    };
    // Progress of the pass as messages, and the caller's cancellation flag.
    let counter = crate::events::Counter::start(events, "cases examined", cases.len() as u64);
    let tick = || counter.add(1);
    let settings = Settings {
        progress: settings.progress.or(Some(&tick as &(dyn Fn() + Sync))),
        cancel: settings.cancel.or(events.cancel_flag()),
        ..settings
    };
    let examined = examine(
        retriever,
        embedder,
        &Inputs {
            cases,
            corpus: corpus.as_ref(),
            policy,
            notes,
            as_of: Some(as_of),
        },
        &settings,
    )?;
    drop(counter);
    let mut report = examined.report;
    report.stored_vectors = stored_vectors;
    if !drafts.is_empty() {
        report
            .warnings
            .push(veredicto_core::exam::ExamWarning::UnacceptedDrafts { cases: drafts });
    }
    let retrieval = examined.retrieval;
    let corpus = corpus.or(examined.corpus);
    if !retrieval.failures.is_empty() {
        tell(Notice::CasesWithoutResults {
            ids: retrieval.failures.keys().cloned().collect(),
            in_run: retriever.preloaded().is_some(),
        });
    }
    if timings {
        report.latency = retrieval.latency.clone();
    }
    if let Some(handle) = fusion {
        report.fusion = Some(crate::retriever::fusion_report(handle, &report, timings));
    }
    // The query embedder when one was loaded (for the own index it is the index's model,
    // checked), else the model the collection records; none for a retriever that never
    // takes query vectors (the own index's BM25 arm ranks without the index's model).
    let (embedding_model, model_hash) = match &report.query_embedder {
        Some(q) => (Some(q.name.clone()), Some(q.fingerprint.clone())),
        None if retriever.vectors() == veredicto_retrieve::Vectors::Never => (None, None),
        None => retriever.model(),
    };
    // The embedded field is veredicto's to state only where veredicto embedded (its own
    // index) or the policy declares it for a run file; a live retriever embeds its own.
    let field = matches!(retriever.kind(), "index" | "run-file").then(|| {
        serde_json::to_value(policy.field)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    });
    let mut config = RunConfig {
        retriever: retriever.kind().to_owned(),
        source: Some(retriever.describe()),
        embedding_model,
        model_hash,
        rerank: rerank_spec.map(veredicto_core::redact::url),
        field,
        top_k: policy.top_k,
        ..RunConfig::default()
    };
    let corpus_fingerprint = corpus_fingerprint.or_else(|| retriever.fingerprint());
    let mut run_id = None;
    let mut comparison = None;
    let mut regression = false;
    if let Some(rec) = record {
        config.chunk_size = rec.chunk_size;
        config.chunk_overlap = rec.chunk_overlap;
        let history = History::open_spec(rec.history)?;
        let meta = RunMeta {
            id: String::new(),
            created_at: rec.created_at.clone(),
            label: rec.label.clone(),
            golden_fingerprint: report.golden_fingerprint.clone(),
            policy_fingerprint: report.policy_fingerprint.clone(),
            corpus_fingerprint,
            config: config.clone(),
            tool_version: rec.tool_version.clone(),
            git_revision: rec.git_revision.clone(),
            latency: retrieval.latency.clone(),
        };
        // The history keeps the report in its wire format, sentences included.
        let id = history.record(&meta, &veredicto_report::findings::worded_exam(&report))?;
        if let Some(c) = &corpus {
            // The chunks this run read, for `corpus check`'s drift since an accepted run
            // (stored once per distinct corpus; a separate transaction after the run's).
            let snapshot = veredicto_core::snapshot::ChunkSnapshot::of(c.iter());
            history.record_run_chunks(&id, &snapshot)?;
        }
        tell(Notice::Recorded {
            id: id.clone(),
            history: crate::history::shown(rec.history),
        });
        if let Some(baseline) = rec.compare.as_ref().filter(|b| **b != Baseline::None) {
            let new = RecordedRun {
                meta: RunMeta {
                    id: id.clone(),
                    ..meta
                },
                report: report.clone(),
            };
            match baseline.resolve(&history, &new.meta)? {
                Some(base_id) => {
                    let base = history.get(&base_id)?;
                    let opts = CompareOptions {
                        seed: rec.seed,
                        corpus: corpus.as_ref(),
                        ..CompareOptions::default()
                    };
                    let c = compare::compare(&base, &new, &opts);
                    regression = rec.fail_on_regression && c.regression;
                    comparison = Some(c);
                }
                None => tell(Notice::NoBaseline {
                    baseline: baseline.to_string(),
                }),
            }
        }
        run_id = Some(id);
    }
    Ok(ExamOutcome {
        report,
        retrieval,
        config,
        run_id,
        comparison,
        regression,
        notices,
    })
}

/// Everything the exam reads besides the retriever.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    /// The golden cases.
    pub cases: &'a [Case],
    /// Chunks for the diagnosis (from `--corpus`, or the retriever's own). `None` reads,
    /// after retrieval and without a reranker, the chunks the report needs from the
    /// retriever ([`Retriever::corpus_for`]: the expected and the retrieved ones).
    pub corpus: Option<&'a Corpus>,
    /// The policy.
    pub policy: &'a Policy,
    /// Diagnosis notes per case ID.
    pub notes: &'a BTreeMap<String, String>,
    /// The exam date for validity windows.
    pub as_of: Option<&'a str>,
}

/// The exam over a retriever: the report (latency not filled in), the retrieval behind it.
pub struct Examined {
    /// The report, ready to render.
    pub report: ExamReport,
    /// What was retrieved (for `--save-run`, latency, failures).
    pub retrieval: Retrieval,
    /// The chunks read from the retriever after retrieval, when [`Inputs::corpus`] was
    /// `None` (see there).
    pub corpus: Option<Corpus>,
}

/// Retrieves every case and runs the exam on the result: stage summaries with a rerank
/// stage, the retriever's failures in the failing cases' diagnosis, the exactness check.
#[allow(clippy::result_large_err)] // the retrievers' own error, as their seam returns it
pub fn examine(
    retriever: &dyn Retriever,
    embedder: Option<&dyn Embedder>,
    inputs: &Inputs<'_>,
    settings: &Settings<'_>,
) -> Result<Examined, RetrieveError> {
    let policy = inputs.policy;
    let k_of = |c: &Case| k_of(policy, c);
    let mut retrieval = pass::retrieve(
        retriever,
        embedder,
        inputs.corpus,
        inputs.cases,
        &k_of,
        settings,
    )?;
    let loaded = match inputs.corpus {
        None if settings.reranker.is_none() => {
            retriever.corpus_for(&needed_ids(inputs.cases, &retrieval))?
        }
        _ => None,
    };
    let inputs = &Inputs {
        corpus: inputs.corpus.or(loaded.as_ref()),
        ..*inputs
    };
    // Before a boost reorders the run: what came back, against what was asked.
    let short = crate::live::short_results(retriever, inputs.cases, &retrieval, settings, &k_of)?;
    // A declared boost reranks the vector search's candidates (`--depth` deep); the
    // vector-only order is kept as stage 1 for the report.
    let boost_cases = match policy.boost.as_ref().filter(|b| !b.rules.is_empty()) {
        Some(_) if settings.reranker.is_some() => {
            return Err(RetrieveError::Setup {
                uri: retriever.describe(),
                reason: "the policy declares a [boost] and --rerank is given: use one or the other (a boost applies to the vector search's order)".into(),
            })
        }
        Some(b) => {
            let today = inputs.as_of.and_then(veredicto_core::time::parse_date_days);
            let (boosted, cases) = veredicto_core::boost::boost_run(
                b,
                &retrieval.run,
                inputs.cases,
                inputs.corpus,
                &policy.gold_label,
                &k_of,
                today,
            );
            let vector = std::mem::replace(&mut retrieval.run, boosted);
            retrieval.stage1 = Some(Run {
                name: format!("{} (vector only)", vector.name),
                ..vector
            });
            Some(cases)
        }
        None => None,
    };
    let evaluate = |cases: &[Case], run: &Run| {
        core_exam::evaluate(ExamInput {
            cases,
            run,
            corpus: inputs.corpus,
            policy,
            notes: inputs.notes,
            as_of: inputs.as_of,
        })
    };
    let mut report = evaluate(inputs.cases, &retrieval.run);
    report.query_embedder = embedder.map(|e| veredicto_core::exam::QueryEmbedder {
        name: e.fingerprint().name.clone(),
        fingerprint: e.fingerprint().digest(),
    });
    if let (Some(cases), Some(s1)) = (boost_cases, &retrieval.stage1) {
        // Both orders at each case's K: the vector search alone, then with the boost.
        let r1 = evaluate(inputs.cases, s1);
        report.stages = vec![
            stage_summary("retrieval", policy.top_k, &r1),
            stage_summary("boost", policy.top_k, &report),
        ];
        report.boost = cases;
    } else if let Some(s1) = &retrieval.stage1 {
        // Stage 1 at N candidates: the ceiling of the reranker.
        let at_n: Vec<Case> = inputs
            .cases
            .iter()
            .map(|c| Case {
                top_k: Some(settings.candidates as u32),
                ..c.clone()
            })
            .collect();
        let r1 = evaluate(&at_n, s1);
        report.stages = vec![
            stage_summary("retrieval", settings.candidates as u32, &r1),
            stage_summary("rerank", policy.top_k, &report),
        ];
    }
    report.summary.retriever_failures = match retriever.preloaded() {
        None => retrieval.failures.len(),
        Some(_) => 0,
    };
    let depth_applies = retriever.preloaded().is_none();
    let embedding_based = retriever.embedding_based();
    for case in &mut report.cases {
        let failure = retrieval.failures.get(&case.id);
        if failure.is_some() {
            case.diagnosis
                .retain(|f| !matches!(f.check, Check::Embedding | Check::Retriever));
        }
        for f in &mut case.diagnosis {
            if f.check == Check::Embedding && !embedding_based {
                f.check = Check::Retriever;
            }
            if let Some(DiagnosisFinding::NotRetrieved { .. }) = f.detail {
                f.detail = Some(if depth_applies {
                    DiagnosisFinding::NotWithinDepth {
                        depth: settings.depth.max(case.top_k as usize),
                        results: case.retrieved,
                    }
                } else {
                    DiagnosisFinding::NotInRun {
                        results: case.retrieved,
                    }
                });
            }
        }
        if let Some(error) = failure {
            case.diagnosis.insert(
                0,
                Finding::new(
                    Check::Retriever,
                    None,
                    DiagnosisFinding::RetrieverFailed {
                        error: error.to_string(),
                    },
                ),
            );
        }
    }
    let absent = crate::live::absent_expected(retriever, &report, &retrieval.failures)?;
    if let Some(exact) = &retrieval.exact {
        let exact_report = evaluate(inputs.cases, exact);
        let mut x = exactness(
            &mut report,
            &exact_report,
            inputs.cases,
            exact,
            &retrieval.run,
            policy,
            absent.as_ref(),
        );
        x.served_plan = crate::live::served_plan(retriever, inputs.cases, settings, &k_of)?;
        report.exactness = Some(x);
    }
    if let Some(absent) = &absent {
        veredicto_core::exam::stages::mark_absent(&mut report, absent, &retrieval.failures);
    }
    report.warnings.extend(short);
    Ok(Examined {
        report,
        retrieval,
        corpus: loaded,
    })
}

/// The chunks an exam's report reads: every case's expected chunks and every retrieved one.
fn needed_ids<'a>(cases: &'a [Case], retrieval: &'a Retrieval) -> BTreeSet<&'a str> {
    let mut ids: BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| c.expected.iter().map(String::as_str))
        .collect();
    for run in std::iter::once(&retrieval.run)
        .chain(&retrieval.stage1)
        .chain(&retrieval.exact)
    {
        ids.extend(run.queries.values().flatten().map(|r| r.id.as_str()));
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use veredicto_retrieve::{Hit, Ranking, Request, Vectors};

    /// A retriever that answers each case with a fixed list, and fails for `fail` (every
    /// case with `fail_all`).
    struct Fixed {
        lists: BTreeMap<String, Vec<&'static str>>,
        fail: Option<&'static str>,
        fail_all: bool,
    }

    impl Retriever for Fixed {
        fn describe(&self) -> String {
            veredicto_core::redact::url("http://user:hunter2@search.local/q?api_key=s3cret")
        }
        fn kind(&self) -> &'static str {
            "http"
        }
        fn vectors(&self) -> Vectors {
            Vectors::Optional
        }
        fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
            if self.fail_all || self.fail == Some(request.case_id) {
                return Err(RetrieveError::Case {
                    uri: self.describe(),
                    reason: "HTTP 503: busy (3 attempts over 1 s)".into(),
                });
            }
            let hits = self.lists[request.case_id]
                .iter()
                .map(|id| Hit {
                    id: (*id).to_owned(),
                    score: None,
                    span: None,
                })
                .collect();
            Ok(Ranking {
                hits,
                known: BTreeMap::new(),
            })
        }
    }

    fn case(id: &str, expected: &str) -> Case {
        Case {
            id: id.into(),
            query: format!("question {id}"),
            expected: vec![expected.into()],
            grades: Default::default(),
            evidence: Vec::new(),
            top_k: None,
            domain: None,
            tags: Vec::new(),
            gold: false,
            query_vector: None,
            filters: None,
        }
    }

    fn cases() -> Vec<Case> {
        (1..=4)
            .map(|i| case(&format!("q{i}"), &format!("c{i}")))
            .collect()
    }

    fn good() -> Fixed {
        Fixed {
            lists: (1..=4)
                .map(|i| (format!("q{i}"), vec!["x", ["c1", "c2", "c3", "c4"][i - 1]]))
                .collect(),
            fail: None,
            fail_all: false,
        }
    }

    fn recording(history: &str, compare: Option<Baseline>) -> Recording<'_> {
        Recording {
            history,
            label: Some("v1".into()),
            created_at: "2026-12-01T00:00:00.000Z".into(),
            tool_version: "0.0.0-test".into(),
            git_revision: None,
            chunk_size: Some(512),
            chunk_overlap: None,
            compare,
            fail_on_regression: true,
            seed: 7,
        }
    }

    fn request<'a>(
        retriever: &'a dyn Retriever,
        cases: &'a [Case],
        policy: &'a Policy,
        notes: &'a BTreeMap<String, String>,
        record: Option<Recording<'a>>,
    ) -> ExamRequest<'a> {
        ExamRequest {
            retriever,
            embedder: None,
            cases,
            policy,
            corpus: None,
            corpus_fingerprint: None,
            notes,
            as_of: "2026-12-01",
            settings: Settings::default(),
            rerank_spec: None,
            fusion: None,
            check_vectors: None,
            timings: false,
            record,
            drafts: Vec::new(),
            events: Events::silent(),
        }
    }

    #[test]
    fn an_exam_without_recording_decides_and_records_nothing() {
        let (policy, notes, cases) = (Policy::default(), BTreeMap::new(), cases());
        let r = good();
        let out = run_exam(request(&r, &cases, &policy, &notes, None)).unwrap();
        assert_eq!(out.report.verdict, Verdict::Accept);
        assert!(out.accepted());
        assert_eq!(out.exit_code(), 0);
        assert_eq!(out.run_id, None);
        assert!(out.notices.is_empty());
        assert!(out.report.latency.is_empty(), "latency only when asked");
        assert!(out.retrieval.latency.contains_key("search"));
        assert_eq!(out.config.retriever, "http");
        let source = out.config.source.as_deref().unwrap();
        assert!(
            !source.contains("hunter2") && !source.contains("s3cret"),
            "{source}"
        );
        // Human text: the report, then one latency line per stage.
        let text = out.render(Format::Human, false).unwrap();
        assert!(text.contains("latency search: p50 "), "{text}");
        let json = out.render(Format::Json, false).unwrap();
        assert!(!json.contains("\"comparison\""));
        assert!(!json.contains("\"latency\": {\n"), "{json}");
    }

    #[test]
    fn a_case_the_retriever_fails_is_a_notice_and_a_stop() {
        let (policy, notes, cases) = (Policy::default(), BTreeMap::new(), cases());
        let r = Fixed {
            fail: Some("q3"),
            ..good()
        };
        let seen = Mutex::new(Vec::new());
        let notify = |m: crate::Message| {
            if let crate::Message::Note(n) = m {
                seen.lock().unwrap().push(n);
            }
        };
        let mut req = request(&r, &cases, &policy, &notes, None);
        req.events = Events::new(&notify);
        req.timings = true;
        let out = run_exam(req).unwrap();
        assert_eq!(out.exit_code(), 1);
        assert_eq!(
            seen.into_inner().unwrap(),
            vec![
                "1 golden case(s) failed in the retriever (they fail with no_results): q3"
                    .to_owned()
            ]
        );
        assert_eq!(out.notices.len(), 1);
        assert!(out.report.latency.contains_key("search"));
        let q3 = out.report.cases.iter().find(|c| c.id == "q3").unwrap();
        assert!(
            veredicto_report::findings::finding_sentence(&q3.diagnosis[0])
                .starts_with("the retriever failed for this case: ")
        );
        // The verdict says the case failed in the retriever, not in the knowledge base.
        assert_eq!(out.report.summary.retriever_failures, 1);
        let text = out.render(Format::Human, false).unwrap();
        assert!(
            text.contains("q3 (retriever failed)")
                && text.contains("1 case failed in the retriever, not in the knowledge base: q3."),
            "{text}"
        );
        for format in [Format::Markdown, Format::Junit] {
            let text = out.render(format, false).unwrap();
            assert!(text.contains("not in the knowledge base"), "{text}");
        }
    }

    #[test]
    fn a_retriever_failing_every_case_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.db");
        let spec = path.to_str().unwrap();
        let (policy, notes, cases) = (Policy::default(), BTreeMap::new(), cases());
        let r = Fixed {
            fail_all: true,
            ..good()
        };
        let err = run_exam(request(
            &r,
            &cases,
            &policy,
            &notes,
            Some(recording(spec, Some(Baseline::Previous))),
        ))
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("http://search.local/q?api_key=[redacted]: the retriever failed for every case (4 of 4)"),
            "{text}"
        );
        assert!(
            text.ends_with("Last failure, case `q4`: HTTP 503: busy (3 attempts over 1 s)"),
            "{text}"
        );
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret"),
            "{text}"
        );
        assert!(!path.exists(), "nothing recorded, no history created");
    }

    #[test]
    fn recording_then_comparing_with_the_previous_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("history.db");
        let spec = path.to_str().unwrap();
        let (policy, notes, cases) = (Policy::default(), BTreeMap::new(), cases());
        let r = good();
        let first = run_exam(request(
            &r,
            &cases,
            &policy,
            &notes,
            Some(recording(spec, Some(Baseline::Previous))),
        ))
        .unwrap();
        let id = first.run_id.clone().unwrap();
        assert_eq!(
            first.notices,
            vec![
                Notice::Recorded {
                    id: id.clone(),
                    history: spec.to_owned()
                },
                Notice::NoBaseline {
                    baseline: "previous".into()
                }
            ]
        );
        assert!(first.comparison.is_none());

        // The stored row: the retriever without credentials, the declared chunk size.
        let history = History::open_spec(spec).unwrap();
        let stored = history.get(&id).unwrap();
        assert_eq!(stored.meta.config.chunk_size, Some(512));
        assert_eq!(stored.meta.label.as_deref(), Some("v1"));
        let row = serde_json::to_string(&stored).unwrap();
        assert!(!row.contains("hunter2") && !row.contains("s3cret"), "{row}");

        // Worse run: two cases lose their chunk; compared with the first.
        let worse = Fixed {
            lists: (1..=4)
                .map(|i| (format!("q{i}"), vec![if i <= 2 { "x" } else { "c3" }]))
                .collect(),
            fail: None,
            fail_all: false,
        };
        let second = run_exam(request(
            &worse,
            &cases,
            &policy,
            &notes,
            Some(recording(spec, Some(Baseline::Run(id.clone())))),
        ))
        .unwrap();
        let c = second.comparison.as_ref().expect("a comparison");
        assert_eq!(second.exit_code(), 1);
        assert_eq!(second.regression, c.regression);
        let json = second.render(Format::Json, false).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(value["comparison"].is_object());
        assert!(second.render(Format::Human, false).unwrap().contains('\n'));
    }

    #[test]
    fn baselines_parse_and_print_back() {
        for text in ["previous", "last-accepted", "none", "01HABC"] {
            assert_eq!(text.parse::<Baseline>().unwrap().to_string(), text);
        }
        assert_eq!("previous".parse::<Baseline>(), Ok(Baseline::Previous));
        assert!("previuos"
            .parse::<Baseline>()
            .unwrap_err()
            .contains("did you mean `previous`"));
    }

    #[test]
    fn a_rerank_stage_without_texts_is_refused() {
        struct Never;
        impl veredicto_embed::Reranker for Never {
            fn fingerprint(&self) -> &veredicto_embed::RerankerFingerprint {
                unreachable!()
            }
            fn score(&self, _: &str, _: &[&str]) -> Result<Vec<f32>, veredicto_embed::EmbedError> {
                unreachable!()
            }
        }
        let (policy, notes, cases) = (Policy::default(), BTreeMap::new(), cases());
        let r = good();
        let mut req = request(&r, &cases, &policy, &notes, None);
        req.settings.reranker = Some(&Never);
        let err = run_exam(req).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--rerank needs the chunks' texts"),
            "{err}"
        );
    }

    #[test]
    fn embedders_are_loaded_only_when_needed() {
        let mut cs = cases();
        let r = good();
        assert!(!needs_embedder(&r, &cs, false));
        assert!(needs_embedder(&r, &cs, true));
        struct Vec_;
        impl Retriever for Vec_ {
            fn describe(&self) -> String {
                "v".into()
            }
            fn kind(&self) -> &'static str {
                "v"
            }
            fn vectors(&self) -> Vectors {
                Vectors::Required
            }
            fn search(&self, _: &Request<'_>) -> Result<Ranking, RetrieveError> {
                Ok(Ranking::default())
            }
        }
        assert!(needs_embedder(&Vec_, &cs, false));
        for c in &mut cs {
            c.query_vector = Some(vec![1.0]);
        }
        assert!(!needs_embedder(&Vec_, &cs, false));
    }
}
