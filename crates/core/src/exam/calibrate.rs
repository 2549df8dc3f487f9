//! Calibrating the noise ceiling on a complete suite (`veredicto calibrate`).
//!
//! The noise rule stays as it is (noise = top-K results scoring below the worst expected
//! chunk; a case fails when noise > ⌊ceiling × K⌋); what calibration chooses is the ceiling,
//! from the noise that the suite's **healthy** cases show, plus a margin:
//!
//! - A case is healthy when it passes recall **clearly**: every one of its expected chunks
//!   is inside its top-K (recall 1, whatever the floor), the run has results for it, and its
//!   noise is defined (every top-K result has a score).
//! - Each healthy case contributes its noise as a fraction of its K (`noise / K`).
//! - The ceiling is the [`Settings::quantile`] of those fractions (nearest rank: the
//!   ⌈q × n⌉-th smallest of n) plus [`Settings::margin`], rounded up to a hundredth and
//!   capped at 1. With the defaults, the 95th percentile plus 0.10 (one result in ten).
//! - At least [`Settings::min_healthy`] healthy cases are needed; fewer is an error (a
//!   ceiling from two cases would be noise itself).
//! - Domain `noise_ceiling` overrides of the policy are removed: the calibrated ceiling was
//!   measured on every domain's healthy cases. Every other key is kept.
//! - Per case that is still over the calibrated ceiling because K exceeds what its expected
//!   list can fill (structural noise: even a perfect ranking, every expected chunk first,
//!   leaves `min(K, results) − expected` results below them, more than ⌊ceiling × K⌋), a
//!   `top_k` suggestion: the largest K at which a perfect ranking stays within the ceiling.
//!   Cases within the ceiling get none, whatever their K: lowering K there buys nothing.
//!
//! Pure: a function of the exam report and the settings.

use crate::diagnosis::suggested_top_k;
use crate::exam::noise::max_noise;
use crate::exam::ExamReport;
use crate::policy::Policy;
use serde::{Deserialize, Serialize};

/// How the ceiling is chosen. The defaults are documented in `docs/policy.md`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Quantile of the healthy cases' noise fractions (0..=1; 1 is their maximum).
    pub quantile: f64,
    /// Added to the quantile, as a fraction of K.
    pub margin: f64,
    /// Fewest healthy cases a ceiling is computed from.
    pub min_healthy: usize,
}

/// The 95th percentile of the healthy noise.
pub const DEFAULT_QUANTILE: f64 = 0.95;
/// One result in ten.
pub const DEFAULT_MARGIN: f64 = 0.10;
/// Five healthy cases at least.
pub const DEFAULT_MIN_HEALTHY: usize = 5;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            quantile: DEFAULT_QUANTILE,
            margin: DEFAULT_MARGIN,
            min_healthy: DEFAULT_MIN_HEALTHY,
        }
    }
}

/// Why no ceiling could be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error(
        "only {healthy} of {cases} cases are healthy (every expected chunk inside the top-K, noise defined); calibrating needs at least {needed}"
    )]
    TooFewHealthy {
        healthy: usize,
        cases: usize,
        needed: usize,
    },
    #[error("{key} must be between 0 and 1, got {value}")]
    Setting { key: &'static str, value: f64 },
}

/// One healthy case's contribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthyCase {
    pub id: String,
    pub noise: u32,
    pub k: u32,
    /// `noise / K`.
    pub fraction: f64,
}

/// How many healthy cases share one noise fraction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// `noise / K`, rounded to 4 decimals.
    pub fraction: f64,
    pub cases: usize,
}

/// A case whose K exceeds what its expected list can fill under the calibrated ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopKSuggestion {
    pub case: String,
    /// The case's K now.
    pub k: u32,
    /// Distinct expected chunks.
    pub expected: u32,
    /// `min(K, results) − expected`: the noise of a perfect ranking.
    pub perfect_noise: u32,
    /// `⌊calibrated ceiling × K⌋`.
    pub max_noise: u32,
    /// The largest K at which a perfect ranking stays within the ceiling.
    pub suggested_top_k: u32,
}

/// The result of a calibration: the distribution used, the chosen ceiling and why, the
/// per-case suggestions and the calibrated policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub settings: Settings,
    /// Cases in the suite.
    pub cases: usize,
    /// Healthy cases, in golden-set order.
    pub healthy: Vec<HealthyCase>,
    /// Cases left out: not every expected chunk inside the top-K (or no results).
    pub excluded_recall: usize,
    /// Cases left out: noise undefined (a top-K result without a score).
    pub excluded_noise_undefined: usize,
    /// The healthy noise fractions, ascending.
    pub distribution: Vec<Bucket>,
    /// The quantile's value among the healthy fractions.
    pub quantile_value: f64,
    /// The chosen ceiling: `quantile_value + margin`, rounded up to 0.01, at most 1.
    pub noise_ceiling: f64,
    /// The ceiling the suite was examined with.
    pub previous_noise_ceiling: f64,
    /// Domains whose own `noise_ceiling` was removed.
    pub replaced_domain_ceilings: Vec<String>,
    /// Per case, in golden-set order.
    pub suggestions: Vec<TopKSuggestion>,
    /// The examined policy with the calibrated ceiling.
    pub policy: Policy,
}

/// Calibrates the noise ceiling on `report` (an exam of the complete suite).
pub fn calibrate(report: &ExamReport, settings: Settings) -> Result<Calibration, CalibrationError> {
    for (key, value) in [("quantile", settings.quantile), ("margin", settings.margin)] {
        if !(value.is_finite() && (0.0..=1.0).contains(&value)) {
            return Err(CalibrationError::Setting { key, value });
        }
    }
    let mut healthy = Vec::new();
    let (mut excluded_recall, mut excluded_noise_undefined) = (0, 0);
    for c in &report.cases {
        let all_in =
            c.retrieved > 0 && !c.expected.is_empty() && c.expected.iter().all(|e| e.in_top_k);
        match (all_in, c.noise) {
            (false, _) => excluded_recall += 1,
            (true, None) => excluded_noise_undefined += 1,
            (true, Some(noise)) => healthy.push(HealthyCase {
                id: c.id.clone(),
                noise,
                k: c.top_k,
                fraction: f64::from(noise) / f64::from(c.top_k.max(1)),
            }),
        }
    }
    if healthy.len() < settings.min_healthy.max(1) {
        return Err(CalibrationError::TooFewHealthy {
            healthy: healthy.len(),
            cases: report.cases.len(),
            needed: settings.min_healthy.max(1),
        });
    }
    let mut fractions: Vec<f64> = healthy.iter().map(|h| h.fraction).collect();
    fractions.sort_by(f64::total_cmp);
    let mut distribution: Vec<Bucket> = Vec::new();
    for &f in &fractions {
        let f = (f * 1e4).round() / 1e4;
        match distribution.last_mut() {
            Some(b) if b.fraction == f => b.cases += 1,
            _ => distribution.push(Bucket {
                fraction: f,
                cases: 1,
            }),
        }
    }
    let n = fractions.len();
    let rank = ((settings.quantile * n as f64 - 1e-9).ceil() as usize).clamp(1, n);
    let quantile_value = fractions[rank - 1];
    let noise_ceiling = round_up_hundredth(quantile_value + settings.margin).min(1.0);

    let mut policy = report.policy.clone();
    policy.noise_ceiling = noise_ceiling;
    let mut replaced_domain_ceilings = Vec::new();
    for (name, d) in &mut policy.domains {
        if d.noise_ceiling.take().is_some() {
            replaced_domain_ceilings.push(name.clone());
        }
    }
    policy
        .domains
        .retain(|_, d| *d != crate::policy::DomainPolicy::default());

    let suggestions = report
        .cases
        .iter()
        .filter_map(|c| {
            let mut ids: Vec<&str> = c.expected.iter().map(|e| e.id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            let expected = ids.len() as u32;
            let in_top_k = (c.retrieved as u32).min(c.top_k);
            let perfect_noise = in_top_k.saturating_sub(expected);
            let max = max_noise(noise_ceiling, c.top_k);
            let over = c.noise.is_some_and(|n| n > max);
            (expected > 0 && over && perfect_noise > max).then(|| TopKSuggestion {
                case: c.id.clone(),
                k: c.top_k,
                expected,
                perfect_noise,
                max_noise: max,
                suggested_top_k: suggested_top_k(expected, noise_ceiling, c.top_k),
            })
        })
        .collect();

    Ok(Calibration {
        settings,
        cases: report.cases.len(),
        healthy,
        excluded_recall,
        excluded_noise_undefined,
        distribution,
        quantile_value,
        noise_ceiling,
        previous_noise_ceiling: report.policy.noise_ceiling,
        replaced_domain_ceilings,
        suggestions,
        policy,
    })
}

/// `v` rounded up to a hundredth, tolerant of binary noise (0.7 + 0.1 is 0.80, not 0.81).
fn round_up_hundredth(v: f64) -> f64 {
    (v * 100.0 - 1e-6).ceil().max(0.0) / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Case;
    use crate::exam::{evaluate, ExamInput};
    use crate::run::{Retrieved, Run};
    use std::collections::BTreeMap;

    /// A case with `expected` chunks `e0..` and a run that ranks them at `ranks` among
    /// `depth` results with decreasing scores.
    fn suite(specs: &[(usize, &[usize], usize)]) -> (Vec<Case>, Run) {
        let mut cases = Vec::new();
        let mut run = Run::default();
        for (i, &(n_expected, ranks, depth)) in specs.iter().enumerate() {
            let id = format!("q{i}");
            let expected: Vec<String> = (0..n_expected).map(|j| format!("c{i}_e{j}")).collect();
            let mut list: Vec<Retrieved> = (0..depth)
                .map(|r| Retrieved {
                    id: format!("c{i}_x{r}"),
                    score: Some(1.0 - r as f64 / 100.0),
                })
                .collect();
            for (j, &rank) in ranks.iter().enumerate() {
                list[rank - 1].id = expected[j].clone();
            }
            run.queries.insert(id.clone(), list);
            cases.push(Case {
                id,
                query: format!("question {i}"),
                expected,
                top_k: None,
                domain: None,
                tags: Vec::new(),
                gold: false,
                query_vector: None,
            });
        }
        (cases, run)
    }

    fn report(specs: &[(usize, &[usize], usize)], policy: &Policy) -> ExamReport {
        let (cases, run) = suite(specs);
        let notes = BTreeMap::new();
        evaluate(ExamInput {
            cases: &cases,
            run: &run,
            corpus: None,
            policy,
            notes: &notes,
            as_of: None,
        })
    }

    #[test]
    fn ceiling_is_the_quantile_of_healthy_noise_plus_margin() {
        // Five healthy cases with 2 or 3 expected chunks first (noise 8 or 7 of 10), one
        // case missing a chunk (excluded).
        let r = report(
            &[
                (2, &[1, 2], 10),
                (2, &[1, 2], 10),
                (3, &[1, 2, 3], 10),
                (3, &[1, 2, 3], 10),
                (2, &[1, 2], 10),
                (2, &[1, 15], 20),
            ],
            &Policy::default(),
        );
        assert_eq!(r.verdict, crate::exam::Verdict::Stop);
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.healthy.len(), 5);
        assert_eq!(c.excluded_recall, 1);
        assert_eq!(
            c.distribution,
            vec![
                Bucket {
                    fraction: 0.7,
                    cases: 2
                },
                Bucket {
                    fraction: 0.8,
                    cases: 3
                }
            ]
        );
        assert_eq!(c.quantile_value, 0.8);
        assert_eq!(c.noise_ceiling, 0.9);
        assert_eq!(c.previous_noise_ceiling, 0.3);
        assert_eq!(c.policy.noise_ceiling, 0.9);
        assert!(c.suggestions.is_empty(), "{:?}", c.suggestions);
        // The calibrated policy accepts the healthy cases' noise.
        let again = report(
            &[
                (2, &[1, 2], 10),
                (2, &[1, 2], 10),
                (3, &[1, 2, 3], 10),
                (3, &[1, 2, 3], 10),
                (2, &[1, 2], 10),
            ],
            &c.policy,
        );
        assert_eq!(again.summary.over_noise, 0);
    }

    #[test]
    fn a_lower_quantile_leaves_the_outliers_out() {
        let mut specs: Vec<(usize, &[usize], usize)> = vec![(3, &[1, 2, 3], 10); 9];
        specs.push((1, &[1], 10));
        let r = report(&specs, &Policy::default());
        let c = calibrate(
            &r,
            Settings {
                quantile: 0.9,
                ..Settings::default()
            },
        )
        .unwrap();
        // 9 cases at 0.7 and one at 0.9: the 9th smallest of 10 is 0.7.
        assert_eq!(c.quantile_value, 0.7);
        assert_eq!(c.noise_ceiling, 0.8);
        // The one-chunk case cannot fill K = 10: 9 below it > ⌊0.8 × 10⌋ = 8.
        assert_eq!(
            c.suggestions,
            vec![TopKSuggestion {
                case: "q9".into(),
                k: 10,
                expected: 1,
                perfect_noise: 9,
                max_noise: 8,
                suggested_top_k: 5,
            }]
        );
    }

    #[test]
    fn a_case_within_the_ceiling_gets_no_suggestion_whatever_its_k() {
        // One expected chunk at rank 10 of 10: noise 0, though a perfect ranking would
        // leave 9 below it.
        let r = report(
            &[
                (3, &[1, 2, 3], 10),
                (3, &[1, 2, 3], 10),
                (3, &[1, 2, 3], 10),
                (3, &[1, 2, 3], 10),
                (3, &[1, 2, 3], 10),
                (1, &[10], 10),
            ],
            &Policy::default(),
        );
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.noise_ceiling, 0.8);
        assert!(c.suggestions.is_empty(), "{:?}", c.suggestions);
    }

    #[test]
    fn too_few_healthy_cases_is_an_error() {
        let r = report(
            &[(2, &[1, 2], 10), (2, &[1, 12], 20), (1, &[1], 10)],
            &Policy::default(),
        );
        let err = calibrate(&r, Settings::default()).unwrap_err();
        assert_eq!(
            err,
            CalibrationError::TooFewHealthy {
                healthy: 2,
                cases: 3,
                needed: 5
            }
        );
        assert!(err.to_string().starts_with("only 2 of 3 cases are healthy"));
    }

    #[test]
    fn domain_ceilings_are_replaced_other_overrides_kept() {
        let mut policy = Policy::default();
        policy.domains.insert(
            "a".into(),
            crate::policy::DomainPolicy {
                noise_ceiling: Some(0.4),
                ..Default::default()
            },
        );
        policy.domains.insert(
            "b".into(),
            crate::policy::DomainPolicy {
                noise_ceiling: Some(0.5),
                top_k: Some(10),
                ..Default::default()
            },
        );
        let r = report(&[(3, &[1, 2, 3][..], 10); 5], &policy);
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.replaced_domain_ceilings, vec!["a", "b"]);
        assert!(!c.policy.domains.contains_key("a"));
        assert_eq!(c.policy.domains["b"].top_k, Some(10));
        assert_eq!(c.policy.domains["b"].noise_ceiling, None);
    }

    #[test]
    fn ceiling_rounds_up_and_caps_at_one() {
        assert_eq!(round_up_hundredth(0.7 + 0.1), 0.8);
        assert_eq!(round_up_hundredth(0.6667 + 0.1), 0.77);
        let r = report(&[(1, &[1][..], 10); 5], &Policy::default());
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.quantile_value, 0.9);
        assert_eq!(c.noise_ceiling, 1.0);
    }

    #[test]
    fn bad_settings_are_refused() {
        let r = report(&[(3, &[1, 2, 3][..], 10); 5], &Policy::default());
        let err = calibrate(
            &r,
            Settings {
                margin: 1.5,
                ..Settings::default()
            },
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "margin must be between 0 and 1, got 1.5");
    }
}
