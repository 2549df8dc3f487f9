//! `veredicto audit`: nothing wrong, nothing lost. A full disk during `audit review` leaves the
//! review log as it was; a torn tail from a crash is reported and moved aside; packages that
//! were altered are never "verified"; `audit package --out` writes only inside its target.

mod common;

use common::{stderr, stdout, veredicto, workspace};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn copy_example(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(workspace().join("examples/grounding").join(name), &to).expect("copy");
    to
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn review_args<'a>(cases: &'a str, reviewer: &'a str, reason: &'a str) -> Vec<&'a str> {
    vec![
        "audit",
        "review",
        cases,
        "--claim",
        "C-017-2",
        "--support",
        "partially_supported",
        "--reason",
        reason,
        "--reviewer",
        reviewer,
        "--time",
        "2026-11-30T10:00:00Z",
    ]
}

/// Runs the binary with a file-size limit of `blocks` × 1024 bytes (RLIMIT_FSIZE, as a full
/// disk: a write past the limit is cut short, the next one fails with EFBIG). SIGXFSZ is
/// ignored, as an ordinary write error is what a full disk gives.
fn veredicto_with_file_limit(blocks: u64, args: &[&str]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$@\""))
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_veredicto"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run veredicto under ulimit")
}

#[test]
fn full_disk_during_review_leaves_the_log_whole_and_usable() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let log = dir.path().join("q017.yaml.reviews.jsonl");
    // Fill the log to just under 1024 bytes with whole records.
    let mut n = 0;
    while std::fs::metadata(&log).map_or(0, |m| m.len()) < 800 {
        n += 1;
        let who = format!("r{n}");
        let o = veredicto(&review_args(s(&cases), &who, "scope"));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let before = std::fs::read(&log).expect("log");
    assert!(before.len() < 1024, "{}", before.len());
    let long_reason = "x".repeat(400);
    let o = veredicto_with_file_limit(1, &review_args(s(&cases), "full", &long_reason));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("q017.yaml.reviews.jsonl"), "{err}");
    assert!(err.contains("nothing appended"), "{err}");
    assert_eq!(std::fs::read(&log).expect("log"), before, "log changed");
    // Every audit command still works on the case file, and the next review appends.
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = veredicto(&review_args(s(&cases), "after", "scope"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = std::fs::read(&log).expect("log");
    assert!(after.starts_with(&before));
    assert_eq!(
        after
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        n + 1
    );
}

#[test]
fn torn_review_tail_is_reported_and_quarantined_keeping_complete_records() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let log = dir.path().join("q017.yaml.reviews.jsonl");
    for who in ["ana", "bo"] {
        let o = veredicto(&review_args(s(&cases), who, "scope"));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let whole = std::fs::read(&log).expect("log");
    // A crash mid-append: half a record, no newline, cut inside a UTF-8 character.
    let mut torn = whole.clone();
    torn.extend_from_slice(
        "{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"reason\":\"alcance ñ"
            .as_bytes(),
    );
    torn.pop();
    std::fs::write(&log, &torn).expect("write");

    let o = veredicto(&["audit", "sheet", s(&cases), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("q017.yaml.reviews.jsonl: line 3"), "{err}");
    assert!(err.contains("warning"), "{err}");
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(rows[1]["annexes"].as_array().expect("annexes").len(), 2);

    // The next review moves the torn tail aside and appends after the complete records.
    let o = veredicto(&review_args(s(&cases), "cy", "scope"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("moved to"), "{err}");
    let q = dir.path().join("q017.yaml.reviews.jsonl.torn-1");
    assert_eq!(
        std::fs::read(&q).expect("quarantine"),
        torn[whole.len()..].to_vec()
    );
    let now = std::fs::read(&log).expect("log");
    assert!(now.starts_with(&whole));
    assert_eq!(now.iter().filter(|&&b| b == b'\n').count(), 3);
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));

    // A bad line in the middle is still an error naming file and line.
    let mut mid = b"{not json}\n".to_vec();
    mid.extend_from_slice(&now);
    std::fs::write(&log, &mid).expect("write");
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("q017.yaml.reviews.jsonl: line 1"),
        "{}",
        stderr(&o)
    );
}
