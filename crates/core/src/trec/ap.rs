//! Average precision: `map` (AP), `map_cut.k` (AP@k) and `gm_map` (GMAP).
//!
//! AP = (1 / R) * sum over the relevant retrieved documents at rank r of P@r, where R is the
//! number of relevant documents judged for the query (retrieved or not). A query that
//! retrieves no relevant document scores 0.
//!
//! AP@k is the same sum restricted to ranks <= k, still divided by R (trec_eval's
//! `map_cut`, ir_measures' `AP@k`); a query with R = 0 scores 0.
//!
//! GMAP has the per-query value of AP; its summary is the geometric mean
//! `exp(mean(ln(max(AP, 0.00001))))`.

use super::ResRels;

/// Sum of P@r over the relevant documents in the first `k` ranks, and how many there were.
fn precision_sum(q: &ResRels, k: usize) -> (f64, u64) {
    let mut found = 0u64;
    let mut sum = 0.0;
    for (i, &r) in q.rels().iter().take(k).enumerate() {
        if q.is_rel(r) {
            found += 1;
            sum += found as f64 / (i + 1) as f64;
        }
    }
    (sum, found)
}

/// AP over the whole ranking.
pub fn average_precision(q: &ResRels) -> f64 {
    let (sum, found) = precision_sum(q, usize::MAX);
    if found > 0 {
        sum / q.num_rel() as f64
    } else {
        0.0
    }
}

/// AP@k.
pub fn average_precision_at(q: &ResRels, k: u64) -> f64 {
    if q.num_rel() == 0 {
        return 0.0;
    }
    let (sum, _) = precision_sum(q, usize::try_from(k).unwrap_or(usize::MAX));
    sum / q.num_rel() as f64
}
