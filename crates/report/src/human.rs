//! The terminal report: failing cases first (with expected ranks and diagnosis), then the
//! passing ones, the summary and the verdict line with its reasons.

use crate::fmt;
use veredicto_core::exam::{ExamReport, Verdict};
use veredicto_core::redact::{escape_control, escape_lines};

const HEADERS: [&str; 11] = [
    "case", "gold", "domain", "K", "recall", "QS", "P@K", "RR", "nDCG", "noise", "status",
];

struct Style {
    color: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }
    fn red(&self, s: &str) -> String {
        self.paint("1;31", s)
    }
    fn green(&self, s: &str) -> String {
        self.paint("1;32", s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
}

/// Renders the report for a terminal; `color` adds ANSI colours.
pub fn render(r: &ExamReport, color: bool) -> String {
    let st = Style { color };
    let mut out = String::new();
    if let Some(q) = &r.query_embedder {
        out.push_str(&st.dim(&escape_control(&format!(
            "query embedder: {} ({})",
            q.name,
            crate::fmt::short_fingerprint(&q.fingerprint)
        ))));
        out.push('\n');
    }
    let rows: Vec<[String; 11]> = fmt::failing_first(r)
        .iter()
        .map(|c| {
            [
                c.id.clone(),
                if c.gold { "yes" } else { "" }.to_owned(),
                c.domain.clone().unwrap_or_default(),
                c.top_k.to_string(),
                fmt::pct(c.recall),
                fmt::qs(c.quality),
                fmt::f3(c.precision),
                fmt::f3(c.reciprocal_rank),
                fmt::f3(c.ndcg),
                fmt::noise(c),
                if c.passed {
                    "pass".to_owned()
                } else if c.documented && !c.gold {
                    format!("FAIL {} (documented)", fmt::reasons(c))
                } else {
                    format!("FAIL {}", fmt::reasons(c))
                },
            ]
            // Control characters from the data (ESC…) must not drive the terminal.
            .map(|cell| escape_control(&cell))
        })
        .collect();
    let mut widths = HEADERS.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w - cell.chars().count();
            // Numbers right-aligned, text left-aligned.
            if (3..=9).contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if i + 1 < cells.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s.trim_end().to_owned()
    };
    out.push_str(&st.dim(&line(&HEADERS.map(str::to_owned))));
    out.push('\n');
    let failing: Vec<_> = fmt::failing_first(r);
    for (row, c) in rows.iter().zip(&failing) {
        let text = line(row);
        out.push_str(&if c.passed { text } else { st.red(&text) });
        out.push('\n');
        if !c.passed {
            let mut details = String::new();
            details.push_str(&format!("    expected: {}\n", fmt::expected_ranks(c)));
            if let Some(line) = crate::explain::case_duplicates_line(c) {
                details.push_str(&format!("    {line}\n"));
            }
            for f in &c.diagnosis {
                let chunk = f
                    .chunk
                    .as_deref()
                    .map(|c| format!("{c}: "))
                    .unwrap_or_default();
                details.push_str(&format!(
                    "    diagnosis [{}] {chunk}{}\n",
                    serde_json::to_value(f.check)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                    crate::explain::finding_text(c, f)
                ));
                if !f.outranked_by.is_empty() {
                    let list: Vec<String> = f
                        .outranked_by
                        .iter()
                        .map(|o| match (&o.ingest_batch, &o.ingested_at) {
                            (Some(b), Some(t)) => format!(
                                "{}#{} ({b}, {})",
                                o.id,
                                o.rank,
                                veredicto_core::compare::short_time(t)
                            ),
                            (Some(b), None) => format!("{}#{} ({b})", o.id, o.rank),
                            (None, _) => format!("{}#{}", o.id, o.rank),
                        })
                        .collect();
                    details.push_str(&format!("      outranked by: {}\n", list.join(", ")));
                }
            }
            if let Some(note) = &c.note {
                details.push_str(&format!("    note: {note}\n"));
            }
            out.push_str(&escape_lines(&details));
        }
    }
    let s = &r.summary;
    out.push('\n');
    out.push_str(&format!(
        "{} cases ({} gold) · mean QS {} (threshold {}) · mean recall {} · MRR {} · mean P@K {} · mean nDCG {} · mean AP {}\n",
        s.cases,
        s.gold_cases,
        fmt::qs(s.mean_quality),
        fmt::qs(r.policy.min_mean_quality),
        fmt::pct(s.mean_recall),
        fmt::f3(s.mrr),
        fmt::f3(s.mean_precision),
        fmt::f3(s.mean_ndcg),
        fmt::f3(s.mean_average_precision),
    ));
    out.push_str(&format!(
        "failing {} (gold {}, non-gold documented {}/{}, tolerated {}) · over noise {} · noise undefined {}\n",
        s.failing,
        s.failing_gold,
        s.failing_documented,
        s.failing - s.failing_gold,
        s.max_failing,
        s.over_noise,
        s.noise_undefined,
    ));
    for (name, v) in &s.measures {
        out.push_str(&format!("mean {name} {}\n", fmt::f3(*v)));
    }
    if let Some(line) = fmt::exactness(r) {
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(line) = fmt::stored_vectors(r) {
        out.push_str(&line);
        out.push('\n');
    }
    for line in fmt::boost_lines(r) {
        out.push_str(&escape_control(&line));
        out.push('\n');
    }
    for line in fmt::fusion_lines(r) {
        out.push_str(&escape_control(&line));
        out.push('\n');
    }
    let structural = crate::explain::structural_only(r);
    if structural > 0 {
        out.push_str(&format!(
            "{structural} case(s) fail on noise alone that no ranking can fix: their K exceeds what their expected list can fill (lower their top_k, or calibrate)\n"
        ));
    }
    out.push_str(&format!(
        "QS = Quality Score (0 below the recall floor, 100 at full recall) · noise = top-K results scoring below the worst expected chunk / the most allowed: {}\n",
        crate::explain::RULES_DOC
    ));
    if let Some(note) = crate::explain::uncalibrated_note(r) {
        out.push_str(&note);
        out.push('\n');
    }
    for w in crate::explain::warning_lines(r) {
        out.push_str(&st.red(&w));
        out.push('\n');
    }
    if let Some(line) = crate::explain::duplicates_line(r) {
        out.push_str(&escape_control(&line));
        out.push('\n');
    }
    if r.run.ignored_queries > 0 {
        let more = r
            .run
            .ignored_queries
            .saturating_sub(r.run.ignored_query_ids.len());
        out.push_str(&format!(
            "{} run queries are not in the golden set and were ignored: {}{}\n",
            r.run.ignored_queries,
            r.run.ignored_query_ids.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    out.push('\n');
    match r.verdict {
        Verdict::Accept => out.push_str(&st.green("verdict: ACCEPT")),
        Verdict::Stop => out.push_str(&st.red("verdict: STOP")),
    }
    out.push('\n');
    for reason in fmt::stop_reasons(r) {
        out.push_str(&format!("  - {}\n", escape_control(&reason)));
    }
    if let Some(line) = crate::explain::retriever_failures_line(r) {
        out.push_str(&format!("  {}\n", escape_control(&line)));
    }
    out
}
