//! Suggested support from a model (e.g. an NLI cross-encoder): stored beside the human verdict
//! in `<cases>.suggestions.jsonl` (append-only), never in its place. This module holds the
//! records and the label mapping; running a model is the caller's job.

use crate::error::GroundingError;
use crate::model::{CaseSet, Support};
use crate::review::ReviewRecord;
use crate::sheet::effective_support;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuggestionRecord {
    pub case: String,
    pub answer: String,
    pub claim: String,
    /// The suggested verdict (from the top label).
    pub suggestion: Support,
    /// The model's top label (`entailment`, `neutral`, `contradiction`), or the verdict a
    /// judge returned.
    pub label: String,
    /// Softmax probability of every label (NLI models).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub probabilities: BTreeMap<String, f64>,
    /// The judge's stated confidence in [0, 1], when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The judge's reason, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Model identity (name / fingerprint, or endpoint + model for a judge).
    pub model: String,
    /// How the input was built (versioned: `nli/1`, `judge/1`).
    pub method: String,
    pub time: String,
}

impl SuggestionRecord {
    /// The suggestion's score: the probability of the top label, else the judge's confidence.
    pub fn score(&self) -> Option<f64> {
        self.probabilities
            .get(&self.label)
            .copied()
            .or(self.confidence)
    }
}

/// The input construction of NLI suggestions, versioned.
pub const NLI_METHOD: &str =
    "nli/1: premise = cited passage texts joined with a space, hypothesis = claim text";

/// `<cases>.suggestions.jsonl`.
pub fn suggestion_log_path(cases: &Path) -> PathBuf {
    let mut s = cases.as_os_str().to_os_string();
    s.push(".suggestions.jsonl");
    PathBuf::from(s)
}

/// Entailment suggests `supported`; contradiction and neutral suggest `unsupported` (the passage
/// does not justify the claim). Unknown labels give `None`.
pub fn label_to_support(label: &str) -> Option<Support> {
    match label.to_ascii_lowercase().as_str() {
        "entailment" | "entails" | "supports" | "support" => Some(Support::Supported),
        "contradiction" | "contradicts" | "neutral" | "not_entailment" => {
            Some(Support::Unsupported)
        }
        _ => None,
    }
}

/// Softmax of logits, as f64.
pub fn softmax(logits: &[f32]) -> Vec<f64> {
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let e: Vec<f64> = logits.iter().map(|&x| (x as f64 - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|x| x / s).collect()
}

/// (case, answer, claim ID, premise, hypothesis) for every claim with at least one cited
/// passage text: the premise is the cited passages' texts joined with a space.
pub fn nli_inputs(set: &CaseSet) -> Vec<(String, String, String, String, String)> {
    crate::judge::judge_inputs(set)
        .into_iter()
        .map(|i| {
            let premise: Vec<String> = i.passages.into_iter().map(|(_, t)| t).collect();
            (i.case, i.answer, i.claim, premise.join(" "), i.claim_text)
        })
        .collect()
}

pub fn read_suggestions(path: &Path) -> Result<Vec<SuggestionRecord>, GroundingError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(GroundingError::io(path, e)),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            veredicto_formats::json::from_str(l).map_err(|e| GroundingError::Parse {
                path: path.to_path_buf(),
                message: format!(
                    "line {}: {}",
                    i + 1,
                    veredicto_core::redact::message(&e.to_string())
                ),
            })
        })
        .collect()
}

/// Appends records (append mode, one line each, fsync once).
pub fn append_suggestions(path: &Path, recs: &[SuggestionRecord]) -> Result<(), GroundingError> {
    let mut buf = String::new();
    for r in recs {
        buf.push_str(
            &serde_json::to_string(r).map_err(|e| GroundingError::Parse {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?,
        );
        buf.push('\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| GroundingError::io(path, e))?;
    f.write_all(buf.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| GroundingError::io(path, e))
}

/// Pairs (verdict in force, latest suggestion) for every claim that has both.
pub fn suggestion_pairs(
    set: &CaseSet,
    reviews: &[ReviewRecord],
    suggestions: &[SuggestionRecord],
) -> Vec<(Support, Support)> {
    let mut out = Vec::new();
    for case in &set.cases {
        for a in &case.answers {
            for c in &a.claims {
                let human = effective_support(c, reviews);
                let sug = suggestions.iter().rev().find(|s| s.claim == c.id);
                if let (Some(h), Some(s)) = (human, sug) {
                    out.push((h, s.suggestion));
                }
            }
        }
    }
    out
}
