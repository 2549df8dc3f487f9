//! `exam --retriever URI`, `--run -` and `search --retriever` through the binary, with a
//! small HTTP search service on 127.0.0.1 written here.

use crate::common;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};

const GOLDEN: &str = "{\"id\": \"q1\", \"query\": \"alpha\", \"expected\": [\"c1\"]}\n{\"id\": \"q2\", \"query\": \"beta\", \"expected\": [\"c3\"]}\n{\"id\": \"q3\", \"query\": \"gamma\", \"expected\": [\"c9\"]}\n";

/// Answers `{"results": [...]}` for `alpha` and `beta`, an empty list otherwise; returns the
/// base URL.
fn search_service() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let ids: &[&str] = match req["query"].as_str() {
                Some("alpha") => &["c1", "c2"],
                Some("beta") => &["c3", "c4"],
                _ => &[],
            };
            let results: Vec<_> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| serde_json::json!({"id": id, "score": 0.9 - i as f64 * 0.1}))
                .collect();
            let text = serde_json::json!({ "results": results }).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    url
}

#[test]
fn exam_against_a_live_http_retriever_records_the_uri_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.jsonl");
    std::fs::write(&golden, GOLDEN).unwrap();
    let url = search_service().replace("http://", "http://me:s3cret@") + "/search?token=t0k3n";
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--retriever",
            &url,
            "--json",
        ],
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let name = report["run"]["name"].as_str().unwrap();
    assert!(name.ends_with("/search?token=[redacted]"), "{name}");
    assert!(!name.contains("s3cret"), "{name}");
    assert_eq!(report["cases"][0]["expected"][0]["rank"], 1);
    let q3 = &report["cases"][2];
    assert_eq!(q3["expected"][0]["rank"], serde_json::Value::Null);
    assert_eq!(q3["diagnosis"][0]["check"], "retriever");
    assert!(
        q3["diagnosis"][0]["finding"]
            .as_str()
            .unwrap()
            .starts_with("not within depth 100"),
        "{q3}"
    );
    let history = std::fs::read(dir.path().join(".veredicto/history.db")).unwrap();
    let hay = String::from_utf8_lossy(&history);
    assert!(!hay.contains("s3cret") && !hay.contains("t0k3n"));
    assert!(
        !stderr.contains("s3cret") && !stderr.contains("t0k3n"),
        "{stderr}"
    );
}

#[test]
fn a_run_on_standard_input_names_the_missing_golden_cases_once() {
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.jsonl");
    std::fs::write(&golden, GOLDEN).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args([
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--run",
            "-",
            "--json",
            "--no-record",
        ])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"q1 Q0 c1 1 0.9 t\nq2 Q0 c3 1 0.8 t\nqx Q0 c7 1 0.8 t\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("q3").count(), 1, "{stderr}");
    assert!(
        stderr.contains("1 golden case(s) not in the run"),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["run"]["ignored_queries"], 1);
    let q3 = &report["cases"][2];
    assert_eq!(q3["reasons"][0], "no_results");
    assert!(
        q3["diagnosis"][0]["finding"]
            .as_str()
            .unwrap()
            .contains("case `q3` is not in the run file"),
        "{q3}"
    );
}

#[test]
fn an_unknown_scheme_is_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.jsonl");
    std::fs::write(&golden, GOLDEN).unwrap();
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--retriever",
            "ftp://u:pw@x/y",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("unknown scheme `ftp`"), "{stderr}");
    assert!(!stderr.contains("pw"), "{stderr}");
}

#[test]
fn an_unreachable_retriever_is_exit_2_naming_the_url() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.jsonl");
    std::fs::write(&golden, GOLDEN).unwrap();
    let url = format!("http://127.0.0.1:{port}/search");
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--retriever",
            &url,
            "--timeout",
            "2",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&url) && stderr.contains("cannot reach"),
        "{stderr}"
    );
}

#[test]
fn search_accepts_a_retriever_uri() {
    let url = search_service();
    let o = veredicto(&["search", "--retriever", &url, "beta", "-k", "5", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["results"][0]["id"], "c3");
    assert_eq!(v["results"][1]["rank"], 2);
}

/// A server that accepts connections and never answers.
fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s);
        }
    });
    url
}

#[test]
fn ingest_with_an_unresponsive_embeddings_server_fails_within_its_timeout() {
    // Before `--timeout` an unresponsive server took 5 × 60 s to fail.
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus.jsonl");
    std::fs::write(&corpus, "{\"id\": \"c1\", \"text\": \"uno\"}\n").unwrap();
    let url = silent_server();
    let t = std::time::Instant::now();
    let o = veredicto_in(
        dir.path(),
        &[
            "ingest",
            "--corpus",
            corpus.to_str().unwrap(),
            "--index",
            "idx",
            "--embedder",
            &format!("openai:{url}/v1"),
            "--timeout",
            "0.5",
            "--retries",
            "1",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t.elapsed()
    );
    assert!(stderr.contains("127.0.0.1"), "{stderr}");
    assert!(stderr.contains("2 attempt"), "{stderr}");
}

#[test]
fn exam_timeout_applies_to_the_embeddings_server_too() {
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.jsonl");
    std::fs::write(&golden, GOLDEN).unwrap();
    let url = silent_server();
    let search = search_service();
    let t = std::time::Instant::now();
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--retriever",
            &search,
            "--embedder",
            &format!("openai:{url}"),
            "--timeout",
            "0.5",
            "--retries",
            "0",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn the_deadline_bounds_an_embeddings_server_that_never_answers() {
    // Before: the embedder kept its own 10 s timeout × 3 attempts whatever --deadline said.
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.jsonl");
    std::fs::write(&golden, GOLDEN).unwrap();
    let url = silent_server();
    let search = search_service();
    let t = std::time::Instant::now();
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--retriever",
            &search,
            "--embedder",
            &format!("openai:{url}"),
            "--timeout",
            "10",
            "--retries",
            "2",
            "--deadline",
            "1.5",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
    assert!(stderr.contains(&url), "{stderr}");
    assert!(
        stderr.contains("no answer within the total deadline of 1500 ms"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

fn rerank_exam(dir: &std::path::Path, rerank: &str, net: &[&str]) -> std::process::Output {
    let golden = dir.join("golden.jsonl");
    std::fs::write(&golden, GOLDEN).unwrap();
    let corpus = dir.join("corpus.jsonl");
    std::fs::write(
        &corpus,
        "{\"id\": \"c1\", \"text\": \"uno\"}\n{\"id\": \"c2\", \"text\": \"dos\"}\n{\"id\": \"c3\", \"text\": \"tres\"}\n{\"id\": \"c4\", \"text\": \"cuatro\"}\n",
    )
    .unwrap();
    let search = search_service();
    let mut args = vec![
        "exam",
        "--golden",
        golden.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--retriever",
        &search,
        "--rerank",
        rerank,
        "--no-record",
    ];
    args.extend_from_slice(net);
    veredicto_in(dir, &args)
}

#[test]
fn the_deadline_bounds_an_http_reranker_that_never_answers() {
    let dir = tempfile::tempdir().unwrap();
    let url = silent_server() + "/rerank";
    let t = std::time::Instant::now();
    let o = rerank_exam(
        dir.path(),
        &url,
        &["--timeout", "10", "--retries", "2", "--deadline", "1.5"],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
    assert!(stderr.contains(&url), "{stderr}");
    assert!(
        stderr.contains("no answer within the total deadline of 1500 ms"),
        "{stderr}"
    );
}

#[test]
fn the_timeout_applies_to_each_request_of_an_http_reranker() {
    // Before: the HTTP reranker waited 60 s per request, 5 attempts, whatever --timeout said.
    let dir = tempfile::tempdir().unwrap();
    let url = silent_server() + "/rerank";
    let t = std::time::Instant::now();
    let o = rerank_exam(dir.path(), &url, &["--timeout", "0.5", "--retries", "1"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let took = t.elapsed();
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
    assert!(stderr.contains(&url), "{stderr}");
    assert!(
        stderr.contains("timed out after 500 ms, 2 attempt(s)"),
        "{stderr}"
    );
}

/// Answers like `search_service`, and keeps each request body.
fn recording_service() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
            log.lock().unwrap().push(req);
            let text = r#"{"results": [{"id": "c1", "score": 0.5}]}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (url, seen)
}

#[test]
fn a_cases_filters_are_sent_to_an_http_retriever_only_when_declared() {
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.jsonl");
    std::fs::write(
        &golden,
        "{\"id\": \"q1\", \"query\": \"alpha\", \"expected\": [\"c1\"], \"filters\": {\"domain\": \"laboral\", \"labels\": [\"A\"], \"facets\": {\"tipo\": \"tabla\"}}}\n{\"id\": \"q2\", \"query\": \"beta\", \"expected\": [\"c1\"]}\n",
    )
    .unwrap();
    let (url, seen) = recording_service();
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--retriever",
            &url,
            "--concurrency",
            "1",
            "--no-record",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let seen = seen.lock().unwrap();
    let by_query = |q: &str| seen.iter().find(|b| b["query"] == q).unwrap().clone();
    assert_eq!(
        by_query("alpha"),
        serde_json::json!({"query": "alpha", "k": 100, "filters": {"domain": "laboral", "labels": ["A"], "facets": {"tipo": "tabla"}}})
    );
    assert_eq!(
        by_query("beta"),
        serde_json::json!({"query": "beta", "k": 100})
    );
}

#[test]
fn search_sends_its_filter_conditions_to_a_live_retriever_as_filters() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = recording_service();
    let o = veredicto_in(
        dir.path(),
        &[
            "search",
            "--retriever",
            &url,
            "alpha",
            "-k",
            "3",
            "--filter",
            "domain=laboral",
            "--filter",
            "label=A",
            "--filter",
            "facet.tipo=tabla",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[0],
        serde_json::json!({"query": "alpha", "k": 3, "filters": {"domain": "laboral", "labels": ["A"], "facets": {"tipo": "tabla"}}})
    );
}

#[test]
fn a_malformed_filters_field_is_exit_2_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.jsonl");
    std::fs::write(
        &golden,
        "{\"id\": \"q1\", \"query\": \"alpha\", \"expected\": [\"c1\"]}\n{\"id\": \"q2\", \"query\": \"beta\", \"expected\": [\"c1\"], \"filters\": {\"valid_at\": \"2025-13-40\"}}\n",
    )
    .unwrap();
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--retriever",
            "http://127.0.0.1:9/search",
            "--no-record",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("golden.jsonl"), "{stderr}");
    assert!(stderr.contains(":2"), "{stderr}");
    assert!(stderr.contains("filters.valid_at"), "{stderr}");
}
