//! Binary G: `binG`.
//!
//! Each relevant document at 0-based rank i, the n-th relevant one, adds
//! `1 / log2(2 + (i + 1) - n)`: its discount grows only with the non-relevant documents
//! above it. The sum is divided by R; 0 if no relevant document is retrieved.

use super::ResRels;

/// binG.
pub fn bin_g(q: &ResRels) -> f64 {
    let mut found = 0i64;
    let mut sum = 0.0;
    for (i, &r) in q.rels().iter().enumerate() {
        if q.is_rel(r) {
            found += 1;
            sum += 1.0 / ((3 + i as i64 - found) as f64).log2();
        }
    }
    if found > 0 {
        sum / q.num_rel() as f64
    } else {
        0.0
    }
}
