//! The embedded-retrieval pipeline through the binary: ingest, search, exam --index,
//! rerank and an OpenAI-compatible embedder served on 127.0.0.1.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;

/// A deterministic 8-d vector for a text (so tests need no model).
fn toy_vector(text: &str) -> Vec<f32> {
    let mut v = [0f32; 8];
    for (i, b) in text.bytes().enumerate() {
        v[(b as usize + i) % 8] += 1.0 + (b % 7) as f32;
    }
    v.to_vec()
}

fn write_precomputed(dir: &Path) -> (String, String) {
    let chunks = [
        ("c1", "laboral", "vacaciones anuales treinta días"),
        ("c2", "laboral", "asuntos propios dos días"),
        ("c3", "fiscal", "tabla de tramos del IRPF"),
        ("c4", "viajes", "dietas por desplazamiento internacional"),
        ("c5", "viajes", "kilometraje en vehículo propio"),
    ];
    let corpus: String = chunks
        .iter()
        .map(|(id, d, t)| {
            json!({"id": id, "text": t, "domain": d, "vector": toy_vector(t)}).to_string() + "\n"
        })
        .collect();
    let golden = [
        json!({"id": "q1", "query": "vacaciones", "expected": ["c1"], "top_k": 2, "query_vector": toy_vector("vacaciones anuales treinta días")}),
        json!({"id": "q2", "query": "dietas", "expected": ["c4", "c9"], "top_k": 2, "query_vector": toy_vector("dietas internacional")}),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect::<String>();
    (
        write(dir, "corpus.jsonl", &corpus),
        write(dir, "golden.jsonl", &golden),
    )
}

#[test]
fn precomputed_vectors_need_no_model_and_give_exact_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, golden) = write_precomputed(dir.path());
    let index = dir.path().join("idx").display().to_string();
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &corpus,
        "--index",
        &index,
        "--json",
        "--model",
        "/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (
            s["chunks"].as_u64(),
            s["added"].as_u64(),
            s["embedded"].as_u64()
        ),
        (Some(5), Some(5), Some(5))
    );

    let run_file = dir.path().join("saved.trec").display().to_string();
    let exam = |extra: &[&str]| {
        let mut a = vec![
            "exam",
            "--index",
            &index,
            "--golden",
            &golden,
            "--json",
            "--no-record",
            "--model",
            "/nonexistent",
        ];
        a.extend_from_slice(extra);
        veredicto(&a)
    };
    let o = exam(&["--save-run", &run_file]);
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&o)
    );
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    // Every expected chunk in the index has a rank, however deep; the missing one is named.
    for c in r["cases"].as_array().unwrap() {
        for e in c["expected"].as_array().unwrap() {
            if e["id"] == "c9" {
                assert!(e["rank"].is_null());
                assert_eq!(e["in_corpus"], false);
            } else {
                assert!(e["rank"].as_u64().is_some(), "{e}");
            }
        }
    }
    let q2 = &r["cases"][1];
    assert!(q2["diagnosis"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["check"] == "corpus"
            && f["finding"].as_str().unwrap().contains("not in the index")));
    // Same inputs, same JSON.
    assert_eq!(stdout(&exam(&[])), stdout(&o));
    // The saved run re-scores to the same recall with the exam's run reader.
    let saved = std::fs::read_to_string(&run_file).unwrap();
    assert_eq!(saved.lines().filter(|l| l.starts_with("q1 ")).count(), 5);
}

#[test]
fn reingest_embeds_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, _) = write_precomputed(dir.path());
    let index = dir.path().join("idx").display().to_string();
    let ingest = |c: &str| {
        let o = veredicto(&["ingest", "--corpus", c, "--index", &index, "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()
    };
    ingest(&corpus);
    let text = std::fs::read_to_string(&corpus).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[1] = json!({"id": "c2", "text": "asuntos propios: tres días", "domain": "laboral", "vector": toy_vector("asuntos propios: tres días")}).to_string();
    lines.remove(4);
    lines.push(json!({"id": "c6", "text": "nuevo", "vector": toy_vector("nuevo")}).to_string());
    let changed = write(dir.path(), "corpus2.jsonl", &(lines.join("\n") + "\n"));
    let s = ingest(&changed);
    assert_eq!(
        (
            s["added"].as_u64(),
            s["changed"].as_u64(),
            s["removed"].as_u64(),
            s["embedded"].as_u64(),
            s["reused"].as_u64()
        ),
        (Some(1), Some(1), Some(1), Some(2), Some(3))
    );
}

#[test]
fn corpus_line_without_text_is_refused_with_strict_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write(dir.path(), "c.jsonl", "{\"id\": \"a\", \"text\": \"x\", \"vector\": [1, 0]}\n{\"id\": \"b\", \"vector\": [0, 1]}\n");
    let index = dir.path().join("idx");
    let o = veredicto(&[
        "ingest",
        "--strict",
        "--corpus",
        &corpus,
        "--index",
        index.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("c.jsonl:2: field `text`"),
        "{}",
        stderr(&o)
    );
    assert!(!index.exists());
}

#[test]
fn an_index_of_another_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, _) = write_precomputed(dir.path());
    let index = dir.path().join("idx").display().to_string();
    assert_eq!(
        veredicto(&["ingest", "--corpus", &corpus, "--index", &index])
            .status
            .code(),
        Some(0)
    );
    let model = workspace().join("models/all-MiniLM-L6-v2");
    let o = veredicto(&[
        "search",
        "--index",
        &index,
        "--model",
        model.to_str().unwrap(),
        "dietas",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).to_lowercase().contains("model"),
        "{}",
        stderr(&o)
    );
}

/// Serves `n` HTTP requests on 127.0.0.1 with `respond(path, body) -> json`.
fn serve(n: usize, respond: fn(&str, &Value) -> Value) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_owned();
            let mut len = 0usize;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let out = respond(&path, &req).to_string();
            write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", out.len(), out).unwrap();
        }
    });
    (addr, handle)
}

#[test]
fn openai_embedder_and_http_reranker_on_localhost() {
    fn embeddings(_: &str, req: &Value) -> Value {
        let inputs: Vec<String> = match &req["input"] {
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_owned())
                .collect(),
            Value::String(s) => vec![s.clone()],
            _ => vec![],
        };
        json!({"data": inputs.iter().enumerate().map(|(i, t)| json!({"index": i, "embedding": toy_vector(t)})).collect::<Vec<_>>()})
    }
    fn rerank(_: &str, req: &Value) -> Value {
        // Scores the passages by length: a deterministic, visibly different order.
        let texts = req["texts"]
            .as_array()
            .or(req["documents"].as_array())
            .cloned()
            .unwrap_or_default();
        json!(texts
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"index": i, "score": t.as_str().unwrap_or("").len() as f64}))
            .collect::<Vec<_>>())
    }
    let dir = tempfile::tempdir().unwrap();
    let corpus = write(
        dir.path(),
        "c.jsonl",
        &[
            ("c1", "vacaciones anuales treinta días"),
            ("c2", "asuntos propios dos días"),
            ("c3", "dietas por desplazamiento internacional largo"),
        ]
        .iter()
        .map(|(i, t)| json!({"id": i, "text": t}).to_string() + "\n")
        .collect::<String>(),
    );
    let golden = write(
        dir.path(),
        "g.jsonl",
        &(json!({"id": "q1", "query": "vacaciones", "expected": ["c1"], "top_k": 1}).to_string()
            + "\n"),
    );
    // ingest: probe + 1 batch; exam: probe + 1 query.
    let (url, h) = serve(4, embeddings);
    let (rr_url, h2) = serve(1, rerank);
    let index = dir.path().join("idx").display().to_string();
    let spec = format!("openai:{url}/v1");
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &corpus,
        "--index",
        &index,
        "--embedder",
        &spec,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = veredicto(&[
        "exam",
        "--index",
        &index,
        "--golden",
        &golden,
        "--embedder",
        &spec,
        "--rerank",
        &format!("{rr_url}/rerank"),
        "--candidates",
        "3",
        "--keep",
        "2",
        "--json",
        "--no-record",
        "--timings",
    ]);
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&o)
    );
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let stages: Vec<&str> = r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, vec!["retrieval", "rerank"]);
    assert_eq!(r["stages"][0]["k"], 3);
    assert_eq!(
        r["stages"][0]["mean_recall"], 1.0,
        "stage 1 at N=3 holds everything"
    );
    // The reranker puts the longest passage first: c3, then c1.
    let e = &r["cases"][0]["expected"][0];
    assert_eq!(e["rank"], 2);
    for stage in ["query_embedding", "search", "rerank"] {
        assert!(
            r["latency"][stage]["p95_ms"].as_f64().is_some(),
            "latency of {stage}"
        );
    }
    h.join().unwrap();
    h2.join().unwrap();
}

#[test]
fn minilm_exam_on_the_rack_is_deterministic_across_thread_counts() {
    let model = workspace().join("models/all-MiniLM-L6-v2");
    assert!(
        model.join("model.safetensors").is_file(),
        "run scripts/fetch-model.sh first (CI does)"
    );
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = model.to_str().unwrap();
    // Same relative index path in two working directories: the report names the index.
    let run_with = |threads: &str, dir: &Path| {
        let idx = "idx";
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"))
            .args([
                "ingest",
                "--corpus",
                example("corpus.jsonl").to_str().unwrap(),
                "--index",
                idx,
                "--model",
                m,
                "--batch-label",
                "t",
                "--time",
                "2025-11-14T17:40:00Z",
            ])
            .env("RAYON_NUM_THREADS", threads)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"))
            .args([
                "exam",
                "--index",
                idx,
                "--model",
                m,
                "--golden",
                example("golden.jsonl").to_str().unwrap(),
                "--policy",
                example("policy.toml").to_str().unwrap(),
                "--json",
                "--no-record",
                "--as-of",
                "2025-11-14",
            ])
            .env("RAYON_NUM_THREADS", threads)
            .current_dir(dir)
            .output()
            .unwrap();
        out.stdout
    };
    let a = run_with("1", da.path());
    let b = run_with("2", db.path());
    let (a_dir, b_dir) = (da.path().join("idx"), db.path().join("idx"));
    assert!(!a.is_empty());
    assert_eq!(a, b, "exam JSON identical for 1 and 2 threads");
    for f in [
        "vectors.f32",
        "chunks.bin",
        "records.jsonl",
        "manifest.json",
    ] {
        let x = std::fs::read(a_dir.join(f)).unwrap();
        let y = std::fs::read(b_dir.join(f)).unwrap();
        assert_eq!(x, y, "{f} identical");
    }
    let r: Value = serde_json::from_slice(&a).unwrap();
    assert_eq!(r["summary"]["cases"], 12);
    for c in r["cases"].as_array().unwrap() {
        for e in c["expected"].as_array().unwrap() {
            assert!(
                e["rank"].as_u64().is_some(),
                "every ingested chunk has a rank: {e}"
            );
        }
    }
}
