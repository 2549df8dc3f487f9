//! `G`: gain with a cost-based discount (trec_eval's experimental G measure).
//!
//! Walking down the ranking, `sum_results` accumulates the gains retrieved and `sum_cost`
//! accumulates, per rank, the larger of the ideal ranking's gain at that rank and 1 (1 once
//! the ideal ranking is exhausted). A document with gain g adds
//! `g / log2(2 + sum_cost - sum_results)`. G is that sum divided by the total ideal gain
//! (0 if it is 0). Gains as in [`super::gains`].

use super::gains::{GainMap, Gains};
use super::ResRels;

/// G with the given gain mapping.
pub fn g(q: &ResRels, map: &GainMap) -> f64 {
    let gains = Gains::new(q.levels(), map);
    let mut ideal = gains.ideal();
    let min_cost = 1.0;
    let (mut results_g, mut sum_results, mut sum_ideal, mut sum_cost) = (0.0, 0.0, 0.0, 0.0);
    let rels = q.rels();
    let mut i = 0;
    while i < rels.len() && ideal.current() > 0.0 {
        let gain = gains.gain(rels[i]);
        sum_results += gain;
        let ideal_gain = ideal.advance();
        if ideal_gain > 0.0 {
            sum_ideal += ideal_gain;
        }
        sum_cost += if ideal_gain >= min_cost {
            ideal_gain
        } else {
            min_cost
        };
        if gain != 0.0 {
            results_g += gain / (2.0 + sum_cost - sum_results).log2();
        }
        i += 1;
    }
    while i < rels.len() {
        let gain = gains.gain(rels[i]);
        sum_results += gain;
        sum_cost += min_cost;
        if gain != 0.0 {
            results_g += gain / (2.0 + sum_cost - sum_results).log2();
        }
        i += 1;
    }
    while ideal.current() > 0.0 {
        let ideal_gain = ideal.advance();
        if ideal_gain > 0.0 {
            sum_ideal += ideal_gain;
        }
    }
    if sum_ideal > 0.0 {
        results_g / sum_ideal
    } else {
        0.0
    }
}
