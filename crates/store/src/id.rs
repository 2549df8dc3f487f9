//! Run IDs: ULIDs (<https://github.com/ulid/spec>). 128 bits = a 48-bit Unix time in
//! milliseconds (the run's `created_at`) followed by 80 bits from the operating system's
//! random source, written as 26 characters of Crockford base32 (`0-9A-Z` without `I L O U`),
//! so that text order is time order.
//!
//! Two processes recording in the same millisecond draw different random bits (a collision
//! needs the same 80 random bits: about 1 in 10^24). On top of that, the store makes IDs
//! strictly increasing in recording order: the ID is chosen inside the write transaction and,
//! when it would not sort after the newest stored ID (same millisecond, or a clock that went
//! back), the newest ID plus one is used instead (the ULID spec's monotonic mode).

/// Crockford's base32 alphabet.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Length of an ID in characters.
pub const ID_LEN: usize = 26;

/// The largest timestamp a ULID holds (year 10889).
const MAX_MS: u64 = (1 << 48) - 1;

/// Builds the 128-bit value from a Unix time in ms (clamped to the 48-bit range) and 80
/// random bits.
pub(crate) fn compose(unix_ms: i64, random: [u8; 10]) -> u128 {
    let ms = u64::try_from(unix_ms).unwrap_or(0).min(MAX_MS);
    let mut r = 0u128;
    for b in random {
        r = (r << 8) | u128::from(b);
    }
    (u128::from(ms) << 80) | r
}

/// 80 bits from the OS random source.
/// The ID of a new run created at `unix_ms`: from the time and `random`, or, when that would
/// not sort after `newest` (the newest recorded ID), the one right after `newest`.
pub(crate) fn next(unix_ms: i64, random: [u8; 10], newest: Option<&str>) -> String {
    let mut value = compose(unix_ms, random);
    if let Some(last) = newest.and_then(decode) {
        if value <= last {
            value = last.wrapping_add(1);
        }
    }
    encode(value)
}

pub(crate) fn random_bits() -> Result<[u8; 10], getrandom::Error> {
    let mut buf = [0u8; 10];
    getrandom::fill(&mut buf)?;
    Ok(buf)
}

/// The 26-character text form.
pub(crate) fn encode(value: u128) -> String {
    let mut out = [0u8; ID_LEN];
    let mut v = value;
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(v & 31) as usize];
        v >>= 5;
    }
    // Only ASCII from the alphabet was written.
    out.iter().map(|&b| char::from(b)).collect()
}

/// Parses a full ID (after [`normalise`]); `None` when it is not one.
pub(crate) fn decode(text: &str) -> Option<u128> {
    if text.len() != ID_LEN {
        return None;
    }
    let mut v: u128 = 0;
    for (i, b) in text.bytes().enumerate() {
        let d = digit(b)?;
        // The first character carries only 3 bits (26 × 5 = 130).
        if i == 0 && d > 7 {
            return None;
        }
        v = (v << 5) | u128::from(d);
    }
    Some(v)
}

fn digit(b: u8) -> Option<u8> {
    ALPHABET.iter().position(|&a| a == b).map(|p| p as u8)
}

/// The millisecond timestamp of an ID.
pub fn timestamp_ms(id: &str) -> Option<u64> {
    decode(&normalise(id)?).map(|v| (v >> 80) as u64)
}

/// Normalises a user-typed ID or prefix the Crockford way: upper case, `I`/`L` read as `1`,
/// `O` as `0`. `None` when a character cannot be part of an ID or the text is too long.
pub(crate) fn normalise(text: &str) -> Option<String> {
    if text.is_empty() || text.len() > ID_LEN {
        return None;
    }
    text.chars()
        .map(|c| {
            let c = match c.to_ascii_uppercase() {
                'I' | 'L' => '1',
                'O' => '0',
                other => other,
            };
            c.is_ascii()
                .then_some(c)
                .filter(|&c| digit(c as u8).is_some())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        for v in [
            0u128,
            1,
            u128::MAX,
            0x0123_4567_89ab_cdef_0123_4567_89ab_cdef,
        ] {
            let s = encode(v);
            assert_eq!(s.len(), ID_LEN);
            assert_eq!(decode(&s), Some(v), "{s}");
        }
        assert_eq!(encode(u128::MAX), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
        assert_eq!(decode("8ZZZZZZZZZZZZZZZZZZZZZZZZZ"), None);
    }

    #[test]
    fn text_order_is_numeric_order() {
        let a = compose(1_700_000_000_000, [0xff; 10]);
        let b = compose(1_700_000_000_001, [0; 10]);
        assert!(a < b);
        assert!(encode(a) < encode(b));
        assert!(encode(b) < encode(b + 1));
    }

    #[test]
    fn timestamp_is_the_first_48_bits() {
        // The ULID spec's example time.
        let v = compose(1_469_918_176_385, [7; 10]);
        let s = encode(v);
        assert!(s.starts_with("01ARYZ6S41"), "{s}");
        assert_eq!(timestamp_ms(&s), Some(1_469_918_176_385));
        assert_eq!(compose(-5, [0; 10]) >> 80, 0);
        assert_eq!(compose(i64::MAX, [0; 10]) >> 80, u128::from(MAX_MS));
    }

    #[test]
    fn normalise_reads_crockford_aliases() {
        assert_eq!(normalise("01arYz6s4l").as_deref(), Some("01ARYZ6S41"));
        assert_eq!(normalise("o1").as_deref(), Some("01"));
        assert_eq!(normalise("01U"), None);
        assert_eq!(normalise(""), None);
        assert_eq!(normalise("ñ"), None);
        assert_eq!(normalise(&"0".repeat(27)), None);
    }

    #[test]
    fn random_bits_differ() {
        let (a, b) = (random_bits(), random_bits());
        assert!(matches!((a, b), (Ok(a), Ok(b)) if a != b));
    }
}
