//! Success at a rank: `success.k` (Success@k).
//!
//! Success@k = 1 if any relevant document is in the first k ranks, else 0.

use super::ResRels;

/// Success@k.
pub fn success_at(q: &ResRels, k: u64) -> f64 {
    if q.relevant_in_top(k) > 0 {
        1.0
    } else {
        0.0
    }
}
