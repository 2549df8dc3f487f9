//! Precision at a rank: `P.k` (P@k) and `relative_P.k` (RelP@k).
//!
//! P@k = relevant documents in the first k ranks / k. The denominator is k even when fewer
//! than k documents are retrieved (missing ranks count as non-relevant).
//!
//! RelP@k = relevant in the first k / min(k, R): precision relative to the best achievable;
//! 0 when R = 0.

use super::ResRels;

/// P@k.
pub fn precision_at(q: &ResRels, k: u64) -> f64 {
    q.relevant_in_top(k) as f64 / k as f64
}

/// RelP@k.
pub fn relative_precision_at(q: &ResRels, k: u64) -> f64 {
    if q.num_rel() == 0 {
        return 0.0;
    }
    q.relevant_in_top(k) as f64 / k.min(q.num_rel()) as f64
}
