//! Run files: a retriever's results for the golden set's queries.
//!
//! Two formats, told apart by the first non-blank character (`{` means JSONL):
//! - TREC run (`qid Q0 docid rank score tag`): ordered as trec_eval orders it, score
//!   descending, ties by docid descending; line order and the rank column are ignored.
//! - JSONL: `{"query_id": "...", "results": [{"id": "...", "score": 0.83}, ...]}`, one line
//!   per query, results in the order given; `score` is optional (without scores the noise
//!   rule is undefined). A query may appear on one line only.
//!
//! A chunk listed twice for one query is kept as listed (TREC: in trec_eval's order, so the
//! higher-scored line first): the exam keeps the first occurrence and reports the others,
//! as for every retriever (`veredicto_core::retrieval`). `veredicto trec` refuses it, as
//! trec_eval does ([`crate::trec::read_run`]).

use crate::error::{FormatError, Result};
use crate::jsonl::{self, SeenIds};
use crate::text;
use serde_json::Value;
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
        let trec = crate::trec::read_run_keeping_duplicates(path)?;
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
            results.push(Retrieved { id, score });
        }
        run.queries.insert(qid, results);
    }
    Ok(run)
}

/// A run the exam saves (`--save-run`), as text that [`read_run`] reads back to the same
/// lists in the same order.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedRun {
    /// The file's text.
    pub text: String,
    /// Queries (in TREC) whose scores were replaced by rank-derived ones (see
    /// [`trec_run_text`]), in query order.
    pub rank_scored: Vec<String>,
}

/// Why a run cannot be written in a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("query `{query}`: {reason}")]
pub struct SaveRunError {
    /// The query (case) ID.
    pub query: String,
    /// What the format cannot hold.
    pub reason: String,
}

/// Whether `a` then `b` is trec_eval's order: a higher score, or an equal score and a
/// greater document ID (byte-wise).
fn in_trec_order(a: (f64, &str), b: (f64, &str)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1.as_bytes() > b.1.as_bytes())
}

/// The run as TREC lines (`qid Q0 docid rank score tag`), queries in ID order, each list in
/// its order. trec_eval (and [`read_run`]) order a query's documents by score, not by line
/// or rank: a list whose scores already give its order (every score present and finite,
/// falling, ties by document ID descending) is written with its scores; any other list
/// (ties, missing or rising scores) with rank-derived scores `n, n-1, …, 1` (n results),
/// so that it reads back in the order the exam saw, and is named in
/// [`SavedRun::rank_scored`]. A query or chunk ID that TREC cannot hold (empty, with
/// whitespace, a query ID starting with `#`, which reads as a comment) is an error; a
/// JSONL run ([`jsonl_run_text`]) holds them.
pub fn trec_run_text(run: &Run, tag: &str) -> std::result::Result<SavedRun, SaveRunError> {
    let bad = |s: &str| s.is_empty() || s.bytes().any(crate::trec::is_space);
    let mut text = String::new();
    let mut rank_scored = Vec::new();
    for (qid, results) in &run.queries {
        let fail = |reason: String| SaveRunError {
            query: veredicto_core::redact::short(qid),
            reason,
        };
        if results.is_empty() {
            continue;
        }
        if bad(qid) || qid.starts_with('#') {
            return Err(fail(
                "a TREC run cannot hold this query ID (empty, whitespace, or a leading `#`)".into(),
            ));
        }
        if let Some(r) = results.iter().find(|r| bad(&r.id)) {
            return Err(fail(format!(
                "a TREC run cannot hold chunk ID `{}` (empty or with whitespace)",
                veredicto_core::redact::short(&r.id)
            )));
        }
        let scores: Option<Vec<f64>> = results
            .iter()
            .map(|r| r.score.filter(|s| s.is_finite()))
            .collect();
        let own = scores.filter(|s| {
            results
                .windows(2)
                .zip(s.windows(2))
                .all(|(r, s)| in_trec_order((s[0], &r[0].id), (s[1], &r[1].id)))
        });
        if own.is_none() {
            rank_scored.push(qid.clone());
        }
        let n = results.len();
        for (i, r) in results.iter().enumerate() {
            let score = match &own {
                Some(s) => s[i],
                None => (n - i) as f64,
            };
            text.push_str(&format!("{qid} Q0 {} {} {score} {tag}\n", r.id, i + 1));
        }
    }
    Ok(SavedRun { text, rank_scored })
}

/// The run as JSONL (`{"query_id": …, "results": [{"id": …, "score": …}]}`), queries in ID
/// order, each list in its order, a missing (or non-finite) score left out: read back
/// exactly. A blank query or chunk ID (which no run file holds) is an error.
pub fn jsonl_run_text(run: &Run) -> std::result::Result<SavedRun, SaveRunError> {
    let mut text = String::new();
    for (qid, results) in &run.queries {
        let fail = |reason: String| SaveRunError {
            query: veredicto_core::redact::short(qid),
            reason,
        };
        if qid.trim().is_empty() {
            return Err(fail("a run file cannot hold a blank query ID".into()));
        }
        let mut list = Vec::with_capacity(results.len());
        for r in results {
            if r.id.trim().is_empty() {
                return Err(fail("a run file cannot hold a blank chunk ID".into()));
            }
            let mut item = serde_json::Map::new();
            item.insert("id".into(), Value::String(r.id.clone()));
            if let Some(s) = r.score.filter(|s| s.is_finite()) {
                item.insert("score".into(), serde_json::json!(s));
            }
            list.push(Value::Object(item));
        }
        let line = serde_json::json!({"query_id": qid, "results": list});
        text.push_str(&line.to_string());
        text.push('\n');
    }
    Ok(SavedRun {
        text,
        rank_scored: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[(&str, Option<f64>)]) -> Vec<Retrieved> {
        items
            .iter()
            .map(|(id, score)| Retrieved {
                id: (*id).to_owned(),
                score: *score,
            })
            .collect()
    }

    fn read_back(name: &str, text: &str) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        read_run(&path).unwrap()
    }

    fn order(run: &Run, q: &str) -> Vec<String> {
        run.results(q).iter().map(|r| r.id.clone()).collect()
    }

    fn saved() -> Run {
        let mut run = Run::default();
        // Falling scores: written as they are.
        run.queries.insert(
            "falling".into(),
            list(&[("b", Some(0.9)), ("a", Some(0.5)), ("c", Some(0.1))]),
        );
        // Ties in an order trec_eval would not keep (`a` before `z` at the same score).
        run.queries.insert(
            "ties".into(),
            list(&[("a", Some(0.5)), ("z", Some(0.5)), ("m", Some(0.4))]),
        );
        // No scores at all, and some scores missing.
        run.queries.insert(
            "unscored".into(),
            list(&[("x", None), ("y", None), ("w", None)]),
        );
        run.queries.insert(
            "partly".into(),
            list(&[("p", Some(0.2)), ("q", None), ("r", Some(0.9))]),
        );
        run
    }

    #[test]
    fn a_saved_trec_run_reads_back_in_the_order_the_exam_saw() {
        let run = saved();
        let out = trec_run_text(&run, "veredicto").unwrap();
        assert_eq!(out.rank_scored, ["partly", "ties", "unscored"]);
        let back = read_back("saved.trec", &out.text);
        for q in run.queries.keys() {
            assert_eq!(order(&back, q), order(&run, q), "query {q}");
        }
        // Scores that give the order stay the retriever's.
        assert_eq!(back.results("falling")[0].score, Some(0.9));
        assert_eq!(back.results("unscored")[0].score, Some(3.0));
    }

    #[test]
    fn a_saved_jsonl_run_reads_back_exactly() {
        let run = saved();
        let out = jsonl_run_text(&run).unwrap();
        assert!(out.rank_scored.is_empty());
        let back = read_back("saved.jsonl", &out.text);
        assert_eq!(back.queries, run.queries);
    }

    #[test]
    fn ids_a_trec_run_cannot_hold_are_refused_naming_the_query() {
        let mut run = Run::default();
        run.queries
            .insert("q1".into(), list(&[("two words", Some(1.0))]));
        let e = trec_run_text(&run, "t").unwrap_err().to_string();
        assert!(
            e.starts_with("query `q1`: a TREC run cannot hold chunk ID `two words`"),
            "{e}"
        );
        let mut run = Run::default();
        run.queries.insert("#q".into(), list(&[("a", Some(1.0))]));
        assert!(trec_run_text(&run, "t").is_err());
        // JSONL holds both.
        let back = read_back("s.jsonl", &jsonl_run_text(&run).unwrap().text);
        assert_eq!(order(&back, "#q"), ["a"]);
    }

    #[test]
    fn a_chunk_listed_twice_is_read_as_listed_by_both_readers() {
        let back = read_back(
            "dup.jsonl",
            "{\"query_id\": \"q\", \"results\": [{\"id\": \"a\"}, {\"id\": \"a\"}, {\"id\": \"b\"}]}\n",
        );
        assert_eq!(order(&back, "q"), ["a", "a", "b"]);
        let back = read_back(
            "dup.trec",
            "q Q0 a 1 0.5 t\nq Q0 b 2 0.7 t\nq Q0 a 3 0.9 t\n",
        );
        let q = back.results("q");
        assert_eq!(order(&back, "q"), ["a", "b", "a"]);
        assert_eq!(q[0].score, Some(0.9), "the higher-scored line first");
    }
}
