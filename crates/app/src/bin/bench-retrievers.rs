//! Throughput of live retrievers on SciFact's 300 test queries (BEIR folder), at
//! concurrency 1 and 4, and the agreement of pgvector with veredicto's own index.
//!
//!   export VEREDICTO_TEST_POSTGRES=$(scripts/postgres.sh start)
//!   cargo run --release -p veredicto-app --bin bench-retrievers -- ../shared/datasets/scifact/beir
//!
//! No embedding model is involved: the 5,183 corpus documents and the 300 queries get seeded
//! random 384-dimensional vectors (the cost of retrieval does not depend on what the vectors
//! mean). The HTTP retriever is a server on 127.0.0.1 written here that ranks the corpus by
//! brute-force cosine per request; pgvector is a real PostgreSQL 16 + pgvector 0.6.2 table
//! without an ANN index (exact scan). Prints a Markdown table.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use veredicto_app::exam::{examine, Inputs};
use veredicto_core::case::Case;
use veredicto_core::policy::Policy;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options};

const DIM: usize = 384;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn unit(&mut self) -> Vec<f32> {
        let v: Vec<f32> = (0..DIM).map(|_| self.next()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }
}

fn serve(corpus: Arc<Vec<(String, Vec<f32>)>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/search", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let _ = stream.set_nodelay(true);
            let corpus = corpus.clone();
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                // Keep-alive: answer requests on this connection until it closes.
                loop {
                    let mut len = 0usize;
                    let mut first = true;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" && !first {
                            break;
                        }
                        first = false;
                    }
                    let mut body = vec![0; len];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let q: Vec<f32> = req["query_vector"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap() as f32)
                        .collect();
                    let k = req["k"].as_u64().unwrap() as usize;
                    let mut scored: Vec<(f32, &str)> = corpus
                        .iter()
                        .map(|(id, v)| (v.iter().zip(&q).map(|(a, b)| a * b).sum(), id.as_str()))
                        .collect();
                    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
                    let results: Vec<_> = scored
                        .iter()
                        .take(k)
                        .map(|(s, id)| serde_json::json!({"id": id, "score": s}))
                        .collect();
                    let text = serde_json::json!({ "results": results }).to_string();
                    // One write: a response split over several small writes meets Nagle's
                    // algorithm and the client's delayed ACK (40 ms per request).
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
                        text.len()
                    );
                    if writer.write_all(response.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    url
}

fn load_pg(url: &str, corpus: &[(String, Vec<f32>)]) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client
        .batch_execute(&format!(
            "CREATE EXTENSION IF NOT EXISTS vector; DROP TABLE IF EXISTS scifact_bench; \
             CREATE TABLE scifact_bench (id text PRIMARY KEY, embedding vector({DIM}))"
        ))
        .unwrap();
    let mut tx = client.transaction().unwrap();
    let stmt = tx
        .prepare("INSERT INTO scifact_bench VALUES ($1, $2::text::vector)")
        .unwrap();
    for (id, v) in corpus {
        let text = format!(
            "[{}]",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        tx.execute(&stmt, &[id, &text]).unwrap();
    }
    tx.commit().unwrap();
    client.batch_execute("ANALYZE scifact_bench").unwrap();
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/datasets/scifact/beir".into());
    let dir = Path::new(&dir);
    let chunks = veredicto_formats::corpus::read_corpus(&dir.join("corpus.jsonl")).unwrap();
    let mut rng = Rng(2024);
    let corpus: Vec<(String, Vec<f32>)> =
        chunks.iter().map(|c| (c.id.clone(), rng.unit())).collect();
    let mut cases: Vec<Case> = veredicto_formats::golden::read_golden(dir).unwrap();
    for c in &mut cases {
        c.query_vector = Some(rng.unit());
    }
    let corpus = Arc::new(corpus);
    let http = serve(corpus.clone());
    let pg = std::env::var("VEREDICTO_TEST_POSTGRES").ok();
    if let Some(url) = &pg {
        load_pg(url, &corpus);
    }
    println!(
        "{} corpus documents, {} queries, dimension {DIM}, depth 100\n",
        corpus.len(),
        cases.len()
    );
    println!("| retriever | concurrency | queries/s | search p50 ms | search p95 ms |");
    println!("|---|---:|---:|---:|---:|");
    let policy = Policy::default();
    let notes = BTreeMap::new();
    let mut uris = vec![("HTTP (brute-force server on 127.0.0.1)", http)];
    if let Some(url) = &pg {
        uris.push((
            "pgvector (exact scan)",
            format!("{url}?table=scifact_bench&id=id&vector=embedding&metric=cosine"),
        ));
    }
    let mut runs = Vec::new();
    for (label, uri) in &uris {
        for concurrency in [1, 4] {
            let retriever = open(uri, &Options::default()).unwrap();
            let t = Instant::now();
            let e = examine(
                retriever.as_ref(),
                None,
                &Inputs {
                    cases: &cases,
                    corpus: None,
                    policy: &policy,
                    notes: &notes,
                    as_of: None,
                },
                &Settings {
                    depth: 100,
                    concurrency,
                    ..Settings::default()
                },
            )
            .unwrap();
            let secs = t.elapsed().as_secs_f64();
            let l = &e.retrieval.latency["search"];
            println!(
                "| {label} | {concurrency} | {:.0} | {:.2} | {:.2} |",
                cases.len() as f64 / secs,
                l.p50_ms,
                l.p95_ms
            );
            runs.push(e.retrieval.run);
        }
    }
    // Agreement: the HTTP server and pgvector rank the same vectors by cosine.
    if runs.len() == 4 {
        let (a, b) = (&runs[0], &runs[2]);
        let mut same_lists = 0;
        for c in &cases {
            let ids = |r: &veredicto_core::run::Run| -> Vec<String> {
                r.results(&c.id).iter().map(|x| x.id.clone()).collect()
            };
            let (x, y) = (ids(a), ids(b));
            if x == y {
                same_lists += 1;
            } else {
                let p = x.iter().zip(&y).position(|(i, j)| i != j).unwrap_or(0);
                let score = |r: &veredicto_core::run::Run, i: usize| {
                    r.results(&c.id)
                        .get(i)
                        .and_then(|h| h.score)
                        .unwrap_or(f64::NAN)
                };
                println!(
                    "  query {}: lists differ from rank {} ({} {:.7} vs {} {:.7})",
                    c.id,
                    p + 1,
                    x[p],
                    score(a, p),
                    y[p],
                    score(b, p)
                );
            }
        }
        println!(
            "\npgvector vs brute-force cosine: identical top-100 lists for {same_lists} of {} queries",
            cases.len()
        );
    }
}
