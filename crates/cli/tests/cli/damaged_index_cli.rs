//! A damaged index gives no verdict: the exam (and `corpus check --index`) refuse it with
//! exit 2 naming the vector file and the damaged block, and nothing is recorded.
//!
//! Regression: a swapped pair of vector rows (and 13 of 20 single-bit flips) passed the
//! check made before the first search; the exam ranked the damaged vectors, gave a verdict
//! and recorded the run. Only `veredicto index verify` caught them.

use crate::common;
use common::*;
use serde_json::json;
use std::path::Path;

/// A deterministic 8-d vector for a text (so the test needs no model).
fn toy_vector(text: &str) -> Vec<f32> {
    let mut v = [0f32; 8];
    for (i, b) in text.bytes().enumerate() {
        v[(b as usize + i) % 8] += 1.0 + (b % 7) as f32;
    }
    v.to_vec()
}

/// An index of 12 chunks with precomputed vectors under `dir/idx`, and its golden set.
fn ingest(dir: &Path) -> (String, String) {
    let texts: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "tema {i}: {}",
                "vacaciones dietas tramos ".repeat(i % 3 + 1)
            )
        })
        .collect();
    let corpus: String = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"id": format!("c{i:02}"), "text": t, "vector": toy_vector(t)}).to_string() + "\n"
        })
        .collect();
    let golden: String = [0usize, 4, 7]
        .iter()
        .map(|&i| {
            json!({"id": format!("q{i}"), "query": texts[i], "expected": [format!("c{i:02}")], "top_k": 3, "query_vector": toy_vector(&texts[i])}).to_string() + "\n"
        })
        .collect();
    let corpus = write(dir, "corpus.jsonl", &corpus);
    let golden = write(dir, "golden.jsonl", &golden);
    let o = veredicto_in(
        dir,
        &[
            "ingest",
            "--corpus",
            &corpus,
            "--index",
            "idx",
            "--model",
            "/nonexistent",
            "--time",
            "2025-11-14T09:30:00Z",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (corpus, golden)
}

fn exam(dir: &Path, golden: &str) -> std::process::Output {
    veredicto_in(
        dir,
        &[
            "exam",
            "--index",
            "idx",
            "--golden",
            golden,
            "--model",
            "/nonexistent",
            "--json",
        ],
    )
}

fn recorded_runs(dir: &Path) -> usize {
    let o = veredicto_in(dir, &["runs", "list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    v.as_array().map_or(0, Vec::len)
}

#[test]
fn an_exam_on_an_index_with_swapped_rows_or_a_flipped_bit_is_refused_and_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, golden) = ingest(dir.path());
    let vpath = dir.path().join("idx/vectors.f32");
    let clean = std::fs::read(&vpath).unwrap();
    // The intact index: a verdict, recorded.
    let o = exam(dir.path(), &golden);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert_eq!(recorded_runs(dir.path()), 1);

    let row = 8 * 4;
    let mut swapped = clean.clone();
    swapped[2 * row..3 * row].copy_from_slice(&clean[5 * row..6 * row]);
    swapped[5 * row..6 * row].copy_from_slice(&clean[2 * row..3 * row]);
    let mut flipped = clean.clone();
    flipped[3 * row + 9] ^= 0x02; // a mantissa bit: the norm hardly moves
    for (what, bytes) in [("swapped rows", swapped), ("one flipped bit", flipped)] {
        std::fs::write(&vpath, &bytes).unwrap();
        let o = exam(dir.path(), &golden);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains("vectors.f32") && err.contains("block 0 (rows 0-11"),
            "{what}: {err}"
        );
        assert!(stdout(&o).is_empty(), "{what}: a report was printed");
        assert_eq!(recorded_runs(dir.path()), 1, "{what}: a run was recorded");
        // The corpus check reads the index's vectors too.
        let o = veredicto_in(
            dir.path(),
            &["corpus", "check", "--corpus", &corpus, "--index", "idx"],
        );
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains("block 0"), "{}", stderr(&o));
    }
    std::fs::write(&vpath, &clean).unwrap();
    let o = exam(dir.path(), &golden);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
}
