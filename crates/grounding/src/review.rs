//! Append-only review log beside the cases: `<cases>.reviews.jsonl`, one record a line.
//! Nothing is ever rewritten; a later reviewer's verdict is an annex to the first.

use crate::error::GroundingError;
use crate::jsonl::{AppendReport, LogRead};
use crate::model::{CaseSet, Support};
use crate::relevance::{split_review_lines, RelevanceRecord, ReviewLine};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRecord {
    pub case: String,
    pub answer: String,
    pub claim: String,
    pub support: Support,
    pub reason: String,
    pub reviewer: String,
    pub time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<String>,
}

/// `<cases>.reviews.jsonl`.
pub fn review_log_path(cases: &Path) -> PathBuf {
    let mut s = cases.as_os_str().to_os_string();
    s.push(".reviews.jsonl");
    PathBuf::from(s)
}

/// Reads the log (absent = empty): its complete records; a torn last record is left out
/// (see [`read_review_log`] for the warning). A bad line before the end names the line.
pub fn read_reviews(path: &Path) -> Result<Vec<ReviewRecord>, GroundingError> {
    Ok(read_review_log(path)?.records)
}

/// Reads the log (absent = empty), with the length of its complete part and any torn tail:
/// its claim reviews (answer-relevance lines are left out; see [`read_review_lines`]).
pub fn read_review_log(path: &Path) -> Result<LogRead<ReviewRecord>, GroundingError> {
    Ok(claims_only(read_review_lines(path)?))
}

/// Reads the log (absent = empty): every line, claim reviews and answer-relevance reviews.
pub fn read_review_lines(path: &Path) -> Result<LogRead<ReviewLine>, GroundingError> {
    crate::jsonl::read_log(path)
}

/// Parses review-log bytes (`path` names the file in messages): its claim reviews.
pub fn parse_review_log(
    path: &Path,
    bytes: &[u8],
) -> Result<LogRead<ReviewRecord>, GroundingError> {
    Ok(claims_only(crate::jsonl::parse_log(path, bytes)?))
}

fn claims_only(l: LogRead<ReviewLine>) -> LogRead<ReviewRecord> {
    LogRead {
        records: split_review_lines(l.records).0,
        complete_len: l.complete_len,
        torn: l.torn,
    }
}

/// Builds a record for `claim`, checking that it exists and that the reason is given.
pub fn new_review(
    set: &CaseSet,
    claim: &str,
    support: Support,
    reason: &str,
    reviewer: &str,
    time: &str,
    diagnosis: Option<String>,
) -> Result<ReviewRecord, String> {
    if reason.trim().is_empty() {
        return Err(if support == Support::NotEvaluable {
            "`not_evaluable` must say what is missing (--reason)".into()
        } else {
            "a verdict needs a reason (--reason)".into()
        });
    }
    if reviewer.trim().is_empty() {
        return Err("--reviewer is empty".into());
    }
    for case in &set.cases {
        for a in &case.answers {
            if a.claims.iter().any(|c| c.id == claim) {
                return Ok(ReviewRecord {
                    case: case.id.clone(),
                    answer: a.id.clone(),
                    claim: claim.to_string(),
                    support,
                    reason: reason.to_string(),
                    reviewer: reviewer.to_string(),
                    time: time.to_string(),
                    diagnosis,
                });
            }
        }
    }
    Err(format!("unknown claim id `{claim}`"))
}

/// Appends one record, whole or absent: one write under a lock, fsync, read back, cut back
/// on failure; a torn tail left by a crash is moved to `<log>.torn-<n>` first (reported).
pub fn append_review(path: &Path, r: &ReviewRecord) -> Result<AppendReport, GroundingError> {
    crate::jsonl::append_log(path, &[ReviewLine::Claim(r.clone())])
}

/// Appends one citation mark to the same log, with the same guarantees.
pub fn append_citation_mark(
    path: &Path,
    r: &crate::citation_mark::CitationMarkRecord,
) -> Result<AppendReport, GroundingError> {
    crate::jsonl::append_log(path, &[ReviewLine::Citation(r.clone())])
}

/// Appends one answer-relevance record to the same log, with the same guarantees.
pub fn append_relevance(path: &Path, r: &RelevanceRecord) -> Result<AppendReport, GroundingError> {
    crate::jsonl::append_log(path, &[ReviewLine::Relevance(r.clone())])
}
