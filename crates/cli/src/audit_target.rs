//! What an `audit` command works on: a case file, whose reviews and suggestions live beside
//! it (`<cases>.reviews.jsonl`, `<cases>.suggestions.jsonl`), or a recorded audit run, whose
//! reviews and suggestions live in the history database. Both are append-only.

use crate::history_args::HistoryArgs;
use anyhow::{bail, Context};
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use veredicto_grounding as g;
use veredicto_store::{AuditRecordKind, AuditRunMeta, History};

/// Where a target's records are appended.
pub enum Store {
    File(PathBuf),
    Run {
        history: Box<History>,
        meta: Box<AuditRunMeta>,
    },
}

/// A loaded, validated target.
pub struct Target {
    /// For messages: the case file path, or `audit run <ID> (<name>)`.
    pub origin: String,
    /// The case file's name (decides YAML / JSON; used inside packages).
    pub name: String,
    pub set: g::CaseSet,
    pub bytes: Vec<u8>,
    pub reviews: Vec<g::ReviewRecord>,
    pub raw_reviews: Option<Vec<u8>>,
    pub suggestions: Vec<g::SuggestionRecord>,
    pub raw_suggestions: Option<Vec<u8>>,
    /// Notes recorded with a run.
    pub notes: Option<Vec<u8>>,
    pub store: Store,
}

/// True when `arg` can only be meant as a file (so a missing file is not looked up as a run).
fn looks_like_path(arg: &str) -> bool {
    arg.contains('/')
        || arg.contains('\\')
        || [".yaml", ".yml", ".json"]
            .iter()
            .any(|e| arg.to_ascii_lowercase().ends_with(e))
}

impl Target {
    /// A case file when `arg` names an existing file, else an audit run (ID, unique prefix
    /// or `latest`) in the history.
    pub fn open(arg: &str, history: &HistoryArgs) -> anyhow::Result<Target> {
        let path = Path::new(arg);
        if path.is_file() {
            return Target::from_file(path);
        }
        if looks_like_path(arg) {
            bail!("{arg}: no such case file");
        }
        if !history.history.is_file() {
            bail!(
                "`{arg}` is not a case file, and there is no history at {} to find an audit run in \
                 (record one with `veredicto audit record CASES`, or pass --history)",
                history.history.display()
            );
        }
        let h = history.open_existing()?;
        Target::from_run(h, arg)
    }

    pub fn from_file(path: &Path) -> anyhow::Result<Target> {
        let (set, bytes) = g::load_cases(path)?;
        let rlog = g::review_log_path(path);
        let slog = g::suggestion_log_path(path);
        // A torn last record (a crash mid-append) is left out with a warning.
        let reviews = g::read_review_log(&rlog)?;
        let suggestions = g::read_suggestion_log(&slog)?;
        for w in [reviews.warning(&rlog), suggestions.warning(&slog)]
            .into_iter()
            .flatten()
        {
            eprintln!("{w}");
        }
        let t = Target {
            origin: path.display().to_string(),
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "cases.yaml".into()),
            set,
            bytes,
            raw_reviews: read_optional(&rlog, reviews.complete_len)?,
            reviews: reviews.records,
            raw_suggestions: read_optional(&slog, suggestions.complete_len)?,
            suggestions: suggestions.records,
            notes: None,
            store: Store::File(path.to_path_buf()),
        };
        t.check_claims(&rlog.display().to_string(), &slog.display().to_string())?;
        Ok(t)
    }

    pub fn from_run(history: History, reference: &str) -> anyhow::Result<Target> {
        let run = history.audit_run(reference)?;
        let id = run.meta.id.clone();
        let origin = format!("audit run {id} ({})", run.meta.cases_name);
        let text = String::from_utf8(run.cases.clone())
            .with_context(|| format!("{origin}: the case file is not UTF-8"))?;
        // Messages name the run and the file; the extension picks YAML or JSON.
        let label = PathBuf::from(format!("run {id}/{}", run.meta.cases_name));
        let set = g::parse_cases(&label, &text)?;
        let review_lines = history.audit_records(&id, AuditRecordKind::Review)?;
        let suggestion_lines = history.audit_records(&id, AuditRecordKind::Suggestion)?;
        let reviews = parse_records(&format!("{origin} review"), &review_lines)?;
        let suggestions = parse_records(&format!("{origin} suggestion"), &suggestion_lines)?;
        let t = Target {
            origin: origin.clone(),
            name: run.meta.cases_name.clone(),
            set,
            bytes: run.cases,
            reviews,
            raw_reviews: join_lines(&review_lines),
            suggestions,
            raw_suggestions: join_lines(&suggestion_lines),
            notes: run.notes,
            store: Store::Run {
                history: Box::new(history),
                meta: Box::new(run.meta),
            },
        };
        t.check_claims(
            &format!("{origin} reviews"),
            &format!("{origin} suggestions"),
        )?;
        Ok(t)
    }

    /// Every review and suggestion must be of a claim of the cases.
    fn check_claims(&self, reviews_origin: &str, suggestions_origin: &str) -> anyhow::Result<()> {
        let known = |id: &str| {
            self.set
                .cases
                .iter()
                .flat_map(|c| c.answers.iter())
                .flat_map(|a| a.claims.iter())
                .any(|c| c.id == id)
        };
        for (i, r) in self.reviews.iter().enumerate() {
            if !known(&r.claim) {
                bail!(
                    "{reviews_origin}: record {}: review of unknown claim `{}`",
                    i + 1,
                    r.claim
                );
            }
        }
        for (i, s) in self.suggestions.iter().enumerate() {
            if !known(&s.claim) {
                bail!(
                    "{suggestions_origin}: record {}: suggestion for unknown claim `{}`",
                    i + 1,
                    s.claim
                );
            }
        }
        Ok(())
    }

    /// The audit run ID, when the target is a recorded run.
    pub fn run_meta(&self) -> Option<&AuditRunMeta> {
        match &self.store {
            Store::Run { meta, .. } => Some(meta),
            Store::File(_) => None,
        }
    }

    pub fn history(&self) -> Option<&History> {
        match &self.store {
            Store::Run { history, .. } => Some(history),
            Store::File(_) => None,
        }
    }

    /// For a case file that is also recorded as an audit run in `history`: a note saying
    /// that records appended to the file stay out of the run (and how to reach the run).
    pub fn recorded_elsewhere(&self, history: &HistoryArgs) -> Option<String> {
        if !matches!(self.store, Store::File(_)) || !history.history.is_file() {
            return None;
        }
        let ids = history
            .open_existing()
            .ok()?
            .audit_runs_of(&self.bytes)
            .ok()?;
        let newest = ids.first()?;
        Some(format!(
            "note: {} is recorded as audit run {newest}{} in {}; this record stays beside the \
             file, outside the run (give the run ID to keep it in the history)",
            self.origin,
            if ids.len() > 1 {
                format!(" (and {} earlier run(s))", ids.len() - 1)
            } else {
                String::new()
            },
            history.history.display()
        ))
    }

    /// Appends review records; returns where they went.
    pub fn append_reviews(&self, recs: &[g::ReviewRecord]) -> anyhow::Result<String> {
        match &self.store {
            Store::File(path) => {
                let log = g::review_log_path(path);
                for r in recs {
                    if let Some(w) = g::append_review(&log, r)?.warning(&log) {
                        eprintln!("{w}");
                    }
                }
                Ok(log.display().to_string())
            }
            Store::Run { history, meta } => {
                let lines = to_lines(AuditRecordKind::Review, recs)?;
                history.append_audit_records(&meta.id, &lines)?;
                Ok(format!(
                    "audit run {} in {}",
                    meta.id,
                    history.path().display()
                ))
            }
        }
    }

    /// Appends suggestion records; returns where they went.
    pub fn append_suggestions(&self, recs: &[g::SuggestionRecord]) -> anyhow::Result<String> {
        match &self.store {
            Store::File(path) => {
                let log = g::suggestion_log_path(path);
                if let Some(w) = g::append_suggestions(&log, recs)?.warning(&log) {
                    eprintln!("{w}");
                }
                Ok(log.display().to_string())
            }
            Store::Run { history, meta } => {
                let lines = to_lines(AuditRecordKind::Suggestion, recs)?;
                history.append_audit_records(&meta.id, &lines)?;
                Ok(format!(
                    "audit run {} in {}",
                    meta.id,
                    history.path().display()
                ))
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
    pub fn counts(&self) -> veredicto_store::AuditCounts {
        let answers: Vec<&g::Answer> = self
            .set
            .cases
            .iter()
            .flat_map(|c| c.answers.iter())
            .collect();
        let mut snapshots: Vec<String> =
            self.set.cases.iter().map(|c| c.snapshot.clone()).collect();
        snapshots.sort();
        snapshots.dedup();
        veredicto_store::AuditCounts {
            cases: self.set.cases.len(),
            answers: answers.len(),
            claims: answers.iter().map(|a| a.claims.len()).sum(),
            abstentions: answers.iter().filter(|a| a.claims.is_empty()).count(),
            snapshots,
        }
    }

    /// The claim with this ID.
    pub fn claim(&self, id: &str) -> Option<&g::Claim> {
        self.set
            .cases
            .iter()
            .flat_map(|c| c.answers.iter())
            .flat_map(|a| a.claims.iter())
            .find(|c| c.id == id)
    }
}

/// The first `complete_len` bytes of a log (its complete records), `None` when absent.
fn read_optional(path: &Path, complete_len: u64) -> anyhow::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(mut b) => {
            b.truncate(complete_len as usize);
            Ok(Some(b))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| path.display().to_string()),
    }
}

fn parse_records<T: DeserializeOwned>(origin: &str, lines: &[String]) -> anyhow::Result<Vec<T>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            veredicto_formats::json::from_str(l)
                .with_context(|| format!("{origin} record {}", i + 1))
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

fn to_lines<T: serde::Serialize>(
    kind: AuditRecordKind,
    recs: &[T],
) -> anyhow::Result<Vec<(AuditRecordKind, String)>> {
    recs.iter()
        .map(|r| Ok((kind, serde_json::to_string(r)?)))
        .collect()
}
