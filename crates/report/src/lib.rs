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
pub mod runs;
pub mod signals;
pub mod trec;
pub mod tune;

mod fmt;

pub use veredicto_core::exam::ExamReport;

/// The output formats of `veredicto exam`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Markdown,
    Junit,
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
