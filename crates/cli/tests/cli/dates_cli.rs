//! Every command that takes a date or a time refuses an impossible one the same way: exit 2,
//! one line naming the flag (or the file, line and field) and what is wrong with the value.
//!
//! Regression: `exam --as-of 2025-02-30` (and `2025-13-01`, `9999-99-99`) ran the exam, since
//! the flag checked the shape only; `calibrate --as-of`, the audit commands' `--time` and
//! `audit package --created` took any text; `exam --corpus` and `ingest --strict` read
//! `valid_from: "2025-13-45"`, which the default ingest refused.

use crate::common;
use common::*;
use std::path::Path;

/// The three impossible dates of the report, and what each one is told.
const BAD_DATES: [(&str, &str); 3] = [
    ("2025-02-30", "2025-02 has 28 days, there is no day 30"),
    ("2025-13-01", "there is no month 13"),
    ("9999-99-99", "there is no month 99"),
];

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `args` in `dir` and checks exit 2 with a message naming `flag` and `reason`.
fn refused(dir: &Path, args: &[&str], flag: &str, reason: &str) {
    let o = veredicto_in(dir, args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}{}", stdout(&o));
    assert!(err.contains(flag), "{args:?} should name {flag}: {err}");
    assert!(
        err.contains(reason),
        "{args:?} should say {reason:?}: {err}"
    );
    assert!(stdout(&o).is_empty(), "{args:?} printed a report");
}

#[test]
fn exam_and_calibrate_refuse_an_impossible_as_of() {
    let dir = tempfile::tempdir().unwrap();
    let golden = example("golden.jsonl");
    let run = example("run-accept.trec");
    // The same exam with a real date runs (so only the date is refused below).
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            s(&golden),
            "--run",
            s(&run),
            "--no-record",
            "--as-of",
            "2024-02-29",
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    for (date, reason) in BAD_DATES {
        refused(
            dir.path(),
            &[
                "exam",
                "--golden",
                s(&golden),
                "--run",
                s(&run),
                "--no-record",
                "--as-of",
                date,
            ],
            "--as-of",
            reason,
        );
        refused(
            dir.path(),
            &[
                "calibrate",
                "--golden",
                s(&golden),
                "--run",
                s(&run),
                "--dry-run",
                "--as-of",
                date,
            ],
            "--as-of",
            reason,
        );
        refused(
            dir.path(),
            &[
                "corpus",
                "check",
                "--corpus",
                s(&example("corpus.jsonl")),
                "--as-of",
                date,
            ],
            "--as-of",
            reason,
        );
    }
    assert!(!dir.path().join(".veredicto").exists(), "nothing recorded");
}

#[test]
fn runs_list_since_and_until_refuse_impossible_dates_and_times() {
    let dir = tempfile::tempdir().unwrap();
    for (date, reason) in BAD_DATES {
        for flag in ["--since", "--until"] {
            refused(dir.path(), &["runs", "list", flag, date], flag, reason);
        }
    }
    refused(
        dir.path(),
        &["runs", "list", "--since", "2025-11-14T25:00:00Z"],
        "--since",
        "there is no hour 25",
    );
    refused(
        dir.path(),
        &["runs", "list", "--until", "last week"],
        "--until",
        "expected a date YYYY-MM-DD or an RFC 3339 time",
    );
}

#[test]
fn ingest_and_audit_times_must_be_real_rfc3339_times() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write(
        dir.path(),
        "corpus.jsonl",
        "{\"id\": \"c1\", \"text\": \"a\"}\n",
    );
    std::fs::copy(
        workspace().join("examples/grounding/q017.yaml"),
        dir.path().join("q017.yaml"),
    )
    .unwrap();
    let cases = dir.path().join("q017.yaml");
    let bad = [
        ("2025-02-30T10:00:00Z", "there is no day 30"),
        ("2025-13-01T10:00:00Z", "there is no month 13"),
        ("9999-99-99T99:99:99Z", "there is no month 99"),
        ("t2", "expected an RFC 3339 time"),
    ];
    for (time, reason) in bad {
        let index = dir.path().join("idx");
        refused(
            dir.path(),
            &[
                "ingest",
                "--corpus",
                &corpus,
                "--index",
                s(&index),
                "--time",
                time,
            ],
            "--time",
            reason,
        );
        assert!(!index.exists());
        refused(
            dir.path(),
            &["audit", "record", s(&cases), "--time", time],
            "--time",
            reason,
        );
        refused(
            dir.path(),
            &[
                "audit",
                "review",
                s(&cases),
                "--claim",
                "C-017-2",
                "--support",
                "supported",
                "--reason",
                "r",
                "--reviewer",
                "bo",
                "--time",
                time,
            ],
            "--time",
            reason,
        );
        refused(
            dir.path(),
            &[
                "audit",
                "suggest",
                s(&cases),
                "--nli",
                "/nonexistent-model",
                "--time",
                time,
            ],
            "--time",
            reason,
        );
        refused(
            dir.path(),
            &[
                "audit",
                "package",
                s(&cases),
                "--out",
                s(&dir.path().join("pkg")),
                "--created",
                time,
            ],
            "--created",
            reason,
        );
        assert!(!dir.path().join("pkg").exists());
    }
    assert!(!dir.path().join("q017.yaml.reviews.jsonl").exists());
    assert!(!dir.path().join(".veredicto").exists(), "nothing recorded");
}

/// `valid_from: "2025-13-45"` was read by `exam --corpus` (and by `ingest --strict`) while
/// the default ingest refused the same line: now every reader refuses it, naming the file,
/// line and field.
#[test]
fn impossible_validity_dates_in_a_corpus_are_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let golden = example("golden.jsonl");
    let run = example("run-accept.trec");
    let mut corpus = std::fs::read_to_string(example("corpus.jsonl")).unwrap();
    corpus.push_str("{\"id\": \"late\", \"text\": \"una nota\", \"valid_from\": \"2025-13-45\"}\n");
    let line = corpus.lines().count();
    let bad = write(dir.path(), "corpus.jsonl", &corpus);
    let located = format!("corpus.jsonl:{line}: field `valid_from`");
    for args in [
        vec![
            "exam",
            "--golden",
            s(&golden),
            "--run",
            s(&run),
            "--no-record",
            "--corpus",
            &bad,
        ],
        vec![
            "calibrate",
            "--golden",
            s(&golden),
            "--run",
            s(&run),
            "--dry-run",
            "--corpus",
            &bad,
        ],
        vec!["corpus", "check", "--corpus", &bad],
        vec![
            "ingest",
            "--strict",
            "--corpus",
            &bad,
            "--index",
            "idx",
            "--model",
            "/nonexistent-model",
        ],
    ] {
        refused(dir.path(), &args, &located, "there is no month 13");
    }
    assert!(!dir.path().join("idx").exists());
    // A date of February 30th in `valid_to`, the same.
    let feb = write(
        dir.path(),
        "feb.jsonl",
        "{\"id\": \"a\", \"text\": \"x\", \"valid_to\": \"2025-02-30\"}\n",
    );
    refused(
        dir.path(),
        &["corpus", "check", "--corpus", &feb],
        "feb.jsonl:1: field `valid_to`",
        "2025-02 has 28 days",
    );
}

/// Dates inside the other files a command reads: a golden case's `valid_at` filter, a
/// signal's `time`, a matrix's `as_of`.
#[test]
fn impossible_dates_in_golden_signals_and_matrix_files_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let golden = write(
        dir.path(),
        "golden.jsonl",
        "{\"id\": \"q1\", \"query\": \"a\", \"expected\": [\"c1\"]}\n\
         {\"id\": \"q2\", \"query\": \"b\", \"expected\": [\"c1\"], \"filters\": {\"valid_at\": \"2025-02-30\"}}\n",
    );
    let run = write(
        dir.path(),
        "run.trec",
        "q1 Q0 c1 1 1.0 t\nq2 Q0 c1 1 1.0 t\n",
    );
    refused(
        dir.path(),
        &["exam", "--golden", &golden, "--run", &run, "--no-record"],
        "golden.jsonl:2: field `filters.valid_at`",
        "2025-02 has 28 days",
    );
    let log = write(
        dir.path(),
        "log.jsonl",
        "{\"conversation_id\": \"c\", \"time\": \"2025-11-17T09:02:11Z\", \"query\": \"q\", \"event\": \"answer\"}\n\
         {\"conversation_id\": \"c\", \"time\": \"2025-11-31T09:02:11Z\", \"query\": \"q\", \"event\": \"answer\"}\n",
    );
    refused(
        dir.path(),
        &["signals", "import", &log],
        "log.jsonl:2: field `time`",
        "2025-11 has 30 days, there is no day 31",
    );
    let matrix = write(
        dir.path(),
        "matrix.toml",
        "golden = \"golden.jsonl\"\nas_of = \"2025-13-01\"\n\n[[config]]\nname = \"a\"\nindex = \"kb\"\n",
    );
    refused(
        dir.path(),
        &["matrix", "--config", &matrix],
        "matrix.toml:2: field `as_of`",
        "there is no month 13",
    );
    // `search --filter valid_at=` (the same calendar).
    refused(
        dir.path(),
        &[
            "search",
            "--index",
            "/nonexistent-index",
            "--filter",
            "valid_at=2025-02-30",
            "query",
        ],
        "valid_at",
        "2025-02 has 28 days",
    );
}
