//! The bar for the history, on both backends, with real processes (`store-stress`, this crate's test
//! helper binary):
//! - killed with SIGKILL at random moments while recording 200-case runs, 50 times, the
//!   history never holds a partial run and passes the backend's integrity check; every run the
//!   process reported as recorded is there;
//! - two processes started at the same moment against one (new) history both record, with
//!   distinct IDs.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use crate::common;
use common::{Backend, Fixture};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use veredicto_store::synthetic::SplitMix64;
use veredicto_store::{History, RunFilter};

const STRESS: &str = env!("CARGO_BIN_EXE_store-stress");

fn spawn(db: &str, extra: &[&str]) -> Child {
    Command::new(STRESS)
        .arg(db)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawns store-stress")
}

/// Checks the whole history: the backend's integrity check, foreign keys, and that every run has
/// exactly its rows; and that the reports of runs not in `seen` read back with as many cases
/// as their summaries say.
fn assert_whole(db: &str, seen: &BTreeSet<String>) -> BTreeSet<String> {
    let h = History::open_spec(db).expect("opens after the kill");
    let check = h.check().expect("checks");
    assert_eq!(check.integrity, ["ok"]);
    assert!(check.is_ok(), "{check:?}");
    let runs = h.list(&RunFilter::default()).expect("lists");
    assert_eq!(runs.len(), check.runs);
    for s in runs.iter().filter(|s| !seen.contains(&s.id)) {
        let run = h.get(&s.id).expect("every listed run reads back");
        assert_eq!(run.report.cases.len(), s.cases);
        assert_eq!(s.cases, 200);
    }
    runs.into_iter().map(|s| s.id).collect()
}

fn sigkill_never_leaves_a_partial_run(b: Backend) {
    const TRIALS: usize = 50;
    let fx = Fixture::new(b);
    let db = fx.spec.as_str();
    let mut rng = SplitMix64::new(0x5eed_0050);
    let mut recorded: BTreeSet<String> = BTreeSet::new();
    let mut verified: BTreeSet<String> = BTreeSet::new();
    let mut killed_while_recording = 0;
    let started = Instant::now();

    for trial in 0..TRIALS {
        let mut child = spawn(db, &["--seed", &trial.to_string()]);
        // Trial 0 starts from no file (a kill while the schema is created); the delays
        // then spread over startup, report generation and several recordings.
        let delay = Duration::from_millis(5 + rng.below(600));
        std::thread::sleep(delay);
        child.kill().expect("SIGKILL");
        let status = child.wait().expect("waits");
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            stdout.read_to_string(&mut out).expect("reads stdout");
        }
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            stderr.read_to_string(&mut err).expect("reads stderr");
        }
        assert!(err.is_empty(), "trial {trial}: store-stress failed: {err}");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "trial {trial}: {status:?}");

        let done: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("recorded "))
            .collect();
        if out
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("recording "))
        {
            killed_while_recording += 1;
        }
        recorded.extend(done.iter().map(|s| (*s).to_owned()));

        if b == Backend::Sqlite && !std::path::Path::new(db).exists() {
            continue;
        }
        let present = assert_whole(db, &verified);
        // Nothing acknowledged was lost; nothing appeared that was not being recorded.
        assert!(
            recorded.is_subset(&present),
            "trial {trial}: acknowledged runs missing"
        );
        assert!(present.len() <= recorded.len() + trial + 1);
        verified = present;
    }
    eprintln!(
        "{b:?}: {TRIALS} kills in {:.1} s: {} runs in the history, {killed_while_recording} kills \
         landed inside `record`",
        started.elapsed().as_secs_f64(),
        recorded.len(),
    );
    assert!(
        killed_while_recording >= TRIALS / 5,
        "only {killed_while_recording} kills hit a recording: the test is not testing much"
    );
}

fn two_processes_started_together_both_record(b: Backend) {
    const RUNS: usize = 5;
    let fx = Fixture::new(b);
    let db = fx.spec.as_str();
    // Both start before the history exists and use the same created_at, to the millisecond.
    let children: Vec<Child> = (0..2)
        .map(|i| spawn(db, &["--runs", &RUNS.to_string(), "--seed", &i.to_string()]))
        .collect();
    let mut ids = BTreeSet::new();
    for mut child in children {
        let stdout = child.stdout.take().expect("stdout");
        let lines: Vec<String> = BufReader::new(stdout)
            .lines()
            .collect::<Result<_, _>>()
            .expect("reads");
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            stderr.read_to_string(&mut err).expect("reads stderr");
        }
        let status = child.wait().expect("waits");
        assert!(status.success(), "{status:?}: {err}");
        let mine: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("recorded "))
            .collect();
        assert_eq!(mine.len(), RUNS);
        ids.extend(mine.into_iter().map(str::to_owned));
    }
    assert_eq!(ids.len(), 2 * RUNS, "distinct IDs");
    assert_eq!(assert_whole(db, &BTreeSet::new()), ids);
}

both_backends!(
    sigkill_never_leaves_a_partial_run,
    two_processes_started_together_both_record
);
