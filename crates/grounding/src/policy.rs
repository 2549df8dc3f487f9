//! `[grounding]` thresholds of the policy TOML (fractions in [0, 1]).

use crate::error::GroundingError;
use crate::metrics::AnswerMetrics;
use std::path::Path;

pub use veredicto_core::policy::GroundingPolicy;

/// Reads the `[grounding]` table of a policy file (the one policy parse,
/// [`veredicto_formats::policy::PolicyFile`]); the file's other keys and tables are not
/// read here.
pub fn load_policy(path: &Path) -> Result<GroundingPolicy, GroundingError> {
    use veredicto_formats::policy::{PolicyFile, Section};
    Ok(PolicyFile::read_sections(path, &[Section::Grounding])?.grounding)
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
