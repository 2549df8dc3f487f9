//! Per-case metrics at a chosen K, and the per-case deltas between two runs: status change,
//! metric deltas, rank movement of every expected chunk, and the chunks that displaced an
//! expected chunk out of the top-K.

use super::Metric;
use crate::case::Corpus;
use crate::exam::quality::quality_score;
use crate::exam::{CaseResult, ExpectedChunk};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One case's metrics as compared: the recorded ones, or recomputed at a smaller K.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseMetrics {
    /// The cut-off these values are at.
    pub k: u32,
    pub recall: f64,
    pub quality: f64,
    pub precision: f64,
    pub reciprocal_rank: f64,
    pub ndcg: f64,
    pub average_precision: f64,
    /// `None` when undefined, or when the values were recomputed at another K than the run's
    /// (noise needs the scores of every top-K result, which a report does not keep).
    pub noise: Option<u32>,
}

impl CaseMetrics {
    /// The values the exam recorded for the case.
    pub fn recorded(c: &CaseResult) -> Self {
        CaseMetrics {
            k: c.top_k,
            recall: c.recall,
            quality: c.quality,
            precision: c.precision,
            reciprocal_rank: c.reciprocal_rank,
            ndcg: c.ndcg,
            average_precision: c.average_precision,
            noise: c.noise,
        }
    }

    /// The case's metrics at cut-off `k`, recomputed from the ranks of its expected chunks
    /// (relevance is binary and every expected chunk's rank is recorded, also beyond K), with
    /// the Quality Score taken under `recall_floor`. The formulas are the exam's
    /// (docs/exam-json.md), summed in rank order like the trec engine, so at the run's own K
    /// they reproduce the recorded values. Expected IDs listed twice count once; `noise` is
    /// kept only when `k` is the run's K.
    pub fn at_k(c: &CaseResult, k: u32, recall_floor: f64) -> Self {
        let mut ranks: Vec<usize> = distinct(&c.expected).filter_map(|e| e.rank).collect();
        ranks.sort_unstable();
        let n = distinct(&c.expected).count();
        let k_us = k as usize;
        let hits: Vec<usize> = ranks.iter().copied().filter(|&r| r <= k_us).collect();
        let (recall, precision, reciprocal_rank, ndcg, average_precision) = if n == 0 || k == 0 {
            (0.0, 0.0, 0.0, 0.0, 0.0)
        } else {
            let recall = hits.len() as f64 / n as f64;
            let precision = hits.len() as f64 / f64::from(k);
            let rr = hits.first().map_or(0.0, |&r| 1.0 / r as f64);
            let mut dcg = 0.0;
            for &r in &hits {
                dcg += 1.0 / ((r + 1) as f64).log2();
            }
            let mut ideal = 0.0;
            for i in 0..n.min(k_us) {
                ideal += 1.0 / ((i + 2) as f64).log2();
            }
            let ndcg = if ideal > 0.0 { dcg / ideal } else { 0.0 };
            let mut sum = 0.0;
            for (found, &r) in hits.iter().enumerate() {
                sum += (found + 1) as f64 / r as f64;
            }
            let ap = if hits.is_empty() { 0.0 } else { sum / n as f64 };
            (recall, precision, rr, ndcg, ap)
        };
        CaseMetrics {
            k,
            recall,
            quality: quality_score(recall, recall_floor),
            precision,
            reciprocal_rank,
            ndcg,
            average_precision,
            noise: if k == c.top_k { c.noise } else { None },
        }
    }

    /// The value of `metric` for this case (the per-case quantity whose mean the metric is).
    pub fn get(&self, metric: Metric) -> f64 {
        match metric {
            Metric::MeanRecall => self.recall,
            Metric::MeanQuality => self.quality,
            Metric::Mrr => self.reciprocal_rank,
            Metric::MeanNdcg => self.ndcg,
            Metric::MeanPrecision => self.precision,
            Metric::MeanAveragePrecision => self.average_precision,
        }
    }
}

/// The expected chunks of a case, each ID once (first listing wins).
pub(crate) fn distinct(expected: &[ExpectedChunk]) -> impl Iterator<Item = &ExpectedChunk> {
    let mut seen = BTreeSet::new();
    expected.iter().filter(move |e| seen.insert(e.id.as_str()))
}

/// The distinct expected IDs of a case, as a set.
pub(crate) fn expected_set(c: &CaseResult) -> BTreeSet<&str> {
    c.expected.iter().map(|e| e.id.as_str()).collect()
}

/// Whether a case passed or failed in each run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    StillPassing,
    StillFailing,
    NewlyFailing,
    NewlyPassing,
}

/// A value in both runs and `new − base`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ValueDelta {
    pub base: f64,
    pub new: f64,
    pub delta: f64,
}

impl ValueDelta {
    fn of(base: f64, new: f64) -> Self {
        ValueDelta {
            base,
            new,
            delta: new - base,
        }
    }
}

/// Noise in both runs (`None` where undefined) and `new − base` when both are defined.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoiseDelta {
    pub base: Option<u32>,
    pub new: Option<u32>,
    pub delta: Option<i64>,
}

/// How an expected chunk's rank moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankChange {
    Same,
    /// A smaller (better) rank now.
    Improved,
    /// A larger (worse) rank now.
    Worsened,
    /// Absent before, retrieved now.
    Appeared,
    /// Retrieved before, absent now.
    Disappeared,
    /// Absent in both runs.
    Absent,
}

/// One expected chunk's rank in both runs (1-based; `None` when not retrieved at all).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankDelta {
    pub id: String,
    pub base_rank: Option<usize>,
    pub new_rank: Option<usize>,
    /// `new_rank − base_rank` when both exist (positive = pushed down).
    pub delta: Option<i64>,
    pub change: RankChange,
    /// Inside the compared K in each run.
    pub base_in_top_k: bool,
    pub new_in_top_k: bool,
}

/// A chunk that now ranks above a displaced expected chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Displacer {
    pub id: String,
    /// Its rank in the new run.
    pub rank: usize,
    pub score: Option<f64>,
    /// From the new report's diagnosis, else from the corpus given to the comparison.
    pub ingest_batch: Option<String>,
    /// When that batch was ingested (RFC 3339), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingested_at: Option<String>,
    /// `Some(true)` when the base run proves it was not above the expected chunk before
    /// (nothing but expected chunks ranked above it then, or its batch was not in the base
    /// run's corpus); `None` when the base report does not tell.
    pub newly_above: Option<bool>,
}

/// An expected chunk that was inside the top-K in the base run and is not in the new one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Displacement {
    pub chunk: String,
    pub base_rank: Option<usize>,
    pub new_rank: Option<usize>,
    /// Non-expected results above it in the base run (`rank − 1 − expected chunks above`).
    pub above_before: Option<usize>,
    /// Non-expected results above it now, when its new rank is known.
    pub above_now: Option<usize>,
    /// The chunks above it now, as far as the new report lists them (its diagnosis keeps at
    /// most ten per buried chunk of a failing case).
    pub by: Vec<Displacer>,
    /// The collection the new run's retriever said no longer holds it (then nothing
    /// displaced it: it is gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gone_from: Option<String>,
}

/// One shared case compared between the two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseDelta {
    pub id: String,
    pub domain: Option<String>,
    /// Gold in either run.
    pub gold: bool,
    pub tags: Vec<String>,
    /// The K both sides are compared at.
    pub k: u32,
    /// Whether the metrics were recomputed (K or recall floor differed between the runs).
    pub recomputed: bool,
    pub base_passed: bool,
    pub new_passed: bool,
    pub status: CaseStatus,
    pub recall: ValueDelta,
    pub quality: ValueDelta,
    pub precision: ValueDelta,
    pub reciprocal_rank: ValueDelta,
    pub ndcg: ValueDelta,
    pub average_precision: ValueDelta,
    pub noise: NoiseDelta,
    pub expected: Vec<RankDelta>,
    /// The case's evidence items (a golden case given by `evidence`), in the golden set's
    /// order, each named `DOC[start..end]`: the rank at which the top-ranked chunks cover
    /// it in each run. Empty (and left out of the JSON) for a case of chunk IDs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<RankDelta>,
    /// Expected chunks pushed out of the top-K, and by what.
    pub displaced: Vec<Displacement>,
}

/// The metrics of both sides of a shared case, on common settings: recorded when K and the
/// recall floor agree; otherwise recomputed at the smaller K, Quality under the new run's
/// floor.
pub(crate) fn paired_metrics(base: &CaseResult, new: &CaseResult) -> (CaseMetrics, CaseMetrics) {
    let same_k = base.top_k == new.top_k;
    if same_k && base.recall_floor == new.recall_floor {
        return (CaseMetrics::recorded(base), CaseMetrics::recorded(new));
    }
    let k = base.top_k.min(new.top_k);
    let floor = new.recall_floor;
    if same_k {
        let mut b = CaseMetrics::recorded(base);
        b.quality = quality_score(b.recall, floor);
        return (b, CaseMetrics::recorded(new));
    }
    // Noise cannot be recomputed for the side whose K changes; neither side is compared.
    let mut b = CaseMetrics::at_k(base, k, floor);
    let mut n = CaseMetrics::at_k(new, k, floor);
    b.noise = None;
    n.noise = None;
    (b, n)
}

fn status(base: bool, new: bool) -> CaseStatus {
    match (base, new) {
        (true, true) => CaseStatus::StillPassing,
        (false, false) => CaseStatus::StillFailing,
        (true, false) => CaseStatus::NewlyFailing,
        (false, true) => CaseStatus::NewlyPassing,
    }
}

fn rank_change(base: Option<usize>, new: Option<usize>) -> RankChange {
    match (base, new) {
        (None, None) => RankChange::Absent,
        (Some(_), None) => RankChange::Disappeared,
        (None, Some(_)) => RankChange::Appeared,
        (Some(a), Some(b)) if a == b => RankChange::Same,
        (Some(a), Some(b)) if b < a => RankChange::Improved,
        _ => RankChange::Worsened,
    }
}

/// Non-expected results above rank `r`: `r − 1` minus the expected chunks ranked above it.
fn non_expected_above(c: &CaseResult, r: usize) -> usize {
    let expected_above = distinct(&c.expected)
        .filter(|e| e.rank.is_some_and(|x| x < r))
        .count();
    (r - 1).saturating_sub(expected_above)
}

/// The outranking chunks the report's diagnosis lists for expected chunk `chunk`.
pub(crate) fn outrankers<'a>(
    c: &'a CaseResult,
    chunk: &'a str,
) -> impl Iterator<Item = &'a crate::diagnosis::Outranker> {
    c.diagnosis
        .iter()
        .filter(move |f| f.chunk.as_deref() == Some(chunk))
        .flat_map(|f| f.outranked_by.iter())
}

/// The collection a case's diagnosis says no longer holds expected chunk `chunk`.
pub(crate) fn gone_from(c: &CaseResult, chunk: &str) -> Option<String> {
    use crate::diagnosis::DiagnosisFinding as D;
    c.diagnosis
        .iter()
        .filter(|f| f.chunk.as_deref() == Some(chunk))
        .find_map(|f| match f.detail.as_ref()? {
            D::NotInCollection { collection } => Some(collection.clone()),
            D::NotInCorpus { source } if source == "index" => Some("index".to_owned()),
            _ => None,
        })
}

/// The delta of one shared case. `corpus` fills in missing `ingest_batch`es;
/// `base_batches` are the batches the base run's corpus held (empty when it did not say).
pub(crate) fn case_delta(
    base: &CaseResult,
    new: &CaseResult,
    corpus: Option<&Corpus>,
    base_batches: &[crate::exam::CorpusBatch],
) -> CaseDelta {
    let (bm, nm) = paired_metrics(base, new);
    let k = bm.k.min(nm.k);
    let k_us = k as usize;
    let in_top = |r: Option<usize>| r.is_some_and(|r| r <= k_us);
    let mut expected = Vec::new();
    let mut displaced = Vec::new();
    for e in distinct(&new.expected) {
        let base_rank = base
            .expected
            .iter()
            .find(|b| b.id == e.id)
            .and_then(|b| b.rank);
        let new_rank = e.rank;
        let (bt, nt) = (in_top(base_rank), in_top(new_rank));
        expected.push(RankDelta {
            id: e.id.clone(),
            base_rank,
            new_rank,
            delta: base_rank.zip(new_rank).map(|(b, n)| n as i64 - b as i64),
            change: rank_change(base_rank, new_rank),
            base_in_top_k: bt,
            new_in_top_k: nt,
        });
        if bt && !nt {
            let above_before = base_rank.map(|r| non_expected_above(base, r));
            let proven_new = above_before == Some(0);
            let mut seen = BTreeSet::new();
            let by = outrankers(new, &e.id)
                .filter(|o| seen.insert(o.id.clone()))
                .map(|o| {
                    let ingest_batch = o.ingest_batch.clone().or_else(|| {
                        corpus
                            .and_then(|c| c.get(&o.id))
                            .and_then(|c| c.ingest_batch.clone())
                    });
                    Displacer {
                        id: o.id.clone(),
                        rank: o.rank,
                        score: o.score,
                        ingested_at: o.ingested_at.clone().or_else(|| {
                            let b = ingest_batch.as_deref()?;
                            corpus?.batch_time(b).map(str::to_owned)
                        }),
                        // A chunk of a batch the base run's corpus did not hold was not there.
                        newly_above: (proven_new
                            || (!base_batches.is_empty()
                                && ingest_batch
                                    .as_deref()
                                    .is_some_and(|b| !base_batches.iter().any(|x| x.name == b))))
                        .then_some(true),
                        ingest_batch,
                    }
                })
                .collect();
            displaced.push(Displacement {
                chunk: e.id.clone(),
                base_rank,
                new_rank,
                above_before,
                above_now: new_rank.map(|r| non_expected_above(new, r)),
                by,
                gone_from: gone_from(new, &e.id),
            });
        }
    }
    // Evidence items are matched by their span: the same document and offsets.
    let evidence = new
        .evidence
        .iter()
        .map(|e| {
            let base_rank = base
                .evidence
                .iter()
                .find(|b| b.doc_id == e.doc_id && b.start == e.start && b.end == e.end)
                .and_then(|b| b.rank);
            RankDelta {
                id: format!("{}[{}..{}]", e.doc_id, e.start, e.end),
                base_rank,
                new_rank: e.rank,
                delta: base_rank.zip(e.rank).map(|(b, n)| n as i64 - b as i64),
                change: rank_change(base_rank, e.rank),
                base_in_top_k: in_top(base_rank),
                new_in_top_k: in_top(e.rank),
            }
        })
        .collect();
    let vd = |m: Metric| ValueDelta::of(bm.get(m), nm.get(m));
    CaseDelta {
        id: new.id.clone(),
        domain: new.domain.clone(),
        gold: base.gold || new.gold,
        tags: new.tags.clone(),
        k,
        recomputed: base.top_k != new.top_k || base.recall_floor != new.recall_floor,
        base_passed: base.passed,
        new_passed: new.passed,
        status: status(base.passed, new.passed),
        recall: vd(Metric::MeanRecall),
        quality: vd(Metric::MeanQuality),
        precision: vd(Metric::MeanPrecision),
        reciprocal_rank: vd(Metric::Mrr),
        ndcg: vd(Metric::MeanNdcg),
        average_precision: vd(Metric::MeanAveragePrecision),
        noise: NoiseDelta {
            base: bm.noise,
            new: nm.noise,
            delta: bm
                .noise
                .zip(nm.noise)
                .map(|(b, n)| i64::from(n) - i64::from(b)),
        },
        expected,
        evidence,
        displaced,
    }
}
