//! `exam --retriever postgres://…` through the binary against a real PostgreSQL with
//! pgvector (`scripts/postgres.sh start`, its URL in VEREDICTO_TEST_POSTGRES), with the
//! queries embedded by an OpenAI-compatible embeddings server written here: the history
//! records the query embedder, deleted rows are named as missing, and `compare` does not
//! read them as an ingestion.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stdout)]

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

const DIM: usize = 8;
const TABLE: &str = "faq_cli_t";

fn pg_url() -> String {
    std::env::var("VEREDICTO_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "VEREDICTO_TEST_POSTGRES is not set: start the test server with \
             `export VEREDICTO_TEST_POSTGRES=$(scripts/postgres.sh start)`"
        )
    })
}

/// A deterministic vector for a text (FNV-1a of the text seeds a SplitMix64 stream).
fn toy_vector(text: &str) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (0..DIM)
        .map(|_| {
            h = h.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = h;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// An OpenAI-compatible `/v1/embeddings` on 127.0.0.1 answering [`toy_vector`]s, whatever
/// model is asked for. Returns the base URL.
fn embeddings_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
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
            let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let inputs: Vec<String> = match &req["input"] {
                Value::Array(a) => a
                    .iter()
                    .map(|v| v.as_str().unwrap_or("").to_owned())
                    .collect(),
                Value::String(s) => vec![s.clone()],
                _ => vec![],
            };
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, t)| json!({"index": i, "embedding": toy_vector(t)}))
                .collect();
            let text = json!({ "data": data }).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    url
}

fn faq_text(i: usize) -> String {
    format!("question number {i}: how does topic {i} work")
}

/// A table of 30 FAQ answers, each embedded from its question.
fn load_table() -> postgres::Client {
    let mut client = postgres::Client::connect(&pg_url(), postgres::NoTls).expect("connect");
    client
        .batch_execute(&format!(
            "CREATE EXTENSION IF NOT EXISTS vector; DROP TABLE IF EXISTS {TABLE}; \
             CREATE TABLE {TABLE} (id text PRIMARY KEY, embedding vector({DIM}))"
        ))
        .unwrap();
    for i in 0..30 {
        let v = toy_vector(&faq_text(i));
        let text = format!(
            "[{}]",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        client
            .execute(
                &format!("INSERT INTO {TABLE} VALUES ($1, $2::text::vector)"),
                &[&format!("faq{i}"), &text],
            )
            .unwrap();
    }
    client
}

#[test]
fn a_live_pgvector_history_records_the_query_embedder_and_names_deleted_rows() {
    let mut client = load_table();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let golden: String = (0..30)
        .map(|i| {
            json!({"id": format!("q{i:02}"), "query": faq_text(i), "expected": [format!("faq{i}")], "top_k": 3})
                .to_string()
                + "\n"
        })
        .collect();
    let golden = write(d, "golden.jsonl", &golden);
    let policy = write(d, "policy.toml", "noise_ceiling = 1.0\n");
    let embedder = format!("openai:{}", embeddings_server());
    let uri = format!("{}?table={TABLE}&id=id&vector=embedding", pg_url());
    let exam = |model: &str, extra: &[&str]| {
        let mut args = vec![
            "exam",
            "--retriever",
            &uri,
            "--embedder",
            &embedder,
            "--embedder-model",
            model,
            "--golden",
            &golden,
            "--policy",
            &policy,
            "--depth",
            "20",
            "--as-of",
            "2025-11-01",
        ];
        args.extend_from_slice(extra);
        veredicto_in(d, &args)
    };

    // 1. Every row there: accepted, and the query embedder is in the header and the history.
    let o = exam("toy-a", &["--label", "v1"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("query embedder: toy-a (sha256:"),
        "{text}"
    );
    let o = veredicto_in(d, &["runs", "show", "latest", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let config = &run["meta"]["config"];
    assert_eq!(config["retriever"], "pgvector", "{run}");
    assert_eq!(config["embedding_model"], "toy-a", "{config}");
    assert!(
        config["model_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:"),
        "{config}"
    );
    assert_eq!(
        config["field"],
        Value::Null,
        "veredicto did not embed this table"
    );
    assert_eq!(run["report"]["query_embedder"]["name"], "toy-a");
    assert_eq!(
        run["report"]["query_embedder"]["fingerprint"],
        config["model_hash"]
    );

    // 2. Ten rows deleted: those cases fail, and the diagnosis says the rows are gone.
    let deleted: Vec<String> = (0..10).map(|i| format!("faq{}", i * 3)).collect();
    client
        .execute(
            &format!("DELETE FROM {TABLE} WHERE id = ANY($1)"),
            &[&deleted],
        )
        .unwrap();
    let o = exam("toy-a", &["--label", "v2"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    println!("{text}");
    assert!(
        text.contains(&format!(
            "diagnosis [corpus] faq0: expected chunk not in the table `{TABLE}`: asked by ID"
        )),
        "{text}"
    );
    assert!(!text.contains("not within depth"), "{text}");

    // 3. compare with the last accepted run: chunks missing, nothing "entered".
    let o = veredicto_in(d, &["compare", "--baseline", "last-accepted"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    println!("{text}");
    assert!(!text.contains("entered since"), "{text}");
    assert!(
        !text.contains("regression by the latest ingestion"),
        "{text}"
    );
    assert!(
        text.contains("[chunks_missing] 10 case(s) passed in the last accepted run")
            && text.contains("no longer holds 10 of their expected chunks"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "q00: faq0 fell from 1 to beyond the list: it is no longer in the table `{TABLE}`"
        )),
        "{text}"
    );

    // 4. Another query embedder: the comparison says the runs are not comparable.
    let o = exam("toy-b", &["--label", "v3"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = veredicto_in(d, &["compare", "--json"]);
    let c: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(c["comparison"]["compatibility"]["comparable"], false);
    let differences = c["comparison"]["compatibility"]["differences"].to_string();
    println!("{differences}");
    assert!(
        differences.contains(r#"query embedder changed: embedding_model \"toy-a\" → \"toy-b\""#),
        "{differences}"
    );

    // 5. `search -v` names the query embedder too.
    let o = veredicto_in(
        d,
        &[
            "-v",
            "search",
            "--retriever",
            &uri,
            "--embedder",
            &embedder,
            "--embedder-model",
            "toy-a",
            &faq_text(4),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("veredicto: query embedder toy-a (sha256:"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).starts_with("  1"), "{}", stdout(&o));
    client
        .batch_execute(&format!("DROP TABLE {TABLE}"))
        .unwrap();
}
