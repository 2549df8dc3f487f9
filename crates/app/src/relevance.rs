//! `judge`: a chat model's relevance suggestion (relevant / partly / not, with a reason)
//! for every chunk that outranks the expected ones in a failing case of a recorded run,
//! asked with the fixed `relevance-v1` prompt (UMBRELA-style). Suggestions are appended to
//! their own file beside the golden set, never mixed into people's judgments; their
//! agreement with people's judgments is Cohen's kappa as `audit agreement` computes it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use veredicto_embed::JsonSchema;
use veredicto_grounding::Support;

use crate::chat::{json_object, Asker, Tally, RELEVANCE};
use crate::workbench::{judgments, Grade};
use crate::{Error, Events, HistorySpec, Result};

/// The suggestions beside a golden file (`golden.jsonl` → `golden.jsonl.suggestions.jsonl`).
pub fn suggestions_path(golden: &Path) -> PathBuf {
    let mut name = golden.file_name().unwrap_or_default().to_os_string();
    name.push(".suggestions.jsonl");
    golden.with_file_name(name)
}

/// One suggestion.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    pub case: String,
    pub chunk: String,
    /// Its rank in the run.
    pub rank: usize,
    pub grade: Grade,
    pub reason: String,
    /// The model that answered.
    pub model: String,
}

/// What `judge` does.
pub struct JudgeRequest<'a> {
    pub history: &'a HistorySpec,
    /// The recorded run (ID, unique prefix or `latest`).
    pub run: &'a str,
    /// The golden file the suggestions are stored beside.
    pub golden: &'a Path,
    /// The corpus the chunks' texts are read from.
    pub corpus: &'a Path,
    pub asker: &'a Asker,
    /// When (RFC 3339), recorded with the suggestions.
    pub at: &'a str,
    pub events: Events<'a>,
}

/// What `judge` found.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The run's full ID.
    pub run: String,
    /// The suggestions of this run, in case and rank order.
    pub suggestions: Vec<Suggestion>,
    /// Outranking chunks whose text the corpus does not hold (not asked).
    pub missing: Vec<(String, String)>,
    /// Replies unreadable twice, `case chunk: why` (no suggestion stored).
    pub failures: Vec<String>,
    /// Agreement of the latest suggestions with people's latest judgments.
    pub agreement: veredicto_grounding::Agreement,
    pub tally: Tally,
    /// Where the suggestions were appended.
    pub file: PathBuf,
}

impl Judged {
    /// The outranking chunks suggested relevant, as `(case, chunk)`.
    pub fn relevant(&self) -> Vec<(String, String)> {
        self.suggestions
            .iter()
            .filter(|s| s.grade == Grade::Relevant)
            .map(|s| (s.case.clone(), s.chunk.clone()))
            .collect()
    }
}

/// The JSON schema of a reply.
pub fn reply_schema() -> JsonSchema {
    JsonSchema {
        name: "relevance".into(),
        schema: json!({
            "type": "object", "additionalProperties": false,
            "required": ["grade", "reason"],
            "properties": {
                "grade": {"type": "string", "enum": ["relevant", "partly", "not"]},
                "reason": {"type": "string"},
            },
        }),
    }
}

/// Reads a reply: `grade` one of relevant, partly, not (case and spaces tolerated),
/// `reason` a non-empty string.
fn read_reply(reply: &str) -> std::result::Result<(Grade, String), String> {
    let o = json_object(reply)?;
    let grade = o
        .get("grade")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!(
                "the reply has no `grade` string: {:?}",
                crate::chat::excerpt(reply)
            )
        })?
        .trim()
        .to_ascii_lowercase();
    let grade: Grade = grade.parse()?;
    let reason = o
        .get("reason")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            format!(
                "the reply has no `reason` text: {:?}",
                crate::chat::excerpt(reply)
            )
        })?;
    Ok((grade, reason.to_owned()))
}

/// The user message for one (query, passage).
fn user_message(query: &str, chunk: &str, text: &str) -> String {
    let text = match text.char_indices().nth(4000) {
        Some((i, _)) => &text[..i],
        None => text,
    };
    format!(
        "Query:\n{}\n\nPassage [{chunk}]:\n{}\n",
        query.trim(),
        text.trim()
    )
}

/// Asks for a suggestion on every chunk outranking an expected one in the failing cases
/// of the run, appends them (all at once, synced) to the suggestions file, and measures
/// their agreement with people's judgments.
pub fn judge(req: &JudgeRequest<'_>) -> Result<Judged> {
    let recorded = req.history.open_read_only()?.get(req.run)?;
    let chunks = veredicto_formats::corpus::read_corpus(req.corpus)?;
    let texts: BTreeMap<&str, &str> = chunks
        .iter()
        .filter_map(|c| c.text.as_deref().map(|t| (c.id.as_str(), t)))
        .collect();
    let schema = reply_schema();
    let mut suggestions = Vec::new();
    let mut missing = Vec::new();
    let mut failures = Vec::new();
    let mut asked = 0usize;
    for c in recorded.report.cases.iter().filter(|c| !c.passed) {
        let mut seen = std::collections::BTreeSet::new();
        let mut outranking: Vec<(usize, &str)> = Vec::new();
        for f in &c.diagnosis {
            for o in &f.outranked_by {
                if seen.insert(o.id.as_str()) {
                    outranking.push((o.rank, o.id.as_str()));
                }
            }
        }
        outranking.sort();
        for (rank, chunk) in outranking {
            req.events.check()?;
            let Some(text) = texts.get(chunk) else {
                missing.push((c.id.clone(), chunk.to_owned()));
                continue;
            };
            asked += 1;
            let user = user_message(&c.query, chunk, text);
            match req.asker.ask(&RELEVANCE, &user, &schema, read_reply)? {
                Ok(a) => suggestions.push(Suggestion {
                    case: c.id.clone(),
                    chunk: chunk.to_owned(),
                    rank,
                    grade: a.value.0,
                    reason: a.value.1,
                    model: a.model,
                }),
                Err(why) => failures.push(format!("case {} chunk {chunk}: {why}", c.id)),
            }
        }
    }
    req.events.detail(format!(
        "{asked} outranking chunk(s) asked about in run {}",
        recorded.meta.id
    ));
    let file = suggestions_path(req.golden);
    append(&file, &suggestions, &recorded.meta.id, req)?;
    let agreement = agreement(req.golden)?;
    Ok(Judged {
        run: recorded.meta.id.clone(),
        suggestions,
        missing,
        failures,
        agreement,
        tally: req.asker.tally(),
        file,
    })
}

fn append(file: &Path, s: &[Suggestion], run: &str, req: &JudgeRequest<'_>) -> Result<()> {
    if s.is_empty() {
        return Ok(());
    }
    let mut text = String::new();
    for x in s {
        text.push_str(&serde_json::to_string(&json!({
            "at": req.at, "run": run, "case": x.case, "chunk": x.chunk, "rank": x.rank,
            "grade": x.grade.as_str(), "reason": x.reason, "model": x.model,
            "prompt": RELEVANCE.fingerprint(), "origin": "suggestion",
        }))?);
        text.push('\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .map_err(|e| Error::Message(format!("{}: {e}", file.display())))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    Ok(())
}

/// The latest suggestion of each (case, chunk) in the suggestions file (absent: none).
pub fn suggested(golden: &Path) -> Result<BTreeMap<(String, String), Grade>> {
    let path = suggestions_path(golden);
    let bytes = crate::workbench::read_bytes(&path)?;
    let mut out = BTreeMap::new();
    for (i, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| Error::Message(format!("{}: line {}: {e}", path.display(), i + 1)))?;
        let field = |k: &str| v[k].as_str().unwrap_or("").to_owned();
        let grade: Grade = field("grade").parse().map_err(|e: String| {
            Error::Message(format!("{}: line {}: grade: {e}", path.display(), i + 1))
        })?;
        out.insert((field("case"), field("chunk")), grade);
    }
    Ok(out)
}

/// The three grades as the support verdicts `audit agreement` counts, so that its Cohen's
/// kappa is computed by the same code (the fourth verdict is never used).
fn as_verdict(g: Grade) -> Support {
    match g {
        Grade::Relevant => Support::Supported,
        Grade::Partly => Support::PartiallySupported,
        Grade::Not => Support::Unsupported,
    }
}

/// Agreement (Cohen's kappa, confusion matrix) between the latest suggestion and the
/// latest judgment of a person on every (case, chunk) both rated; rows are people's.
pub fn agreement(golden: &Path) -> Result<veredicto_grounding::Agreement> {
    let people = judgments(golden)?;
    let model = suggested(golden)?;
    let pairs: Vec<(Support, Support)> = people
        .iter()
        .filter_map(|(k, (g, _))| model.get(k).map(|m| (as_verdict(*g), as_verdict(*m))))
        .collect();
    Ok(veredicto_grounding::cohen_kappa(&pairs))
}

/// The outranking chunks of `run` whose latest suggestion is relevant, as `(case, chunk)`
/// pairs in case order (for the report: the golden set may be incomplete there).
pub fn suggested_relevant(
    golden: &Path,
    run: &veredicto_core::history::RecordedRun,
) -> Result<Vec<(String, String)>> {
    let model = suggested(golden)?;
    let mut out = Vec::new();
    for c in &run.report.cases {
        let mut seen = std::collections::BTreeSet::new();
        for f in &c.diagnosis {
            for o in &f.outranked_by {
                if seen.insert(o.id.clone())
                    && model.get(&(c.id.clone(), o.id.clone())) == Some(&Grade::Relevant)
                {
                    out.push((c.id.clone(), o.id.clone()));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_grades_and_nothing_else() {
        assert_eq!(
            read_reply("{\"grade\": \"Relevant\", \"reason\": \"states 23 days\"}").unwrap(),
            (Grade::Relevant, "states 23 days".to_owned())
        );
        for bad in [
            "{\"grade\": \"yes\", \"reason\": \"r\"}",
            "{\"grade\": \"not\"}",
            "relevant",
        ] {
            assert!(read_reply(bad).is_err(), "{bad}");
        }
    }
}
