//! A tiny `cmd:` retriever, for the tests and as a model to copy: it reads a JSON object
//! `{"QUERY TEXT": ["chunk-1", "chunk-2", ...], ...}` from the file given as its argument,
//! then answers each request line (`{"id": N, "query": ..., "k": K, ...}`) with one line
//! `{"id": N, "results": [{"id": ..., "score": ...}, ...]}`: the request's `id` echoed, at
//! most `k` results, scores descending. A query it does not know gets an empty list.
//! An entry may also be an object, `{"id": "chunk-1", "doc_id": "D1", "start": 0, "end":
//! 120}`: its members are answered with the result, so that the exam learns where the
//! chunk sits in its document.
//! Exactly one line per request, flushed at once; logs go to standard error.
// A stand-alone tool outside the veredicto command line: it prints its own findings and
// exits with its own codes.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use std::io::{BufRead, Write};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: example-retriever ANSWERS.json");
        std::process::exit(2);
    };
    let answers: serde_json::Value = match std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            eprintln!("example-retriever: {path}: {e}");
            std::process::exit(2);
        }
    };
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let request: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        let query = request["query"].as_str().unwrap_or("");
        let k = request["k"].as_u64().unwrap_or(10) as usize;
        let entries: Vec<serde_json::Map<String, serde_json::Value>> = answers[query]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| match v {
                        serde_json::Value::String(id) => {
                            let mut m = serde_json::Map::new();
                            m.insert("id".to_owned(), id.as_str().into());
                            Some(m)
                        }
                        serde_json::Value::Object(m) => Some(m.clone()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let results: Vec<serde_json::Value> = entries
            .into_iter()
            .take(k)
            .enumerate()
            .map(|(i, mut m)| {
                m.insert("score".to_owned(), (1.0 - i as f64 / 100.0).into());
                serde_json::Value::Object(m)
            })
            .collect();
        // The `id` echoed as received: veredicto refuses an answer without it.
        let answer = serde_json::json!({ "id": request["id"], "results": results });
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
}
