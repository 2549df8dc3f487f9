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
    /// Cases that fail on structural noise alone (noise that a perfect ranking of the case
    /// would also have: its K exceeds what its expected list can fill under the ceiling)
    /// stop the suite: a gold one, an undocumented one, or more than the tolerance allows.
    /// The other reasons count only the cases that fail for something else, so when this is
    /// the only reason, it is what decides the verdict.
    StructuralNoise,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::MeanQuality => "mean_quality",
            StopReason::GoldCaseFailed => "gold_case_failed",
            StopReason::UndocumentedFailures => "undocumented_failures",
            StopReason::TooManyFailures => "too_many_failures",
            StopReason::StructuralNoise => "structural_noise",
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
    /// More top-K results than the ceiling score below the worst expected chunk, and a
    /// perfect ranking of the case would be within the ceiling.
    Noise,
    /// Over the noise ceiling, and a perfect ranking of the case (every expected chunk
    /// first) would be over it too: the case's K exceeds what its expected list can fill
    /// ([`crate::diagnosis::NoiseFinding::Structural`]). Records written before this reason
    /// existed say `noise`.
    StructuralNoise,
}

impl CaseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CaseReason::NoResults => "no_results",
            CaseReason::Recall => "recall",
            CaseReason::Noise => "noise",
            CaseReason::StructuralNoise => "structural_noise",
        }
    }
}

/// The method's rule, over every failing case: stop when the mean Quality Score is below
/// the threshold, a gold case fails, a failing non-gold case has no note while notes are
/// required, or failing non-gold cases exceed the tolerance. Which cases stop the suite is
/// said by the report's [`StopReason`]s; this is what decides it.
pub fn decide(s: &super::Summary, policy: &crate::policy::Policy) -> Verdict {
    let failing_non_gold = s.failing - s.failing_gold;
    let stop = s.mean_quality < policy.min_mean_quality
        || s.failing_gold > 0
        || (policy.require_notes && s.failing_documented < failing_non_gold)
        || failing_non_gold > s.max_failing;
    if stop {
        Verdict::Stop
    } else {
        Verdict::Accept
    }
}

/// The most non-gold failing cases tolerated: `⌊fraction × cases⌋` (1e-9 tolerance, so
/// 5% of 20 cases is 1 and 5% of 12 is 0).
pub fn max_failing(fraction: f64, cases: usize) -> usize {
    (fraction * cases as f64 + 1e-9).floor().max(0.0) as usize
}
