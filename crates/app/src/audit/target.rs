//! What an audit works on: a case file, whose reviews and suggestions live beside it
//! (`<cases>.reviews.jsonl`, `<cases>.suggestions.jsonl`), or a recorded audit run, whose
//! reviews and suggestions live in the run history. Both are append-only.

use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use veredicto_grounding::{
    append_citation_mark, append_relevance, append_review, append_suggestion_lines,
    append_suggestions, cited_by, load_cases, parse_cases, read_review_lines,
    read_suggestion_lines, review_log_path, split_review_kinds, split_suggestion_lines,
    suggestion_log_path, unknown_answer, Answer, CaseSet, CitationMarkRecord, Claim,
    GroundingError, RelevanceRecord, RelevanceSuggestion, ReviewLine, ReviewRecord, SuggestionLine,
    SuggestionRecord,
};
use veredicto_store::{AuditCounts, AuditRecordKind, AuditRunMeta, History, StoreError};

/// Why a target could not be opened or appended to.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The argument can only be a file name, and there is no such file.
    #[error("{arg}: no such case file")]
    NoSuchCaseFile { arg: String },
    #[error(transparent)]
    Grounding(#[from] GroundingError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{origin}: the case file is not UTF-8")]
    NotUtf8 {
        origin: String,
        #[source]
        error: std::string::FromUtf8Error,
    },
    /// A stored review or suggestion that does not parse (1-based record number).
    #[error("{origin} record {record}")]
    Record {
        origin: String,
        record: usize,
        #[source]
        error: serde_json::Error,
    },
    /// A review or suggestion of a claim the cases do not have.
    #[error("{origin}: record {record}: {what} unknown claim `{claim}`")]
    UnknownClaim {
        origin: String,
        record: usize,
        /// `review of` or `suggestion for`.
        what: &'static str,
        claim: String,
    },
    /// An answer-relevance review of an answer the cases do not have.
    #[error("{origin}: record {record}: relevance of unknown answer `{answer}` of case `{case}`")]
    UnknownAnswer {
        origin: String,
        record: usize,
        case: String,
        answer: String,
    },
    /// A citation mark of a citation its claim does not cite.
    #[error("{origin}: citation mark {record}: {message}")]
    Uncited {
        origin: String,
        record: usize,
        message: String,
    },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// What a target argument names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetRef {
    /// An existing case file.
    File(PathBuf),
    /// An audit run of the history: ID, unique prefix or `latest`.
    Run(String),
}

/// True when `arg` can only be meant as a file (so a missing file is not looked up as a run).
pub fn looks_like_path(arg: &str) -> bool {
    arg.contains('/')
        || arg.contains('\\')
        || [".yaml", ".yml", ".json"]
            .iter()
            .any(|e| arg.to_ascii_lowercase().ends_with(e))
}

/// A case file when `arg` names an existing file; an error when it can only be a file
/// name ([`looks_like_path`]); else a run reference.
pub fn resolve(arg: &str) -> Result<TargetRef, TargetError> {
    let path = Path::new(arg);
    if path.is_file() {
        return Ok(TargetRef::File(path.to_path_buf()));
    }
    if looks_like_path(arg) {
        return Err(TargetError::NoSuchCaseFile { arg: arg.into() });
    }
    Ok(TargetRef::Run(arg.into()))
}

/// Where a target's records are appended.
pub enum RecordStore {
    File(PathBuf),
    Run {
        history: Box<History>,
        meta: Box<AuditRunMeta>,
    },
}

/// Records appended, where they went, and warnings about a torn tail the append repaired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The log file, or `audit run <ID> in <history>`.
    pub place: String,
    pub warnings: Vec<String>,
}

/// A loaded, validated target.
pub struct AuditTarget {
    /// For messages: the case file path, or `audit run <ID> (<name>)`.
    pub origin: String,
    /// The case file's name (decides YAML / JSON; used inside packages).
    pub name: String,
    pub set: CaseSet,
    pub bytes: Vec<u8>,
    pub reviews: Vec<ReviewRecord>,
    /// The answer-relevance reviews of the same log, in appended order.
    pub relevance: Vec<RelevanceRecord>,
    /// The citation marks of the same log, in appended order.
    pub citation_marks: Vec<CitationMarkRecord>,
    pub raw_reviews: Option<Vec<u8>>,
    pub suggestions: Vec<SuggestionRecord>,
    /// The answer-relevance suggestions of the same log, in appended order.
    pub relevance_suggestions: Vec<RelevanceSuggestion>,
    pub raw_suggestions: Option<Vec<u8>>,
    /// Notes recorded with a run.
    pub notes: Option<Vec<u8>>,
    pub store: RecordStore,
    /// Torn last records left out of the logs beside a case file (a crash mid-append).
    pub warnings: Vec<String>,
}

impl AuditTarget {
    /// A case file with the logs beside it. A torn last record is left out with a warning
    /// in [`AuditTarget::warnings`].
    pub fn from_file(path: &Path) -> Result<AuditTarget, TargetError> {
        let (set, bytes) = load_cases(path)?;
        let rlog = review_log_path(path);
        let slog = suggestion_log_path(path);
        let reviews = read_review_lines(&rlog)?;
        let suggestions = read_suggestion_lines(&slog)?;
        let warnings = [reviews.warning(&rlog), suggestions.warning(&slog)]
            .into_iter()
            .flatten()
            .collect();
        let mut t = AuditTarget {
            origin: path.display().to_string(),
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "cases.yaml".into()),
            set,
            bytes,
            raw_reviews: read_optional(&rlog, reviews.complete_len)?,
            reviews: Vec::new(),
            relevance: Vec::new(),
            citation_marks: Vec::new(),
            raw_suggestions: read_optional(&slog, suggestions.complete_len)?,
            suggestions: Vec::new(),
            relevance_suggestions: Vec::new(),
            notes: None,
            store: RecordStore::File(path.to_path_buf()),
            warnings,
        };
        check_records(
            &t.set,
            &reviews.records,
            &suggestions.records,
            &rlog.display().to_string(),
            &slog.display().to_string(),
        )?;
        let kinds = split_review_kinds(reviews.records);
        (t.reviews, t.relevance, t.citation_marks) =
            (kinds.claims, kinds.relevance, kinds.citations);
        (t.suggestions, t.relevance_suggestions) = split_suggestion_lines(suggestions.records);
        Ok(t)
    }

    /// A recorded audit run (ID, unique prefix or `latest`) with its records.
    pub fn from_run(history: History, reference: &str) -> Result<AuditTarget, TargetError> {
        let run = history.audit_run(reference)?;
        let id = run.meta.id.clone();
        let origin = format!("audit run {id} ({})", run.meta.cases_name);
        let text = String::from_utf8(run.cases.clone()).map_err(|error| TargetError::NotUtf8 {
            origin: origin.clone(),
            error,
        })?;
        // Messages name the run and the file; the extension picks YAML or JSON.
        let label = PathBuf::from(format!("run {id}/{}", run.meta.cases_name));
        let set = parse_cases(&label, &text)?;
        let review_lines = history.audit_records(&id, AuditRecordKind::Review)?;
        let suggestion_lines = history.audit_records(&id, AuditRecordKind::Suggestion)?;
        let lines: Vec<ReviewLine> = parse_records(&format!("{origin} review"), &review_lines)?;
        let slines: Vec<SuggestionLine> =
            parse_records(&format!("{origin} suggestion"), &suggestion_lines)?;
        check_records(
            &set,
            &lines,
            &slines,
            &format!("{origin} reviews"),
            &format!("{origin} suggestions"),
        )?;
        let kinds = split_review_kinds(lines);
        let (suggestions, relevance_suggestions) = split_suggestion_lines(slines);
        let t = AuditTarget {
            origin: origin.clone(),
            name: run.meta.cases_name.clone(),
            set,
            bytes: run.cases,
            reviews: kinds.claims,
            relevance: kinds.relevance,
            citation_marks: kinds.citations,
            raw_reviews: join_lines(&review_lines),
            suggestions,
            relevance_suggestions,
            raw_suggestions: join_lines(&suggestion_lines),
            notes: run.notes,
            store: RecordStore::Run {
                history: Box::new(history),
                meta: Box::new(run.meta),
            },
            warnings: Vec::new(),
        };
        Ok(t)
    }

    /// The run's metadata, when the target is a recorded run.
    pub fn run_meta(&self) -> Option<&AuditRunMeta> {
        match &self.store {
            RecordStore::Run { meta, .. } => Some(meta),
            RecordStore::File(_) => None,
        }
    }

    /// The history a recorded run was read from.
    pub fn history(&self) -> Option<&History> {
        match &self.store {
            RecordStore::Run { history, .. } => Some(history),
            RecordStore::File(_) => None,
        }
    }

    /// How other records name it: the run ID, else the case file path.
    pub fn reference(&self) -> String {
        self.run_meta()
            .map_or_else(|| self.origin.clone(), |m| m.id.clone())
    }

    /// For a case file that is also recorded as an audit run in `history` (shown as
    /// `history_label`): a note saying that records appended to the file stay out of the run.
    pub fn recorded_elsewhere(&self, history: &History, history_label: &str) -> Option<String> {
        if !matches!(self.store, RecordStore::File(_)) {
            return None;
        }
        let ids = history.audit_runs_of(&self.bytes).ok()?;
        let newest = ids.first()?;
        Some(format!(
            "note: {} is recorded as audit run {newest}{} in {history_label}; this record stays \
             beside the file, outside the run (give the run ID to keep it in the history)",
            self.origin,
            if ids.len() > 1 {
                format!(" (and {} earlier run(s))", ids.len() - 1)
            } else {
                String::new()
            },
        ))
    }

    /// Appends review records (whole or absent).
    pub fn append_reviews(&self, recs: &[ReviewRecord]) -> Result<Appended, TargetError> {
        self.append_to(recs, AuditRecordKind::Review, review_log_path, |log| {
            one_by_one(log, recs, append_review)
        })
    }

    /// Appends citation marks to the review log (or the run's reviews), with the same
    /// guarantees as [`AuditTarget::append_reviews`].
    pub fn append_citation_marks(
        &self,
        recs: &[CitationMarkRecord],
    ) -> Result<Appended, TargetError> {
        self.append_to(recs, AuditRecordKind::Review, review_log_path, |log| {
            one_by_one(log, recs, append_citation_mark)
        })
    }

    /// Appends answer-relevance records to the review log (or the run's reviews), with the
    /// same guarantees as [`AuditTarget::append_reviews`].
    pub fn append_relevance(&self, recs: &[RelevanceRecord]) -> Result<Appended, TargetError> {
        self.append_to(recs, AuditRecordKind::Review, review_log_path, |log| {
            one_by_one(log, recs, append_relevance)
        })
    }

    /// Appends suggestion lines of both kinds (all of them or none).
    pub fn append_suggestion_lines(
        &self,
        recs: &[SuggestionLine],
    ) -> Result<Appended, TargetError> {
        self.append_to(
            recs,
            AuditRecordKind::Suggestion,
            suggestion_log_path,
            |log| {
                Ok(append_suggestion_lines(log, recs)?
                    .warning(log)
                    .into_iter()
                    .collect())
            },
        )
    }

    /// Appends suggestion records (all of them or none).
    pub fn append_suggestions(&self, recs: &[SuggestionRecord]) -> Result<Appended, TargetError> {
        self.append_to(
            recs,
            AuditRecordKind::Suggestion,
            suggestion_log_path,
            |log| {
                Ok(append_suggestions(log, recs)?
                    .warning(log)
                    .into_iter()
                    .collect())
            },
        )
    }

    /// Appends `recs`: for a case file, by `append` to the log `log_of` names beside it
    /// (which returns the append's warnings); for a recorded run, to its records of `kind`.
    fn append_to<R: serde::Serialize>(
        &self,
        recs: &[R],
        kind: AuditRecordKind,
        log_of: fn(&Path) -> PathBuf,
        append: impl FnOnce(&Path) -> Result<Vec<String>, TargetError>,
    ) -> Result<Appended, TargetError> {
        match &self.store {
            RecordStore::File(path) => {
                let log = log_of(path);
                let warnings = append(&log)?;
                Ok(Appended {
                    place: log.display().to_string(),
                    warnings,
                })
            }
            RecordStore::Run { history, meta } => {
                history.append_audit_records(&meta.id, &to_lines(kind, recs)?)?;
                Ok(run_place(history, meta))
            }
        }
    }

    /// The records to carry into a new run: the raw lines of both logs.
    pub fn raw_records(&self) -> Vec<(AuditRecordKind, String)> {
        let mut out = Vec::new();
        for (kind, raw) in [
            (AuditRecordKind::Review, &self.raw_reviews),
            (AuditRecordKind::Suggestion, &self.raw_suggestions),
        ] {
            if let Some(b) = raw {
                for line in String::from_utf8_lossy(b).lines() {
                    if !line.trim().is_empty() {
                        out.push((kind, line.to_string()));
                    }
                }
            }
        }
        out
    }

    /// What the case file counts, for the history's listing.
    pub fn counts(&self) -> AuditCounts {
        let answers: Vec<&Answer> = self
            .set
            .cases
            .iter()
            .flat_map(|c| c.answers.iter())
            .collect();
        let mut snapshots: Vec<String> =
            self.set.cases.iter().map(|c| c.snapshot.clone()).collect();
        snapshots.sort();
        snapshots.dedup();
        AuditCounts {
            cases: self.set.cases.len(),
            answers: answers.len(),
            claims: answers.iter().map(|a| a.claims.len()).sum(),
            abstentions: answers.iter().filter(|a| a.claims.is_empty()).count(),
            snapshots,
        }
    }

    /// The recording a package of this run compares with when none is given: the run it
    /// replays, else the previous run of the same case file (`None` for a case file).
    pub fn default_previous(&self) -> Result<Option<String>, TargetError> {
        match (self.run_meta(), self.history()) {
            (Some(meta), Some(history)) => Ok(history.previous_audit_run(&meta.id)?),
            _ => Ok(None),
        }
    }

    /// The files of an audit package of this target (see [`veredicto_grounding::build_package`]):
    /// `previous` gives `comparison.json`; `notes` default to the run's; `created` defaults
    /// to the run's recording time (none for a case file, so that its packages are
    /// byte-identical).
    pub fn package_files(
        &self,
        previous: Option<&AuditTarget>,
        notes: Option<&[u8]>,
        created: Option<&str>,
        tool_version: &str,
    ) -> Result<veredicto_grounding::Files, GroundingError> {
        let comparison = previous
            .map(|b| veredicto_grounding::compare(&b.set, &b.reviews, &self.set, &self.reviews));
        let run = self.run_meta().map(|m| {
            serde_json::json!({
                "id": m.id, "created_at": m.created_at, "label": m.label, "replay_of": m.replay_of,
                "cases_sha256": m.cases_sha256, "recorded_by": m.tool_version,
                "git_revision": m.git_revision,
                "compared_with": previous.map(|p| p.reference()),
            })
        });
        let created = created.or_else(|| self.run_meta().map(|m| m.created_at.as_str()));
        veredicto_grounding::build_package(&veredicto_grounding::PackageInputs {
            cases_name: &self.name,
            cases_bytes: &self.bytes,
            set: &self.set,
            reviews_bytes: self.raw_reviews.as_deref(),
            reviews: &self.reviews,
            relevance: &self.relevance,
            citation_marks: &self.citation_marks,
            suggestions_bytes: self.raw_suggestions.as_deref(),
            suggestions: &self.suggestions,
            relevance_suggestions: &self.relevance_suggestions,
            run,
            notes: notes.or(self.notes.as_deref()),
            tool_version,
            created,
            comparison: comparison.as_ref(),
        })
    }

    /// The claim with this ID.
    pub fn claim(&self, id: &str) -> Option<&Claim> {
        self.set
            .cases
            .iter()
            .flat_map(|c| c.answers.iter())
            .flat_map(|a| a.claims.iter())
            .find(|c| c.id == id)
    }
}

/// Every review and suggestion must be of a claim (or, for relevance, an answer) of the
/// cases; records are numbered by their place in the log (1-based), whatever their kind.
fn check_records(
    set: &CaseSet,
    reviews: &[ReviewLine],
    suggestions: &[SuggestionLine],
    reviews_origin: &str,
    suggestions_origin: &str,
) -> Result<(), TargetError> {
    let claim_known = |id: &str| {
        set.cases
            .iter()
            .flat_map(|c| c.answers.iter())
            .any(|a| a.claims.iter().any(|c| c.id == id))
    };
    let unknown_claim = |origin: &str, i: usize, what: &'static str, claim: &str| {
        (!claim_known(claim)).then(|| TargetError::UnknownClaim {
            origin: origin.into(),
            record: i + 1,
            what,
            claim: claim.into(),
        })
    };
    let answer_missing = |origin: &str, i: usize, case: &str, answer: &str| {
        unknown_answer(set, [(case, answer)]).map(|_| TargetError::UnknownAnswer {
            origin: origin.into(),
            record: i + 1,
            case: case.into(),
            answer: answer.into(),
        })
    };
    let uncited = |origin: &str, i: usize, claim: &str, citation: &str| {
        let cl = set
            .cases
            .iter()
            .flat_map(|c| c.answers.iter())
            .flat_map(|a| a.claims.iter())
            .find(|c| c.id == claim)?;
        cited_by(cl, citation)
            .err()
            .map(|message| TargetError::Uncited {
                origin: origin.into(),
                record: i + 1,
                message,
            })
    };
    for (i, r) in reviews.iter().enumerate() {
        let e = match r {
            ReviewLine::Claim(r) => unknown_claim(reviews_origin, i, "review of", &r.claim),
            ReviewLine::Relevance(r) => answer_missing(reviews_origin, i, &r.case, &r.answer),
            ReviewLine::Citation(r) => {
                unknown_claim(reviews_origin, i, "citation mark of", &r.claim)
                    .or_else(|| uncited(reviews_origin, i, &r.claim, &r.citation))
            }
        };
        if let Some(e) = e {
            return Err(e);
        }
    }
    for (i, s) in suggestions.iter().enumerate() {
        let e = match s {
            SuggestionLine::Claim(s) => {
                unknown_claim(suggestions_origin, i, "suggestion for", &s.claim)
            }
            SuggestionLine::Relevance(s) => {
                answer_missing(suggestions_origin, i, &s.case, &s.answer)
            }
        };
        if let Some(e) = e {
            return Err(e);
        }
    }
    Ok(())
}

fn run_place(history: &History, meta: &AuditRunMeta) -> Appended {
    Appended {
        place: format!("audit run {} in {}", meta.id, history.path().display()),
        warnings: Vec::new(),
    }
}

/// The first `complete_len` bytes of a log (its complete records), `None` when absent.
fn read_optional(path: &Path, complete_len: u64) -> Result<Option<Vec<u8>>, TargetError> {
    match std::fs::read(path) {
        Ok(mut b) => {
            b.truncate(complete_len as usize);
            Ok(Some(b))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(GroundingError::Io {
            path: path.to_path_buf(),
            error,
        }
        .into()),
    }
}

fn parse_records<T: DeserializeOwned>(
    origin: &str,
    lines: &[String],
) -> Result<Vec<T>, TargetError> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            veredicto_formats::json::from_str(l).map_err(|error| TargetError::Record {
                origin: origin.into(),
                record: i + 1,
                error,
            })
        })
        .collect()
}

/// The records as a JSONL file would hold them (`None` when there are none).
fn join_lines(lines: &[String]) -> Option<Vec<u8>> {
    if lines.is_empty() {
        return None;
    }
    let mut b = Vec::new();
    for l in lines {
        b.extend_from_slice(l.as_bytes());
        b.push(b'\n');
    }
    Some(b)
}

/// Appends each record on its own (each whole or absent), collecting the appends' warnings.
fn one_by_one<R>(
    log: &Path,
    recs: &[R],
    append: fn(
        &Path,
        &R,
    )
        -> Result<veredicto_grounding::AppendReport, veredicto_grounding::GroundingError>,
) -> Result<Vec<String>, TargetError> {
    let mut warnings = Vec::new();
    for r in recs {
        warnings.extend(append(log, r)?.warning(log));
    }
    Ok(warnings)
}

fn to_lines<T: serde::Serialize>(
    kind: AuditRecordKind,
    recs: &[T],
) -> Result<Vec<(AuditRecordKind, String)>, TargetError> {
    recs.iter()
        .map(|r| Ok((kind, serde_json::to_string(r)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use veredicto_grounding::Support;

    const CASES: &str = r#"
schema: veredicto-grounding/1
cases:
  - id: Q
    query: q
    snapshot: s
    sources: [{ id: D, version: v1, passages: [{ id: p, text: "The sky is blue." }] }]
    answers:
      - id: A
        text: "The sky is blue [D]."
        citations: [{ id: D, source: D, passage: p }]
        claims:
          - { id: A-1, text: "The sky is blue.", citations: [D] }
      - id: B
        text: "The sources do not say."
"#;

    fn write_cases(dir: &Path) -> PathBuf {
        let p = dir.join("cases.yaml");
        std::fs::write(&p, CASES).unwrap();
        p
    }

    fn review(set: &CaseSet, claim: &str, who: &str) -> ReviewRecord {
        veredicto_grounding::new_review(
            set,
            claim,
            Support::Supported,
            "it says so",
            who,
            "2025-01-01T00:00:00Z",
            None,
        )
        .unwrap()
    }

    fn meta(t: &AuditTarget) -> AuditRunMeta {
        AuditRunMeta {
            id: String::new(),
            created_at: "2025-01-02T00:00:00Z".into(),
            label: None,
            replay_of: None,
            cases_name: t.name.clone(),
            cases_sha256: String::new(),
            counts: t.counts(),
            tool_version: "test".into(),
            git_revision: None,
        }
    }

    #[test]
    fn an_existing_file_is_a_file_a_path_like_name_must_exist_the_rest_is_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_cases(dir.path());
        let arg = p.to_str().unwrap();
        assert_eq!(resolve(arg).unwrap(), TargetRef::File(p.clone()));
        for missing in ["gone.yaml", "x/cases", "C.JSON", "a\\b", "x.yml"] {
            let e = resolve(missing).unwrap_err();
            assert_eq!(e.to_string(), format!("{missing}: no such case file"));
        }
        for run in ["latest", "01J9ZX", "a1b2"] {
            assert_eq!(resolve(run).unwrap(), TargetRef::Run(run.into()));
        }
    }

    #[test]
    fn a_case_file_reads_its_logs_and_appends_beside_itself() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_cases(dir.path());
        let t = AuditTarget::from_file(&p).unwrap();
        assert_eq!(
            (t.origin.as_str(), t.name.as_str()),
            (p.to_str().unwrap(), "cases.yaml")
        );
        assert!(t.reviews.is_empty() && t.raw_reviews.is_none() && t.run_meta().is_none());
        let c = t.counts();
        assert_eq!((c.cases, c.answers, c.claims, c.abstentions), (1, 2, 1, 1));
        assert_eq!(c.snapshots, vec!["s".to_string()]);
        let a = t.append_reviews(&[review(&t.set, "A-1", "ana")]).unwrap();
        assert_eq!(a.place, review_log_path(&p).display().to_string());
        assert!(a.warnings.is_empty());

        let t = AuditTarget::from_file(&p).unwrap();
        assert_eq!(t.reviews.len(), 1);
        assert_eq!(t.raw_records().len(), 1);
        assert_eq!(t.raw_records()[0].0, AuditRecordKind::Review);
        assert_eq!(t.reference(), t.origin);
    }

    #[test]
    fn a_torn_last_record_is_a_warning_and_an_unknown_claim_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_cases(dir.path());
        let t = AuditTarget::from_file(&p).unwrap();
        let line = serde_json::to_string(&review(&t.set, "A-1", "ana")).unwrap();
        let log = review_log_path(&p);
        std::fs::write(&log, format!("{line}\n{{\"case\": \"Q\"")).unwrap();
        let t = AuditTarget::from_file(&p).unwrap();
        assert_eq!(t.reviews.len(), 1);
        assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
        assert_eq!(
            t.raw_reviews.as_deref(),
            Some(format!("{line}\n").as_bytes())
        );

        std::fs::write(&log, format!("{}\n", line.replace("A-1", "Z-9"))).unwrap();
        let e = AuditTarget::from_file(&p).err().expect("unknown claim");
        assert_eq!(
            e.to_string(),
            format!("{}: record 1: review of unknown claim `Z-9`", log.display())
        );
    }

    #[test]
    fn a_recorded_run_reads_and_appends_in_the_history() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_cases(dir.path());
        let file = AuditTarget::from_file(&p).unwrap();
        file.append_reviews(&[review(&file.set, "A-1", "ana")])
            .unwrap();
        let file = AuditTarget::from_file(&p).unwrap();
        let db = dir.path().join("history.db");
        let h = History::open(&db).unwrap();
        let id = h
            .record_audit_run(
                &meta(&file),
                &file.bytes,
                Some(b"notes"),
                &file.raw_records(),
            )
            .unwrap();
        let note = file.recorded_elsewhere(&h, "history.db").expect("note");
        assert!(
            note.starts_with(&format!(
                "note: {} is recorded as audit run {id} in history.db",
                p.display()
            )),
            "{note}"
        );

        let run = AuditTarget::from_run(History::open_existing(&db).unwrap(), "latest").unwrap();
        assert_eq!(run.origin, format!("audit run {id} (cases.yaml)"));
        assert_eq!(run.reference(), id);
        assert_eq!(run.reviews, file.reviews, "records carried into the run");
        assert_eq!(run.notes.as_deref(), Some(&b"notes"[..]));
        assert!(run.recorded_elsewhere(&h, "history.db").is_none());
        let a = run
            .append_reviews(&[review(&run.set, "A-1", "bea")])
            .unwrap();
        assert_eq!(a.place, format!("audit run {id} in {}", db.display()));
        let run = AuditTarget::from_run(History::open_existing(&db).unwrap(), &id[..8]).unwrap();
        assert_eq!(run.reviews.len(), 2);
        assert_eq!(
            AuditTarget::from_file(&p).unwrap().reviews.len(),
            1,
            "the file's log is untouched"
        );
    }

    #[test]
    fn a_run_packages_with_the_run_before_it_and_a_case_file_without() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_cases(dir.path());
        let file = AuditTarget::from_file(&p).unwrap();
        assert_eq!(file.default_previous().unwrap(), None);
        let files = file.package_files(None, None, None, "t").unwrap();
        assert!(!files.contains_key("comparison.json"));
        assert_eq!(
            files,
            file.package_files(None, None, None, "t").unwrap(),
            "deterministic"
        );

        let db = dir.path().join("history.db");
        let h = History::open(&db).unwrap();
        let first = h
            .record_audit_run(&meta(&file), &file.bytes, None, &[])
            .unwrap();
        let second = h
            .record_audit_run(&meta(&file), &file.bytes, None, &[])
            .unwrap();
        let run = AuditTarget::from_run(History::open_existing(&db).unwrap(), &second).unwrap();
        assert_eq!(run.default_previous().unwrap(), Some(first.clone()));
        let prev = AuditTarget::from_run(History::open_existing(&db).unwrap(), &first).unwrap();
        let files = run
            .package_files(Some(&prev), Some(b"n"), None, "t")
            .unwrap();
        assert!(files.contains_key("comparison.json"));
        assert_eq!(files.get("notes.md").map(Vec::as_slice), Some(&b"n"[..]));
        let version = String::from_utf8(files["version.json"].clone()).unwrap();
        assert!(
            version.contains(&format!("\"compared_with\": \"{first}\"")),
            "{version}"
        );
    }
}
