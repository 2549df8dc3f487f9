//! JUnit XML for CI: each case is a test case (failing cases carry a `<failure>` with the
//! reasons and the expected ranks), plus one `verdict` test case for the gate itself.

use crate::fmt;
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
    let failures =
        r.cases.iter().filter(|c| !c.passed).count() + usize::from(r.verdict == Verdict::Stop);
    let tests = r.cases.len() + 1;
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
        let msg = format!(
            "{}: recall {} (floor {}), QS {}, noise {}{}",
            fmt::reasons(c),
            fmt::pct(c.recall),
            fmt::pct(c.recall_floor),
            fmt::qs(c.quality),
            fmt::noise(c),
            if c.gold { ", gold case" } else { "" }
        );
        let mut body = format!("query: {}\nexpected: {}\n", c.query, fmt::expected_ranks(c));
        for f in &c.diagnosis {
            body.push_str(&format!(
                "diagnosis: {}{}\n",
                f.chunk
                    .as_deref()
                    .map(|x| format!("{x}: "))
                    .unwrap_or_default(),
                crate::gate::finding_text(c, f)
            ));
        }
        if let Some(note) = &c.note {
            body.push_str(&format!("note: {note}\n"));
        }
        out.push_str(&format!(
            "\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
            esc(&msg),
            esc(&fmt::reasons(c)),
            esc(&body)
        ));
    }
    out.push_str("    <testcase classname=\"veredicto.exam\" name=\"verdict\">");
    if r.verdict == Verdict::Stop {
        let reasons = fmt::stop_reasons(r).join("\n");
        out.push_str(&format!(
            "\n      <failure message=\"stop\" type=\"verdict\">{}</failure>\n    </testcase>\n",
            esc(&reasons)
        ));
    } else {
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
