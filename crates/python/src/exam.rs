//! `exam`: the golden-set exam over a Python callable, a retriever URI or a run file,
//! through [`veredicto_app::run_exam`] (the pipeline `veredicto exam` runs), with the GIL
//! released while the cases run. The outcome renders through `veredicto-report`, so its
//! JSON is the bytes `exam --format json` writes for the same inputs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use veredicto_app::exam_job::{ExamJob, RecordJob};
use veredicto_app::models::EmbedderSpec;
use veredicto_app::source::Net;
use veredicto_app::{
    Baseline, Env, Events, ExamOutcome, ExamRequest, FixedClock, Overrides, Recording, Settings,
};
use veredicto_core::exam::Verdict;
use veredicto_core::history::{RecordedRun, RunMeta};
use veredicto_core::retrieval::DuplicateRule;
use veredicto_formats::policy::{PolicyFile, Section};
use veredicto_report::Format;
use veredicto_retrieve::Retriever;

use crate::errors::{self, VeredictoError};
use crate::retriever::PyRetriever;

/// What an exam concluded (the Python package's `Exam` wraps it).
#[pyclass(module = "veredicto._native", frozen)]
pub struct NativeExam {
    outcome: ExamOutcome,
    created_at: String,
    label: Option<String>,
}

#[pymethods]
impl NativeExam {
    /// Whether the knowledge base may be deployed (the command line's exit code 0).
    #[getter]
    fn accepted(&self) -> bool {
        self.outcome.accepted()
    }

    /// `"accept"` or `"stop"` (the gate's verdict, before any regression check).
    #[getter]
    fn verdict(&self) -> &'static str {
        match self.outcome.report.verdict {
            Verdict::Accept => "accept",
            Verdict::Stop => "stop",
        }
    }

    /// Whether a regression against the baseline fails the exam.
    #[getter]
    fn regression(&self) -> bool {
        self.outcome.regression
    }

    /// The recorded run's ID, when the run was recorded.
    #[getter]
    fn run_id(&self) -> Option<String> {
        self.outcome.run_id.clone()
    }

    /// The notices the exam gave (cases without results, the run recorded, no baseline).
    #[getter]
    fn notices(&self) -> Vec<String> {
        self.outcome.notices.iter().map(|n| n.to_string()).collect()
    }

    /// The verdict's reasons worded, one line each (empty when the exam accepts).
    #[getter]
    fn reasons(&self) -> Vec<String> {
        veredicto_report::stop_reasons(&self.outcome.report)
    }

    /// One line per failing case: why it fails and each expected chunk with its rank.
    #[getter]
    fn failing_cases(&self) -> Vec<String> {
        veredicto_report::failing_case_lines(&self.outcome.report)
    }

    /// The report in a format: `json` (the exam JSON), `markdown`, `junit` or `human`.
    fn render(&self, format: &str) -> PyResult<String> {
        let format = match format {
            "json" => Format::Json,
            "markdown" => Format::Markdown,
            "junit" => Format::Junit,
            "human" => Format::Human,
            other => {
                return Err(VeredictoError::new_err(format!(
                    "unknown format '{other}' (json, markdown, junit, human)"
                )))
            }
        };
        self.outcome
            .render(format, false)
            .map_err(|e| VeredictoError::new_err(e.to_string()))
    }

    /// The self-contained HTML report of this run.
    fn to_html(&self) -> String {
        let o = &self.outcome;
        let run = RecordedRun {
            meta: RunMeta {
                id: o.run_id.clone().unwrap_or_default(),
                created_at: self.created_at.clone(),
                label: self.label.clone(),
                golden_fingerprint: o.report.golden_fingerprint.clone(),
                policy_fingerprint: o.report.policy_fingerprint.clone(),
                corpus_fingerprint: None,
                config: o.config.clone(),
                tool_version: env!("CARGO_PKG_VERSION").to_owned(),
                git_revision: None,
                latency: o.retrieval.latency.clone(),
            },
            report: veredicto_report::findings::worded_exam(&o.report),
        };
        veredicto_report::html::render(&veredicto_report::html::HtmlInput {
            current: &run,
            baseline_comparison: o.comparison.as_ref(),
            diagnosis: None,
            history: &[],
        })
    }
}

/// The retriever under examination as a URI (`postgres://…`, `http://…`, `index:DIR`,
/// `fusion:…`, `run:FILE`; a path without a scheme is a run file), or `None` for a
/// callable.
fn retriever_uri(retriever: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if let Ok(s) = retriever.extract::<String>() {
        return Ok(Some(veredicto_app::source::uri_or_run_file(&s)));
    }
    if let Ok(p) = retriever.extract::<PathBuf>() {
        return Ok(Some(format!("run:{}", p.display())));
    }
    if retriever.is_callable() {
        return Ok(None);
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "retriever must be a callable (query, k) -> results, a retriever URI or a run file path",
    ))
}

/// Runs the exam. `golden` is a path (the Python wrapper writes a list of dicts to a file);
/// `created_at` and `as_of` come from the caller's clock. A retriever URI is opened by the
/// application layer as `veredicto exam --retriever URI` opens it (its query model loaded
/// when it searches with vectors: `model`, else `VEREDICTO_MODEL`, else the index's);
/// a callable is called from `concurrency` threads.
#[pyfunction]
#[pyo3(signature = (golden, retriever, *, corpus=None, documents=None, policy=None, notes=None,
    history=None, label=None, depth=100, concurrency=4, as_of, created_at, baseline=None,
    fail_on_regression=false, seed=None, duplicates=None, model=None))]
#[allow(clippy::too_many_arguments)]
fn exam(
    py: Python<'_>,
    golden: PathBuf,
    retriever: &Bound<'_, PyAny>,
    corpus: Option<PathBuf>,
    documents: Option<PathBuf>,
    policy: Option<PathBuf>,
    notes: Option<PathBuf>,
    history: Option<String>,
    label: Option<String>,
    depth: usize,
    concurrency: usize,
    as_of: String,
    created_at: String,
    baseline: Option<String>,
    fail_on_regression: bool,
    seed: Option<u64>,
    duplicates: Option<String>,
    model: Option<String>,
) -> PyResult<NativeExam> {
    if concurrency == 0 {
        return Err(VeredictoError::new_err("concurrency must be at least 1"));
    }
    let policy = match &policy {
        Some(p) => {
            PolicyFile::read_sections(p, &[Section::Exam])
                .map_err(|e| errors::to_py(py, &e))?
                .exam
        }
        None => PolicyFile::default().exam,
    };
    let compare = match &baseline {
        None => None,
        Some(b) => Some(
            b.parse::<Baseline>()
                .map_err(|e| VeredictoError::new_err(e.to_string()))?,
        ),
    };
    let duplicates: DuplicateRule = match duplicates.as_deref() {
        None => Default::default(),
        Some(d) => d.parse().map_err(|e: String| VeredictoError::new_err(e))?,
    };
    let seed = seed.unwrap_or(veredicto_core::compare::DEFAULT_SEED);
    let Some(uri) = retriever_uri(retriever)? else {
        let retriever: Box<dyn Retriever> =
            Box::new(PyRetriever::new(py, retriever.clone().unbind()));
        let loaded = errors::app(
            py,
            py.detach(|| {
                veredicto_app::golden::load(
                    &golden,
                    corpus.as_deref(),
                    documents.as_deref(),
                    Events::silent(),
                )
            }),
        )?;
        let notes = match &notes {
            Some(p) => {
                veredicto_formats::notes::read_notes(p).map_err(|e| errors::to_py(py, &e))?
            }
            None => BTreeMap::new(),
        };
        let corpus_fingerprint = match &corpus {
            Some(p) => {
                let bytes = std::fs::read(p).map_err(|e| {
                    errors::input_error(
                        py,
                        format!("{}: {e}", p.display()),
                        &p.display().to_string(),
                        0,
                        None,
                    )
                })?;
                Some(veredicto_core::fingerprint::sha256_bytes(&bytes))
            }
            None => None,
        };
        let record = history.as_deref().map(|h| Recording {
            history: h,
            label: label.clone(),
            created_at: created_at.clone(),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            git_revision: None,
            chunk_size: None,
            chunk_overlap: None,
            compare: compare.clone(),
            fail_on_regression,
            seed,
        });
        let cases = loaded.cases;
        let outcome = py.detach(|| {
            veredicto_app::run_exam(ExamRequest {
                retriever: retriever.as_ref(),
                embedder: None,
                cases: &cases,
                policy: &policy,
                corpus: loaded.corpus,
                corpus_fingerprint,
                notes: &notes,
                as_of: &as_of,
                settings: veredicto_retrieve::pass::Settings {
                    depth,
                    concurrency,
                    latency_sample: 0,
                    duplicates,
                    ..veredicto_retrieve::pass::Settings::default()
                },
                rerank_spec: None,
                fusion: None,
                check_vectors: None,
                timings: false,
                record,
                drafts: Vec::new(),
                events: Events::silent(),
            })
        });
        let outcome = errors::app(py, outcome)?;
        return Ok(NativeExam {
            outcome,
            created_at,
            label,
        });
    };
    // A URI: the exam `veredicto exam --retriever URI` runs, through the application layer.
    let cwd = std::env::current_dir()
        .map_err(|e| VeredictoError::new_err(format!("the working folder: {e}")))?;
    let settings = Settings::resolve(
        &Overrides {
            history: history.clone(),
            model: model.clone(),
            duplicates: Some(duplicates),
            ..Overrides::default()
        },
        None,
        Env::from_vars(std::env::vars_os()),
        &cwd,
    );
    let mut job = ExamJob {
        golden,
        corpus,
        documents,
        retriever: uri,
        arms: Vec::new(),
        embedder: EmbedderSpec {
            model,
            embedder: None,
            embedder_model: "text-embedding-3-small".into(),
            api_key_env: "OPENAI_API_KEY".into(),
        },
        net: Net::default(),
        depth,
        concurrency,
        exactness_check: false,
        check_vectors: None,
        rerank: None,
        candidates: 30,
        keep: 10,
        latency_sample: 0,
        timings: false,
        notes,
        as_of: Some(as_of),
        policy,
        seed,
        record: None,
        allow_drafts: false,
    };
    if history.is_some() {
        job.record = Some(RecordJob {
            label: label.clone(),
            compare,
            fail_on_regression,
            ..RecordJob::default()
        });
    }
    let clock = FixedClock(created_at.clone());
    let outcome =
        py.detach(|| veredicto_app::exam_job::run(&job, &settings, &clock, Events::silent()));
    let outcome = errors::app(py, outcome)?;
    Ok(NativeExam {
        outcome,
        created_at,
        label,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeExam>()?;
    m.add_function(wrap_pyfunction!(exam, m)?)?;
    Ok(())
}
