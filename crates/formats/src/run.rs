//! Run files: a retriever's results for the golden set's queries.
//!
//! Two formats, told apart by the first non-blank character (`{` means JSONL):
//! - TREC run (`qid Q0 docid rank score tag`): ordered as trec_eval orders it, score
//!   descending, ties by docid descending; line order and the rank column are ignored.
//! - JSONL: `{"query_id": "...", "results": [{"id": "...", "score": 0.83}, ...]}`, one line
//!   per query, results in the order given; `score` is optional (without scores the noise
//!   rule is undefined). A query may appear on one line only; a chunk once per query.

use crate::error::{FormatError, Result};
use crate::jsonl::{self, SeenIds};
use crate::text;
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;
use veredicto_core::run::{Retrieved, Run};

/// Reads a run in TREC or JSONL format.
pub fn read_run(path: &Path) -> Result<Run> {
    let head = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let first = text::strip_bom(&head)
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace());
    drop(head);
    if first == Some(b'{') {
        read_jsonl_run(path)
    } else {
        let trec = crate::trec::read_run(path)?;
        let mut run = Run {
            name: trec.runid,
            ..Run::default()
        };
        for q in trec.queries {
            let docs = q
                .docs
                .into_iter()
                .map(|d| Retrieved {
                    id: d.docno,
                    score: Some(d.score),
                })
                .collect();
            run.queries.insert(q.qid, docs);
        }
        Ok(run)
    }
}

fn read_jsonl_run(path: &Path) -> Result<Run> {
    let mut run = Run {
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        ..Run::default()
    };
    let mut seen = SeenIds::default();
    for line in jsonl::read_objects(path)? {
        let qid = line.req_id("query_id")?;
        seen.check(&line, "query_id", &qid, "query")?;
        let items = match line.object.get("results") {
            None => return Err(line.error("results", "missing")),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(line.error(
                    "results",
                    format!("expected an array, found {}", jsonl::kind(other)),
                ))
            }
        };
        let mut ids = HashSet::new();
        let mut results = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = |f: &str| format!("results[{i}].{f}");
            let Value::Object(obj) = item else {
                return Err(line.error(
                    &format!("results[{i}]"),
                    format!("expected an object, found {}", jsonl::kind(item)),
                ));
            };
            let id = match obj.get("id") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
                None => return Err(line.error(&field("id"), "missing")),
                Some(other) => {
                    return Err(line.error(
                        &field("id"),
                        format!("expected a non-empty string, found {}", jsonl::kind(other)),
                    ))
                }
            };
            let score = match obj.get("score") {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => match n.as_f64() {
                    Some(f) if f.is_finite() => Some(f),
                    _ => {
                        return Err(line.error(&field("score"), format!("not a finite number: {n}")))
                    }
                },
                Some(other) => {
                    return Err(line.error(
                        &field("score"),
                        format!("expected a number, found {}", jsonl::kind(other)),
                    ))
                }
            };
            if !ids.insert(id.clone()) {
                return Err(line.error(
                    &field("id"),
                    format!("chunk `{id}` appears twice for this query"),
                ));
            }
            results.push(Retrieved { id, score });
        }
        run.queries.insert(qid, results);
    }
    Ok(run)
}
