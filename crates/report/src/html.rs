//! The self-contained HTML report (SPEC §9, issue 4): one file that opens from disk with no
//! network at all — inline CSS, inline SVG plots drawn here, and a few lines of inline
//! vanilla JavaScript that only sort tables.
//!
//! It shows, in this order: the verdict and its reasons in words, the run's provenance
//! (ID, time, label, fingerprints, configuration, tool version, git revision), the summary
//! numbers, the per-case table (sortable; failing rows highlighted; each expected chunk with
//! its rank), the per-case recall chart, the noise histogram with the ceiling and the noise
//! calibration, the diagnosis (per failing case, then cross-run patterns), the comparison
//! with the baseline, trend plots of mean QS, mean recall and MRR (overall and per domain)
//! over the history, and per-stage latency.
//!
//! Like every renderer it computes nothing the core has not: numbers come from the
//! [`RecordedRun`], the [`Comparison`] and the [`RunsDiagnosis`]. Two things are derived
//! here for display only: per-domain means of each run of the history (plain means of the
//! recorded per-case values) and, when no diagnosis is given, the current run's noise
//! calibration (the core's [`calibrate_noise`]).
//!
//! Output is deterministic (the same input gives the same bytes; nothing depends on the
//! clock or on hash order), every user string is HTML-escaped, and a Content Security
//! Policy forbids any network load.

mod assets;
mod cases;
mod compare;
mod diagnosis;
mod header;
mod svg;
mod text;
mod trends;

use veredicto_core::compare::{calibrate_noise, Comparison, RunsDiagnosis};
use veredicto_core::exam::Verdict;
use veredicto_core::history::RecordedRun;

pub use text::escape;

/// A small inline line chart of one value over runs (a table cell's trend, no axes): the
/// values scaled to their own range within `bounds`, the newest point marked, a tooltip per
/// point (`tooltips[i]: value`). Pages that show it style `svg.spark` themselves.
pub fn sparkline(
    title: &str,
    values: &[Option<f64>],
    tooltips: &[String],
    bounds: (f64, f64),
    format: &dyn Fn(f64) -> String,
) -> String {
    svg::sparkline(title, values, tooltips, bounds, format)
}

/// What the HTML report shows.
#[derive(Debug, Clone, Copy)]
pub struct HtmlInput<'a> {
    /// The run the report is about.
    pub current: &'a RecordedRun,
    /// The comparison of `current` with its baseline (`exam --compare`, `veredicto compare`).
    pub baseline_comparison: Option<&'a Comparison>,
    /// The cross-run diagnosis of the history ending with `current`.
    pub diagnosis: Option<&'a RunsDiagnosis>,
    /// Recorded runs, oldest → newest, for the trend plots. `current` is appended when it is
    /// not already in it (matched by run ID); an empty slice gives a one-run history.
    pub history: &'a [RecordedRun],
}

/// [`render`], with a note on the chunks rated relevant on the workbench although they
/// outrank a case's expected ones (`(case, chunk)` pairs): the golden set may be incomplete.
/// No pair: the report as [`render`] gives it.
pub fn render_with_judgments(input: &HtmlInput<'_>, relevant: &[(String, String)]) -> String {
    render_with_suggestions(input, relevant, &[])
}

/// [`render_with_judgments`], plus the outranking chunks a chat model suggested relevant
/// (`veredicto judge`), in their own section: a model's suggestion, never a person's
/// judgment ("3 outranking chunks suggested relevant: the golden set may be incomplete").
pub fn render_with_suggestions(
    input: &HtmlInput<'_>,
    relevant: &[(String, String)],
    suggested: &[(String, String)],
) -> String {
    let html = render(input);
    if relevant.is_empty() && suggested.is_empty() {
        return html;
    }
    let mut note = String::new();
    if !relevant.is_empty() {
        note.push_str(&format!(
            "<section id=\"judgments\"><p><strong>{} outranking chunk{} judged relevant: the golden set may be incomplete.</strong></p><ul>",
            relevant.len(),
            if relevant.len() == 1 { "" } else { "s" }
        ));
        for (case, chunk) in relevant {
            note.push_str(&format!(
                "<li>case {}: chunk {}</li>",
                escape(case),
                escape(chunk)
            ));
        }
        note.push_str("</ul></section>\n");
    }
    if !suggested.is_empty() {
        note.push_str(&format!(
            "<section id=\"suggestions\"><p><strong>{}.</strong> A chat model's suggestion (veredicto judge), to be confirmed by a person.</p><ul>",
            crate::relevance::suggested_sentence(suggested.len())
        ));
        for (case, chunk) in suggested {
            note.push_str(&format!(
                "<li>case {}: chunk {}</li>",
                escape(case),
                escape(chunk)
            ));
        }
        note.push_str("</ul></section>\n");
    }
    html.replacen("<body>\n", &format!("<body>\n{note}"), 1)
}

/// Renders the report as one self-contained HTML page.
pub fn render(input: &HtmlInput<'_>) -> String {
    let run = input.current;
    let report = &run.report;
    let verdict = match report.verdict {
        Verdict::Accept => "ACCEPT",
        Verdict::Stop => "STOP",
    };
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; \
         base-uri 'none'; form-action 'none'\">\n\
         <meta name=\"generator\" content=\"veredicto\">\n\
         <link rel=\"icon\" href=\"data:,\">\n",
    );
    out.push_str(&format!(
        "<title>veredicto: {verdict} · {}</title>\n",
        escape(&run.meta.id)
    ));
    // First script of the page: records uncaught errors into the DOM, where a headless
    // browser's --dump-dom (and the test) can see them.
    out.push_str("<script>");
    out.push_str(assets::ERROR_TRAP_JS);
    out.push_str("</script>\n<style>");
    out.push_str(assets::CSS);
    out.push_str("</style>\n</head>\n<body>\n");

    let calibration;
    let noise = match input.diagnosis.and_then(|d| d.noise.as_ref()) {
        Some(n) => n,
        None => {
            calibration = calibrate_noise(report);
            &calibration
        }
    };
    let history = trends::history_with(input.history, run);

    out.push_str(&header::nav(input));
    out.push_str("<main>\n");
    out.push_str(&header::verdict(run, input.baseline_comparison));
    out.push_str(&header::provenance(run));
    out.push_str(&header::summary(report));
    out.push_str(&header::fusion(report));
    out.push_str(&cases::table(report));
    out.push_str(&cases::charts(report, noise));
    out.push_str(&diagnosis::section(report, input.diagnosis));
    if let Some(c) = input.baseline_comparison {
        out.push_str(&compare::section(c));
    }
    out.push_str(&trends::section(&history, input.diagnosis));
    out.push_str(&trends::latency(run));
    out.push_str("</main>\n");
    out.push_str(&format!(
        "<footer>Report of run <code>{}</code> by veredicto {}. Self-contained: no network, \
         scripts only sort tables.</footer>\n",
        escape(&run.meta.id),
        escape(&run.meta.tool_version)
    ));
    out.push_str("<script>");
    out.push_str(assets::SORT_JS);
    out.push_str("</script>\n</body>\n</html>\n");
    out
}
