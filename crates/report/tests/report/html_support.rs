//! Shared fixtures of the HTML report tests: a six-run history of the bundled example
//! (`examples/rack/`, seed 000's Friday story) built with the real exam, plus the comparison
//! and cross-run diagnosis of its newest run. Included by the `html_*` tests with `#[path]`.
//!
//! The history degrades week by week: run 0 is the accept run; run `i` takes the stop run's
//! results for the first `i` of the five cases that differ between the two runs, so run 5 is
//! the stop run (Friday, batch `2025-11-14-viajes`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use veredicto_core::case::{Case, Corpus};
use veredicto_core::compare::{
    compare, diagnose_runs, CompareOptions, Comparison, DiagnoseOptions, RunsDiagnosis,
};
use veredicto_core::exam::{evaluate, ExamInput};
use veredicto_core::history::{RecordedRun, RunConfig, RunMeta, StageLatency};
use veredicto_core::policy::Policy;
use veredicto_core::run::Run;
use veredicto_formats as formats;

/// The five cases whose results differ between `run-accept.trec` and `run-stop.trec`,
/// in the order the history breaks them.
pub const CHANGING: [&str; 5] = [
    "q-kilometraje",
    "q-jornada-anual",
    "q-asuntos-propios",
    "q-irpf-autonomos",
    "q-viaje-internacional",
];

pub fn rack(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/rack")
        .join(file)
}

/// The example's inputs.
pub struct Rack {
    pub cases: Vec<Case>,
    pub corpus: Corpus,
    pub policy: Policy,
    pub notes: BTreeMap<String, String>,
    pub accept: Run,
    pub stop: Run,
}

impl Rack {
    pub fn load() -> Self {
        Rack {
            cases: formats::golden::read_golden(&rack("golden.jsonl")).expect("golden"),
            corpus: Corpus::new(
                formats::corpus::read_corpus(&rack("corpus.jsonl")).expect("corpus"),
            ),
            policy: formats::policy::read_policy(&rack("policy.toml")).expect("policy"),
            notes: formats::notes::read_notes(&rack("notes.jsonl")).expect("notes"),
            accept: formats::run::read_run(&rack("run-accept.trec")).expect("accept run"),
            stop: formats::run::read_run(&rack("run-stop.trec")).expect("stop run"),
        }
    }

    /// The accept run with the stop run's results for the first `broken` changing cases.
    pub fn mixed(&self, broken: usize) -> Run {
        let mut run = self.accept.clone();
        for id in CHANGING.iter().take(broken) {
            run.queries
                .insert((*id).to_owned(), self.stop.results(id).to_vec());
        }
        if broken == CHANGING.len() {
            run.name = self.stop.name.clone();
        } else if broken > 0 {
            run.name = format!("{}-partial-{broken}", self.accept.name);
        }
        run
    }

    /// Runs the exam on `run` and wraps it as the history keeps it.
    pub fn record(&self, i: usize, run: &Run) -> RecordedRun {
        let day = 10 + 7 * i; // 2025-10-10, -17, -24, -31, 11-07, 11-14
        let (month, day) = if day > 31 { (11, day - 31) } else { (10, day) };
        let date = format!("2025-{month:02}-{day:02}");
        let report = evaluate(ExamInput {
            cases: &self.cases,
            run,
            corpus: Some(&self.corpus),
            policy: &self.policy,
            notes: &self.notes,
            as_of: Some(&date),
        });
        let mut latency = BTreeMap::new();
        latency.insert(
            "query_embedding".to_owned(),
            StageLatency {
                count: 12,
                p50_ms: 3.1 + i as f64 * 0.1,
                p95_ms: 4.7,
                p99_ms: 5.2,
                max_ms: 5.3,
                ..StageLatency::from_samples(&[])
            },
        );
        latency.insert(
            "search".to_owned(),
            StageLatency {
                count: 12,
                p50_ms: 0.42,
                p95_ms: 0.61,
                p99_ms: 0.7,
                max_ms: 0.71,
                ..StageLatency::from_samples(&[])
            },
        );
        RecordedRun {
            meta: RunMeta {
                id: format!("01JC{i}RACK{}", date.replace('-', "")),
                created_at: format!("{date}T17:40:00Z"),
                label: Some(format!("rack-{date}")),
                golden_fingerprint: report.golden_fingerprint.clone(),
                policy_fingerprint: report.policy_fingerprint.clone(),
                corpus_fingerprint: Some(format!("sha256:{:064x}", 0x5eed_0000_u64 + i as u64)),
                config: RunConfig {
                    retriever: "run-file".into(),
                    source: Some(format!("examples/rack/{}.trec", run.name)),
                    embedding_model: Some("intfloat/multilingual-e5-small".into()),
                    model_hash: Some(format!("sha256:{:064x}", 0xe5_u64)),
                    field: Some("representation".into()),
                    top_k: self.policy.top_k,
                    rerank: None,
                    chunk_size: Some(512),
                    chunk_overlap: Some(64),
                },
                tool_version: "0.1.0".into(),
                git_revision: Some("3f2a9c1d0b7e4a5f6c8d9e0a1b2c3d4e5f6a7b8c".into()),
                latency,
            },
            report,
        }
    }

    /// Six runs, oldest → newest, the newest being the stop run.
    pub fn history(&self) -> Vec<RecordedRun> {
        (0..=CHANGING.len())
            .map(|i| self.record(i, &self.mixed(i)))
            .collect()
    }
}

/// Everything a full report shows.
pub struct Fixture {
    pub rack: Rack,
    pub history: Vec<RecordedRun>,
    pub comparison: Comparison,
    pub diagnosis: RunsDiagnosis,
}

impl Fixture {
    /// The history, the newest run compared with the last accepted one, and the cross-run
    /// diagnosis.
    pub fn build() -> Self {
        let rack = Rack::load();
        let history = rack.history();
        let newest = history.last().expect("history");
        let base = history[..history.len() - 1]
            .iter()
            .rev()
            .find(|r| r.report.verdict == veredicto_core::exam::Verdict::Accept)
            .expect("an accepted run");
        let comparison = compare(
            base,
            newest,
            &CompareOptions {
                corpus: Some(&rack.corpus),
                ..CompareOptions::default()
            },
        );
        let diagnosis = diagnose_runs(&history, Some(&rack.corpus), &DiagnoseOptions::default());
        Fixture {
            rack,
            history,
            comparison,
            diagnosis,
        }
    }

    pub fn current(&self) -> &RecordedRun {
        self.history.last().expect("history")
    }

    /// The full report of the newest run.
    pub fn render(&self) -> String {
        veredicto_report::html::render(&veredicto_report::html::HtmlInput {
            current: self.current(),
            baseline_comparison: Some(&self.comparison),
            diagnosis: Some(&self.diagnosis),
            history: &self.history,
        })
    }
}
