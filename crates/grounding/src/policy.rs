//! `[grounding]` thresholds of the policy TOML (fractions in [0, 1]).

use crate::error::GroundingError;
use crate::metrics::AnswerMetrics;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroundingPolicy {
    pub min_citation_presence: Option<f64>,
    pub min_support: Option<f64>,
    pub min_coverage: Option<f64>,
    /// Document recall@k threshold at `recall_k` (both or neither).
    pub min_document_recall: Option<f64>,
    pub recall_k: Option<usize>,
}

#[derive(Deserialize)]
struct PolicyFile {
    #[serde(default)]
    grounding: Option<GroundingPolicy>,
}

/// Reads the `[grounding]` table; other tables of the policy file are ignored.
pub fn load_policy(path: &Path) -> Result<GroundingPolicy, GroundingError> {
    let text = std::fs::read_to_string(path).map_err(|e| GroundingError::io(path, e))?;
    let f: PolicyFile = toml::from_str::<toml::Table>(&text)
        .map_err(|e| e.to_string())
        .and_then(|t| {
            let g = t.get("grounding").cloned();
            match g {
                None => Ok(PolicyFile { grounding: None }),
                Some(v) => v
                    .try_into::<GroundingPolicy>()
                    .map(|g| PolicyFile { grounding: Some(g) })
                    .map_err(|e| format!("[grounding]: {e}")),
            }
        })
        .map_err(|message| GroundingError::Parse {
            path: path.to_path_buf(),
            message,
        })?;
    let p = f.grounding.unwrap_or_default();
    for (name, v) in [
        ("min_citation_presence", p.min_citation_presence),
        ("min_support", p.min_support),
        ("min_coverage", p.min_coverage),
        ("min_document_recall", p.min_document_recall),
    ] {
        if let Some(v) = v {
            if !(0.0..=1.0).contains(&v) {
                return Err(GroundingError::Parse {
                    path: path.to_path_buf(),
                    message: format!("[grounding] {name} = {v}: must be a fraction in [0, 1]"),
                });
            }
        }
    }
    if p.min_document_recall.is_some() != p.recall_k.is_some() {
        return Err(GroundingError::Parse {
            path: path.to_path_buf(),
            message: "[grounding] min_document_recall and recall_k go together".into(),
        });
    }
    Ok(p)
}

/// Reasons an answer misses the policy (empty = passes). Undefined values (support on
/// abstention, coverage with empty G) are not checked; an abstention's coverage is 0 and is.
pub fn violations(p: &GroundingPolicy, m: &AnswerMetrics, recall: Option<f64>) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, min: Option<f64>, v: Option<f64>| {
        if let (Some(min), Some(v)) = (min, v) {
            if v + 1e-12 < min {
                out.push(format!("{name} {:.1}% < {:.1}%", v * 100.0, min * 100.0));
            }
        }
    };
    check(
        "citation presence",
        p.min_citation_presence,
        m.citation_presence,
    );
    check("support", p.min_support, m.support);
    check("coverage", p.min_coverage, m.coverage);
    if let Some(k) = p.recall_k {
        check(
            &format!("document recall@{k}"),
            p.min_document_recall,
            recall,
        );
    }
    out
}
