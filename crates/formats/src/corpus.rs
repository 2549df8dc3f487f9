//! Corpus files: chunk JSONL (SPEC §1) or a BEIR `corpus.jsonl` (`_id`, `title`, `text`).
//!
//! Required: `id` (or BEIR's `_id`). Typed: `doc_id`, `text`, `representation`, `domain`,
//! `labels`, `facets`, `valid_from`, `valid_to`, `ingest_batch`, and `start` / `end`: where
//! the chunk sits in its document `doc_id` (character offsets into the document's text, end
//! exclusive; `offset_unit` `bytes` or `utf16` when another tool counted otherwise, converted
//! with the documents, see [`crate::locate`]). Every other field is kept by the line but not
//! read by the exam.

use crate::error::Result;
use crate::jsonl::{self, SeenIds};
use serde_json::Value;
use std::path::Path;
use veredicto_core::case::Chunk;

/// One corpus line: the typed chunk, an optional precomputed vector, and the line itself
/// (every field, unknown ones included) for rehydration.
#[derive(Debug, Clone)]
pub struct CorpusLine {
    pub chunk: Chunk,
    /// `"vector": [...]`: a precomputed embedding exported from the user's pipeline.
    pub vector: Option<Vec<f32>>,
    /// The 1-based line number in the file.
    pub line: usize,
    pub raw: serde_json::Map<String, Value>,
    /// Offsets given in another unit than characters (`start`, `end`, unit): the chunk's
    /// `start` / `end` stay unset until the documents convert them.
    pub offsets_in: Option<(usize, usize, veredicto_core::evidence::OffsetUnit)>,
}

/// Reads a corpus file; rejects duplicate chunk IDs.
pub fn read_corpus(path: &Path) -> Result<Vec<Chunk>> {
    Ok(read_corpus_lines(path)?
        .into_iter()
        .map(|l| l.chunk)
        .collect())
}

/// Reads a corpus file keeping vectors and raw lines; rejects duplicate chunk IDs.
pub fn read_corpus_lines(path: &Path) -> Result<Vec<CorpusLine>> {
    let mut seen = SeenIds::default();
    let mut chunks = Vec::new();
    for line in jsonl::read_objects(path)? {
        let parsed = parse_line(line, &mut seen)?;
        chunks.push(parsed);
    }
    Ok(chunks)
}

/// Parses one chunk given as a JSON object (e.g. a record rehydrated from the index);
/// `path` and `line` only locate errors.
pub fn chunk_from_object(
    path: &Path,
    line: usize,
    object: serde_json::Map<String, Value>,
) -> Result<Chunk> {
    let line = jsonl::ObjectLine { path, line, object };
    Ok(parse_line(line, &mut SeenIds::default())?.chunk)
}

fn parse_line(line: jsonl::ObjectLine<'_>, seen: &mut SeenIds) -> Result<CorpusLine> {
    {
        let id_field = if line.object.contains_key("id") || !line.object.contains_key("_id") {
            "id"
        } else {
            "_id"
        };
        let id = line.req_id(id_field)?;
        seen.check(&line, id_field, &id, "chunk")?;
        let facets = match line.object.get("facets") {
            None | Some(Value::Null) => Default::default(),
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(other) => {
                return Err(line.error(
                    "facets",
                    format!("expected an object, found {}", jsonl::kind(other)),
                ))
            }
        };
        let text = match (line.opt_text("title")?, line.opt_text("text")?) {
            (Some(title), Some(text)) if id_field == "_id" => Some(format!("{title} {text}")),
            (_, text) => text,
        };
        let doc_id = line.opt_id("doc_id")?;
        let offsets = read_offsets(&line, doc_id.is_some())?;
        let (start, end, offsets_in) = match offsets {
            None => (None, None, None),
            Some((s, e, veredicto_core::evidence::OffsetUnit::Chars)) => (Some(s), Some(e), None),
            Some(other) => (None, None, Some(other)),
        };
        let chunk = Chunk {
            id,
            doc_id,
            text,
            representation: line.opt_text("representation")?,
            domain: line.opt_id("domain")?,
            labels: line.str_list("labels")?,
            valid_from: line.opt_date("valid_from")?,
            valid_to: line.opt_date("valid_to")?,
            ingest_batch: line.opt_id("ingest_batch")?,
            facets,
            start,
            end,
        };
        Ok(CorpusLine {
            chunk,
            vector: line.opt_vector("vector")?,
            line: line.line,
            raw: line.object,
            offsets_in,
        })
    }
}

/// A chunk's `start`, `end` and `offset_unit`: both offsets or neither, non-negative
/// integers, `start < end`, and a `doc_id` to point into.
fn read_offsets(
    line: &jsonl::ObjectLine<'_>,
    has_doc: bool,
) -> Result<Option<(usize, usize, veredicto_core::evidence::OffsetUnit)>> {
    let get = |k: &str| line.object.get(k).filter(|v| !v.is_null());
    let int = |k: &str, v: &Value| match v.as_u64() {
        Some(n) if usize::try_from(n).is_ok() => Ok(n as usize),
        _ => Err(line.error(
            k,
            format!(
                "an offset is a non-negative integer, got {}",
                veredicto_core::redact::short(&v.to_string())
            ),
        )),
    };
    let (start, end) = match (get("start"), get("end")) {
        (None, None) => {
            if get("offset_unit").is_some() {
                return Err(line.error("offset_unit", "given without `start` and `end`"));
            }
            return Ok(None);
        }
        (Some(_), None) => return Err(line.error("end", "missing (beside `start`)")),
        (None, Some(_)) => return Err(line.error("start", "missing (beside `end`)")),
        (Some(s), Some(e)) => (int("start", s)?, int("end", e)?),
    };
    if end <= start {
        return Err(line.error(
            "end",
            format!("must be more than start ({start}), got {end}"),
        ));
    }
    if !has_doc {
        return Err(line.error(
            "doc_id",
            "missing: `start` and `end` locate the chunk in its document, which `doc_id` names",
        ));
    }
    let unit = match get("offset_unit") {
        None => veredicto_core::evidence::OffsetUnit::Chars,
        Some(Value::String(u)) => u
            .parse()
            .map_err(|m: String| line.error("offset_unit", m))?,
        Some(other) => {
            return Err(line.error(
                "offset_unit",
                format!("expected a string, found {}", jsonl::kind(other)),
            ))
        }
    };
    Ok(Some((start, end, unit)))
}

/// Which field a chunk's embedded text comes from, for the `empty_text` check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRule {
    /// `representation`, falling back to `text`.
    RepresentationOrText,
    /// `text` only (BEIR files: `title + " " + text`).
    Text,
}

/// What [`read_corpus_screened`] checks beyond the line's own form.
#[derive(Debug, Clone, Copy)]
pub struct Screen<'a> {
    /// The field that must hold text.
    pub text: TextRule,
    /// The ingest's day (`YYYY-MM-DD`): a chunk whose `valid_to` is before it is `expired`.
    pub today: Option<&'a str>,
    /// The dimension precomputed vectors must have (the index's); `None`: the first
    /// accepted vector's.
    pub dimension: Option<usize>,
}

/// A corpus read line by line: the lines kept, and those rejected with their reason.
#[derive(Debug, Clone, Default)]
pub struct Screened {
    pub lines: Vec<CorpusLine>,
    pub rejected: Vec<veredicto_core::gate::Rejection>,
}

/// Reads a corpus keeping every good line and rejecting bad ones with a reason, instead of
/// stopping at the first: unparseable lines, missing or duplicate IDs (the first occurrence
/// is kept), no text to embed, a vector of another dimension, a `valid_to` before
/// `screen.today`, and any other badly typed field. Only an unreadable file (missing, not
/// UTF-8, too large) is an error.
pub fn read_corpus_screened(path: &Path, screen: Screen<'_>) -> Result<Screened> {
    use veredicto_core::gate::{RejectReason, Rejection};
    let text = crate::text::read_to_string(path)?;
    let file = path.display().to_string();
    let mut out = Screened::default();
    let mut first_line: std::collections::HashMap<String, usize> = Default::default();
    let mut dimension = screen.dimension;
    let reject =
        |line: usize, id: Option<String>, reason, field: &str, message: String| Rejection {
            file: file.clone(),
            line,
            id: id.map(|i| veredicto_core::redact::short(&i)),
            reason,
            field: field.to_owned(),
            message: veredicto_core::redact::message(&message),
        };
    for (n, raw) in crate::text::lines(&text) {
        if raw.trim().is_empty() {
            continue;
        }
        let object = match crate::json::value_from_str(raw) {
            Ok(Value::Object(o)) => o,
            Ok(other) => {
                out.rejected.push(reject(
                    n,
                    None,
                    RejectReason::Unparseable,
                    "-",
                    format!("expected a JSON object, found {}", jsonl::kind(&other)),
                ));
                continue;
            }
            Err(e) => {
                out.rejected.push(reject(
                    n,
                    None,
                    RejectReason::Unparseable,
                    "-",
                    format!("malformed JSON: {e}"),
                ));
                continue;
            }
        };
        let id_field = if object.contains_key("id") || !object.contains_key("_id") {
            "id"
        } else {
            "_id"
        };
        let obj_line = jsonl::ObjectLine {
            path,
            line: n,
            object,
        };
        let id = match obj_line.opt_id(id_field) {
            Ok(Some(id)) => id,
            Ok(None) => {
                out.rejected.push(reject(
                    n,
                    None,
                    RejectReason::MissingId,
                    id_field,
                    "missing".into(),
                ));
                continue;
            }
            Err(e) => {
                out.rejected.push(reject(
                    n,
                    None,
                    RejectReason::MissingId,
                    id_field,
                    error_message(&e),
                ));
                continue;
            }
        };
        if let Some(first) = first_line.get(&id) {
            out.rejected.push(reject(
                n,
                Some(id.clone()),
                RejectReason::DuplicateId,
                id_field,
                format!("duplicate chunk ID (first on line {first}, which is kept)"),
            ));
            continue;
        }
        let parsed = match parse_line(obj_line, &mut SeenIds::default()) {
            Ok(p) => p,
            Err(e) => {
                let field = match &e {
                    crate::error::FormatError::Invalid { field, .. } => field.clone(),
                    _ => "-".into(),
                };
                out.rejected.push(reject(
                    n,
                    Some(id),
                    RejectReason::InvalidField,
                    &field,
                    error_message(&e),
                ));
                continue;
            }
        };
        first_line.insert(id.clone(), n);
        let c = &parsed.chunk;
        let embedded = match screen.text {
            TextRule::RepresentationOrText => c.representation.as_deref().or(c.text.as_deref()),
            TextRule::Text => c.text.as_deref(),
        };
        if embedded.is_none_or(|t| t.trim().is_empty()) {
            out.rejected.push(reject(
                n,
                Some(id),
                RejectReason::EmptyText,
                "text",
                "nothing to embed (no text or representation)".into(),
            ));
            continue;
        }
        if let Some(v) = &parsed.vector {
            match dimension {
                Some(d) if d != v.len() => {
                    out.rejected.push(reject(
                        n,
                        Some(id),
                        RejectReason::WrongDimension,
                        "vector",
                        format!("dimension {}, expected {d}", v.len()),
                    ));
                    continue;
                }
                Some(_) => {}
                None => dimension = Some(v.len()),
            }
        }
        // `valid_from` and `valid_to` are calendar dates here (checked by `parse_line`).
        if let (Some(today), Some(to)) = (screen.today, c.valid_to.as_deref()) {
            if to < today {
                out.rejected.push(reject(
                    n,
                    Some(id),
                    RejectReason::Expired,
                    "valid_to",
                    format!("validity ended on {to}, before the ingest ({today})"),
                ));
                continue;
            }
        }
        out.lines.push(parsed);
    }
    Ok(out)
}

/// The message of a line error without its `file:line: field` prefix.
fn error_message(e: &crate::error::FormatError) -> String {
    match e {
        crate::error::FormatError::Invalid { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod screen_tests {
    use super::*;
    use veredicto_core::gate::RejectReason;

    #[test]
    fn every_kind_of_bad_line_is_rejected_with_file_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl");
        let lines = [
            r#"{"id":"a","text":"fine","vector":[1,0]}"#,
            r#"{"id":"b","text":"fine""#,
            r#"{"text":"no id","vector":[1,0]}"#,
            r#"{"id":"a","text":"again","vector":[1,0]}"#,
            r#"{"id":"c","text":"  ","vector":[1,0]}"#,
            r#"{"id":"d","text":"three","vector":[1,0,0]}"#,
            r#"{"id":"e","text":"old","valid_to":"2020-01-01","vector":[0,1]}"#,
            r#"{"id":"f","text":"bad labels","labels":3,"vector":[0,1]}"#,
            r#"{"id":"g","text":"bad date","valid_to":"soon","vector":[0,1]}"#,
            r#"[1,2]"#,
            r#"{"id":"h","text":"current","valid_to":"2030-01-01","vector":[0,1]}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let s = read_corpus_screened(
            &path,
            Screen {
                text: TextRule::RepresentationOrText,
                today: Some("2025-11-14"),
                dimension: None,
            },
        )
        .unwrap();
        let kept: Vec<_> = s.lines.iter().map(|l| l.chunk.id.as_str()).collect();
        assert_eq!(kept, ["a", "h"]);
        let got: Vec<_> = s
            .rejected
            .iter()
            .map(|r| (r.line, r.reason, r.field.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (2, RejectReason::Unparseable, "-"),
                (3, RejectReason::MissingId, "id"),
                (4, RejectReason::DuplicateId, "id"),
                (5, RejectReason::EmptyText, "text"),
                (6, RejectReason::WrongDimension, "vector"),
                (7, RejectReason::Expired, "valid_to"),
                (8, RejectReason::InvalidField, "labels"),
                (9, RejectReason::InvalidField, "valid_to"),
                (10, RejectReason::Unparseable, "-"),
            ]
        );
        let shown = s.rejected[3].to_string();
        assert!(
            shown.contains("c.jsonl:5: field `text`: empty_text"),
            "{shown}"
        );
    }

    #[test]
    fn an_unreadable_file_is_an_error() {
        let err = read_corpus_screened(
            Path::new("/nonexistent/c.jsonl"),
            Screen {
                text: TextRule::Text,
                today: None,
                dimension: None,
            },
        );
        assert!(err.is_err());
    }
}
