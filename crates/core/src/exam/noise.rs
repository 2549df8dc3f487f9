//! The self-calibrating noise rule (seed 000, "la regla del 30%").
//!
//! `threshold = lowest score among the expected chunks inside the top-K`;
//! `noise = number of top-K results scoring strictly below threshold`. Both are undefined
//! (`None`) when no expected chunk is inside the top-K, or when any top-K result has no
//! score (a run without scores cannot be judged by this rule). A case is over the ceiling
//! when `noise > ⌊ceiling × K⌋` (computed with a 1e-9 tolerance so that 0.3 × 10 is 3).

/// The noise of one case: `(noise, threshold)`, or `None` when undefined.
///
/// `top` is the top-K in rank order as `(is_expected, score)`.
pub fn noise(top: &[(bool, Option<f64>)]) -> Option<(u32, f64)> {
    let mut scores = Vec::with_capacity(top.len());
    for &(_, s) in top {
        scores.push(s?);
    }
    let threshold = top
        .iter()
        .zip(&scores)
        .filter(|((expected, _), _)| *expected)
        .map(|(_, &s)| s)
        .reduce(f64::min)?;
    let below = scores.iter().filter(|&&s| s < threshold).count() as u32;
    Some((below, threshold))
}

/// The most noise a case may have: `⌊ceiling × K⌋`.
pub fn max_noise(ceiling: f64, k: u32) -> u32 {
    (ceiling * f64::from(k) + 1e-9).floor().max(0.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_percent_of_ten_is_three() {
        assert_eq!(max_noise(0.30, 10), 3);
        assert_eq!(max_noise(0.40, 10), 4);
        assert_eq!(max_noise(0.30, 5), 1);
        assert_eq!(max_noise(0.0, 10), 0);
        assert_eq!(max_noise(1.0, 10), 10);
    }

    #[test]
    fn counts_strictly_below_worst_expected() {
        let top = [
            (true, Some(0.9)),
            (false, Some(0.8)),
            (true, Some(0.7)),
            (false, Some(0.7)),
            (false, Some(0.6)),
            (false, Some(0.5)),
        ];
        assert_eq!(noise(&top), Some((2, 0.7)));
    }

    #[test]
    fn undefined_without_expected_or_scores() {
        assert_eq!(noise(&[(false, Some(1.0))]), None);
        assert_eq!(noise(&[(true, None), (false, Some(1.0))]), None);
        assert_eq!(noise(&[]), None);
    }
}
