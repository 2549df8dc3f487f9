//! The comparison with the baseline: compatibility in words, newly failing / passing cases,
//! the metric tests, per-case deltas and displaced chunks.

use super::text::{escape, key, p_value, pct, plural, score, signed_f3, signed_pp, signed_qs};
use crate::fmt;
use veredicto_core::compare::{
    CaseDelta, CaseStatus, Comparison, Method, Metric, MetricTest, RankChange, RankDelta,
    RegressionReason, RunRef, ValueDelta,
};
use veredicto_core::exam::Verdict;

/// A metric's name for people: `mean recall`, `MRR`, …
pub fn metric_label(m: Metric) -> &'static str {
    match m {
        Metric::MeanRecall => "mean recall",
        Metric::MeanQuality => "mean QS",
        Metric::Mrr => "MRR",
        Metric::MeanNdcg => "mean nDCG",
        Metric::MeanPrecision => "mean P@K",
        Metric::MeanAveragePrecision => "mean AP",
    }
}

/// A value of `m` (recall as a percentage, QS on 0..100, the rest with three decimals).
fn value(m: Metric, v: f64) -> String {
    match m {
        Metric::MeanRecall => pct(v),
        Metric::MeanQuality => fmt::qs(v),
        _ => fmt::f3(v),
    }
}

/// A difference of `m`.
fn diff(m: Metric, d: f64) -> String {
    match m {
        Metric::MeanRecall => signed_pp(d),
        Metric::MeanQuality => signed_qs(d),
        _ => signed_f3(d),
    }
}

/// One regression reason as a sentence.
pub fn regression_reason(r: &RegressionReason) -> String {
    match r {
        RegressionReason::SignificantDrop {
            metric,
            mean_difference,
            p_adjusted,
        } => format!(
            "{} dropped by <strong>{}</strong> (Holm-adjusted p = {}): more than chance.",
            metric_label(*metric),
            diff(*metric, *mean_difference),
            p_value(*p_adjusted)
        ),
        RegressionReason::NewlyFailingGold { case } => format!(
            "gold case <code>{}</code> passed in the baseline and fails now.",
            escape(case)
        ),
    }
}

fn run_ref(r: &RunRef) -> String {
    format!(
        "<code>{}</code> <span class=\"small muted\">{}{}</span> <span class=\"tag {}\">{}</span>",
        escape(&r.id),
        escape(&r.created_at),
        r.label
            .as_deref()
            .map(|l| format!(" · {}", escape(l)))
            .unwrap_or_default(),
        match r.verdict {
            Verdict::Accept => "pass",
            Verdict::Stop => "fail",
        },
        match r.verdict {
            Verdict::Accept => "ACCEPT",
            Verdict::Stop => "STOP",
        }
    )
}

fn arrow(d: f64) -> &'static str {
    if d > 0.0 {
        "<span class=\"up\" aria-hidden=\"true\">▲</span> "
    } else if d < 0.0 {
        "<span class=\"down\" aria-hidden=\"true\">▼</span> "
    } else {
        ""
    }
}

fn test_row(t: &MetricTest) -> String {
    let m = t.metric;
    let ci = match (t.ci_low, t.ci_high) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", diff(m, lo), diff(m, hi)),
        _ => "—".to_owned(),
    };
    let sig = if t.significant {
        if t.mean_difference < 0.0 {
            "<span class=\"sig down\">yes: drop</span>"
        } else {
            "<span class=\"sig up\">yes: gain</span>"
        }
    } else {
        "no"
    };
    let method = match t.method {
        Method::Exact => format!("exact ({} patterns)", t.rearrangements),
        Method::MonteCarlo => format!("Monte-Carlo ({} draws)", t.rearrangements),
        Method::Degenerate => "nothing to permute".to_owned(),
    };
    format!(
        "<tr><th scope=\"row\">{}</th><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}{}</td><td class=\"n\">{}</td><td class=\"n\">{} / {} / {}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{sig}</td><td class=\"small\">{method}</td></tr>\n",
        metric_label(m),
        t.cases,
        value(m, t.base_mean),
        value(m, t.new_mean),
        arrow(t.mean_difference),
        diff(m, t.mean_difference),
        ci,
        t.improved,
        t.worsened,
        t.unchanged,
        p_value(t.p_value),
        p_value(t.p_adjusted),
    )
}

fn status_cell(s: CaseStatus) -> (&'static str, &'static str) {
    match s {
        CaseStatus::StillPassing => ("3", "pass → pass"),
        CaseStatus::StillFailing => ("1", "FAIL → FAIL"),
        CaseStatus::NewlyFailing => (
            "0",
            "<span class=\"tag fail\">newly failing</span> pass → FAIL",
        ),
        CaseStatus::NewlyPassing => (
            "2",
            "<span class=\"tag pass\">newly passing</span> FAIL → pass",
        ),
    }
}

fn rank(r: Option<usize>) -> String {
    r.map_or("–".to_owned(), |r| format!("#{r}"))
}

fn rank_move(e: &RankDelta) -> String {
    let mark = match e.change {
        RankChange::Worsened | RankChange::Disappeared => {
            "<span class=\"down\" title=\"pushed down\">▼</span>"
        }
        RankChange::Improved | RankChange::Appeared => {
            "<span class=\"up\" title=\"moved up\">▲</span>"
        }
        RankChange::Same | RankChange::Absent => "",
    };
    format!(
        "<span class=\"chunk{}\">{} <span class=\"r\">{} → {}</span>{mark}</span>",
        if e.new_in_top_k { "" } else { " out" },
        escape(&e.id),
        rank(e.base_rank),
        rank(e.new_rank)
    )
}

fn changed(d: &CaseDelta) -> bool {
    let values: [&ValueDelta; 6] = [
        &d.recall,
        &d.quality,
        &d.precision,
        &d.reciprocal_rank,
        &d.ndcg,
        &d.average_precision,
    ];
    matches!(
        d.status,
        CaseStatus::NewlyFailing | CaseStatus::NewlyPassing
    ) || values.iter().any(|v| v.delta != 0.0)
        || d.noise.base != d.noise.new
        || d.expected
            .iter()
            .chain(&d.evidence)
            .any(|e| !matches!(e.change, RankChange::Same | RankChange::Absent))
        || !d.displaced.is_empty()
}

fn delta_cell(
    v: &ValueDelta,
    text: impl Fn(f64) -> String,
    signed: impl Fn(f64) -> String,
) -> String {
    format!(
        "<td class=\"n\" data-v=\"{}\">{} → {} <span class=\"{}\">({})</span></td>",
        key(v.delta),
        text(v.base),
        text(v.new),
        if v.delta < 0.0 {
            "down"
        } else if v.delta > 0.0 {
            "up"
        } else {
            "muted"
        },
        signed(v.delta)
    )
}

/// The comparison section.
pub fn section(c: &Comparison) -> String {
    let mut s = String::from(
        "<section id=\"comparison\" aria-labelledby=\"comparison-h\"><h2 id=\"comparison-h\">Comparison with the baseline</h2>\n",
    );
    s.push_str(&format!(
        "<p>Baseline {} → this run {}. {} compared.</p>\n",
        run_ref(&c.base),
        run_ref(&c.new),
        plural(c.shared_cases, "shared case", "shared cases")
    ));
    let compat = &c.compatibility;
    if compat.comparable {
        s.push_str(&format!(
            "<p class=\"small\"><span class=\"tag pass\">comparable</span> Same golden set, policy, K and retrieval configuration: the runs differ only in their results{}.</p>\n",
            if compat.corpus_changed {
                " (and the corpus / index changed)"
            } else {
                ""
            }
        ));
    } else {
        s.push_str("<p class=\"small\"><span class=\"tag warn\">settings differ</span> The runs are compared only on the cases and settings they share. What differed:</p>\n<ul class=\"plain small\">\n");
        for d in crate::findings::compat_differences(compat) {
            s.push_str(&format!("<li>{}</li>\n", escape(&d)));
        }
        s.push_str("</ul>\n");
    }
    let gold_of = |id: &str| c.cases.iter().any(|d| d.id == id && d.gold);
    for (title, ids, cls) in [
        ("Newly failing", &c.newly_failing, "fail"),
        ("Newly passing", &c.newly_passing, "pass"),
    ] {
        let items: Vec<String> = ids
            .iter()
            .map(|id| {
                format!(
                    "<code>{}</code>{}",
                    escape(id),
                    if gold_of(id) {
                        " <span class=\"tag gold\">gold</span>"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        s.push_str(&format!(
            "<p><span class=\"tag {cls}\">{title}</span> <strong>{}</strong>{}</p>\n",
            ids.len(),
            if items.is_empty() {
                String::new()
            } else {
                format!(": {}", items.join(", "))
            }
        ));
    }

    // Metric tests.
    let st = &c.settings;
    s.push_str("<h3>Is the change more than chance?</h3>\n");
    s.push_str(&format!(
        "<div class=\"table-wrap\"><table><caption>Paired sign-flip randomisation test (two-sided) over the shared cases, paired bootstrap {}% interval of the mean difference ({} resamples), Holm correction across {}; significant when the adjusted p &lt; {}. Seed {}.</caption>\n",
        fmt::qs(st.confidence * 100.0),
        st.bootstrap,
        plural(c.tests.len(), "metric", "metrics"),
        st.alpha,
        st.seed
    ));
    s.push_str("<thead><tr><th scope=\"col\">metric</th><th scope=\"col\" class=\"n\">cases</th><th scope=\"col\" class=\"n\">baseline</th><th scope=\"col\" class=\"n\">this run</th><th scope=\"col\" class=\"n\">Δ</th><th scope=\"col\" class=\"n\">CI</th><th scope=\"col\" class=\"n\">up / down / same</th><th scope=\"col\" class=\"n\">p</th><th scope=\"col\" class=\"n\">Holm p</th><th scope=\"col\">significant</th><th scope=\"col\">method</th></tr></thead><tbody>\n");
    for t in &c.tests {
        s.push_str(&test_row(t));
    }
    s.push_str("</tbody></table></div>\n");

    // Per-case deltas.
    let rows: Vec<&CaseDelta> = c.cases.iter().filter(|d| changed(d)).collect();
    s.push_str("<h3>Per-case changes</h3>\n");
    if rows.is_empty() {
        s.push_str("<p class=\"small\">No shared case changed.</p>\n");
    } else {
        s.push_str(&format!(
            "<p class=\"small muted\">{} changed; {} unchanged not shown. Ranks are base → new; ▼ pushed down, ▲ moved up; red: outside the top-K now.</p>\n",
            plural(rows.len(), "case", "cases"),
            c.cases.len() - rows.len()
        ));
        s.push_str(
            "<div class=\"table-wrap\"><table class=\"sortable\" id=\"delta-table\"><thead><tr>",
        );
        for (h, n) in [
            ("case", false),
            ("status", false),
            ("recall", true),
            ("QS", true),
            ("RR", true),
            ("nDCG", true),
            ("noise", true),
            ("expected chunks (rank)", false),
        ] {
            s.push_str(&format!(
                "<th scope=\"col\"{}><button type=\"button\">{h}</button></th>",
                if n { " class=\"n\"" } else { "" }
            ));
        }
        s.push_str("</tr></thead><tbody>\n");
        for (i, d) in rows.iter().enumerate() {
            let (sk, st) = status_cell(d.status);
            s.push_str(&format!(
                "<tr data-i=\"{i}\"{}><th scope=\"row\" data-v=\"{}\"><code>{}</code>{}</th><td data-v=\"{sk}\">{st}</td>",
                if d.new_passed { "" } else { " class=\"fail\"" },
                escape(&d.id),
                escape(&d.id),
                if d.gold {
                    " <span class=\"tag gold\">gold</span>"
                } else {
                    ""
                }
            ));
            s.push_str(&delta_cell(&d.recall, pct, signed_pp));
            s.push_str(&delta_cell(&d.quality, fmt::qs, signed_qs));
            s.push_str(&delta_cell(&d.reciprocal_rank, fmt::f3, signed_f3));
            s.push_str(&delta_cell(&d.ndcg, fmt::f3, signed_f3));
            let nz = |v: Option<u32>| v.map_or("–".to_owned(), |v| v.to_string());
            s.push_str(&format!(
                "<td class=\"n\" data-v=\"{}\">{} → {}</td>",
                d.noise.delta.unwrap_or(0),
                nz(d.noise.base),
                nz(d.noise.new)
            ));
            let moves: Vec<String> = d
                .expected
                .iter()
                .chain(&d.evidence)
                .map(rank_move)
                .collect();
            s.push_str(&format!("<td>{}</td></tr>\n", moves.join("")));
        }
        s.push_str("</tbody></table></div>\n");
    }

    // Displaced chunks.
    let displaced: Vec<&CaseDelta> = c.cases.iter().filter(|d| !d.displaced.is_empty()).collect();
    s.push_str("<h3>Displaced expected chunks</h3>\n");
    if displaced.is_empty() {
        s.push_str("<p class=\"small\">No expected chunk was pushed out of the top-K.</p>\n");
    } else {
        s.push_str("<div class=\"table-wrap\"><table><caption>Expected chunks inside the top-K in the baseline and outside it now, with the chunks that rank above them now (as far as the new report lists them) and their ingest_batch</caption><thead><tr><th scope=\"col\">case</th><th scope=\"col\">expected chunk</th><th scope=\"col\" class=\"n\">rank</th><th scope=\"col\" class=\"n\">others above</th><th scope=\"col\">displaced by (rank, ingest_batch)</th></tr></thead><tbody>\n");
        for d in displaced {
            for x in &d.displaced {
                let by: Vec<String> = x
                    .by
                    .iter()
                    .map(|b| {
                        format!(
                            "<li><code>{}</code> #{}{}{}{}</li>",
                            escape(&b.id),
                            b.rank,
                            b.score
                                .map(|v| format!(" <span class=\"muted\">({})</span>", score(v)))
                                .unwrap_or_default(),
                            b.ingest_batch
                                .as_deref()
                                .map(|v| format!(
                                    " · batch <code>{}</code>{}",
                                    escape(v),
                                    b.ingested_at
                                        .as_deref()
                                        .map(|t| format!(
                                            " ingested {}",
                                            escape(&veredicto_core::compare::short_time(t))
                                        ))
                                        .unwrap_or_default()
                                ))
                                .unwrap_or_default(),
                            if b.newly_above == Some(true) {
                                " <span class=\"tag warn\">new above</span>"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect();
                let opt = |v: Option<usize>| v.map_or("?".to_owned(), |v| v.to_string());
                s.push_str(&format!(
                    "<tr><td><code>{}</code></td><td><code>{}</code></td><td class=\"n\">{} → {}</td><td class=\"n\">{} → {}</td><td>{}</td></tr>\n",
                    escape(&d.id),
                    escape(&x.chunk),
                    rank(x.base_rank),
                    rank(x.new_rank),
                    opt(x.above_before),
                    opt(x.above_now),
                    if by.is_empty() {
                        "<span class=\"muted small\">not listed by the new report</span>".to_owned()
                    } else {
                        format!("<ul class=\"plain small\">{}</ul>", by.join(""))
                    }
                ));
            }
        }
        s.push_str("</tbody></table></div>\n");
        // The same in one sentence per displaced chunk, new chunks first, by batch.
        s.push_str("<ul class=\"small\">\n");
        for d in c.cases.iter().filter(|d| !d.displaced.is_empty()) {
            for x in &d.displaced {
                s.push_str(&format!(
                    "<li>{}</li>\n",
                    escape(&crate::comparison::displacement(&d.id, x))
                ));
            }
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</section>\n");
    s
}
