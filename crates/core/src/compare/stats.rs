//! The statistics behind comparisons and trends. Pure functions over plain numbers; every
//! randomised one takes an explicit seed and is reproducible bit for bit.
//!
//! - [`sign_flip_test`]: paired randomisation test of a mean difference (two-sided);
//! - [`bootstrap_ci`]: paired percentile-bootstrap confidence interval of a mean difference;
//! - [`holm`]: Holm–Bonferroni adjusted p-values;
//! - [`ols`] and [`slope_permutation_test`]: a linear trend and its one-sided significance;
//! - [`quantile`]: the type-7 (linear interpolation) sample quantile;
//! - [`nearest_rank`]: the nearest-rank quantile of integer data;
//! - [`fisher_greater`]: one-sided Fisher exact test of a 2×2 table.
//!
//! Conventions are documented on each function and in `docs/compare.md`.

use super::rng::Rng;
use serde::{Deserialize, Serialize};

/// How a permutation p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Every rearrangement was enumerated: the p-value is exact.
    Exact,
    /// Seeded Monte-Carlo sample of rearrangements, `p = (b + 1) / (m + 1)`.
    MonteCarlo,
    /// Nothing to rearrange (no non-zero difference, or fewer than two points): `p = 1`.
    Degenerate,
}

/// The result of a permutation test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PermutationTest {
    pub p_value: f64,
    pub method: Method,
    /// Rearrangements enumerated (exact) or drawn (Monte-Carlo).
    pub rearrangements: u64,
    /// Rearrangements at least as extreme as the observed one (the observed one included
    /// when exact; `b` when Monte-Carlo).
    pub as_extreme: u64,
}

impl PermutationTest {
    fn degenerate() -> Self {
        PermutationTest {
            p_value: 1.0,
            method: Method::Degenerate,
            rearrangements: 0,
            as_extreme: 0,
        }
    }
}

/// Largest number of non-zero differences [`sign_flip_test`] will ever enumerate exactly
/// (2^30 sign patterns, counted by meet-in-the-middle over two halves of 2^15 sums).
pub const MAX_EXACT: usize = 30;

/// Tolerance of "at least as extreme": sums are compared with `1e-9 × Σ|d|` slack so that
/// rearrangements whose statistic equals the observed one in exact arithmetic are counted
/// even when floating-point rounding of a different summation order puts them one ulp below.
const REL_TOLERANCE: f64 = 1e-9;

/// Paired sign-flip randomisation test of H0: "the mean difference is zero", two-sided.
///
/// Under H0 each pair's two values are exchangeable, so each difference `d_i` is equally
/// likely to have had the opposite sign. The statistic is `T = Σ d_i` (equivalent to the
/// mean, as `n` is fixed), and `p = P(|T*| ≥ |T|)` over the `2^m` sign patterns of the `m`
/// non-zero differences. Conventions:
///
/// - zero differences are dropped: flipping their sign changes nothing, so they contribute
///   no information and only rescale the enumeration (the p-value is the same either way);
/// - non-finite differences are dropped;
/// - ties: a rearrangement counts as "at least as extreme" when `|T*| ≥ |T| − 1e-9 Σ|d|`;
/// - when `m ≤ exact_max` (clamped to [`MAX_EXACT`]) every pattern is counted
///   (meet-in-the-middle, so 2^20 patterns cost about 2·2^10 sums and a sort), and the
///   observed pattern is among them, so `p ≥ 2 / 2^m`;
/// - otherwise `permutations` patterns are drawn with [`Rng`] from `seed` (each 64-bit
///   output gives the signs of 64 differences, bit set = flipped, in input order) and
///   `p = (b + 1) / (permutations + 1)`, where `b` counts the draws at least as
///   extreme; this estimate is itself a valid p-value (never anti-conservative);
/// - `m = 0` (all differences zero) or `|T|` within the tolerance of 0 gives `p = 1`.
pub fn sign_flip_test(
    diffs: &[f64],
    exact_max: usize,
    permutations: usize,
    seed: u64,
) -> PermutationTest {
    let d: Vec<f64> = diffs
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x != 0.0)
        .collect();
    if d.is_empty() {
        return PermutationTest::degenerate();
    }
    let scale: f64 = d.iter().map(|x| x.abs()).sum();
    let eps = REL_TOLERANCE * scale;
    let t = d.iter().sum::<f64>().abs();
    if t <= eps {
        let n = if d.len() <= exact_max.min(MAX_EXACT) {
            1u64 << d.len()
        } else {
            0
        };
        return PermutationTest {
            p_value: 1.0,
            method: if n > 0 {
                Method::Exact
            } else {
                Method::Degenerate
            },
            rearrangements: n,
            as_extreme: n,
        };
    }
    if d.len() <= exact_max.min(MAX_EXACT) {
        let count = exact_count(&d, t, eps);
        let total = 1u64 << d.len();
        return PermutationTest {
            p_value: count as f64 / total as f64,
            method: Method::Exact,
            rearrangements: total,
            as_extreme: count,
        };
    }
    // Monte-Carlo. The differences are taken eight at a time: a 256-entry table per group
    // holds the signed sum of the group for every byte of sign bits (bit set = flipped),
    // so one random byte picks a group's contribution.
    let tables: Vec<[f64; 256]> = d
        .chunks(8)
        .map(|group| {
            let mut table = [0.0f64; 256];
            for (byte, slot) in table.iter_mut().enumerate() {
                *slot = group
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| if (byte >> i) & 1 == 1 { -x } else { x })
                    .sum();
            }
            table
        })
        .collect();
    let mut rng = Rng::new(seed);
    let mut b = 0u64;
    for _ in 0..permutations {
        let mut sum = 0.0;
        let mut word = 0u64;
        for (g, table) in tables.iter().enumerate() {
            if g % 8 == 0 {
                word = rng.next_u64();
            }
            sum += table[((word >> (8 * (g % 8))) & 0xFF) as usize];
        }
        if sum.abs() >= t - eps {
            b += 1;
        }
    }
    PermutationTest {
        p_value: (b + 1) as f64 / (permutations as f64 + 1.0),
        method: Method::MonteCarlo,
        rearrangements: permutations as u64,
        as_extreme: b,
    }
}

/// All `2^len` signed sums of `half`.
fn signed_sums(half: &[f64]) -> Vec<f64> {
    let mut sums = vec![0.0f64];
    for &x in half {
        let mut next = Vec::with_capacity(sums.len() * 2);
        for &s in &sums {
            next.push(s + x);
            next.push(s - x);
        }
        sums = next;
    }
    sums
}

/// Number of sign patterns with `|Σ s_i d_i| ≥ t − eps` (requires `t > eps`, so the two
/// tails `≥ t − eps` and `≤ −(t − eps)` are disjoint).
fn exact_count(d: &[f64], t: f64, eps: f64) -> u64 {
    let (left, right) = d.split_at(d.len() / 2);
    let a = signed_sums(left);
    let mut b = signed_sums(right);
    b.sort_by(f64::total_cmp);
    let cut = t - eps;
    let mut count = 0u64;
    for &x in &a {
        // upper tail: x + y >= cut  <=>  y >= cut - x
        let lo = b.partition_point(|&y| x + y < cut);
        count += (b.len() - lo) as u64;
        // lower tail: x + y <= -cut  <=>  y <= -cut - x
        let hi = b.partition_point(|&y| x + y <= -cut);
        count += hi as u64;
    }
    count
}

/// Type-7 sample quantile (linear interpolation between order statistics, R's default) of
/// already **sorted** values; `None` when empty. `q` is clamped to `[0, 1]`.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// Nearest-rank quantile of integer data: the smallest value `v` of the data such that at
/// least `q` of the values are `≤ v` (`q` clamped to `[0, 1]`; `q = 0` gives the minimum).
/// `None` when empty.
pub fn nearest_rank(values: &[u32], q: f64) -> Option<u32> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let q = if q.is_nan() { 0.5 } else { q.clamp(0.0, 1.0) };
    let rank = (q * v.len() as f64 - 1e-9).ceil().max(1.0) as usize;
    Some(v[rank.min(v.len()) - 1])
}

/// Paired percentile-bootstrap confidence interval of the mean of `diffs`.
///
/// `resamples` times, draw `n` indices uniformly with replacement (with [`Rng`] from `seed`,
/// two indices per 64-bit output, [`Rng::below_pair`]) and take the mean of the drawn
/// differences; the interval is the type-7 [`quantile`]s
/// `(1 − confidence) / 2` and `(1 + confidence) / 2` of those means. Resampling whole pairs
/// (differences) keeps each case's base and new values together — that is what makes it
/// paired. Non-finite differences are dropped. `None` when there is no difference, no
/// resample, or `confidence` is not in `(0, 1)`. All-equal differences give `[d, d]`.
pub fn bootstrap_ci(
    diffs: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Option<(f64, f64)> {
    let d: Vec<f64> = diffs.iter().copied().filter(|x| x.is_finite()).collect();
    if d.is_empty() || resamples == 0 || !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let n = d.len();
    let mut rng = Rng::new(seed);
    let mut means = Vec::with_capacity(resamples);
    let small = n as u64 <= 1 << 32;
    for _ in 0..resamples {
        // Two running sums (even and odd draws) halve the dependency chain.
        let (mut s0, mut s1) = (0.0, 0.0);
        if small {
            for _ in 0..n / 2 {
                let (i, j) = rng.below_pair(n as u64);
                s0 += d[i as usize];
                s1 += d[j as usize];
            }
            if n % 2 == 1 {
                s0 += d[rng.below_pair(n as u64).0 as usize];
            }
        } else {
            for _ in 0..n {
                s0 += d[rng.below(n as u64) as usize];
            }
        }
        means.push((s0 + s1) / n as f64);
    }
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    Some((quantile(&means, tail)?, quantile(&means, 1.0 - tail)?))
}

/// Holm–Bonferroni step-down adjusted p-values, in the input order.
///
/// Sort the `m` p-values ascending (ties keep input order); the `i`-th smallest (1-based)
/// is adjusted to `max_{j ≤ i} min(1, (m − j + 1) p_(j))`. Adjusted values are therefore
/// never below the raw ones and are monotone in the raw order; rejecting where the adjusted
/// value is below α controls the family-wise error rate at α. NaN is treated as 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let clean: Vec<f64> = p
        .iter()
        .map(|&x| if x.is_nan() { 1.0 } else { x.clamp(0.0, 1.0) })
        .collect();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| clean[a].total_cmp(&clean[b]).then(a.cmp(&b)));
    let mut out = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (j, &i) in order.iter().enumerate() {
        let adj = ((m - j) as f64 * clean[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

/// Ordinary least squares fit of `values[i]` on `x = i` (0, 1, 2, …): `(slope, intercept)`.
/// `None` with fewer than two values or a non-finite value.
pub fn ols(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let xbar = (n - 1) as f64 / 2.0;
    let ybar = values.iter().sum::<f64>() / n as f64;
    let sxy = slope_numerator(values, xbar, ybar);
    let sxx: f64 = (0..n).map(|i| (i as f64 - xbar).powi(2)).sum();
    let slope = sxy / sxx;
    Some((slope, ybar - slope * xbar))
}

fn slope_numerator(values: &[f64], xbar: f64, ybar: f64) -> f64 {
    values
        .iter()
        .enumerate()
        .map(|(i, &y)| (i as f64 - xbar) * (y - ybar))
        .sum()
}

/// Which direction of trend a one-sided test looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The values decrease over time (H1: slope < 0).
    Decreasing,
    /// The values increase over time (H1: slope > 0).
    Increasing,
}

/// Largest number of points whose `n!` orderings [`slope_permutation_test`] enumerates
/// (8! = 40,320); longer series are Monte-Carlo sampled.
pub const MAX_EXACT_ORDERINGS: usize = 8;

/// One-sided permutation test of an OLS slope over time (`x = 0, 1, …, n−1`).
///
/// H0: the values are exchangeable in time (no trend). The statistic is the slope's
/// numerator `S = Σ (x_i − x̄)(y_i − ȳ)` (the denominator does not change under
/// permutation). `p = P(S* ≤ S + tol)` for [`Direction::Decreasing`] (`≥ S − tol` for
/// increasing), `tol = 1e-9 × Σ|y_i − ȳ| × n`, over all `n!` orderings when
/// `n ≤` [`MAX_EXACT_ORDERINGS`] (exact; the observed ordering is included, so
/// `p ≥ 1/n!`), else over `permutations` seeded Fisher–Yates shuffles with
/// `p = (b + 1) / (permutations + 1)`. Fewer than two points, or all values equal, give
/// `p = 1` ([`Method::Degenerate`]).
pub fn slope_permutation_test(
    values: &[f64],
    direction: Direction,
    permutations: usize,
    seed: u64,
) -> PermutationTest {
    let n = values.len();
    if n < 2 || values.iter().any(|v| !v.is_finite()) {
        return PermutationTest::degenerate();
    }
    let xbar = (n - 1) as f64 / 2.0;
    let ybar = values.iter().sum::<f64>() / n as f64;
    let spread: f64 = values.iter().map(|y| (y - ybar).abs()).sum();
    if spread == 0.0 {
        return PermutationTest::degenerate();
    }
    let tol = REL_TOLERANCE * spread * n as f64;
    let observed = slope_numerator(values, xbar, ybar);
    let extreme = |s: f64| match direction {
        Direction::Decreasing => s <= observed + tol,
        Direction::Increasing => s >= observed - tol,
    };
    let mut y = values.to_vec();
    if n <= MAX_EXACT_ORDERINGS {
        // Heap's algorithm, iterative: visits each of the n! orderings once.
        let mut total = 0u64;
        let mut count = 0u64;
        let mut c = vec![0usize; n];
        total += 1;
        count += u64::from(extreme(slope_numerator(&y, xbar, ybar)));
        let mut i = 1;
        while i < n {
            if c[i] < i {
                if i % 2 == 0 {
                    y.swap(0, i);
                } else {
                    y.swap(c[i], i);
                }
                total += 1;
                count += u64::from(extreme(slope_numerator(&y, xbar, ybar)));
                c[i] += 1;
                i = 1;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        return PermutationTest {
            p_value: count as f64 / total as f64,
            method: Method::Exact,
            rearrangements: total,
            as_extreme: count,
        };
    }
    let mut rng = Rng::new(seed);
    let mut b = 0u64;
    for _ in 0..permutations {
        for i in (1..n).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            y.swap(i, j);
        }
        if extreme(slope_numerator(&y, xbar, ybar)) {
            b += 1;
        }
    }
    PermutationTest {
        p_value: (b + 1) as f64 / (permutations as f64 + 1.0),
        method: Method::MonteCarlo,
        rearrangements: permutations as u64,
        as_extreme: b,
    }
}

/// `ln(n!)` by summation (exact enough for the table sizes of a golden set).
fn ln_factorial(n: usize) -> f64 {
    (2..=n).map(|i| (i as f64).ln()).sum()
}

fn ln_choose(n: usize, k: usize) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// One-sided Fisher exact test on a 2×2 table: the probability, under the hypergeometric
/// null (margins fixed), of at least `a` failures in the group, where the group has
/// `group` cases with `a` failing and the rest has `other` cases with `b` failing. `1` for
/// inconsistent counts.
pub fn fisher_greater(a: usize, group: usize, b: usize, other: usize) -> f64 {
    if a > group || b > other {
        return 1.0;
    }
    let n = group + other;
    let failing = a + b;
    let denom = ln_choose(n, group);
    let top = failing.min(group);
    let mut p = 0.0;
    for x in a..=top {
        if failing - x > other {
            continue;
        }
        p += (ln_choose(failing, x) + ln_choose(n - failing, group - x) - denom).exp();
    }
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantile_type7() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(quantile(&v, 1.0), Some(4.0));
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v = [0, 1, 1, 2, 2, 2, 3, 3, 4, 9];
        assert_eq!(nearest_rank(&v, 0.5), Some(2));
        assert_eq!(nearest_rank(&v, 0.9), Some(4));
        assert_eq!(nearest_rank(&v, 1.0), Some(9));
        assert_eq!(nearest_rank(&v, 0.0), Some(0));
        assert_eq!(nearest_rank(&[], 0.5), None);
    }

    #[test]
    fn holm_by_hand() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]);
        // sorted: 0.01 ×4 = 0.04; 0.03 ×3 = 0.09; 0.04 ×2 = 0.08 → 0.09; 0.5 ×1 → 0.5
        let expect = [0.04, 0.09, 0.09, 0.5];
        for (a, e) in adj.iter().zip(expect) {
            assert!((a - e).abs() < 1e-12, "{adj:?}");
        }
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn ols_line() {
        let (s, i) = ols(&[1.0, 3.0, 5.0]).unwrap();
        assert!((s - 2.0).abs() < 1e-12 && (i - 1.0).abs() < 1e-12);
        assert_eq!(ols(&[1.0]), None);
    }

    #[test]
    fn monotone_series_has_minimal_p() {
        let t = slope_permutation_test(&[5.0, 4.0, 3.0, 2.0, 1.0], Direction::Decreasing, 0, 1);
        assert_eq!(t.method, Method::Exact);
        assert_eq!(t.rearrangements, 120);
        assert_eq!(t.as_extreme, 1);
        let up = slope_permutation_test(&[5.0, 4.0, 3.0, 2.0, 1.0], Direction::Increasing, 0, 1);
        assert_eq!(up.p_value, 1.0);
    }

    #[test]
    fn fisher_by_hand() {
        // 3 of 3 fail in the group, 0 of 9 elsewhere: 1 / C(12, 3).
        assert!((fisher_greater(3, 3, 0, 9) - 1.0 / 220.0).abs() < 1e-12);
        assert!((fisher_greater(0, 3, 0, 9) - 1.0).abs() < 1e-9);
        assert_eq!(fisher_greater(4, 3, 0, 9), 1.0);
    }

    #[test]
    fn sign_flip_small_by_hand() {
        // d = [1, 2]: sums ±1±2 → {3, -1, 1, -3}; |T| = 3 → 2 of 4.
        let t = sign_flip_test(&[1.0, 2.0, 0.0], 20, 0, 0);
        assert_eq!((t.as_extreme, t.rearrangements), (2, 4));
        assert_eq!(t.p_value, 0.5);
        assert_eq!(sign_flip_test(&[0.0, 0.0], 20, 10, 0).p_value, 1.0);
        assert_eq!(sign_flip_test(&[], 20, 10, 0).method, Method::Degenerate);
    }
}
