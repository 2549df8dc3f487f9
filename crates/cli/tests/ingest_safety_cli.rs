//! `veredicto ingest` loses nothing and writes nothing wrong: precomputed vectors belong to
//! their chunk, bad vectors are refused with file:line, damaged indexes are caught, and
//! concurrent or killed ingests leave a complete index and no temporary folders.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use veredicto_index::Index;

fn corpus_lines(items: &[(&str, &str, [f32; 3])]) -> String {
    items
        .iter()
        .map(|(id, text, v)| json!({"id": id, "text": text, "vector": v}).to_string() + "\n")
        .collect()
}

fn ingest_json(corpus: &str, index: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "ingest",
        "--corpus",
        corpus,
        "--index",
        index.to_str().unwrap(),
        "--json",
        "--time",
        "2025-01-01T00:00:00Z",
    ];
    args.extend_from_slice(extra);
    let o = veredicto(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn unit(v: [f32; 3]) -> Vec<f32> {
    veredicto_index::normalize(&v).unwrap()
}

#[test]
fn reingest_with_changed_precomputed_vectors_and_same_text_takes_the_new_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let first = write(
        dir.path(),
        "c1.jsonl",
        &corpus_lines(&[
            ("a", "same", [1.0, 0.0, 0.0]),
            ("b", "other", [0.0, 1.0, 0.0]),
        ]),
    );
    ingest_json(&first, &index, &[]);
    let second = write(
        dir.path(),
        "c2.jsonl",
        &corpus_lines(&[
            ("a", "same", [0.0, 0.0, 1.0]),
            ("b", "other", [0.0, 1.0, 0.0]),
        ]),
    );
    let s = ingest_json(&second, &index, &[]);
    assert_eq!(s["changed"], 1, "{s}");
    assert_eq!(s["reused"], 1, "{s}");
    assert_eq!(s["embedded"], 1, "{s}");
    let opened = Index::open(&index).unwrap();
    assert_eq!(opened.get("a").unwrap().vector(), [0.0, 0.0, 1.0]);
    assert_eq!(opened.get("b").unwrap().vector(), [0.0, 1.0, 0.0]);
}

#[test]
fn chunks_with_identical_text_keep_their_own_precomputed_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let items = [
        ("a", "dup", [1.0, 0.0, 0.0]),
        ("b", "dup", [0.0, 1.0, 0.0]),
        ("c", "dup", [1.0, 1.0, 1.0]),
    ];
    let corpus = write(dir.path(), "c.jsonl", &corpus_lines(&items));
    let s = ingest_json(&corpus, &index, &[]);
    assert_eq!(s["added"], 3, "{s}");
    let opened = Index::open(&index).unwrap();
    for (id, _, v) in items {
        assert_eq!(opened.get(id).unwrap().vector(), unit(v).as_slice(), "{id}");
    }
}

#[test]
fn a_corpus_vector_that_is_not_finite_or_is_zero_is_refused_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    // 1e39 is a valid JSON number but overflows f32 to infinity.
    let corpus = write(
        dir.path(),
        "c.jsonl",
        "{\"id\": \"a\", \"text\": \"x\", \"vector\": [1, 0, 0]}\n\
         {\"id\": \"b\", \"text\": \"y\", \"vector\": [1e39, 0, 0]}\n",
    );
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &corpus,
        "--index",
        index.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("c.jsonl:2: field `vector[0]`"),
        "{}",
        stderr(&o)
    );
    assert!(!index.exists());

    let corpus = write(
        dir.path(),
        "z.jsonl",
        "{\"id\": \"a\", \"text\": \"x\", \"vector\": [1, 0, 0]}\n\
         {\"id\": \"zero\", \"text\": \"y\", \"vector\": [0, 0, 0]}\n",
    );
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &corpus,
        "--index",
        index.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("z.jsonl:2: field `vector`") && err.contains("\"zero\""),
        "{err}"
    );
    assert!(!index.exists());
}
