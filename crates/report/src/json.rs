//! The JSON wire formats of the exam (`veredicto exam --format json`, documented in
//! `docs/exam-json.md`) and of the recorded runs (`runs show`, `compare`, `report`). Keys
//! come in the structs' declaration order and maps are sorted, so the same inputs give
//! byte-identical output. Every sentence (`finding`, `saw`, `cause`, `notes`,
//! `differences`) is worded here, at render time, from the typed findings: the data handed
//! in need not carry them.

use veredicto_core::compare::{Comparison, RunsDiagnosis};
use veredicto_core::exam::ExamReport;
use veredicto_core::history::RecordedRun;

use crate::findings::{worded_comparison, worded_exam, worded_runs};

/// Pretty JSON with a trailing newline. Serialising plain data (no maps with non-string
/// keys that fail) cannot error.
fn pretty(value: &impl serde::Serialize) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
    s.push('\n');
    s
}

/// An exam report.
pub fn render(report: &ExamReport) -> String {
    pretty(&worded_exam(report))
}

/// An exam report with its comparison as a `comparison` member of the report object (or
/// the report alone without one).
pub fn exam_with_comparison(report: &ExamReport, comparison: Option<&Comparison>) -> String {
    let Some(c) = comparison else {
        return render(report);
    };
    let mut value = serde_json::to_value(worded_exam(report)).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert(
            "comparison".to_owned(),
            serde_json::to_value(worded_comparison(c)).unwrap_or_default(),
        );
    }
    pretty(&value)
}

/// A recorded run whole: provenance and report (`runs show --format json`).
pub fn run(run: &RecordedRun) -> String {
    pretty(&RecordedRun {
        meta: run.meta.clone(),
        report: worded_exam(&run.report),
    })
}

/// A comparison and the cross-run diagnosis (`compare --format json`).
pub fn comparison(comparison: &Comparison, diagnosis: &RunsDiagnosis) -> String {
    pretty(&serde_json::json!({
        "comparison": worded_comparison(comparison),
        "diagnosis": worded_runs(diagnosis),
    }))
}

/// A recorded run with its baseline comparison, if any, and the cross-run diagnosis
/// (`report --format json`).
pub fn run_report(
    current: &RecordedRun,
    comparison: Option<&Comparison>,
    diagnosis: &RunsDiagnosis,
) -> String {
    let run = RecordedRun {
        meta: current.meta.clone(),
        report: worded_exam(&current.report),
    };
    pretty(&serde_json::json!({
        "run": run,
        "comparison": comparison.map(worded_comparison),
        "diagnosis": worded_runs(diagnosis),
    }))
}
