//! The grounding audit's pipelines: opening what an audit works on ([`target`]: a case
//! file, or an audit run in the history), and the commands over it: checking, the
//! evidence sheet, reviews and recordings ([`record`]), packages ([`package`]), suggestions
//! ([`suggest`]), impact, agreement and comparison.

pub mod extract;
pub mod package;
pub mod record;
pub mod suggest;
pub mod target;

pub use target::{AuditTarget, TargetError, TargetRef};

use std::path::Path;
use veredicto_grounding as g;

use crate::history::HistorySpec;
use crate::{bail, Context, Events, Result};

/// A case file when `arg` names an existing file, else an audit run (ID, unique prefix or
/// `latest`) in the history at `history`. A torn last record is left out with a warning.
pub fn open(arg: &str, history: &HistorySpec, events: Events<'_>) -> Result<AuditTarget> {
    match target::resolve(arg)? {
        TargetRef::File(path) => open_file(&path, events),
        TargetRef::Run(reference) => {
            if !history.is_file() {
                bail!(
                    "`{arg}` is not a case file, and there is no history at {} to find an audit run in \
                     (record one with `veredicto audit record CASES`, or pass --history)",
                    history.display()
                );
            }
            Ok(AuditTarget::from_run(history.open_existing()?, &reference)?)
        }
    }
}

/// A case file with the logs beside it; a torn last record is left out with a warning.
pub fn open_file(path: &Path, events: Events<'_>) -> Result<AuditTarget> {
    let t = AuditTarget::from_file(path)?;
    warn(&t.warnings, events);
    Ok(t)
}

/// Hands the warnings of a read or an append to the caller.
pub fn warn(warnings: &[String], events: Events<'_>) {
    for w in warnings {
        events.warn(w.strip_prefix("warning: ").unwrap_or(w));
    }
}

/// For a case file also recorded as an audit run in the history: the note that records
/// appended to the file stay out of the run.
pub fn recorded_elsewhere(t: &AuditTarget, history: &HistorySpec) -> Option<String> {
    if t.run_meta().is_some() || !history.is_file() {
        return None;
    }
    let h = history.open_existing().ok()?;
    t.recorded_elsewhere(&h, &history.display())
}

/// Checks the cases of `t`: citation presence, support, coverage, abstention and document
/// recall@k per answer, against the `[grounding]` table of the policy file (if any).
pub fn check(t: &AuditTarget, policy: Option<&Path>, k: &[usize]) -> Result<g::CheckOutcome> {
    let opts = g::CheckOptions {
        policy: match policy {
            Some(p) => g::load_policy(p)?,
            None => g::GroundingPolicy::default(),
        },
        k: k.to_vec(),
    };
    Ok(g::check_with_marks(
        &t.set,
        &t.reviews,
        &t.relevance,
        &t.citation_marks,
        &opts,
    ))
}

/// Claims whose cited passages changed in the sources at `sources`, and absences they
/// reopen.
pub fn impact(
    t: &AuditTarget,
    sources: &Path,
) -> Result<(Vec<g::Impact>, Vec<g::ReopenedAbsence>)> {
    let new = g::load_sources(sources)?;
    Ok((g::impact(&t.set, &new), g::reopened_absences(&t.set, &new)))
}

/// Agreement on support verdicts: between reviewers, or (`suggestions`) between the
/// verdicts in force and the latest model suggestions.
pub fn agreement(t: &AuditTarget, suggestions: bool) -> g::Agreement {
    let pairs = if suggestions {
        g::suggestion_pairs(&t.set, &t.reviews, &t.suggestions)
    } else {
        g::reviewer_pairs(&t.set, &t.reviews)
    };
    g::cohen_kappa(&pairs)
}

/// The comparison of two recordings of the same frozen cases.
pub fn compare(base: &AuditTarget, new: &AuditTarget) -> g::Comparison {
    g::compare(&base.set, &base.reviews, &new.set, &new.reviews)
}

/// How many cases a conversion wrote, and how many have rationale evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Converted {
    /// Cases written.
    pub cases: usize,
    /// Cases with at least one valid source.
    pub with_evidence: usize,
}

/// Converts the original SciFact release (corpus + labelled claims) into frozen cases
/// written to `out` (JSON for `.json`, else YAML), atomically.
pub fn from_scifact(corpus: &Path, claims: &Path, out: &Path) -> Result<Converted> {
    let set = g::scifact_cases(corpus, claims)?;
    let json = out.extension().and_then(|e| e.to_str()) == Some("json");
    let text = if json {
        let mut t = serde_json::to_string_pretty(&set)?;
        t.push('\n');
        t
    } else {
        serde_norway::to_string(&set).map_err(crate::Error::msg)?
    };
    crate::files::write_atomic(out, text.as_bytes()).with_context(|| out.display().to_string())?;
    Ok(Converted {
        cases: set.cases.len(),
        with_evidence: set
            .cases
            .iter()
            .filter(|c| !c.valid_sources.is_empty())
            .count(),
    })
}
