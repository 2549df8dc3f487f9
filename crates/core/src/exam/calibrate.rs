//! Calibrating the noise ceiling on a complete suite (`veredicto calibrate`).
//!
//! The noise rule stays as it is (noise = top-K results scoring below the worst expected
//! chunk; a case fails when noise > ⌊ceiling × K⌋); what calibration chooses is the ceiling,
//! from the noise that the suite's **healthy** cases show, plus a margin. The distribution
//! and the suggested ceiling are [`calibrate_noise`]'s (documented in `docs/compare.md`,
//! the same numbers the HTML report shows):
//!
//! - a case is healthy when it passes recall **clearly**: recall exactly 1 (every expected
//!   chunk inside its top-K, whatever the floor) and a defined noise;
//! - the ceiling is the nearest-rank 90th percentile of the healthy cases' `noise / K` plus
//!   one result (`1 / K`, K the most common among them), rounded **up** to the next 0.05
//!   and capped at 1: nine healthy cases in ten keep at least one result of margin.
//!
//! What this module adds, to turn the suggestion into a policy:
//!
//! - at least [`Settings::min_healthy`] healthy cases are needed; fewer is an error (a
//!   ceiling from two cases would be noise itself). Under 20 the result is marked
//!   provisional (`reliable: false`);
//! - the calibrated policy is the examined one with the new `noise_ceiling`; a domain's own
//!   `noise_ceiling` override is recalibrated from that domain's healthy cases when it has
//!   at least `min_healthy` of them, and removed otherwise (the global ceiling, measured on
//!   every domain, then applies). Every other key is kept;
//! - per case that is still over the calibrated ceiling because K exceeds what its expected
//!   list can fill (structural noise: even a perfect ranking, every expected chunk first,
//!   leaves `min(K, results) − expected` results below them, more than ⌊ceiling × K⌋), a
//!   `top_k` suggestion: the largest K at which a perfect ranking stays within the ceiling.
//!   Cases within the ceiling get none, whatever their K: lowering K there buys nothing;
//! - whether the calibrated ceiling can still fail any case of the suite
//!   ([`NoiseRuleReach`]). A case that fails recall fails whatever its noise, so the rule
//!   decides a case only while its recall passes. With `e` distinct expected chunks, recall
//!   passes with `m` of them in the top K when `m / e ≥ recall_floor`; noise counts only
//!   results that are not expected, so it is at most `K − m`, and `K − m_min` (`m_min` the
//!   fewest that pass recall, at least 1) is reached by a result list with those `m_min`
//!   chunks first and K results in all. The ceiling can fail the case exactly when
//!   `K − m_min > ⌊ceiling × K⌋`. When no case of the suite can be failed, the rule is
//!   uninformative there: with one expected chunk per case, `m_min = 1` and the healthy
//!   cases' noise is `K − rank`, so the better the ranking, the more "noise", and the
//!   calibrated ceiling ends at or above `K − 1`.
//!
//! Pure: a function of the exam report and the settings.

use crate::compare::{calibrate_noise, NoiseCalibration};
use crate::diagnosis::suggested_top_k;
use crate::exam::noise::max_noise;
use crate::exam::ExamReport;
use crate::policy::Policy;
use serde::{Deserialize, Serialize};

/// Five healthy cases at least.
pub const DEFAULT_MIN_HEALTHY: usize = 5;

/// How the calibration is made.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Fewest healthy cases a ceiling (global, or a domain's) is computed from.
    pub min_healthy: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            min_healthy: DEFAULT_MIN_HEALTHY,
        }
    }
}

/// Why no ceiling could be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    #[error(
        "only {healthy} of {cases} cases are healthy (recall 1: every expected chunk inside the top-K, noise defined); calibrating needs at least {needed}"
    )]
    TooFewHealthy {
        healthy: usize,
        cases: usize,
        needed: usize,
    },
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

/// Whether the calibrated ceiling can still fail a case of the suite (the module docs say
/// how): the rule is informative when it can fail at least one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseRuleReach {
    /// Cases that the calibrated ceiling can still fail while their recall passes.
    pub cases_it_can_fail: usize,
    /// Cases it can no longer fail: the most noise they can have while passing recall is
    /// within their ceiling (or their recall can never pass).
    pub cases_it_cannot_fail: usize,
    /// Of the cases it cannot fail, those with one expected chunk.
    pub one_expected_chunk: usize,
    /// The case nearest to being failed (smallest `max_noise − most_noise`, the first in
    /// golden-set order on a tie), among the cases whose recall can pass.
    pub nearest: Option<CaseReach>,
    /// Why the rule cannot fail any case; `None` while it can fail one.
    pub uninformative: Option<Uninformative>,
}

/// One case's reach of the noise rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseReach {
    pub case: String,
    pub k: u32,
    /// Distinct expected chunks.
    pub expected: u32,
    /// The most noise the case can have while its recall passes: `K − m_min`.
    pub most_noise: u32,
    /// `⌊calibrated ceiling × K⌋`.
    pub max_noise: u32,
}

/// Why the calibrated ceiling cannot fail any case of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Uninformative {
    /// Every case has one expected chunk: the rule cannot tell a healthy case from a noisy
    /// one, since a better ranking has more results below the chunk.
    OneExpectedChunkPerCase,
    /// The expected lists are too short for their K: the ceiling the healthy cases need is
    /// at or above the most noise any case can have while passing recall.
    ExpectedListsTooShort,
}

/// What happened to a domain's own noise ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainCeiling {
    pub domain: String,
    pub previous: f64,
    /// The domain's calibrated ceiling; `None` when the override was removed (fewer than
    /// `min_healthy` healthy cases in the domain).
    pub calibrated: Option<f64>,
}

/// The result of a calibration: the distribution used, the chosen ceiling, the per-case
/// suggestions and the calibrated policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub settings: Settings,
    /// Cases in the suite.
    pub cases: usize,
    /// The healthy cases' noise, overall and per domain, and the suggested ceilings.
    pub noise: NoiseCalibration,
    /// The chosen global ceiling.
    pub noise_ceiling: f64,
    /// The global ceiling the suite was examined with.
    pub previous_noise_ceiling: f64,
    /// At least 20 healthy cases; otherwise the ceiling is provisional.
    pub reliable: bool,
    /// Domains that had their own `noise_ceiling`.
    pub domains: Vec<DomainCeiling>,
    /// Per case, in golden-set order.
    pub suggestions: Vec<TopKSuggestion>,
    /// Whether the calibrated ceiling can still fail any case of the suite
    /// (`noise_rule.cases_it_can_fail > 0`).
    pub noise_rule_informative: bool,
    /// How far the calibrated ceiling reaches over the suite's cases.
    pub noise_rule: NoiseRuleReach,
    /// The examined policy with the calibrated ceilings.
    pub policy: Policy,
}

/// Calibrates the noise ceiling on `report` (an exam of the complete suite).
pub fn calibrate(report: &ExamReport, settings: Settings) -> Result<Calibration, CalibrationError> {
    let noise = calibrate_noise(report);
    let needed = settings.min_healthy.max(1);
    let healthy = noise.overall.healthy_cases;
    let noise_ceiling = match noise.overall.suggested_ceiling {
        Some(c) if healthy >= needed => c,
        _ => {
            return Err(CalibrationError::TooFewHealthy {
                healthy,
                cases: report.cases.len(),
                needed,
            })
        }
    };
    let mut policy = report.policy.clone();
    policy.noise_ceiling = noise_ceiling;
    let mut domains = Vec::new();
    for (name, d) in &mut policy.domains {
        let Some(previous) = d.noise_ceiling else {
            continue;
        };
        let calibrated = noise
            .domains
            .get(name)
            .filter(|dist| dist.healthy_cases >= needed)
            .and_then(|dist| dist.suggested_ceiling);
        d.noise_ceiling = calibrated;
        domains.push(DomainCeiling {
            domain: name.clone(),
            previous,
            calibrated,
        });
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
            let ceiling = policy.thresholds(c.domain.as_deref()).noise_ceiling;
            let in_top_k = (c.retrieved as u32).min(c.top_k);
            let perfect_noise = in_top_k.saturating_sub(expected);
            let max = max_noise(ceiling, c.top_k);
            let over = c.noise.is_some_and(|n| n > max);
            (expected > 0 && over && perfect_noise > max).then(|| TopKSuggestion {
                case: c.id.clone(),
                k: c.top_k,
                expected,
                perfect_noise,
                max_noise: max,
                suggested_top_k: suggested_top_k(expected, ceiling, c.top_k),
            })
        })
        .collect();

    let noise_rule = reach(report, &policy);
    Ok(Calibration {
        noise_rule_informative: noise_rule.cases_it_can_fail > 0,
        noise_rule,
        settings,
        cases: report.cases.len(),
        reliable: noise.overall.reliable,
        previous_noise_ceiling: report.policy.noise_ceiling,
        noise,
        noise_ceiling,
        domains,
        suggestions,
        policy,
    })
}

/// The fewest expected chunks in the top K that pass recall: the smallest `m ≥ 1` with
/// `m / e ≥ floor` (the exam's comparison), `None` when even `min(e, K)` does not.
fn fewest_passing_recall(expected: u32, k: u32, floor: f64) -> Option<u32> {
    (1..=expected.min(k)).find(|&m| f64::from(m) / f64::from(expected) >= floor)
}

/// How far `policy`'s noise ceilings reach over the cases of `report`.
fn reach(report: &ExamReport, policy: &Policy) -> NoiseRuleReach {
    let mut can = 0;
    let mut cannot = 0;
    let mut one = 0;
    let mut nearest: Option<CaseReach> = None;
    for c in &report.cases {
        let mut ids: Vec<&str> = c.expected.iter().map(|e| e.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let expected = ids.len() as u32;
        let th = policy.thresholds(c.domain.as_deref());
        let max = max_noise(th.noise_ceiling, c.top_k);
        let most = fewest_passing_recall(expected, c.top_k, th.recall_floor).map(|m| c.top_k - m);
        if most.is_some_and(|n| n > max) {
            can += 1;
        } else {
            cannot += 1;
            if expected == 1 {
                one += 1;
            }
        }
        if let Some(most_noise) = most {
            let margin = |r: &CaseReach| i64::from(r.max_noise) - i64::from(r.most_noise);
            let this = CaseReach {
                case: c.id.clone(),
                k: c.top_k,
                expected,
                most_noise,
                max_noise: max,
            };
            if nearest.as_ref().is_none_or(|n| margin(&this) < margin(n)) {
                nearest = Some(this);
            }
        }
    }
    let kind = if !report.cases.is_empty() && one == report.cases.len() {
        Uninformative::OneExpectedChunkPerCase
    } else {
        Uninformative::ExpectedListsTooShort
    };
    let uninformative = (can == 0).then_some(kind);
    NoiseRuleReach {
        cases_it_can_fail: can,
        cases_it_cannot_fail: cannot,
        one_expected_chunk: one,
        nearest,
        uninformative,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Case;
    use crate::exam::{evaluate, ExamInput};
    use crate::run::{Retrieved, Run};
    use std::collections::BTreeMap;

    type Spec<'a> = (usize, &'a [usize], usize, Option<&'a str>);

    /// Cases whose `expected` chunks sit at `ranks` among `depth` results with decreasing
    /// scores.
    fn report(specs: &[Spec<'_>], policy: &Policy) -> ExamReport {
        let mut cases = Vec::new();
        let mut run = Run::default();
        for (i, &(n_expected, ranks, depth, domain)) in specs.iter().enumerate() {
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
                grades: Default::default(),
                evidence: Vec::new(),
                top_k: None,
                domain: domain.map(str::to_owned),
                tags: Vec::new(),
                gold: false,
                query_vector: None,
                filters: None,
            });
        }
        evaluate(ExamInput {
            cases: &cases,
            run: &run,
            corpus: None,
            policy,
            notes: &BTreeMap::new(),
            as_of: None,
        })
    }

    const TWO: &[usize] = &[1, 2];
    const THREE: &[usize] = &[1, 2, 3];

    #[test]
    fn ceiling_is_the_healthy_p90_plus_one_result() {
        // Healthy: 2 or 3 expected chunks first (noise 8 or 7 of 10); one case misses a
        // chunk (left out).
        let r = report(
            &[
                (2, TWO, 10, None),
                (2, TWO, 10, None),
                (3, THREE, 10, None),
                (3, THREE, 10, None),
                (2, TWO, 10, None),
                (2, &[1, 15], 20, None),
            ],
            &Policy::default(),
        );
        assert_eq!(r.verdict, crate::exam::Verdict::Stop);
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.noise.overall.healthy_cases, 5);
        assert_eq!(c.noise.overall.p90_fraction, Some(0.8));
        assert_eq!(c.noise_ceiling, 0.9);
        assert_eq!(c.previous_noise_ceiling, 0.3);
        assert_eq!(c.policy.noise_ceiling, 0.9);
        assert!(!c.reliable);
        assert!(c.suggestions.is_empty(), "{:?}", c.suggestions);
        // The calibrated policy accepts the healthy cases' noise.
        let again = report(&[(2, TWO, 10, None), (3, THREE, 10, None)], &c.policy);
        assert_eq!(again.summary.over_noise, 0);
    }

    #[test]
    fn a_case_structurally_over_the_calibrated_ceiling_gets_a_top_k() {
        let mut specs: Vec<Spec<'_>> = vec![(3, THREE, 10, None); 9];
        specs.push((1, &[1], 10, None));
        let r = report(&specs, &Policy::default());
        let c = calibrate(&r, Settings::default()).unwrap();
        // p90 of nine 0.7 and one 0.9 is 0.7; + 0.1 = 0.8.
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
        let mut specs: Vec<Spec<'_>> = vec![(3, THREE, 10, None); 5];
        specs.push((1, &[10], 10, None));
        let r = report(&specs, &Policy::default());
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.noise_ceiling, 0.8);
        assert!(c.suggestions.is_empty(), "{:?}", c.suggestions);
    }

    #[test]
    fn too_few_healthy_cases_is_an_error() {
        let r = report(
            &[
                (2, TWO, 10, None),
                (2, &[1, 12], 20, None),
                (1, &[1], 10, None),
            ],
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
    fn domain_ceilings_are_recalibrated_or_removed_other_overrides_kept() {
        let mut policy = Policy::default();
        for (name, top_k) in [("a", None), ("b", Some(10)), ("c", None)] {
            policy.domains.insert(
                name.into(),
                crate::policy::DomainPolicy {
                    noise_ceiling: Some(0.4),
                    top_k,
                    ..Default::default()
                },
            );
        }
        // Domain a: 5 healthy cases at 0.8; b: one; c: none.
        let mut specs: Vec<Spec<'_>> = vec![(2, TWO, 10, Some("a")); 5];
        specs.push((3, THREE, 10, Some("b")));
        specs.extend(vec![(3, THREE, 10, None); 4]);
        let r = report(&specs, &policy);
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.noise_ceiling, 0.9);
        assert_eq!(
            c.domains,
            vec![
                DomainCeiling {
                    domain: "a".into(),
                    previous: 0.4,
                    calibrated: Some(0.9)
                },
                DomainCeiling {
                    domain: "b".into(),
                    previous: 0.4,
                    calibrated: None
                },
                DomainCeiling {
                    domain: "c".into(),
                    previous: 0.4,
                    calibrated: None
                },
            ]
        );
        assert_eq!(c.policy.domains["a"].noise_ceiling, Some(0.9));
        assert_eq!(c.policy.domains["b"].top_k, Some(10));
        assert_eq!(c.policy.domains["b"].noise_ceiling, None);
        assert!(!c.policy.domains.contains_key("c"));
    }

    #[test]
    fn ceiling_caps_at_one() {
        let r = report(&[(1, &[1][..], 10, None); 5], &Policy::default());
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.noise.overall.p90_fraction, Some(0.9));
        assert_eq!(c.noise_ceiling, 1.0);
    }

    #[test]
    fn one_expected_chunk_per_case_leaves_a_ceiling_that_can_fail_no_case() {
        // Thirty perfect one-chunk cases: noise 9 each, ceiling 1.0 (10 of 10); a case that
        // passes recall has its chunk in the top 10, so at most 9 below it.
        let r = report(&[(1, &[1][..], 10, None); 30], &Policy::default());
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.noise_ceiling, 1.0);
        assert!(!c.noise_rule_informative);
        assert_eq!(
            c.noise_rule,
            NoiseRuleReach {
                cases_it_can_fail: 0,
                cases_it_cannot_fail: 30,
                one_expected_chunk: 30,
                nearest: Some(CaseReach {
                    case: "q0".into(),
                    k: 10,
                    expected: 1,
                    most_noise: 9,
                    max_noise: 10,
                }),
                uninformative: Some(Uninformative::OneExpectedChunkPerCase),
            }
        );
        // 0.9 would not do either: ⌊0.9 × 10⌋ = 9, the most a one-chunk case can have.
        let mut p = c.policy.clone();
        p.noise_ceiling = 0.9;
        assert_eq!(reach(&r, &p).cases_it_can_fail, 0);
        p.noise_ceiling = 0.85;
        assert_eq!(reach(&r, &p).cases_it_can_fail, 30);
    }

    #[test]
    fn short_expected_lists_leave_a_ceiling_that_can_fail_no_case() {
        // Two chunks first (noise 8): ceiling 0.9 allows 9; a case passing recall has both
        // chunks in the top 10 (recall 1/2 fails the floor), so at most 8 below them.
        let r = report(&[(2, TWO, 10, None); 6], &Policy::default());
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.noise_ceiling, 0.9);
        assert!(!c.noise_rule_informative);
        assert_eq!(
            c.noise_rule.uninformative,
            Some(Uninformative::ExpectedListsTooShort)
        );
        assert_eq!(c.noise_rule.one_expected_chunk, 0);
        assert_eq!(c.noise_rule.nearest.as_ref().unwrap().most_noise, 8);
    }

    #[test]
    fn a_case_the_ceiling_can_still_fail_keeps_the_rule_informative() {
        // Nine three-chunk cases (7 below) and one one-chunk case: ceiling 0.8 allows 8; the
        // one-chunk case can have 9 while passing recall, the others at most 7.
        let mut specs: Vec<Spec<'_>> = vec![(3, THREE, 10, None); 9];
        specs.push((1, &[1], 10, None));
        let r = report(&specs, &Policy::default());
        let c = calibrate(&r, Settings::default()).unwrap();
        assert_eq!(c.noise_ceiling, 0.8);
        assert!(c.noise_rule_informative);
        assert_eq!(c.noise_rule.cases_it_can_fail, 1);
        assert_eq!(c.noise_rule.cases_it_cannot_fail, 9);
        assert_eq!(c.noise_rule.uninformative, None);
        assert_eq!(c.noise_rule.nearest.as_ref().unwrap().case, "q9");
    }

    #[test]
    fn the_fewest_chunks_that_pass_recall_follow_the_floor() {
        assert_eq!(fewest_passing_recall(1, 10, 0.9), Some(1));
        assert_eq!(fewest_passing_recall(3, 10, 0.9), Some(3));
        // 9 of 10 is exactly the floor: it passes.
        assert_eq!(fewest_passing_recall(10, 10, 0.9), Some(9));
        assert_eq!(fewest_passing_recall(3, 10, 0.5), Some(2));
        assert_eq!(fewest_passing_recall(4, 10, 0.0), Some(1));
        // 20 expected at K = 10: recall at most 0.5, never passes 0.9.
        assert_eq!(fewest_passing_recall(20, 10, 0.9), None);
        assert_eq!(fewest_passing_recall(0, 10, 0.9), None);
    }
}
