//! The benchmark data's random stream: core's generator (xoshiro256** seeded through
//! SplitMix64, `veredicto_core::compare::rng`), the one generator of the workspace, plus the
//! few draws the data generator needs. Implemented in core rather than taken from the `rand`
//! crates so that the bytes of the data behind published figures depend only on the seed;
//! `tests/data_is_stable.rs` pins them.

pub use veredicto_core::compare::rng::{Rng, SplitMix64};

/// A stateless 64-bit mix of `x`: the first SplitMix64 output from state `x`.
pub fn mix64(x: u64) -> u64 {
    SplitMix64::new(x).next_u64()
}

/// Draws the data generator needs on top of [`Rng`].
pub trait Draws {
    /// Uniform float in `[0, 1)` with 53 random bits.
    fn unit(&mut self) -> f64;
    /// `true` with probability `p`.
    fn chance(&mut self, p: f64) -> bool;
    /// Fisher-Yates shuffle.
    fn shuffle<T>(&mut self, items: &mut [T]);
}

impl Draws for Rng {
    fn unit(&mut self) -> f64 {
        self.unit_f64()
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_first_outputs_do_not_drift() {
        let mut r = Rng::new(0);
        let first: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(
            first,
            [
                0x99EC_5F36_CB75_F2B4,
                0xBF6E_1F78_4956_452A,
                0x1A5F_849D_4933_E6E0
            ]
        );
    }
}
