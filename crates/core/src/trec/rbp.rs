//! Rank-biased precision: `rbp` (RBP) and `rbp_resid` (RBPResid) (Moffat & Zobel 2008).
//!
//! RBP(p) = (1 - p) * sum over ranks r of gain(r) * p^(r-1), with persistence p (default
//! 0.9). Gains are the relevance levels (or mapped, see [`super::gains`]) rescaled to [0, 1]
//! by `(g - min) / (max - min)` when any lies outside, min and max taken over the gains and 0.
//! Unjudged documents gain 0.
//!
//! RBPResid(p) is the residual: the most RBP could grow if every unjudged retrieved document
//! and everything below the ranking were relevant, `p^n + (1 - p) * sum over unjudged ranks r
//! of p^(r-1)` for n retrieved; 0 when no retrieved document is unjudged.

use super::gains::{GainMap, Gains};
use super::ResRels;

/// RBP with persistence `p` and gain mapping `map`.
pub fn rbp(q: &ResRels, p: f64, map: &GainMap) -> f64 {
    let gains = Gains::new(q.levels(), map).normalized_to_unit();
    let mut sum = 0.0;
    let mut cur_p = 1.0;
    for &r in q.rels() {
        let gain = gains.gain(r);
        if gain != 0.0 {
            sum += gain * cur_p;
        }
        cur_p *= p;
    }
    (1.0 - p) * sum
}

/// RBP residual with persistence `p`.
pub fn rbp_resid(q: &ResRels, p: f64) -> f64 {
    let mut unjudged = 0u64;
    let mut sum = 0.0;
    let mut cur_p = 1.0;
    for &r in q.rels() {
        if r < 0 {
            unjudged += 1;
            sum += cur_p;
        }
        cur_p *= p;
    }
    if unjudged > 0 {
        cur_p + (1.0 - p) * sum
    } else {
        0.0
    }
}
