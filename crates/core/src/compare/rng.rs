//! A small seeded pseudo-random generator, so that every randomised statistic of this module
//! is a pure function of its inputs and a seed (core has no entropy source).
//!
//! - [`SplitMix64`] (Steele, Lea & Flood 2014) expands one `u64` seed into a stream; it seeds
//!   the main generator and mixes labels into seeds ([`derive_seed`]).
//! - [`Rng`] is xoshiro256** 1.0 (Blackman & Vigna 2018): fast, 256 bits of state, passes
//!   BigCrush; its state is the first four outputs of SplitMix64 from the seed, as the
//!   authors recommend.
//!
//! The generators are implemented here (about fifty lines) rather than pulled from a crate so
//! that the bit stream — and therefore every p-value and interval — is fixed by this file and
//! cannot change with a dependency upgrade.

/// SplitMix64: a 64-bit state advanced by the golden-ratio increment and finalised by the
/// MurmurHash3-style mixer.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next output.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix64(self.state)
    }
}

/// SplitMix64's finaliser: a bijection of `u64` with good avalanche.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// The seed of one named stream: `mix64(seed ^ fnv1a(label))`.
///
/// Each statistic draws from its own stream, named after what it computes (for example
/// `"permutation/mean_recall"`), so its result depends only on the user's seed and that name
/// — never on which other statistics were computed before it or in what order.
pub fn derive_seed(seed: u64, label: &str) -> u64 {
    mix64(seed ^ fnv1a(label.as_bytes()))
}

/// xoshiro256**: the generator every resampling of this module draws from.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose state is the first four SplitMix64 outputs from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut sm = SplitMix64::new(seed);
        let s = [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()];
        // SplitMix64 never yields four zero words in a row (its outputs are a bijection of
        // distinct states), so the all-zero state that would stall xoshiro is impossible.
        Rng { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A uniform integer in `0..n` without modulo bias (Lemire's multiply-and-reject);
    /// 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        let mut low = m as u64;
        if low < n {
            let threshold = n.wrapping_neg() % n;
            while low < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// Two uniform integers in `0..n` (`1 ≤ n ≤ 2^32`) from the two 32-bit halves of one
    /// output, low half first, each by Lemire's multiply-and-reject at 32 bits (a rejected
    /// half is redrawn from the low half of a fresh output). `(0, 0)` when `n` is 0 or above
    /// 2^32.
    pub fn below_pair(&mut self, n: u64) -> (u64, u64) {
        if n == 0 || n > 1 << 32 {
            return (0, 0);
        }
        let threshold = ((1u64 << 32) - n) % n;
        let x = self.next_u64();
        let a = self.accept32(x & 0xFFFF_FFFF, n, threshold);
        let b = self.accept32(x >> 32, n, threshold);
        (a, b)
    }

    fn accept32(&mut self, mut half: u64, n: u64, threshold: u64) -> u64 {
        loop {
            let m = half * n;
            if (m & 0xFFFF_FFFF) >= threshold {
                return m >> 32;
            }
            half = self.next_u64() & 0xFFFF_FFFF;
        }
    }

    /// A uniform `f64` in `[0, 1)` with 53 random bits.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // Reference outputs of splitmix64.c for seed 1234567.
        let mut sm = SplitMix64::new(1_234_567);
        assert_eq!(sm.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(sm.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn below_stays_in_range_and_is_reproducible() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for n in [1u64, 2, 3, 10, 1000, u64::MAX] {
            for _ in 0..100 {
                let x = a.below(n);
                assert!(x < n);
                assert_eq!(x, b.below(n));
            }
        }
        assert_eq!(a.below(0), 0);
    }

    #[test]
    fn below_pair_is_uniform_enough_and_in_range() {
        let mut r = Rng::new(3);
        let mut counts = [0u32; 3];
        for _ in 0..30_000 {
            let (a, b) = r.below_pair(3);
            counts[a as usize] += 1;
            counts[b as usize] += 1;
        }
        for c in counts {
            assert!((19_000..21_000).contains(&c), "{counts:?}");
        }
        assert_eq!(r.below_pair(1), (0, 0));
        assert_eq!(r.below_pair(0), (0, 0));
        let (a, b) = r.below_pair(1 << 32);
        assert!(a < 1 << 32 && b < 1 << 32);
    }

    #[test]
    fn unit_is_in_unit_interval() {
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            let u = r.unit_f64();
            assert!((0.0..1.0).contains(&u));
        }
    }

    #[test]
    fn derived_seeds_differ_by_label() {
        assert_ne!(derive_seed(1, "a"), derive_seed(1, "b"));
        assert_eq!(derive_seed(1, "a"), derive_seed(1, "a"));
    }
}
