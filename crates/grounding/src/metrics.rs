//! Grounding measures, pure functions over a recorded answer.

use crate::model::{Answer, Case, Support};
use serde::Serialize;
use std::collections::BTreeSet;

/// The measures of one answer. Ratios are in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerMetrics {
    pub case: String,
    pub answer: String,
    /// n: number of material claims.
    pub claims: usize,
    pub with_citation: usize,
    pub supported: usize,
    pub required_facts: usize,
    pub facts_covered: usize,
    /// Claims with at least one attached citation / n; `None` when n = 0.
    pub citation_presence: Option<f64>,
    /// Claims `supported` with a citation / n (a claim without citation has support 0;
    /// `partially_supported`, `unsupported`, `not_evaluable` and unreviewed count 0);
    /// `None` when n = 0 (undefined).
    pub support: Option<f64>,
    /// Required facts expressed by a supported claim / |G|; 0 on abstention; `None` when G is empty.
    pub coverage: Option<f64>,
    /// n = 0.
    pub abstention: bool,
    /// Claims with no support verdict yet.
    pub unreviewed: usize,
}

/// Whether a claim counts as supported: a `supported` verdict and at least one citation.
pub fn claim_supported(support: Option<Support>, cited: bool) -> bool {
    cited && support == Some(Support::Supported)
}

/// Measures of one answer. `effective` gives the support verdict in force for a claim ID
/// (the one in the case file, or the first recorded review when the file has none).
pub fn answer_metrics(
    case: &Case,
    answer: &Answer,
    effective: &dyn Fn(&str) -> Option<Support>,
) -> AnswerMetrics {
    let n = answer.claims.len();
    let with_citation = answer
        .claims
        .iter()
        .filter(|c| !c.citations.is_empty())
        .count();
    let mut covered: BTreeSet<&str> = BTreeSet::new();
    let mut supported = 0;
    let mut unreviewed = 0;
    for c in &answer.claims {
        let v = effective(&c.id);
        if v.is_none() {
            unreviewed += 1;
        }
        if claim_supported(v, !c.citations.is_empty()) {
            supported += 1;
            covered.extend(c.facts.iter().map(String::as_str));
        }
    }
    let g = case.required_facts.len();
    let facts_covered = case
        .required_facts
        .iter()
        .filter(|f| covered.contains(f.id.as_str()))
        .count();
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    AnswerMetrics {
        case: case.id.clone(),
        answer: answer.id.clone(),
        claims: n,
        with_citation,
        supported,
        required_facts: g,
        facts_covered,
        citation_presence: ratio(with_citation, n),
        support: ratio(supported, n),
        coverage: ratio(facts_covered, g),
        abstention: n == 0,
        unreviewed,
    }
}

/// Document recall@k: distinct valid sources among the first k retrieved / |valid|.
/// `None` when no valid source is declared.
pub fn document_recall_at(case: &Case, k: usize) -> Option<f64> {
    if case.valid_sources.is_empty() {
        return None;
    }
    let valid: BTreeSet<&str> = case.valid_sources.iter().map(String::as_str).collect();
    let found: BTreeSet<&str> = case
        .retrieval
        .iter()
        .take(k)
        .map(|r| r.source.as_str())
        .filter(|s| valid.contains(s))
        .collect();
    Some(found.len() as f64 / valid.len() as f64)
}
