//! `Rndcg` (RnDCG): nDCG averaged over the boundaries between relevance levels of the ideal
//! ranking.
//!
//! nDCG is sampled at every rank where the ideal ranking's gain changes (from one level to
//! the next, and where it runs out), plus at the end of the retrieved list if the ranking is
//! longer than the ideal one; RnDCG is the mean of those samples. 0 when R = 0.
//! Gains as in [`super::gains`].

use super::gains::{GainMap, Gains};
use super::ResRels;

/// Rndcg.
pub fn rndcg(q: &ResRels, map: &GainMap) -> f64 {
    let gains = Gains::new(q.levels(), map);
    if q.num_rel() == 0 {
        return 0.0;
    }
    let mut ideal = gains.ideal();
    let mut old_gain = ideal.current();
    let (mut results_dcg, mut ideal_dcg, mut sum) = (0.0, 0.0, 0.0);
    let mut samples = 0i64;
    let rels = q.rels();
    let mut i = 0usize;
    while i < rels.len() && ideal.current() > 0.0 {
        let gain = gains.gain(rels[i]);
        let ideal_gain = ideal.advance();
        if old_gain != ideal_gain {
            if ideal_dcg > 0.0 {
                sum += results_dcg / ideal_dcg;
                samples += 1;
            }
            old_gain = ideal_gain;
        }
        if gain != 0.0 {
            results_dcg += gain / ((i + 2) as f64).log2();
        }
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    if i < rels.len() {
        while i < rels.len() {
            let gain = gains.gain(rels[i]);
            if gain != 0.0 {
                results_dcg += gain / ((i + 2) as f64).log2();
            }
            i += 1;
        }
        if ideal_dcg > 0.0 {
            sum += results_dcg / ideal_dcg;
            samples += 1;
        }
    }
    while ideal.current() > 0.0 {
        let ideal_gain = ideal.advance();
        if old_gain != ideal_gain {
            if ideal_dcg > 0.0 {
                sum += results_dcg / ideal_dcg;
                samples += 1;
            }
            old_gain = ideal_gain;
        }
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / ((i + 2) as f64).log2();
        }
        i += 1;
    }
    sum / samples as f64
}
