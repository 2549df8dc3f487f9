//! Set utility: `utility.a,b,c,d` (Utility).
//!
//! utility = a * (relevant retrieved) + b * (non-relevant retrieved) + c * (relevant not
//! retrieved) + d * (non-relevant not retrieved), where "non-relevant not retrieved" is
//! `N + relevant retrieved - retrieved - R` with N the collection size (`-N`, default 0).
//! Default coefficients (1, -1, 0, 0). Averaged over queries.

use super::ResRels;

/// utility with coefficients `[a, b, c, d]`.
pub fn utility(q: &ResRels, coef: &[f64; 4]) -> f64 {
    let rel_ret = q.num_rel_ret() as i64;
    let ret = q.num_ret() as i64;
    let rel = q.num_rel() as i64;
    coef[0] * rel_ret as f64
        + coef[1] * (ret - rel_ret) as f64
        + coef[2] * (rel - rel_ret) as f64
        + coef[3] * (q.num_docs_in_coll() + rel_ret - ret - rel) as f64
}
