//! The whole exam as one call: [`run_exam`] takes an [`ExamRequest`] (the retriever and
//! its stages, the golden set, the policy, how to record) and returns an [`ExamOutcome`]
//! (the report, the retrieval behind it, the recorded run, the comparison with a baseline,
//! the decision). `veredicto exam` is this call plus argument parsing and printing; other
//! commands that examine a retriever (calibration, a matrix of configurations) call it too.
//!
//! What happens, in order:
//! 1. the chunks for the diagnosis: the caller's corpus, else the retriever's own;
//! 2. retrieval and the exam ([`crate::exam::examine`]): stage summaries with a rerank
//!    stage, the retriever's failures in the failing cases' diagnosis, the exactness check;
//! 3. the run's configuration ([`RunConfig`]), without credentials;
//! 4. when asked, the run is recorded in the history and compared with its baseline;
//! 5. the decision: accepted when the gate accepts and no regression is to fail on.
//!
//! Nothing here prints: messages for the user are [`Notice`]s handed to the caller as they
//! happen, and [`ExamOutcome::render`] gives the report's text.

use std::collections::BTreeMap;
use std::fmt;

use veredicto_core::case::{Case, Corpus};
use veredicto_core::compare::{self, CompareOptions, Comparison};
use veredicto_core::exam::{ExamReport, Verdict};
use veredicto_core::history::{RecordedRun, RunConfig, RunMeta};
use veredicto_core::policy::Policy;
use veredicto_embed::Embedder;
use veredicto_report::Format;
use veredicto_store::{History, StoreError};

use crate::exam::{self, Inputs, Retrieval, Settings};
use crate::{RetrieveError, Retriever};

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
    /// Put the per-stage latency in the report (it differs on every run, so the JSON is no
    /// longer byte-identical across runs).
    pub timings: bool,
    /// Record the run in a history (and compare it); `None` records nothing.
    pub record: Option<Recording<'a>>,
    /// Receives each [`Notice`] as it happens (e.g. to print it); `None` ignores them (they
    /// are also in [`ExamOutcome::notices`]).
    pub notify: Option<&'a dyn Fn(&Notice)>,
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

/// Which recorded run a new run is compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Baseline {
    /// The last earlier run with the same golden set and policy.
    Previous,
    /// The last accepted run before this one.
    LastAccepted,
    /// A run ID or a unique prefix of one.
    Run(String),
}

impl Baseline {
    /// `previous`, `last-accepted`, or a run ID / prefix.
    pub fn parse(text: &str) -> Baseline {
        match text {
            "previous" => Baseline::Previous,
            "last-accepted" => Baseline::LastAccepted,
            other => Baseline::Run(other.to_owned()),
        }
    }

    /// The baseline's run ID for `run`, or `None` when the history holds no such run yet.
    pub fn resolve(&self, history: &History, run: &RunMeta) -> Result<Option<String>, StoreError> {
        Ok(match self {
            Baseline::Previous => history.previous_compatible(run)?.map(|s| s.id),
            Baseline::LastAccepted => history.last_accepted(Some(&run.id), None)?.map(|s| s.id),
            Baseline::Run(id) => Some(history.resolve(id)?),
        })
    }
}

impl fmt::Display for Baseline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Baseline::Previous => f.write_str("previous"),
            Baseline::LastAccepted => f.write_str("last-accepted"),
            Baseline::Run(id) => f.write_str(id),
        }
    }
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

/// Why the exam could not conclude.
#[derive(Debug, thiserror::Error)]
pub enum ExamError {
    /// The retriever (or its embedder or reranker) failed in a way that stops the exam.
    #[error(transparent)]
    Retrieve(Box<RetrieveError>),
    /// A rerank stage without the chunks' texts to rerank.
    #[error("--rerank needs the chunks' texts: give --corpus FILE (the own index keeps them)")]
    RerankWithoutCorpus,
    /// Opening the history, recording the run or reading the baseline failed.
    #[error(transparent)]
    History(Box<StoreError>),
}

impl From<RetrieveError> for ExamError {
    fn from(e: RetrieveError) -> Self {
        ExamError::Retrieve(Box::new(e))
    }
}

impl From<StoreError> for ExamError {
    fn from(e: StoreError) -> Self {
        ExamError::History(Box::new(e))
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
                    let mut value = serde_json::to_value(report)?;
                    if let Some(map) = value.as_object_mut() {
                        map.insert("comparison".to_owned(), serde_json::to_value(c)?);
                    }
                    text = serde_json::to_string_pretty(&value)?;
                    text.push('\n');
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
        crate::Vectors::Never => false,
        crate::Vectors::Optional => explicit,
        crate::Vectors::Required => cases.iter().any(|c| c.query_vector.is_none()),
    }
}

/// The history as messages may show it: the path, or the URL without credentials.
fn shown_history(spec: &str) -> String {
    if veredicto_store::is_postgres_url(spec) {
        veredicto_core::redact::url(spec)
    } else {
        spec.to_owned()
    }
}

/// Runs the exam: retrieval, the report, recording and comparison as asked, the decision.
pub fn run_exam(request: ExamRequest<'_>) -> Result<ExamOutcome, ExamError> {
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
        timings,
        record,
        notify,
    } = request;
    let mut notices = Vec::new();
    let mut tell = |notice: Notice| {
        if let Some(f) = notify {
            f(&notice);
        }
        notices.push(notice);
    };
    // Without a reranker, the exam reads only the chunks its report needs, after retrieval.
    let corpus = match corpus {
        Some(c) => Some(c),
        None if settings.reranker.is_none() => None,
        None => retriever.corpus()?,
    };
    if settings.reranker.is_some() && corpus.is_none() {
        return Err(ExamError::RerankWithoutCorpus);
    }
    let examined = exam::examine(
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
    let mut report = examined.report;
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
    // The query embedder when one was loaded (for the own index it is the index's model,
    // checked), else the model the collection records.
    let (embedding_model, model_hash) = match &report.query_embedder {
        Some(q) => (Some(q.name.clone()), Some(q.fingerprint.clone())),
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
        let id = history.record(&meta, &report)?;
        if let Some(c) = &corpus {
            // The chunks this run read, for `corpus check`'s drift since an accepted run
            // (stored once per distinct corpus; a separate transaction after the run's).
            let snapshot = veredicto_core::snapshot::ChunkSnapshot::of(c.iter());
            history.record_run_chunks(&id, &snapshot)?;
        }
        tell(Notice::Recorded {
            id: id.clone(),
            history: shown_history(rec.history),
        });
        if let Some(baseline) = &rec.compare {
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
                    let mut c = compare::compare(&base, &new, &opts);
                    veredicto_report::findings::fill_comparison(&mut c);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hit, Ranking, Request, Vectors};
    use std::cell::RefCell;

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
            timings: false,
            record,
            notify: None,
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
        let seen = RefCell::new(Vec::new());
        let notify = |n: &Notice| seen.borrow_mut().push(n.to_string());
        let mut req = request(&r, &cases, &policy, &notes, None);
        req.notify = Some(&notify);
        req.timings = true;
        let out = run_exam(req).unwrap();
        assert_eq!(out.exit_code(), 1);
        assert_eq!(
            seen.into_inner(),
            vec![
                "1 golden case(s) failed in the retriever (they fail with no_results): q3"
                    .to_owned()
            ]
        );
        assert_eq!(out.notices.len(), 1);
        assert!(out.report.latency.contains_key("search"));
        let q3 = out.report.cases.iter().find(|c| c.id == "q3").unwrap();
        assert!(q3.diagnosis[0]
            .finding
            .starts_with("the retriever failed for this case: "));
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
        for text in ["previous", "last-accepted", "01HABC"] {
            assert_eq!(Baseline::parse(text).to_string(), text);
        }
        assert_eq!(Baseline::parse("previous"), Baseline::Previous);
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
        assert!(matches!(err, ExamError::RerankWithoutCorpus), "{err}");
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
