//! The diagnosis: the ordered checklist per failing case (SPEC §4), then the cross-run
//! failure patterns.

use super::cases::chunk_rank;
use super::text::{escape, id_list, pct, plural, score};
use crate::fmt;
use veredicto_core::compare::{Pattern, PatternFinding, RunsDiagnosis};
use veredicto_core::diagnosis::{Check, Finding};
use veredicto_core::exam::{CaseResult, ExamReport};

/// The checklist step of a finding: `2 · chunking`.
fn check_label(c: Check) -> &'static str {
    match c {
        Check::Corpus => "1 · corpus",
        Check::Chunking => "2 · chunking",
        Check::Description => "3 · description",
        Check::Labelling => "4 · labelling",
        Check::Embedding => "5 · embedding",
        Check::Noise => "noise",
        Check::Retriever => "retriever",
        Check::AnnIndex => "ANN index",
    }
}

fn pattern_title(p: Pattern) -> &'static str {
    match p {
        Pattern::DomainFailing => "A whole domain is failing",
        Pattern::NumericFailing => "Only numeric / table cases are failing",
        Pattern::GoldFailing => "Only gold cases are failing",
        Pattern::ChunksMissing => "Expected chunks missing from the collection",
        Pattern::IngestionRegression => "Regression by the latest ingestion",
        Pattern::DomainIngestionRegression => "Regression by new chunks of the case's domain",
        Pattern::SlowDecline => "Slow, generalised decline",
        Pattern::NoiseHigh => "Recall green, noise high",
    }
}

fn finding_item(c: &CaseResult, f: &Finding) -> String {
    let mut s = format!(
        "<li><span class=\"check\">{}</span> {}{}",
        check_label(f.check),
        match &f.chunk {
            Some(c) => format!("<code>{}</code>: ", escape(c)),
            None => String::new(),
        },
        escape(&crate::explain::finding_text(c, f))
    );
    if !f.outranked_by.is_empty() {
        s.push_str(
            "<table class=\"inner\"><caption>Outranked by</caption><thead><tr><th scope=\"col\" class=\"n\">rank</th><th scope=\"col\">chunk</th><th scope=\"col\" class=\"n\">score</th><th scope=\"col\">ingest_batch</th></tr></thead><tbody>",
        );
        for o in &f.outranked_by {
            s.push_str(&format!(
                "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td>{}</td></tr>",
                o.rank,
                escape(&o.id),
                o.score.map_or("—".to_owned(), score),
                o.ingest_batch
                    .as_deref()
                    .map_or("<span class=\"muted\">—</span>".to_owned(), |b| format!(
                        "<code>{}</code>{}",
                        escape(b),
                        o.ingested_at
                            .as_deref()
                            .map(|t| format!(
                                " <span class=\"muted\">{}</span>",
                                escape(&veredicto_core::compare::short_time(t))
                            ))
                            .unwrap_or_default()
                    ))
            ));
        }
        s.push_str("</tbody></table>");
    }
    s.push_str("</li>\n");
    s
}

fn case_card(c: &CaseResult) -> String {
    let mut s = format!(
        "<article class=\"case-diag{}\"><h3><code>{}</code> {}<span class=\"tag fail\">FAIL {}</span>{}</h3>\n",
        if c.documented && !c.gold { " documented" } else { "" },
        escape(&c.id),
        if c.gold {
            "<span class=\"tag gold\">gold</span> "
        } else {
            ""
        },
        escape(&fmt::reasons(c)),
        if c.documented && !c.gold {
            " <span class=\"tag\">documented</span>"
        } else {
            ""
        }
    );
    let chunks: Vec<String> = c.expected.iter().map(|e| chunk_rank(e, c.top_k)).collect();
    s.push_str(&format!(
        "<p class=\"small\"><span class=\"muted\">{}</span><br>recall@{} {} · QS {} · noise {} · expected: {}</p>\n",
        escape(&c.query),
        c.top_k,
        pct(c.recall),
        fmt::qs(c.quality),
        escape(&fmt::noise(c)),
        chunks.join("")
    ));
    if c.diagnosis.is_empty() {
        s.push_str("<p class=\"small muted\">No checklist finding: the data available (without a corpus only ranks are known) does not point to a cause.</p>\n");
    } else {
        s.push_str("<ol class=\"checklist\">\n");
        for f in &c.diagnosis {
            s.push_str(&finding_item(c, f));
        }
        s.push_str("</ol>\n");
    }
    if let Some(n) = &c.note {
        s.push_str(&format!(
            "<p class=\"small\"><strong>Note:</strong> {}</p>\n",
            escape(n)
        ));
    }
    s.push_str("</article>\n");
    s
}

fn evidence_value(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e12 {
        format!("{v}")
    } else {
        score(v)
    }
}

fn pattern_card(f: &PatternFinding) -> String {
    let mut s = format!(
        "<article class=\"pattern\"><h4>{} <span class=\"tag\">{}</span>{}</h4>\n",
        pattern_title(f.pattern),
        f.pattern.id(),
        if f.runs > 1 {
            format!(
                " <span class=\"small muted\">for the last {} runs</span>",
                f.runs
            )
        } else {
            String::new()
        }
    );
    s.push_str(&format!(
        "<p><strong>Saw:</strong> {}</p>\n<p><strong>Likely cause:</strong> {}</p>\n",
        escape(&crate::findings::pattern_saw(f)),
        escape(&crate::findings::pattern_cause(f))
    ));
    let mut facts = Vec::new();
    if let Some(d) = &f.domain {
        facts.push(format!("domain <code>{}</code>", escape(d)));
    }
    if !f.cases.is_empty() {
        let ids: Vec<&str> = f.cases.iter().map(String::as_str).collect();
        facts.push(format!("cases {}", id_list(&ids, 20)));
    }
    if !f.evidence.is_empty() {
        let ev: Vec<String> = f
            .evidence
            .iter()
            .map(|(k, v)| format!("{} = {}", escape(k), evidence_value(*v)))
            .collect();
        facts.push(format!("evidence: {}", ev.join(", ")));
    }
    if !facts.is_empty() {
        s.push_str(&format!("<p class=\"small\">{}</p>\n", facts.join(" · ")));
    }
    if !f.entered.is_empty() {
        s.push_str("<div class=\"table-wrap\"><table class=\"inner\"><caption>Chunks that outrank the expected ones now</caption><thead><tr><th scope=\"col\">case</th><th scope=\"col\">expected chunk</th><th scope=\"col\">outranked by</th><th scope=\"col\" class=\"n\">rank</th><th scope=\"col\" class=\"n\">score</th><th scope=\"col\">ingest_batch</th><th scope=\"col\">domain</th><th scope=\"col\">entered since last green run</th></tr></thead><tbody>\n");
        for e in &f.entered {
            s.push_str(&format!(
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                escape(&e.case),
                escape(&e.expected),
                escape(&e.id),
                e.rank,
                e.score.map_or("—".to_owned(), score),
                e.ingest_batch.as_deref().map_or("—".to_owned(), |b| format!("<code>{}</code>", escape(b))),
                escape(e.domain.as_deref().unwrap_or("—")),
                match (e.entered_since, &e.in_accepted_run) {
                    (Some(true), _) => "yes".to_owned(),
                    (Some(false), Some(s)) => format!(
                        "no: retrieved by that run at rank {} for <code>{}</code>",
                        s.rank,
                        escape(&s.case)
                    ),
                    (Some(false), None) => "no".to_owned(),
                    (None, _) => "unknown".to_owned(),
                }
            ));
        }
        s.push_str("</tbody></table></div>\n");
    }
    s.push_str("</article>\n");
    s
}

/// The diagnosis section.
pub fn section(r: &ExamReport, runs: Option<&RunsDiagnosis>) -> String {
    let mut s = String::from(
        "<section id=\"diagnosis\" aria-labelledby=\"diagnosis-h\"><h2 id=\"diagnosis-h\">Diagnosis</h2>\n",
    );
    let failing: Vec<&CaseResult> = r.cases.iter().filter(|c| !c.passed).collect();
    s.push_str("<h3>Failing cases: the ordered checklist</h3>\n");
    s.push_str("<p class=\"small muted\">Cheapest and most frequent cause first: 1 corpus (the chunk exists) → 2 chunking → 3 description → 4 labelling → 5 embedding (buried: its rank, score and what outranks it); then noise. Each finding says what it saw.</p>\n");
    if failing.is_empty() {
        s.push_str("<p>No failing case.</p>\n");
    }
    for c in &failing {
        s.push_str(&case_card(c));
    }
    let passing_findings: Vec<&CaseResult> = r
        .cases
        .iter()
        .filter(|c| c.passed && !c.diagnosis.is_empty())
        .collect();
    if !passing_findings.is_empty() {
        s.push_str("<h3>Passing cases with findings</h3>\n<ul class=\"plain small\">\n");
        for c in passing_findings {
            for f in &c.diagnosis {
                s.push_str(&format!(
                    "<li><code>{}</code> — {}{}</li>\n",
                    escape(&c.id),
                    match &f.chunk {
                        Some(ch) => format!("<code>{}</code>: ", escape(ch)),
                        None => String::new(),
                    },
                    escape(&crate::explain::finding_text(c, f))
                ));
            }
        }
        s.push_str("</ul>\n");
    }
    s.push_str("<h3>Across runs: failure patterns</h3>\n");
    match runs {
        None => s.push_str(
            "<p class=\"small muted\">Not computed for this report (no run history given).</p>\n",
        ),
        Some(d) => {
            s.push_str(&format!(
                "<p class=\"small muted\">Over {} of the history{}.</p>\n",
                plural(d.runs, "run", "runs"),
                match &d.last_accepted {
                    Some(id) => format!(
                        "; regressions are read against the last accepted run <code>{}</code>",
                        escape(id)
                    ),
                    None => String::new(),
                }
            ));
            if d.findings.is_empty() {
                s.push_str("<p>No cross-run failure pattern found.</p>\n");
            }
            for f in &d.findings {
                s.push_str(&pattern_card(f));
            }
            let notes = crate::findings::runs_notes(d);
            if !notes.is_empty() {
                s.push_str(
                    "<p class=\"small muted\">Not checked:</p><ul class=\"plain small muted\">\n",
                );
                for n in &notes {
                    s.push_str(&format!("<li>{}</li>\n", escape(n)));
                }
                s.push_str("</ul>\n");
            }
        }
    }
    s.push_str("</section>\n");
    s
}
