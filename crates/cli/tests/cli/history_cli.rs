//! The run history through the binary: recording, listing, comparing, and the bar's
//! crash and concurrency guarantees with the real `veredicto exam`.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn exam_args(run: &str, history: &Path) -> Vec<String> {
    vec![
        "exam".into(),
        "--golden".into(),
        example("golden.jsonl").display().to_string(),
        "--run".into(),
        example(run).display().to_string(),
        "--corpus".into(),
        example("corpus.jsonl").display().to_string(),
        "--policy".into(),
        example("policy.toml").display().to_string(),
        "--notes".into(),
        example("notes.jsonl").display().to_string(),
        "--history".into(),
        history.display().to_string(),
        "--as-of".into(),
        "2025-11-14".into(),
    ]
}

fn run(args: &[String]) -> std::process::Output {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    veredicto(&refs)
}

#[test]
fn exams_are_recorded_listed_shown_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut a = exam_args("run-accept.trec", &db);
    a.extend(["--label".into(), "v1".into()]);
    assert_eq!(run(&a).status.code(), Some(0));
    let mut b = exam_args("run-stop.trec", &db);
    b.extend([
        "--label".into(),
        "v2".into(),
        "--compare".into(),
        "--json".into(),
    ]);
    let o = run(&b);
    assert_eq!(o.status.code(), Some(1));
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let c = &r["comparison"];
    assert_eq!(c["regression"], true);
    let newly: Vec<&str> = c["newly_failing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(newly.contains(&"q-irpf-autonomos"), "{newly:?}");

    let db_s = db.display().to_string();
    let list = veredicto(&["runs", "list", "--json", "--history", &db_s]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    let runs: Value = serde_json::from_str(&stdout(&list)).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["label"], "v2", "newest first");
    assert_eq!(runs[1]["verdict"], "accept");
    let ids: Vec<&str> = runs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_ne!(ids[0], ids[1]);
    assert!(ids[0] > ids[1], "IDs sort by time");

    let label = veredicto(&[
        "runs",
        "list",
        "--json",
        "--label",
        "v1",
        "--history",
        &db_s,
    ]);
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&label))
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let show = veredicto(&["runs", "show", &ids[1][..10], "--json", "--history", &db_s]);
    let shown: Value = serde_json::from_str(&stdout(&show)).unwrap();
    assert_eq!(shown["meta"]["id"], ids[1]);
    assert_eq!(shown["report"]["verdict"], "accept");

    let cmp = veredicto(&["compare", "--fail-on-regression", "--history", &db_s]);
    assert_eq!(cmp.status.code(), Some(1), "{}", stderr(&cmp));
    assert!(stdout(&cmp).contains("regression: YES"), "{}", stdout(&cmp));
    let cmp = veredicto(&["compare", "--history", &db_s, "--json"]);
    assert_eq!(cmp.status.code(), Some(0));
    let j: Value = serde_json::from_str(&stdout(&cmp)).unwrap();
    assert!(j["diagnosis"]["findings"].as_array().is_some());
}

#[test]
fn no_record_leaves_no_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut a = exam_args("run-accept.trec", &db);
    a.push("--no-record".into());
    assert_eq!(run(&a).status.code(), Some(0));
    assert!(!db.exists());
}

#[test]
fn two_exams_at_once_are_both_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let spawn = |name: &str| {
        Command::new(env!("CARGO_BIN_EXE_veredicto"))
            .args(exam_args(name, &db))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn("run-accept.trec");
    let b = spawn("run-stop.trec");
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert_eq!(
        b.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
    let h = veredicto_store::History::open_existing(&db).unwrap();
    assert_eq!(h.count().unwrap(), 2);
}

/// SIGKILL `veredicto exam` at seeded random moments, 50 times: the history never holds a
/// partial run and passes `PRAGMA integrity_check`.
#[test]
fn sigkill_during_exam_never_leaves_a_partial_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let mut state: u64 = 0x5eed_1234;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    // One exam run to its end first: it creates the history and tells how long an exam takes
    // on this machine now, so that the kills below land across the whole run even when the
    // machine is busy (a fixed 40 ms window killed every exam before it opened the history).
    let started = std::time::Instant::now();
    let first = Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args(exam_args("run-stop.trec", &db))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(first.status.code().is_some(), "{first:?}");
    let window_us = (started.elapsed().as_micros() as u64 * 6 / 5).max(1);
    let mut completed = 1;
    for trial in 0..50 {
        let run = if trial % 2 == 0 {
            "run-stop.trec"
        } else {
            "run-accept.trec"
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_veredicto"))
            .args(exam_args(run, &db))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(next() % window_us));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.code().is_some() {
            completed += 1;
        }
    }
    let h = veredicto_store::History::open_existing(&db).unwrap();
    let check = h.check().unwrap();
    assert!(check.is_ok(), "{check:?}");
    let n = h.count().unwrap();
    assert!(
        n >= completed,
        "every completed exam is recorded ({n} < {completed})"
    );
    for s in h.list(&veredicto_store::RunFilter::default()).unwrap() {
        let r = h.get(&s.id).unwrap();
        assert_eq!(r.report.cases.len(), 12, "run {} is whole", s.id);
    }
}

/// The attack on a history file: a stopped run's verdict and cases rewritten with the
/// guards dropped and the very same guards put back. `history check` said `ok`; it now exits
/// 1 and names the run, whose seal no longer matches.
#[test]
fn history_check_names_a_run_rewritten_with_the_guards_dropped_and_restored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    assert_eq!(
        run(&exam_args("run-accept.trec", &db)).status.code(),
        Some(0)
    );
    assert_eq!(run(&exam_args("run-stop.trec", &db)).status.code(), Some(1));
    let db_s = db.display().to_string();
    let check = veredicto(&["history", "check", "--history", &db_s]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    let list = veredicto(&["runs", "list", "--json", "--history", &db_s]);
    let runs: Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(runs[0]["verdict"], "stop");
    let stopped = runs[0]["id"].as_str().unwrap().to_owned();

    let c = rusqlite::Connection::open(&db).unwrap();
    let guards: Vec<String> = c
        .prepare(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger'
             AND name IN ('runs_no_update', 'cases_no_update')",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(guards.len(), 2);
    c.execute_batch(&format!(
        "DROP TRIGGER runs_no_update; DROP TRIGGER cases_no_update;
         UPDATE runs SET verdict = 'accept', reasons = '[]', failing = 0, failing_gold = 0
             WHERE id = '{stopped}';
         UPDATE cases SET passed = 1, reasons = '[]'
             WHERE run = (SELECT seq FROM runs WHERE id = '{stopped}');
         {};",
        guards.join(";\n")
    ))
    .unwrap();
    drop(c);

    let check = veredicto(&["history", "check", "--history", &db_s]);
    let out = stdout(&check);
    assert_eq!(check.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "broken seal: run {stopped} was changed after it was sealed (seal 3 of 4"
        )),
        "{out}"
    );
    assert!(out.contains("integrity: ok"), "{out}");
}
