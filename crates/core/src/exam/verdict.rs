//! The suite's verdict (SPEC §2.5): accept, or stop with every reason that applies.

use serde::{Deserialize, Serialize};

/// The gate's answer. The process exit code follows it: 0 accept, 1 stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Accept,
    Stop,
}

/// Why the suite stopped. Listed in this order when several apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Mean Quality Score below the policy's threshold.
    MeanQuality,
    /// A gold case failed; notes never excuse it.
    GoldCaseFailed,
    /// A failing non-gold case has no note while the policy requires one.
    UndocumentedFailures,
    /// Failing non-gold cases exceed the tolerated fraction of all cases.
    TooManyFailures,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::MeanQuality => "mean_quality",
            StopReason::GoldCaseFailed => "gold_case_failed",
            StopReason::UndocumentedFailures => "undocumented_failures",
            StopReason::TooManyFailures => "too_many_failures",
        }
    }
}

/// Why one case failed. Listed in this order when several apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseReason {
    /// The run has no results for the case.
    NoResults,
    /// Recall at K is below the floor.
    Recall,
    /// More top-K results than the ceiling score below the worst expected chunk.
    Noise,
}

impl CaseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CaseReason::NoResults => "no_results",
            CaseReason::Recall => "recall",
            CaseReason::Noise => "noise",
        }
    }
}

/// The most non-gold failing cases tolerated: `⌊fraction × cases⌋` (1e-9 tolerance, so
/// 5% of 20 cases is 1 and 5% of 12 is 0).
pub fn max_failing(fraction: f64, cases: usize) -> usize {
    (fraction * cases as f64 + 1e-9).floor().max(0.0) as usize
}
