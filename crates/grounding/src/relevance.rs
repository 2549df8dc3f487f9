//! Answer relevance: does an answer address what was asked, or a neighbouring topic? The
//! second check on generation beside faithfulness (support). A per-answer verdict with a
//! reason, recorded by a reviewer in the same append-only review log as claim verdicts: a
//! relevance line carries `relevance` and no `claim`. The first relevance review of an answer
//! is the verdict in force; later ones are annexes.

use crate::citation_mark::CitationMarkRecord;
use crate::model::CaseSet;
use crate::review::ReviewRecord;
use serde::{Deserialize, Serialize};

/// The three answer-relevance verdicts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Relevance {
    /// The answer addresses what was asked.
    Addresses,
    /// It addresses part of what was asked (or drifts into a neighbouring topic for part).
    Partly,
    /// It answers a neighbouring question, not the one asked.
    OffTopic,
}

/// Every relevance verdict, in their canonical order.
pub const RELEVANCE_VERDICTS: [Relevance; 3] =
    [Relevance::Addresses, Relevance::Partly, Relevance::OffTopic];

impl Relevance {
    pub fn as_str(self) -> &'static str {
        match self {
            Relevance::Addresses => "addresses",
            Relevance::Partly => "partly",
            Relevance::OffTopic => "off_topic",
        }
    }
}

impl std::fmt::Display for Relevance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Relevance {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "addresses" => Ok(Relevance::Addresses),
            "partly" => Ok(Relevance::Partly),
            "off_topic" => Ok(Relevance::OffTopic),
            other => Err(format!(
                "`{}` is not a relevance verdict (addresses, partly, off_topic)",
                veredicto_core::redact::short(other)
            )),
        }
    }
}

/// One reviewer's answer-relevance verdict, a line of the review log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelevanceRecord {
    pub case: String,
    pub answer: String,
    pub relevance: Relevance,
    pub reason: String,
    pub reviewer: String,
    pub time: String,
}

/// A line of the review log: a claim's support verdict, an answer's relevance verdict or a
/// mark of one of a claim's citations. A line with `relevance` and no `claim` is a relevance
/// record; one with `mark` or `citation` and no `support` a citation mark; any other is a claim review (so
/// the messages about a bad claim review stay those of a claim review).
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewLine {
    Claim(ReviewRecord),
    Relevance(RelevanceRecord),
    Citation(CitationMarkRecord),
}

impl Serialize for ReviewLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ReviewLine::Claim(r) => r.serialize(s),
            ReviewLine::Relevance(r) => r.serialize(s),
            ReviewLine::Citation(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ReviewLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let relevance = map.contains_key("relevance") && !map.contains_key("claim");
        let citation = (map.contains_key("mark") || map.contains_key("citation"))
            && !map.contains_key("support");
        let value = serde_json::Value::Object(map);
        if citation {
            serde_json::from_value(value)
                .map(ReviewLine::Citation)
                .map_err(D::Error::custom)
        } else if relevance {
            serde_json::from_value(value)
                .map(ReviewLine::Relevance)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(value)
                .map(ReviewLine::Claim)
                .map_err(D::Error::custom)
        }
    }
}

/// The claim reviews and the relevance reviews of a log, each in appended order (citation
/// marks are left out; see [`split_review_kinds`]).
pub fn split_review_lines(lines: Vec<ReviewLine>) -> (Vec<ReviewRecord>, Vec<RelevanceRecord>) {
    let k = split_review_kinds(lines);
    (k.claims, k.relevance)
}

/// The records of a review log by kind, each in appended order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewKinds {
    pub claims: Vec<ReviewRecord>,
    pub relevance: Vec<RelevanceRecord>,
    pub citations: Vec<CitationMarkRecord>,
}

/// Splits a review log's lines by kind.
pub fn split_review_kinds(lines: Vec<ReviewLine>) -> ReviewKinds {
    let mut k = ReviewKinds::default();
    for l in lines {
        match l {
            ReviewLine::Claim(r) => k.claims.push(r),
            ReviewLine::Relevance(r) => k.relevance.push(r),
            ReviewLine::Citation(r) => k.citations.push(r),
        }
    }
    k
}

/// Builds a relevance record for answer `answer` of case `case` (the case may be omitted
/// when the answer ID is unique in the file), checking that the answer exists and that the
/// reason and reviewer are given.
pub fn new_relevance_review(
    set: &CaseSet,
    case: Option<&str>,
    answer: &str,
    relevance: Relevance,
    reason: &str,
    reviewer: &str,
    time: &str,
) -> Result<RelevanceRecord, String> {
    if reason.trim().is_empty() {
        return Err("a relevance verdict needs a reason (--reason)".into());
    }
    if reviewer.trim().is_empty() {
        return Err("--reviewer is empty".into());
    }
    let found: Vec<&str> = set
        .cases
        .iter()
        .filter(|c| case.is_none_or(|id| id == c.id))
        .filter(|c| c.answers.iter().any(|a| a.id == answer))
        .map(|c| c.id.as_str())
        .collect();
    match found.as_slice() {
        [one] => Ok(RelevanceRecord {
            case: (*one).to_string(),
            answer: answer.to_string(),
            relevance,
            reason: reason.to_string(),
            reviewer: reviewer.to_string(),
            time: time.to_string(),
        }),
        [] => Err(format!(
            "unknown answer id `{}`",
            veredicto_core::redact::short(answer)
        )),
        many => Err(format!(
            "answer id `{}` is in {} cases ({}): name the case with --case",
            veredicto_core::redact::short(answer),
            many.len(),
            many.join(", ")
        )),
    }
}

/// The relevance reviews of one answer, in appended order: the first is the verdict in
/// force, the others its annexes.
pub fn relevance_reviews<'a>(
    case: &str,
    answer: &str,
    records: &'a [RelevanceRecord],
) -> Vec<&'a RelevanceRecord> {
    records
        .iter()
        .filter(|r| r.case == case && r.answer == answer)
        .collect()
}

/// The relevance verdict in force for an answer: its first relevance review.
pub fn effective_relevance<'a>(
    case: &str,
    answer: &str,
    records: &'a [RelevanceRecord],
) -> Option<&'a RelevanceRecord> {
    records
        .iter()
        .find(|r| r.case == case && r.answer == answer)
}

/// Every relevance record or suggestion must name an answer of the cases: the first
/// (case, answer) that does not, as (1-based record number, case, answer).
pub fn unknown_answer<'a>(
    set: &CaseSet,
    answers: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<(usize, String, String)> {
    answers
        .into_iter()
        .enumerate()
        .find_map(|(i, (case, answer))| {
            let known = set
                .cases
                .iter()
                .any(|c| c.id == case && c.answers.iter().any(|a| a.id == answer));
            (!known).then(|| (i + 1, case.to_string(), answer.to_string()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relevance_line_and_a_claim_line_share_the_log() {
        let rel = r#"{"case":"Q","answer":"A","relevance":"off_topic","reason":"answers shipping, not refunds","reviewer":"ana","time":"t"}"#;
        let claim = r#"{"case":"Q","answer":"A","claim":"C","support":"supported","reason":"r","reviewer":"ana","time":"t"}"#;
        let a: ReviewLine = serde_json::from_str(rel).unwrap();
        let b: ReviewLine = serde_json::from_str(claim).unwrap();
        assert!(matches!(&a, ReviewLine::Relevance(r) if r.relevance == Relevance::OffTopic));
        assert!(matches!(&b, ReviewLine::Claim(r) if r.claim == "C"));
        assert_eq!(serde_json::to_string(&a).unwrap(), rel, "written as read");
        assert_eq!(serde_json::to_string(&b).unwrap(), claim);
    }

    #[test]
    fn a_bad_relevance_verdict_names_its_variants() {
        let bad = r#"{"case":"Q","answer":"A","relevance":"maybe","reason":"r","reviewer":"a","time":"t"}"#;
        let e = serde_json::from_str::<ReviewLine>(bad)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "unknown variant `maybe`, expected one of `addresses`, `partly`, `off_topic`"
            ),
            "{e}"
        );
        let e = serde_json::from_str::<ReviewLine>(
            r#"{"case":"Q","answer":"A","claim":"C","relevance":"partly"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("unknown field `relevance`"),
            "a claim line keeps its own rules: {e}"
        );
    }

    #[test]
    fn a_citation_mark_shares_the_log_too() {
        let line = r#"{"case":"Q","answer":"A","claim":"C","citation":"D-02","mark":"redundant","reason":"D-01 says it","reviewer":"ana","time":"t"}"#;
        let l: ReviewLine = serde_json::from_str(line).unwrap();
        assert!(matches!(&l, ReviewLine::Citation(r) if r.citation == "D-02"));
        assert_eq!(serde_json::to_string(&l).unwrap(), line, "written as read");
        let e = serde_json::from_str::<ReviewLine>(
            r#"{"case":"Q","answer":"A","claim":"C","citation":"D-02","mark":"maybe","reason":"r","reviewer":"a","time":"t"}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("expected one of `necessary`, `redundant`, `irrelevant`"),
            "{e}"
        );
        let k = split_review_kinds(vec![l]);
        assert_eq!((k.claims.len(), k.citations.len()), (0, 1));
    }

    #[test]
    fn verdicts_parse_back_from_their_names() {
        for v in RELEVANCE_VERDICTS {
            assert_eq!(v.as_str().parse::<Relevance>(), Ok(v));
        }
        assert!("offtopic".parse::<Relevance>().is_err());
    }
}
