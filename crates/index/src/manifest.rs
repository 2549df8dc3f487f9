//! `manifest.json`: what the index is, how it was built, and what its files must hold.

use crate::error::{IndexError, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Value of the manifest's `format` key.
pub const FORMAT_NAME: &str = "veredicto-index";

/// The on-disk format version this build writes and the highest it reads. Version 4 added
/// the optional lexical (BM25) arm ([`crate::LexicalRecord`], files under `lexical/`);
/// version 3 the per-block checksums of `vectors.f32` ([`VectorBlocks`]); version 2 the
/// binary chunk table.
pub const FORMAT_VERSION: u64 = 4;

/// Rows per checksummed block of `vectors.f32` in the indexes this build writes (the last
/// block holds the rest). Readers take the manifest's [`VectorBlocks::rows`].
pub const VECTOR_BLOCK_ROWS: usize = 4096;

/// File names inside an index folder.
pub mod files {
    /// The manifest.
    pub const MANIFEST: &str = "manifest.json";
    /// Row-major little-endian f32 vectors, `count × dimension`.
    pub const VECTORS: &str = "vectors.f32";
    /// One JSON line of metadata per row (format version 1; read, no longer written).
    pub const CHUNKS: &str = "chunks.jsonl";
    /// The binary chunk table (format version 2): fixed-width rows, memory-mapped.
    pub const CHUNK_TABLE: &str = "chunks.bin";
    /// The original chunk JSON lines, for rehydration; addressed by byte offsets.
    pub const RECORDS: &str = "records.jsonl";
    /// The folder of the lexical (BM25) arm (format version 4), when the index has one.
    pub const LEXICAL_DIR: &str = "lexical";
    /// How the manifest's `files` names the lexical arm's files: `lexical/NAME`.
    pub const LEXICAL_PREFIX: &str = "lexical/";
}

/// The embedding model's fingerprint as the caller computed it: an opaque JSON value
/// (model name, file hashes, pooling, normalisation, dimension, prefixes, ...) and its hash.
///
/// The index never interprets `value`; it compares `hash` to refuse mixing models.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFingerprint {
    /// Whatever describes the model; stored verbatim in the manifest.
    pub value: Value,
    /// `sha256:<64 lower-case hex digits>` of `value` (computed by the caller).
    pub hash: String,
}

impl ModelFingerprint {
    /// Checks that `hash` looks like `sha256:<64 hex>`.
    pub fn validate(&self) -> Result<()> {
        check_sha256(&self.hash, "model fingerprint hash")
    }
}

pub(crate) fn check_sha256(s: &str, field: &str) -> Result<()> {
    let ok = s
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(())
    } else {
        Err(IndexError::argument(
            field,
            format!("expected `sha256:` followed by 64 hex digits, got {s:?}"),
        ))
    }
}

/// Which field of a chunk was embedded (SPEC §2: the representation by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EmbeddedField {
    /// The chunk's `representation` (falling back to `text` where the caller decided so).
    #[serde(rename = "representation")]
    Representation,
    /// The chunk's `text`.
    #[serde(rename = "text")]
    Text,
    /// BEIR convention: `title + " " + text`.
    #[serde(rename = "title+text")]
    TitleText,
}

impl std::fmt::Display for EmbeddedField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EmbeddedField::Representation => "representation",
            EmbeddedField::Text => "text",
            EmbeddedField::TitleText => "title+text",
        })
    }
}

/// The similarity the index ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Metric {
    /// Cosine similarity: vectors and queries are L2-normalised, the score is their inner product.
    #[serde(rename = "cosine")]
    Cosine,
}

/// One `apply`: the ingestion batch, its time and what it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRecord {
    /// The batch label given by the caller (`--batch-label`).
    pub name: String,
    /// The time given by the caller (the library never reads the clock).
    pub time: String,
    /// Chunks whose ID was new.
    pub added: usize,
    /// Chunks whose ID existed with another text hash.
    pub changed: usize,
    /// Chunks that were in the index and are not in the new corpus.
    pub removed: usize,
    /// Chunks kept as they were (same ID, same text hash).
    pub unchanged: usize,
    /// Vectors new in this batch: distinct texts the caller embedded, or the precomputed
    /// vectors of added and changed chunks.
    pub embedded: usize,
    /// Added or changed chunks whose vector was found in the index by text hash.
    pub reused: usize,
    /// Corpus lines the ingest left out, with their reason (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<veredicto_core::gate::Rejection>,
    /// Written acceptances of this batch's rejections, oldest first; only ever appended to
    /// ([`crate::accept_latest_batch`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptances: Vec<veredicto_core::gate::Acceptance>,
}

impl BatchRecord {
    /// Corpus lines this batch read: the chunks it kept (added, changed, unchanged) and
    /// the lines it rejected.
    pub fn lines_read(&self) -> usize {
        self.added + self.changed + self.unchanged + self.rejected.len()
    }
}

/// The ingestion gate on the index's latest batch (read from `DIR/manifest.json` alone,
/// so that a damaged data file does not hide the decision).
pub fn judge_latest_batch(
    dir: &Path,
    policy: &veredicto_core::gate::IngestPolicy,
) -> Result<veredicto_core::gate::GateOutcome> {
    let manifest = Manifest::read(dir)?;
    let Some(batch) = manifest.batches.last() else {
        return Err(IndexError::argument("batch", "the index has no batch"));
    };
    Ok(veredicto_core::gate::judge(
        &batch.name,
        batch.lines_read(),
        &batch.rejected,
        &batch.acceptances,
        policy,
    ))
}

/// Appends a written acceptance to the index's latest batch: the manifest is rewritten
/// (temporary file, fsync, rename, under the writer lock); nothing else changes, and no
/// earlier acceptance is ever removed. Returns the batch as recorded.
pub fn accept_latest_batch(
    dir: &Path,
    acceptance: veredicto_core::gate::Acceptance,
    wait: std::time::Duration,
) -> Result<BatchRecord> {
    use std::io::Write;
    let _lock = if crate::lock::held_by_us(dir)? {
        None
    } else {
        Some(crate::lock::WriterLock::acquire(dir, wait)?)
    };
    let mut manifest = Manifest::read(dir)?;
    let Some(batch) = manifest.batches.last_mut() else {
        return Err(IndexError::argument("batch", "the index has no batch"));
    };
    batch.acceptances.push(acceptance);
    let recorded = batch.clone();
    let path = dir.join(files::MANIFEST);
    let temp = dir.join(format!(".{}.tmp-{}", files::MANIFEST, std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&temp)?;
        f.write_all(&manifest.to_bytes())?;
        f.sync_all()?;
        std::fs::rename(&temp, &path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&temp);
        return Err(IndexError::io(&path, e));
    }
    Ok(recorded)
}

/// Size and SHA-256 of one data file, checked by [`crate::Index::verify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Length in bytes.
    pub bytes: u64,
    /// `sha256:<hex>` of the contents.
    pub sha256: String,
}

/// Checksums of `vectors.f32` block by block (format version 3): CRC-32 of the bytes of each
/// run of [`VectorBlocks::rows`] rows. Checked in the pass made before the first search
/// ([`crate::Index::check_vectors`]), so that a changed bit or a swapped pair of rows is an
/// error naming the block before any result is given, at a fraction of one search's cost;
/// the manifest's SHA-256 of the whole file stays for [`crate::Index::verify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorBlocks {
    /// Rows per block; the last block holds the rest.
    pub rows: usize,
    /// CRC-32 (IEEE 802.3, the checksum of gzip and zlib) of each block's bytes, as 8
    /// lower-case hex digits, in row order: `ceil(count / rows)` of them.
    pub crc32: Vec<String>,
}

impl VectorBlocks {
    /// The checksums as numbers, after checking their count for `count` rows (`path` names
    /// the manifest in errors).
    pub(crate) fn sums(&self, path: &Path, count: usize) -> Result<Vec<u32>> {
        let bad = |m: String| IndexError::corrupt(path, 0, format!("`vector_blocks`: {m}"));
        if self.rows == 0 {
            return Err(bad("`rows` is 0".into()));
        }
        if self.crc32.len() != count.div_ceil(self.rows) {
            return Err(bad(format!(
                "{} checksums for {count} rows in blocks of {}, expected {}",
                self.crc32.len(),
                self.rows,
                count.div_ceil(self.rows)
            )));
        }
        self.crc32
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let ok = h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit());
                ok.then(|| u32::from_str_radix(h, 16).ok())
                    .flatten()
                    .ok_or_else(|| {
                        bad(format!(
                            "checksum {i} is not 8 hex digits: {:?}",
                            veredicto_core::redact::short(h)
                        ))
                    })
            })
            .collect()
    }
}

/// Accumulates [`VectorBlocks`] row by row while `vectors.f32` is written.
#[derive(Debug)]
pub(crate) struct BlockSums {
    rows: usize,
    in_block: usize,
    crc: crc32fast::Hasher,
    done: Vec<String>,
}

impl BlockSums {
    pub(crate) fn new(rows: usize) -> BlockSums {
        BlockSums {
            rows,
            in_block: 0,
            crc: crc32fast::Hasher::new(),
            done: Vec::new(),
        }
    }

    /// Adds the bytes of the next row.
    pub(crate) fn push_row(&mut self, bytes: &[u8]) {
        self.crc.update(bytes);
        self.in_block += 1;
        if self.in_block == self.rows {
            let crc = std::mem::replace(&mut self.crc, crc32fast::Hasher::new());
            self.done.push(format!("{:08x}", crc.finalize()));
            self.in_block = 0;
        }
    }

    pub(crate) fn finish(mut self) -> VectorBlocks {
        if self.in_block > 0 {
            self.done.push(format!("{:08x}", self.crc.finalize()));
        }
        VectorBlocks {
            rows: self.rows,
            crc32: self.done,
        }
    }
}

/// The contents of `manifest.json`.
///
/// Serialised with its fields in declaration order and `BTreeMap`s, so the same index always
/// gives the same bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// The on-disk format version ([`FORMAT_VERSION`] for indexes this build writes).
    pub format_version: u64,
    /// Number of components per vector.
    pub dimension: usize,
    /// Number of rows (chunks).
    pub count: usize,
    /// The similarity (always cosine on L2-normalised vectors).
    pub metric: Metric,
    /// Element type of `vectors.f32`: always `f32le`.
    pub vector_dtype: String,
    /// How rows are ordered: always `chunk_id_ascending` (byte-wise).
    pub row_order: String,
    /// The chunk field that was embedded.
    pub field: EmbeddedField,
    /// The model fingerprint value, verbatim.
    pub model: Value,
    /// The model fingerprint hash.
    pub model_hash: String,
    /// The corpus hash given by the caller at the last `apply`.
    pub corpus_hash: String,
    /// Time of the first build (or of the last full rebuild).
    pub created_at: String,
    /// Time of the last `apply`.
    pub updated_at: String,
    /// Every `apply` since creation, oldest first; `chunks.jsonl` refers to them by position.
    pub batches: Vec<BatchRecord>,
    /// Size and hash of each data file, by file name.
    pub files: BTreeMap<String, FileRecord>,
    /// Per-block checksums of `vectors.f32` (format version 3; absent before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_blocks: Option<VectorBlocks>,
    /// The lexical (BM25) arm (format version 4), absent when the index has none; its files
    /// are listed in `files` as `lexical/NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexical: Option<crate::LexicalRecord>,
}

/// Value of `vector_dtype`.
pub const VECTOR_DTYPE: &str = "f32le";
/// Value of `row_order`.
pub const ROW_ORDER: &str = "chunk_id_ascending";

impl Manifest {
    /// Reads and checks `DIR/manifest.json`: refuses a newer format version before looking at
    /// anything else, so an old build gives a clear message on a new index.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(files::MANIFEST);
        let bytes = std::fs::read(&path).map_err(|e| IndexError::io(&path, e))?;
        Manifest::parse(&path, &bytes)
    }

    /// Parses and checks the bytes of a `manifest.json` read from `path` (named in errors).
    pub(crate) fn parse(path: &Path, bytes: &[u8]) -> Result<Manifest> {
        let path = path.to_path_buf();
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| IndexError::corrupt(&path, e.line(), format!("invalid JSON: {e}")))?;
        let Some(object) = value.as_object() else {
            return Err(IndexError::corrupt(&path, 0, "expected a JSON object"));
        };
        if object.get("format").and_then(Value::as_str) != Some(FORMAT_NAME) {
            return Err(IndexError::corrupt(
                &path,
                0,
                format!("`format` must be {FORMAT_NAME:?}: not a veredicto index"),
            ));
        }
        let found = object
            .get("format_version")
            .and_then(Value::as_u64)
            .ok_or_else(|| {
                IndexError::corrupt(&path, 0, "`format_version` missing or not an integer")
            })?;
        if found > FORMAT_VERSION {
            return Err(IndexError::NewerFormat {
                path,
                found,
                supported: FORMAT_VERSION,
            });
        }
        let manifest: Manifest = serde_json::from_value(value)
            .map_err(|e| IndexError::corrupt(&path, 0, format!("{e}")))?;
        if manifest.dimension == 0 {
            return Err(IndexError::corrupt(&path, 0, "`dimension` is 0"));
        }
        if manifest.vector_dtype != VECTOR_DTYPE {
            return Err(IndexError::corrupt(
                &path,
                0,
                format!(
                    "`vector_dtype` {:?} is not supported (expected {VECTOR_DTYPE:?})",
                    manifest.vector_dtype
                ),
            ));
        }
        match (&manifest.vector_blocks, manifest.format_version >= 3) {
            (Some(blocks), _) => {
                blocks.sums(&path, manifest.count)?;
            }
            (None, true) => {
                return Err(IndexError::corrupt(
                    &path,
                    0,
                    "`vector_blocks` missing (format version 3 has a checksum per block of vectors.f32)",
                ))
            }
            (None, false) => {}
        }
        if manifest.row_order != ROW_ORDER {
            return Err(IndexError::corrupt(
                &path,
                0,
                format!(
                    "`row_order` {:?} is not supported (expected {ROW_ORDER:?})",
                    manifest.row_order
                ),
            ));
        }
        Ok(manifest)
    }

    /// The manifest as written: pretty JSON with a final newline.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        // Serialising plain data (strings, integers, JSON values) cannot fail.
        let mut out = serde_json::to_vec_pretty(self).unwrap_or_default();
        out.push(b'\n');
        out
    }
}
