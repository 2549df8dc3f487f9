//! The evidence sheet: one row per material claim, then one row per declared
//! absence and answer ("the sources do not say": what was asked, what the sources lack).
//! Attached and supported are separate columns, never merged. Rendered as CSV, JSON,
//! Markdown or HTML.

use crate::citation_mark::{citation_marks_of, CitationMarkRecord};
use crate::model::{Association, Case, CaseSet, Claim, Support};
use crate::relevance::{relevance_reviews, RelevanceRecord};
use crate::relevance_judge::{latest_relevance_suggestion, RelevanceSuggestion};
use crate::review::ReviewRecord;
use crate::suggest::SuggestionRecord;
use serde::Serialize;

/// One row of the sheet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SheetRow {
    pub case_id: String,
    /// What was asked.
    pub query: String,
    pub answer_id: String,
    /// `claim`, `relevance` (an answer's relevance verdict: `support` holds `addresses`,
    /// `partly` or `off_topic`), `citation` (a mark of one citation of a claim: `support`
    /// holds `necessary`, `redundant` or `irrelevant`), or `absence` (a point the sources do not answer).
    pub row: String,
    /// The claim ID, or the absence ID (`U1`, …).
    pub claim_id: String,
    pub claim_text: String,
    /// For an absence row: what the sources lack.
    pub lacking: String,
    /// Attached citation IDs, as shown.
    pub citation_ids: Vec<String>,
    /// Per cited passage: `source@version#passage` (absence rows: where the fact would be).
    pub sources: Vec<String>,
    /// Per cited passage: the source's URL and the passage's (else the source's) anchor,
    /// `uri#anchor`, when the case gives them; `-` otherwise.
    pub locations: Vec<String>,
    /// Returned position of each cited passage (`-` when not retrieved).
    pub positions: Vec<String>,
    pub passage_texts: Vec<String>,
    pub association: String,
    pub association_reason: String,
    /// Effective support verdict (`pending` when none).
    pub support: String,
    pub support_reason: String,
    /// The latest model suggestion (`supported`, ...), empty when none. Never the verdict.
    pub suggested_support: String,
    /// Its score (probability of the top label, or the judge's confidence), when given.
    pub suggestion_score: Option<f64>,
    /// `model — method`, plus the judge's reason when it gave one.
    pub suggestion_by: String,
    pub diagnosis: String,
    pub reviewer: String,
    pub time: String,
    pub pending_note: String,
    /// Later reviews: `time reviewer: verdict — reason`.
    pub annexes: Vec<String>,
}

/// The support verdict in force for a claim: the case file's, else the first review.
pub fn effective_support(claim: &Claim, reviews: &[ReviewRecord]) -> Option<Support> {
    claim.support.as_ref().map(|s| s.verdict).or_else(|| {
        reviews
            .iter()
            .find(|r| r.claim == claim.id)
            .map(|r| r.support)
    })
}

/// `uri#anchor` of a source (and passage), as far as the case gives them; `-` when neither.
fn location(s: &crate::model::Source, passage: Option<&str>) -> String {
    let anchor = passage
        .and_then(|p| s.passages.iter().find(|x| x.id == p))
        .and_then(|p| p.anchor.as_deref())
        .or(s.anchor.as_deref());
    match (s.uri.as_deref(), anchor) {
        (Some(u), Some(a)) => format!("{u}#{}", a.trim_start_matches('#')),
        (Some(u), None) => u.to_string(),
        (None, Some(a)) => format!("#{}", a.trim_start_matches('#')),
        (None, None) => "-".into(),
    }
}

fn locate(case: &Case, source: &str, passage: Option<&str>) -> (String, String, String) {
    let Some(s) = case.sources.iter().find(|s| s.id == source) else {
        return (source.to_string(), "-".into(), String::new());
    };
    let pass: Vec<_> = match passage {
        Some(p) => s.passages.iter().filter(|x| x.id == p).collect(),
        None => s.passages.iter().collect(),
    };
    let label = match passage {
        Some(p) => format!("{}@{}#{p}", s.id, s.version),
        None => format!("{}@{}", s.id, s.version),
    };
    let pos = case
        .retrieval
        .iter()
        .find(|r| {
            r.source == source
                && (passage.is_none() || r.passage.as_deref() == passage || r.passage.is_none())
        })
        .map(|r| r.position.to_string())
        .unwrap_or_else(|| "-".into());
    let text = pass
        .iter()
        .map(|p| {
            p.text
                .clone()
                .or_else(|| {
                    p.hash
                        .as_ref()
                        .map(|h| format!("[{h}] …{}…", p.neighbours.clone().unwrap_or_default()))
                })
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" | ");
    (label, pos, text)
}

/// Builds the rows of every claim of every answer, in file order. Each row shows the verdict
/// in force and, beside it, the latest model suggestion for the claim.
pub fn build_sheet(
    set: &CaseSet,
    reviews: &[ReviewRecord],
    suggestions: &[SuggestionRecord],
) -> Vec<SheetRow> {
    build_sheet_with_relevance(set, reviews, &[], suggestions, &[])
}

/// [`build_sheet`] with answer-relevance verdicts: after an answer's claim rows, one
/// `relevance` row when the answer has a relevance verdict or suggestion (its text in
/// `claim_text`, the verdict in force in `support` — `pending` when none —, the reason in
/// `support_reason`, later reviews in `annexes`, the latest suggestion in `suggested_support`).
pub fn build_sheet_with_relevance(
    set: &CaseSet,
    reviews: &[ReviewRecord],
    relevance: &[RelevanceRecord],
    suggestions: &[SuggestionRecord],
    relevance_suggestions: &[RelevanceSuggestion],
) -> Vec<SheetRow> {
    build_sheet_with_marks(
        set,
        reviews,
        relevance,
        &[],
        suggestions,
        relevance_suggestions,
    )
}

/// [`build_sheet_with_relevance`] with citation marks: after a claim's row, one `citation`
/// row per citation of it with a mark (its claim in `claim_id` and `claim_text`, the citation
/// in `citation_ids` and its passage in `sources`, `locations`, `positions` and
/// `passage_texts`, the mark in force in `support`, its reason in `support_reason`, later
/// marks in `annexes`).
pub fn build_sheet_with_marks(
    set: &CaseSet,
    reviews: &[ReviewRecord],
    relevance: &[RelevanceRecord],
    marks: &[CitationMarkRecord],
    suggestions: &[SuggestionRecord],
    relevance_suggestions: &[RelevanceSuggestion],
) -> Vec<SheetRow> {
    let mut rows = Vec::new();
    for case in &set.cases {
        for a in &case.answers {
            for cl in &a.claims {
                let mut sources = Vec::new();
                let mut locations = Vec::new();
                let mut positions = Vec::new();
                let mut texts = Vec::new();
                for cid in &cl.citations {
                    if let Some(c) = a.citations.iter().find(|c| &c.id == cid) {
                        let (l, p, t) = locate(case, &c.source, c.passage.as_deref());
                        sources.push(l);
                        locations.push(
                            case.sources
                                .iter()
                                .find(|s| s.id == c.source)
                                .map_or_else(|| "-".into(), |s| location(s, c.passage.as_deref())),
                        );
                        positions.push(p);
                        texts.push(t);
                    }
                }
                let (assoc, assoc_reason) = match &cl.association {
                    Some(v) => (v.verdict, v.reason.clone()),
                    None if cl.citations.is_empty() => (
                        Association::NotAttached,
                        "derived: no citation attached".to_string(),
                    ),
                    None => (
                        Association::Attached,
                        format!("derived: {} citation(s) attached", cl.citations.len()),
                    ),
                };
                let mine: Vec<&ReviewRecord> =
                    reviews.iter().filter(|r| r.claim == cl.id).collect();
                // The first review is the original verdict when the file has none.
                let (support, support_reason, reviewer, time, diagnosis, annex_from) =
                    match &cl.support {
                        Some(s) => (
                            s.verdict.as_str().to_string(),
                            s.reason.clone(),
                            cl.reviewer.clone().unwrap_or_default(),
                            cl.time.clone().unwrap_or_default(),
                            cl.diagnosis.clone().unwrap_or_default(),
                            0,
                        ),
                        None => match mine.first() {
                            Some(r) => (
                                r.support.as_str().to_string(),
                                r.reason.clone(),
                                r.reviewer.clone(),
                                r.time.clone(),
                                r.diagnosis
                                    .clone()
                                    .or_else(|| cl.diagnosis.clone())
                                    .unwrap_or_default(),
                                1,
                            ),
                            None => (
                                "pending".to_string(),
                                String::new(),
                                cl.reviewer.clone().unwrap_or_default(),
                                cl.time.clone().unwrap_or_default(),
                                cl.diagnosis.clone().unwrap_or_default(),
                                0,
                            ),
                        },
                    };
                let annexes = mine
                    .iter()
                    .skip(annex_from)
                    .map(|r| {
                        format!(
                            "{} {}: {} — {}",
                            r.time,
                            r.reviewer,
                            r.support.as_str(),
                            r.reason
                        )
                    })
                    .collect();
                let sug = suggestions.iter().rev().find(|s| s.claim == cl.id);
                rows.push(SheetRow {
                    case_id: case.id.clone(),
                    query: case.query.clone(),
                    answer_id: a.id.clone(),
                    row: "claim".into(),
                    claim_id: cl.id.clone(),
                    claim_text: cl.text.clone(),
                    lacking: String::new(),
                    citation_ids: cl.citations.clone(),
                    sources,
                    locations,
                    positions,
                    passage_texts: texts,
                    association: assoc.as_str().to_string(),
                    association_reason: assoc_reason,
                    support,
                    support_reason,
                    suggested_support: sug
                        .map_or_else(String::new, |s| s.suggestion.as_str().into()),
                    suggestion_score: sug.and_then(|s| s.score()),
                    suggestion_by: sug.map_or_else(String::new, |s| match &s.reason {
                        Some(r) => format!("{} — {} — {r}", s.model, s.method),
                        None => format!("{} — {}", s.model, s.method),
                    }),
                    diagnosis,
                    reviewer,
                    time,
                    pending_note: cl.pending.clone().unwrap_or_default(),
                    annexes,
                });
                rows.extend(citation_rows(case, a, cl, marks));
            }
            rows.extend(relevance_row(case, a, relevance, relevance_suggestions));
        }
        rows.extend(absence_rows(case));
    }
    rows
}

/// One row per citation of the claim with a mark, in the claim's citation order.
fn citation_rows(
    case: &Case,
    a: &crate::model::Answer,
    cl: &Claim,
    marks: &[CitationMarkRecord],
) -> Vec<SheetRow> {
    let mut rows = Vec::new();
    for cid in &cl.citations {
        let mine = citation_marks_of(&cl.id, cid, marks);
        let Some(first) = mine.first() else {
            continue;
        };
        let (mut sources, mut locations, mut positions, mut texts) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        if let Some(c) = a.citations.iter().find(|c| &c.id == cid) {
            let (l, p, t) = locate(case, &c.source, c.passage.as_deref());
            sources.push(l);
            locations.push(
                case.sources
                    .iter()
                    .find(|s| s.id == c.source)
                    .map_or_else(|| "-".into(), |s| location(s, c.passage.as_deref())),
            );
            positions.push(p);
            texts.push(t);
        }
        rows.push(SheetRow {
            case_id: case.id.clone(),
            query: case.query.clone(),
            answer_id: a.id.clone(),
            row: "citation".into(),
            claim_id: cl.id.clone(),
            claim_text: cl.text.clone(),
            lacking: String::new(),
            citation_ids: vec![cid.clone()],
            sources,
            locations,
            positions,
            passage_texts: texts,
            association: String::new(),
            association_reason: String::new(),
            support: first.mark.as_str().into(),
            support_reason: first.reason.clone(),
            suggested_support: String::new(),
            suggestion_score: None,
            suggestion_by: String::new(),
            diagnosis: String::new(),
            reviewer: first.reviewer.clone(),
            time: first.time.clone(),
            pending_note: String::new(),
            annexes: mine
                .iter()
                .skip(1)
                .map(|r| format!("{} {}: {} — {}", r.time, r.reviewer, r.mark, r.reason))
                .collect(),
        });
    }
    rows
}

/// The answer's relevance row, when it has a relevance verdict.
fn relevance_row(
    case: &Case,
    a: &crate::model::Answer,
    relevance: &[RelevanceRecord],
    suggestions: &[RelevanceSuggestion],
) -> Option<SheetRow> {
    let mine = relevance_reviews(&case.id, &a.id, relevance);
    let sug = latest_relevance_suggestion(&case.id, &a.id, suggestions);
    if mine.is_empty() && sug.is_none() {
        return None;
    }
    let first = mine.first();
    Some(SheetRow {
        case_id: case.id.clone(),
        query: case.query.clone(),
        answer_id: a.id.clone(),
        row: "relevance".into(),
        claim_id: String::new(),
        claim_text: a.text.clone(),
        lacking: String::new(),
        citation_ids: Vec::new(),
        sources: Vec::new(),
        locations: Vec::new(),
        positions: Vec::new(),
        passage_texts: Vec::new(),
        association: String::new(),
        association_reason: String::new(),
        support: first.map_or_else(|| "pending".into(), |r| r.relevance.as_str().into()),
        support_reason: first.map(|r| r.reason.clone()).unwrap_or_default(),
        suggested_support: sug.map_or_else(String::new, |s| s.suggested_relevance.as_str().into()),
        suggestion_score: sug.and_then(|s| s.confidence),
        suggestion_by: sug.map_or_else(String::new, |s| match &s.reason {
            Some(r) => format!("{} — {} — {r}", s.model, s.method),
            None => format!("{} — {}", s.model, s.method),
        }),
        diagnosis: String::new(),
        reviewer: first.map(|r| r.reviewer.clone()).unwrap_or_default(),
        time: first.map(|r| r.time.clone()).unwrap_or_default(),
        pending_note: String::new(),
        annexes: mine
            .iter()
            .skip(1)
            .map(|r| {
                format!(
                    "{} {}: {} — {}",
                    r.time,
                    r.reviewer,
                    r.relevance.as_str(),
                    r.reason
                )
            })
            .collect(),
    })
}

/// One row per declared absence and recorded answer (one with no answer ID when the case
/// records none): what was asked, what the sources lack, and where it would appear.
fn absence_rows(case: &Case) -> Vec<SheetRow> {
    let answers: Vec<&str> = if case.answers.is_empty() {
        vec![""]
    } else {
        case.answers.iter().map(|a| a.id.as_str()).collect()
    };
    let mut rows = Vec::new();
    for answer in answers {
        for (id, a) in case.absences() {
            let scope: Vec<&crate::model::Source> = a
                .sources
                .iter()
                .filter_map(|s| case.sources.iter().find(|x| &x.id == s))
                .collect();
            rows.push(SheetRow {
                case_id: case.id.clone(),
                query: case.query.clone(),
                answer_id: answer.to_string(),
                row: "absence".into(),
                claim_id: id,
                claim_text: String::new(),
                lacking: a.text.clone(),
                citation_ids: Vec::new(),
                sources: scope
                    .iter()
                    .map(|s| format!("{}@{}", s.id, s.version))
                    .collect(),
                locations: scope.iter().map(|s| location(s, None)).collect(),
                positions: Vec::new(),
                passage_texts: Vec::new(),
                association: String::new(),
                association_reason: String::new(),
                support: String::new(),
                support_reason: format!(
                    "the sources of snapshot {} do not state it",
                    case.snapshot
                ),
                suggested_support: String::new(),
                suggestion_score: None,
                suggestion_by: String::new(),
                diagnosis: String::new(),
                reviewer: String::new(),
                time: String::new(),
                pending_note: String::new(),
                annexes: Vec::new(),
            });
        }
    }
    rows
}

const HEADER: [&str; 24] = [
    "case_id",
    "query",
    "answer_id",
    "row",
    "claim_id",
    "claim_text",
    "lacking",
    "citation_ids",
    "sources",
    "locations",
    "positions",
    "passage_texts",
    "association",
    "association_reason",
    "support",
    "support_reason",
    "suggested_support",
    "suggestion_score",
    "suggestion_by",
    "diagnosis",
    "reviewer",
    "time",
    "pending_note",
    "annexes",
];

fn cells(r: &SheetRow) -> [String; 24] {
    [
        r.case_id.clone(),
        r.query.clone(),
        r.answer_id.clone(),
        r.row.clone(),
        r.claim_id.clone(),
        r.claim_text.clone(),
        r.lacking.clone(),
        r.citation_ids.join("; "),
        r.sources.join("; "),
        r.locations.join("; "),
        r.positions.join("; "),
        r.passage_texts.join(" || "),
        r.association.clone(),
        r.association_reason.clone(),
        r.support.clone(),
        r.support_reason.clone(),
        r.suggested_support.clone(),
        r.suggestion_score
            .map_or_else(String::new, |v| format!("{v:.4}")),
        r.suggestion_by.clone(),
        r.diagnosis.clone(),
        r.reviewer.clone(),
        r.time.clone(),
        r.pending_note.clone(),
        r.annexes.join(" || "),
    ]
}

/// CSV with a header row (multi-valued cells joined with `; `, texts and annexes with ` || `).
pub fn to_csv(rows: &[SheetRow]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    for r in rows {
        w.write_record(cells(r))?;
    }
    w.into_inner().map_err(|e| e.into_error().into())
}

/// Pretty JSON array of rows (lists stay lists).
pub fn to_json(rows: &[SheetRow]) -> String {
    serde_json::to_string_pretty(rows).unwrap_or_else(|_| "[]".into())
}

/// A GitHub-flavoured Markdown table. Cell text is made inert: HTML shows as text and
/// Markdown links, images and emphasis from the data are escaped.
pub fn to_markdown(rows: &[SheetRow]) -> String {
    let esc = veredicto_core::redact::markdown_text;
    let mut out = format!(
        "| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for r in rows {
        let c = cells(r);
        out.push_str("| ");
        out.push_str(&c.iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | "));
        out.push_str(" |\n");
    }
    out
}

fn html_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A self-contained HTML page (no scripts, no external resources) with one table row per claim.
pub fn to_html(rows: &[SheetRow]) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"und\"><head><meta charset=\"utf-8\"><title>veredicto evidence sheet</title>\n<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #bbb;padding:4px;vertical-align:top;text-align:left}th{background:#eee}td.unsupported{background:#fde2e2}td.supported{background:#e2f5e2}td.partially_supported{background:#fdf3d8}td.not_evaluable,td.pending{background:#eee}td.addresses{background:#e2f5e2}td.partly{background:#fdf3d8}td.off_topic{background:#fde2e2}</style>\n</head><body>\n<h1>Evidence sheet</h1>\n<table>\n<thead><tr>",
    );
    for h in HEADER {
        out.push_str(&format!("<th>{h}</th>"));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for (i, c) in cells(r).iter().enumerate() {
            if HEADER[i] == "support" || (HEADER[i] == "suggested_support" && !c.is_empty()) {
                out.push_str(&format!("<td class=\"{0}\">{0}</td>", html_escape(c)));
            } else {
                out.push_str(&format!("<td>{}</td>", html_escape(c)));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</body></html>\n");
    out
}
