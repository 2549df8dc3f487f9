//! What the run history keeps about one exam besides its report (SPEC §5): identity,
//! provenance and the configuration that produced it. The store (`crates/store`) persists
//! [`RecordedRun`]s; comparisons and trends are computed from them here, purely.

use crate::exam::{ExamReport, StopReason, Verdict};
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

/// One line of `veredicto runs list`: a run's identity, provenance and headline numbers,
/// read without its report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run ID.
    pub id: String,
    /// When the run was made (RFC 3339, as recorded).
    pub created_at: String,
    /// Version label of the corpus or index.
    pub label: Option<String>,
    /// The exam's verdict.
    pub verdict: Verdict,
    /// Why it stopped (empty when accepted).
    pub reasons: Vec<StopReason>,
    /// Cases in the golden set.
    pub cases: usize,
    /// Gold cases among them.
    pub gold_cases: usize,
    /// Failing cases.
    pub failing: usize,
    /// Failing gold cases.
    pub failing_gold: usize,
    /// Mean Quality Score, 0..100.
    pub mean_quality: f64,
    /// Mean recall at K.
    pub mean_recall: f64,
    /// Mean reciprocal rank at K.
    pub mrr: f64,
    /// Mean nDCG at K.
    pub mean_ndcg: f64,
    /// Golden-set fingerprint (`sha256:…`; [`short_fingerprint`] for display).
    pub golden_fingerprint: String,
    /// Policy fingerprint.
    pub policy_fingerprint: String,
    /// Corpus or index fingerprint, when known.
    pub corpus_fingerprint: Option<String>,
    /// The policy's default K.
    pub top_k: u32,
    /// veredicto version that made the run.
    pub tool_version: String,
    /// Git revision of the project, when there was one.
    pub git_revision: Option<String>,
}

/// A fingerprint for display: the first 12 hex digits, without the `sha256:` scheme.
pub fn short_fingerprint(fingerprint: &str) -> &str {
    let hex = fingerprint
        .split_once(':')
        .map_or(fingerprint, |(_, hex)| hex);
    hex.get(..12).unwrap_or(hex)
}

// What the grounding audit records in the history (its reviews and suggestions are JSON
// records the history keeps without parsing them).

/// What a recorded case file holds (for listings; the bytes are the truth).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditCounts {
    pub cases: usize,
    pub answers: usize,
    pub claims: usize,
    /// Answers with no material claim.
    pub abstentions: usize,
    /// Collection snapshot IDs of the cases, sorted, without repeats.
    pub snapshots: Vec<String>,
}

/// An audit run's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRunMeta {
    /// Assigned by the history; must be empty when recording.
    pub id: String,
    /// RFC 3339.
    pub created_at: String,
    pub label: Option<String>,
    /// The run this one replays (same frozen cases, new answers).
    pub replay_of: Option<String>,
    /// File name of the case file as given (`q017.yaml`); decides YAML or JSON.
    pub cases_name: String,
    /// `sha256:<hex>` of the case file's bytes (computed by the history).
    pub cases_sha256: String,
    pub counts: AuditCounts,
    pub tool_version: String,
    pub git_revision: Option<String>,
}

/// A listing line: the metadata plus how many records were appended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRunSummary {
    #[serde(flatten)]
    pub meta: AuditRunMeta,
    pub reviews: usize,
    pub suggestions: usize,
}

/// A whole audit run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRun {
    pub meta: AuditRunMeta,
    /// The case file, byte for byte.
    pub cases: Vec<u8>,
    /// Notes recorded with the run.
    pub notes: Option<Vec<u8>>,
}

/// The kinds of record appended to an audit run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditRecordKind {
    /// A reviewer's verdict (the first for a claim, or an annex).
    Review,
    /// A model's suggested verdict.
    Suggestion,
}

impl AuditRecordKind {
    /// The kind as stored (`review`, `suggestion`).
    pub fn as_str(self) -> &'static str {
        match self {
            AuditRecordKind::Review => "review",
            AuditRecordKind::Suggestion => "suggestion",
        }
    }
}

// Written acceptances of an ingestion batch's rejected corpus lines (`veredicto gate accept`).

/// One written acceptance of a batch's rejections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateAcceptance {
    /// Assigned by the history when recording (leave it empty); kept when migrated.
    pub id: String,
    /// When it was given (RFC 3339; the caller reads the clock).
    pub created_at: String,
    /// The index, as a path relative to the project (or as given when outside it).
    pub index: String,
    /// The batch's label.
    pub batch: String,
    /// `sha256:<hex>` of the batch's identity (label, time and rejections): what the gate
    /// looks the acceptance up by, wherever the index has moved.
    pub batch_fingerprint: String,
    /// The written reason.
    pub reason: String,
    /// How many rejected lines were accepted.
    pub rejected: usize,
    /// The rejected lines accepted: file, line, chunk ID, reason, field, message.
    pub rejections: Vec<crate::gate::Rejection>,
    /// Who accepted (the git user name, else `$USER`); never a credential.
    pub who: Option<String>,
    pub tool_version: String,
}
