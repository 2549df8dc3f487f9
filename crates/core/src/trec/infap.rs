//! Inferred average precision: `infAP` (Yilmaz & Aslam, CIKM 2006).
//!
//! For a sampled pool: documents not in the qrels are skipped; documents listed with a
//! negative level are in the pool but unsampled. Each relevant retrieved document at 0-based
//! rank j contributes 1 when j = 0, else
//! `1/(j+1) + (j/(j+1)) * ((rel + nonrel + unsampled) / j) * ((rel + e) / (rel + nonrel + 2e))`
//! where rel, nonrel and unsampled count the documents of each kind above it and
//! e = 0.00001. infAP is the sum divided by R (0 when R = 0). With a fully judged pool it
//! equals AP.

use super::{ResRels, NONPOOL, UNJUDGED};

const EPSILON: f64 = 0.00001;

/// infAP.
pub fn inferred_ap(q: &ResRels) -> f64 {
    let level = q.relevance_level();
    let (mut nonrel, mut rel, mut unjudged) = (0i64, 0i64, 0i64);
    let mut sum = 0.0;
    for (j, &r) in q.rels().iter().enumerate() {
        if r == NONPOOL {
            continue;
        }
        if r == UNJUDGED {
            unjudged += 1;
            continue;
        }
        if r >= 0 && i64::from(r) < level {
            nonrel += 1;
            continue;
        }
        rel += 1;
        if j == 0 {
            sum += 1.0;
        } else {
            let fj = j as f64;
            sum += 1.0 / (fj + 1.0)
                + (fj / (fj + 1.0))
                    * ((rel - 1 + nonrel + unjudged) as f64 / fj)
                    * (((rel - 1) as f64 + EPSILON) / ((rel - 1 + nonrel) as f64 + 2.0 * EPSILON));
        }
    }
    if q.num_rel() > 0 {
        sum /= q.num_rel() as f64;
    }
    sum
}
