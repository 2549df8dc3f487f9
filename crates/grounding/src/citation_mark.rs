//! Citation marks: for a claim with citations, is each citation `necessary`, `redundant`
//! (the claim's other citations already support it) or `irrelevant` (it supports nothing of
//! the claim)? A per-citation mark with a reason, recorded by a reviewer in the same
//! append-only review log as claim verdicts: a mark line carries `citation` and `mark`. The
//! first mark of a claim's citation is the mark in force; later ones are annexes.
//!
//! Citation precision = citations marked necessary or redundant / citations marked (the
//! citation precision of ALCE: an irrelevant citation counts against, a redundant one not).

use crate::model::{CaseSet, Claim};
use serde::{Deserialize, Serialize};

/// The three citation marks.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum CitationMark {
    /// The claim needs this citation: without it, the others do not support the claim.
    Necessary,
    /// The claim's other citations already support it; this one adds nothing but is on topic.
    Redundant,
    /// The citation supports nothing of the claim.
    Irrelevant,
}

/// Every citation mark, in their canonical order.
pub const CITATION_MARKS: [CitationMark; 3] = [
    CitationMark::Necessary,
    CitationMark::Redundant,
    CitationMark::Irrelevant,
];

impl CitationMark {
    pub fn as_str(self) -> &'static str {
        match self {
            CitationMark::Necessary => "necessary",
            CitationMark::Redundant => "redundant",
            CitationMark::Irrelevant => "irrelevant",
        }
    }
}

impl std::fmt::Display for CitationMark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CitationMark {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "necessary" => Ok(CitationMark::Necessary),
            "redundant" => Ok(CitationMark::Redundant),
            "irrelevant" => Ok(CitationMark::Irrelevant),
            other => Err(format!(
                "`{}` is not a citation mark (necessary, redundant, irrelevant)",
                veredicto_core::redact::short(other)
            )),
        }
    }
}

/// One reviewer's mark of one citation of a claim, a line of the review log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CitationMarkRecord {
    pub case: String,
    pub answer: String,
    pub claim: String,
    pub citation: String,
    pub mark: CitationMark,
    pub reason: String,
    pub reviewer: String,
    pub time: String,
}

/// Builds a mark of citation `citation` of claim `claim`, checking that the claim exists,
/// that it cites `citation`, and that the reason and reviewer are given.
pub fn new_citation_mark(
    set: &CaseSet,
    claim: &str,
    citation: &str,
    mark: CitationMark,
    reason: &str,
    reviewer: &str,
    time: &str,
) -> Result<CitationMarkRecord, String> {
    if reason.trim().is_empty() {
        return Err("a citation mark needs a reason (--reason)".into());
    }
    if reviewer.trim().is_empty() {
        return Err("--reviewer is empty".into());
    }
    for case in &set.cases {
        for a in &case.answers {
            if let Some(cl) = a.claims.iter().find(|c| c.id == claim) {
                cited_by(cl, citation)?;
                return Ok(CitationMarkRecord {
                    case: case.id.clone(),
                    answer: a.id.clone(),
                    claim: claim.to_string(),
                    citation: citation.to_string(),
                    mark,
                    reason: reason.to_string(),
                    reviewer: reviewer.to_string(),
                    time: time.to_string(),
                });
            }
        }
    }
    Err(format!(
        "unknown claim id `{}`",
        veredicto_core::redact::short(claim)
    ))
}

/// `Ok` when `claim` cites `citation`; otherwise the message naming what it cites.
pub fn cited_by(claim: &Claim, citation: &str) -> Result<(), String> {
    if claim.citations.iter().any(|c| c == citation) {
        return Ok(());
    }
    Err(format!(
        "claim `{}` does not cite `{}` (it cites: {})",
        claim.id,
        veredicto_core::redact::short(citation),
        if claim.citations.is_empty() {
            "nothing".to_string()
        } else {
            claim.citations.join(", ")
        }
    ))
}

/// The marks of one citation of a claim, in appended order: the first is the mark in
/// force, the others its annexes.
pub fn citation_marks_of<'a>(
    claim: &str,
    citation: &str,
    records: &'a [CitationMarkRecord],
) -> Vec<&'a CitationMarkRecord> {
    records
        .iter()
        .filter(|r| r.claim == claim && r.citation == citation)
        .collect()
}

/// The mark in force for a claim's citation: its first mark.
pub fn effective_mark<'a>(
    claim: &str,
    citation: &str,
    records: &'a [CitationMarkRecord],
) -> Option<&'a CitationMarkRecord> {
    records
        .iter()
        .find(|r| r.claim == claim && r.citation == citation)
}

/// The citation marks in force over some claims, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CitationPrecision {
    /// Citations with a mark in force.
    pub marked: usize,
    pub necessary: usize,
    pub redundant: usize,
    pub irrelevant: usize,
}

impl CitationPrecision {
    /// Counts one mark in force.
    pub fn add(&mut self, m: CitationMark) {
        self.marked += 1;
        match m {
            CitationMark::Necessary => self.necessary += 1,
            CitationMark::Redundant => self.redundant += 1,
            CitationMark::Irrelevant => self.irrelevant += 1,
        }
    }

    /// (necessary + redundant) / marked; `None` when nothing is marked.
    pub fn value(&self) -> Option<f64> {
        (self.marked > 0).then(|| (self.necessary + self.redundant) as f64 / self.marked as f64)
    }

    /// Adds another count (the totals of several answers).
    pub fn merge(&mut self, o: &CitationPrecision) {
        self.marked += o.marked;
        self.necessary += o.necessary;
        self.redundant += o.redundant;
        self.irrelevant += o.irrelevant;
    }
}

/// The citation precision of the claims of one answer: every citation of every claim with a
/// mark in force (a citation cited by two claims is marked, and counted, once per claim).
pub fn citation_precision<'a>(
    claims: impl IntoIterator<Item = &'a Claim>,
    records: &[CitationMarkRecord],
) -> CitationPrecision {
    let mut p = CitationPrecision::default();
    for cl in claims {
        for cit in &cl.citations {
            if let Some(r) = effective_mark(&cl.id, cit, records) {
                p.add(r.mark);
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> CaseSet {
        let yaml = r#"
schema: veredicto-grounding/1
cases:
  - id: Q
    query: q
    snapshot: s1
    sources:
      - { id: S1, version: v1, passages: [{ id: p1, text: "one" }, { id: p2, text: "two" }] }
    retrieval: []
    answers:
      - id: A
        text: "t [D-01] [D-02]"
        citations:
          - { id: D-01, source: S1, passage: p1 }
          - { id: D-02, source: S1, passage: p2 }
        claims:
          - { id: C1, text: c1, citations: [D-01, D-02] }
          - { id: C2, text: c2 }
"#;
        crate::load::parse_cases(std::path::Path::new("cases.yaml"), yaml).unwrap()
    }

    fn mark(cit: &str, m: CitationMark, who: &str) -> CitationMarkRecord {
        new_citation_mark(&set(), "C1", cit, m, "why", who, "2025-01-01T00:00:00Z").unwrap()
    }

    #[test]
    fn a_citation_the_claim_does_not_cite_is_refused() {
        let e = new_citation_mark(&set(), "C1", "D-09", CitationMark::Necessary, "r", "a", "t")
            .unwrap_err();
        assert_eq!(e, "claim `C1` does not cite `D-09` (it cites: D-01, D-02)");
        let e = new_citation_mark(&set(), "C2", "D-01", CitationMark::Necessary, "r", "a", "t")
            .unwrap_err();
        assert_eq!(e, "claim `C2` does not cite `D-01` (it cites: nothing)");
        let e = new_citation_mark(&set(), "C9", "D-01", CitationMark::Necessary, "r", "a", "t")
            .unwrap_err();
        assert_eq!(e, "unknown claim id `C9`");
        let e = new_citation_mark(&set(), "C1", "D-01", CitationMark::Necessary, " ", "a", "t")
            .unwrap_err();
        assert!(e.contains("--reason"), "{e}");
    }

    #[test]
    fn precision_counts_the_first_mark_and_irrelevant_counts_against() {
        let records = vec![
            mark("D-01", CitationMark::Necessary, "ana"),
            mark("D-02", CitationMark::Irrelevant, "ana"),
            mark("D-02", CitationMark::Redundant, "bea"),
        ];
        let s = set();
        let claims = &s.cases[0].answers[0].claims;
        let p = citation_precision(claims, &records);
        assert_eq!(
            (p.marked, p.necessary, p.redundant, p.irrelevant),
            (2, 1, 0, 1),
            "bea's mark is an annex"
        );
        assert_eq!(p.value(), Some(0.5));
        assert_eq!(citation_marks_of("C1", "D-02", &records).len(), 2);
        let none = citation_precision(claims, &[]);
        assert_eq!(none.value(), None, "nothing marked: undefined, not 0");
        let mut total = none;
        total.merge(&p);
        total.merge(&citation_precision(
            claims,
            &[mark("D-02", CitationMark::Redundant, "bea")],
        ));
        assert_eq!((total.marked, total.value()), (3, Some(2.0 / 3.0)));
    }

    #[test]
    fn marks_parse_back_from_their_names() {
        for m in CITATION_MARKS {
            assert_eq!(m.as_str().parse::<CitationMark>(), Ok(m));
        }
        let e = "needed".parse::<CitationMark>().unwrap_err();
        assert!(e.contains("necessary, redundant, irrelevant"), "{e}");
    }
}
