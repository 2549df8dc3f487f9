//! The statistics of `veredicto_core::compare::stats` against oracles: brute-force
//! enumeration of the sign-flip test, the Holm definition, and the bootstrap's coverage in
//! simulation.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use veredicto_core::compare::rng::Rng;
use veredicto_core::compare::stats::{
    bootstrap_ci, holm, ols, sign_flip_test, slope_permutation_test, Direction, Method,
};

/// Naive two-sided sign-flip p-value: every one of the 2^m patterns of the non-zero
/// differences, "as extreme" with the documented 1e-9 Σ|d| tolerance.
fn brute_force(d: &[f64]) -> f64 {
    let d: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    if d.is_empty() {
        return 1.0;
    }
    let eps = 1e-9 * d.iter().map(|x| x.abs()).sum::<f64>();
    let t: f64 = d.iter().sum::<f64>().abs();
    if t <= eps {
        return 1.0;
    }
    let m = d.len();
    let mut count = 0u64;
    for mask in 0u64..(1 << m) {
        let s: f64 = d
            .iter()
            .enumerate()
            .map(|(i, x)| if mask >> i & 1 == 1 { -x } else { *x })
            .sum();
        if s.abs() >= t - eps {
            count += 1;
        }
    }
    count as f64 / (1u64 << m) as f64
}

#[test]
fn exact_test_matches_brute_force_enumeration() {
    let mut rng = Rng::new(42);
    for trial in 0..300 {
        let m = 1 + (trial % 14);
        // Coarse values (multiples of 1/3 and of 0.25, with zeros) make exact ties common.
        let d: Vec<f64> = (0..m)
            .map(|_| match rng.below(4) {
                0 => 0.0,
                1 => (rng.below(7) as f64 - 3.0) / 3.0,
                2 => (rng.below(9) as f64 - 4.0) / 4.0,
                _ => rng.unit_f64() * 2.0 - 1.0,
            })
            .collect();
        let got = sign_flip_test(&d, 20, 0, 0);
        let want = brute_force(&d);
        assert_eq!(got.p_value, want, "d = {d:?}");
        let nonzero = d.iter().filter(|x| **x != 0.0).count();
        if nonzero > 0 {
            assert_eq!(got.method, Method::Exact);
            assert_eq!(got.rearrangements, 1 << nonzero);
        }
    }
}

#[test]
fn exact_p_value_of_a_known_case() {
    // Five improvements of 1 and nothing else: only the all-plus and all-minus patterns are
    // as extreme, p = 2 / 32.
    let t = sign_flip_test(&[1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0], 20, 0, 0);
    assert_eq!(t.p_value, 2.0 / 32.0);
    assert_eq!(t.as_extreme, 2);
}

#[test]
fn monte_carlo_agrees_with_exact_and_is_seeded() {
    let mut rng = Rng::new(7);
    let d: Vec<f64> = (0..18).map(|_| rng.unit_f64() - 0.35).collect();
    let exact = sign_flip_test(&d, 20, 0, 0);
    let mc = sign_flip_test(&d, 0, 20_000, 99);
    assert_eq!(mc.method, Method::MonteCarlo);
    // Binomial standard error at 20,000 draws is at most 0.0036.
    assert!(
        (exact.p_value - mc.p_value).abs() < 0.015,
        "{exact:?} {mc:?}"
    );
    let again = sign_flip_test(&d, 0, 20_000, 99);
    assert_eq!(mc.p_value.to_bits(), again.p_value.to_bits());
    let other = sign_flip_test(&d, 0, 20_000, 100);
    assert_ne!(mc.as_extreme, other.as_extreme);
    // (b + 1) / (m + 1) is never zero.
    let strong = sign_flip_test(&[1.0; 40], 20, 1000, 1);
    assert_eq!(strong.p_value, 1.0 / 1001.0);
}

#[test]
fn degenerate_inputs_do_not_panic() {
    assert_eq!(sign_flip_test(&[], 20, 100, 0).p_value, 1.0);
    assert_eq!(sign_flip_test(&[0.0; 50], 20, 100, 0).p_value, 1.0);
    assert_eq!(sign_flip_test(&[f64::NAN, 1.0], 20, 100, 0).p_value, 1.0);
    assert_eq!(
        sign_flip_test(&[0.5; 100], 20, 0, 0).p_value,
        1.0,
        "no draws: p = 1/1"
    );
    // Symmetric differences: T = 0.
    assert_eq!(
        sign_flip_test(&[1.0, -1.0, 2.0, -2.0], 20, 0, 0).p_value,
        1.0
    );
    assert_eq!(bootstrap_ci(&[], 100, 0.95, 0), None);
    assert_eq!(bootstrap_ci(&[1.0], 0, 0.95, 0), None);
    assert_eq!(bootstrap_ci(&[1.0], 10, 1.5, 0), None);
    assert_eq!(bootstrap_ci(&[0.25; 30], 200, 0.95, 0), Some((0.25, 0.25)));
    assert_eq!(holm(&[f64::NAN]), vec![1.0]);
    assert_eq!(ols(&[]), None);
    assert_eq!(
        slope_permutation_test(&[1.0, 1.0, 1.0], Direction::Decreasing, 10, 0).method,
        Method::Degenerate
    );
}

#[test]
fn holm_is_monotone_and_never_below_raw() {
    let mut rng = Rng::new(3);
    for _ in 0..500 {
        let m = 1 + rng.below(8) as usize;
        let p: Vec<f64> = (0..m)
            .map(|_| {
                if rng.below(3) == 0 {
                    rng.unit_f64() * 0.02
                } else {
                    rng.unit_f64()
                }
            })
            .collect();
        let adj = holm(&p);
        for i in 0..m {
            assert!(adj[i] >= p[i] && adj[i] <= 1.0);
            for j in 0..m {
                if p[i] <= p[j] {
                    assert!(adj[i] <= adj[j], "p={p:?} adj={adj:?}");
                }
            }
        }
        // The smallest p-value is multiplied by m (capped at 1).
        let (imin, pmin) = p
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, v)| (i, *v))
            .unwrap();
        assert!((adj[imin] - (pmin * m as f64).min(1.0)).abs() < 1e-15);
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.unit_f64();
    let u2 = rng.unit_f64();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[test]
fn bootstrap_interval_covers_the_true_mean_at_about_the_nominal_rate() {
    // 400 simulated studies of 50 paired differences whose true mean is 0.1: normal noise,
    // and a skewed mixture (most cases unchanged, a few large moves) like recall deltas.
    let mut rng = Rng::new(2024);
    let trials = 400;
    for (name, skewed) in [("normal", false), ("skewed", true)] {
        let mut covered = 0;
        for t in 0..trials {
            let d: Vec<f64> = (0..50)
                .map(|_| {
                    if skewed {
                        // 0 w.p. 0.6, +0.5 w.p. 0.3, −0.5 w.p. 0.1: mean 0.1.
                        match rng.below(10) {
                            0..=5 => 0.0,
                            6..=8 => 0.5,
                            _ => -0.5,
                        }
                    } else {
                        0.1 + 0.3 * normal(&mut rng)
                    }
                })
                .collect();
            let (lo, hi) = bootstrap_ci(&d, 1000, 0.95, t).unwrap();
            assert!(lo <= hi);
            if lo <= 0.1 && 0.1 <= hi {
                covered += 1;
            }
        }
        let rate = covered as f64 / trials as f64;
        eprintln!("bootstrap 95% CI coverage ({name}, n = 50, {trials} trials): {rate:.3}");
        // The percentile bootstrap runs slightly under nominal at n = 50; the binomial
        // standard error at 400 trials is 0.011.
        assert!((0.90..=0.985).contains(&rate), "{name}: coverage {rate}");
    }
}

#[test]
fn bootstrap_is_reproducible_and_seed_dependent() {
    let d: Vec<f64> = (0..40)
        .map(|i| ((i * 7) % 11) as f64 / 10.0 - 0.4)
        .collect();
    let a = bootstrap_ci(&d, 2000, 0.95, 5).unwrap();
    let b = bootstrap_ci(&d, 2000, 0.95, 5).unwrap();
    assert_eq!(
        (a.0.to_bits(), a.1.to_bits()),
        (b.0.to_bits(), b.1.to_bits())
    );
    assert_ne!(a, bootstrap_ci(&d, 2000, 0.95, 6).unwrap());
}

#[test]
fn slope_test_exact_and_monte_carlo() {
    // A clean decline over 7 points: only the observed ordering is as extreme.
    let v = [0.99, 0.97, 0.96, 0.94, 0.93, 0.91, 0.90];
    let t = slope_permutation_test(&v, Direction::Decreasing, 0, 1);
    assert_eq!(
        (t.method, t.rearrangements, t.as_extreme),
        (Method::Exact, 5040, 1)
    );
    let (slope, _) = ols(&v).unwrap();
    assert!(slope < 0.0);
    // 12 points: Monte-Carlo, (b + 1) / (m + 1).
    let long: Vec<f64> = (0..12).map(|i| 1.0 - i as f64 * 0.01).collect();
    let mc = slope_permutation_test(&long, Direction::Decreasing, 999, 1);
    assert_eq!(mc.method, Method::MonteCarlo);
    assert_eq!(mc.p_value, 1.0 / 1000.0);
    // No trend: the p-value is large.
    let flat = [0.9, 0.95, 0.9, 0.95, 0.9, 0.95, 0.9];
    assert!(slope_permutation_test(&flat, Direction::Decreasing, 0, 1).p_value > 0.3);
}

#[test]
fn exact_slope_test_has_the_nominal_size() {
    // Under exchangeability the exact test's rejection rate at 5% is at most 5%.
    let mut rng = Rng::new(11);
    let trials = 1000;
    let mut rejected = 0;
    for t in 0..trials {
        let v: Vec<f64> = (0..6).map(|_| rng.unit_f64()).collect();
        if slope_permutation_test(&v, Direction::Decreasing, 0, t).p_value < 0.05 {
            rejected += 1;
        }
    }
    let rate = rejected as f64 / trials as f64;
    eprintln!("slope permutation test size at 5% (6 runs, {trials} trials): {rate:.3}");
    assert!(rate <= 0.07, "{rate}");
}
