//! Tuning a fusion without overfitting the golden set: the grid of settings, the split of
//! the cases into a training and a held-out part (or k folds), the choice on the training
//! part, and the paired significance of the held-out differences. Pure: the caller runs the
//! arms and scores each setting per case.
//!
//! Rules, each deterministic:
//! - a grid value list is `a,b,c` or `start:end:step` (end included when the steps reach it,
//!   values rounded to the step's decimals);
//! - a parameter applies to the methods that take it (`k` to rrf, `w` to wsum, `norm` to
//!   the others); `method=rrf,wsum` sweeps methods; with two arms `w=x` means `w=x,1-x`;
//! - the cases are shuffled by the seed ([`crate::compare::rng::Rng`], Fisher–Yates); a
//!   holdout of share `f` is the first `round(f·n)` of that order, k folds deal it round-robin;
//! - the chosen setting has the highest mean training score; ties go to the first in grid
//!   order.

use std::collections::BTreeMap;

use crate::compare::rng::Rng;
use crate::fusion::Fusion;

/// A parameter swept and its values, as written (`k` → `["10", "30"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridParam {
    pub name: String,
    pub values: Vec<String>,
}

/// Parses `NAME=a,b,c` or `NAME=start:end:step`.
pub fn parse_grid(spec: &str) -> Result<GridParam, String> {
    let (name, values) = spec.split_once('=').ok_or_else(|| {
        format!(
            "expected NAME=VALUES (`k=10,30,60` or `w=0.3:0.9:0.1`), got `{}`",
            crate::redact::short(spec)
        )
    })?;
    let name = name.trim();
    if !["k", "w", "norm", "method"].contains(&name) {
        return Err(format!(
            "unknown grid parameter `{}`: expected k (rrf), w (wsum), norm or method",
            crate::redact::short(name)
        ));
    }
    let values = values.trim();
    let list: Vec<String> = if values.contains(':') {
        let parts: Vec<&str> = values.split(':').collect();
        let [start, end, step] = parts.as_slice() else {
            return Err(format!("{name}: a range is start:end:step, got `{values}`"));
        };
        let number = |s: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("{name}: `{s}` is not a number"))
        };
        let (a, b, st) = (number(start)?, number(end)?, number(step)?);
        if st <= 0.0 || b < a {
            return Err(format!(
                "{name}: a range needs start <= end and a positive step, got `{values}`"
            ));
        }
        let decimals = step.trim().split_once('.').map_or(0, |(_, d)| d.len());
        let count = ((b - a) / st + 1e-9).floor() as usize + 1;
        if count > 1000 {
            return Err(format!(
                "{name}: the range has {count} values (at most 1000)"
            ));
        }
        (0..count)
            .map(|i| format!("{:.*}", decimals, a + st * i as f64))
            .collect()
    } else {
        values
            .split(',')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect()
    };
    if list.is_empty() {
        return Err(format!("{name}: no values"));
    }
    Ok(GridParam {
        name: name.to_owned(),
        values: list,
    })
}

/// The settings of the sweep: every combination of the grid's values for each method
/// (the base fusion's, or those of a `method` grid), over the base fusion's other
/// parameters, in grid order. Each is checked as a fusion of `arms` arms.
pub fn settings(base: &str, grid: &[GridParam], arms: usize) -> Result<Vec<Fusion>, String> {
    let (base_method, base_query) = base.split_once('?').unwrap_or((base, ""));
    let mut base_params: BTreeMap<String, String> = BTreeMap::new();
    for pair in base_query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        base_params.insert(k.to_owned(), v.to_owned());
    }
    let methods: Vec<String> = match grid.iter().find(|g| g.name == "method") {
        Some(g) => g.values.iter().map(|m| m.to_ascii_lowercase()).collect(),
        None => vec![base_method.to_ascii_lowercase()],
    };
    let takes = |method: &str, param: &str| match param {
        "k" => method == "rrf",
        "w" => method == "wsum",
        "norm" => method != "rrf",
        _ => false,
    };
    for g in grid.iter().filter(|g| g.name != "method") {
        if !methods.iter().any(|m| takes(m, &g.name)) {
            return Err(format!(
                "`{}` is a parameter of {} only, and the sweep's methods are {}: add `--grid method=…` or drop it",
                g.name,
                match g.name.as_str() {
                    "k" => "rrf",
                    "w" => "wsum",
                    _ => "combsum, combmnz, combmax and wsum",
                },
                methods.join(", ")
            ));
        }
    }
    let mut out = Vec::new();
    for method in &methods {
        let params: Vec<&GridParam> = grid
            .iter()
            .filter(|g| g.name != "method" && takes(method, &g.name))
            .collect();
        let mut combos: Vec<Vec<(&str, &str)>> = vec![Vec::new()];
        for g in &params {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    g.values.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((g.name.as_str(), v.as_str()));
                        c
                    })
                })
                .collect();
        }
        for combo in combos {
            let mut p: BTreeMap<String, String> = base_params
                .iter()
                .filter(|(k, _)| takes(method, k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (k, v) in combo {
                let v = if k == "w" && arms == 2 && !v.contains(',') {
                    let x: f64 = v.parse().map_err(|_| format!("w: `{v}` is not a number"))?;
                    format!("{v},{}", trim_float(1.0 - x))
                } else {
                    v.to_owned()
                };
                p.insert(k.to_owned(), v);
            }
            let query: Vec<String> = p.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let text = if query.is_empty() {
                method.clone()
            } else {
                format!("{method}?{}", query.join("&"))
            };
            let fusion: Fusion = text.parse().map_err(|e| format!("`{text}`: {e}"))?;
            fusion
                .check_arms(arms)
                .map_err(|e| format!("`{text}`: {e}"))?;
            if !out.contains(&fusion) {
                out.push(fusion);
            }
        }
    }
    Ok(out)
}

/// `1 - x` written without float noise (`0.7`, not `0.7000000000000001`).
fn trim_float(v: f64) -> String {
    let s = format!("{:.9}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// How the cases are split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Split {
    /// A share of the cases held out (0 < share < 1).
    Holdout(f64),
    /// k folds (k ≥ 2): each case is held out once, scored by the setting chosen on the others.
    Folds(usize),
}

/// Per case (in input order), the fold it is held out in: `0` or nothing for the training
/// part of a holdout (`Some(0)` held out, `None` training); for k folds, `Some(fold)`.
pub fn assign(n: usize, split: Split, seed: u64) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = Rng::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    let mut out = vec![None; n];
    match split {
        Split::Holdout(share) => {
            let held =
                ((share * n as f64).round() as usize).clamp(1.min(n), n.saturating_sub(1).max(1));
            for &i in order.iter().take(held) {
                out[i] = Some(0);
            }
        }
        Split::Folds(k) => {
            for (pos, &i) in order.iter().enumerate() {
                out[i] = Some(pos % k.max(1));
            }
        }
    }
    out
}

/// The mean of `scores` over the cases `keep` selects (`None` without any).
pub fn mean_over(scores: &[f64], keep: &dyn Fn(usize) -> bool) -> Option<f64> {
    let v: Vec<f64> = (0..scores.len())
        .filter(|&i| keep(i))
        .map(|i| scores[i])
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The index of the best of `candidates` (each a per-case score list) on the cases `keep`
/// selects: highest mean, ties to the first.
pub fn best(candidates: &[Vec<f64>], keep: &dyn Fn(usize) -> bool) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for (i, c) in candidates.iter().enumerate() {
        let m = mean_over(c, keep).unwrap_or(f64::NEG_INFINITY);
        if m > best.1 {
            best = (i, m);
        }
    }
    best.0
}

/// Per case, the held-out score of "choose the best of `candidates` on the training part":
/// for a holdout, the chosen candidate's scores on the held-out cases (`None` on the
/// training ones); for folds, each case scored by the candidate chosen without its fold.
/// Also the candidate chosen per fold (one for a holdout).
pub fn held_out(
    candidates: &[Vec<f64>],
    folds: &[Option<usize>],
    split: Split,
) -> (Vec<Option<f64>>, Vec<usize>) {
    let n = folds.len();
    let fold_count = match split {
        Split::Holdout(_) => 1,
        Split::Folds(k) => k,
    };
    let mut out = vec![None; n];
    let mut chosen = Vec::with_capacity(fold_count);
    for f in 0..fold_count {
        let c = best(candidates, &|i| folds[i] != Some(f));
        chosen.push(c);
        for i in 0..n {
            if folds[i] == Some(f) {
                out[i] = Some(candidates[c][i]);
            }
        }
    }
    (out, chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_parse_lists_and_ranges() {
        let g = parse_grid("k=10,30,60").unwrap();
        assert_eq!(g.values, ["10", "30", "60"]);
        let g = parse_grid("w=0.3:0.9:0.1").unwrap();
        assert_eq!(g.values, ["0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]);
        assert!(parse_grid("x=1")
            .unwrap_err()
            .contains("unknown grid parameter"));
        assert!(parse_grid("w=0.9:0.3:0.1").is_err());
    }

    #[test]
    fn settings_cover_each_method_with_its_own_parameters() {
        let grid = [
            parse_grid("method=rrf,wsum").unwrap(),
            parse_grid("k=10,60").unwrap(),
            parse_grid("w=0.3,0.7").unwrap(),
        ];
        let s: Vec<String> = settings("rrf", &grid, 2)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(s[0], "rrf?k=10");
        assert!(s[2].starts_with("wsum?w=0.3,0.7"), "{s:?}");
        let err = settings("rrf", &[parse_grid("w=0.5").unwrap()], 2).unwrap_err();
        assert!(err.contains("method="), "{err}");
    }

    #[test]
    fn splits_are_seeded_and_the_held_out_part_scores_the_training_choice() {
        let a = assign(10, Split::Holdout(0.3), 7);
        assert_eq!(a.iter().filter(|x| x.is_some()).count(), 3);
        assert_eq!(a, assign(10, Split::Holdout(0.3), 7));
        let f = assign(10, Split::Folds(5), 7);
        assert!((0..5).all(|k| f.iter().filter(|x| **x == Some(k)).count() == 2));
        // Candidate 1 wins everywhere but on case 0.
        let c = vec![vec![1.0; 10], {
            let mut v = vec![2.0; 10];
            v[0] = 0.0;
            v
        }];
        let (scores, chosen) = held_out(&c, &f, Split::Folds(5));
        assert!(chosen.iter().all(|&x| x == 1));
        assert_eq!(scores[0], Some(0.0));
    }
}

/// The per-case score a tune maximises (each from the exam's per-case results at the
/// case's K).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// nDCG@K.
    Ndcg,
    /// Recall@K.
    Recall,
    /// Reciprocal rank (MRR when averaged).
    Mrr,
    /// The Quality Score (0..100).
    Quality,
}

impl Objective {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Ndcg => "ndcg",
            Objective::Recall => "recall",
            Objective::Mrr => "mrr",
            Objective::Quality => "quality",
        }
    }

    /// The case's score.
    pub fn of(self, c: &crate::exam::CaseResult) -> f64 {
        match self {
            Objective::Ndcg => c.ndcg,
            Objective::Recall => c.recall,
            Objective::Mrr => c.reciprocal_rank,
            Objective::Quality => c.quality,
        }
    }
}

impl std::str::FromStr for Objective {
    type Err = String;
    fn from_str(s: &str) -> Result<Objective, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ndcg" => Ok(Objective::Ndcg),
            "recall" => Ok(Objective::Recall),
            "mrr" => Ok(Objective::Mrr),
            "quality" | "qs" => Ok(Objective::Quality),
            _ => Err(format!(
                "expected ndcg, recall, mrr or quality, got `{}`",
                crate::redact::short(s)
            )),
        }
    }
}

/// One setting of the sweep and how it scored.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SettingScore {
    /// The fusion (`rrf?k=30`).
    pub fusion: String,
    /// Mean score over all the cases (for reading only: the choice is made on the
    /// training part).
    pub mean_all: f64,
    /// Mean over the training part (for k folds: the mean over folds of the mean on the
    /// other folds).
    pub mean_training: f64,
}

/// The chosen setting against another ranking, on the held-out cases.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeldOutComparison {
    /// What it is compared with (`current rrf?k=60`, `arm 1 index:kb?mode=bm25`).
    pub against: String,
    /// Its held-out mean.
    pub mean: f64,
    /// The tuned procedure's held-out mean minus this one.
    pub delta: f64,
    /// The same difference on the training part.
    pub delta_training: f64,
    /// Paired sign-flip randomisation test of the held-out per-case differences.
    pub test: crate::compare::stats::PermutationTest,
}

/// What `veredicto tune` found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TuneReport {
    /// The fusion as given (`rrf?k=60`): the current setting.
    pub current: String,
    /// The arms, in order.
    pub arms: Vec<String>,
    /// Cases in the golden set.
    pub cases: usize,
    /// The objective.
    pub objective: Objective,
    /// `holdout` or `folds`.
    pub split: String,
    /// The held-out share (holdout) or the number of folds.
    pub split_value: f64,
    /// Cases held out (holdout), or all of them (folds: each is held out once).
    pub held_out_cases: usize,
    /// The seed of the split and of the tests.
    pub seed: u64,
    /// Every setting swept, in grid order.
    pub settings: Vec<SettingScore>,
    /// The setting chosen on the training part (for k folds: on all the cases), the one
    /// `--write-policy` writes.
    pub chosen: String,
    /// For k folds, the setting chosen without each fold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chosen_per_fold: Vec<String>,
    /// The held-out mean of the tuned procedure (the chosen setting's scores on the
    /// held-out part; for k folds each case scored by the setting chosen without its fold).
    pub held_out_mean: f64,
    /// Against the current setting, then the best single arm (chosen on the training part).
    pub comparisons: Vec<HeldOutComparison>,
    /// Set when the chosen setting beats the current one on the training part but not on
    /// the held-out part.
    pub training_only: bool,
}
