//! Recording audit runs (a case file with the reviews and suggestions beside it), replays
//! of a recorded run, and reviewers' verdicts.

use std::path::Path;
use veredicto_grounding as g;

use super::AuditTarget;
use crate::history::HistorySpec;
use crate::{bail, Context, Error, Events, Result};

/// What a new audit run records besides the case file.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// Version label.
    pub label: Option<String>,
    /// Notes file recorded with the run (packaged as notes.md).
    pub notes: Option<std::path::PathBuf>,
    /// Recording time (RFC 3339), given by the caller.
    pub time: String,
    /// The git revision of the work, if any.
    pub git_revision: Option<String>,
    /// The tool version recorded.
    pub tool_version: String,
}

/// Records `t` as a new audit run in the history at `history` (with the reviews and
/// suggestions beside its file); returns the new run's ID.
pub fn record(
    t: &AuditTarget,
    replay_of: Option<String>,
    recording: &Recording,
    history: &HistorySpec,
) -> Result<String> {
    let notes = match &recording.notes {
        Some(p) => Some(std::fs::read(p).with_context(|| p.display().to_string())?),
        None => None,
    };
    let meta = veredicto_store::AuditRunMeta {
        id: String::new(),
        created_at: recording.time.clone(),
        label: recording.label.clone(),
        replay_of,
        cases_name: t.name.clone(),
        cases_sha256: String::new(),
        counts: t.counts(),
        tool_version: recording.tool_version.clone(),
        git_revision: recording.git_revision.clone(),
    };
    let store = history.open()?;
    Ok(store.record_audit_run(&meta, &t.bytes, notes.as_deref(), &t.raw_records())?)
}

/// A replay recorded: the base and the new run as recorded.
pub struct Replayed {
    /// The run replayed.
    pub base: AuditTarget,
    /// The new run, read back from the history.
    pub recorded: AuditTarget,
    /// The new run's ID.
    pub id: String,
    /// The base run's ID.
    pub base_id: String,
}

/// Records the answers in `cases` to the frozen cases of the recorded run `base` as a new
/// run that replays it. Refused when no case is compatible.
pub fn replay(
    base: &str,
    cases_path: &Path,
    recording: &Recording,
    history: &HistorySpec,
    events: Events<'_>,
) -> Result<Replayed> {
    if !history.is_file() {
        bail!(
            "no history at {}: record the base first (`veredicto audit record CASES`)",
            history.display()
        );
    }
    let base = AuditTarget::from_run(history.open_existing()?, base)?;
    let base_id = base.run_meta().map(|m| m.id.clone()).unwrap_or_default();
    let cases = &super::open_file(cases_path, events)?;
    let c = super::compare(&base, cases);
    if c.compared.is_empty() {
        let reasons: Vec<String> = c
            .not_compared
            .iter()
            .map(|n| format!("{}: {}", n.case, n.reason))
            .collect();
        bail!(
            "{}: not a replay of audit run {base_id}: no case is compatible ({})",
            cases_path.display(),
            reasons.join("; ")
        );
    }
    let id = record(cases, Some(base_id.clone()), recording, history)?;
    let recorded = AuditTarget::from_run(history.open_existing()?, &id)?;
    Ok(Replayed {
        base,
        recorded,
        id,
        base_id,
    })
}

/// One reviewer's verdict on a claim.
#[derive(Debug, Clone)]
pub struct Review<'a> {
    /// The claim's ID.
    pub claim: &'a str,
    /// The verdict.
    pub support: g::Support,
    /// Why (for `not_evaluable`, what is missing).
    pub reason: &'a str,
    /// Who.
    pub reviewer: &'a str,
    /// The checklist step, if any.
    pub diagnosis: Option<String>,
    /// When (RFC 3339), given by the caller.
    pub time: &'a str,
}

/// A review appended.
#[derive(Debug, Clone)]
pub struct Reviewed {
    /// Where it was appended.
    pub place: String,
    /// Warnings of the append.
    pub warnings: Vec<String>,
    /// The verdict in force before it, if any (the review is then an annex).
    pub original: Option<g::Support>,
}

/// Appends a reviewer's verdict to the records of `t` (append-only).
pub fn review(t: &AuditTarget, r: &Review<'_>) -> Result<Reviewed> {
    let rec = g::new_review(
        &t.set,
        r.claim,
        r.support,
        r.reason,
        r.reviewer,
        r.time,
        r.diagnosis.clone(),
    )
    .map_err(|e| Error::msg(format!("{}: {e}", t.origin)))?;
    let original = t
        .claim(r.claim)
        .and_then(|c| g::effective_support(c, &t.reviews));
    let appended = t.append_reviews(std::slice::from_ref(&rec))?;
    Ok(Reviewed {
        place: appended.place,
        warnings: appended.warnings,
        original,
    })
}

/// One reviewer's answer-relevance verdict: does the answer address what was asked?
#[derive(Debug, Clone)]
pub struct RelevanceReview<'a> {
    /// The case, when the answer ID alone is ambiguous.
    pub case: Option<&'a str>,
    /// The answer's ID.
    pub answer: &'a str,
    /// The verdict.
    pub relevance: g::Relevance,
    /// Why.
    pub reason: &'a str,
    /// Who.
    pub reviewer: &'a str,
    /// When (RFC 3339), given by the caller.
    pub time: &'a str,
}

/// A relevance review appended.
#[derive(Debug, Clone)]
pub struct RelevanceReviewed {
    /// The record appended.
    pub record: g::RelevanceRecord,
    /// Where it was appended.
    pub place: String,
    /// Warnings of the append.
    pub warnings: Vec<String>,
    /// The relevance verdict in force before it, if any (the review is then an annex).
    pub original: Option<g::Relevance>,
}

/// Appends a reviewer's answer-relevance verdict to the records of `t` (append-only, in the
/// same log as claim reviews).
pub fn review_relevance(t: &AuditTarget, r: &RelevanceReview<'_>) -> Result<RelevanceReviewed> {
    let rec = g::new_relevance_review(
        &t.set,
        r.case,
        r.answer,
        r.relevance,
        r.reason,
        r.reviewer,
        r.time,
    )
    .map_err(|e| Error::msg(format!("{}: {e}", t.origin)))?;
    let original =
        g::effective_relevance(&rec.case, &rec.answer, &t.relevance).map(|x| x.relevance);
    let appended = t.append_relevance(std::slice::from_ref(&rec))?;
    Ok(RelevanceReviewed {
        record: rec,
        place: appended.place,
        warnings: appended.warnings,
        original,
    })
}

/// One reviewer's mark of one citation of a claim: necessary, redundant or irrelevant.
#[derive(Debug, Clone)]
pub struct CitationReview<'a> {
    /// The claim's ID.
    pub claim: &'a str,
    /// The citation's ID (one the claim cites).
    pub citation: &'a str,
    /// The mark.
    pub mark: g::CitationMark,
    /// Why.
    pub reason: &'a str,
    /// Who.
    pub reviewer: &'a str,
    /// When (RFC 3339), given by the caller.
    pub time: &'a str,
}

/// A citation mark appended.
#[derive(Debug, Clone)]
pub struct CitationReviewed {
    /// The record appended.
    pub record: g::CitationMarkRecord,
    /// Where it was appended.
    pub place: String,
    /// Warnings of the append.
    pub warnings: Vec<String>,
    /// The mark in force before it, if any (the mark is then an annex).
    pub original: Option<g::CitationMark>,
}

/// Appends a reviewer's mark of a claim's citation to the records of `t` (append-only, in
/// the same log as claim reviews). A citation the claim does not cite is refused.
pub fn review_citation(t: &AuditTarget, r: &CitationReview<'_>) -> Result<CitationReviewed> {
    let rec = g::new_citation_mark(
        &t.set, r.claim, r.citation, r.mark, r.reason, r.reviewer, r.time,
    )
    .map_err(|e| Error::msg(format!("{}: {e}", t.origin)))?;
    let original = g::effective_mark(&rec.claim, &rec.citation, &t.citation_marks).map(|x| x.mark);
    let appended = t.append_citation_marks(std::slice::from_ref(&rec))?;
    Ok(CitationReviewed {
        record: rec,
        place: appended.place,
        warnings: appended.warnings,
        original,
    })
}
