//! Noise calibration (seed 000, "la regla del 30%"): "en la primera suite completa, mirar la
//! distribución de ruido de las queries sanas (las que pasan recall con claridad) y fijar el
//! techo en un margen razonable por encima de esa base".
//!
//! Rule (documented in `docs/compare.md`):
//! - **healthy** cases are those with recall exactly 1 (every expected chunk in the top-K:
//!   "pass recall clearly") and a defined noise;
//! - the distribution is reported as counts per noise value, the nearest-rank p50 / p90 and
//!   the maximum, and the nearest-rank p90 of `noise / K`;
//! - the **suggested ceiling** is `p90(noise / K) + 1 / K_ref`, rounded **up** to the next
//!   0.05 and capped at 1, where `K_ref` is the most common K among the healthy cases (the
//!   smaller on a tie). With one K this is "the 90th percentile plus one result, over K",
//!   so `⌊ceiling × K⌋ ≥ p90 + 1`: nine healthy cases in ten keep a margin of at least one
//!   result under the suggested ceiling;
//! - a distribution from fewer than [`MIN_RELIABLE`] healthy cases is flagged unreliable
//!   (its p90 is then close to its maximum).
//!
//! The same is computed per domain, because "un dominio muy cruzado … su techo puede ser
//! algo más generoso".

use crate::exam::noise::max_noise;
use crate::exam::{CaseResult, ExamReport};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Fewer healthy cases than this make a suggestion unreliable.
pub const MIN_RELIABLE: usize = 20;

/// The noise of a set of healthy cases and the ceiling it suggests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseDistribution {
    /// Cases with recall 1 and a defined noise.
    pub healthy_cases: usize,
    /// Cases with recall 1 whose noise is undefined (no scores); not counted.
    pub undefined: usize,
    /// The most common K among the healthy cases.
    pub k: Option<u32>,
    /// Healthy cases per noise value.
    pub distribution: BTreeMap<u32, usize>,
    pub p50: Option<u32>,
    pub p90: Option<u32>,
    pub max: Option<u32>,
    /// Nearest-rank 90th percentile of `noise / K`.
    pub p90_fraction: Option<f64>,
    /// `ceil_0.05(p90_fraction + 1 / k)`, at most 1.
    pub suggested_ceiling: Option<f64>,
    /// `⌊suggested_ceiling × k⌋`: the most noise a case at K = `k` may then have.
    pub suggested_max_noise: Option<u32>,
    /// Healthy cases over their current ceiling (the policy in force for the run).
    pub over_current: usize,
    /// Healthy cases that would be over the suggested ceiling.
    pub over_suggested: usize,
    /// At least [`MIN_RELIABLE`] healthy cases.
    pub reliable: bool,
}

/// The calibration of one run: overall and per domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseCalibration {
    /// The policy's global ceiling, for comparison.
    pub current_ceiling: f64,
    pub overall: NoiseDistribution,
    /// Per case domain (cases without a domain only count overall).
    pub domains: BTreeMap<String, NoiseDistribution>,
}

/// Rounds up to the next multiple of 0.05 (with a 1e-9 tolerance so 0.4 stays 0.4).
fn ceil_twentieth(x: f64) -> f64 {
    ((x * 20.0 - 1e-9).ceil() / 20.0).clamp(0.0, 1.0)
}

fn nearest_rank_f64(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (q * v.len() as f64 - 1e-9).ceil().max(1.0) as usize;
    Some(v[rank.min(v.len()) - 1])
}

fn distribution(cases: &[&CaseResult]) -> NoiseDistribution {
    let healthy: Vec<(&CaseResult, u32)> = cases
        .iter()
        .filter(|c| c.recall >= 1.0)
        .filter_map(|c| c.noise.map(|n| (*c, n)))
        .collect();
    let undefined = cases
        .iter()
        .filter(|c| c.recall >= 1.0 && c.noise.is_none())
        .count();
    let counts: Vec<u32> = healthy.iter().map(|(_, n)| *n).collect();
    let mut distribution = BTreeMap::new();
    for &n in &counts {
        *distribution.entry(n).or_insert(0) += 1;
    }
    let mut k_freq: BTreeMap<u32, usize> = BTreeMap::new();
    for (c, _) in &healthy {
        *k_freq.entry(c.top_k).or_insert(0) += 1;
    }
    // Most common K; BTreeMap order makes the smaller K win a tie.
    let k = k_freq
        .iter()
        .fold(None::<(u32, usize)>, |best, (&k, &f)| match best {
            Some((_, bf)) if bf >= f => best,
            _ => Some((k, f)),
        })
        .map(|(k, _)| k)
        .filter(|&k| k > 0);
    let fractions: Vec<f64> = healthy
        .iter()
        .filter(|(c, _)| c.top_k > 0)
        .map(|(c, n)| f64::from(*n) / f64::from(c.top_k))
        .collect();
    let p90_fraction = nearest_rank_f64(&fractions, 0.9);
    let suggested_ceiling = p90_fraction
        .zip(k)
        .map(|(p, k)| ceil_twentieth(p + 1.0 / f64::from(k)));
    NoiseDistribution {
        healthy_cases: healthy.len(),
        undefined,
        k,
        p50: super::stats::nearest_rank(&counts, 0.5),
        p90: super::stats::nearest_rank(&counts, 0.9),
        max: counts.iter().copied().max(),
        distribution,
        p90_fraction,
        suggested_max_noise: suggested_ceiling.zip(k).map(|(c, k)| max_noise(c, k)),
        suggested_ceiling,
        over_current: healthy.iter().filter(|(c, n)| *n > c.max_noise).count(),
        over_suggested: suggested_ceiling.map_or(0, |s| {
            healthy
                .iter()
                .filter(|(c, n)| *n > max_noise(s, c.top_k))
                .count()
        }),
        reliable: healthy.len() >= MIN_RELIABLE,
    }
}

/// The noise calibration of a run's report (see the module documentation for the rule).
pub fn calibrate_noise(report: &ExamReport) -> NoiseCalibration {
    let all: Vec<&CaseResult> = report.cases.iter().collect();
    let mut by_domain: BTreeMap<String, Vec<&CaseResult>> = BTreeMap::new();
    for c in &report.cases {
        if let Some(d) = &c.domain {
            by_domain.entry(d.clone()).or_default().push(c);
        }
    }
    NoiseCalibration {
        current_ceiling: report.policy.noise_ceiling,
        overall: distribution(&all),
        domains: by_domain
            .into_iter()
            .map(|(d, cases)| (d, distribution(&cases)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::ceil_twentieth;

    #[test]
    fn rounds_up_to_five_hundredths() {
        assert_eq!(ceil_twentieth(0.4), 0.4);
        assert_eq!(ceil_twentieth(0.41), 0.45);
        assert_eq!(ceil_twentieth(0.3 + 0.1), 0.4);
        assert_eq!(ceil_twentieth(1.3), 1.0);
        assert_eq!(ceil_twentieth(0.0), 0.0);
    }
}
