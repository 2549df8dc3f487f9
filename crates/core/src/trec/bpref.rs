//! Binary preference: `bpref` (Bpref) and `gm_bpref` (GMBpref).
//!
//! Only judged documents take part: retrieved documents that are not judged are skipped.
//! With R relevant and N judged non-relevant documents (level >= 0 and below the relevance
//! level), each relevant retrieved document r contributes
//! `1 - min(n_r, R) / min(N, R)`, where n_r is the number of judged non-relevant documents
//! ranked above it (1 when n_r = 0). Bpref is the sum divided by R (0 when R = 0).
//!
//! GMBpref has the per-query value of Bpref; its summary is the geometric mean
//! `exp(mean(ln(max(bpref, 0.00001))))`.

use super::{ResRels, NONPOOL, UNJUDGED};

/// Bpref.
pub fn bpref(q: &ResRels) -> f64 {
    let level = q.relevance_level();
    let num_nonrel: u64 = q
        .levels()
        .iter()
        .filter(|(l, _)| i64::from(*l) < level)
        .map(|(_, n)| n)
        .sum();
    let num_rel = q.num_rel();
    let mut nonrel_so_far = 0u64;
    let mut sum = 0.0;
    for &r in q.rels() {
        if r == NONPOOL || r == UNJUDGED {
            continue;
        }
        if r >= 0 && i64::from(r) < level {
            nonrel_so_far += 1;
        } else if nonrel_so_far > 0 {
            sum += 1.0 - nonrel_so_far.min(num_rel) as f64 / num_nonrel.min(num_rel) as f64;
        } else {
            sum += 1.0;
        }
    }
    if num_rel > 0 {
        sum /= num_rel as f64;
    }
    sum
}
