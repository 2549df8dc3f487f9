//! The `cmd:` protocol against real programs (small `sh` scripts): every answer echoes its
//! request's `id`, the program gets a minimal environment, its process group does not
//! outlive the exam, and an answer line is bounded.

#![allow(clippy::result_large_err)]

use crate::common;
use crate::worded::examine;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::policy::Policy;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options, RetrieveError};

fn run_exam(uri: &str, options: &Options, cases: &[Case]) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, options)?;
    let policy = Policy::default();
    let notes = BTreeMap::new();
    examine(
        retriever.as_ref(),
        None,
        &Inputs {
            cases,
            corpus: None,
            policy: &policy,
            notes: &notes,
            as_of: None,
        },
        &Settings {
            depth: 5,
            // One case at a time: request N is then the N-th case, whatever the machine's
            // scheduling (with several in flight, which case gets which number varies).
            concurrency: 1,
            ..Settings::default()
        },
    )
}

/// `c0`…`c{n-1}` asking `q0`…, each expecting `qI-0`.
fn golden(n: usize) -> Vec<Case> {
    (0..n)
        .map(|i| {
            case(
                &format!("c{i}"),
                &format!("q{i}"),
                &[&format!("q{i}-0")],
                None,
            )
        })
        .collect()
}

/// A shell program answering each request with `{"id": ID, "results": [QUERY-0, QUERY-1]}`
/// (`ID` echoed, `null` when the request has none); `before_answer` runs before each answer
/// with `$n` the request's number.
fn program(dir: &Path, before_answer: &str) -> PathBuf {
    let path = dir.join("search.sh");
    std::fs::write(
        &path,
        format!(
            r#"n=0
while IFS= read -r line; do
  n=$((n+1))
  id=$(printf '%s' "$line" | sed -n 's/^{{"id":\([0-9]*\),.*/\1/p')
  [ -n "$id" ] || id=null
  q=$(printf '%s' "$line" | sed 's/.*"query":"\([^"]*\)".*/\1/')
  {before_answer}
  printf '{{"id": %s, "results": [{{"id": "%s-0", "score": 0.9}}, {{"id": "%s-1", "score": 0.5}}]}}\n' "$id" "$q" "$q"
done
"#
        ),
    )
    .unwrap();
    path
}

fn uri(script: &Path) -> String {
    format!("cmd:sh {}", script.display())
}

/// PATH only: what the command line would pass besides the locale and the home folder.
fn options() -> Options {
    Options {
        command_env: vec![("PATH".into(), std::env::var_os("PATH").unwrap())],
        ..Options::default()
    }
}

#[test]
fn each_answer_is_scored_against_its_own_case() {
    let dir = tempfile::tempdir().unwrap();
    let e = run_exam(&uri(&program(dir.path(), ":")), &options(), &golden(4)).unwrap();
    for c in &e.report.cases {
        assert_eq!(c.expected[0].rank, Some(1), "{}", c.id);
    }
}

#[test]
fn a_program_printing_one_extra_line_is_refused_not_shifted_onto_the_next_cases() {
    let dir = tempfile::tempdir().unwrap();
    // A debug line without an id before the second answer: the second request gets it.
    let script = program(
        dir.path(),
        r#"[ "$n" = 2 ] && echo '{"results": [{"id": "debug"}]}'"#,
    );
    let err = run_exam(&uri(&script), &options(), &golden(4))
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(matches!(err, RetrieveError::Setup { .. }), "{text}");
    assert!(
        text.starts_with(&format!("cmd:sh {}", script.display())),
        "{text}"
    );
    assert!(text.contains("request 2 (case `c1`)"), "{text}");
    assert!(text.contains("the answer has no `id`"), "{text}");
    assert!(text.contains(r#"{"results": [{"id": "debug"}]}"#), "{text}");

    // The second answer printed twice: the third request gets the second's answer.
    let script = program(
        dir.path(),
        r#"[ "$n" = 2 ] && printf '{"id": %s, "results": [{"id": "%s-0"}]}\n' "$id" "$q""#,
    );
    let err = run_exam(&uri(&script), &options(), &golden(4))
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(text.contains("request 3 (case `c2`)"), "{text}");
    assert!(text.contains("answered with `id` 2"), "{text}");
    assert!(text.contains("out of step"), "{text}");
}

#[test]
fn a_program_that_does_not_echo_ids_is_refused_at_its_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("legacy.sh");
    std::fs::write(
        &path,
        "while IFS= read -r line; do echo '{\"results\": []}'; done\n",
    )
    .unwrap();
    let err = run_exam(&uri(&path), &options(), &golden(3))
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(text.contains("request 1 (case `c0`)"), "{text}");
    assert!(
        text.contains("must carry the `id` of its request"),
        "{text}"
    );
}

#[test]
fn the_program_gets_only_the_environment_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("env.txt");
    let script = program(dir.path(), &format!("env > {}", dump.display()));
    let mut options = options();
    options
        .command_env
        .push(("EXTRA_SETTING".into(), "on".into()));
    run_exam(&uri(&script), &options, &golden(1)).unwrap();
    let env = std::fs::read_to_string(&dump).unwrap();
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(n, _)| n))
        .collect();
    assert!(names.contains(&"EXTRA_SETTING"), "{env}");
    assert!(names.contains(&"PATH"), "{env}");
    // Cargo gives the tests CARGO_* variables; none reaches the program. What is left is
    // what the shell itself sets (PWD, OLDPWD, SHLVL, _).
    for name in names {
        assert!(
            ["EXTRA_SETTING", "PATH", "PWD", "OLDPWD", "SHLVL", "_"].contains(&name),
            "{name} leaked into the program's environment:\n{env}"
        );
    }
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet: it runs no more).
#[cfg(target_os = "linux")]
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[cfg(target_os = "linux")]
fn wait_gone(pid: u32) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[cfg(target_os = "linux")]
#[test]
fn a_grandchild_the_program_started_does_not_outlive_the_exam() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    // The first request starts a sleeping grandchild and leaves it behind.
    let script = program(
        dir.path(),
        &format!(
            "[ \"$n\" = 1 ] && {{ sleep 300 & echo $! > {}; }}",
            pidfile.display()
        ),
    );
    let e = run_exam(&uri(&script), &options(), &golden(2)).unwrap();
    assert_eq!(e.report.cases.len(), 2);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(pid), "grandchild {pid} still runs after the exam");
}

#[cfg(target_os = "linux")]
#[test]
fn on_a_timeout_the_program_and_its_grandchildren_are_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let script = program(
        dir.path(),
        &format!("sleep 300 & echo $! > {}; wait", pidfile.display()),
    );
    let options = Options {
        timeout: Duration::from_millis(500),
        ..options()
    };
    let t = Instant::now();
    let err = run_exam(&uri(&script), &options, &golden(2))
        .err()
        .expect("a timeout");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(
        err.to_string().contains("no answer line within 0.5 s"),
        "{err}"
    );
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_gone(pid),
        "grandchild {pid} still runs after the timeout"
    );
}

#[test]
fn an_endless_answer_line_stops_at_the_size_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("endless.sh");
    // Valid JSON that never ends: results forever, no newline.
    std::fs::write(
        &path,
        "read -r line\nprintf '{\"id\": 1, \"results\": ['\nwhile :; do printf '{\"id\": \"a\", \"score\": 1},{\"id\": \"b\", \"score\": 0.5},'; done\n",
    )
    .unwrap();
    let options = Options {
        max_answer_bytes: 64 << 10,
        ..options()
    };
    let t = Instant::now();
    let err = run_exam(&uri(&path), &options, &golden(1))
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    assert!(
        text.contains("request 1 (case `c0`): the answer line is longer than 64 KiB (raise --max-answer-bytes)"),
        "{text}"
    );
    // The quote is cut: about 200 characters and the size, not 64 KiB.
    assert!(text.len() < 600, "{} characters: {text}", text.len());
}

#[test]
fn a_long_answer_keeps_only_depth_results() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.sh");
    // 20,000 results, and rubbish past the first ten: never read into the ranking.
    std::fs::write(
        &path,
        r#"read -r line
printf '{"results": [{"id": "q0-0"}'
i=1; while [ $i -lt 10 ]; do printf ',{"id": "x%s"}' $i; i=$((i+1)); done
i=0; while [ $i -lt 20000 ]; do printf ',{"id": %s, "score": "?"}' $i; i=$((i+1)); done
printf '], "id": 1}\n'
"#,
    )
    .unwrap();
    let e = run_exam(&uri(&path), &options(), &golden(1)).unwrap();
    let run = &e.retrieval.run.queries["c0"];
    assert_eq!(run.len(), 5, "depth 5");
    assert_eq!(run[0].id, "q0-0");
}

#[test]
fn an_empty_or_broken_answer_line_is_an_error_naming_the_request() {
    let dir = tempfile::tempdir().unwrap();
    for (answer, want) in [
        ("echo", "request 1 (case `c0`): the answer line is empty"),
        (
            "echo 'not json'",
            "request 1 (case `c0`): the answer line is not JSON",
        ),
        (
            "echo '{\"id\": 1, \"hits\": []}'",
            "request 1 (case `c0`): the answer has no result list at `/results`",
        ),
        (
            "exit 3",
            "request 1 (case `c0`): the program ended (exit status: 3) before answering",
        ),
    ] {
        let path = dir.path().join("bad.sh");
        std::fs::write(&path, format!("read -r line\n{answer}\nsleep 1\n")).unwrap();
        let err = run_exam(&uri(&path), &options(), &golden(2))
            .err()
            .expect("an error");
        assert!(err.to_string().contains(want), "{err}");
    }
}

#[test]
fn a_result_list_that_cannot_sit_beside_the_id_is_refused_when_opened() {
    for pointer in ["", "/id", "/id/results"] {
        let options = Options {
            results_pointer: pointer.into(),
            ..Options::default()
        };
        let err = open("cmd:sh x.sh", &options).err().expect("refused");
        assert!(
            err.to_string().contains("cannot be used with a command"),
            "{pointer}: {err}"
        );
    }
}
