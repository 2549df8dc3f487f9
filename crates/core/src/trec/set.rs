//! Set measures, which ignore the order: `set_P` (SetP), `set_relative_P` (SetRelP),
//! `set_recall` (SetR), `set_map` (SetAP), `set_F` (SetF).
//!
//! With ret retrieved, R relevant and rr relevant retrieved:
//! SetP = rr / ret; SetRelP = rr / min(ret, R); SetR = rr / R; SetAP = SetP * SetR;
//! SetF(x) = (x + 1) * P * R / (x * P + R), the weighted harmonic mean of SetP and SetR
//! where x = beta^2 is the weight of recall (default 1). Each is 0 when its denominator is.

use super::ResRels;

/// set_P.
pub fn set_precision(q: &ResRels) -> f64 {
    if q.num_ret() == 0 {
        return 0.0;
    }
    q.num_rel_ret() as f64 / q.num_ret() as f64
}

/// set_relative_P.
pub fn set_relative_precision(q: &ResRels) -> f64 {
    if q.num_ret() == 0 || q.num_rel() == 0 {
        return 0.0;
    }
    q.num_rel_ret() as f64 / q.num_ret().min(q.num_rel()) as f64
}

/// set_recall.
pub fn set_recall(q: &ResRels) -> f64 {
    if q.num_rel() == 0 {
        return 0.0;
    }
    q.num_rel_ret() as f64 / q.num_rel() as f64
}

/// set_map.
pub fn set_map(q: &ResRels) -> f64 {
    if q.num_ret() == 0 || q.num_rel() == 0 {
        return 0.0;
    }
    let rr = q.num_rel_ret() as f64;
    (rr * rr) / (q.num_ret() as f64 * q.num_rel() as f64)
}

/// set_F with weight `x` (= beta squared).
pub fn set_f(q: &ResRels, x: f64) -> f64 {
    if q.num_rel_ret() == 0 {
        return 0.0;
    }
    let p = q.num_rel_ret() as f64 / q.num_ret() as f64;
    let r = q.num_rel_ret() as f64 / q.num_rel() as f64;
    (x + 1.0) * p * r / (x * p + r)
}
