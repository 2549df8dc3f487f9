//! Reciprocal rank: `recip_rank` (RR) and RR@k.
//!
//! RR = 1 / rank of the first relevant document, 0 if none is retrieved. RR@k only looks at
//! the first k ranks (0 if the first relevant document is below k). trec_eval has no RR@k;
//! it is ir_measures' `RR@k`, and RR@k with k >= the number retrieved equals RR.

use super::ResRels;

/// RR@k (`k = u64::MAX` for RR).
pub fn reciprocal_rank_at(q: &ResRels, k: u64) -> f64 {
    let k = usize::try_from(k).unwrap_or(usize::MAX);
    match q.rels().iter().take(k).position(|&r| q.is_rel(r)) {
        Some(i) => 1.0 / (i + 1) as f64,
        None => 0.0,
    }
}

/// RR.
pub fn reciprocal_rank(q: &ResRels) -> f64 {
    reciprocal_rank_at(q, u64::MAX)
}
