//! Fusion of several rankings of one query into one (hybrid retrieval: BM25 + vectors, or
//! any retrievers and run files), as pure functions.
//!
//! A fusion is a **method** and a **normalisation**, written `METHOD?PARAM=VALUE&…`:
//! `rrf?k=60`, `combsum?norm=min-max`, `combmnz?norm=zscore`, `combmax?norm=rank`,
//! `wsum?w=0.7,0.3&norm=min-max` ([`Fusion`]'s `FromStr` and `Display`, which prints the
//! canonical form with every parameter).
//!
//! Each arm gives a list of `(id, score)` in its rank order (an ID listed twice counts at its
//! first position). For every arm `a` and document `d` in its list, at 0-based position `i`
//! of `n`, the normalised value `v_a(d)` is:
//!
//! | `norm` | `v_a(d)` |
//! |---|---|
//! | `none` | the arm's score |
//! | `min-max` | `(s − min) / max(max − min, 1e-9)` over the arm's list: 0 for a single result or equal scores |
//! | `zscore` | `(s − mean) / max(std, 1e-9)`, `std` the population standard deviation (divided by `n`) |
//! | `rank` | `1 − i / n`: 1 for the first, `1/n` for the last |
//!
//! and the fused score of `d` over the arms `A(d)` whose lists hold it:
//!
//! | method | fused score |
//! |---|---|
//! | `rrf` (reciprocal rank fusion, `k` ≥ 0, default 60) | `Σ_{a ∈ A(d)} 1 / (k + i_a(d) + 1)` (ranks only: no `norm`) |
//! | `combsum` | `Σ_{a ∈ A(d)} v_a(d)` (an arm without `d` adds 0) |
//! | `combmnz` | `|A(d)| · Σ_{a ∈ A(d)} v_a(d)` |
//! | `combmax` | `max_{a ∈ A(d)} v_a(d)` |
//! | `wsum` (weights `w`, one per arm) | `Σ_a w_a · v_a(d)` (an arm without `d` adds 0) |
//!
//! The default `norm` of the score methods is `min-max`. These are ranx's `fuse`
//! conventions (ranx 0.3: `norm="min-max"` and `"zmuv"`, `"rank"`, `None`; methods `rrf`,
//! `comb_sum`, `comb_mnz`, `comb_max`, `wsum`), sums taken in arm order from 0 in `f64`, so
//! the fused scores equal ranx's on the same runs; the one exception is `combmax` of raw
//! scores below −10⁹, where ranx's sentinel for a missing arm would win. RRF and the rank
//! normalisation read positions: they equal ranx's when an arm's list is in descending score
//! order without ties (ranx re-sorts each arm by score, breaking ties arbitrarily; here an
//! arm's own order counts).
//!
//! The fused list is the union of the arms' lists, ordered by **fused score descending, then
//! ID ascending** (byte-wise): the tie rule of veredicto's own index.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The floor of a normalisation's denominator (ranx's).
pub const NORM_EPSILON: f64 = 1e-9;
/// RRF's `k` unless given.
pub const DEFAULT_RRF_K: f64 = 60.0;

/// How an arm's scores are put on one scale before they are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// The arm's scores as given.
    None,
    /// `(s − min) / max(max − min, 1e-9)`.
    MinMax,
    /// `(s − mean) / max(std, 1e-9)` (population standard deviation; ranx's `zmuv`).
    ZScore,
    /// `1 − i / n` by 0-based position `i` of `n`.
    Rank,
}

impl Norm {
    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Norm::None => "none",
            Norm::MinMax => "min-max",
            Norm::ZScore => "zscore",
            Norm::Rank => "rank",
        }
    }

    /// Whether it reads the arms' scores (otherwise only their order).
    pub fn needs_scores(self) -> bool {
        !matches!(self, Norm::Rank)
    }
}

impl FromStr for Norm {
    type Err = FusionError;
    fn from_str(s: &str) -> Result<Norm, FusionError> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(Norm::None),
            "min-max" | "min_max" | "minmax" => Ok(Norm::MinMax),
            "zscore" | "z-score" | "zmuv" => Ok(Norm::ZScore),
            "rank" => Ok(Norm::Rank),
            _ => Err(FusionError::Parse(format!(
                "unknown normalisation `{}`: expected none, min-max, zscore or rank",
                crate::redact::short(s)
            ))),
        }
    }
}

/// How the normalised values of the arms combine.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// Reciprocal rank fusion with constant `k`.
    Rrf {
        /// The constant added to each rank (≥ 0).
        k: f64,
    },
    /// Sum of the values.
    CombSum,
    /// Sum of the values times the number of arms that list the document.
    CombMnz,
    /// Largest value.
    CombMax,
    /// Weighted sum, one weight per arm in arm order.
    WeightedSum {
        /// The weights.
        weights: Vec<f64>,
    },
}

impl Method {
    /// The canonical name.
    pub fn name(&self) -> &'static str {
        match self {
            Method::Rrf { .. } => "rrf",
            Method::CombSum => "combsum",
            Method::CombMnz => "combmnz",
            Method::CombMax => "combmax",
            Method::WeightedSum { .. } => "wsum",
        }
    }
}

/// A fusion: method and normalisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Fusion {
    /// The method.
    pub method: Method,
    /// The normalisation (always [`Norm::None`] for RRF, which reads ranks only).
    pub norm: Norm,
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::rrf(DEFAULT_RRF_K)
    }
}

/// Why a fusion cannot be parsed or applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FusionError {
    /// A fusion text that does not parse.
    #[error("{0}")]
    Parse(String),
    /// A weighted sum whose weights do not match the arms.
    #[error("wsum has {weights} weights for {arms} arms: give one weight per arm, in arm order")]
    Weights {
        /// Weights given.
        weights: usize,
        /// Arms fused.
        arms: usize,
    },
    /// An arm without scores under a normalisation that reads them.
    #[error("arm {arm} gives no score for `{id}`, and norm={norm} reads scores: use rrf or norm=rank for an arm without scores")]
    NoScore {
        /// 1-based arm number.
        arm: usize,
        /// The first document without a score.
        id: String,
        /// The normalisation.
        norm: &'static str,
    },
    /// A score that is NaN or infinite.
    #[error("arm {arm} gives `{id}` the score {score}, which is not a finite number")]
    NotFinite {
        /// 1-based arm number.
        arm: usize,
        /// The document.
        id: String,
        /// The score.
        score: f64,
    },
}

/// One document of a fused list.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// The document (chunk) ID.
    pub id: String,
    /// Its fused score.
    pub score: f64,
    /// Its 1-based position in each arm's list (`None`: not listed by that arm).
    pub arm_ranks: Vec<Option<usize>>,
}

impl Fusion {
    /// RRF with constant `k`.
    pub fn rrf(k: f64) -> Fusion {
        Fusion {
            method: Method::Rrf { k },
            norm: Norm::None,
        }
    }

    /// A method with a normalisation; refuses a normalisation with RRF and checks `k`
    /// and the weights.
    pub fn new(method: Method, norm: Norm) -> Result<Fusion, FusionError> {
        match &method {
            Method::Rrf { k } => {
                if norm != Norm::None {
                    return Err(FusionError::Parse(
                        "rrf reads ranks only: it takes no norm".into(),
                    ));
                }
                if !k.is_finite() || *k < 0.0 {
                    return Err(FusionError::Parse(format!(
                        "rrf: k must be a number >= 0, got {k}"
                    )));
                }
            }
            Method::WeightedSum { weights } => {
                if weights.is_empty() {
                    return Err(FusionError::Parse(
                        "wsum needs its weights: wsum?w=0.7,0.3".into(),
                    ));
                }
                if let Some(w) = weights.iter().find(|w| !w.is_finite()) {
                    return Err(FusionError::Parse(format!(
                        "wsum: every weight must be a finite number, got {w}"
                    )));
                }
            }
            _ => {}
        }
        Ok(Fusion { method, norm })
    }

    /// Checks the fusion against the number of arms (a weighted sum needs one weight each;
    /// every fusion needs two arms at least).
    pub fn check_arms(&self, arms: usize) -> Result<(), FusionError> {
        if arms < 2 {
            return Err(FusionError::Parse(format!(
                "a fusion needs two arms at least, {arms} given"
            )));
        }
        if let Method::WeightedSum { weights } = &self.method {
            if weights.len() != arms {
                return Err(FusionError::Weights {
                    weights: weights.len(),
                    arms,
                });
            }
        }
        Ok(())
    }

    /// Whether the fusion reads the arms' scores (not only their order).
    pub fn needs_scores(&self) -> bool {
        !matches!(self.method, Method::Rrf { .. }) && self.norm.needs_scores()
    }

    /// Fuses the arms' lists of one query (each `(id, score)` in the arm's rank order) into
    /// one list, best first (fused score descending, then ID ascending).
    pub fn fuse<S: AsRef<str>>(
        &self,
        arms: &[Vec<(S, Option<f64>)>],
    ) -> Result<Vec<Fused>, FusionError> {
        if let Method::WeightedSum { weights } = &self.method {
            if weights.len() != arms.len() {
                return Err(FusionError::Weights {
                    weights: weights.len(),
                    arms: arms.len(),
                });
            }
        }
        let n_arms = arms.len();
        // Per document (in ID order): each arm's normalised value and position.
        let mut docs: BTreeMap<&str, Vec<Option<(f64, usize)>>> = BTreeMap::new();
        for (a, list) in arms.iter().enumerate() {
            let list = first_occurrences(list);
            let values = self.values(a, &list)?;
            for (i, ((id, _), v)) in list.iter().zip(values).enumerate() {
                docs.entry(id).or_insert_with(|| vec![None; n_arms])[a] = Some((v, i + 1));
            }
        }
        let mut out: Vec<Fused> = docs
            .into_iter()
            .map(|(id, per_arm)| Fused {
                id: id.to_owned(),
                score: self.combine(&per_arm),
                arm_ranks: per_arm.iter().map(|x| x.map(|(_, r)| r)).collect(),
            })
            .collect();
        // Stable: equal scores keep the ID order of the map.
        out.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(out)
    }

    /// Normalised values of one arm's list (deduplicated), in list order.
    fn values(&self, arm: usize, list: &[(&str, Option<f64>)]) -> Result<Vec<f64>, FusionError> {
        let n = list.len();
        if let Method::Rrf { k } = self.method {
            return Ok((0..n).map(|i| 1.0 / (k + i as f64 + 1.0)).collect());
        }
        if self.norm == Norm::Rank {
            return Ok((0..n).map(|i| 1.0 - (i as f64 / n as f64)).collect());
        }
        let mut scores = Vec::with_capacity(n);
        for (id, s) in list {
            match s {
                None => {
                    return Err(FusionError::NoScore {
                        arm: arm + 1,
                        id: crate::redact::short(id),
                        norm: self.norm.name(),
                    })
                }
                Some(s) if !s.is_finite() => {
                    return Err(FusionError::NotFinite {
                        arm: arm + 1,
                        id: crate::redact::short(id),
                        score: *s,
                    })
                }
                Some(s) => scores.push(*s),
            }
        }
        Ok(match self.norm {
            Norm::None | Norm::Rank => scores,
            Norm::MinMax => {
                let min = scores.iter().copied().fold(f64::INFINITY, f64::min);
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let den = (max - min).max(NORM_EPSILON);
                scores.iter().map(|s| (s - min) / den).collect()
            }
            Norm::ZScore => {
                let mean = sequential_sum(&scores) / n as f64;
                let var = scores
                    .iter()
                    .fold(0.0, |acc, s| acc + (s - mean) * (s - mean))
                    / n as f64;
                let den = var.sqrt().max(NORM_EPSILON);
                scores.iter().map(|s| (s - mean) / den).collect()
            }
        })
    }

    /// The fused score of one document from each arm's value (`None`: not in that arm).
    fn combine(&self, per_arm: &[Option<(f64, usize)>]) -> f64 {
        let value = |x: &Option<(f64, usize)>| x.map(|(v, _)| v);
        match &self.method {
            Method::Rrf { .. } | Method::CombSum => per_arm
                .iter()
                .fold(0.0, |acc, x| acc + value(x).unwrap_or(0.0)),
            Method::CombMnz => {
                let present: Vec<f64> = per_arm.iter().filter_map(value).collect();
                sequential_sum(&present) * present.len() as f64
            }
            Method::CombMax => per_arm
                .iter()
                .filter_map(value)
                .fold(f64::NEG_INFINITY, f64::max),
            Method::WeightedSum { weights } => per_arm
                .iter()
                .zip(weights)
                .fold(0.0, |acc, (x, w)| acc + w * value(x).unwrap_or(0.0)),
        }
    }
}

/// `Σ xs` from 0, in order.
fn sequential_sum(xs: &[f64]) -> f64 {
    xs.iter().fold(0.0, |acc, x| acc + x)
}

/// The list without repeated IDs (each kept at its first position).
fn first_occurrences<S: AsRef<str>>(list: &[(S, Option<f64>)]) -> Vec<(&str, Option<f64>)> {
    let mut seen = std::collections::HashSet::with_capacity(list.len());
    list.iter()
        .map(|(id, s)| (id.as_ref(), *s))
        .filter(|(id, _)| seen.insert(*id))
        .collect()
}

fn number(param: &str, text: &str) -> Result<f64, FusionError> {
    text.trim().parse::<f64>().map_err(|_| {
        FusionError::Parse(format!(
            "`{param}` must be a number, got `{}`",
            crate::redact::short(text)
        ))
    })
}

impl FromStr for Fusion {
    type Err = FusionError;

    /// `METHOD` or `METHOD?PARAM=VALUE&…`: `rrf?k=60`, `combsum?norm=zscore`,
    /// `wsum?w=0.7,0.3&norm=min-max`. Unknown methods and parameters are errors naming the
    /// known ones.
    fn from_str(s: &str) -> Result<Fusion, FusionError> {
        let (name, query) = match s.split_once('?') {
            Some((n, q)) => (n, q),
            None => (s, ""),
        };
        let mut k: Option<f64> = None;
        let mut weights: Option<Vec<f64>> = None;
        let mut norm: Option<Norm> = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                FusionError::Parse(format!(
                    "parameter `{}` has no value (expected NAME=VALUE)",
                    crate::redact::short(pair)
                ))
            })?;
            match key {
                "k" => k = Some(number("k", value)?),
                "w" | "weights" => {
                    weights = Some(
                        value
                            .split(',')
                            .map(|w| number("w", w))
                            .collect::<Result<_, _>>()?,
                    )
                }
                "norm" => norm = Some(value.parse()?),
                other => {
                    return Err(FusionError::Parse(format!(
                        "unknown fusion parameter `{}`: expected k (rrf), w (wsum) or norm",
                        crate::redact::short(other)
                    )))
                }
            }
        }
        let method = match name.to_ascii_lowercase().as_str() {
            "rrf" => Method::Rrf {
                k: k.unwrap_or(DEFAULT_RRF_K),
            },
            "combsum" | "comb_sum" => Method::CombSum,
            "combmnz" | "comb_mnz" => Method::CombMnz,
            "combmax" | "comb_max" => Method::CombMax,
            "wsum" | "weighted_sum" => Method::WeightedSum {
                weights: weights.take().unwrap_or_default(),
            },
            _ => {
                return Err(FusionError::Parse(format!(
                    "unknown fusion method `{}`: expected rrf, combsum, combmnz, combmax or wsum",
                    crate::redact::short(name)
                )))
            }
        };
        if k.is_some() && !matches!(method, Method::Rrf { .. }) {
            return Err(FusionError::Parse(format!(
                "`k` is rrf's parameter, not {}'s",
                method.name()
            )));
        }
        if weights.is_some() {
            return Err(FusionError::Parse(format!(
                "`w` is wsum's parameter, not {}'s",
                method.name()
            )));
        }
        let norm = match (&method, norm) {
            (Method::Rrf { .. }, None) => Norm::None,
            (_, None) => Norm::MinMax,
            (_, Some(n)) => n,
        };
        Fusion::new(method, norm)
    }
}

impl fmt::Display for Fusion {
    /// The canonical form, every parameter written: `rrf?k=60`, `combsum?norm=min-max`,
    /// `wsum?w=0.7,0.3&norm=min-max`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.method {
            Method::Rrf { k } => write!(f, "rrf?k={k}"),
            Method::WeightedSum { weights } => {
                let w: Vec<String> = weights.iter().map(|w| w.to_string()).collect();
                write!(f, "wsum?w={}&norm={}", w.join(","), self.norm.name())
            }
            m => write!(f, "{}?norm={}", m.name(), self.norm.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(items: &[(&str, f64)]) -> Vec<(String, Option<f64>)> {
        items
            .iter()
            .map(|(i, s)| (i.to_string(), Some(*s)))
            .collect()
    }

    fn scores(f: &Fusion, arms: &[Vec<(String, Option<f64>)>]) -> Vec<(String, f64)> {
        f.fuse(arms)
            .unwrap()
            .into_iter()
            .map(|d| (d.id, d.score))
            .collect()
    }

    #[test]
    fn rrf_by_hand() {
        // d1: ranks 1 and 2; d2: rank 2 in arm 1; d3: rank 1 in arm 2.
        let a = arm(&[("d1", 9.0), ("d2", 5.0)]);
        let b = arm(&[("d3", 0.9), ("d1", 0.8)]);
        let got = scores(&"rrf?k=60".parse().unwrap(), &[a, b]);
        assert_eq!(
            got,
            [
                ("d1".to_string(), 1.0 / 61.0 + 1.0 / 62.0),
                ("d3".to_string(), 1.0 / 61.0),
                ("d2".to_string(), 1.0 / 62.0),
            ]
        );
    }

    #[test]
    fn min_max_of_one_result_is_zero_and_combmnz_counts_arms() {
        let a = arm(&[("x", 3.0), ("y", 1.0)]);
        let b = arm(&[("x", 7.0)]);
        let f: Fusion = "combmnz".parse().unwrap();
        // x: (1 + 0) × 2 = 2; y: 0 × 1 = 0.
        assert_eq!(
            scores(&f, &[a.clone(), b.clone()]),
            [("x".to_string(), 2.0), ("y".to_string(), 0.0)]
        );
        let f: Fusion = "combmax?norm=none".parse().unwrap();
        assert_eq!(
            scores(&f, &[a, b]),
            [("x".to_string(), 7.0), ("y".to_string(), 1.0)]
        );
    }

    #[test]
    fn zscore_uses_the_population_deviation_and_rank_norm_counts_positions() {
        let a = arm(&[("p", 3.0), ("q", 1.0)]);
        let b = arm(&[("q", 5.0), ("r", 4.0), ("p", 0.0)]);
        let z = scores(
            &"combsum?norm=zscore".parse().unwrap(),
            &[a.clone(), b.clone()],
        );
        // Arm 1: mean 2, std 1 -> p 1, q -1. Arm 2: mean 3, std sqrt(14/3).
        let s2 = (14.0f64 / 3.0).sqrt();
        let want_p = 1.0 + (0.0 - 3.0) / s2;
        let want_q = -1.0 + (5.0 - 3.0) / s2;
        let want_r = 0.0 + (4.0 - 3.0) / s2;
        let map: BTreeMap<String, f64> = z.into_iter().collect();
        assert!((map["p"] - want_p).abs() < 1e-12);
        assert!((map["q"] - want_q).abs() < 1e-12);
        assert!((map["r"] - want_r).abs() < 1e-12);
        let r = scores(&"wsum?w=2,1&norm=rank".parse().unwrap(), &[a, b]);
        // p: 2·1 + 1·(1/3); q: 2·(1/2) + 1·1; r: 1·(2/3).
        let map: BTreeMap<String, f64> = r.into_iter().collect();
        assert_eq!(map["p"], 2.0 + (1.0 - 2.0 / 3.0));
        assert_eq!(map["q"], 2.0 * 0.5 + 1.0);
        assert_eq!(map["r"], 1.0 - 1.0 / 3.0);
    }

    #[test]
    fn ties_break_by_id_ascending_and_repeats_count_once() {
        let a = arm(&[("b", 1.0), ("a", 1.0), ("b", 0.5)]);
        let b = arm(&[("a", 1.0), ("b", 1.0)]);
        let got = "rrf".parse::<Fusion>().unwrap().fuse(&[a, b]).unwrap();
        assert_eq!(got[0].id, "a");
        assert_eq!(got[1].id, "b");
        assert_eq!(got[0].score, got[1].score);
        assert_eq!(got[1].arm_ranks, [Some(1), Some(2)]);
    }

    #[test]
    fn canonical_names_parse_back_and_bad_texts_say_why() {
        for text in [
            "rrf?k=60",
            "rrf?k=10.5",
            "combsum?norm=min-max",
            "combmnz?norm=zscore",
            "combmax?norm=rank",
            "combsum?norm=none",
            "wsum?w=0.7,0.3&norm=min-max",
        ] {
            let f: Fusion = text.parse().unwrap();
            assert_eq!(f.to_string(), text);
        }
        assert_eq!("rrf".parse::<Fusion>().unwrap().to_string(), "rrf?k=60");
        assert_eq!(
            "wsum?w=0.5,0.5&norm=zmuv"
                .parse::<Fusion>()
                .unwrap()
                .to_string(),
            "wsum?w=0.5,0.5&norm=zscore"
        );
        for (bad, says) in [
            ("borda", "unknown fusion method"),
            ("rrf?norm=min-max", "takes no norm"),
            ("rrf?k=-1", "k must be"),
            ("combsum?k=3", "rrf's parameter"),
            ("wsum", "needs its weights"),
            ("wsum?w=a,b", "must be a number"),
            ("combsum?norm=max", "unknown normalisation"),
            ("combsum?depth", "has no value"),
            ("combsum?x=1", "unknown fusion parameter"),
        ] {
            let e = bad.parse::<Fusion>().unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let f: Fusion = "wsum?w=1,2,3".parse().unwrap();
        assert!(matches!(
            f.check_arms(2),
            Err(FusionError::Weights {
                weights: 3,
                arms: 2
            })
        ));
        assert!(f.check_arms(3).is_ok());
    }

    #[test]
    fn an_arm_without_scores_is_refused_where_scores_are_read() {
        let a: Vec<(String, Option<f64>)> = vec![("x".into(), None)];
        let b = arm(&[("x", 1.0)]);
        let e = "combsum"
            .parse::<Fusion>()
            .unwrap()
            .fuse(&[a.clone(), b.clone()])
            .unwrap_err();
        assert!(matches!(e, FusionError::NoScore { arm: 1, .. }), "{e}");
        assert!("combsum?norm=rank"
            .parse::<Fusion>()
            .unwrap()
            .fuse(&[a.clone(), b.clone()])
            .is_ok());
        assert!("rrf".parse::<Fusion>().unwrap().fuse(&[a, b]).is_ok());
    }
}
