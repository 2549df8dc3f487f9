//! `fusion:METHOD?PARAMS`: several retrievers (the arms), each asked for the same case, and
//! their rankings fused into one ([`veredicto_core::fusion`] has the methods, formulas and
//! tie rule).
//!
//! An arm is any retriever URI (`index:DIR?mode=bm25`, `postgres://…`, `http://…`) or a run
//! file (`run:FILE`). The fused ranking is each arm's top `depth` fused, cut at `depth`:
//! its scores are the fused scores (what `--save-run` writes), and the positions of the
//! fused list beyond `depth` are kept as known ranks. For the report, [`FusionStats`]
//! holds each arm's time and the rank at which it found each expected chunk.
//!
//! ```text
//! FusionRetriever::open("fusion:rrf?k=60", &["index:kb?mode=bm25", "index:kb"], &options)
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use veredicto_core::case::Corpus;
use veredicto_core::fusion::{Fusion, FusionError};
use veredicto_core::run::Run;

use crate::{Hit, Holding, Options, Ranking, Request, RetrieveError, Retriever, Vectors};

/// The scheme of a fusion URI.
pub const SCHEME: &str = "fusion:";

/// Fuses the arms' rankings of one case (each arm's first `depth` hits, in order: a run
/// file may hold more) and cuts the fused list at `depth`; the rest of the fused list
/// becomes the known ranks.
pub fn fuse_rankings(
    fusion: &Fusion,
    arms: &[Ranking],
    depth: usize,
) -> Result<Ranking, FusionError> {
    let lists: Vec<Vec<(&str, Option<f64>)>> = arms
        .iter()
        .map(|r| {
            r.hits
                .iter()
                .take(depth)
                .map(|h| (h.id.as_str(), h.score))
                .collect()
        })
        .collect();
    let fused = fusion.fuse(&lists)?;
    // Where an arm said a chunk sits (the first arm that said).
    let mut spans = std::collections::HashMap::new();
    for h in arms.iter().flat_map(|r| r.hits.iter().take(depth)) {
        if let Some(sp) = &h.span {
            spans.entry(h.id.as_str()).or_insert(sp);
        }
    }
    let mut ranking = Ranking::default();
    for (i, d) in fused.into_iter().enumerate() {
        if i < depth {
            let span = spans.get(d.id.as_str()).map(|sp| (*sp).clone());
            ranking.hits.push(Hit {
                id: d.id,
                score: Some(d.score),
                span,
            });
        } else {
            ranking.known.insert(d.id, (i + 1, Some(d.score)));
        }
    }
    Ok(ranking)
}

/// What one arm did during an exam or search, for the report's per-arm section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArmStats {
    /// The arm's URI, without credentials.
    pub uri: String,
    /// Its backend name (`index`, `run-file`, …).
    pub kind: String,
    /// Wall-clock seconds of each call to the arm (one per batch, or one per case), in
    /// the order they ended.
    pub seconds: Vec<f64>,
    /// Cases it answered.
    pub cases: usize,
    /// Per case: the 1-based rank at which the arm found each expected chunk (in the case's
    /// order of expected chunks; `None`: not found, at any depth the arm knows).
    pub expected_ranks: BTreeMap<String, Vec<Option<usize>>>,
}

impl ArmStats {
    /// Recall at `k` of the arm, averaged over the cases with expected chunks: per case,
    /// the share of its expected chunks found at rank ≤ `k`. `None` without such cases.
    pub fn recall_at(&self, k: usize) -> Option<f64> {
        let per_case: Vec<f64> = self
            .expected_ranks
            .values()
            .filter(|r| !r.is_empty())
            .map(|r| r.iter().filter(|x| x.is_some_and(|x| x <= k)).count() as f64 / r.len() as f64)
            .collect();
        (!per_case.is_empty()).then(|| per_case.iter().sum::<f64>() / per_case.len() as f64)
    }

    /// Total seconds spent in the arm.
    pub fn total_seconds(&self) -> f64 {
        self.seconds.iter().sum()
    }
}

/// The per-arm figures of a fusion retriever, shared with whoever holds a handle
/// ([`FusionRetriever::stats`]): the exam takes the retriever, the caller keeps the handle
/// and reads it after the exam.
#[derive(Debug, Clone, Default)]
pub struct FusionStats {
    arms: Arc<Mutex<Vec<ArmStats>>>,
}

impl FusionStats {
    /// Each arm's figures, in arm order.
    pub fn arms(&self) -> Vec<ArmStats> {
        self.arms.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The cases (ID order) whose expected chunks at rank ≤ `k` only the arm `only`
    /// (0-based) finds: some found by it, none by any other arm.
    pub fn found_only_by(&self, only: usize, k: usize) -> Vec<String> {
        let arms = self.arms();
        let found = |a: &ArmStats, case: &str| {
            a.expected_ranks
                .get(case)
                .is_some_and(|r| r.iter().any(|x| x.is_some_and(|x| x <= k)))
        };
        let Some(me) = arms.get(only) else {
            return Vec::new();
        };
        me.expected_ranks
            .keys()
            .filter(|case| found(me, case))
            .filter(|case| {
                arms.iter()
                    .enumerate()
                    .all(|(i, a)| i == only || !found(a, case))
            })
            .cloned()
            .collect()
    }

    fn record(&self, arm: usize, seconds: f64, requests: &[Request<'_>], rankings: &[Ranking]) {
        let mut arms = self.arms.lock().unwrap_or_else(|e| e.into_inner());
        let a = &mut arms[arm];
        a.seconds.push(seconds);
        a.cases += rankings.len();
        for (r, ranking) in requests.iter().zip(rankings) {
            let ranks = r
                .expected
                .iter()
                .map(|id| {
                    ranking
                        .hits
                        .iter()
                        .position(|h| &h.id == id)
                        .map(|i| i + 1)
                        .or_else(|| ranking.known.get(id).map(|(rank, _)| *rank))
                })
                .collect();
            a.expected_ranks.insert(r.case_id.to_owned(), ranks);
        }
    }
}

/// A `fusion:` retriever: its arms and how their rankings combine.
pub struct FusionRetriever {
    fusion: Fusion,
    arms: Vec<Box<dyn Retriever>>,
    uri: String,
    stats: FusionStats,
}

impl FusionRetriever {
    /// Opens `fusion:METHOD?PARAMS` over the arms given as retriever URIs (`run:FILE` for a
    /// run file), each opened as [`crate::open`] opens it. Two arms at least; a weighted sum
    /// has one weight per arm, in this order.
    pub fn open<S: AsRef<str>>(
        uri: &str,
        arms: &[S],
        options: &Options,
    ) -> Result<FusionRetriever, RetrieveError> {
        let bad = |reason: String| RetrieveError::Uri {
            uri: veredicto_core::redact::url(uri),
            reason,
        };
        let spec = uri
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("expected `fusion:METHOD?PARAMS`".into()))?;
        let fusion: Fusion = spec.parse().map_err(|e: FusionError| bad(e.to_string()))?;
        fusion
            .check_arms(arms.len())
            .map_err(|e| bad(format!("{e} (each arm is given on its own: --arm URI)")))?;
        let arms = arms
            .iter()
            .map(|a| crate::open(a.as_ref(), options))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FusionRetriever::new(fusion, arms))
    }

    /// A fusion of arms already opened.
    pub fn new(fusion: Fusion, arms: Vec<Box<dyn Retriever>>) -> FusionRetriever {
        let uri = format!(
            "{SCHEME}{fusion} arms: {}",
            arms.iter()
                .map(|a| a.describe())
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let stats = FusionStats::default();
        *stats.arms.lock().unwrap_or_else(|e| e.into_inner()) = arms
            .iter()
            .map(|a| ArmStats {
                uri: a.describe(),
                kind: a.kind().to_owned(),
                ..ArmStats::default()
            })
            .collect();
        FusionRetriever {
            fusion,
            arms,
            uri,
            stats,
        }
    }

    /// The fusion.
    pub fn fusion(&self) -> &Fusion {
        &self.fusion
    }

    /// A handle on the per-arm figures, to read after the exam.
    pub fn stats(&self) -> FusionStats {
        self.stats.clone()
    }

    /// One arm's rankings of `requests`: its batch when it batches, else case by case.
    fn arm_rankings(
        &self,
        arm: usize,
        requests: &[Request<'_>],
    ) -> Result<Vec<Ranking>, RetrieveError> {
        let a = &self.arms[arm];
        let start = Instant::now();
        let rankings = if a.batched() {
            a.search_batch(requests)?
        } else {
            requests
                .iter()
                .map(|r| a.search(r))
                .collect::<Result<Vec<_>, _>>()?
        };
        self.stats
            .record(arm, start.elapsed().as_secs_f64(), requests, &rankings);
        Ok(rankings)
    }
}

impl Retriever for FusionRetriever {
    fn describe(&self) -> String {
        self.uri.clone()
    }

    fn kind(&self) -> &'static str {
        "fusion"
    }

    /// Vectors when one arm needs them (every arm that reads vectors gets the same one).
    fn vectors(&self) -> Vectors {
        let v: Vec<Vectors> = self.arms.iter().map(|a| a.vectors()).collect();
        if v.contains(&Vectors::Required) {
            Vectors::Required
        } else if v.contains(&Vectors::Optional) {
            Vectors::Optional
        } else {
            Vectors::Never
        }
    }

    fn embedding_based(&self) -> bool {
        self.arms.iter().all(|a| a.embedding_based())
    }

    fn prepare(&self, dimension: Option<usize>) -> Result<(), RetrieveError> {
        self.arms.iter().try_for_each(|a| a.prepare(dimension))
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        Ok(self
            .search_batch(std::slice::from_ref(request))?
            .pop()
            .unwrap_or_default())
    }

    fn batched(&self) -> bool {
        self.arms.iter().all(|a| a.batched())
    }

    fn search_batch(&self, requests: &[Request<'_>]) -> Result<Vec<Ranking>, RetrieveError> {
        let per_arm = (0..self.arms.len())
            .map(|a| self.arm_rankings(a, requests))
            .collect::<Result<Vec<_>, _>>()?;
        requests
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let arms: Vec<Ranking> = per_arm.iter().map(|rs| rs[i].clone()).collect();
                fuse_rankings(&self.fusion, &arms, r.depth).map_err(|e| RetrieveError::Setup {
                    uri: self.uri.clone(),
                    reason: format!("case `{}`: {e}", veredicto_core::redact::short(r.case_id)),
                })
            })
            .collect()
    }

    fn preloaded(&self) -> Option<&Run> {
        None
    }

    fn corpus(&self) -> Result<Option<Corpus>, RetrieveError> {
        for a in &self.arms {
            if let Some(c) = a.corpus()? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    fn corpus_for(&self, ids: &BTreeSet<&str>) -> Result<Option<Corpus>, RetrieveError> {
        for a in &self.arms {
            if let Some(c) = a.corpus_for(ids)? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    /// The collection's identity when every arm that knows one names the same.
    fn fingerprint(&self) -> Option<String> {
        let known: BTreeSet<String> = self.arms.iter().filter_map(|a| a.fingerprint()).collect();
        (known.len() == 1).then(|| known.into_iter().next().unwrap_or_default())
    }

    fn model(&self) -> (Option<String>, Option<String>) {
        self.arms
            .iter()
            .map(|a| a.model())
            .find(|m| m.1.is_some())
            .unwrap_or((None, None))
    }

    fn check_model(&self, model_hash: &str) -> Result<(), RetrieveError> {
        self.arms.iter().try_for_each(|a| a.check_model(model_hash))
    }

    fn holds(&self, ids: &[&str]) -> Result<Option<Holding>, RetrieveError> {
        for a in &self.arms {
            if let Some(h) = a.holds(ids)? {
                return Ok(Some(h));
            }
        }
        Ok(None)
    }
}
