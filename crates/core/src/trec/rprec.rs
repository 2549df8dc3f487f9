//! R-precision: `Rprec` and `Rprec_mult.x` (RprecMult@x).
//!
//! Rprec = P@R, the precision after R documents, where R is the number of relevant documents
//! (judged). If fewer than R documents are retrieved, the relevant ones among them are still
//! divided by R. A query with R = 0 (or nothing retrieved) scores 0.
//!
//! RprecMult@x = precision at cut-off c = trunc(x * R + 0.9) (trec_eval's rounding): the
//! relevant documents among the first c divided by c; if fewer than c documents were
//! retrieved, all relevant retrieved divided by c; 0 when c = 0.

use super::ResRels;

/// Rprec.
pub fn r_precision(q: &ResRels) -> f64 {
    let n = q.num_ret().min(q.num_rel());
    if n == 0 {
        return 0.0;
    }
    q.relevant_in_top(n) as f64 / q.num_rel() as f64
}

/// Rprec_mult for one multiplier.
pub fn r_precision_mult(q: &ResRels, mult: f64) -> f64 {
    let cut = (mult * q.num_rel() as f64 + 0.9) as i64;
    let num_ret = q.num_ret() as i64;
    if cut > num_ret {
        return q.num_rel_ret() as f64 / cut as f64;
    }
    // Walk up from the bottom of the ranking, as trec_eval does.
    let mut rel_so_far = q.num_rel_ret() as i64;
    let mut i = num_ret;
    while i > 0 && rel_so_far > 0 {
        if i == cut {
            return rel_so_far as f64 / i as f64;
        }
        if q.is_rel(q.rels()[(i - 1) as usize]) {
            rel_so_far -= 1;
        }
        i -= 1;
    }
    0.0
}
