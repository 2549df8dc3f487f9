//! What the run history keeps about one exam besides its report (SPEC §5): identity,
//! provenance and the configuration that produced it. The store (`crates/store`) persists
//! [`RecordedRun`]s; comparisons and trends are computed from them here, purely.

use crate::exam::ExamReport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The retrieval configuration that produced a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The backend: `run-file` (a precomputed run), `index` (veredicto's embedded index), or a
    /// live retriever (`http`, `cmd`, `pgvector`, `opensearch`, `elasticsearch`, `qdrant`).
    pub retriever: String,
    /// Path of the run file / index, or the retriever's URI without credentials.
    pub source: Option<String>,
    pub embedding_model: Option<String>,
    /// Model fingerprint hash (`sha256:…`).
    pub model_hash: Option<String>,
    pub field: Option<String>,
    /// Default K of the policy (cases may override).
    pub top_k: u32,
    pub rerank: Option<String>,
    pub chunk_size: Option<u32>,
    pub chunk_overlap: Option<u32>,
}

/// Latency of one retrieval stage over the run's queries, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StageLatency {
    /// Queries measured (for a `single_query_sample`, the sample's size).
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// How the figures were measured, when not one timing per case as the cases ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<LatencySource>,
    /// Queries the stage served (the sample is drawn from them), with a `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries: Option<usize>,
    /// Wall time of the one batched pass that answered all `queries`, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_ms: Option<f64>,
}

/// How a stage's latency percentiles were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencySource {
    /// The stage answered every query in one batched pass (whose total is `batch_ms`); the
    /// percentiles come from single-query searches, timed one at a time after it, over a
    /// sample of `count` of the `queries` (all of them when the sample is as large).
    SingleQuerySample,
}

impl StageLatency {
    /// Nearest-rank percentiles of latency samples in milliseconds (all zero when empty).
    pub fn from_samples(samples: &[f64]) -> StageLatency {
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let pick = |q: f64| -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            let rank = (q * v.len() as f64).ceil().max(1.0) as usize;
            v[rank.min(v.len()) - 1]
        };
        StageLatency {
            count: v.len(),
            p50_ms: pick(0.50),
            p95_ms: pick(0.95),
            p99_ms: pick(0.99),
            max_ms: v.last().copied().unwrap_or(0.0),
            source: None,
            queries: None,
            batch_ms: None,
        }
    }
}

/// Provenance of a run. Times are RFC 3339 strings supplied by the caller (core has no clock).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Sortable, unique run ID (time-ordered).
    pub id: String,
    pub created_at: String,
    /// Free version label of the corpus/index (`--label`).
    pub label: Option<String>,
    pub golden_fingerprint: String,
    pub policy_fingerprint: String,
    /// Corpus or index fingerprint, when known.
    pub corpus_fingerprint: Option<String>,
    pub config: RunConfig,
    pub tool_version: String,
    pub git_revision: Option<String>,
    /// Per-stage latency (`query_embedding`, `search`, `rerank`...), when measured.
    pub latency: BTreeMap<String, StageLatency>,
}

/// One run as the history keeps it: provenance plus the full exam report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedRun {
    pub meta: RunMeta,
    pub report: ExamReport,
}

#[cfg(test)]
mod latency_tests {
    use super::StageLatency;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let s = StageLatency::from_samples(&samples);
        assert_eq!(
            (s.count, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms),
            (100, 50.0, 95.0, 99.0, 100.0)
        );
        let one = StageLatency::from_samples(&[3.0]);
        assert_eq!((one.p50_ms, one.p99_ms), (3.0, 3.0));
        assert_eq!(StageLatency::from_samples(&[]).count, 0);
    }
}
