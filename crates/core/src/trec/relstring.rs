//! `relstring.n`: the relevance of the first n retrieved documents as a string (trec_eval
//! prints it per query only, between single quotes).
//!
//! One character per rank: the level for 0-9, `>` above 9, `-` not in the qrels, `.` listed
//! with a negative level (in the pool, unjudged). Default n = 10.

use super::{ResRels, NONPOOL, UNJUDGED};

/// The relevance string of the first `len` documents (negative `len` gives "").
pub fn relstring(q: &ResRels, len: i64) -> String {
    let n = usize::try_from(len.max(0)).unwrap_or(usize::MAX);
    q.rels()
        .iter()
        .take(n)
        .map(|&r| match r {
            10.. => '>',
            0..=9 => char::from(b'0' + r as u8),
            NONPOOL => '-',
            UNJUDGED => '.',
            _ => '<',
        })
        .collect()
}
