//! The diagnosis checklist for a case that names evidence: per counted item not retrieved
//! within the top K, in the golden set's order, cheapest cause first.
//!
//! 1. `corpus`: no chunk is located in the item's document at all;
//! 2. `chunking`: the chunking dropped part of the item (no chunk holds those characters);
//!    the item is split across chunks (no single chunk holds enough of it); its table's
//!    header row is in another chunk than its rows; then the chunk-level checks of the
//!    chunk-ID checklist on each chunk that holds it;
//! 3. `description` and `labelling` on each chunk that holds it;
//! 4. `embedding`: where it is covered (rank, score) and which chunks hold it now.
//!
//! As for chunk IDs, the results that outrank the item (and hold no counted item) are
//! attached to its first finding.

use super::{CaseEvidence, EvidenceResult, HoldingChunk};
use crate::diagnosis::{
    self, is_separator_row, table_lines, CaseView, Check, DiagnosisFinding, Finding, Outranker,
    MAX_OUTRANKERS,
};

const EPS: f64 = 1e-9;

fn item_finding(
    check: Check,
    item: usize,
    chunk: Option<&str>,
    detail: DiagnosisFinding,
) -> Finding {
    Finding {
        evidence: Some(item),
        ..Finding::new(check, chunk.map(str::to_owned), detail)
    }
}

/// Appends the findings of `view`'s evidence items to `out`.
pub(crate) fn diagnose(view: &CaseView<'_>, ev: &CaseEvidence, out: &mut Vec<Finding>) {
    if view.passed {
        return;
    }
    let top = view.results.len().min(view.k as usize);
    for (i, item) in ev.items.iter().enumerate() {
        if item.grade < view.relevance_level || item.rank.is_some_and(|r| r <= top) {
            continue;
        }
        let before = out.len();
        let located_in_doc = view
            .corpus
            .is_some_and(|c| c.spans().doc(&item.doc_id).is_some())
            || item.chunks.iter().any(|h| h.rank.is_some());
        if let (Some(corpus), false) = (view.corpus, located_in_doc) {
            out.push(item_finding(
                Check::Corpus,
                i,
                None,
                DiagnosisFinding::DocumentNotInCorpus {
                    doc_id: item.doc_id.clone(),
                    source: corpus.source().to_owned(),
                },
            ));
            continue;
        }
        let chars = item.end - item.start;
        let held = ev.held[i];
        if held + EPS < view.evidence_coverage {
            let uncovered = chars - ((held * chars as f64).round() as usize).min(chars);
            out.push(item_finding(
                Check::Chunking,
                i,
                None,
                DiagnosisFinding::EvidenceDropped { uncovered, chars },
            ));
        }
        let alone = |h: &HoldingChunk| {
            let overlap = h.end.min(item.end).saturating_sub(h.start.max(item.start));
            overlap as f64 + EPS >= view.evidence_coverage * chars as f64
        };
        if item.chunks.len() >= 2 && !item.chunks.iter().any(alone) {
            out.push(item_finding(
                Check::Chunking,
                i,
                None,
                DiagnosisFinding::EvidenceSplit {
                    chunks: item.chunks.clone(),
                },
            ));
        }
        let apart = table_header_apart(view, item);
        if let Some((header, rows)) = &apart {
            out.push(item_finding(
                Check::Chunking,
                i,
                None,
                DiagnosisFinding::TableHeaderApart {
                    header: header.clone(),
                    rows: rows.clone(),
                },
            ));
        }
        if let Some(corpus) = view.corpus {
            for h in &item.chunks {
                let Some(chunk) = corpus.get(&h.id) else {
                    continue;
                };
                let mut found = Vec::new();
                diagnosis::chunking(chunk, &h.id, &mut found);
                diagnosis::description(chunk, &h.id, &mut found);
                diagnosis::labelling(chunk, view, &h.id, &mut found);
                for mut f in found {
                    // The header apart says more than "a table without a header".
                    let said = apart
                        .as_ref()
                        .is_some_and(|(_, rows)| rows.iter().any(|r| r.id == h.id));
                    if said && matches!(f.detail, Some(DiagnosisFinding::TableWithoutHeader { .. }))
                    {
                        continue;
                    }
                    f.evidence = Some(i);
                    out.push(f);
                }
            }
        }
        let outranked_by = outrankers(view, ev, item);
        if out.len() == before {
            let detail = match item.rank {
                Some(rank) => DiagnosisFinding::EvidenceBuried {
                    rank,
                    score: score_at(view, rank),
                    k: view.k,
                    covered: item.covered,
                    chunks: item.chunks.clone(),
                },
                None => DiagnosisFinding::EvidenceNotRetrieved {
                    results: view.results.len(),
                    covered: item.covered,
                    chunks: item.chunks.clone(),
                },
            };
            out.push(Finding {
                outranked_by,
                ..item_finding(Check::Embedding, i, None, detail)
            });
        } else {
            out[before].outranked_by = outranked_by;
        }
    }
}

/// The score of the result at `rank`: listed, or known beyond the list.
fn score_at(view: &CaseView<'_>, rank: usize) -> Option<f64> {
    if rank <= view.results.len() {
        return view.results[rank - 1].score;
    }
    None
}

/// The results above the item's rank (or the top K when it has none inside it) that hold no
/// counted item, best first, at most ten.
fn outrankers(view: &CaseView<'_>, ev: &CaseEvidence, item: &EvidenceResult) -> Vec<Outranker> {
    let limit = item.rank.map_or(view.k as usize, |r| r - 1);
    let holds_counted = |id: &str| {
        ev.items
            .iter()
            .filter(|x| x.grade >= view.relevance_level)
            .any(|x| x.chunks.iter().any(|h| h.id == id))
    };
    view.results
        .iter()
        .take(limit)
        .enumerate()
        .filter(|(_, r)| !holds_counted(&r.id))
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

/// When the item lies in a pipe table whose rows are in chunks without the header separator
/// (`|---|`), the nearest chunk before them in the document whose text has the separator:
/// `(header chunk, row chunks)`.
fn table_header_apart(
    view: &CaseView<'_>,
    item: &EvidenceResult,
) -> Option<(HoldingChunk, Vec<HoldingChunk>)> {
    let corpus = view.corpus?;
    let has_separator = |text: &str| table_lines(text).iter().any(|l| is_separator_row(l));
    let rows: Vec<HoldingChunk> = item
        .chunks
        .iter()
        .filter(|h| {
            corpus
                .get(&h.id)
                .and_then(|c| c.text.as_deref())
                .is_some_and(|t| !table_lines(t).is_empty() && !has_separator(t))
        })
        .cloned()
        .collect();
    let first = rows.first()?;
    let doc = corpus.spans().doc(&item.doc_id)?;
    // Back from the first row chunk over chunks holding rows only, to the one with the
    // separator; any other chunk in between ends the table.
    let mut header = None;
    for e in doc
        .entries()
        .iter()
        .rev()
        .filter(|e| e.start < first.start && e.id != first.id)
    {
        let text = corpus.get(&e.id).and_then(|c| c.text.as_deref())?;
        if has_separator(text) {
            header = Some(e);
            break;
        }
        if table_lines(text).is_empty() {
            return None;
        }
    }
    let header = header?;
    let rank = view
        .results
        .iter()
        .position(|r| r.id == header.id)
        .map(|p| p + 1)
        .or_else(|| {
            item.chunks
                .iter()
                .find(|h| h.id == header.id)
                .and_then(|h| h.rank)
        });
    Some((
        HoldingChunk {
            id: header.id.clone(),
            rank,
            start: header.start,
            end: header.end,
        },
        rows,
    ))
}
