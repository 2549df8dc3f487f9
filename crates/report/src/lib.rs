//! Renderers for veredicto reports (STYLE item 12: compute once, render many). Each
//! function takes the finished [`ExamReport`] and returns text; none recomputes a number.

pub mod audit;
pub mod calibration;
pub mod comparison;
pub mod corpus;
pub mod explain;
pub mod findings;
pub mod gate;
pub mod golden;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod matrix;
pub mod relevance;
pub mod runs;
pub mod signals;
pub mod trec;
pub mod tune;

mod fmt;

pub use fmt::{short_fingerprint, stored_vectors_line};

pub use veredicto_core::exam::ExamReport;

/// The output formats of `veredicto exam`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Markdown,
    Junit,
}

/// The verdict's reasons worded, one line each, as the human report lists them under the
/// verdict (empty when the exam accepts).
pub fn stop_reasons(report: &ExamReport) -> Vec<String> {
    fmt::stop_reasons(report)
}

/// One line per failing case, in case order: its ID, why it fails, its recall at K and
/// each expected chunk with its rank (`q-irpf: FAIL recall · recall 66.7% at K=10 ·
/// expected gold_001#1 silver_finanzas_123#15`; `#-`: not retrieved).
pub fn failing_case_lines(report: &ExamReport) -> Vec<String> {
    report
        .cases
        .iter()
        .filter(|c| !c.passed)
        .map(|c| {
            format!(
                "{}: FAIL {} \u{b7} recall {} at K={} \u{b7} expected {}",
                c.id,
                fmt::reasons(c),
                fmt::pct(c.recall),
                c.top_k,
                fmt::expected_ranks(c)
            )
        })
        .collect()
}

/// Renders `report` in `format`. `color` only affects the human format.
pub fn render(report: &ExamReport, format: Format, color: bool) -> String {
    match format {
        Format::Human => human::render(report, color),
        Format::Json => json::render(report),
        Format::Markdown => markdown::render(report),
        Format::Junit => junit::render(report),
    }
}
