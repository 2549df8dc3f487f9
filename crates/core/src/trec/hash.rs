//! A small, fast, non-cryptographic hasher for document ids.
//!
//! Document ids come from files the user controls, so hash flooding is not a concern here;
//! what matters is that hashing a short id costs a few nanoseconds. The mixing step is the
//! one popularised by Firefox's "FxHash" (rotate, xor, multiply by a 64-bit odd constant).

use std::hash::{BuildHasherDefault, Hasher};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// Hashes bytes eight at a time with rotate-xor-multiply.
#[derive(Default, Clone, Copy)]
pub struct IdHasher {
    hash: u64,
}

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = 0u64;
            for (i, &b) in rest.iter().enumerate() {
                w |= u64::from(b) << (8 * i);
            }
            self.add(w ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // A final avalanche so that the low bits (used by hash tables) depend on every byte.
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

/// `BuildHasher` for [`IdHasher`], for `HashMap<&[u8], _, IdBuildHasher>`.
pub type IdBuildHasher = BuildHasherDefault<IdHasher>;

/// Hash of one id, as used for duplicate detection.
#[inline]
pub fn hash_id(id: &[u8]) -> u64 {
    let mut h = IdHasher::default();
    h.write(id);
    h.write_usize(id.len());
    h.finish()
}
