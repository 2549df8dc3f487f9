//! Corpus files: chunk JSONL (SPEC §1) or a BEIR `corpus.jsonl` (`_id`, `title`, `text`).
//!
//! Required: `id` (or BEIR's `_id`). Typed: `doc_id`, `text`, `representation`, `domain`,
//! `labels`, `facets`, `valid_from`, `valid_to`, `ingest_batch`. Every other field is kept
//! by the line but not read by the exam.

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
        let chunk = Chunk {
            id,
            doc_id: line.opt_id("doc_id")?,
            text,
            representation: line.opt_text("representation")?,
            domain: line.opt_id("domain")?,
            labels: line.str_list("labels")?,
            valid_from: line.opt_text("valid_from")?,
            valid_to: line.opt_text("valid_to")?,
            ingest_batch: line.opt_id("ingest_batch")?,
            facets,
        };
        Ok(CorpusLine {
            chunk,
            vector: line.opt_vector("vector")?,
            line: line.line,
            raw: line.object,
        })
    }
}
