//! The JSON wire format of `veredicto exam --format json` (documented in
//! `docs/exam-json.md`). Keys come in the report structs' declaration order and maps are
//! sorted, so the same inputs give byte-identical output.

use veredicto_core::exam::ExamReport;

/// Pretty-printed JSON with a trailing newline.
pub fn render(report: &ExamReport) -> String {
    // Serialising plain data (no maps with non-string keys that fail) cannot error.
    let mut filled = report.clone();
    crate::findings::fill_exam(&mut filled);
    let mut s = serde_json::to_string_pretty(&filled).unwrap_or_default();
    s.push('\n');
    s
}
