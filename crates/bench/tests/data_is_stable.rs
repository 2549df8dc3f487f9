//! The benchmark data behind published figures must not drift: a change to the generator or
//! to the random stream it draws from changes these digests and fails here.

use veredicto_bench::gen::{ensure_sized, Shape};

/// FNV-1a 64 of a file (a digest is enough to notice any change; no extra dependency).
fn digest(path: &std::path::Path) -> u64 {
    let bytes = std::fs::read(path).expect("read");
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

#[test]
fn generated_data_is_byte_stable() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut got = Vec::new();
    for shape in [Shape::Msmarco, Shape::Wide] {
        let d = ensure_sized(dir.path(), shape, 300).expect("generate");
        got.push((shape.name(), digest(&d.qrels), digest(&d.run)));
    }
    assert_eq!(got, PINNED);
}

const PINNED: [(&str, u64, u64); 2] = [
    ("msmarco", 0xb208_0798_49aa_0e1c, 0xab51_d117_db17_21b0),
    ("wide", 0x3a57_b153_9f53_e22d, 0x6dae_1125_bf16_cc37),
];
