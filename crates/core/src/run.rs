//! A retriever's results for the golden set's queries, in the retriever's order.

use std::collections::BTreeMap;

/// One retrieved chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieved {
    pub id: String,
    /// The retriever's score, when it gives one. Higher is better.
    pub score: Option<f64>,
}

/// Ranked results per query ID. Ranks are 1-based positions in each list.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// A free name for the run (the TREC tag, or the file name).
    pub name: String,
    pub queries: BTreeMap<String, Vec<Retrieved>>,
    /// Ranks known beyond the listed results: per query, chunk ID → (1-based rank, score).
    /// A retriever that can rank the whole index (veredicto's) fills it for the expected
    /// chunks, so "position 15" is reported even when only the top 10 are listed.
    pub known_ranks: BTreeMap<String, BTreeMap<String, (usize, Option<f64>)>>,
    /// Per query, the duplicate chunk IDs removed from the retriever's answer before the
    /// list above was kept ([`crate::retrieval::remove_duplicates`]): the exam reports them.
    pub duplicates: BTreeMap<String, crate::retrieval::RemovedDuplicates>,
    /// Where the retriever says its chunks sit in their documents (its `doc_id`, `start`
    /// and `end` fields), by chunk ID: for evidence, these win over the corpus'.
    pub spans: BTreeMap<String, crate::evidence::ChunkSpan>,
}

impl Run {
    pub fn results(&self, query_id: &str) -> &[Retrieved] {
        self.queries.get(query_id).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Where chunk `id` sits: the retriever's span, else the corpus'.
    pub fn span_of<'a>(
        &'a self,
        id: &str,
        corpus: Option<&'a crate::case::Corpus>,
    ) -> Option<crate::evidence::SpanRef<'a>> {
        self.spans
            .get(id)
            .map(crate::evidence::ChunkSpan::as_ref)
            .or_else(|| corpus.and_then(|c| c.get(id)).and_then(|c| c.span()))
    }

    /// The rank and score of `chunk` for `query_id`: its position in the listed results,
    /// else a known rank beyond them.
    pub fn rank_of(&self, query_id: &str, chunk: &str) -> Option<(usize, Option<f64>)> {
        let results = self.results(query_id);
        match results.iter().position(|r| r.id == chunk) {
            Some(p) => Some((p + 1, results[p].score)),
            None => self
                .known_ranks
                .get(query_id)
                .and_then(|m| m.get(chunk))
                .copied(),
        }
    }
}
