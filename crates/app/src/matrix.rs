//! The matrix: the exam once per declared configuration, each recorded in the history with
//! its configuration and labelled with its name, then one row per configuration with the
//! trend of its recorded runs on the same golden set.

use std::path::Path;
use veredicto_formats::matrix::{Matrix, MatrixConfig};
use veredicto_report::matrix::MatrixRow;

use crate::history::HistorySpec;
use crate::{Context, ExamOutcome, Result};

/// Recorded runs of a configuration its recall trend shows, newest last.
pub const TREND_RUNS: usize = 10;

/// One configuration's exam, as the caller ran it: the outcome, and the history it was
/// recorded in (`None` when not recorded).
#[derive(Debug)]
pub struct ConfigRun {
    /// The exam's outcome.
    pub outcome: ExamOutcome,
    /// Where the run was recorded.
    pub history: Option<HistorySpec>,
}

/// What a matrix gives: one row per configuration, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixOutcome {
    /// The rows.
    pub rows: Vec<MatrixRow>,
}

impl MatrixOutcome {
    /// Whether every configuration was accepted.
    pub fn accepted(&self) -> bool {
        self.rows.iter().all(|r| r.verdict == "accept")
    }
}

/// Runs `exam` for every configuration of `matrix` (read from `file`, which errors name)
/// and gathers the rows; each configuration's trend is read from the history its run was
/// recorded in. The caller runs one exam from a configuration (it resolves the exam's
/// settings as its own exam command does).
pub fn run_matrix(
    matrix: &Matrix,
    file: &Path,
    exam: &mut dyn FnMut(&MatrixConfig) -> Result<ConfigRun>,
) -> Result<MatrixOutcome> {
    let mut rows = Vec::new();
    let mut history = None;
    for c in &matrix.configs {
        let run = exam(c).with_context(|| {
            format!(
                "{}: configuration `{}`",
                file.display(),
                veredicto_core::redact::short(&c.name)
            )
        })?;
        let outcome = run.outcome;
        if run.history.is_some() {
            history = run.history;
        }
        let s = &outcome.report.summary;
        rows.push(MatrixRow {
            name: c.name.clone(),
            verdict: if outcome.accepted() { "accept" } else { "stop" }.into(),
            top_k: outcome.report.policy.top_k,
            cases: s.cases,
            mean_quality: s.mean_quality,
            mean_recall: s.mean_recall,
            mrr: s.mrr,
            mean_ndcg: s.mean_ndcg,
            failing: s.failing,
            run_id: outcome.run_id.clone(),
            recall_trend: Vec::new(),
        });
    }
    // Each configuration's trend: its recorded runs (by label) on this golden set.
    if let Some(spec) = history {
        let store = spec.open_read_only()?;
        for row in rows.iter_mut() {
            let runs = store.list(&veredicto_store::RunFilter {
                label: Some(row.name.clone()),
                limit: Some(TREND_RUNS),
                ..Default::default()
            })?;
            let golden = runs
                .iter()
                .find(|r| Some(&r.id) == row.run_id.as_ref())
                .map(|r| r.golden_fingerprint.clone());
            row.recall_trend = runs
                .iter()
                .rev()
                .filter(|r| Some(&r.golden_fingerprint) == golden.as_ref())
                .map(|r| r.mean_recall)
                .collect();
        }
    }
    Ok(MatrixOutcome { rows })
}
