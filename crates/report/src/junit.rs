//! JUnit XML for CI: each case is a test case (failing cases carry a `<failure>` with the
//! reasons and the expected ranks), plus one `verdict` test case for the gate itself.

use crate::fmt;
use veredicto_core::compare::Comparison;
use veredicto_core::exam::{ExamReport, Verdict};

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

pub fn render(r: &ExamReport) -> String {
    render_with_comparison(r, None)
}

/// [`render`], and when the run was compared with a baseline: failing cases that passed in
/// the baseline carry `type="regression"` and say so, and a `regression` test case fails
/// when the comparison found a regression (a significant drop, a newly failing gold case),
/// listing the reasons.
pub fn render_with_comparison(r: &ExamReport, comparison: Option<&Comparison>) -> String {
    let newly_failing: std::collections::BTreeSet<&str> = comparison
        .map(|c| c.newly_failing.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let regressed = comparison.is_some_and(|c| c.regression);
    let failures = r.cases.iter().filter(|c| !c.passed).count()
        + usize::from(r.verdict == Verdict::Stop)
        + usize::from(regressed);
    let tests = r.cases.len() + 1 + usize::from(comparison.is_some());
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"veredicto\" tests=\"{tests}\" failures=\"{failures}\">\n"
    ));
    out.push_str(&format!(
        "  <testsuite name=\"veredicto exam\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">\n"
    ));
    for c in &r.cases {
        let class = format!(
            "veredicto.exam.{}",
            c.domain.as_deref().unwrap_or("default")
        );
        out.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\">",
            esc(&class),
            esc(&c.id)
        ));
        if c.passed {
            out.push_str("</testcase>\n");
            continue;
        }
        let regression = newly_failing.contains(c.id.as_str());
        let msg = format!(
            "{}{}: recall {} (floor {}), QS {}, noise {}{}",
            if regression {
                format!(
                    "regression (passed in run {}): ",
                    comparison.map_or("", |c| c.base.id.as_str())
                )
            } else {
                String::new()
            },
            fmt::reasons(c),
            fmt::pct(c.recall),
            fmt::pct(c.recall_floor),
            fmt::qs(c.quality),
            fmt::noise(c),
            if c.gold { ", gold case" } else { "" }
        );
        let mut body = format!("query: {}\nexpected: {}\n", c.query, fmt::expected_ranks(c));
        if let Some(line) = crate::explain::case_duplicates_line(c) {
            body.push_str(&format!("{line}\n"));
        }
        for f in &c.diagnosis {
            body.push_str(&format!(
                "diagnosis: {}{}\n",
                f.chunk
                    .as_deref()
                    .map(|x| format!("{x}: "))
                    .unwrap_or_default(),
                crate::explain::finding_text(c, f)
            ));
        }
        if let Some(note) = &c.note {
            body.push_str(&format!("note: {note}\n"));
        }
        out.push_str(&format!(
            "\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
            esc(&msg),
            esc(&if regression {
                "regression".to_owned()
            } else {
                fmt::reasons(c)
            }),
            esc(&body)
        ));
    }
    if let Some(cmp) = comparison {
        out.push_str("    <testcase classname=\"veredicto.compare\" name=\"regression\">");
        if cmp.regression {
            let reasons: Vec<String> = cmp
                .regression_reasons
                .iter()
                .map(crate::comparison::regression_reason)
                .collect();
            out.push_str(&format!(
                "\n      <failure message=\"regression against run {}\" type=\"regression\">{}</failure>\n    </testcase>\n",
                esc(&cmp.base.id),
                esc(&format!(
                    "{}\nnewly failing: {}\n",
                    reasons.join("\n"),
                    cmp.newly_failing.join(", ")
                ))
            ));
        } else {
            out.push_str("</testcase>\n");
        }
    }
    out.push_str("    <testcase classname=\"veredicto.exam\" name=\"verdict\">");
    if r.verdict == Verdict::Stop {
        let mut lines = fmt::stop_reasons(r);
        lines.extend(crate::explain::retriever_failures_line(r));
        let reasons = lines.join("\n");
        out.push_str(&format!(
            "\n      <failure message=\"stop\" type=\"verdict\">{}</failure>\n    </testcase>\n",
            esc(&reasons)
        ));
    } else {
        out.push_str("</testcase>\n");
    }
    // Suite-level notes a CI log should show: duplicates removed, retriever failures under
    // an accepting verdict (a stopping one says them in its failure).
    let mut notes: Vec<String> = crate::explain::duplicates_line(r).into_iter().collect();
    notes.extend(fmt::stored_vectors(r));
    if r.verdict == Verdict::Accept {
        notes.extend(crate::explain::retriever_failures_line(r));
    }
    if !notes.is_empty() {
        out.push_str(&format!(
            "    <system-out>{}</system-out>\n",
            esc(&notes.join("\n"))
        ));
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
