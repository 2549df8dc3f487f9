//! The ordered diagnosis checklist of seed 000 (SPEC §4), evaluated on the data for each
//! failing case, cheapest and most frequent cause first:
//!
//! 1. `corpus` — the expected chunk is not in the corpus at all (never ingested, wrong ID);
//! 2. `chunking` — table without its header row, cut mid-row or mid-sentence, absurd length;
//! 3. `description` — no representation, or a representation that is mostly numbers or the
//!    raw table ("ningún embedding de cifras se parece a una pregunta");
//! 4. `labelling` — domain differs from the case's, validity window excludes the exam date;
//! 5. `embedding` — representation present and sane but still buried: its rank and score
//!    and the chunks that outrank it, with their `ingest_batch`.
//!
//! Whatever the checklist finds first, every expected chunk of a failing case that fell out
//! of the top-K carries the chunks that now rank above it (up to ten, with score, batch and
//! the batch's time when known): on the `embedding` finding when the chunk reached it, else
//! on the first finding about that chunk, so a chunking finding does not hide what buried it.
//!
//! Plus `noise` for cases over the noise ceiling. Each finding says what it saw. Chunk-level
//! checks need the corpus; without it only `embedding` and `noise` findings are possible.

use crate::case::{Case, Chunk, Corpus};
use crate::exam::ExpectedChunk;
use crate::run::Retrieved;
use serde::{Deserialize, Serialize};

/// Which item of the checklist a finding belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    Corpus,
    Chunking,
    Description,
    Labelling,
    Embedding,
    Noise,
    /// About the retriever itself: it failed for the case, or it ranks without embeddings
    /// (a run file, an HTTP service) so that a buried chunk is the retriever's ranking.
    Retriever,
    /// The exactness check: the approximate (ANN) index lost a chunk that the exact search
    /// of the same engine ranks inside the top K.
    AnnIndex,
}

/// A result that outranks a buried expected chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outranker {
    pub id: String,
    pub rank: usize,
    pub score: Option<f64>,
    pub ingest_batch: Option<String>,
    /// When its batch was ingested (RFC 3339), when the corpus records it (the index does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingested_at: Option<String>,
}

/// One observation about a failing case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub check: Check,
    /// The expected chunk concerned, if the finding is about one.
    pub chunk: Option<String>,
    pub finding: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outranked_by: Vec<Outranker>,
}

/// What the checklist looks at for one case.
pub struct CaseView<'a> {
    pub case: &'a Case,
    pub passed: bool,
    pub k: u32,
    pub results: &'a [Retrieved],
    pub expected: &'a [ExpectedChunk],
    pub corpus: Option<&'a Corpus>,
    pub as_of: Option<&'a str>,
    pub noise: Option<u32>,
    pub max_noise: u32,
}

/// How many outranking results an `embedding` finding lists.
const MAX_OUTRANKERS: usize = 10;

/// Runs the checklist. For a failing case: over every expected chunk that is not in the
/// top-K, then the noise check. For any case: expected chunks missing from the corpus.
/// Findings come in checklist order per chunk, chunks in the golden set's order.
pub fn diagnose_case(view: &CaseView<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in view.expected {
        let chunk = view.corpus.and_then(|c| c.get(&e.id));
        if let (Some(corpus), None) = (view.corpus, chunk) {
            let text = match corpus.source() {
                "index" => "expected chunk not in the index (never ingested)".to_owned(),
                other => format!("expected chunk not in the {other}"),
            };
            out.push(finding(Check::Corpus, e, text));
            continue;
        }
        if view.passed || e.in_top_k {
            continue;
        }
        let before = out.len();
        if let Some(chunk) = chunk {
            chunking(chunk, e, &mut out);
            description(chunk, e, &mut out);
            labelling(chunk, view, e, &mut out);
        }
        if out.len() == before {
            out.push(embedding(view, e));
        } else {
            // An earlier item explains it, but the evidence of what buried it stays.
            out[before].outranked_by = outrankers(view, e);
        }
    }
    if let Some(n) = view.noise.filter(|&n| n > view.max_noise) {
        out.push(Finding {
            check: Check::Noise,
            chunk: None,
            finding: format!(
                "{n} of the top {} results score below the worst expected chunk (ceiling {}): generic descriptions, mixed chunks or loose facets",
                view.k, view.max_noise
            ),
            outranked_by: Vec::new(),
        });
    }
    out
}

fn finding(check: Check, e: &ExpectedChunk, text: String) -> Finding {
    Finding {
        check,
        chunk: Some(e.id.clone()),
        finding: text,
        outranked_by: Vec::new(),
    }
}

/// Lines of a pipe table (`| a | b |`).
fn table_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('|'))
        .collect()
}

fn is_separator_row(line: &str) -> bool {
    line.contains('-')
        && line
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '+'))
}

/// Whether the text is (mostly) a pipe table: at least two table lines.
pub fn is_table(text: &str) -> bool {
    table_lines(text).len() >= 2
}

/// Share of digits among the non-whitespace characters.
fn digit_share(text: &str) -> f64 {
    let (mut digits, mut total) = (0usize, 0usize);
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        total += 1;
        if c.is_ascii_digit() {
            digits += 1;
        }
    }
    if total == 0 {
        0.0
    } else {
        digits as f64 / total as f64
    }
}

const MIN_CHARS: usize = 40;
const MAX_CHARS: usize = 6000;

fn chunking(chunk: &Chunk, e: &ExpectedChunk, out: &mut Vec<Finding>) {
    let Some(text) = chunk.text.as_deref() else {
        out.push(finding(Check::Chunking, e, "chunk has no text".into()));
        return;
    };
    let rows = table_lines(text);
    if rows.len() >= 2 {
        if !rows.iter().any(|r| is_separator_row(r)) {
            out.push(finding(
                Check::Chunking,
                e,
                format!(
                    "table without a header row: {} table lines and no header separator (|---|)",
                    rows.len()
                ),
            ));
        }
        if let Some(last) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
            if last.starts_with('|') && !last.ends_with('|') {
                out.push(finding(
                    Check::Chunking,
                    e,
                    format!("table cut mid-row: last line is `{}`", excerpt(last, 60)),
                ));
            }
        }
    } else {
        let trimmed = text.trim_end();
        if let Some(last) = trimmed.chars().last() {
            if last.is_alphanumeric() || matches!(last, ',' | ';' | '-') {
                out.push(finding(
                    Check::Chunking,
                    e,
                    format!("text ends mid-sentence: `…{}`", tail(trimmed, 40)),
                ));
            }
        }
    }
    let n = text.chars().count();
    if n < MIN_CHARS {
        out.push(finding(
            Check::Chunking,
            e,
            format!("very short chunk: {n} characters (< {MIN_CHARS})"),
        ));
    } else if n > MAX_CHARS {
        out.push(finding(
            Check::Chunking,
            e,
            format!("very long chunk: {n} characters (> {MAX_CHARS})"),
        ));
    }
}

fn description(chunk: &Chunk, e: &ExpectedChunk, out: &mut Vec<Finding>) {
    let table = chunk.text.as_deref().is_some_and(is_table);
    match chunk.representation.as_deref() {
        None => out.push(finding(
            Check::Description,
            e,
            if table {
                "table without a description: no representation, the raw table is embedded".into()
            } else {
                "no representation: the raw content is embedded".into()
            },
        )),
        Some(rep) => {
            if is_table(rep) {
                out.push(finding(
                    Check::Description,
                    e,
                    "representation is the raw table, not a description".into(),
                ));
            } else {
                let share = digit_share(rep);
                if share > 0.5 {
                    out.push(finding(
                        Check::Description,
                        e,
                        format!(
                            "representation is mostly numbers ({:.0}% digits)",
                            share * 100.0
                        ),
                    ));
                }
            }
        }
    }
}

fn labelling(chunk: &Chunk, view: &CaseView<'_>, e: &ExpectedChunk, out: &mut Vec<Finding>) {
    if let (Some(cd), Some(qd)) = (chunk.domain.as_deref(), view.case.domain.as_deref()) {
        if cd != qd {
            out.push(finding(
                Check::Labelling,
                e,
                format!("chunk domain `{cd}` differs from the case's `{qd}`"),
            ));
        }
    }
    if let Some(day) = view.as_of {
        // ISO dates (YYYY-MM-DD, optionally with a time) compare as strings.
        if let Some(to) = chunk.valid_to.as_deref().filter(|to| *to < day) {
            out.push(finding(
                Check::Labelling,
                e,
                format!("validity window ended on {to} (exam date {day})"),
            ));
        }
        if let Some(from) = chunk.valid_from.as_deref().filter(|from| *from > day) {
            out.push(finding(
                Check::Labelling,
                e,
                format!("validity window starts on {from} (exam date {day})"),
            ));
        }
    }
}

/// The results above expected chunk `e` that are not expected themselves (at most
/// [`MAX_OUTRANKERS`], best first), with their batch and its time from the corpus.
fn outrankers(view: &CaseView<'_>, e: &ExpectedChunk) -> Vec<Outranker> {
    let expected: Vec<&str> = view.expected.iter().map(|x| x.id.as_str()).collect();
    let limit = e.rank.map_or(view.k as usize, |r| r - 1);
    view.results
        .iter()
        .take(limit)
        .enumerate()
        .filter(|(_, r)| !expected.contains(&r.id.as_str()))
        .take(MAX_OUTRANKERS)
        .map(|(i, r)| {
            let batch = view
                .corpus
                .and_then(|c| c.get(&r.id))
                .and_then(|c| c.ingest_batch.clone());
            Outranker {
                id: r.id.clone(),
                rank: i + 1,
                score: r.score,
                ingested_at: batch
                    .as_deref()
                    .and_then(|b| view.corpus.and_then(|c| c.batch_time(b)))
                    .map(str::to_owned),
                ingest_batch: batch,
            }
        })
        .collect()
}

fn embedding(view: &CaseView<'_>, e: &ExpectedChunk) -> Finding {
    let outranked_by = outrankers(view, e);
    let text = match (e.rank, e.score) {
        // The precision of the tables (four decimals), not every digit of an f64.
        (Some(r), Some(s)) => format!("buried at rank {r} (score {s:.4}) below the top {}", view.k),
        (Some(r), None) => format!("buried at rank {r} below the top {}", view.k),
        (None, _) => format!(
            "not retrieved at all ({} results for this case)",
            view.results.len()
        ),
    };
    Finding {
        check: Check::Embedding,
        chunk: Some(e.id.clone()),
        finding: text,
        outranked_by,
    }
}

fn excerpt(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().count() > n {
        out.push('…');
    }
    out
}

fn tail(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}
