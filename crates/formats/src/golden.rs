//! Golden sets: veredicto JSONL cases, or a BEIR folder (`queries.jsonl` + `qrels/test.tsv`).
//!
//! JSONL case fields: `id`, `query`, `expected` (non-empty list of chunk IDs, no repeats),
//! optional `top_k` (>= 1), `domain`, `tags`, `gold`, `query_vector` (a precomputed query
//! embedding) and `filters` (an object: `domain`, `label` / `labels`, `valid_at`,
//! `facets`, any other key a facet; see [`read_filters`]). Other fields are allowed and
//! ignored.
//!
//! BEIR: the cases are the queries that have at least one qrel with relevance > 0, in the
//! order of `queries.jsonl`; those documents are the expected list (in qrels order).

use crate::error::{FormatError, Result};
use crate::jsonl::{self, SeenIds};
use crate::text;
use std::collections::HashMap;
use std::path::Path;
use veredicto_core::case::Case;

/// Reads a golden set from a JSONL file or a BEIR folder.
///
/// `sqlite:FILE?table=T` reads the cases from a table of a SQLite database (a Cloudflare D1
/// database's local file too); see [`crate::golden_sqlite`].
pub fn read_golden(path: &Path) -> Result<Vec<Case>> {
    if let Some(spec) = crate::golden_sqlite::spec_of(path) {
        return crate::golden_sqlite::read(spec);
    }
    let cases = if path.is_dir() {
        read_beir(path, "test")?
    } else {
        read_jsonl(path)?
    };
    if cases.is_empty() {
        return Err(FormatError::invalid(
            path,
            0,
            "-",
            "the golden set has no cases",
        ));
    }
    Ok(cases)
}

fn read_jsonl(path: &Path) -> Result<Vec<Case>> {
    let mut seen = SeenIds::default();
    let mut cases = Vec::new();
    for line in jsonl::read_objects(path)? {
        cases.push(case_of(&line, &mut seen)?);
    }
    Ok(cases)
}

/// One case from one object (a JSONL line, or a row of a SQLite table made into one).
pub(crate) fn case_of(line: &jsonl::ObjectLine<'_>, seen: &mut SeenIds) -> Result<Case> {
    let id = line.req_id("id")?;
    seen.check(line, "id", &id, "case")?;
    let query = line
        .opt_text("query")?
        .ok_or_else(|| line.error("query", "missing"))?;
    if !line.object.contains_key("expected") {
        return Err(line.error("expected", "missing"));
    }
    let expected = line.str_list("expected")?;
    if expected.is_empty() {
        return Err(line.error(
            "expected",
            "empty: a case needs at least one expected chunk",
        ));
    }
    let mut dup = std::collections::HashSet::new();
    for (i, e) in expected.iter().enumerate() {
        if !dup.insert(e) {
            return Err(line.error(
                &format!("expected[{i}]"),
                format!("chunk `{e}` is listed twice"),
            ));
        }
    }
    Ok(Case {
        id,
        query,
        expected,
        top_k: line.opt_positive("top_k")?,
        domain: line.opt_id("domain")?,
        tags: line.str_list("tags")?,
        gold: line.opt_bool("gold")?.unwrap_or(false),
        query_vector: line.opt_vector("query_vector")?,
        filters: read_filters(line)?,
    })
}

/// A case's optional `filters` object, checked against the shape every retriever reads:
/// `domain` a string; `label` / `labels` a string or a list of strings; `valid_at` a
/// calendar date `YYYY-MM-DD`; `facets` an object of scalars (string, number, boolean); any
/// other key a scalar (a facet). An empty object is no filter.
fn read_filters(
    line: &jsonl::ObjectLine<'_>,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>> {
    use serde_json::Value;
    let object = match line.object.get("filters") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(line.error(
                "filters",
                format!("expected an object, found {}", jsonl::kind(other)),
            ))
        }
    };
    let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
    for (key, value) in object {
        let field = format!("filters.{key}");
        match key.as_str() {
            "domain" if !value.is_string() => {
                return Err(line.error(
                    &field,
                    format!("expected a string, found {}", jsonl::kind(value)),
                ))
            }
            "label" | "labels" => match value {
                Value::String(_) => {}
                Value::Array(items) => {
                    if let Some((i, item)) = items.iter().enumerate().find(|(_, v)| !v.is_string())
                    {
                        return Err(line.error(
                            &format!("{field}[{i}]"),
                            format!("expected a string, found {}", jsonl::kind(item)),
                        ));
                    }
                }
                other => {
                    return Err(line.error(
                        &field,
                        format!(
                            "expected a string or a list of strings, found {}",
                            jsonl::kind(other)
                        ),
                    ))
                }
            },
            "valid_at" => {
                let checked = match value.as_str() {
                    Some(d) => veredicto_core::time::check_date(d).map_err(|e| e.to_string()),
                    None => Err(format!(
                        "expected a calendar date YYYY-MM-DD, found {}",
                        veredicto_core::redact::short(&value.to_string())
                    )),
                };
                if let Err(message) = checked {
                    return Err(line.error(&field, message));
                }
            }
            "facets" => {
                let Some(facets) = value.as_object() else {
                    return Err(line.error(
                        &field,
                        format!("expected an object, found {}", jsonl::kind(value)),
                    ));
                };
                if let Some((k, v)) = facets.iter().find(|(_, v)| !scalar(v)) {
                    return Err(line.error(
                        &format!("{field}.{k}"),
                        format!(
                            "expected a string, number or boolean, found {}",
                            jsonl::kind(v)
                        ),
                    ));
                }
            }
            "domain" => {}
            _ if !scalar(value) => {
                return Err(line.error(
                    &field,
                    format!(
                        "expected a string, number or boolean (a facet), found {}",
                        jsonl::kind(value)
                    ),
                ))
            }
            _ => {}
        }
    }
    Ok((!object.is_empty()).then(|| object.clone()))
}

/// Reads a BEIR folder's queries and `qrels/<split>.tsv`.
pub fn read_beir(dir: &Path, split: &str) -> Result<Vec<Case>> {
    let qrels_path = dir.join("qrels").join(format!("{split}.tsv"));
    let text = text::read_to_string(&qrels_path)?;
    let mut expected: HashMap<String, Vec<String>> = HashMap::new();
    for (line, raw) in text::lines(&text) {
        if raw.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = raw.split('\t').collect();
        if line == 1 && cols.first().is_some_and(|c| c.trim() == "query-id") {
            continue;
        }
        if cols.len() != 3 {
            return Err(FormatError::invalid(
                &qrels_path,
                line,
                "-",
                format!(
                    "expected 3 tab-separated columns (query-id, corpus-id, score), found {}",
                    cols.len()
                ),
            ));
        }
        let score: i64 = cols[2].trim().parse().map_err(|_| {
            FormatError::invalid(
                &qrels_path,
                line,
                "score",
                format!("not an integer: `{}`", cols[2].trim()),
            )
        })?;
        if score > 0 {
            let docs = expected.entry(cols[0].trim().to_owned()).or_default();
            let doc = cols[1].trim().to_owned();
            if !docs.contains(&doc) {
                docs.push(doc);
            }
        }
    }
    let queries_path = dir.join("queries.jsonl");
    let mut seen = SeenIds::default();
    let mut cases = Vec::new();
    for line in jsonl::read_objects(&queries_path)? {
        let id = line.req_id("_id")?;
        seen.check(&line, "_id", &id, "query")?;
        let Some(exp) = expected.remove(&id) else {
            continue;
        };
        let query = line
            .opt_text("text")?
            .ok_or_else(|| line.error("text", "missing"))?;
        cases.push(Case {
            id,
            query,
            expected: exp,
            top_k: None,
            domain: None,
            tags: Vec::new(),
            gold: false,
            query_vector: None,
            filters: None,
        });
    }
    Ok(cases)
}
