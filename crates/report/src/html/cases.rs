//! The per-case table, the per-case recall chart, the noise histogram and the noise
//! calibration.

use super::svg::{self, Bar, Bin};
use super::text::{escape, key, pct, plural, score, truncate};
use crate::fmt;
use veredicto_core::compare::{NoiseCalibration, NoiseDistribution};
use veredicto_core::exam::noise::max_noise;
use veredicto_core::exam::{CaseResult, ExamReport, ExpectedChunk};

/// One expected chunk with its rank: `silver_finanzas_123 #15` (gold starred, a rank beyond
/// K in red, details in the tooltip).
pub fn chunk_rank(e: &ExpectedChunk, k: u32) -> String {
    let mut class = String::from("chunk");
    let mut tip = Vec::new();
    if e.gold {
        class.push_str(" gold");
        tip.push("gold chunk".to_owned());
    }
    match e.rank {
        Some(r) => {
            tip.push(format!("rank {r}"));
            if let Some(s) = e.score {
                tip.push(format!("score {}", score(s)));
            }
            if !e.in_top_k {
                class.push_str(" out");
                tip.push(format!("outside the top {k}"));
            }
        }
        None => {
            class.push_str(" out");
            tip.push("not retrieved".to_owned());
        }
    }
    if e.in_corpus == Some(false) {
        tip.push("not in the corpus".to_owned());
    }
    if e.grade != veredicto_core::evidence::DEFAULT_GRADE {
        tip.push(format!("grade {}", e.grade));
    }
    let rank = e.rank.map_or("#–".to_owned(), |r| format!("#{r}"));
    let rank = if e.grade == veredicto_core::evidence::DEFAULT_GRADE {
        rank
    } else {
        format!("{rank} g{}", e.grade)
    };
    format!(
        "<span class=\"{class}\" title=\"{}\">{}{} <span class=\"r\">{rank}</span></span>",
        escape(&tip.join(" · ")),
        if e.gold {
            "<span class=\"sr\">gold </span>"
        } else {
            ""
        },
        escape(&e.id)
    )
}

fn status(c: &CaseResult) -> (&'static str, String) {
    if c.passed {
        ("pass", "PASS".to_owned())
    } else if c.documented && !c.gold {
        (
            "fail",
            "FAIL<br><span class=\"muted small\">documented</span>".to_owned(),
        )
    } else {
        ("fail", "FAIL".to_owned())
    }
}

fn note_cell(note: Option<&str>) -> String {
    match note {
        None => String::new(),
        Some(n) if n.chars().count() <= 90 => escape(n),
        Some(n) => format!(
            "<details><summary>{}</summary>{}</details>",
            escape(&truncate(n, 70)),
            escape(n)
        ),
    }
}

/// The sortable per-case table (failing cases first, then golden-set order).
pub fn table(r: &ExamReport) -> String {
    let mut s = String::from(
        "<section id=\"cases\" aria-labelledby=\"cases-h\"><h2 id=\"cases-h\">Cases</h2>\n",
    );
    s.push_str(&format!(
        "<p class=\"small muted\">{}, failing first. Click a column header to sort. Expected \
         chunks are listed with their rank in the run (<span class=\"chunk gold\">gold</span> \
         marks a gold chunk; a rank in red is outside the top-K, <code>#–</code> not \
         retrieved).</p>\n",
        plural(r.cases.len(), "case", "cases")
    ));
    s.push_str("<div class=\"table-wrap\"><table class=\"sortable\" id=\"case-table\">\n<caption>Per-case results at each case's K</caption>\n<thead><tr>");
    let headers: [(&str, bool); 14] = [
        ("case", false),
        ("gold", false),
        ("domain", false),
        ("K", true),
        ("recall", true),
        ("QS", true),
        ("P@K", true),
        ("RR", true),
        ("nDCG", true),
        ("noise/max", true),
        ("status", false),
        ("reasons", false),
        ("expected chunks (rank)", false),
        ("note", false),
    ];
    for (h, numeric) in headers {
        s.push_str(&format!(
            "<th scope=\"col\"{}><button type=\"button\">{h}</button></th>",
            if numeric { " class=\"n\"" } else { "" }
        ));
    }
    s.push_str("</tr></thead>\n<tbody>\n");
    for (i, c) in fmt::failing_first(r).into_iter().enumerate() {
        let (cls, st) = status(c);
        let worst = c
            .expected
            .iter()
            .map(|e| e.rank.unwrap_or(1_000_000))
            .max()
            .unwrap_or(0);
        s.push_str(&format!(
            "<tr data-i=\"{i}\"{}>",
            if c.passed { "" } else { " class=\"fail\"" }
        ));
        s.push_str(&format!(
            "<th scope=\"row\" data-v=\"{}\"><code>{}</code><span class=\"query\">{}</span></th>",
            escape(&c.id),
            escape(&c.id),
            escape(&c.query)
        ));
        s.push_str(&format!(
            "<td data-v=\"{}\">{}</td>",
            u8::from(c.gold),
            if c.gold {
                "<span class=\"tag gold\">gold</span>"
            } else {
                ""
            }
        ));
        s.push_str(&format!(
            "<td>{}</td>",
            escape(c.domain.as_deref().unwrap_or(""))
        ));
        s.push_str(&format!(
            "<td class=\"n\" data-v=\"{}\">{}</td>",
            c.top_k, c.top_k
        ));
        for (v, text) in [
            (c.recall, pct(c.recall)),
            (c.quality, fmt::qs(c.quality)),
            (c.precision, fmt::f3(c.precision)),
            (c.reciprocal_rank, fmt::f3(c.reciprocal_rank)),
            (c.ndcg, fmt::f3(c.ndcg)),
        ] {
            s.push_str(&format!(
                "<td class=\"n\" data-v=\"{}\">{text}</td>",
                key(v)
            ));
        }
        let over = c.noise.is_some_and(|n| n > c.max_noise);
        s.push_str(&format!(
            "<td class=\"n{}\" data-v=\"{}\"{}>{}</td>",
            if over { " down sig" } else { "" },
            c.noise.map_or(-1, i64::from),
            if over {
                " title=\"over the noise ceiling\""
            } else {
                ""
            },
            escape(&fmt::noise(c))
        ));
        s.push_str(&format!(
            "<td data-v=\"{}\" class=\"status {cls}\">{st}</td>",
            u8::from(c.passed)
        ));
        s.push_str(&format!(
            "<td>{}</td>",
            if c.passed {
                String::new()
            } else {
                escape(&fmt::reasons(c).replace(',', ", "))
            }
        ));
        let chunks: Vec<String> = c
            .expected
            .iter()
            .map(|e| chunk_rank(e, c.top_k))
            .chain(
                c.evidence
                    .iter()
                    .map(|e| evidence_rank(e, c.top_k, c.retrieved)),
            )
            .collect();
        s.push_str(&format!(
            "<td class=\"chunks\" data-v=\"{worst}\">{}</td>",
            chunks.join("")
        ));
        s.push_str(&format!(
            "<td class=\"note\">{}</td>",
            note_cell(c.note.as_deref())
        ));
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n</section>\n");
    s
}

/// One evidence item with its rank: `DOC [1200..1388] #3` (a rank beyond K in red; the
/// chunks holding it, its coverage and its grade in the tooltip).
pub fn evidence_rank(
    e: &veredicto_core::evidence::EvidenceResult,
    k: u32,
    listed: usize,
) -> String {
    let mut class = String::from("chunk");
    let mut tip = vec![format!("characters {}..{} of {}", e.start, e.end, e.doc_id)];
    match e.rank {
        Some(r) => tip.push(format!("covered at rank {r}")),
        None => tip.push("not covered by the retrieved chunks".to_owned()),
    }
    if !e.in_top_k(k, listed) {
        class.push_str(" out");
    }
    tip.push(format!("top {k} hold {}", pct(e.covered)));
    if !e.chunks.is_empty() {
        let held: Vec<String> = e
            .chunks
            .iter()
            .map(|h| match h.rank {
                Some(r) => format!("{} (rank {r})", h.id),
                None => h.id.clone(),
            })
            .collect();
        tip.push(format!("held by {}", held.join(", ")));
    }
    let mut rank = e.rank.map_or("#–".to_owned(), |r| format!("#{r}"));
    if e.grade != veredicto_core::evidence::DEFAULT_GRADE {
        tip.push(format!("grade {}", e.grade));
        rank.push_str(&format!(" g{}", e.grade));
    }
    format!(
        "<span class=\"{class}\" title=\"{}\">{} [{}..{}] <span class=\"r\">{rank}</span></span>",
        escape(&tip.join(" · ")),
        escape(&e.doc_id),
        e.start,
        e.end
    )
}

/// The per-case recall bars, the noise histogram and the calibration.
pub fn charts(r: &ExamReport, calibration: &NoiseCalibration) -> String {
    let mut s = String::from(
        "<section id=\"charts\" aria-labelledby=\"charts-h\"><h2 id=\"charts-h\">Recall and noise</h2>\n<div class=\"grid2\">\n",
    );
    // Recall bars.
    let below = r.cases.iter().filter(|c| c.recall < c.recall_floor).count();
    let bars: Vec<Bar> = fmt::failing_first(r)
        .into_iter()
        .map(|c| {
            let found = c.expected.iter().filter(|e| e.in_top_k).count();
            Bar {
                label: if c.gold {
                    format!("★ {}", c.id)
                } else {
                    c.id.clone()
                },
                value: c.recall,
                text: if c.passed {
                    pct(c.recall)
                } else {
                    format!("{} FAIL {}", pct(c.recall), fmt::reasons(c))
                },
                fail: !c.passed,
                tooltip: format!(
                    "{}{}: recall@{} {} ({found} of {} expected in the top {}), QS {}, {}",
                    c.id,
                    if c.gold { " (gold)" } else { "" },
                    c.top_k,
                    pct(c.recall),
                    c.expected.len(),
                    c.top_k,
                    fmt::qs(c.quality),
                    if c.passed {
                        "pass".to_owned()
                    } else {
                        format!("FAIL {}", fmt::reasons(c))
                    }
                ),
            }
        })
        .collect();
    s.push_str("<figure>\n<figcaption><strong>Recall@K per case</strong> (failing cases first, red; ★ gold case). ");
    s.push_str(&format!(
        "{} below the recall floor.</figcaption>\n<div class=\"scroll\">",
        plural(below, "case is", "cases are")
    ));
    s.push_str(&svg::bars(
        "recall-chart",
        "Recall at K per case",
        &format!(
            "Horizontal bars: recall at K of each of the {} cases; {} below the floor of {}.",
            r.cases.len(),
            below,
            pct(r.policy.recall_floor)
        ),
        &bars,
        r.policy.recall_floor,
    ));
    s.push_str("</div></figure>\n<div>\n");
    s.push_str(&noise_histogram(r));
    s.push_str("</div>\n</div>\n");
    s.push_str(&calibration_text(calibration));
    s.push_str("</section>\n");
    s
}

fn noise_histogram(r: &ExamReport) -> String {
    let p = &r.policy;
    let k_max = r
        .cases
        .iter()
        .map(|c| c.top_k)
        .chain([p.top_k])
        .max()
        .unwrap_or(10)
        .min(200);
    let ceiling = max_noise(p.noise_ceiling, p.top_k);
    let bins: Vec<Bin> = (0..=k_max)
        .map(|n| {
            let cases: Vec<&CaseResult> = r.cases.iter().filter(|c| c.noise == Some(n)).collect();
            let over = cases.iter().filter(|c| n > c.max_noise).count();
            let ids: Vec<&str> = cases.iter().take(8).map(|c| c.id.as_str()).collect();
            Bin {
                label: n.to_string(),
                within: cases.len() - over,
                over,
                tooltip: format!(
                    "noise {n}: {}{}{}",
                    plural(cases.len(), "case", "cases"),
                    if ids.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " ({}{})",
                            ids.join(", "),
                            if cases.len() > 8 { ", …" } else { "" }
                        )
                    },
                    if over > 0 {
                        format!("; {over} over their ceiling")
                    } else {
                        String::new()
                    }
                ),
            }
        })
        .collect();
    let mut s = String::from("<figure>\n<figcaption><strong>Noise distribution</strong>: per case, the top-K results scoring below the worst expected chunk retrieved. Blue: within the case's ceiling; red hatched: over it.</figcaption>\n");
    s.push_str(&svg::histogram(
        "noise-chart",
        "Noise distribution",
        &format!(
            "Histogram of the noise of {} cases with a defined noise; {} over their ceiling; the policy ceiling is {} of K = {}.",
            r.cases.len() - r.summary.noise_undefined,
            r.summary.over_noise,
            ceiling,
            p.top_k
        ),
        &bins,
        Some((
            ceiling as usize,
            format!("ceiling {ceiling} ({} of K = {})", pct(p.noise_ceiling), p.top_k),
        )),
        "noise (results below the worst expected chunk)",
    ));
    let mut notes = vec![format!(
        "{} over their ceiling; noise undefined (no expected chunk in the top-K) for {}.",
        plural(r.summary.over_noise, "case", "cases"),
        plural(r.summary.noise_undefined, "case", "cases")
    )];
    let overrides: Vec<String> = p
        .domains
        .iter()
        .filter_map(|(d, o)| {
            o.noise_ceiling.map(|c| {
                let k = o.top_k.unwrap_or(p.top_k);
                format!(
                    "<code>{}</code> {} ({} of {k})",
                    escape(d),
                    pct(c),
                    max_noise(c, k)
                )
            })
        })
        .collect();
    if !overrides.is_empty() {
        notes.push(format!(
            "Domain ceilings: {} (the dashed line is the policy's default).",
            overrides.join(", ")
        ));
    }
    s.push_str(&format!(
        "<p class=\"small muted\">{}</p>\n</figure>\n",
        notes.join(" ")
    ));
    s
}

fn ceiling(v: f64) -> String {
    format!("{v:.2}")
}

fn dist_row(name: &str, d: &NoiseDistribution) -> String {
    let opt = |v: Option<u32>| v.map_or("—".to_owned(), |v| v.to_string());
    format!(
        "<tr><th scope=\"row\">{}</th><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
        name,
        d.healthy_cases,
        opt(d.p50),
        opt(d.p90),
        opt(d.max),
        match (d.suggested_ceiling, d.suggested_max_noise, d.k) {
            (Some(c), Some(m), Some(k)) => format!("{} ({m} of {k})", ceiling(c)),
            _ => "—".to_owned(),
        },
        d.over_current,
        d.over_suggested,
        if d.reliable { "yes" } else { "no (&lt; 20)" }
    )
}

fn calibration_text(c: &NoiseCalibration) -> String {
    let d = &c.overall;
    let mut s = String::from("<h3>Noise calibration</h3>\n");
    match (d.suggested_ceiling, d.k) {
        (Some(sug), Some(k)) if d.healthy_cases > 0 => {
            s.push_str(&format!(
                "<p class=\"small\">From the <strong>{}</strong> (recall 100%, noise defined): \
                 noise p50 {}, p90 {}, max {}. Suggested ceiling <strong>{}</strong> \
                 (at most {} of K = {k}); the policy's is {}. {} over the current ceiling, \
                 {} would be over the suggested one.{}</p>\n",
                plural(d.healthy_cases, "healthy case", "healthy cases"),
                d.p50.unwrap_or(0),
                d.p90.unwrap_or(0),
                d.max.unwrap_or(0),
                ceiling(sug),
                d.suggested_max_noise.unwrap_or(0),
                ceiling(c.current_ceiling),
                plural(d.over_current, "healthy case is", "healthy cases are"),
                d.over_suggested,
                if d.reliable {
                    String::new()
                } else {
                    " <em>Fewer than 20 healthy cases: treat the suggestion as provisional.</em>"
                        .to_owned()
                }
            ));
            s.push_str(&format!(
                "<p class=\"small\">To adopt it, write <code>noise_ceiling = {}</code> in the policy (a calibration, versioned with the golden set).</p>\n",
                ceiling(sug)
            ));
        }
        _ => s.push_str(
            "<p class=\"small muted\">No healthy case (recall 100% with a defined noise): no ceiling can be suggested.</p>\n",
        ),
    }
    if !c.domains.is_empty() {
        s.push_str("<div class=\"table-wrap\"><table class=\"inner\"><caption>Per domain</caption><thead><tr><th scope=\"col\">domain</th><th scope=\"col\" class=\"n\">healthy</th><th scope=\"col\" class=\"n\">p50</th><th scope=\"col\" class=\"n\">p90</th><th scope=\"col\" class=\"n\">max</th><th scope=\"col\" class=\"n\">suggested</th><th scope=\"col\" class=\"n\">over now</th><th scope=\"col\" class=\"n\">over suggested</th><th scope=\"col\">reliable</th></tr></thead><tbody>\n");
        s.push_str(&dist_row("<em>all cases</em>", d));
        for (name, dd) in &c.domains {
            s.push_str(&dist_row(&format!("<code>{}</code>", escape(name)), dd));
        }
        s.push_str("</tbody></table></div>\n");
    }
    s
}
