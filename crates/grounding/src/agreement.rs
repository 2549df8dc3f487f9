//! Agreement between two raters on support verdicts: Cohen's kappa and the confusion matrix.

use crate::model::{CaseSet, Support};
use crate::review::ReviewRecord;
use crate::sheet::effective_support;
use serde::Serialize;

/// The four verdicts in matrix order.
pub const VERDICTS: [Support; 4] = [
    Support::Supported,
    Support::PartiallySupported,
    Support::Unsupported,
    Support::NotEvaluable,
];

fn idx(s: Support) -> usize {
    match s {
        Support::Supported => 0,
        Support::PartiallySupported => 1,
        Support::Unsupported => 2,
        Support::NotEvaluable => 3,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    pub pairs: usize,
    /// Observed agreement p_o.
    pub observed: Option<f64>,
    /// Chance agreement p_e from the two raters' marginals.
    pub expected: Option<f64>,
    /// κ = (p_o − p_e) / (1 − p_e); `None` with no pairs, or when p_e = 1 (both raters used
    /// one and the same label throughout: κ undefined).
    pub kappa: Option<f64>,
    /// `matrix[a][b]`: first rater said `VERDICTS[a]`, second `VERDICTS[b]`.
    pub matrix: [[usize; 4]; 4],
}

/// Cohen's kappa over (first rater, second rater) pairs.
pub fn cohen_kappa(pairs: &[(Support, Support)]) -> Agreement {
    let mut matrix = [[0usize; 4]; 4];
    for (a, b) in pairs {
        matrix[idx(*a)][idx(*b)] += 1;
    }
    let n = pairs.len();
    if n == 0 {
        return Agreement {
            pairs: 0,
            observed: None,
            expected: None,
            kappa: None,
            matrix,
        };
    }
    let nf = n as f64;
    let po = (0..4).map(|i| matrix[i][i]).sum::<usize>() as f64 / nf;
    let pe = (0..4)
        .map(|i| {
            let row: usize = matrix[i].iter().sum();
            let col: usize = (0..4).map(|j| matrix[j][i]).sum();
            (row as f64 / nf) * (col as f64 / nf)
        })
        .sum::<f64>();
    let kappa = ((1.0 - pe).abs() > 1e-12).then(|| (po - pe) / (1.0 - pe));
    Agreement {
        pairs: n,
        observed: Some(po),
        expected: Some(pe),
        kappa,
        matrix,
    }
}

/// Pairs (verdict in force, later review by a different reviewer) for every annex in the log.
pub fn reviewer_pairs(set: &CaseSet, reviews: &[ReviewRecord]) -> Vec<(Support, Support)> {
    let mut out = Vec::new();
    for case in &set.cases {
        for a in &case.answers {
            for c in &a.claims {
                let Some(first) = effective_support(c, reviews) else {
                    continue;
                };
                let first_reviewer = match &c.support {
                    Some(_) => c.reviewer.clone(),
                    None => reviews
                        .iter()
                        .find(|r| r.claim == c.id)
                        .map(|r| r.reviewer.clone()),
                };
                let skip = usize::from(c.support.is_none());
                for r in reviews.iter().filter(|r| r.claim == c.id).skip(skip) {
                    if Some(&r.reviewer) != first_reviewer.as_ref() {
                        out.push((first, r.support));
                    }
                }
            }
        }
    }
    out
}
