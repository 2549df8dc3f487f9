//! Input and output hygiene through the binary: invalid values refused with exit code 2,
//! valid files accepted, and errors that stay one readable line.

use crate::common;
use common::*;

/// `ingest --time garbage` was recorded as the batch time.
#[test]
fn ingest_time_must_be_rfc3339() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write(
        dir.path(),
        "corpus.jsonl",
        "{\"id\": \"c1\", \"text\": \"a\"}\n",
    );
    let index = dir.path().join("idx");
    for bad in ["garbage", "2025-11-14", "2025-13-01T00:00:00Z"] {
        let o = veredicto(&[
            "ingest",
            "--corpus",
            &corpus,
            "--index",
            index.to_str().unwrap(),
            "--time",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("RFC 3339"), "{}", stderr(&o));
        assert!(!index.exists());
    }
}

/// `search --filter valid_at=2025-99-99` was accepted and matched nothing.
#[test]
fn search_valid_at_must_be_a_calendar_date() {
    let o = veredicto(&[
        "search",
        "--index",
        "/nonexistent-index",
        "--filter",
        "valid_at=2025-99-99",
        "query",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("calendar date"), "{}", stderr(&o));
}

/// `trec -m rbp.p=1.5` printed RBP -26.12.
#[test]
fn trec_rbp_persistence_outside_zero_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = write(dir.path(), "qrels", "q1 0 d1 1\nq1 0 d2 0\n");
    let run = write(dir.path(), "run", "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n");
    let o = veredicto(&["trec", "-m", "rbp.p=1.5", &qrels, &run]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("(0, 1)"), "{}", stderr(&o));
    let o = veredicto(&["trec", "-m", "rbp.p=0.5", &qrels, &run]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// One policy file for the exam and the audit: the exam refused `[grounding]`.
#[test]
fn exam_accepts_a_policy_with_a_grounding_table() {
    let dir = tempfile::tempdir().unwrap();
    let policy = std::fs::read_to_string(example("policy.toml")).unwrap()
        + "\n[grounding]\nmin_support = 0.9\nmin_citation_presence = 0.8\n";
    let policy = write(dir.path(), "policy.toml", &policy);
    let o = veredicto(&[
        "exam",
        "--golden",
        example("golden.jsonl").to_str().unwrap(),
        "--run",
        example("run-accept.trec").to_str().unwrap(),
        "--corpus",
        example("corpus.jsonl").to_str().unwrap(),
        "--policy",
        &policy,
        "--notes",
        example("notes.jsonl").to_str().unwrap(),
        "--as-of",
        "2025-11-14",
        "--no-record",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A golden line with a 2 MB value and terminal escapes: the error was one 2 MB line with
/// the escapes live; a repeated key was silently resolved to the last value.
#[test]
fn errors_are_short_escaped_and_name_repeated_keys() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(2_000_000);
    let golden = write(
        dir.path(),
        "golden.jsonl",
        &format!("{{\"id\": \"q1\", \"query\": \"a\", \"expected\": [\"c1\"], \"top_k\": \"{big}\u{1b}[2J\"}}\n"),
    );
    let run = write(dir.path(), "run.trec", "q1 Q0 c1 1 1.0 t\n");
    let o = veredicto(&["exam", "--golden", &golden, "--run", &run, "--no-record"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.len() < 2000, "{} bytes", err.len());
    assert!(!err.contains('\u{1b}'), "{err}");
    assert!(err.contains("golden.jsonl:1"), "{err}");

    let golden = write(
        dir.path(),
        "golden2.jsonl",
        "{\"id\": \"q1\", \"query\": \"a\", \"expected\": [\"c1\"], \"expected\": [\"c2\"]}\n",
    );
    let o = veredicto(&["exam", "--golden", &golden, "--run", &run, "--no-record"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("golden2.jsonl:1") && err.contains("duplicate key `expected`"),
        "{err}"
    );
}

/// I/O errors said the same thing twice (`No such file or directory (os error 2): No such
/// file or directory (os error 2)`).
#[test]
fn io_errors_are_printed_once() {
    let cases = workspace().join("examples/grounding/p7.yaml");
    let o = veredicto(&[
        "audit",
        "impact",
        "--sources",
        "/nonexistent/sources.yaml",
        cases.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");

    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "file", "x");
    let o = veredicto(&[
        "exam",
        "--golden",
        example("golden.jsonl").to_str().unwrap(),
        "--run",
        example("run-accept.trec").to_str().unwrap(),
        "--history",
        &format!("{file}/sub/history.db"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.matches("os error 20").count(), 1, "{err}");
}

/// A judge URL with `user:pass@` and `?key=` was stored verbatim in the suggestions, and from
/// there in sheets, packages and the history. The credentials must reach the server (basic
/// auth, the query string) and nothing that is written or printed.
#[test]
fn judge_credentials_are_used_but_never_stored() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::sync::{Arc, Mutex};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            let (mut len, mut auth) = (0usize, String::new());
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                let lower = h.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if lower.starts_with("authorization:") {
                    auth = h.split_once(':').unwrap().1.trim().to_owned();
                }
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            log.lock().unwrap().push((path, auth));
            // The answer-relevance prompt gets a relevance verdict, every claim a support one.
            let content = if String::from_utf8_lossy(&body).contains("addresses the question") {
                r#"{"verdict": "addresses", "confidence": 0.9, "reason": "ok"}"#
            } else {
                r#"{"verdict": "supported", "confidence": 0.9, "reason": "ok"}"#
            };
            let out =
                serde_json::json!({"model": "m", "choices": [{"message": {"content": content}}]})
                    .to_string();
            let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{out}", out.len());
        }
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        workspace().join("examples/grounding/p7.yaml"),
        dir.path().join("p7.yaml"),
    )
    .unwrap();
    let judge = format!("http://alice:s3cr%40t@{host}/v1?key=sk-query-123");
    let run = |args: &[&str]| {
        let o = veredicto_in(dir.path(), args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        for secret in ["s3cr", "sk-query-123", "alice"] {
            assert!(
                !stdout(&o).contains(secret) && !stderr(&o).contains(secret),
                "{args:?}"
            );
        }
        o
    };
    run(&[
        "audit",
        "suggest",
        "p7.yaml",
        "--judge",
        &judge,
        "--judge-model",
        "m",
    ]);
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for (path, auth) in &seen {
        assert_eq!(path, "/v1/chat/completions?key=sk-query-123");
        assert_eq!(auth, "Basic YWxpY2U6czNjckB0"); // base64("alice:s3cr@t")
    }
    run(&["audit", "sheet", "p7.yaml"]);
    run(&["audit", "record", "p7.yaml"]);
    run(&["audit", "package", "latest", "--out", "pkg"]);
    // Nothing written anywhere under the folder (suggestions, history, package) holds them.
    let mut stack = vec![dir.path().to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            files += 1;
            let bytes = std::fs::read(&p).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            for secret in ["s3cr", "sk-query-123", "alice"] {
                assert!(!text.contains(secret), "{secret} in {}", p.display());
            }
        }
    }
    assert!(files > 5, "suggestions, history and package written");
}
