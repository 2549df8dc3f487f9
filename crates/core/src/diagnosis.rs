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
//! Plus `noise` for cases over the noise ceiling. Each finding says what it saw, as a typed
//! [`DiagnosisFinding`]; the report layer words it. Chunk-level
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
///
/// What was seen is the typed [`DiagnosisFinding`] (`kind` and its fields in JSON); the
/// sentence for people is worded by the report layer (`veredicto_report::findings`) when it
/// renders, JSON included ([`Finding::finding`] is left empty here). Reports recorded before
/// findings were typed carry only the sentence (`detail` is `None`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub check: Check,
    /// The expected chunk concerned, if the finding is about one (for an evidence item: the
    /// chunk holding it that the finding is about, if any).
    pub chunk: Option<String>,
    /// The evidence item concerned (its 0-based position in the case's `evidence`), if the
    /// finding is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<usize>,
    /// The sentence for people: empty here, worded by the report layer when it renders.
    #[serde(default)]
    pub finding: String,
    /// What was seen, with its numbers.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<DiagnosisFinding>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outranked_by: Vec<Outranker>,
}

impl Finding {
    /// A finding with no sentence yet and no outranking chunks.
    pub fn new(check: Check, chunk: Option<String>, detail: DiagnosisFinding) -> Finding {
        Finding {
            check,
            chunk,
            evidence: None,
            finding: String::new(),
            detail: Some(detail),
            outranked_by: Vec::new(),
        }
    }
}

/// What a diagnosis finding saw, by kind (serialised as `kind` plus the fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DiagnosisFinding {
    /// `corpus`: the expected chunk is not in the corpus; `source` is what the corpus was
    /// read from (`index`, `corpus`, …).
    NotInCorpus { source: String },
    /// `corpus`: the live retriever's collection does not hold the expected chunk, asked by
    /// ID after the search (pgvector `WHERE id = ANY(…)`, an `ids` query, Qdrant's points
    /// API). `collection` names it: ``table `kb` ``, ``index `chunks` ``, ``collection `kb` ``.
    NotInCollection { collection: String },
    /// `chunking`: the chunk has no text.
    NoText,
    /// `chunking`: pipe-table lines and no header separator (`|---|`).
    TableWithoutHeader { table_lines: usize },
    /// `chunking`: the last line opens a table row and does not close it (`last_line` cut to
    /// 60 characters, `…` marking a cut).
    TableCutMidRow { last_line: String },
    /// `chunking`: the text ends inside a sentence (`tail`: its last 40 characters).
    EndsMidSentence { tail: String },
    /// `chunking`: fewer than `min` characters.
    TooShort { chars: usize, min: usize },
    /// `chunking`: more than `max` characters.
    TooLong { chars: usize, max: usize },
    /// `description`: a table chunk with no representation.
    TableWithoutDescription,
    /// `description`: no representation: the raw content is embedded.
    NoRepresentation,
    /// `description`: the representation is the raw table.
    RepresentationIsTable,
    /// `description`: the representation is mostly digits (`digit_share` in 0–1).
    MostlyNumbers { digit_share: f64 },
    /// `labelling`: the chunk's domain differs from the case's.
    DomainMismatch {
        chunk_domain: String,
        case_domain: String,
    },
    /// `labelling`: the chunk's validity window ended before the exam date.
    ValidityEnded { valid_to: String, exam_date: String },
    /// `labelling`: the chunk's validity window starts after the exam date.
    ValidityNotStarted {
        valid_from: String,
        exam_date: String,
    },
    /// `embedding` (or `retriever`): ranked below the top `k`.
    Buried {
        rank: usize,
        score: Option<f64>,
        k: u32,
    },
    /// `embedding`: not among the case's `results`.
    NotRetrieved { results: usize },
    /// `retriever`: not within the retrieval depth.
    NotWithinDepth { depth: usize, results: usize },
    /// `retriever`: not in the run file.
    NotInRun { results: usize },
    /// `retriever`: the retriever failed for this case.
    RetrieverFailed { error: String },
    /// `ann_index`: the exact search ranks the chunk inside the top K, the ANN index does
    /// not (`served_rank` absent: not served at all).
    LostByAnn {
        exact_rank: usize,
        served_rank: Option<usize>,
    },
    /// `ann_index`: the exact search misses expected chunks too.
    MissedUnderExactToo,
    /// `ann_index`: the exact search misses expected chunks too, and every one it misses
    /// (`missing` of them) is not in the retriever's `collection`: neither the ANN index nor
    /// the embedding is to blame.
    MissingUnderExactToo { missing: usize, collection: String },
    /// `noise`: structural (see [`NoiseFinding::Structural`]).
    StructuralNoise {
        k: u32,
        noise: u32,
        max_noise: u32,
        expected: u32,
        perfect_noise: u32,
        suggested_top_k: u32,
    },
    /// `noise`: from the ranking (see [`NoiseFinding::Ranking`]).
    RankingNoise { k: u32, noise: u32, max_noise: u32 },
    /// `corpus`: no chunk of the corpus (nor any retrieved one) is located in the evidence
    /// item's document `doc_id`; `source` as for [`DiagnosisFinding::NotInCorpus`].
    DocumentNotInCorpus { doc_id: String, source: String },
    /// `chunking`: `uncovered` of the item's `chars` characters are in no chunk: the
    /// chunking dropped that text, so no ranking can retrieve the item.
    EvidenceDropped { uncovered: usize, chars: usize },
    /// `chunking`: no single chunk holds the item (its coverage): it is split across
    /// `chunks`, in document order, each with its rank.
    EvidenceSplit {
        chunks: Vec<crate::evidence::HoldingChunk>,
    },
    /// `chunking`: the item lies in a table whose rows are in `rows` and whose header row
    /// (the row above the `|---|` separator) is in another chunk, `header`.
    TableHeaderApart {
        header: crate::evidence::HoldingChunk,
        rows: Vec<crate::evidence::HoldingChunk>,
    },
    /// `embedding`: the item is covered only at `rank`, below the top `k` (`score`: the
    /// chunk's at that rank); `covered`: the share of it the top K hold; `chunks`: which
    /// chunks hold it now.
    EvidenceBuried {
        rank: usize,
        score: Option<f64>,
        k: u32,
        covered: f64,
        chunks: Vec<crate::evidence::HoldingChunk>,
    },
    /// `embedding`: the item is not covered within the case's `results`.
    EvidenceNotRetrieved {
        results: usize,
        covered: f64,
        chunks: Vec<crate::evidence::HoldingChunk>,
    },
}

/// Why a case is over its noise ceiling.
///
/// Noise counts the top-K results scoring below the worst expected chunk inside the top-K.
/// With `e` expected chunks and `n = min(K, results)` results in the top-K, even a perfect
/// ranking (every expected chunk first) leaves `n − e` results below them. When that alone
/// exceeds the ceiling, the noise is **structural**: no better description or ranking can
/// fix it, only a smaller K for the case (or a calibrated ceiling). Otherwise the noise comes
/// from the ranking (expected chunks missing from the top-K while others fill it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NoiseFinding {
    /// K exceeds what the case's expected list can fill.
    Structural {
        /// The case's K.
        k: u32,
        /// Results inside the top-K (`min(K, results)`).
        in_top_k: u32,
        /// Distinct expected chunks of the case.
        expected: u32,
        /// Ranks (1-based, ascending) of the expected chunks inside the top-K.
        ranks: Vec<usize>,
        /// The case's noise.
        noise: u32,
        /// `⌊noise_ceiling × K⌋`.
        max_noise: u32,
        /// The noise of a perfect ranking: `in_top_k − expected`.
        perfect_noise: u32,
        /// The largest K at which a perfect ranking stays within the case's ceiling
        /// (at least the number of expected chunks).
        suggested_top_k: u32,
    },
    /// The ranking: expected chunks fell out of the top-K while non-expected ones filled it.
    Ranking {
        k: u32,
        noise: u32,
        max_noise: u32,
        /// Expected chunks inside the top-K, and in all.
        expected_in_top_k: u32,
        expected: u32,
    },
}

/// The largest K' ≥ `expected` at which a perfect ranking (every expected chunk first, K'
/// results) has noise `K' − expected` within `⌊ceiling × K'⌋`; `expected` itself when no
/// larger K' qualifies. Searched up to `limit` (the case's current K).
pub fn suggested_top_k(expected: u32, ceiling: f64, limit: u32) -> u32 {
    let expected = expected.max(1);
    (expected..=limit.max(expected))
        .rev()
        .find(|&k| k - expected <= crate::exam::noise::max_noise(ceiling, k))
        .unwrap_or(expected)
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
    /// The case's noise ceiling (fraction of K), for the structural-noise suggestion.
    pub noise_ceiling: f64,
    /// What a perfect ranking of the case puts first: its distinct expected chunks that
    /// count, or for evidence the fewest chunks that cover its counted items.
    pub counted: u32,
    /// The distinct ranks inside the top K of the expected chunks (or evidence items) that
    /// count, ascending.
    pub counted_ranks: Vec<usize>,
    /// The case's evidence judged, when it names evidence.
    pub evidence: Option<&'a crate::evidence::CaseEvidence>,
    pub evidence_coverage: f64,
    pub relevance_level: u32,
}

/// How many outranking results an `embedding` finding lists.
pub(crate) const MAX_OUTRANKERS: usize = 10;

/// Runs the checklist. For a failing case: over every expected chunk that is not in the
/// top-K, then the noise check. For any case: expected chunks missing from the corpus.
/// Findings come in checklist order per chunk, chunks in the golden set's order.
pub fn diagnose_case(view: &CaseView<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(ev) = view.evidence {
        crate::evidence::diagnose::diagnose(view, ev, &mut out);
        if let Some(nf) = classify_noise(view) {
            out.push(noise_finding(&nf));
        }
        return out;
    }
    for e in view.expected {
        let chunk = view.corpus.and_then(|c| c.get(&e.id));
        if let (Some(corpus), None) = (view.corpus, chunk) {
            out.push(finding(
                Check::Corpus,
                &e.id,
                DiagnosisFinding::NotInCorpus {
                    source: corpus.source().to_owned(),
                },
            ));
            continue;
        }
        if view.passed || e.in_top_k {
            continue;
        }
        let before = out.len();
        if let Some(chunk) = chunk {
            chunking(chunk, &e.id, &mut out);
            description(chunk, &e.id, &mut out);
            labelling(chunk, view, &e.id, &mut out);
        }
        if out.len() == before {
            out.push(embedding(view, e));
        } else {
            // An earlier item explains it, but the evidence of what buried it stays.
            out[before].outranked_by = outrankers(view, e);
        }
    }
    if let Some(nf) = classify_noise(view) {
        out.push(noise_finding(&nf));
    }
    out
}

fn finding(check: Check, id: &str, detail: DiagnosisFinding) -> Finding {
    Finding::new(check, Some(id.to_owned()), detail)
}

/// Why case `view` is over its noise ceiling, when it is: structural when a perfect
/// ranking would be over it too ([`NoiseFinding`]). `None` when within the ceiling or
/// undefined.
pub fn classify_noise(view: &CaseView<'_>) -> Option<NoiseFinding> {
    let n = view.noise.filter(|&n| n > view.max_noise)?;
    let k = view.k;
    let in_top_k = view.results.len().min(k as usize) as u32;
    let expected = view.counted;
    let ranks = view.counted_ranks.clone();
    let perfect_noise = in_top_k.saturating_sub(expected);
    Some(if perfect_noise > view.max_noise {
        NoiseFinding::Structural {
            k,
            in_top_k,
            expected,
            ranks,
            noise: n,
            max_noise: view.max_noise,
            perfect_noise,
            suggested_top_k: suggested_top_k(expected, view.noise_ceiling, k),
        }
    } else {
        NoiseFinding::Ranking {
            k,
            noise: n,
            max_noise: view.max_noise,
            expected_in_top_k: ranks.len() as u32,
            expected,
        }
    })
}

/// The checklist's `noise` finding, from [`classify_noise`].
fn noise_finding(nf: &NoiseFinding) -> Finding {
    let detail = match *nf {
        NoiseFinding::Structural {
            k,
            noise,
            max_noise,
            expected,
            perfect_noise,
            suggested_top_k,
            ..
        } => DiagnosisFinding::StructuralNoise {
            k,
            noise,
            max_noise,
            expected,
            perfect_noise,
            suggested_top_k,
        },
        NoiseFinding::Ranking {
            k,
            noise,
            max_noise,
            ..
        } => DiagnosisFinding::RankingNoise {
            k,
            noise,
            max_noise,
        },
    };
    Finding::new(Check::Noise, None, detail)
}

/// Lines of a pipe table (`| a | b |`).
pub(crate) fn table_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('|'))
        .collect()
}

pub(crate) fn is_separator_row(line: &str) -> bool {
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

pub(crate) fn chunking(chunk: &Chunk, e: &str, out: &mut Vec<Finding>) {
    let Some(text) = chunk.text.as_deref() else {
        out.push(finding(Check::Chunking, e, DiagnosisFinding::NoText));
        return;
    };
    let rows = table_lines(text);
    if rows.len() >= 2 {
        if !rows.iter().any(|r| is_separator_row(r)) {
            out.push(finding(
                Check::Chunking,
                e,
                DiagnosisFinding::TableWithoutHeader {
                    table_lines: rows.len(),
                },
            ));
        }
        if let Some(last) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
            if last.starts_with('|') && !last.ends_with('|') {
                out.push(finding(
                    Check::Chunking,
                    e,
                    DiagnosisFinding::TableCutMidRow {
                        last_line: excerpt(last, 60),
                    },
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
                    DiagnosisFinding::EndsMidSentence {
                        tail: tail(trimmed, 40),
                    },
                ));
            }
        }
    }
    let n = text.chars().count();
    if n < MIN_CHARS {
        out.push(finding(
            Check::Chunking,
            e,
            DiagnosisFinding::TooShort {
                chars: n,
                min: MIN_CHARS,
            },
        ));
    } else if n > MAX_CHARS {
        out.push(finding(
            Check::Chunking,
            e,
            DiagnosisFinding::TooLong {
                chars: n,
                max: MAX_CHARS,
            },
        ));
    }
}

pub(crate) fn description(chunk: &Chunk, e: &str, out: &mut Vec<Finding>) {
    let table = chunk.text.as_deref().is_some_and(is_table);
    match chunk.representation.as_deref() {
        None => out.push(finding(
            Check::Description,
            e,
            if table {
                DiagnosisFinding::TableWithoutDescription
            } else {
                DiagnosisFinding::NoRepresentation
            },
        )),
        Some(rep) => {
            if is_table(rep) {
                out.push(finding(
                    Check::Description,
                    e,
                    DiagnosisFinding::RepresentationIsTable,
                ));
            } else {
                let share = digit_share(rep);
                if share > 0.5 {
                    out.push(finding(
                        Check::Description,
                        e,
                        DiagnosisFinding::MostlyNumbers { digit_share: share },
                    ));
                }
            }
        }
    }
}

pub(crate) fn labelling(chunk: &Chunk, view: &CaseView<'_>, e: &str, out: &mut Vec<Finding>) {
    if let (Some(cd), Some(qd)) = (chunk.domain.as_deref(), view.case.domain.as_deref()) {
        if cd != qd {
            out.push(finding(
                Check::Labelling,
                e,
                DiagnosisFinding::DomainMismatch {
                    chunk_domain: cd.to_owned(),
                    case_domain: qd.to_owned(),
                },
            ));
        }
    }
    if let Some(day) = view.as_of {
        // ISO dates (YYYY-MM-DD, optionally with a time) compare as strings.
        if let Some(to) = chunk.valid_to.as_deref().filter(|to| *to < day) {
            out.push(finding(
                Check::Labelling,
                e,
                DiagnosisFinding::ValidityEnded {
                    valid_to: to.to_owned(),
                    exam_date: day.to_owned(),
                },
            ));
        }
        if let Some(from) = chunk.valid_from.as_deref().filter(|from| *from > day) {
            out.push(finding(
                Check::Labelling,
                e,
                DiagnosisFinding::ValidityNotStarted {
                    valid_from: from.to_owned(),
                    exam_date: day.to_owned(),
                },
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
    let detail = match e.rank {
        Some(rank) => DiagnosisFinding::Buried {
            rank,
            score: e.score,
            k: view.k,
        },
        None => DiagnosisFinding::NotRetrieved {
            results: view.results.len(),
        },
    };
    Finding {
        outranked_by,
        ..Finding::new(Check::Embedding, Some(e.id.clone()), detail)
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
