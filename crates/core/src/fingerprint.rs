//! Content fingerprints (STYLE item 15): `sha256:<hex>` of a canonical serialisation.

use sha2::{Digest, Sha256};

/// `sha256:<lower-case hex>` of `bytes`.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Fingerprint of a value's compact JSON. Struct fields serialise in declaration order and
/// maps are `BTreeMap`s, so the bytes (and the hash) depend only on the value.
pub fn sha256_json<T: serde::Serialize>(value: &T) -> String {
    // Serialising plain data structs to a Vec cannot fail.
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    sha256_bytes(&bytes)
}
