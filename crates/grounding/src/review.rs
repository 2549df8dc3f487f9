//! Append-only review log beside the cases: `<cases>.reviews.jsonl`, one record a line.
//! Nothing is ever rewritten; a later reviewer's verdict is an annex to the first.

use crate::error::GroundingError;
use crate::model::{CaseSet, Support};
use serde::{Deserialize, Serialize};
use std::io::Write;
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

/// Reads the log (absent = empty). Errors name the line.
pub fn read_reviews(path: &Path) -> Result<Vec<ReviewRecord>, GroundingError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(GroundingError::io(path, e)),
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: ReviewRecord = serde_json::from_str(line).map_err(|e| GroundingError::Parse {
            path: path.to_path_buf(),
            message: format!("line {}: {e}", i + 1),
        })?;
        out.push(r);
    }
    Ok(out)
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

/// Appends one record (open with append, write one line, fsync).
pub fn append_review(path: &Path, r: &ReviewRecord) -> Result<(), GroundingError> {
    let mut line = serde_json::to_string(r).map_err(|e| GroundingError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| GroundingError::io(path, e))?;
    f.write_all(line.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| GroundingError::io(path, e))
}
