//! Expected evidence as spans of documents, independent of how the documents were chunked.
//!
//! A golden case may name `evidence` instead of chunk IDs: items `(doc_id, start, end,
//! grade)`, offsets in Unicode scalar values into the document's text, end exclusive. A
//! chunk is located in its document by the same kind of span (`doc_id`, `start`, `end`).
//! The exam then asks, per item, whether the spans of the top-K chunks of its document
//! together cover it.
//!
//! - [`text`]: the one normalisation quotes and chunk texts are compared under (NFC, runs of
//!   white space as one space), locating a quote in a document and mapping the match back to
//!   the document's own offsets, and converting UTF-8 byte or UTF-16 offsets.
//! - [`spans`]: the interval structure per document ([`SpanIndex`]) that answers "which
//!   chunks overlap this span" without scanning every chunk.
//! - [`judge`](mod@judge): one case's items against one ranking: each item's rank and coverage, and the
//!   counts recall, precision, nDCG and AP are computed from (the semantics are documented
//!   there and in `docs/policy.md`).
//! - [`check`]: `golden check` (where each item sits in a chunking) and `golden convert`
//!   (a chunk-ID golden set rewritten as evidence spans).

pub mod check;
pub(crate) mod diagnose;
pub mod judge;
pub mod spans;
pub mod text;

use serde::{Deserialize, Serialize};

pub use judge::{judge, CaseEvidence, EvidenceResult, HoldingChunk, JudgeInput};
pub use spans::{DocSpans, SpanEntry, SpanIndex};

/// The grade of an expected chunk or evidence item that does not give one.
pub const DEFAULT_GRADE: u32 = 1;

/// The highest grade accepted (trec_eval's relevance levels are C `int`s).
pub const MAX_GRADE: u32 = i32::MAX as u32;

pub(crate) fn is_default_grade(g: &u32) -> bool {
    *g == DEFAULT_GRADE
}

pub(crate) fn default_grade() -> u32 {
    DEFAULT_GRADE
}

/// One expected piece of evidence: the characters `start..end` of document `doc_id`.
///
/// Offsets count Unicode scalar values (Rust `char`s) of the document's text as given, end
/// exclusive; readers convert other units before this point. A quote given in the golden set
/// is kept for the reports, located already.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceItem {
    pub doc_id: String,
    pub start: usize,
    pub end: usize,
    /// Relevance grade (gain), 1 unless given; an item counts for recall when its grade is
    /// at least the policy's `relevance_level`.
    #[serde(default = "default_grade", skip_serializing_if = "is_default_grade")]
    pub grade: u32,
    /// The quote the golden set located the item by, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
}

impl EvidenceItem {
    /// Its length in characters.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a chunk sits in its document: characters `start..end` of `doc_id`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChunkSpan {
    pub doc_id: String,
    pub start: usize,
    pub end: usize,
}

/// A borrowed [`ChunkSpan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanRef<'a> {
    pub doc_id: &'a str,
    pub start: usize,
    pub end: usize,
}

impl ChunkSpan {
    pub fn as_ref(&self) -> SpanRef<'_> {
        SpanRef {
            doc_id: &self.doc_id,
            start: self.start,
            end: self.end,
        }
    }
}

/// The unit offsets are given in, for tools that count otherwise (`offset_unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffsetUnit {
    /// Unicode scalar values (`chars`, the default and veredicto's own unit).
    #[default]
    Chars,
    /// UTF-8 bytes (`bytes`: Rust and Go string indices, most search engines).
    Bytes,
    /// UTF-16 code units (`utf16`: JavaScript, Java, C#).
    Utf16,
}

impl OffsetUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            OffsetUnit::Chars => "chars",
            OffsetUnit::Bytes => "bytes",
            OffsetUnit::Utf16 => "utf16",
        }
    }
}

impl std::str::FromStr for OffsetUnit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "chars" => Ok(OffsetUnit::Chars),
            "bytes" => Ok(OffsetUnit::Bytes),
            "utf16" => Ok(OffsetUnit::Utf16),
            other => Err(format!(
                "expected `chars`, `bytes` or `utf16`, got `{}`",
                crate::redact::short(other)
            )),
        }
    }
}
