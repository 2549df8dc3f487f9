//! Impact of a source change: which claims cite passages whose text (by SHA-256) changed.

use crate::error::GroundingError;
use crate::load::passage_hash;
use crate::model::{CaseSet, Passage, Source};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A file of current sources: `{ sources: [...] }`, YAML or JSON (same `Source` shape as cases).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SourceSet {
    pub sources: Vec<Source>,
}

/// Reads a sources file (JSON by extension, else YAML).
pub fn load_sources(path: &Path) -> Result<SourceSet, GroundingError> {
    let text = std::fs::read_to_string(path).map_err(|e| GroundingError::io(path, e))?;
    let json = path.extension().and_then(|e| e.to_str()) == Some("json");
    if json {
        veredicto_formats::json::from_str(&text).map_err(|e| GroundingError::Parse {
            path: path.to_path_buf(),
            message: veredicto_core::redact::message(&e.to_string()),
        })
    } else {
        crate::load::parse_yaml(path, &text)
    }
}

/// One claim whose cited evidence changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Impact {
    pub case: String,
    pub answer: String,
    pub claim: String,
    pub citation: String,
    pub source: String,
    pub passage: Option<String>,
    pub old_version: String,
    pub new_version: Option<String>,
    /// `passage text changed`, `passage removed`, `source removed`, `passages changed`.
    pub change: String,
}

fn hash_of(p: &Passage) -> Option<String> {
    p.hash
        .clone()
        .or_else(|| p.text.as_deref().map(passage_hash))
}

fn all_hashes(s: &Source) -> Vec<(String, Option<String>)> {
    let mut v: Vec<_> = s
        .passages
        .iter()
        .map(|p| (p.id.clone(), hash_of(p)))
        .collect();
    v.sort();
    v
}

/// Every (claim, citation) whose cited passage (or, for a source-level citation, any passage
/// of the source) differs by hash in `new`, or disappeared. A new version with identical
/// text is not an impact.
pub fn impact(set: &CaseSet, new: &SourceSet) -> Vec<Impact> {
    let mut out = Vec::new();
    for case in &set.cases {
        for a in &case.answers {
            for cl in &a.claims {
                for cid in &cl.citations {
                    let Some(c) = a.citations.iter().find(|c| &c.id == cid) else {
                        continue;
                    };
                    let Some(old) = case.sources.iter().find(|s| s.id == c.source) else {
                        continue;
                    };
                    let now = new.sources.iter().find(|s| s.id == c.source);
                    let change = match (now, &c.passage) {
                        (None, _) => Some("source removed".to_string()),
                        (Some(n), Some(pid)) => {
                            let o = old.passages.iter().find(|p| &p.id == pid).and_then(hash_of);
                            match n.passages.iter().find(|p| &p.id == pid) {
                                None => Some("passage removed".into()),
                                Some(np) if hash_of(np) != o => Some("passage text changed".into()),
                                Some(_) => None,
                            }
                        }
                        (Some(n), None) => {
                            (all_hashes(n) != all_hashes(old)).then(|| "passages changed".into())
                        }
                    };
                    if let Some(change) = change {
                        out.push(Impact {
                            case: case.id.clone(),
                            answer: a.id.clone(),
                            claim: cl.id.clone(),
                            citation: c.id.clone(),
                            source: c.source.clone(),
                            passage: c.passage.clone(),
                            old_version: old.version.clone(),
                            new_version: now.map(|n| n.version.clone()),
                            change,
                        });
                    }
                }
            }
        }
    }
    out
}
