//! veredicto's embedded vector index (SPEC §2, §6): an on-disk, versioned folder of
//! L2-normalised vectors and chunk metadata, incremental ingest, and exact, deterministic
//! search with the rank of any chunk.
//!
//! The index does not embed anything: the caller passes vectors and an opaque model
//! fingerprint ([`ModelFingerprint`]). The format, the tie rule and what is refused are
//! documented in `docs/index.md`.
//!
//! ```no_run
//! # fn main() -> Result<(), veredicto_index::IndexError> {
//! use veredicto_index::*;
//! # let embed = |texts: Vec<(&str, &str)>| -> Vec<Vec<f32>> { unimplemented!() };
//! # let (corpus, model, dir, query): (Vec<ChunkInput>, ModelFingerprint, std::path::PathBuf, Vec<f32>) = unimplemented!();
//! let old = Index::open(&dir).ok();
//! let settings = IngestSettings { model, dimension: 384, field: EmbeddedField::Representation, full_rebuild: false };
//! let plan = Plan::new(old.as_ref(), corpus, settings)?;
//! let vectors = embed(plan.to_embed());
//! let batch = BatchInfo { name: "2025-06".into(), time: "2025-06-01T00:00:00Z".into(), corpus_hash: "sha256:...".into() };
//! let index = plan.apply(&vectors, &batch, &dir)?;
//! let hits = index.search(&query, 10, None)?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod chunk;
mod error;
mod filter;
mod index;
mod ingest;
mod kernel;
pub mod lexical;
mod lock;
mod manifest;
pub mod records;
mod search;
mod table;
mod write;

pub use chunk::{ChunkInput, ChunkMeta, TextHash};
pub use error::{IndexError, Result};
pub use filter::Filter;
pub use index::{ChunkRef, Index};
pub use ingest::{BatchInfo, IngestSettings, LexicalWork, Plan};
pub use kernel::{dot, normalize};
pub use lexical::{Analyzer, LexicalQuery, LexicalRecord};
pub use lock::{WriterLock, DEFAULT_LOCK_WAIT};
pub use manifest::{
    accept_latest_batch, files, judge_latest_batch, BatchRecord, EmbeddedField, FileRecord,
    Manifest, Metric, ModelFingerprint, VectorBlocks, FORMAT_NAME, FORMAT_VERSION,
    VECTOR_BLOCK_ROWS,
};
pub use search::{Hit, Query, QueryResult, Rank};

/// `sha256:<lower-case hex>` of a digest.
pub(crate) fn hash_hex(digest: &[u8]) -> String {
    let mut out = String::with_capacity(7 + 2 * digest.len());
    out.push_str("sha256:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}
