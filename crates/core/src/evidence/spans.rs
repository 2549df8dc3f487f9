//! Where every chunk sits, per document: an interval structure that lists the chunks
//! overlapping a span in `O(log n + m)` (m: the chunks it returns plus, at worst, chunks
//! that start before the span and end inside a longer predecessor's reach), never a scan of
//! the whole corpus.
//!
//! Per document the chunks are sorted by `(start, end, id)` beside the running maximum of
//! their ends. The chunks that overlap `[s, e)` start before `e` (a binary search bounds
//! them) and end after `s`: since the running maximum only grows, the first chunk whose
//! running maximum passes `s` is found by a second binary search, and only the chunks between
//! the two are looked at.

use std::collections::HashMap;

/// One chunk's place in its document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SpanEntry {
    pub start: usize,
    pub end: usize,
    pub id: String,
}

/// The chunks of one document, sorted by `(start, end, id)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocSpans {
    entries: Vec<SpanEntry>,
    /// `max_end[i]` = the largest `end` among `entries[..=i]`.
    max_end: Vec<usize>,
}

impl DocSpans {
    fn build(mut entries: Vec<SpanEntry>) -> DocSpans {
        entries.sort_unstable();
        let mut max_end = Vec::with_capacity(entries.len());
        let mut m = 0usize;
        for e in &entries {
            m = m.max(e.end);
            max_end.push(m);
        }
        DocSpans { entries, max_end }
    }

    /// Every chunk, in document order.
    pub fn entries(&self) -> &[SpanEntry] {
        &self.entries
    }

    /// The chunks that share at least one character with `[start, end)`, in document order.
    pub fn overlapping(&self, start: usize, end: usize) -> impl Iterator<Item = &SpanEntry> {
        let hi = self.entries.partition_point(|e| e.start < end);
        let lo = self.max_end[..hi].partition_point(|&m| m <= start);
        self.entries[lo..hi]
            .iter()
            .filter(move |e| e.end > start && e.start < e.end)
    }
}

/// The chunks of a corpus located in their documents, by document ID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpanIndex {
    docs: HashMap<String, DocSpans>,
    chunks: usize,
}

impl SpanIndex {
    /// Builds the index from `(doc_id, start, end, chunk id)`; empty spans are kept (they
    /// overlap nothing).
    pub fn new<'a>(spans: impl IntoIterator<Item = (&'a str, usize, usize, &'a str)>) -> Self {
        let mut by_doc: HashMap<String, Vec<SpanEntry>> = HashMap::new();
        let mut chunks = 0;
        for (doc, start, end, id) in spans {
            chunks += 1;
            by_doc.entry(doc.to_owned()).or_default().push(SpanEntry {
                start,
                end,
                id: id.to_owned(),
            });
        }
        SpanIndex {
            docs: by_doc
                .into_iter()
                .map(|(d, v)| (d, DocSpans::build(v)))
                .collect(),
            chunks,
        }
    }

    /// The chunks of document `doc_id`, if any chunk is located in it.
    pub fn doc(&self, doc_id: &str) -> Option<&DocSpans> {
        self.docs.get(doc_id)
    }

    /// Chunks located.
    pub fn len(&self) -> usize {
        self.chunks
    }

    pub fn is_empty(&self) -> bool {
        self.chunks == 0
    }

    /// Documents with at least one chunk.
    pub fn documents(&self) -> usize {
        self.docs.len()
    }

    /// The chunks overlapping `[start, end)` of `doc_id`, in document order.
    pub fn overlapping<'a>(
        &'a self,
        doc_id: &str,
        start: usize,
        end: usize,
    ) -> impl Iterator<Item = &'a SpanEntry> + 'a {
        self.docs
            .get(doc_id)
            .into_iter()
            .flat_map(move |d| d.overlapping(start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_long_chunk_early_in_the_document_is_found_late() {
        let idx = SpanIndex::new([
            ("d", 0, 1000, "long"),
            ("d", 10, 20, "a"),
            ("d", 30, 40, "b"),
            ("d", 500, 510, "c"),
            ("e", 0, 1000, "other"),
        ]);
        let ids: Vec<&str> = idx
            .overlapping("d", 505, 600)
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(ids, ["long", "c"]);
        let ids: Vec<&str> = idx
            .overlapping("d", 20, 30)
            .map(|e| e.id.as_str())
            .collect();
        assert_eq!(ids, ["long"], "end is exclusive on both sides");
        assert_eq!(idx.overlapping("x", 0, 10).count(), 0);
    }

    proptest! {
        /// The index returns exactly what a scan of every chunk returns.
        #[test]
        fn overlapping_agrees_with_a_scan(
            spans in prop::collection::vec((0usize..200, 0usize..60), 0..60),
            query in (0usize..220, 1usize..80),
        ) {
            let spans: Vec<(usize, usize, String)> = spans
                .iter()
                .enumerate()
                .map(|(i, &(s, l))| (s, s + l, format!("c{i}")))
                .collect();
            let idx = SpanIndex::new(spans.iter().map(|(s, e, id)| ("d", *s, *e, id.as_str())));
            let (qs, qe) = (query.0, query.0 + query.1);
            let mut got: Vec<&str> = idx.overlapping("d", qs, qe).map(|e| e.id.as_str()).collect();
            let mut want: Vec<&str> = spans
                .iter()
                .filter(|(s, e, _)| s < e && *s < qe && *e > qs)
                .map(|(_, _, id)| id.as_str())
                .collect();
            got.sort_unstable();
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }
}
