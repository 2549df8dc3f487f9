//! Recall at a rank: `recall.k` (R@k).
//!
//! R@k = relevant documents in the first k ranks / R, where R is the number of relevant
//! documents judged for the query; 0 when R = 0.

use super::ResRels;

/// R@k.
pub fn recall_at(q: &ResRels, k: u64) -> f64 {
    if q.num_rel() == 0 {
        return 0.0;
    }
    q.relevant_in_top(k) as f64 / q.num_rel() as f64
}
