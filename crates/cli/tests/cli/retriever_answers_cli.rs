//! Through the binary: what the exam does with a retriever's answers, the same for every
//! source. Duplicate chunk IDs count once (first occurrence kept, reported) or are refused
//! (`--duplicates refuse`); a retriever that fails beyond `--max-retriever-failures` (or on
//! every case) is exit 2 with nothing recorded; `--save-run` output reads back with
//! `--run`. A small HTTP service on 127.0.0.1 written here answers as each test needs.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

/// Three cases, each expecting three chunks.
const GOLDEN: &str = "{\"id\": \"q1\", \"query\": \"alpha\", \"expected\": [\"c1\", \"c2\", \"c3\"]}\n{\"id\": \"q2\", \"query\": \"beta\", \"expected\": [\"c4\", \"c5\", \"c6\"]}\n{\"id\": \"q3\", \"query\": \"gamma\", \"expected\": [\"c7\", \"c8\", \"c9\"]}\n";

type Answer = dyn Fn(&str) -> (u16, String) + Send + Sync;

/// An HTTP search service: `answer(query)` gives the status and body; returns the URL.
fn service(answer: Arc<Answer>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/search", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
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
                let req: Value = serde_json::from_slice(&body).unwrap();
                let (status, text) = answer(req["query"].as_str().unwrap_or(""));
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            });
        }
    });
    url
}

fn results(items: &[(&str, Option<f64>)]) -> String {
    let list: Vec<Value> = items
        .iter()
        .map(|(id, score)| match score {
            Some(s) => json!({"id": id, "score": s}),
            None => json!({"id": id}),
        })
        .collect();
    json!({ "results": list }).to_string()
}

/// The service: the first expected chunk of every case, ten times.
fn repeating_service() -> String {
    service(Arc::new(|q: &str| {
        let first = match q {
            "alpha" => "c1",
            "beta" => "c4",
            _ => "c7",
        };
        (200, results(&[(first, Some(0.9)); 10]))
    }))
}

fn golden(dir: &Path) -> String {
    write(dir, "golden.jsonl", GOLDEN)
}

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(o), stderr(o)))
}

#[test]
fn a_retriever_repeating_one_chunk_gets_recall_one_third_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let g = golden(dir.path());
    let url = repeating_service();
    let exam = |extra: &[&str]| {
        let mut args = vec!["exam", "--golden", &g, "--retriever", &url];
        args.extend_from_slice(extra);
        veredicto_in(dir.path(), &args)
    };
    // Before: recall 100%, P@K 1.000, nDCG 1.000, ACCEPT, exit 0, recorded.
    let o = exam(&["--json", "--save-run", "saved.trec"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report = json_of(&o);
    for case in report["cases"].as_array().unwrap() {
        assert!(
            (case["recall"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12,
            "{case}"
        );
        assert_eq!(case["retrieved"], 1);
        assert_eq!(case["duplicates_removed"]["count"], 9);
        assert_eq!(
            case["duplicates_removed"]["ids"].as_array().unwrap().len(),
            1
        );
    }
    assert_eq!(report["summary"]["duplicates_removed"], 27);
    assert_eq!(report["summary"]["cases_with_duplicates"], 3);
    // The history keeps what the report says.
    let o = veredicto_in(dir.path(), &["runs", "show", "latest", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = stdout(&o);
    assert!(shown.contains("\"duplicates_removed\""), "{shown}");
    let o = veredicto_in(dir.path(), &["runs", "show"]);
    assert!(
        stdout(&o).contains("27 duplicate results removed in 3 cases"),
        "{}",
        stdout(&o)
    );
    // Every text format has the suite line.
    let line = "27 duplicate results removed in 3 cases (first occurrence kept): several chunks of one document mapped to one ID, or a hybrid merge that returned an ID twice, are common causes. Cases: q1, q2, q3";
    for format in ["human", "markdown", "junit"] {
        let o = exam(&["--no-record", "--format", format]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        let text = stdout(&o);
        // Markdown escapes the parentheses; every format has the words.
        let found = if format == "markdown" {
            text.contains("27 duplicate results removed in 3 cases \\(first occurrence kept\\)")
                && text.contains("a hybrid merge that returned an ID twice, are common causes")
        } else {
            text.contains(line)
        };
        assert!(found, "{format}: {text}");
    }
    // What was saved reads back, with the same figures.
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &g,
            "--run",
            "saved.trec",
            "--json",
            "--no-record",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let back = json_of(&o);
    assert_eq!(
        back["summary"]["mean_recall"],
        report["summary"]["mean_recall"]
    );
    assert_eq!(back["summary"]["mean_ndcg"], report["summary"]["mean_ndcg"]);
}

#[test]
fn duplicates_refuse_exits_2_naming_the_case_and_the_chunk_and_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let g = golden(dir.path());
    let url = repeating_service();
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &g,
            "--retriever",
            &url,
            "--duplicates",
            "refuse",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("case `q1`: chunk `c1` is returned twice (ranks 1 and 2), and --duplicates refuse is set"),
        "{err}"
    );
    assert!(!dir.path().join(".veredicto/history.db").exists(), "{err}");
    // The project file says the same for every command.
    write(
        dir.path(),
        "veredicto.toml",
        &format!(
            "golden = \"golden.jsonl\"\n[source]\nretriever = \"{url}\"\nduplicates = \"refuse\"\n"
        ),
    );
    let o = veredicto_in(dir.path(), &["exam"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is returned twice"), "{}", stderr(&o));
    let o = veredicto_in(dir.path(), &["search", "alpha"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // A flag goes over the file.
    let o = veredicto_in(
        dir.path(),
        &["search", "alpha", "--duplicates", "keep-first", "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    assert_eq!(v["results"].as_array().unwrap().len(), 1);
    assert_eq!(v["duplicates_removed"]["count"], 9);
    assert!(
        stderr(&o).contains("9 duplicate result(s) removed (first occurrence kept): c1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_retriever_failing_every_case_exits_2_naming_it_and_records_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let g = golden(dir.path());
    let url = service(Arc::new(|_: &str| (500, "index shard down".to_owned())));
    let shown = url.clone();
    let url = url.replace("http://", "http://me:s3cret@") + "?token=t0k3n";
    // Before: exit 1, a STOP run recorded, read in CI as "the knowledge base regressed".
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &g,
            "--retriever",
            &url,
            "--retries",
            "0",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{shown}?token=[redacted]: the retriever failed for every case (3 of 3): the exam cannot judge the knowledge base and records nothing. Last failure, case `q3`: HTTP 500: index shard down")),
        "{err}"
    );
    assert!(!err.contains("s3cret") && !err.contains("t0k3n"), "{err}");
    assert!(stdout(&o).is_empty());
    assert!(!dir.path().join(".veredicto/history.db").exists(), "{err}");
}

#[test]
fn failures_within_the_limit_stop_as_retriever_failures_and_beyond_it_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let g = golden(dir.path());
    // Only `gamma` fails: one case of three.
    let url = service(Arc::new(|q: &str| match q {
        "gamma" => (503, "busy".to_owned()),
        "alpha" => (
            200,
            results(&[("c1", Some(0.9)), ("c2", Some(0.8)), ("c3", Some(0.7))]),
        ),
        _ => (
            200,
            results(&[("c4", Some(0.9)), ("c5", Some(0.8)), ("c6", Some(0.7))]),
        ),
    }));
    let exam = |extra: &[&str]| {
        let mut args = vec![
            "exam",
            "--golden",
            &g,
            "--retriever",
            &url,
            "--retries",
            "0",
        ];
        args.extend_from_slice(extra);
        veredicto_in(dir.path(), &args)
    };
    // The default, 25% of three cases, allows none.
    let o = exam(&["--no-record"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "the retriever failed for 1 of 3 cases, more than --max-retriever-failures 25% allows"
        ),
        "{}",
        stderr(&o)
    );
    // Allowed: a STOP whose verdict says the case failed in the retriever.
    let o = exam(&["--no-record", "--max-retriever-failures", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("undocumented_failures: failing cases without a note: q3 (retriever failed)"),
        "{text}"
    );
    assert!(
        text.contains("1 case failed in the retriever, not in the knowledge base: q3."),
        "{text}"
    );
    let o = exam(&["--no-record", "--max-retriever-failures", "34%", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(json_of(&o)["summary"]["retriever_failures"], 1);
    // The project file's key, and a bad value in it.
    write(
        dir.path(),
        "veredicto.toml",
        "[source]\nmax_retriever_failures = 1\n",
    );
    assert_eq!(exam(&["--no-record"]).status.code(), Some(1));
    write(
        dir.path(),
        "veredicto.toml",
        "[source]\nmax_retriever_failures = \"a third\"\n",
    );
    let o = exam(&["--no-record"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "veredicto.toml:2: field `source.max_retriever_failures`: expected a number of cases"
        ),
        "{}",
        stderr(&o)
    );
    // A bad flag value is a usage error.
    let o = exam(&["--no-record", "--max-retriever-failures", "lots"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn saved_runs_read_back_with_duplicates_ties_and_missing_scores() {
    let dir = tempfile::tempdir().unwrap();
    let g = golden(dir.path());
    let url = service(Arc::new(|q: &str| {
        let body = match q {
            // Ties in an order trec_eval would not keep, and a duplicate.
            "alpha" => results(&[
                ("x1", Some(0.5)),
                ("c1", Some(0.5)),
                ("x1", Some(0.5)),
                ("c2", Some(0.5)),
                ("x9", Some(0.4)),
                ("c3", Some(0.3)),
            ]),
            // No scores at all.
            "beta" => results(&[("c6", None), ("x2", None), ("c6", None), ("c4", None)]),
            // Some scores missing, one rising.
            _ => results(&[("c9", Some(0.2)), ("x3", None), ("c7", Some(0.9))]),
        };
        (200, body)
    }));
    let live = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &g,
            "--retriever",
            &url,
            "--json",
            "--no-record",
            "--save-run",
            "saved.trec",
        ],
    );
    assert!(stderr(&live).contains("saved.trec: 3 case(s) with tied, missing or unordered scores are written with rank-derived scores"), "{}", stderr(&live));
    let again = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &g,
            "--retriever",
            &url,
            "--json",
            "--no-record",
            "--save-run",
            "saved.jsonl",
        ],
    );
    assert_eq!(live.status.code(), again.status.code());
    let live = json_of(&live);
    assert_eq!(live["summary"]["duplicates_removed"], 2);
    for (file, exact) in [("saved.trec", false), ("saved.jsonl", true)] {
        let o = veredicto_in(
            dir.path(),
            &[
                "exam",
                "--golden",
                &g,
                "--run",
                file,
                "--json",
                "--no-record",
            ],
        );
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{file}: {}",
            stderr(&o)
        );
        let back = json_of(&o);
        for (a, b) in live["cases"]
            .as_array()
            .unwrap()
            .iter()
            .zip(back["cases"].as_array().unwrap())
        {
            for key in [
                "retrieved",
                "recall",
                "precision",
                "reciprocal_rank",
                "ndcg",
                "average_precision",
                "reasons",
            ] {
                assert_eq!(a[key], b[key], "{file} {} {key}", a["id"]);
            }
            let ranks = |c: &Value| -> Vec<Value> {
                c["expected"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["rank"].clone())
                    .collect()
            };
            assert_eq!(ranks(a), ranks(b), "{file} {}", a["id"]);
            if exact {
                // JSONL keeps the retriever's scores (or their absence): the noise rule too.
                assert_eq!(a["noise"], b["noise"], "{file} {}", a["id"]);
                assert_eq!(a["expected"], b["expected"], "{file} {}", a["id"]);
            }
        }
    }
}

#[test]
fn run_files_with_a_chunk_twice_keep_the_first_and_trec_still_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let g = golden(dir.path());
    let trec = write(
        dir.path(),
        "dup.trec",
        "q1 Q0 c1 1 0.9 t\nq1 Q0 c1 2 0.8 t\nq1 Q0 c2 3 0.7 t\nq2 Q0 c4 1 0.9 t\nq3 Q0 c7 1 0.9 t\n",
    );
    let jsonl = write(
        dir.path(),
        "dup.jsonl",
        "{\"query_id\": \"q1\", \"results\": [{\"id\": \"c1\"}, {\"id\": \"c1\"}, {\"id\": \"c2\"}]}\n{\"query_id\": \"q2\", \"results\": [{\"id\": \"c4\"}]}\n{\"query_id\": \"q3\", \"results\": [{\"id\": \"c7\"}]}\n",
    );
    // Before: both refused with exit 2 ("retrieved twice", "appears twice").
    for run in [&trec, &jsonl] {
        let o = veredicto_in(
            dir.path(),
            &[
                "exam",
                "--golden",
                &g,
                "--run",
                run,
                "--json",
                "--no-record",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{run}: {}", stderr(&o));
        let q1 = &json_of(&o)["cases"][0];
        assert_eq!(
            q1["duplicates_removed"],
            json!({"count": 1, "ids": ["c1"]}),
            "{run}"
        );
        assert_eq!(q1["expected"][1]["rank"], 2, "{run}");
        let o = veredicto_in(
            dir.path(),
            &[
                "exam",
                "--golden",
                &g,
                "--run",
                run,
                "--duplicates",
                "refuse",
                "--no-record",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{run}");
        assert!(
            stderr(&o).contains("case `q1`: chunk `c1` is returned twice (ranks 1 and 2)"),
            "{}",
            stderr(&o)
        );
    }
    // `veredicto trec` keeps trec_eval's behaviour.
    let qrels = write(dir.path(), "qrels", "q1 0 c1 1\nq1 0 c2 1\n");
    let o = veredicto_in(dir.path(), &["trec", &qrels, &trec]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("retrieves document 'c1' more than once"),
        "{}",
        stderr(&o)
    );
}
