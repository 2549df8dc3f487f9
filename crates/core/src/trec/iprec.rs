//! Interpolated precision: `iprec_at_recall.x` (IPrec@x) and `11pt_avg` (11ptAvg).
//!
//! The interpolated precision at recall x is the highest precision at any rank where recall
//! is >= x. trec_eval turns x into a number of relevant documents c = round(x * R) (half away
//! from zero) and takes the maximum of P@r over the ranks r at or below the c-th relevant
//! document; recall levels that the ranking never reaches (c > relevant retrieved) score 0.
//! With c = 0 it is the highest precision anywhere.
//!
//! 11ptAvg is the mean of the interpolated precisions at its recall levels (by default 0.0,
//! 0.1, ..., 1.0). Levels given out of ascending order are evaluated the way trec_eval's
//! walk through them does.
//!
//! An empty ranking (possible with `-J` or `-M 0`) scores 0; trec_eval computes 0/0 there and
//! prints `-nan`.

use super::ResRels;

/// Interpolated precision at each cut-off (in relevant documents), in the given order;
/// cut-offs are matched walking down the ranking, as trec_eval does.
fn interpolated(q: &ResRels, cutoffs: &[i64]) -> Vec<f64> {
    let mut values = vec![0.0; cutoffs.len()];
    if q.num_ret() == 0 {
        return values;
    }
    let num_rel_ret = q.num_rel_ret() as i64;
    let mut cur = cutoffs.len() as isize - 1;
    while cur >= 0 && cutoffs[cur as usize] > num_rel_ret {
        cur -= 1;
    }
    let num_ret = q.num_ret() as i64;
    let mut int_precis = num_rel_ret as f64 / num_ret as f64;
    let mut rel_so_far = num_rel_ret;
    let mut i = num_ret;
    while i > 0 && rel_so_far > 0 {
        let precis = rel_so_far as f64 / i as f64;
        if int_precis < precis {
            int_precis = precis;
        }
        if q.is_rel(q.rels()[(i - 1) as usize]) {
            while cur >= 0 && rel_so_far == cutoffs[cur as usize] {
                values[cur as usize] = int_precis;
                cur -= 1;
            }
            rel_so_far -= 1;
        }
        i -= 1;
    }
    while cur >= 0 {
        values[cur as usize] = int_precis;
        cur -= 1;
    }
    values
}

fn cutoff(q: &ResRels, recall: f64) -> i64 {
    (recall * q.num_rel() as f64).round() as i64
}

/// IPrec@recall.
pub fn iprec_at_recall(q: &ResRels, recall: f64) -> f64 {
    interpolated(q, &[cutoff(q, recall)])[0]
}

/// The default recall levels of 11ptAvg.
pub const ELEVEN_POINTS: [f64; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/// 11ptAvg over the given recall levels (trec_eval requires at least one).
pub fn eleven_point_average(q: &ResRels, levels: &[f64]) -> f64 {
    if levels.is_empty() {
        return 0.0;
    }
    let cutoffs: Vec<i64> = levels.iter().map(|&x| cutoff(q, x)).collect();
    let values = interpolated(q, &cutoffs);
    // trec_eval adds them in the order it reaches them: last level first.
    let sum = values.iter().rev().fold(0.0, |s, v| s + v);
    sum / levels.len() as f64
}
