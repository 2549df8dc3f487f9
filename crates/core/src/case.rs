//! The golden set's cases and the corpus' chunks (SPEC §1).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One case of the golden set: a real question and what must come back for it, as chunk
/// IDs (`expected`) or as spans of documents (`evidence`), never both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub id: String,
    pub query: String,
    /// IDs of the chunks whose retrieval is required, in the order the golden set lists them
    /// (empty when the case names `evidence`).
    pub expected: Vec<String>,
    /// The grade of each expected chunk whose grade is not 1 (`{"id": "c7", "grade": 2}` in
    /// the golden set); every other expected chunk has grade 1.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grades: BTreeMap<String, u32>,
    /// The expected evidence as spans of documents, in the golden set's order (empty when
    /// the case names `expected` chunk IDs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<crate::evidence::EvidenceItem>,
    /// Cut-off for this case; `None` takes the policy's (domain override, then global).
    pub top_k: Option<u32>,
    pub domain: Option<String>,
    pub tags: Vec<String>,
    /// Declared gold (`"gold": true`), independent of the corpus labels.
    pub gold: bool,
    /// A precomputed query embedding (`"query_vector"`), for users who export vectors from
    /// their own pipeline; then no model is needed to search the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_vector: Option<Vec<f32>>,
    /// Metadata filters the case declares (`"filters"`): the retriever ranks only the chunks
    /// they match. A JSON object, as given: `domain` (string), `label` / `labels` (a string
    /// or a list, all required), `valid_at` (`YYYY-MM-DD`), `facets` (an object of scalars)
    /// and any other key a facet equal to its scalar value. Live retrievers receive it as
    /// declared (HTTP, command) or mapped to their engine's filter (see the retrievers'
    /// documentation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Case {
    /// The grade of expected chunk `id` (1 unless the golden set gave another).
    pub fn grade_of(&self, id: &str) -> u32 {
        self.grades
            .get(id)
            .copied()
            .unwrap_or(crate::evidence::DEFAULT_GRADE)
    }

    /// Whether the case judges by evidence spans rather than chunk IDs.
    pub fn by_evidence(&self) -> bool {
        !self.evidence.is_empty()
    }
}

/// One indexed unit of the knowledge base ("píldora"). Only the fields the exam and the
/// diagnosis read are typed; the readers keep the rest of the line untouched elsewhere.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    pub id: String,
    pub doc_id: Option<String>,
    pub text: Option<String>,
    /// The text that is embedded; `None` when the field is absent or empty.
    pub representation: Option<String>,
    pub domain: Option<String>,
    pub labels: Vec<String>,
    pub valid_from: Option<String>,
    pub valid_to: Option<String>,
    pub ingest_batch: Option<String>,
    /// Free facets (e.g. `{"tipo": "tabla"}`), kept as given.
    pub facets: BTreeMap<String, serde_json::Value>,
    /// Where the chunk sits in its document `doc_id`: characters `start..end` of the
    /// document's text (Unicode scalar values, end exclusive), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<usize>,
}

impl Chunk {
    /// Whether this chunk carries `label` (exact, case-sensitive match).
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }

    /// Where the chunk sits, when it names its document and both offsets.
    pub fn span(&self) -> Option<crate::evidence::SpanRef<'_>> {
        match (self.doc_id.as_deref(), self.start, self.end) {
            (Some(doc_id), Some(start), Some(end)) => {
                Some(crate::evidence::SpanRef { doc_id, start, end })
            }
            _ => None,
        }
    }
}

/// The corpus, indexed by chunk ID.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    chunks: BTreeMap<String, Chunk>,
    /// What the chunks come from, for messages: `corpus` or `index`.
    source: &'static str,
    /// When each ingestion batch entered (batch name → RFC 3339 time), as far as the source
    /// records it: the index keeps one record per batch; a corpus file records none.
    batch_times: BTreeMap<String, String>,
    /// Chunks per ingestion batch in the whole collection, when the corpus holds only some
    /// of its chunks ([`Corpus::with_batch_counts`]).
    batch_counts: Option<BTreeMap<String, usize>>,
    /// The located chunks by document, built the first time evidence asks.
    spans: std::sync::OnceLock<crate::evidence::SpanIndex>,
}

impl Corpus {
    /// Builds a corpus; later chunks with an ID already present replace nothing (readers
    /// reject duplicate IDs before this point).
    pub fn new(chunks: impl IntoIterator<Item = Chunk>) -> Self {
        let mut map = BTreeMap::new();
        for c in chunks {
            map.entry(c.id.clone()).or_insert(c);
        }
        Corpus {
            chunks: map,
            source: "corpus",
            batch_times: BTreeMap::new(),
            batch_counts: None,
            spans: std::sync::OnceLock::new(),
        }
    }

    /// Adds the time each ingestion batch entered (batch name → RFC 3339 time).
    pub fn with_batch_times(mut self, times: BTreeMap<String, String>) -> Self {
        self.batch_times = times;
        self
    }

    /// Declares how many chunks each ingestion batch holds in the whole collection, for a
    /// corpus that holds only the chunks an exam reads (the index reads the others' records
    /// never): [`Corpus::batches`] counts these instead of the chunks held.
    pub fn with_batch_counts(mut self, counts: BTreeMap<String, usize>) -> Self {
        self.batch_counts = Some(counts);
        self
    }

    /// When batch `name` entered, if the source records it.
    pub fn batch_time(&self, name: &str) -> Option<&str> {
        self.batch_times.get(name).map(String::as_str)
    }

    /// The ingestion batches the chunks name (`ingest_batch`), each with its time when
    /// known and how many chunks it holds now, in name order.
    pub fn batches(&self) -> Vec<crate::exam::CorpusBatch> {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        if let Some(counts) = &self.batch_counts {
            count.extend(counts.iter().map(|(k, v)| (k.as_str(), *v)));
        } else {
            for c in self.chunks.values() {
                if let Some(b) = c.ingest_batch.as_deref() {
                    *count.entry(b).or_default() += 1;
                }
            }
        }
        count
            .into_iter()
            .map(|(name, chunks)| crate::exam::CorpusBatch {
                name: name.to_owned(),
                ingested_at: self.batch_time(name).map(str::to_owned),
                chunks,
            })
            .collect()
    }

    /// A corpus rehydrated from veredicto's index: messages say "index".
    pub fn from_index(chunks: impl IntoIterator<Item = Chunk>) -> Self {
        Corpus {
            source: "index",
            ..Corpus::new(chunks)
        }
    }

    /// `corpus` or `index`.
    pub fn source(&self) -> &'static str {
        if self.source.is_empty() {
            "corpus"
        } else {
            self.source
        }
    }

    pub fn get(&self, id: &str) -> Option<&Chunk> {
        self.chunks.get(id)
    }

    /// The chunks located in their documents (`doc_id`, `start`, `end`), per document.
    pub fn spans(&self) -> &crate::evidence::SpanIndex {
        self.spans.get_or_init(|| {
            crate::evidence::SpanIndex::new(
                self.chunks
                    .values()
                    .filter_map(|c| c.span().map(|s| (s.doc_id, s.start, s.end, c.id.as_str()))),
            )
        })
    }

    /// Chunks in ID order.
    pub fn iter(&self) -> impl Iterator<Item = &Chunk> {
        self.chunks.values()
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}
