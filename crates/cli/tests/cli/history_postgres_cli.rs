//! A team's history on PostgreSQL through the binary: 16 `veredicto exam` processes record
//! into one database at once while `runs list` and `compare` read it; `history migrate` and
//! `history check`; `VEREDICTO_HISTORY`; connection failures. Needs a server:
//! `VEREDICTO_TEST_POSTGRES` (set by `scripts/postgres.sh`); without it these tests fail.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use crate::common;
use common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn server() -> String {
    std::env::var("VEREDICTO_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "VEREDICTO_TEST_POSTGRES is not set: these tests need a PostgreSQL server; start one \
             with `scripts/postgres.sh` (it exports VEREDICTO_TEST_POSTGRES)"
        )
    })
}

/// A database of its own on the test server, dropped at the end.
struct Db {
    name: String,
    url: String,
}

impl Db {
    fn new(tag: &str) -> Db {
        let name = format!(
            "vcli_{tag}_{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        );
        let mut c = postgres::Client::connect(&server(), postgres::NoTls).expect("server");
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("creates the database");
        let base = server();
        let cut = base.rfind('/').expect("a URL with a database");
        Db {
            url: format!("{}/{name}", &base[..cut]),
            name,
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&server(), postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

fn exam_args(run: &str, history: &str, label: &str) -> Vec<String> {
    [
        "exam",
        "--golden",
        &example("golden.jsonl").display().to_string(),
        "--run",
        &example(run).display().to_string(),
        "--corpus",
        &example("corpus.jsonl").display().to_string(),
        "--policy",
        &example("policy.toml").display().to_string(),
        "--notes",
        &example("notes.jsonl").display().to_string(),
        "--history",
        history,
        "--as-of",
        "2025-11-14",
        "--label",
        label,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

fn list(history: &str) -> Vec<Value> {
    let o = veredicto(&["runs", "list", "--json", "--history", history]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str::<Value>(&stdout(&o))
        .expect("JSON")
        .as_array()
        .expect("an array")
        .clone()
}

#[test]
fn sixteen_exam_processes_record_into_one_postgres_history() {
    const WRITERS: usize = 16;
    let db = Db::new("w16");
    // The schema is created by the first writers racing each other, too.
    let started = Instant::now();
    let mut children: Vec<_> = (0..WRITERS)
        .map(|i| {
            let run = if i % 2 == 0 {
                "run-accept.trec"
            } else {
                "run-stop.trec"
            };
            let cwd = tempfile::tempdir().expect("tempdir");
            let child = Command::new(env!("CARGO_BIN_EXE_veredicto"))
                .args(exam_args(run, &db.url, &format!("w{i:02}")))
                .current_dir(cwd.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawns veredicto exam");
            (i, child, cwd)
        })
        .collect();
    // Readers while they write: every listing is a consistent prefix-closed set of whole
    // runs, growing; compare works as soon as there are two compatible runs.
    let mut seen = 0;
    let mut reads = 0;
    while children
        .iter_mut()
        .any(|(_, c, _)| c.try_wait().ok().flatten().is_none())
    {
        let runs = list(&db.url);
        assert!(runs.len() >= seen, "runs never disappear");
        seen = runs.len();
        for r in &runs {
            assert!(r["cases"].as_u64().unwrap_or(0) > 0, "whole runs only: {r}");
        }
        if runs.len() >= 3 {
            let o = veredicto(&["compare", "--json", "--history", &db.url]);
            assert!(
                matches!(o.status.code(), Some(0) | Some(1)),
                "compare while writing: {}",
                stderr(&o)
            );
        }
        reads += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut codes = Vec::new();
    for (i, mut c, _cwd) in children {
        let status = c.wait().expect("waits");
        let mut err = String::new();
        if let Some(mut e) = c.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        assert!(
            matches!(status.code(), Some(0) | Some(1)),
            "writer {i}: {status:?}: {err}"
        );
        codes.push(status.code());
    }
    let elapsed = started.elapsed();
    let runs = list(&db.url);
    assert_eq!(runs.len(), WRITERS, "nothing lost");
    let mut labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    labels.sort();
    let want: Vec<String> = (0..WRITERS).map(|i| format!("w{i:02}")).collect();
    assert_eq!(labels, want);
    let mut ids: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), WRITERS, "distinct IDs");
    let accepted = runs.iter().filter(|r| r["verdict"] == "accept").count();
    assert_eq!(accepted, WRITERS / 2);
    let check = veredicto(&["history", "check", "--history", &db.url]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    eprintln!(
        "16 writers: {WRITERS} runs recorded in {:.2} s wall, {reads} listings read meanwhile",
        elapsed.as_secs_f64()
    );
}

#[test]
fn migrate_check_and_the_environment_variable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("h.db").display().to_string();
    for (run, label) in [("run-accept.trec", "v1"), ("run-stop.trec", "v2")] {
        let o = veredicto(
            &exam_args(run, &file, label)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert!(
            matches!(o.status.code(), Some(0) | Some(1)),
            "{}",
            stderr(&o)
        );
    }
    let db = Db::new("mig");
    let o = veredicto(&[
        "history", "migrate", "--from", &file, "--to", &db.url, "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(
        (r["runs"].as_u64(), r["copied"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(list(&file), list(&db.url), "the same listing from both");
    let again = veredicto(&[
        "history", "migrate", "--from", &file, "--to", &db.url, "--json",
    ]);
    let r2: Value = serde_json::from_str(&stdout(&again)).expect("JSON");
    assert_eq!(
        (r2["copied"].as_u64(), r2["skipped"].as_u64()),
        (Some(0), Some(2))
    );
    assert_eq!(r2["digest"], r["digest"]);

    // Reports render the same from either backend.
    let show = |h: &str| {
        let o = veredicto(&["report", "latest", "--format", "json", "--history", h]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o)
    };
    assert_eq!(show(&file), show(&db.url));

    // VEREDICTO_HISTORY names the history when --history is not given.
    let cwd = tempfile::tempdir().expect("tempdir");
    let o = Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args(["history", "check"])
        .env("VEREDICTO_HISTORY", &db.url)
        .current_dir(cwd.path())
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("2 runs"), "{}", stdout(&o));
    assert!(!cwd.path().join(".veredicto").exists(), "no file made");

    // A server that is not there: exit 2, host and database named, no password, no retry
    // storm.
    let started = Instant::now();
    let o = veredicto(&[
        "runs",
        "list",
        "--history",
        "postgres://ann:s3cret@127.0.0.1:1/teamdb",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("127.0.0.1:1") && err.contains("teamdb"),
        "{err}"
    );
    assert!(!err.contains("s3cret") && !err.contains("ann:"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// A pgvector retriever whose every statement is cancelled by `statement_timeout`: the exam
/// could not run, so it exits 2 and records nothing in the (PostgreSQL) history. Before, it
/// was a STOP run recorded as if the knowledge base had regressed.
#[test]
fn a_pgvector_table_whose_statements_are_all_cancelled_records_nothing() {
    let db = Db::new("cancel");
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).expect("connect");
    c.batch_execute(
        "CREATE EXTENSION IF NOT EXISTS vector; \
         CREATE TABLE chunks (chunk_id text, embedding vector(3)); \
         INSERT INTO chunks VALUES ('c1', '[1,0,0]'), ('c2', '[0,1,0]'), ('c3', '[0,0,1]')",
    )
    .expect("a table");
    let dir = tempfile::tempdir().expect("tempdir");
    let golden = write(
        dir.path(),
        "golden.jsonl",
        "{\"id\": \"q1\", \"query\": \"a\", \"expected\": [\"c1\"], \"query_vector\": [1, 0, 0]}\n{\"id\": \"q2\", \"query\": \"b\", \"expected\": [\"c2\"], \"query_vector\": [0, 1, 0]}\n",
    );
    let retriever = format!(
        "{}?table=chunks&id=chunk_id&vector=embedding&where=pg_sleep(0.4)%20IS%20NOT%20NULL",
        db.url
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &golden,
            "--retriever",
            &retriever,
            "--timeout",
            "0.15",
            "--retries",
            "0",
            "--history",
            &db.url,
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("table=chunks")
            && err.contains("the retriever failed for every case (2 of 2)"),
        "{err}"
    );
    assert!(
        err.contains("Last failure, case `q2`: canceling statement due to statement timeout"),
        "{err}"
    );
    let recorded: i64 = c
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'",
            &[],
        )
        .expect("query")
        .get(0);
    assert_eq!(recorded, 0, "the history was not even created");
}

/// The attack on a team's history: a stopped run's verdict and cases rewritten with
/// the triggers disabled and enabled again. `history check` said `ok`; it now exits 1 and
/// names the run, whose seal no longer matches.
#[test]
fn history_check_names_a_run_rewritten_with_the_triggers_disabled() {
    let db = Db::new("seal");
    for (run, label) in [("run-accept.trec", "v1"), ("run-stop.trec", "v2")] {
        let o = veredicto(
            &exam_args(run, &db.url, label)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert!(
            matches!(o.status.code(), Some(0) | Some(1)),
            "{}",
            stderr(&o)
        );
    }
    let check = veredicto(&["history", "check", "--history", &db.url]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    let runs = list(&db.url);
    assert_eq!(runs[0]["verdict"], "stop");
    let stopped = runs[0]["id"].as_str().expect("an ID").to_owned();
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).expect("connects");
    c.batch_execute(&format!(
        "ALTER TABLE runs DISABLE TRIGGER ALL; ALTER TABLE cases DISABLE TRIGGER ALL;
         UPDATE runs SET verdict = 'accept', reasons = '[]', failing = 0, failing_gold = 0
             WHERE id = '{stopped}';
         UPDATE cases SET passed = 1, reasons = '[]'
             WHERE run = (SELECT seq FROM runs WHERE id = '{stopped}');
         ALTER TABLE runs ENABLE TRIGGER ALL; ALTER TABLE cases ENABLE TRIGGER ALL;"
    ))
    .expect("tampers");
    assert_eq!(list(&db.url)[0]["verdict"], "accept", "the rewrite took");

    let check = veredicto(&["history", "check", "--history", &db.url]);
    let out = stdout(&check);
    assert_eq!(check.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "broken seal: run {stopped} was changed after it was sealed (seal 3 of 4"
        )),
        "{out}"
    );
    assert!(
        out.contains("integrity: ok"),
        "the triggers are back: {out}"
    );
    let json = veredicto(&["history", "check", "--history", &db.url, "--json"]);
    let v: Value = serde_json::from_str(&stdout(&json)).expect("JSON");
    assert_eq!(v["seals"]["first_break"]["id"], stopped.as_str());
    assert_eq!(v["seals"]["first_break"]["problem"], "content");
    assert!(v["seals"]["head"]
        .as_str()
        .expect("a head")
        .starts_with("sha256:"));
}
