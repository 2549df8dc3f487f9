//! Renderers of `veredicto audit`: each takes what `veredicto-grounding` computed and returns
//! the text to print (with its trailing newline); none recomputes a number. Human text is
//! escaped for the terminal by the caller; JSON is pretty-printed with keys in a fixed order.

use serde_json::{json, Value};
use std::fmt::Write as _;
use veredicto_core::history::AuditRunSummary;
use veredicto_grounding::{
    Agreement, CheckOutcome, Comparison, Impact, ReopenedAbsence, SuggestionRecord, Support,
    Verification, VERDICTS,
};

/// A ratio as a percentage with one decimal, or `undefined`.
pub fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "undefined".to_string(), |v| format!("{:.1}%", v * 100.0))
}

/// Pretty JSON with a trailing newline (plain data: serialising cannot fail).
fn pretty<T: serde::Serialize + ?Sized>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// `audit check`, human text: per case its recall, fact coverage and absences, per answer its
/// measures and missed thresholds; then the totals and the policy line.
pub fn check_human(out: &CheckOutcome) -> String {
    let mut s = String::new();
    for case in &out.cases {
        let _ = writeln!(
            s,
            "case {}  snapshot {}  query: {}",
            case.id, case.snapshot, case.query
        );
        if case.has_valid_sources {
            let r: Vec<String> = case
                .document_recall
                .iter()
                .map(|(k, v)| format!("@{k} {}", pct(*v)))
                .collect();
            let _ = writeln!(s, "  document recall  {}", r.join("  "));
        }
        if !case.fact_coverage.is_empty() {
            let r: Vec<String> = case
                .fact_coverage
                .iter()
                .map(|f| match f.facts.is_empty() {
                    true => format!("@{} 0/{}", f.k, f.required),
                    false => format!(
                        "@{} {}/{} ({})",
                        f.k,
                        f.facts.len(),
                        f.required,
                        f.facts.join(", ")
                    ),
                })
                .collect();
            let _ = writeln!(s, "  facts retrieved  {}", r.join("  "));
        }
        for (id, text) in &case.absences {
            let _ = writeln!(s, "  absence {id}: the sources do not say {text}");
        }
        for a in &case.answers {
            let m = &a.metrics;
            if m.abstention {
                let _ = writeln!(
                    s,
                    "  answer {:<8} abstention (n = 0)  support undefined  coverage {}{}",
                    m.answer,
                    pct(m.coverage),
                    relevance_suffix(a)
                );
            } else {
                let _ = writeln!(
                    s,
                    "  answer {:<8} n={}  citation presence {}  support {}  coverage {} ({}/{} facts){}{}",
                    m.answer,
                    m.claims,
                    pct(m.citation_presence),
                    pct(m.support),
                    pct(m.coverage),
                    m.facts_covered,
                    m.required_facts,
                    if m.unreviewed > 0 {
                        format!("  {} unreviewed", m.unreviewed)
                    } else {
                        String::new()
                    },
                    relevance_suffix(a)
                );
            }
            for x in &a.violations {
                let _ = writeln!(s, "    policy missed: {x}");
            }
        }
    }
    let t = &out.totals;
    let _ = writeln!(
        s,
        "totals: {} answers ({} abstentions), {} claims, {} with citation, {} supported, {} unreviewed, {} absences",
        t.answers, t.abstentions, t.claims, t.with_citation, t.supported, t.unreviewed, t.absences
    );
    if t.relevance_judged > 0 {
        let _ = writeln!(s, "relevance: {}", relevance_totals(t));
    }
    if t.citations.marked > 0 {
        let _ = writeln!(s, "citation precision: {}", citation_totals(&t.citations));
    }
    s.push_str(if out.pass {
        "policy: met\n"
    } else {
        "policy: missed\n"
    });
    s
}

/// `  relevance V` after an answer's measures, when it has a relevance verdict.
/// Also `  citation precision P (k/m marked)` when some of its citations are marked.
fn relevance_suffix(a: &veredicto_grounding::check::AnswerCheck) -> String {
    let mut s = a
        .relevance
        .as_ref()
        .map_or_else(String::new, |r| format!("  relevance {}", r.verdict));
    if let Some(p) = &a.citation_precision {
        let _ = write!(
            s,
            "  citation precision {} ({}/{} marked)",
            pct(p.value()),
            p.necessary + p.redundant,
            p.marked
        );
    }
    s
}

/// `P over m marked citations: n necessary, r redundant, i irrelevant`.
fn citation_totals(p: &veredicto_grounding::CitationPrecision) -> String {
    format!(
        "{} over {} marked citations: {} necessary, {} redundant, {} irrelevant",
        pct(p.value()),
        p.marked,
        p.necessary,
        p.redundant,
        p.irrelevant
    )
}

/// A citation count as JSON: the counts and `precision` (`null` when nothing is marked).
fn citation_json(p: &veredicto_grounding::CitationPrecision) -> Value {
    json!({"marked": p.marked, "necessary": p.necessary, "redundant": p.redundant,
           "irrelevant": p.irrelevant, "precision": p.value()})
}

/// `N of M answers judged: a addresses, p partly, o off topic`.
fn relevance_totals(t: &veredicto_grounding::CheckTotals) -> String {
    format!(
        "{} of {} answers judged: {} addresses, {} partly, {} off topic",
        t.relevance_judged, t.answers, t.addresses, t.partly, t.off_topic
    )
}

/// `audit check --json`: `cases` is the case file path or the run's origin, `run` the run
/// ID when the target is a recorded run.
pub fn check_json(out: &CheckOutcome, cases: &str, run: Option<&str>) -> String {
    let answers: Vec<Value> = out
        .cases
        .iter()
        .flat_map(|case| {
            case.answers.iter().map(move |a| {
                json!({
                    "metrics": a.metrics,
                    "relevance": a.relevance,
                    "citation_precision": a.citation_precision.as_ref().map(citation_json),
                    "document_recall": case.document_recall.iter().map(|(k, v)| json!({"k": k, "value": v})).collect::<Vec<_>>(),
                    "violations": a.violations,
                    "fact_coverage": case.fact_coverage,
                })
            })
        })
        .collect();
    let t = &out.totals;
    pretty(&json!({
        "cases": cases,
        "run": run,
        "pass": out.pass,
        "totals": {"answers": t.answers, "abstentions": t.abstentions, "claims": t.claims,
                   "with_citation": t.with_citation, "supported": t.supported,
                   "unreviewed": t.unreviewed, "absences": t.absences,
                   "relevance": {"judged": t.relevance_judged, "addresses": t.addresses,
                                 "partly": t.partly, "off_topic": t.off_topic},
                   "citation_precision": citation_json(&t.citations)},
        "answers": answers,
        "absences": out.absences,
    }))
}

/// Escapes a table cell: pipes and line breaks would end it.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// `audit check` as Markdown: one table of answers per case, the absences, the totals and
/// the policy line.
pub fn check_markdown(out: &CheckOutcome, cases: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Grounding check: {}\n", cell(cases));
    let _ = writeln!(
        s,
        "**Policy: {}**\n",
        if out.pass { "met" } else { "missed" }
    );
    for case in &out.cases {
        let _ = writeln!(
            s,
            "## Case {} (snapshot {})\n\nQuery: {}\n",
            cell(&case.id),
            cell(&case.snapshot),
            cell(&case.query)
        );
        let before = s.len();
        if case.has_valid_sources {
            let r: Vec<String> = case
                .document_recall
                .iter()
                .map(|(k, v)| format!("@{k} {}", pct(*v)))
                .collect();
            let _ = writeln!(s, "- Document recall: {}", r.join(", "));
        }
        for f in &case.fact_coverage {
            let _ = writeln!(
                s,
                "- Facts retrieved @{}: {}/{}{}",
                f.k,
                f.facts.len(),
                f.required,
                if f.facts.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", cell(&f.facts.join(", ")))
                }
            );
        }
        for (id, text) in &case.absences {
            let _ = writeln!(
                s,
                "- Absence {}: the sources do not say {}",
                cell(id),
                cell(text)
            );
        }
        if s.len() > before {
            s.push('\n');
        }
        s.push_str("| Answer | Claims | Citation presence | Support | Coverage | Relevance | Unreviewed | Policy missed |\n");
        s.push_str("|---|---:|---:|---:|---:|---|---:|---|\n");
        for a in &case.answers {
            let m = &a.metrics;
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} ({}/{} facts) | {} | {} | {} |",
                cell(&m.answer),
                if m.abstention {
                    "0 (abstention)".to_string()
                } else {
                    m.claims.to_string()
                },
                pct(m.citation_presence),
                pct(m.support),
                pct(m.coverage),
                m.facts_covered,
                m.required_facts,
                a.relevance.as_ref().map_or_else(
                    || "not judged".to_string(),
                    |r| format!("{} ({})", r.verdict, cell(&r.reason))
                ),
                m.unreviewed,
                if a.violations.is_empty() {
                    "-".to_string()
                } else {
                    cell(&a.violations.join("; "))
                }
            );
        }
        let marked: Vec<_> = case
            .answers
            .iter()
            .filter_map(|a| {
                a.citation_precision
                    .as_ref()
                    .map(|p| (&a.metrics.answer, p))
            })
            .collect();
        if !marked.is_empty() {
            s.push('\n');
        }
        for (answer, p) in marked {
            let _ = writeln!(
                s,
                "- Citation precision of {}: {}",
                cell(answer),
                citation_totals(p)
            );
        }
        s.push('\n');
    }
    let t = &out.totals;
    let _ = writeln!(
        s,
        "Totals: {} answers ({} abstentions), {} claims, {} with citation, {} supported, {} unreviewed, {} absences.",
        t.answers, t.abstentions, t.claims, t.with_citation, t.supported, t.unreviewed, t.absences
    );
    if t.relevance_judged > 0 {
        let _ = writeln!(s, "\nRelevance: {}.", relevance_totals(t));
    }
    if t.citations.marked > 0 {
        let _ = writeln!(
            s,
            "\nCitation precision: {}.",
            citation_totals(&t.citations)
        );
    }
    s
}

/// `audit compare` (and `replay`), human text: `base` and `new` are the two origins.
pub fn comparison_human(c: &Comparison, base: &str, new: &str) -> String {
    let mut s = format!("base: {base}\nnew:  {new}\n");
    for x in &c.compared {
        let _ = writeln!(
            s,
            "{} {} -> {}: citation presence {} -> {}  support {} -> {}  coverage {} -> {}",
            x.case,
            x.base.answer,
            x.new.answer,
            pct(x.base.citation_presence),
            pct(x.new.citation_presence),
            pct(x.base.support),
            pct(x.new.support),
            pct(x.base.coverage),
            pct(x.new.coverage)
        );
        for v in &x.verdict_changes {
            let _ = writeln!(s, "  verdict changed: {v}");
        }
        for v in &x.claims_only_in_base {
            let _ = writeln!(s, "  claim only in base: {v}");
        }
        for v in &x.claims_only_in_new {
            let _ = writeln!(s, "  claim only in new: {v}");
        }
        for v in &x.configuration_changes {
            let _ = writeln!(s, "  {v}");
        }
        let _ = writeln!(
            s,
            "  absences: {} -> {}{}",
            x.absences_base.len(),
            x.absences_new.len(),
            if x.absences_new.is_empty() {
                String::new()
            } else {
                format!(" ({})", x.absences_new.join("; "))
            }
        );
        for v in &x.absence_changes {
            let _ = writeln!(s, "  {v}");
        }
    }
    for n in &c.not_compared {
        let _ = match &n.answer {
            Some(ans) => writeln!(s, "not compared: {} {ans}: {}", n.case, n.reason),
            None => writeln!(s, "not compared: {}: {}", n.case, n.reason),
        };
    }
    let _ = writeln!(
        s,
        "{} answer(s) compared, {} not compared",
        c.compared.len(),
        c.not_compared.len()
    );
    s
}

/// `audit compare --json`: `base` and `new` are run IDs, or case file paths.
pub fn comparison_json(c: &Comparison, base: &str, new: &str) -> String {
    pretty(&json!({
        "base": base,
        "new": new,
        "compared": c.compared,
        "not_compared": c.not_compared,
    }))
}

/// `audit impact`, human text: the claims to re-review, then the absences to answer again.
pub fn impact_human(hits: &[Impact], reopened: &[ReopenedAbsence]) -> String {
    let mut s = String::new();
    if hits.is_empty() {
        s.push_str("no cited passage changed\n");
    } else {
        for h in hits {
            let _ = writeln!(
                s,
                "{} {} {} [{}] {}{} {} -> {}: {}",
                h.case,
                h.answer,
                h.claim,
                h.citation,
                h.source,
                h.passage
                    .as_deref()
                    .map(|p| format!("#{p}"))
                    .unwrap_or_default(),
                h.old_version,
                h.new_version.as_deref().unwrap_or("(gone)"),
                h.change
            );
        }
        let _ = writeln!(s, "{} claim citation(s) to re-review", hits.len());
    }
    for r in reopened {
        let _ = writeln!(
            s,
            "{} absence {} reopened: {} {} -> {} ({}) may now say: {}",
            r.case, r.absence, r.source, r.old_version, r.new_version, r.change, r.lacking
        );
    }
    if !reopened.is_empty() {
        let _ = writeln!(s, "{} absence(s) to answer again", reopened.len());
    }
    s
}

/// `audit impact --json`.
pub fn impact_json(
    hits: &[Impact],
    reopened: &[ReopenedAbsence],
    cases: &str,
    sources: &str,
) -> String {
    pretty(
        &json!({"cases": cases, "sources": sources, "impacted": hits, "reopened_absences": reopened}),
    )
}

/// `audit agreement`, human text: κ and the confusion matrix (rows: the verdict in force;
/// columns: the annex reviewer, or the model's suggestion when `suggestions`).
pub fn agreement_human(ag: &Agreement, suggestions: bool) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "undefined".to_string(), |v| format!("{v:.3}"));
    let mut s = String::new();
    let _ = writeln!(
        s,
        "pairs {}  observed {}  chance {}  Cohen's kappa {}",
        ag.pairs,
        f(ag.observed),
        f(ag.expected),
        f(ag.kappa)
    );
    let _ = writeln!(
        s,
        "rows: verdict in force; columns: {}",
        if suggestions {
            "model suggestion"
        } else {
            "annex reviewer"
        }
    );
    let _ = write!(s, "{:<20}", "");
    for v in VERDICTS {
        let _ = write!(s, "{:>20}", v.as_str());
    }
    s.push('\n');
    for (i, v) in VERDICTS.iter().enumerate() {
        let _ = write!(s, "{:<20}", v.as_str());
        for n in ag.matrix[i] {
            let _ = write!(s, "{n:>20}");
        }
        s.push('\n');
    }
    s
}

/// `audit agreement --json`.
pub fn agreement_json(ag: &Agreement) -> String {
    let labels: Vec<&str> = VERDICTS.iter().map(|v| v.as_str()).collect();
    pretty(&json!({"labels": labels, "agreement": ag}))
}

/// `audit verify`, human text: differences, what was checked and not, and the verdict.
pub fn verification_human(v: &Verification, package: &str) -> String {
    let mut s = String::new();
    for d in &v.differences {
        let _ = writeln!(s, "{d}");
    }
    for c in &v.checked {
        let _ = writeln!(s, "checked: {c}");
    }
    for n in &v.not_checked {
        let _ = writeln!(s, "not checked: {n}");
    }
    if v.verified() {
        let _ = writeln!(
            s,
            "verified: {package} ({} files match the manifest)",
            v.members.len()
        );
    } else {
        let _ = writeln!(s, "NOT verified: {} difference(s)", v.differences.len());
    }
    s
}

/// `audit verify --json`.
pub fn verification_json(v: &Verification, package: &str) -> String {
    pretty(&json!({
        "package": package, "verified": v.verified(), "files": v.members.len(),
        "run": v.run.as_ref().map(|r| r.id.clone()),
        "differences": v.differences, "checked": v.checked, "not_checked": v.not_checked,
    }))
}

/// `audit suggest`, human text: one line per suggestion, beside the verdict in force
/// (`reviewer` gives it per claim ID; `pending` when there is none).
pub fn suggestions_human(
    recs: &[SuggestionRecord],
    reviewer: &dyn Fn(&str) -> Option<Support>,
) -> String {
    let mut s = String::new();
    for r in recs {
        let human = reviewer(&r.claim).map_or("pending", |s| s.as_str());
        let score = r.score().map_or_else(String::new, |v| format!(" {v:.3}"));
        let _ = writeln!(
            s,
            "{} {} {}: suggested {} ({}{score}); reviewer: {human}",
            r.case,
            r.answer,
            r.claim,
            r.suggestion.as_str(),
            r.label
        );
    }
    s
}

/// `audit suggest --json`.
pub fn suggestions_json(recs: &[SuggestionRecord]) -> String {
    pretty(recs)
}

/// `audit suggest --judge`: the answer-relevance suggestions, one line each, beside the
/// relevance verdict in force (`reviewer` gives it for a case and answer).
pub fn relevance_suggestions_human(
    recs: &[veredicto_grounding::RelevanceSuggestion],
    reviewer: &dyn Fn(&str, &str) -> Option<veredicto_grounding::Relevance>,
) -> String {
    let mut s = String::new();
    for r in recs {
        let human = reviewer(&r.case, &r.answer).map_or("pending", |v| v.as_str());
        let score = r
            .confidence
            .map_or_else(String::new, |v| format!(" ({v:.3})"));
        let _ = writeln!(
            s,
            "{} {}: relevance suggested {}{score}; reviewer: {human}",
            r.case,
            r.answer,
            r.suggested_relevance.as_str(),
        );
    }
    s
}

/// `audit suggest --json` with answer-relevance suggestions: one array, the claims'
/// suggestions first, then the answers' (told apart by `suggested_relevance`).
pub fn suggestion_lines_json(
    recs: &[SuggestionRecord],
    relevance: &[veredicto_grounding::RelevanceSuggestion],
) -> String {
    let lines: Vec<veredicto_grounding::SuggestionLine> = recs
        .iter()
        .cloned()
        .map(veredicto_grounding::SuggestionLine::Claim)
        .chain(
            relevance
                .iter()
                .cloned()
                .map(veredicto_grounding::SuggestionLine::Relevance),
        )
        .collect();
    pretty(&lines)
}

/// `audit runs`, human text: one line per run, newest first (`history` names the history
/// when it holds none).
pub fn runs_human(list: &[AuditRunSummary], history: &str) -> String {
    if list.is_empty() {
        return format!("no audit runs in {history}\n");
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<26}  {:<24}  {:<16}  {:>5} {:>7} {:>6} {:>7} {:>11}  replay of / label",
        "id", "created", "cases file", "cases", "answers", "claims", "reviews", "suggestions"
    );
    let esc = veredicto_core::redact::escape_control;
    for r in list {
        let m = &r.meta;
        let tail = [
            m.replay_of.clone().map(|x| format!("replay of {x}")),
            m.label.clone(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("  ");
        let _ = writeln!(
            s,
            "{:<26}  {:<24}  {:<16}  {:>5} {:>7} {:>6} {:>7} {:>11}  {}",
            m.id,
            esc(&m.created_at),
            esc(&m.cases_name),
            m.counts.cases,
            m.counts.answers,
            m.counts.claims,
            r.reviews,
            r.suggestions,
            esc(&tail)
        );
    }
    s
}

/// `audit runs --json`.
pub fn runs_json(list: &[AuditRunSummary]) -> String {
    pretty(list)
}
