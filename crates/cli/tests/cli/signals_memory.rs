//! `signals import` and `signals candidates` on a long log: memory follows what the rules
//! keep (interactions, distinct strings) and the report, well below the log's size (it was
//! about 9 times the log), and a line has a size limit.
//! Peak memory is the child's own (`wait4`), so other tests running at once do not count.

use crate::common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs veredicto in `dir`; returns (exit code, stderr, peak resident memory in bytes).
// The child is reaped by `wait4` (which also gives its own peak memory), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_measured(dir: &Path, args: &[&str]) -> (Option<i32>, String, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run veredicto");
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills; `pid` is our own unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    // Linux reports ru_maxrss in KiB.
    (
        code,
        reader.join().unwrap_or_default(),
        usage.ru_maxrss as u64 * 1024,
    )
}

/// A log of `events` events in conversations of 3 interactions (answer, click, sometimes a
/// reformulation or a thumbs down), each with 30 retrieved chunks of 1,000 and one of 2,000
/// questions. Deterministic.
fn long_log(events: usize) -> String {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let mut out = String::new();
    let mut written = 0;
    let mut conv = 0;
    while written < events {
        conv += 1;
        for m in 0..3 {
            let q = next(2000);
            let retrieved: Vec<String> = (0..30)
                .map(|_| format!("\"chunk_{:04}\"", (q + next(60)) % 1000))
                .collect();
            let head = format!(
                r#"{{"conversation_id":"conv-{conv}","answer_id":"a-{conv}-{m}","query":"¿Qué dice el convenio colectivo sobre el permiso retribuido número {q} para el personal con contrato indefinido a jornada completa?","retrieved":[{}],"time":"2025-11-17T08:{:02}:{:02}Z""#,
                retrieved.join(","),
                m * 10,
                written % 60
            );
            let first = if m > 0 && next(3) == 0 {
                "reformulate"
            } else {
                "answer"
            };
            out.push_str(&format!("{head},\"event\":\"{first}\"}}\n"));
            out.push_str(&format!(
                "{head},\"event\":\"click_citation\",\"chunk\":\"chunk_{:04}\"}}\n",
                (q + next(60)) % 1000
            ));
            written += 2;
            if next(4) == 0 {
                out.push_str(&format!(
                    "{head},\"event\":\"thumbs\",\"value\":\"down\"}}\n"
                ));
                written += 1;
            }
        }
    }
    out
}

/// Regression: both commands held the whole log, every line parsed as a JSON map and every
/// event (about 9 times the log's size: 2.4 GB for a 268 MB log of 1,000,000 events).
#[test]
fn signals_memory_stays_below_the_log_size() {
    let dir = tempfile::tempdir().unwrap();
    let log = long_log(70_000);
    std::fs::write(dir.path().join("log.jsonl"), &log).unwrap();
    std::fs::write(
        dir.path().join("tiny.jsonl"),
        log.lines().take(3).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let size = log.len() as u64;
    assert!(size > 40 << 20, "{size}");
    // What the program costs with (almost) no log: the baseline.
    let (code, err, base) = run_measured(
        dir.path(),
        &[
            "signals",
            "candidates",
            "--log",
            "tiny.jsonl",
            "--out",
            "t.jsonl",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    for args in [
        &[
            "signals",
            "candidates",
            "--log",
            "log.jsonl",
            "--out",
            "c.jsonl",
        ][..],
        &["signals", "import", "log.jsonl", "--signals", "s.jsonl"][..],
        // Again, onto a signals file that holds every line already.
        &["signals", "import", "log.jsonl", "--signals", "s.jsonl"][..],
    ] {
        let (code, err, peak) = run_measured(dir.path(), args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let grown = peak.saturating_sub(base);
        assert!(
            grown < size,
            "{args:?}: peak {peak} bytes, {grown} above the baseline, for a log of {size} bytes"
        );
    }
    let signals = std::fs::read_to_string(dir.path().join("s.jsonl")).unwrap();
    assert_eq!(signals.lines().count(), log.lines().count());
}

/// Regression: a log line had no size limit (an endless line was read whole).
#[test]
fn an_over_long_log_line_is_refused_at_its_number_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let good = long_log(1);
    let first = good.lines().next().unwrap();
    let long = format!(
        r#"{{"conversation_id":"c","time":"2025-11-17T08:00:00Z","query":"{}","event":"answer"}}"#,
        "x".repeat(2 << 20)
    );
    write(
        dir.path(),
        "log.jsonl",
        &format!("{first}\n{long}\n{first}\n"),
    );
    for args in [
        &["signals", "import", "log.jsonl", "--signals", "s.jsonl"][..],
        &[
            "signals",
            "candidates",
            "--log",
            "log.jsonl",
            "--out",
            "c.jsonl",
        ][..],
    ] {
        let o = veredicto_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains("log.jsonl:2: field `-`: line longer than 1 MiB"),
            "{}",
            stderr(&o)
        );
        assert!(stderr(&o).len() < 400, "the value is not quoted");
    }
    assert!(!dir.path().join("s.jsonl").exists());
    assert!(!dir.path().join("c.jsonl").exists());
}
