//! The Quality Score (seed 000, SPEC §2.3).
//!
//! `QS = 0` when `recall < floor`, else `(recall - floor) / (1 - floor) * 100`. With the
//! default floor 0.90 this is the seed's scale: recall 90% → 0, 95% → 50, 100% → 100.
//! With a floor of 1 the scale degenerates to 100 for perfect recall and 0 otherwise.
//!
//! The value is rounded to 9 decimal places so that exact fractions of the scale come out
//! exact (`(0.95 - 0.90) / 0.10 * 100` is 49.99999999999995 in binary floating point).

/// Quality Score on 0..=100 for a case's `recall` under `floor`.
pub fn quality_score(recall: f64, floor: f64) -> f64 {
    if recall < floor {
        return 0.0;
    }
    if floor >= 1.0 {
        return 100.0;
    }
    let raw = (recall - floor) / (1.0 - floor) * 100.0;
    ((raw * 1e9).round() / 1e9).clamp(0.0, 100.0)
}

#[cfg(test)]
mod tests {
    use super::quality_score;

    #[test]
    fn seed_scale() {
        assert_eq!(quality_score(0.90, 0.90), 0.0);
        assert_eq!(quality_score(0.95, 0.90), 50.0);
        assert_eq!(quality_score(1.0, 0.90), 100.0);
        assert_eq!(quality_score(2.0 / 3.0, 0.90), 0.0);
        assert_eq!(quality_score(0.8999999, 0.90), 0.0);
    }

    #[test]
    fn degenerate_floors() {
        assert_eq!(quality_score(1.0, 1.0), 100.0);
        assert_eq!(quality_score(0.99, 1.0), 0.0);
        assert_eq!(quality_score(0.0, 0.0), 0.0);
        assert_eq!(quality_score(0.5, 0.0), 50.0);
    }
}
