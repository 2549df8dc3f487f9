//! `ndcg_rel` (nDCGRel): nDCG averaged over the relevant documents.
//!
//! At each retrieved document with a positive gain, take nDCG at that rank (DCG so far over
//! IDCG so far); each relevant document not retrieved (in the ideal ranking but not in the
//! run) contributes the final DCG / IDCG. The value is the mean over the ideal ranking's
//! documents with positive gain; 0 when that sum is not positive. Gains as in
//! [`super::gains`].

use super::gains::{GainMap, Gains};
use super::ResRels;

/// ndcg_rel.
pub fn ndcg_rel(q: &ResRels, map: &GainMap) -> f64 {
    let gains = Gains::new(q.levels(), map);
    let mut ideal = gains.ideal();
    let (mut results_dcg, mut ideal_dcg, mut sum) = (0.0, 0.0, 0.0);
    let (mut num_rel_ret, mut num_rel) = (0i64, 0i64);
    let rels = q.rels();
    let mut i = 0usize;
    while i < rels.len() && ideal.current() > 0.0 {
        let gain = gains.gain(rels[i]);
        if gain != 0.0 {
            results_dcg += gain / ((i + 2) as f64).log2();
        }
        let ideal_gain = ideal.advance();
        if ideal_gain > 0.0 {
            num_rel += 1;
            ideal_dcg += ideal_gain / ((i + 2) as f64).log2();
        }
        if gain > 0.0 {
            sum += results_dcg / ideal_dcg;
            num_rel_ret += 1;
        }
        i += 1;
    }
    while i < rels.len() {
        let gain = gains.gain(rels[i]);
        if gain != 0.0 {
            results_dcg += gain / ((i + 2) as f64).log2();
        }
        if gain > 0.0 {
            sum += results_dcg / ideal_dcg;
            num_rel_ret += 1;
        }
        i += 1;
    }
    while ideal.current() > 0.0 {
        let ideal_gain = ideal.advance();
        if ideal_gain > 0.0 {
            num_rel += 1;
            ideal_dcg += ideal_gain / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    sum += (num_rel - num_rel_ret) as f64 * results_dcg / ideal_dcg;
    if sum > 0.0 {
        sum / num_rel as f64
    } else {
        0.0
    }
}
