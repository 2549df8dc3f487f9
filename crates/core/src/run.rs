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
}

impl Run {
    pub fn results(&self, query_id: &str) -> &[Retrieved] {
        self.queries.get(query_id).map(Vec::as_slice).unwrap_or(&[])
    }
}
