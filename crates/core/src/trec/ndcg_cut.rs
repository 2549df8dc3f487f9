//! nDCG at a rank: `ndcg_cut.k` (nDCG@k).
//!
//! nDCG@k = DCG@k / IDCG@k with gain = the judged relevance level (no gain mapping; unjudged
//! documents gain 0) and discount log2(rank + 1). IDCG@k is the DCG of the first k ranks of
//! the ideal ranking (judged documents with level > 0, highest level first). The relevance
//! level (`-l`) does not apply. Under binary relevance this is the usual binary nDCG@k.
//! A query with no judged document of level > 0 scores 0.

use super::ResRels;

/// nDCG@k.
pub fn ndcg_at(q: &ResRels, k: u64) -> f64 {
    let k = usize::try_from(k).unwrap_or(usize::MAX);
    let mut dcg = 0.0;
    for (i, &r) in q.rels().iter().take(k).enumerate() {
        let gain = f64::from(r);
        if gain > 0.0 {
            dcg += gain / ((i + 2) as f64).log2();
        }
    }
    let mut ideal = 0.0;
    let mut i = 0usize;
    'levels: for &(level, count) in q.levels().iter().rev() {
        if level <= 0 {
            break;
        }
        for _ in 0..count {
            if i == k {
                break 'levels;
            }
            ideal += f64::from(level) / ((i + 2) as f64).log2();
            i += 1;
        }
    }
    if ideal > 0.0 {
        dcg / ideal
    } else {
        dcg
    }
}
