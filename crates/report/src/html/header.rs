//! The top of the page: navigation, the verdict with its reasons in words, the run's
//! provenance and configuration, and the summary numbers.

use super::compare::{metric_label, regression_reason};
use super::text::{escape, fingerprint, id_list, pct, plural};
use super::HtmlInput;
use crate::fmt;
use veredicto_core::compare::Comparison;
use veredicto_core::exam::{ExamReport, StopReason, Verdict};
use veredicto_core::history::RecordedRun;

/// The sticky navigation bar.
pub fn nav(input: &HtmlInput<'_>) -> String {
    let mut links = vec![("verdict", "Verdict"), ("summary", "Summary")];
    if input.current.report.fusion.is_some() {
        links.push(("fusion", "Fusion"));
    }
    links.extend([
        ("cases", "Cases"),
        ("charts", "Recall &amp; noise"),
        ("diagnosis", "Diagnosis"),
    ]);
    if input.baseline_comparison.is_some() {
        links.push(("comparison", "Comparison"));
    }
    links.push(("trends", "Trends"));
    if !input.current.meta.latency.is_empty() {
        links.push(("latency", "Latency"));
    }
    let mut s = String::from("<nav aria-label=\"Sections\"><span class=\"brand\">veredicto</span>");
    for (id, label) in links {
        s.push_str(&format!("<a href=\"#{id}\">{label}</a>"));
    }
    s.push_str("</nav>\n");
    s
}

/// Failing cases other than those failing on structural noise alone (those are named by
/// `structural_noise`).
fn failing_ids(r: &ExamReport, gold: bool, undocumented_only: bool) -> Vec<&str> {
    r.cases
        .iter()
        .filter(|c| !c.passed && !c.fails_on_structural_noise_only())
        .filter(|c| c.gold == gold && (!undocumented_only || !c.documented))
        .map(|c| c.id.as_str())
        .collect()
}

/// Each stop reason as a sentence, with the numbers and cases behind it.
fn reason_sentence(r: &ExamReport, reason: StopReason) -> String {
    let s = &r.summary;
    let body = match reason {
        StopReason::MeanQuality => format!(
            "The mean Quality Score is <strong>{}</strong>, below the policy's threshold of \
             <strong>{}</strong>.",
            fmt::qs(s.mean_quality),
            fmt::qs(r.policy.min_mean_quality)
        ),
        StopReason::GoldCaseFailed => {
            let ids = failing_ids(r, true, false);
            format!(
                "<strong>{}</strong> failed: {}. A failing gold case always stops the \
                 deployment; a note does not excuse it.",
                plural(ids.len(), "gold case", "gold cases"),
                id_list(&ids, 12)
            )
        }
        StopReason::UndocumentedFailures => {
            let ids = failing_ids(r, false, true);
            format!(
                "<strong>{}</strong> without a diagnosis note: {}. The policy requires a note \
                 for every failing non-gold case.",
                plural(ids.len(), "failing case", "failing cases"),
                id_list(&ids, 12)
            )
        }
        StopReason::TooManyFailures => {
            let structural = r
                .cases
                .iter()
                .filter(|c| !c.gold && c.fails_on_structural_noise_only())
                .count();
            format!(
                "<strong>{}</strong> failed; the policy tolerates at most <strong>{}</strong> \
                 ({} of {} cases){}.",
                plural(
                    failing_ids(r, false, false).len(),
                    "non-gold case",
                    "non-gold cases"
                ),
                s.max_failing,
                pct(r.policy.max_failing_fraction),
                s.cases,
                if structural > 0 {
                    format!(", besides {structural} on structural noise alone")
                } else {
                    String::new()
                }
            )
        }
        StopReason::StructuralNoise => {
            let text = fmt::structural_noise_reason(r);
            let text = text.strip_prefix("structural_noise: ").unwrap_or(&text);
            let mut chars = text.chars();
            let first: String = chars
                .next()
                .map(|c| c.to_uppercase().collect())
                .unwrap_or_default();
            format!("{}{}.", escape(&first), escape(chars.as_str()))
        }
    };
    format!(
        "<li><span class=\"tag fail\">{}</span> {body}</li>",
        reason.as_str()
    )
}

/// The verdict banner.
pub fn verdict(run: &RecordedRun, comparison: Option<&Comparison>) -> String {
    let r = &run.report;
    let s = &r.summary;
    let (class, word) = match r.verdict {
        Verdict::Accept => ("accept", "ACCEPT"),
        Verdict::Stop => ("stop", "STOP"),
    };
    let mut out = format!(
        "<section id=\"verdict\" class=\"verdict {class}\" aria-labelledby=\"verdict-h\">\n\
         <div class=\"badge-big\" id=\"verdict-word\">{word}</div>\n<div class=\"why\">\n\
         <h1 id=\"verdict-h\">Retrieval acceptance exam · run <code>{}</code></h1>\n",
        escape(&run.meta.id)
    );
    match r.verdict {
        Verdict::Stop => {
            out.push_str(&format!(
                "<p class=\"lead\">Stop: do not deploy this knowledge base. {} of the \
                 policy failed.</p>\n<ul>",
                plural(r.reasons.len(), "gate", "gates")
            ));
            for reason in &r.reasons {
                out.push_str(&reason_sentence(r, *reason));
            }
            out.push_str("</ul>\n");
        }
        Verdict::Accept => {
            let non_gold = s.failing - s.failing_gold;
            out.push_str(
                "<p class=\"lead\">Accept: the knowledge base may be deployed. Every gate of \
                 the policy passed.</p>\n<ul>",
            );
            out.push_str(&format!(
                "<li><span class=\"tag pass\">mean_quality</span> Mean Quality Score \
                 <strong>{}</strong> ≥ threshold {}.</li>",
                fmt::qs(s.mean_quality),
                fmt::qs(r.policy.min_mean_quality)
            ));
            out.push_str(&format!(
                "<li><span class=\"tag pass\">gold</span> No gold case failed ({} gold of {}).</li>",
                s.gold_cases, s.cases
            ));
            out.push_str(&format!(
                "<li><span class=\"tag pass\">failures</span> {} (tolerated {}){}.</li>",
                plural(non_gold, "non-gold case failed", "non-gold cases failed"),
                s.max_failing,
                if non_gold > 0 {
                    format!(", {} documented", s.failing_documented)
                } else {
                    String::new()
                }
            ));
            out.push_str("</ul>\n");
        }
    }
    for note in crate::explain::retriever_failures_line(r)
        .into_iter()
        .chain(crate::explain::warning_lines(r))
        .chain(crate::explain::uncalibrated_note(r))
        .chain(crate::explain::duplicates_line(r))
    {
        out.push_str(&format!("<p class=\"small\">{}</p>\n", escape(&note)));
    }
    if let Some(c) = comparison {
        let base = format!("<code>{}</code>", escape(&c.base.id));
        if c.regression {
            out.push_str(&format!(
                "<div class=\"regression\"><span class=\"tag warn\">REGRESSION</span> against \
                 baseline {base}: <ul class=\"plain\">"
            ));
            for reason in &c.regression_reasons {
                out.push_str(&format!("<li>{}</li>", regression_reason(reason)));
            }
            out.push_str(
                "</ul><span class=\"small muted\">With <code>--fail-on-regression</code> the \
                 exam exits 1 even when the gate accepts.</span></div>\n",
            );
        } else {
            let tested: Vec<&str> = c.tests.iter().map(|t| metric_label(t.metric)).collect();
            out.push_str(&format!(
                "<div class=\"regression none\"><span class=\"tag\">no regression</span> \
                 against baseline {base}: no significant drop in {} and no newly failing gold \
                 case.</div>\n",
                if tested.is_empty() {
                    "any metric".to_owned()
                } else {
                    tested.join(", ")
                }
            ));
        }
    }
    out.push_str("</div>\n</section>\n");
    out
}

fn dd(v: Option<&str>) -> String {
    match v {
        Some(v) if !v.is_empty() => escape(v),
        _ => "<span class=\"muted\">—</span>".to_owned(),
    }
}

/// Run identity, fingerprints and configuration.
pub fn provenance(run: &RecordedRun) -> String {
    let m = &run.meta;
    let r = &run.report;
    let cfg = &m.config;
    let mut s = String::from(
        "<section id=\"run\" aria-labelledby=\"run-h\"><h2 id=\"run-h\">Run</h2>\n<div class=\"meta\">\n",
    );
    s.push_str("<dl>");
    s.push_str(&format!(
        "<dt>Run ID</dt><dd><code>{}</code></dd>",
        escape(&m.id)
    ));
    s.push_str(&format!(
        "<dt>Created</dt><dd>{}</dd>",
        dd(Some(&m.created_at))
    ));
    s.push_str(&format!(
        "<dt>Label</dt><dd>{}</dd>",
        dd(m.label.as_deref())
    ));
    s.push_str(&format!("<dt>Run</dt><dd>{}</dd>", dd(Some(&r.run.name))));
    s.push_str(&format!(
        "<dt>Exam date</dt><dd>{}</dd>",
        dd(r.as_of.as_deref())
    ));
    s.push_str(&format!(
        "<dt>Tool</dt><dd>veredicto {}</dd>",
        escape(&m.tool_version)
    ));
    s.push_str(&format!(
        "<dt>Git revision</dt><dd>{}</dd>",
        match &m.git_revision {
            Some(g) => format!(
                "<code title=\"{}\">{}</code>",
                escape(g),
                escape(super::text::prefix(g, 12))
            ),
            None => dd(None),
        }
    ));
    s.push_str("</dl>\n<dl>");
    s.push_str(&format!(
        "<dt>Golden set</dt><dd>{} <span class=\"muted small\">({})</span></dd>",
        fingerprint(&m.golden_fingerprint),
        plural(r.summary.cases, "case", "cases")
    ));
    s.push_str(&format!(
        "<dt>Policy</dt><dd>{}{}</dd>",
        fingerprint(&m.policy_fingerprint),
        match &r.policy.version {
            Some(v) => format!(" <span class=\"muted small\">version {}</span>", escape(v)),
            None => String::new(),
        }
    ));
    s.push_str(&format!(
        "<dt>Corpus / index</dt><dd>{}</dd>",
        m.corpus_fingerprint
            .as_deref()
            .map_or_else(|| dd(None), fingerprint)
    ));
    s.push_str(&format!(
        "<dt>Model hash</dt><dd>{}</dd>",
        cfg.model_hash
            .as_deref()
            .map_or_else(|| dd(None), fingerprint)
    ));
    s.push_str("</dl>\n<dl>");
    s.push_str(&format!(
        "<dt>Retriever</dt><dd>{}{}</dd>",
        dd(Some(&cfg.retriever)),
        match &cfg.source {
            Some(src) => format!(" <code>{}</code>", escape(src)),
            None => String::new(),
        }
    ));
    s.push_str(&format!(
        "<dt>Embedding model</dt><dd>{}</dd>",
        dd(cfg.embedding_model.as_deref())
    ));
    let policy_field = match r.policy.field {
        veredicto_core::policy::Field::Representation => "representation",
        veredicto_core::policy::Field::Text => "text",
    };
    s.push_str(&format!(
        "<dt>Field</dt><dd>{}</dd>",
        // A live retriever's table was not embedded by veredicto: no field to state.
        dd(cfg
            .field
            .as_deref()
            .or(matches!(cfg.retriever.as_str(), "index" | "run-file").then_some(policy_field)))
    ));
    s.push_str(&format!("<dt>K</dt><dd>{}</dd>", cfg.top_k));
    s.push_str(&format!(
        "<dt>Rerank</dt><dd>{}</dd>",
        match &cfg.rerank {
            Some(x) => escape(x),
            None => "none".to_owned(),
        }
    ));
    if cfg.chunk_size.is_some() || cfg.chunk_overlap.is_some() {
        s.push_str(&format!(
            "<dt>Chunking</dt><dd>size {} · overlap {}</dd>",
            cfg.chunk_size.map_or("—".to_owned(), |v| v.to_string()),
            cfg.chunk_overlap.map_or("—".to_owned(), |v| v.to_string())
        ));
    }
    s.push_str("</dl>\n</div>\n</section>\n");
    s
}

fn card(label: &str, value: &str, sub: &str, class: &str) -> String {
    format!(
        "<div class=\"card {class}\"><div class=\"k\">{label}</div><div class=\"v\">{value}</div><div class=\"s\">{sub}</div></div>\n"
    )
}

/// The summary numbers as cards.
pub fn summary(r: &ExamReport) -> String {
    let s = &r.summary;
    let p = &r.policy;
    let qs_ok = s.mean_quality >= p.min_mean_quality;
    let mut out = String::from(
        "<section id=\"summary\" aria-labelledby=\"summary-h\"><h2 id=\"summary-h\">Summary</h2>\n<div class=\"cards\">\n",
    );
    out.push_str(&card(
        "Mean Quality Score",
        &fmt::qs(s.mean_quality),
        &format!(
            "threshold {} · {}",
            fmt::qs(p.min_mean_quality),
            if qs_ok {
                "met"
            } else {
                "<strong>below</strong>"
            }
        ),
        if qs_ok { "good" } else { "bad" },
    ));
    out.push_str(&card(
        "Mean recall@K",
        &pct(s.mean_recall),
        &format!("floor per case {}", pct(p.recall_floor)),
        "",
    ));
    out.push_str(&card("MRR@K", &fmt::f3(s.mrr), "mean reciprocal rank", ""));
    out.push_str(&card(
        "Mean P@K",
        &fmt::f3(s.mean_precision),
        "precision",
        "",
    ));
    out.push_str(&card(
        "Mean nDCG@K",
        &fmt::f3(s.mean_ndcg),
        "binary relevance",
        "",
    ));
    out.push_str(&card(
        "Mean AP@K",
        &fmt::f3(s.mean_average_precision),
        &format!("hit rate {}", pct(s.hit_rate)),
        "",
    ));
    for (name, v) in &s.measures {
        // `nDCG@10` / `AP@10` at the policy's K repeat the cards above.
        let same = |core: &str, value: f64| {
            *name == format!("{core}@{}", p.top_k) && (v - value).abs() < 1e-12
        };
        if same("nDCG", s.mean_ndcg) || same("AP", s.mean_average_precision) {
            continue;
        }
        out.push_str(&card(
            &format!("Mean {}", escape(name)),
            &fmt::f3(*v),
            "policy measure",
            "",
        ));
    }
    let non_gold = s.failing - s.failing_gold;
    out.push_str(&card(
        "Failing cases",
        &format!("{} / {}", s.failing, s.cases),
        &format!(
            "gold {} of {} · non-gold {} ({} documented, {} tolerated)",
            s.failing_gold, s.gold_cases, non_gold, s.failing_documented, s.max_failing
        ),
        if s.failing_gold > 0 || non_gold > s.max_failing {
            "bad"
        } else if s.failing == 0 {
            "good"
        } else {
            ""
        },
    ));
    out.push_str(&card(
        "Over the noise ceiling",
        &s.over_noise.to_string(),
        &format!(
            "ceiling {} of K · noise undefined for {}",
            pct(p.noise_ceiling),
            plural(s.noise_undefined, "case", "cases")
        ),
        if s.over_noise > 0 { "bad" } else { "good" },
    ));
    out.push_str("</div>\n");
    if !s.by_reason.is_empty() {
        let parts: Vec<String> = s
            .by_reason
            .iter()
            .map(|(k, v)| format!("<span class=\"tag\">{}</span> {v}", escape(k)))
            .collect();
        out.push_str(&format!(
            "<p class=\"small\">Failing cases by reason: {}</p>\n",
            parts.join(" · ")
        ));
    }
    if let Some(line) = crate::fmt::exactness(r) {
        out.push_str(&format!("<p class=\"small\">{}</p>\n", escape(&line)));
    }
    if let Some(line) = crate::fmt::stored_vectors(r) {
        out.push_str(&format!("<p class=\"small\">{}</p>\n", escape(&line)));
    }
    if r.run.ignored_queries > 0 {
        let ids: Vec<&str> = r.run.ignored_query_ids.iter().map(String::as_str).collect();
        out.push_str(&format!(
            "<p class=\"small muted\">{} in the run are not in the golden set and were ignored: {}</p>\n",
            plural(r.run.ignored_queries, "query", "queries"),
            id_list(&ids, 20)
        ));
    }
    out.push_str("</section>\n");
    out
}

/// The fusion section, when the retriever is a fusion of arms: recall at K of the fused
/// ranking and of each arm, the cases only one arm finds, each arm's time (`--timings`).
pub fn fusion(r: &ExamReport) -> String {
    let Some(f) = &r.fusion else {
        return String::new();
    };
    let timed = f.arms.iter().any(|a| a.latency.is_some());
    let mut s = format!(
        "<section id=\"fusion\" aria-labelledby=\"fusion-h\"><h2 id=\"fusion-h\">Fusion <code>{}</code></h2>\n<div class=\"table-wrap\"><table><caption>Recall@K (each case's K) of the fused ranking and of each arm alone</caption><thead><tr><th scope=\"col\">ranking</th><th scope=\"col\" class=\"n\">recall@K</th><th scope=\"col\">cases only it finds</th>{}</tr></thead><tbody>\n",
        escape(&f.method),
        if timed { "<th scope=\"col\">time</th>" } else { "" }
    );
    s.push_str(&format!(
        "<tr><th scope=\"row\">fused</th><td class=\"n\">{}</td><td></td>{}</tr>\n",
        fmt::recall_or_dash(f.recall),
        if timed { "<td></td>" } else { "" }
    ));
    for (i, a) in f.arms.iter().enumerate() {
        let time = if timed {
            format!(
                "<td>{}</td>",
                escape(&fmt::arm_latency(a).unwrap_or_default())
            )
        } else {
            String::new()
        };
        s.push_str(&format!(
            "<tr><th scope=\"row\">arm {} <code>{}</code> ({})</th><td class=\"n\">{}</td><td>{} ({})</td>{time}</tr>\n",
            i + 1,
            escape(&a.uri),
            escape(&a.kind),
            fmt::recall_or_dash(a.recall),
            a.only_found.len(),
            escape(&fmt::only_found(&a.only_found))
        ));
    }
    s.push_str("</tbody></table></div>\n</section>\n");
    s
}
