//! Comparing runs and reading the history (SPEC §4, §5; seed 000): pure functions over
//! [`RecordedRun`]s.
//!
//! - [`compare`]: one run against a baseline — what differed in the settings
//!   ([`Compatibility`]), newly failing / passing cases, per-case deltas and rank movement,
//!   displaced expected chunks and what displaced them, and whether the change in each mean
//!   metric is more than chance (paired sign-flip randomisation test, paired bootstrap CI,
//!   Holm correction), ending in a [`Comparison::regression`] flag.
//! - [`diagnose_runs`]: the cross-run failure patterns of seed 000 ("el diagnóstico
//!   epidemiológico") over a history ordered oldest → newest.
//! - [`calibrate_noise`]: the noise distribution of a run's healthy cases and a suggested
//!   ceiling for the policy.
//!
//! Everything here is deterministic: randomised statistics draw from [`rng::Rng`] streams
//! seeded from the caller's seed and the statistic's name. The statistics, conventions and
//! thresholds are documented in `docs/compare.md`.

pub mod calibration;
pub mod cases;
pub mod compat;
pub mod patterns;
pub mod rng;
pub mod stats;

pub use calibration::{calibrate_noise, NoiseCalibration, NoiseDistribution};
pub use cases::{
    CaseDelta, CaseMetrics, CaseStatus, Displacement, Displacer, NoiseDelta, RankChange, RankDelta,
    ValueDelta,
};
pub use compat::{
    CaseChange, CaseK, Compatibility, GoldenDiff, KChange, PolicyDiff, SettingChange,
};
pub use patterns::{
    diagnose_runs, diagnose_runs_with_chunks, regression_baseline, short_time, CaseGroup, Decline,
    DiagnoseOptions, EnteredChunk, NoisyCase, Pattern, PatternFinding, PatternSeen, RunsDiagnosis,
    RunsNote, Sighting, Trend,
};
pub use stats::{Direction, Method, PermutationTest};

use crate::case::Corpus;
use crate::exam::Verdict;
use crate::history::RecordedRun;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The seed used when the caller gives none (below 2^53, so it survives JavaScript).
pub const DEFAULT_SEED: u64 = 0x7665_7265;

/// A suite-level mean metric that a comparison tests. Each is the mean over cases of a
/// per-case value ([`CaseMetrics::get`]); higher is better for all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Mean recall@K.
    MeanRecall,
    /// Mean Quality Score (0..100).
    MeanQuality,
    /// Mean reciprocal rank@K.
    Mrr,
    /// Mean nDCG@K.
    MeanNdcg,
    /// Mean precision@K.
    MeanPrecision,
    /// Mean AP@K.
    MeanAveragePrecision,
}

impl Metric {
    /// Every metric, in display order.
    pub const ALL: [Metric; 6] = [
        Metric::MeanRecall,
        Metric::MeanQuality,
        Metric::Mrr,
        Metric::MeanNdcg,
        Metric::MeanPrecision,
        Metric::MeanAveragePrecision,
    ];
    /// The metrics SPEC §5 / issue 4 ask a comparison to test.
    pub const DEFAULT: [Metric; 4] = [
        Metric::MeanRecall,
        Metric::MeanQuality,
        Metric::Mrr,
        Metric::MeanNdcg,
    ];

    /// The canonical name, as in the exam summary (`mean_recall`, `mrr`, …). Seeds are
    /// derived from it.
    pub fn name(self) -> &'static str {
        match self {
            Metric::MeanRecall => "mean_recall",
            Metric::MeanQuality => "mean_quality",
            Metric::Mrr => "mrr",
            Metric::MeanNdcg => "mean_ndcg",
            Metric::MeanPrecision => "mean_precision",
            Metric::MeanAveragePrecision => "mean_average_precision",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A metric name that is not one of [`Metric::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown comparison metric `{0}` (expected one of mean_recall, mean_quality, mrr, mean_ndcg, mean_precision, mean_average_precision)")]
pub struct UnknownMetric(pub String);

impl std::str::FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMetric(s.to_owned()))
    }
}

/// How [`compare`] tests and what it may look up.
#[derive(Debug, Clone)]
pub struct CompareOptions<'a> {
    /// Family-wise significance level after Holm correction (default 0.05).
    pub alpha: f64,
    /// Monte-Carlo sign patterns when there are more than `exact_max` non-zero differences
    /// (default 10,000).
    pub permutations: usize,
    /// Bootstrap resamples (default 10,000).
    pub bootstrap: usize,
    /// Confidence level of the bootstrap interval (default 0.95).
    pub confidence: f64,
    /// Seed of every randomised statistic (default [`DEFAULT_SEED`]).
    pub seed: u64,
    /// Enumerate all sign patterns when the non-zero differences are at most this many
    /// (default 20; capped at [`stats::MAX_EXACT`]).
    pub exact_max: usize,
    /// Metrics to test, Holm-corrected together (default [`Metric::DEFAULT`]). Duplicates
    /// are ignored.
    pub metrics: Vec<Metric>,
    /// The current corpus, to name the `ingest_batch` of displacing chunks the reports do
    /// not.
    pub corpus: Option<&'a Corpus>,
}

impl Default for CompareOptions<'_> {
    fn default() -> Self {
        CompareOptions {
            alpha: 0.05,
            permutations: 10_000,
            bootstrap: 10_000,
            confidence: 0.95,
            seed: DEFAULT_SEED,
            exact_max: 20,
            metrics: Metric::DEFAULT.to_vec(),
            corpus: None,
        }
    }
}

/// Identity of a compared run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRef {
    pub id: String,
    pub created_at: String,
    pub label: Option<String>,
    pub verdict: Verdict,
}

impl RunRef {
    /// The identity of `run`.
    pub fn of(run: &RecordedRun) -> Self {
        RunRef {
            id: run.meta.id.clone(),
            created_at: run.meta.created_at.clone(),
            label: run.meta.label.clone(),
            verdict: run.report.verdict,
        }
    }
}

/// The statistical settings a comparison used (kept with it so it can be reproduced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsSettings {
    pub alpha: f64,
    pub permutations: usize,
    pub bootstrap: usize,
    pub confidence: f64,
    pub seed: u64,
    pub exact_max: usize,
}

/// Which way a mean moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Increased,
    Decreased,
    Unchanged,
}

/// The test of one mean metric over the shared cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricTest {
    pub metric: Metric,
    /// Paired cases.
    pub cases: usize,
    pub base_mean: f64,
    pub new_mean: f64,
    /// Mean of the per-case differences `new − base`.
    pub mean_difference: f64,
    pub change: Change,
    /// Cases whose value went up / down / stayed.
    pub improved: usize,
    pub worsened: usize,
    pub unchanged: usize,
    /// Two-sided sign-flip randomisation p-value.
    pub p_value: f64,
    pub method: Method,
    /// Sign patterns enumerated or drawn.
    pub rearrangements: u64,
    /// Holm-adjusted p-value across the metrics of this comparison.
    pub p_adjusted: f64,
    /// `p_adjusted < alpha`.
    pub significant: bool,
    /// Paired percentile-bootstrap interval of the mean difference; `None` without cases.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// Why a comparison is a regression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RegressionReason {
    /// A metric dropped significantly (Holm-adjusted p below alpha, mean decreased).
    SignificantDrop {
        metric: Metric,
        mean_difference: f64,
        p_adjusted: f64,
    },
    /// A gold case passed in the base run and fails in the new one.
    NewlyFailingGold { case: String },
}

/// The comparison of a run with its baseline: computed once, rendered by the CLI and the
/// reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub base: RunRef,
    pub new: RunRef,
    pub compatibility: Compatibility,
    /// Shared cases (same ID, query and expected set) that were compared.
    pub shared_cases: usize,
    /// Shared cases that passed in the base run and fail now, in the new run's order.
    pub newly_failing: Vec<String>,
    /// Shared cases that failed in the base run and pass now.
    pub newly_passing: Vec<String>,
    /// Shared cases with an expected chunk pushed out of the top-K.
    pub displaced: Vec<String>,
    /// Every shared case, in the new run's order.
    pub cases: Vec<CaseDelta>,
    pub settings: StatsSettings,
    /// One test per requested metric, in the requested order.
    pub tests: Vec<MetricTest>,
    /// Any significant drop or any newly failing gold case (`--fail-on-regression`).
    pub regression: bool,
    pub regression_reasons: Vec<RegressionReason>,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Compares `new` with the baseline `base` on the cases and settings they share.
///
/// Never fails: incompatible runs are compared on what they share (possibly nothing) and
/// [`Comparison::compatibility`] says what differed. The same inputs and options give the
/// same value, bit for bit.
pub fn compare(base: &RecordedRun, new: &RecordedRun, opts: &CompareOptions<'_>) -> Comparison {
    let (compatibility, shared) = compat::compatibility(base, new);
    let pairs: Vec<(CaseMetrics, CaseMetrics)> = shared
        .iter()
        .map(|(b, n)| cases::paired_metrics(b, n))
        .collect();
    let deltas: Vec<CaseDelta> = shared
        .iter()
        .map(|(b, n)| cases::case_delta(b, n, opts.corpus, &base.report.batches))
        .collect();
    let ids = |pred: &dyn Fn(&CaseDelta) -> bool| -> Vec<String> {
        deltas
            .iter()
            .filter(|d| pred(d))
            .map(|d| d.id.clone())
            .collect()
    };
    let newly_failing = ids(&|d| d.status == CaseStatus::NewlyFailing);
    let newly_passing = ids(&|d| d.status == CaseStatus::NewlyPassing);
    let displaced = ids(&|d| !d.displaced.is_empty());

    let mut metrics: Vec<Metric> = Vec::new();
    for m in &opts.metrics {
        if !metrics.contains(m) {
            metrics.push(*m);
        }
    }
    let mut tests: Vec<MetricTest> = metrics
        .iter()
        .map(|&m| {
            let b: Vec<f64> = pairs.iter().map(|(b, _)| b.get(m)).collect();
            let n: Vec<f64> = pairs.iter().map(|(_, n)| n.get(m)).collect();
            let d: Vec<f64> = b.iter().zip(&n).map(|(b, n)| n - b).collect();
            let perm = stats::sign_flip_test(
                &d,
                opts.exact_max,
                opts.permutations,
                rng::derive_seed(opts.seed, &format!("permutation/{}", m.name())),
            );
            let ci = stats::bootstrap_ci(
                &d,
                opts.bootstrap,
                opts.confidence,
                rng::derive_seed(opts.seed, &format!("bootstrap/{}", m.name())),
            );
            let md = mean(&d);
            MetricTest {
                metric: m,
                cases: d.len(),
                base_mean: mean(&b),
                new_mean: mean(&n),
                mean_difference: md,
                change: if md > 0.0 {
                    Change::Increased
                } else if md < 0.0 {
                    Change::Decreased
                } else {
                    Change::Unchanged
                },
                improved: d.iter().filter(|x| **x > 0.0).count(),
                worsened: d.iter().filter(|x| **x < 0.0).count(),
                unchanged: d.iter().filter(|x| **x == 0.0).count(),
                p_value: perm.p_value,
                method: perm.method,
                rearrangements: perm.rearrangements,
                p_adjusted: perm.p_value,
                significant: false,
                ci_low: ci.map(|c| c.0),
                ci_high: ci.map(|c| c.1),
            }
        })
        .collect();
    let raw: Vec<f64> = tests.iter().map(|t| t.p_value).collect();
    for (t, adj) in tests.iter_mut().zip(stats::holm(&raw)) {
        t.p_adjusted = adj;
        t.significant = adj < opts.alpha;
    }

    let mut regression_reasons: Vec<RegressionReason> = tests
        .iter()
        .filter(|t| t.significant && t.mean_difference < 0.0)
        .map(|t| RegressionReason::SignificantDrop {
            metric: t.metric,
            mean_difference: t.mean_difference,
            p_adjusted: t.p_adjusted,
        })
        .collect();
    regression_reasons.extend(
        deltas
            .iter()
            .filter(|d| d.status == CaseStatus::NewlyFailing && d.gold)
            .map(|d| RegressionReason::NewlyFailingGold { case: d.id.clone() }),
    );

    Comparison {
        base: RunRef::of(base),
        new: RunRef::of(new),
        shared_cases: shared.len(),
        compatibility,
        newly_failing,
        newly_passing,
        displaced,
        cases: deltas,
        settings: StatsSettings {
            alpha: opts.alpha,
            permutations: opts.permutations,
            bootstrap: opts.bootstrap,
            confidence: opts.confidence,
            seed: opts.seed,
            exact_max: opts.exact_max.min(stats::MAX_EXACT),
        },
        tests,
        regression: !regression_reasons.is_empty(),
        regression_reasons,
    }
}
