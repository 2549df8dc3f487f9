//! `veredicto ingest` loses nothing and writes nothing wrong: precomputed vectors belong to
//! their chunk, bad vectors are refused with file:line, damaged indexes are caught, and
//! concurrent or killed ingests leave a complete index and no temporary folders.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use crate::common;
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
        "--strict",
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
    // Without --strict the line is rejected (left out, named), the rest is ingested.
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &corpus,
        "--index",
        index.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(s["chunks"], 1);
    assert_eq!(s["rejected"][0]["line"], 2);
    assert_eq!(s["rejected"][0]["field"], "vector[0]");
    std::fs::remove_dir_all(&index).unwrap();

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

/// `n` chunks with 16-d vectors; `tag` changes the texts, so each corpus is a new version.
fn big_corpus(dir: &Path, name: &str, n: usize, tag: &str) -> String {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let text: String = (0..n)
        .map(|i| {
            let v: Vec<f32> = (0..16)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((seed >> 40) % 1000) as f32 / 1000.0 + 0.001
                })
                .collect();
            json!({"id": format!("c{i:05}"), "text": format!("{tag} chunk {i}"), "vector": v})
                .to_string()
                + "\n"
        })
        .collect();
    write(dir, name, &text)
}

fn ingest_cmd(corpus: &str, index: &Path, label: &str) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"));
    c.args([
        "ingest",
        "--corpus",
        corpus,
        "--index",
        index.to_str().unwrap(),
        "--batch-label",
        label,
        "--time",
        "2025-01-01T00:00:00Z",
        "--json",
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped());
    c
}

/// Temporary folders (`.NAME.tmp-…`) beside the index.
fn temporaries(index: &Path) -> Vec<String> {
    let name = index.file_name().unwrap().to_str().unwrap();
    let prefix = format!(".{name}.tmp-");
    let mut out: Vec<String> = std::fs::read_dir(index.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    out.sort();
    out
}

fn batch_names(index: &Path) -> Vec<String> {
    Index::open(index)
        .unwrap()
        .manifest()
        .batches
        .iter()
        .map(|b| b.name.clone())
        .collect()
}

#[test]
fn concurrent_ingests_into_one_index_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let base = big_corpus(dir.path(), "base.jsonl", 300, "base");
    ingest_json(&base, &index, &["--batch-label", "b0"]);
    let writers = 4;
    let corpora: Vec<String> = (0..writers)
        .map(|w| {
            big_corpus(
                dir.path(),
                &format!("c{w}.jsonl"),
                300 + 50 * w,
                &format!("w{w}"),
            )
        })
        .collect();
    let children: Vec<_> = corpora
        .iter()
        .enumerate()
        .map(|(w, c)| ingest_cmd(c, &index, &format!("w{w}")).spawn().unwrap())
        .collect();
    // Meanwhile a reader keeps opening and searching: it always sees a complete version.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (index, done) = (index.clone(), done.clone());
        std::thread::spawn(move || {
            let (mut reads, mut failures) = (0usize, Vec::new());
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let r = Index::open(&index).and_then(|i| i.search(&[1.0; 16], 5, None));
                match r {
                    Ok(hits) if hits.len() == 5 => {}
                    Ok(hits) => failures.push(format!("{} hits", hits.len())),
                    Err(e) => failures.push(e.to_string()),
                }
                reads += 1;
            }
            (reads, failures)
        })
    };
    for (w, child) in children.into_iter().enumerate() {
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "writer {w}: {}", stderr(&o));
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let (reads, failures) = reader.join().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {reads} reads failed: {failures:?}",
        failures.len()
    );
    assert!(reads > 0);
    eprintln!(
        "concurrent ingest: {writers} writers, {reads} reads by a concurrent reader, 0 failed"
    );
    // Every batch is in the history; the index holds the corpus of the last one.
    let names = batch_names(&index);
    assert_eq!(names.len(), 1 + writers, "{names:?}");
    for w in 0..writers {
        assert!(
            names.contains(&format!("w{w}")),
            "batch w{w} lost: {names:?}"
        );
    }
    let last: usize = names.last().unwrap()[1..].parse().unwrap();
    let opened = Index::open(&index).unwrap();
    assert_eq!(opened.len(), 300 + 50 * last);
    opened.verify().unwrap();
    assert!(temporaries(&index).is_empty());
}

#[test]
fn a_second_ingest_gives_up_after_the_lock_timeout_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let corpus = big_corpus(dir.path(), "c.jsonl", 10, "x");
    // This test process holds the lock; the binary is another process.
    let lock = veredicto_index::WriterLock::acquire(&index, std::time::Duration::ZERO).unwrap();
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &corpus,
        "--index",
        index.to_str().unwrap(),
        "--lock-timeout",
        "0.3",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("PID {}", std::process::id())) && err.contains(".idx.lock"),
        "{err}"
    );
    assert!(!index.exists());
    drop(lock);
    ingest_json(&corpus, &index, &[]);
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &corpus,
        "--index",
        "x",
        "--lock-timeout=-1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--lock-timeout"), "{}", stderr(&o));
}

/// Kills `veredicto ingest` with SIGKILL at spread-out moments, then ingests cleanly: no
/// completed batch is lost, no temporary folder is left, the index opens and verifies.
/// `VEREDICTO_KILL_TRIALS` sets the number of kills (default 10); the figures are printed.
#[test]
fn ingest_killed_at_any_moment_loses_nothing_and_leaves_no_temporary_folder() {
    let trials: usize = std::env::var("VEREDICTO_KILL_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let n = 4000;
    let first = big_corpus(dir.path(), "c0.jsonl", n, "v0");
    let started = std::time::Instant::now();
    ingest_json(&first, &index, &["--batch-label", "b0"]);
    let full = started.elapsed();
    let mut completed = vec!["b0".to_string()];
    let (mut killed, mut stale_seen) = (0usize, 0usize);
    for t in 1..=trials {
        let corpus = big_corpus(
            dir.path(),
            &format!("c{}.jsonl", t % 2),
            n,
            &format!("v{t}"),
        );
        let label = format!("k{t}");
        let mut child = ingest_cmd(&corpus, &index, &label).spawn().unwrap();
        // Spread the kills over 20%..140% of one ingest's duration.
        let at = full.mul_f64(0.2 + 1.2 * ((t * 37) % 100) as f64 / 100.0);
        std::thread::sleep(at);
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.success() {
            completed.push(label);
        } else {
            killed += 1;
        }
        stale_seen += temporaries(&index).len();
        // Whatever happened, the index at its path is a complete version.
        Index::open(&index).unwrap().verify().unwrap();
    }
    let last = big_corpus(dir.path(), "final.jsonl", n, "final");
    ingest_json(&last, &index, &["--batch-label", "final"]);
    completed.push("final".into());
    let names = batch_names(&index);
    let lost: Vec<&String> = completed.iter().filter(|c| !names.contains(c)).collect();
    let left = temporaries(&index);
    eprintln!(
        "kill -9 during ingest: {trials} trials, {killed} killed, {} completed, {} lost \
         batches, {stale_seen} temporary folders seen after kills, {} left after the next \
         ingest",
        completed.len() - 2,
        lost.len(),
        left.len()
    );
    assert!(lost.is_empty(), "lost batches {lost:?} (history {names:?})");
    assert!(left.is_empty(), "stale folders {left:?}");
    let opened = Index::open(&index).unwrap();
    opened.verify().unwrap();
    assert_eq!(opened.len(), n);
}

#[test]
fn index_verify_names_the_damaged_file_and_the_exam_refuses_a_nan_row() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let corpus = write(
        dir.path(),
        "c.jsonl",
        &corpus_lines(&[
            ("a", "uno", [1.0, 0.0, 0.0]),
            ("b", "dos", [0.0, 1.0, 0.0]),
            ("c", "tres", [0.0, 0.0, 1.0]),
        ]),
    );
    ingest_json(&corpus, &index, &[]);
    let idx = index.to_str().unwrap();
    let o = veredicto(&["index", "verify", idx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("ok: 3 chunks"), "{}", stdout(&o));
    let o = veredicto(&["index", "verify", idx, "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["ok"], true);

    // Row b (row 1), component 1 := NaN. Same size: the index still opens.
    let vpath = index.join("vectors.f32");
    let clean = std::fs::read(&vpath).unwrap();
    let mut bytes = clean.clone();
    bytes[16..20].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&vpath, &bytes).unwrap();
    let o = veredicto(&["index", "verify", idx]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("vectors.f32"), "{}", stderr(&o));

    let golden = write(
        dir.path(),
        "g.jsonl",
        &(json!({"id": "q1", "query": "dos", "expected": ["b"], "top_k": 2, "query_vector": [0.0, 1.0, 0.0]}).to_string() + "\n"),
    );
    let o = veredicto(&[
        "exam",
        "--index",
        idx,
        "--golden",
        &golden,
        "--json",
        "--no-record",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("vectors.f32") && err.contains("\"b\""),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "no verdict on a damaged index");

    // A changed byte that keeps the vector's length (a sign bit) is found by verify, and
    // ingest refuses to copy it into a new version.
    let mut signed = clean.clone();
    signed[3] ^= 0x80;
    std::fs::write(&vpath, &signed).unwrap();
    let o = veredicto(&["index", "verify", idx]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("does not match the manifest"),
        "{}",
        stderr(&o)
    );
    let o = veredicto(&["ingest", "--corpus", &corpus, "--index", idx]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("vectors.f32"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&vpath).unwrap(), signed);

    let o = veredicto(&["index", "verify", dir.path().join("nope").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("manifest.json"), "{}", stderr(&o));
}
