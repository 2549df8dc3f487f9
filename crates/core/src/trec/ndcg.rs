//! Normalized discounted cumulative gain over the whole ranking: `ndcg` (nDCG), `dcg` (DCG)
//! and `ideal_dcg` (IDCG).
//!
//! DCG = sum over ranks r of gain(r) / log2(r + 1). IDCG is the DCG of the ideal ranking
//! (judged documents by gain descending, positive gains only), over as many ranks as it
//! needs, however many documents were retrieved. nDCG = DCG / IDCG (0 when IDCG = 0).
//! Gains are the relevance levels unless mapped (`ndcg.1=3,2=9`), see [`super::gains`].
//! The relevance level (`-l`) does not apply: every positive gain counts.

use super::gains::{GainMap, Gains};
use super::ResRels;

/// DCG of the ranking and of the ideal ranking.
pub fn dcg_and_ideal(q: &ResRels, map: &GainMap) -> (f64, f64) {
    let gains = Gains::new(q.levels(), map);
    let mut ideal = gains.ideal();
    let (mut results_dcg, mut ideal_dcg) = (0.0, 0.0);
    let rels = q.rels();
    let mut i = 0usize;
    while i < rels.len() && ideal.current() > 0.0 {
        let gain = gains.gain(rels[i]);
        if gain != 0.0 {
            results_dcg += gain / ((i + 2) as f64).log2();
        }
        let ideal_gain = ideal.advance();
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    while i < rels.len() {
        let gain = gains.gain(rels[i]);
        if gain != 0.0 {
            results_dcg += gain / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    while ideal.current() > 0.0 {
        let ideal_gain = ideal.advance();
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    (results_dcg, ideal_dcg)
}

/// nDCG.
pub fn ndcg(q: &ResRels, map: &GainMap) -> f64 {
    let (dcg, ideal) = dcg_and_ideal(q, map);
    if ideal > 0.0 {
        dcg / ideal
    } else {
        0.0
    }
}

/// DCG.
pub fn dcg(q: &ResRels, map: &GainMap) -> f64 {
    dcg_and_ideal(q, map).0
}

/// IDCG.
pub fn ideal_dcg(q: &ResRels, map: &GainMap) -> f64 {
    dcg_and_ideal(q, map).1
}
