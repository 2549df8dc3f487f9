//! Unjudged documents at a rank: `unj.k` (Unjudged@k).
//!
//! Unjudged@k = retrieved documents in the first k ranks that are not judged (not in the
//! qrels, or listed with a negative level) / k. The denominator is k even when fewer than k
//! documents are retrieved.

use super::{ResRels, NONPOOL, UNJUDGED};

/// Unjudged@k.
pub fn unjudged_at(q: &ResRels, k: u64) -> f64 {
    let k_usize = usize::try_from(k).unwrap_or(usize::MAX);
    let n = q
        .rels()
        .iter()
        .take(k_usize)
        .filter(|&&r| r == NONPOOL || r == UNJUDGED)
        .count();
    n as f64 / k as f64
}
