//! The chunks a recorded run read, kept in the history so that `corpus check` can say what
//! entered, changed and left since the last accepted run, chunk by chunk, by batch and
//! domain.
//!
//! A snapshot is the list of the corpus' chunks sorted by ID, each with an 8-byte content
//! hash (the first 8 bytes of the SHA-256 of its text, representation, validity and
//! labels: what [`crate::hygiene`] calls a change), its domain and its ingestion batch.
//! [`ChunkSnapshot::encode`] writes it in a compact binary form (documented on the
//! function); its [`ChunkSnapshot::fingerprint`] is the SHA-256 of that form.

use crate::case::Chunk;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// One chunk of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkPrint {
    pub id: String,
    /// First 8 bytes of the SHA-256 of the chunk's content (see the module docs).
    pub hash: [u8; 8],
    pub domain: Option<String>,
    pub batch: Option<String>,
}

/// The chunks of a corpus, sorted by ID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkSnapshot {
    pub chunks: Vec<ChunkPrint>,
}

const MAGIC: &[u8; 4] = b"VCS1";

/// The content hash of a chunk: text, representation, validity and labels, each field
/// marked present or absent and length-prefixed so that no two contents collide by
/// concatenation.
pub fn content_hash(c: &Chunk) -> [u8; 8] {
    let mut h = Sha256::new();
    let mut field = |v: Option<&str>| match v {
        None => h.update([0u8]),
        Some(s) => {
            h.update([1u8]);
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        }
    };
    field(c.text.as_deref());
    field(c.representation.as_deref());
    field(c.valid_from.as_deref());
    field(c.valid_to.as_deref());
    for l in &c.labels {
        field(Some(l));
    }
    let digest = h.finalize();
    let mut out = [0u8; 8];
    out.copy_from_slice(&digest[..8]);
    out
}

impl ChunkSnapshot {
    /// The snapshot of `chunks` (any order; sorted by ID here).
    pub fn of<'a>(chunks: impl IntoIterator<Item = &'a Chunk>) -> Self {
        let mut chunks: Vec<ChunkPrint> = chunks
            .into_iter()
            .map(|c| ChunkPrint {
                id: c.id.clone(),
                hash: content_hash(c),
                domain: c.domain.clone(),
                batch: c.ingest_batch.clone(),
            })
            .collect();
        chunks.sort_by(|a, b| a.id.cmp(&b.id));
        ChunkSnapshot { chunks }
    }

    /// The binary form: `VCS1`, then the domain table and the batch table (each a count
    /// and that many length-prefixed UTF-8 strings, in sorted order), then the chunk count
    /// and per chunk: its length-prefixed ID, its 8 hash bytes, its domain's and its
    /// batch's position in their table plus one (0: none). Counts, lengths and positions
    /// are LEB128 varints. The same chunks always give the same bytes.
    pub fn encode(&self) -> Vec<u8> {
        let table = |f: fn(&ChunkPrint) -> Option<&String>| -> BTreeMap<&str, u64> {
            let mut t: BTreeMap<&str, u64> = self
                .chunks
                .iter()
                .filter_map(|c| f(c).map(String::as_str))
                .map(|s| (s, 0))
                .collect();
            for (i, v) in t.values_mut().enumerate() {
                *v = i as u64 + 1;
            }
            t
        };
        let domains = table(|c| c.domain.as_ref());
        let batches = table(|c| c.batch.as_ref());
        let mut out = Vec::with_capacity(16 + self.chunks.len() * 16);
        out.extend_from_slice(MAGIC);
        for t in [&domains, &batches] {
            varint(&mut out, t.len() as u64);
            for s in t.keys() {
                string(&mut out, s);
            }
        }
        varint(&mut out, self.chunks.len() as u64);
        for c in &self.chunks {
            string(&mut out, &c.id);
            out.extend_from_slice(&c.hash);
            varint(&mut out, c.domain.as_deref().map_or(0, |d| domains[d]));
            varint(&mut out, c.batch.as_deref().map_or(0, |b| batches[b]));
        }
        out
    }

    /// Reads [`ChunkSnapshot::encode`]'s form back.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != MAGIC {
            return Err("not a chunk snapshot (bad magic)".into());
        }
        let mut tables: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        for t in &mut tables {
            let n = r.varint()?;
            for _ in 0..n {
                t.push(r.string()?);
            }
        }
        let n = r.varint()?;
        let mut chunks = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(1 << 24));
        let pick = |t: &Vec<String>, i: u64| -> Result<Option<String>, String> {
            match i {
                0 => Ok(None),
                i => t
                    .get(usize::try_from(i - 1).unwrap_or(usize::MAX))
                    .cloned()
                    .map(Some)
                    .ok_or_else(|| format!("table position {i} out of range")),
            }
        };
        for _ in 0..n {
            let id = r.string()?;
            let mut hash = [0u8; 8];
            hash.copy_from_slice(r.take(8)?);
            let domain = pick(&tables[0], r.varint()?)?;
            let batch = pick(&tables[1], r.varint()?)?;
            chunks.push(ChunkPrint {
                id,
                hash,
                domain,
                batch,
            });
        }
        if r.at != bytes.len() {
            return Err(format!("{} trailing bytes", bytes.len() - r.at));
        }
        if chunks.windows(2).any(|w| w[0].id >= w[1].id) {
            return Err("chunk IDs not sorted and unique".into());
        }
        Ok(ChunkSnapshot { chunks })
    }

    /// `sha256:<hex>` of the binary form: equal for the same chunks, contents, domains and
    /// batches.
    pub fn fingerprint(&self) -> String {
        fingerprint_of(&self.encode())
    }
}

/// `sha256:<hex>` of an encoded snapshot.
pub fn fingerprint_of(encoded: &[u8]) -> String {
    let d = Sha256::digest(encoded);
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn string(out: &mut Vec<u8>, s: &str) {
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| format!("truncated at byte {}", self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("varint too long at byte {}", self.at))
    }

    fn string(&mut self) -> Result<String, String> {
        let n = usize::try_from(self.varint()?).map_err(|_| "length too large".to_owned())?;
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| format!("invalid UTF-8 before byte {}", self.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, text: &str, domain: Option<&str>, batch: Option<&str>) -> Chunk {
        Chunk {
            id: id.into(),
            text: Some(text.into()),
            domain: domain.map(str::to_owned),
            ingest_batch: batch.map(str::to_owned),
            ..Chunk::default()
        }
    }

    #[test]
    fn snapshot_round_trips_and_is_order_independent() {
        let a = chunk("b", "two", Some("legal"), Some("2026-01"));
        let b = chunk("a", "one", None, Some("2026-02"));
        let c = chunk("c", "three", Some("hr"), None);
        let s = ChunkSnapshot::of([&a, &b, &c]);
        let t = ChunkSnapshot::of([&c, &a, &b]);
        assert_eq!(s.encode(), t.encode());
        assert_eq!(s.fingerprint(), t.fingerprint());
        let back = ChunkSnapshot::decode(&s.encode()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.chunks[0].id, "a");
        assert_eq!(back.chunks[2].domain.as_deref(), Some("hr"));
        // A changed text changes the hash and the fingerprint.
        let a2 = chunk("b", "two!", Some("legal"), Some("2026-01"));
        let u = ChunkSnapshot::of([&a2, &b, &c]);
        assert_ne!(u.chunks[1].hash, s.chunks[1].hash);
        assert_ne!(u.fingerprint(), s.fingerprint());
        // Damage is caught.
        let mut bytes = s.encode();
        bytes.pop();
        assert!(ChunkSnapshot::decode(&bytes).is_err());
        assert!(ChunkSnapshot::decode(b"nope").is_err());
    }
}
