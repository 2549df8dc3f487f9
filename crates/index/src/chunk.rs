//! Chunks as the index sees them: the caller's input, and what each row stores.

use crate::error::{IndexError, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A SHA-256 digest, shown as `sha256:<hex>`: of the text that was embedded for a chunk, or
/// of a precomputed vector's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TextHash(pub [u8; 32]);

impl TextHash {
    /// Hash of `text`'s UTF-8 bytes.
    pub fn of(text: &str) -> TextHash {
        TextHash(Sha256::digest(text.as_bytes()).into())
    }

    /// Hash of a precomputed vector: its components as given, little-endian f32 bytes.
    pub fn of_vector(vector: &[f32]) -> TextHash {
        let mut hasher = Sha256::new();
        for x in vector {
            hasher.update(x.to_le_bytes());
        }
        TextHash(hasher.finalize().into())
    }
}

impl fmt::Display for TextHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl FromStr for TextHash {
    type Err = String;

    fn from_str(s: &str) -> Result<TextHash, String> {
        let hex = s
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64)
            .ok_or_else(|| format!("expected `sha256:` and 64 hex digits, got {s:?}"))?;
        let mut out = [0u8; 32];
        for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
            let digit = |c: u8| (c as char).to_digit(16).ok_or(());
            match (digit(pair[0]), digit(pair[1])) {
                (Ok(h), Ok(l)) => out[i] = (h * 16 + l) as u8,
                _ => return Err(format!("expected hex digits, got {s:?}")),
            }
        }
        Ok(TextHash(out))
    }
}

/// What filters look at: SPEC §1's `domain`, `labels`, `facets` and validity window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkMeta {
    /// The chunk's domain (e.g. `laboral`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Labels (e.g. `SINTESIS_CURADA`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Free facets, kept as given.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub facets: BTreeMap<String, Value>,
    /// Start of validity: a calendar date `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// End of validity (inclusive): a calendar date `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
}

impl ChunkMeta {
    fn is_empty(&self) -> bool {
        *self == ChunkMeta::default()
    }

    /// Checks the validity dates of chunk `id`: calendar dates, by the same rule as every
    /// other date veredicto reads ([`veredicto_core::time::check_date`]).
    pub(crate) fn validate(&self, id: &str) -> Result<()> {
        for (field, value) in [
            ("valid_from", &self.valid_from),
            ("valid_to", &self.valid_to),
        ] {
            if let Some(v) = value {
                if let Err(e) = veredicto_core::time::check_date(v) {
                    return Err(IndexError::InvalidChunk {
                        id: veredicto_core::redact::short(id),
                        field: field.to_string(),
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The `YYYY-MM-DD` prefix of `s`, if it starts with one (indexes written before dates were
/// checked against the calendar may hold `2025-11-14T00:00:00Z`: compared by their day).
pub(crate) fn date_prefix(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let ok = b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit);
    ok.then(|| &s[..10])
}

/// One chunk of the corpus given to [`crate::Plan::new`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkInput {
    /// The chunk ID (unique in the corpus).
    pub id: String,
    /// The text that is embedded (representation, text, or title + text); its SHA-256 is the
    /// cache key for the chunk's vector.
    pub text: String,
    /// Metadata for filters.
    pub meta: ChunkMeta,
    /// The original chunk JSON, kept for rehydration ([`crate::ChunkRef::record`]); `None`
    /// keeps nothing.
    pub record: Option<Value>,
}

impl ChunkInput {
    /// A chunk with no metadata and no record.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> ChunkInput {
        ChunkInput {
            id: id.into(),
            text: text.into(),
            meta: ChunkMeta::default(),
            record: None,
        }
    }
}

/// What one row stores in memory (compact: metadata is boxed only when present).
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub id: Box<str>,
    pub text_hash: TextHash,
    /// Hash of the precomputed vector given for the chunk (boxed: most indexes have none).
    pub vector_hash: Option<Box<TextHash>>,
    pub batch: u32,
    pub meta: Option<Box<ChunkMeta>>,
    /// Byte offset and length of the record line in `records.jsonl`.
    pub record: Option<(u64, u64)>,
}

impl Entry {
    pub(crate) fn new(
        id: &str,
        text_hash: TextHash,
        vector_hash: Option<TextHash>,
        batch: u32,
        meta: &ChunkMeta,
        record: Option<(u64, u64)>,
    ) -> Entry {
        Entry {
            id: id.into(),
            text_hash,
            vector_hash: vector_hash.map(Box::new),
            batch,
            meta: (!meta.is_empty()).then(|| Box::new(meta.clone())),
            record,
        }
    }

    pub(crate) fn meta(&self) -> &ChunkMeta {
        static EMPTY: ChunkMeta = ChunkMeta {
            domain: None,
            labels: Vec::new(),
            facets: BTreeMap::new(),
            valid_from: None,
            valid_to: None,
        };
        self.meta.as_deref().unwrap_or(&EMPTY)
    }
}

/// One line of `chunks.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChunkLine {
    pub id: String,
    pub text_hash: String,
    /// `sha256:<hex>` of the precomputed vector's bytes (little-endian f32, as given), when
    /// the vector came with the corpus instead of from a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_hash: Option<String>,
    /// Position of the chunk's batch in the manifest's `batches`.
    pub batch: u32,
    /// The batch's name, repeated for people reading the file.
    pub ingest_batch: String,
    /// The batch's time, repeated for people reading the file.
    pub ingested_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub facets: BTreeMap<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    /// `[offset, length]` of the original chunk line in `records.jsonl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<(u64, u64)>,
}

impl ChunkLine {
    pub(crate) fn meta(&mut self) -> ChunkMeta {
        ChunkMeta {
            domain: self.domain.take(),
            labels: std::mem::take(&mut self.labels),
            facets: std::mem::take(&mut self.facets),
            valid_from: self.valid_from.take(),
            valid_to: self.valid_to.take(),
        }
    }
}
