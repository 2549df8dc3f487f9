//! One case's evidence items against one ranking.
//!
//! Semantics (documented in `docs/policy.md`, tested in `tests/evidence_exam.rs`):
//!
//! - A chunk **holds** characters of an item when it is located in the item's document
//!   (`doc_id`, `start`, `end`) and its span overlaps the item's. Chunks without a location
//!   hold nothing.
//! - The **coverage** of an item by a set of chunks is the share of its characters that at
//!   least one of them holds (overlapping chunks count a character once).
//! - An item is **retrieved within the top K** when the top-K chunks cover at least
//!   `evidence_coverage` of it (policy key, default 1: all of it).
//! - Its **rank** is the smallest r at which the top-r chunks cover it so, looking at the
//!   listed results and then at ranks known beyond them; `None` when not even all of them do.
//! - An item **counts** when its grade is at least the policy's `relevance_level` (default 1).
//!   recall@K = counted items retrieved within the top K / counted items (0 when none
//!   counts); RR@K = 1 / the best rank of a counted item within the top K; P@K = top-K chunks
//!   that hold characters of a counted item / K.
//! - nDCG and AP are trec_eval's, on the ranking in which each listed chunk is replaced by
//!   the items whose rank it is (in the golden set's order; relevance = the item's grade), and
//!   a chunk that completes no item stays as a non-relevant document; the judged documents
//!   are the items with their grades. One chunk per item gives exactly the chunk-ID
//!   figures; a chunk that completes two items yields two relevant positions.
//! - The noise threshold is the lowest score among the chunks at the counted retrieved
//!   items' ranks (with scores that fall with rank: the score at the worst such rank).

use super::{EvidenceItem, SpanIndex, SpanRef};
use crate::run::Retrieved;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Most chunks listed per item in [`EvidenceResult::chunks`].
pub const MAX_LISTED_CHUNKS: usize = 50;

/// Tolerance when comparing a covered share with `evidence_coverage`.
const EPS: f64 = 1e-9;

/// A chunk that holds characters of an evidence item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldingChunk {
    pub id: String,
    /// Its rank for the case (listed, or known beyond the list); `None` when not retrieved.
    pub rank: Option<usize>,
    /// Its span in the document.
    pub start: usize,
    pub end: usize,
}

/// Where one evidence item came out (`cases[].evidence[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceResult {
    pub doc_id: String,
    pub start: usize,
    pub end: usize,
    pub grade: u32,
    /// The smallest r at which the top-r chunks cover it; `None` when not within the
    /// retrieved depth (and the ranks known beyond it).
    pub rank: Option<usize>,
    /// The share of its characters the top-K chunks hold (0 to 1).
    pub covered: f64,
    /// Every chunk that holds characters of it, in document order, with its rank.
    pub chunks: Vec<HoldingChunk>,
    /// Chunks beyond the [`MAX_LISTED_CHUNKS`] listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_chunks: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl EvidenceResult {
    /// Retrieved within the top `k` of a list of `listed` results.
    pub fn in_top_k(&self, k: u32, listed: usize) -> bool {
        self.rank.is_some_and(|r| r <= k as usize && r <= listed)
    }
}

/// What [`judge`] reads.
pub struct JudgeInput<'a> {
    pub items: &'a [EvidenceItem],
    /// The listed results in rank order.
    pub results: &'a [Retrieved],
    /// Ranks known beyond the list (chunk ID → rank, score).
    pub known: Option<&'a BTreeMap<String, (usize, Option<f64>)>>,
    /// Where a chunk sits, when known.
    pub span_of: &'a dyn Fn(&str) -> Option<SpanRef<'a>>,
    /// Every located chunk of the corpus, when the exam read one.
    pub index: Option<&'a SpanIndex>,
    pub k: u32,
    pub coverage: f64,
    pub relevance_level: u32,
}

/// One case's evidence judged: per item, and the counts the measures need.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseEvidence {
    pub items: Vec<EvidenceResult>,
    /// Per item: the share of it that any chunk known to the exam holds (the corpus' and the
    /// retrieved ones), retrieved or not; below `evidence_coverage` no ranking can retrieve
    /// it.
    pub held: Vec<f64>,
    /// The flattened ranking's relevance values (see the module documentation).
    pub rels: Vec<i32>,
    /// Judged `(level, count)`: the items' grades, and the non-relevant positions at 0.
    pub levels: Vec<(i32, u64)>,
    /// Items whose grade is at least the relevance level.
    pub counted: usize,
    /// Of those, retrieved within the top K.
    pub retrieved: usize,
    pub recall: f64,
    pub precision: f64,
    pub reciprocal_rank: f64,
    /// Per top-K position: whether a counted retrieved item has its rank there.
    pub at_item_rank: Vec<bool>,
    /// Distinct ranks of the counted items retrieved within the top K, ascending.
    pub ranks_in_top_k: Vec<usize>,
    /// The fewest chunks that cover every counted item (greedily, over the chunks the exam
    /// knows; exact for `evidence_coverage` 1): the length of a perfect ranking's evidence.
    pub needed_chunks: u32,
    /// Listed results that are not located in any document.
    pub unlocated: usize,
}

/// Inserts `[s, e)` into disjoint sorted intervals; returns the characters added.
fn insert(union: &mut Vec<(usize, usize)>, s: usize, e: usize) -> usize {
    if s >= e {
        return 0;
    }
    let before: usize = union.iter().map(|(a, b)| b - a).sum();
    let mut out = Vec::with_capacity(union.len() + 1);
    let (mut ns, mut ne) = (s, e);
    let mut placed = false;
    for &(a, b) in union.iter() {
        if b < ns {
            out.push((a, b));
        } else if a > ne {
            if !placed {
                out.push((ns, ne));
                placed = true;
            }
            out.push((a, b));
        } else {
            ns = ns.min(a);
            ne = ne.max(b);
        }
    }
    if !placed {
        out.push((ns, ne));
    }
    *union = out;
    let after: usize = union.iter().map(|(a, b)| b - a).sum();
    after - before
}

/// Judges one case's items (see the module documentation).
pub fn judge(input: &JudgeInput<'_>) -> CaseEvidence {
    let listed = input.results.len();
    let k = input.k as usize;
    let top = listed.min(k);
    // Every ranked chunk that is located, by document, in rank order.
    let mut by_doc: HashMap<&str, Vec<(usize, usize, usize, &str)>> = HashMap::new();
    let mut rank_of: HashMap<&str, usize> = HashMap::with_capacity(listed);
    let mut unlocated = 0;
    for (i, r) in input.results.iter().enumerate() {
        rank_of.entry(r.id.as_str()).or_insert(i + 1);
        match (input.span_of)(&r.id) {
            Some(sp) => {
                by_doc
                    .entry(sp.doc_id)
                    .or_default()
                    .push((i + 1, sp.start, sp.end, r.id.as_str()))
            }
            None => unlocated += 1,
        }
    }
    if let Some(known) = input.known {
        for (id, &(rank, _)) in known {
            if rank <= listed || rank_of.contains_key(id.as_str()) {
                continue;
            }
            rank_of.insert(id.as_str(), rank);
            if let Some(sp) = (input.span_of)(id) {
                by_doc
                    .entry(sp.doc_id)
                    .or_default()
                    .push((rank, sp.start, sp.end, id.as_str()));
            }
        }
    }
    for v in by_doc.values_mut() {
        v.sort_unstable();
    }

    let mut items = Vec::with_capacity(input.items.len());
    let mut held = Vec::with_capacity(input.items.len());
    for item in input.items {
        let len = item.len();
        let need = input.coverage * len as f64;
        let mut union = Vec::new();
        let mut covered = 0usize;
        let mut covered_at_k = 0usize;
        let mut rank = None;
        let cands = by_doc.get(item.doc_id.as_str());
        for &(r, s, e, _) in cands.into_iter().flatten() {
            if s >= e || e <= item.start || s >= item.end {
                continue;
            }
            covered += insert(&mut union, s.max(item.start), e.min(item.end));
            if r <= top {
                covered_at_k = covered;
            }
            if rank.is_none() && len > 0 && covered as f64 + EPS >= need {
                rank = Some(r);
            }
        }
        // Every chunk that holds some of it: the corpus' and the ranked ones.
        let mut holding: BTreeMap<(usize, usize, &str), Option<usize>> = BTreeMap::new();
        let mut seen: HashSet<&str> = HashSet::new();
        for &(r, s, e, id) in cands.into_iter().flatten() {
            if s < e && e > item.start && s < item.end && seen.insert(id) {
                holding.insert((s, e, id), Some(r));
            }
        }
        if let Some(index) = input.index {
            for entry in index.overlapping(&item.doc_id, item.start, item.end) {
                let id = entry.id.as_str();
                // A ranked chunk's own span (the retriever's) wins over the corpus'.
                if rank_of.contains_key(id) && (input.span_of)(id).is_some() {
                    continue;
                }
                if seen.insert(id) {
                    holding.insert((entry.start, entry.end, id), rank_of.get(id).copied());
                }
            }
        }
        let mut all = Vec::new();
        for &(s, e, _) in holding.keys() {
            insert(&mut all, s.max(item.start), e.min(item.end));
        }
        let held_chars: usize = all.iter().map(|(a, b)| b - a).sum();
        held.push(if len == 0 {
            0.0
        } else {
            held_chars as f64 / len as f64
        });
        let total = holding.len();
        let chunks: Vec<HoldingChunk> = holding
            .into_iter()
            .take(MAX_LISTED_CHUNKS)
            .map(|((s, e, id), rank)| HoldingChunk {
                id: id.to_owned(),
                rank,
                start: s,
                end: e,
            })
            .collect();
        items.push(EvidenceResult {
            doc_id: item.doc_id.clone(),
            start: item.start,
            end: item.end,
            grade: item.grade,
            rank,
            covered: if len == 0 {
                0.0
            } else {
                covered_at_k as f64 / len as f64
            },
            more_chunks: total - chunks.len(),
            chunks,
        });
    }

    let level = input.relevance_level;
    let counted_mask: Vec<bool> = input.items.iter().map(|i| i.grade >= level).collect();
    let counted = counted_mask.iter().filter(|c| **c).count();
    let mut ranks_in_top_k: Vec<usize> = items
        .iter()
        .zip(&counted_mask)
        .filter(|(_, c)| **c)
        .filter_map(|(r, _)| r.rank.filter(|&r| r <= top))
        .collect();
    let retrieved = ranks_in_top_k.len();
    ranks_in_top_k.sort_unstable();
    ranks_in_top_k.dedup();
    let recall = if counted == 0 {
        0.0
    } else {
        retrieved as f64 / counted as f64
    };
    let reciprocal_rank = ranks_in_top_k.first().map_or(0.0, |&r| 1.0 / r as f64);
    let mut at_item_rank = vec![false; top];
    for &r in &ranks_in_top_k {
        at_item_rank[r - 1] = true;
    }

    // P@K: top-K chunks holding characters of a counted item.
    let mut counted_by_doc: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for (item, _) in input.items.iter().zip(&counted_mask).filter(|(_, c)| **c) {
        counted_by_doc
            .entry(item.doc_id.as_str())
            .or_default()
            .push((item.start, item.end));
    }
    let holding_counted = input.results[..top]
        .iter()
        .filter(|r| {
            (input.span_of)(&r.id).is_some_and(|sp| {
                counted_by_doc.get(sp.doc_id).is_some_and(|v| {
                    sp.start < sp.end && v.iter().any(|&(s, e)| sp.start < e && sp.end > s)
                })
            })
        })
        .count();
    let precision = holding_counted as f64 / f64::from(input.k.max(1));

    // The flattened ranking for nDCG and AP.
    let mut at_rank: HashMap<usize, Vec<u32>> = HashMap::new();
    for r in &items {
        if let Some(rank) = r.rank.filter(|&x| x <= listed) {
            if r.grade > 0 {
                at_rank.entry(rank).or_default().push(r.grade);
            }
        }
    }
    let mut rels = Vec::with_capacity(listed + items.len());
    let mut zeros = 0u64;
    for rank in 1..=listed {
        match at_rank.get(&rank) {
            Some(grades) => rels.extend(grades.iter().map(|&g| g as i32)),
            None => {
                rels.push(0);
                zeros += 1;
            }
        }
    }
    let mut levels: Vec<(i32, u64)> = input
        .items
        .iter()
        .filter(|i| i.grade > 0)
        .map(|i| (i.grade as i32, 1))
        .collect();
    if zeros > 0 {
        levels.push((0, zeros));
    }

    let needed_chunks = needed(input, &counted_mask, &by_doc);
    CaseEvidence {
        items,
        held,
        rels,
        levels,
        counted,
        retrieved,
        recall,
        precision,
        reciprocal_rank,
        at_item_rank,
        ranks_in_top_k,
        needed_chunks,
        unlocated,
    }
}

/// The fewest chunks that cover the counted items, greedily per document over every chunk
/// the exam knows there (the corpus' and the ranked ones): at each first uncovered character,
/// the chunk holding it that reaches farthest. Characters no chunk holds are skipped. When the
/// exam knows no chunk of a document, each counted item there counts as one chunk.
fn needed(
    input: &JudgeInput<'_>,
    counted: &[bool],
    by_doc: &HashMap<&str, Vec<(usize, usize, usize, &str)>>,
) -> u32 {
    let mut targets: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
    for (item, _) in input.items.iter().zip(counted).filter(|(_, c)| **c) {
        if !item.is_empty() {
            targets
                .entry(item.doc_id.as_str())
                .or_default()
                .push((item.start, item.end));
        }
    }
    let mut total = 0u32;
    for (doc, mut spans) in targets {
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (s, e) in spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        let mut chunks: Vec<(usize, usize)> = Vec::new();
        for &(s, e) in &merged {
            if let Some(index) = input.index {
                chunks.extend(index.overlapping(doc, s, e).map(|x| (x.start, x.end)));
            }
        }
        if let Some(v) = by_doc.get(doc) {
            chunks.extend(v.iter().map(|&(_, s, e, _)| (s, e)));
        }
        if chunks.is_empty() {
            total += merged.len() as u32;
            continue;
        }
        chunks.sort_unstable();
        chunks.dedup();
        let mut j = 0;
        let mut reach = 0usize;
        for (ts, te) in merged {
            let mut pos = ts;
            while pos < te {
                while j < chunks.len() && chunks[j].0 <= pos {
                    reach = reach.max(chunks[j].1);
                    j += 1;
                }
                if reach > pos {
                    total += 1;
                    pos = reach;
                } else if j < chunks.len() {
                    pos = chunks[j].0;
                } else {
                    break;
                }
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_merge_and_count_each_character_once() {
        let mut u = Vec::new();
        assert_eq!(insert(&mut u, 10, 20), 10);
        assert_eq!(insert(&mut u, 15, 25), 5);
        assert_eq!(insert(&mut u, 0, 5), 5);
        assert_eq!(insert(&mut u, 5, 10), 5);
        assert_eq!(u, [(0, 25)]);
        assert_eq!(insert(&mut u, 30, 30), 0);
    }
}
