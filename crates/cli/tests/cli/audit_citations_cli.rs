//! `veredicto audit review --claim ID --citation CIT --mark M`: necessary, redundant and
//! irrelevant citations, in the same append-only log as claim verdicts, reported by
//! `audit check` as citation precision in every format, kept in sheets and packages; and
//! bad input named by file, line and field.

use crate::common;
use common::{stderr, stdout, veredicto, veredicto_in, workspace};
use std::path::{Path, PathBuf};

/// The q017 example with claim C-017-2 citing both D-01 and D-02.
fn cases_with_two_citations(dir: &Path) -> PathBuf {
    let text =
        std::fs::read_to_string(workspace().join("examples/grounding/q017.yaml")).expect("example");
    let old = "citations: [D-01]\n            facts: [F1]";
    assert!(text.contains(old), "the example changed");
    let to = dir.join("q017.yaml");
    std::fs::write(
        &to,
        text.replace(old, "citations: [D-01, D-02]\n            facts: [F1]"),
    )
    .expect("write");
    to
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn mark(
    cases: &Path,
    claim: &str,
    citation: &str,
    m: &str,
    who: &str,
    time: &str,
) -> std::process::Output {
    veredicto(&[
        "audit",
        "review",
        s(cases),
        "--claim",
        claim,
        "--citation",
        citation,
        "--mark",
        m,
        "--reason",
        &format!("{citation} is {m} to {claim}"),
        "--reviewer",
        who,
        "--time",
        time,
    ])
}

#[test]
fn marks_are_appended_and_reported_as_citation_precision() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = cases_with_two_citations(dir.path());
    let log = dir.path().join("q017.yaml.reviews.jsonl");

    // Before: nothing marked, the check says nothing of citation precision.
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("citation precision"), "{}", stdout(&o));
    let json_before = stdout(&veredicto(&["audit", "check", s(&cases), "--json"]));

    let o = mark(
        &cases,
        "C-017-2",
        "D-01",
        "necessary",
        "ana",
        "2026-11-30T10:00:00Z",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("appended necessary on citation D-01 of C-017-2 by ana to ")
            && stderr(&o).contains("original mark"),
        "{}",
        stderr(&o)
    );
    let first = std::fs::read_to_string(&log).expect("log");
    assert_eq!(
        first,
        "{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"citation\":\"D-01\",\"mark\":\"necessary\",\"reason\":\"D-01 is necessary to C-017-2\",\"reviewer\":\"ana\",\"time\":\"2026-11-30T10:00:00Z\"}\n"
    );
    for (claim, cit, m, who, time) in [
        (
            "C-017-2",
            "D-02",
            "irrelevant",
            "ana",
            "2026-11-30T10:05:00Z",
        ),
        (
            "C-017-3",
            "D-02",
            "necessary",
            "ana",
            "2026-11-30T10:10:00Z",
        ),
    ] {
        let o = mark(&cases, claim, cit, m, who, time);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    // A second reviewer who disagrees is an annex; the first mark stays in force.
    let o = mark(
        &cases,
        "C-017-2",
        "D-02",
        "redundant",
        "bo",
        "2026-11-30T11:00:00Z",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("annex (disagrees with irrelevant)"),
        "{}",
        stderr(&o)
    );
    let after = std::fs::read_to_string(&log).expect("log");
    assert!(after.starts_with(&first), "append-only");
    assert_eq!(after.lines().count(), 4);

    // check: 2 of 3 marked citations kept (the irrelevant one counts against); not a gate.
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("coverage 33.3% (1/3 facts)  citation precision 66.7% (2/3 marked)\n"),
        "{text}"
    );
    assert!(
        text.contains("citation precision: 66.7% over 3 marked citations: 2 necessary, 0 redundant, 1 irrelevant\npolicy: met\n"),
        "{text}"
    );

    let o = veredicto(&["audit", "check", s(&cases), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let want = serde_json::json!({"marked": 3, "necessary": 2, "redundant": 0,
                                  "irrelevant": 1, "precision": 2.0 / 3.0});
    assert_eq!(v["answers"][0]["citation_precision"], want);
    assert_eq!(v["totals"]["citation_precision"], want);
    let before: serde_json::Value = serde_json::from_str(&json_before).expect("json");
    assert_eq!(
        before["answers"][0]["citation_precision"],
        serde_json::Value::Null
    );
    assert_eq!(
        before["totals"]["citation_precision"]["precision"],
        serde_json::Value::Null
    );

    let o = veredicto(&["audit", "check", s(&cases), "--format", "markdown"]);
    let md = stdout(&o);
    assert!(
        md.contains("- Citation precision of A-017: 66.7% over 3 marked citations"),
        "{md}"
    );
    assert!(
        md.contains("\nCitation precision: 66.7% over 3 marked"),
        "{md}"
    );

    // The sheet keeps them: a row per marked citation after its claim, with the annex.
    let o = veredicto(&["audit", "sheet", s(&cases), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let rows = rows.as_array().expect("rows");
    let kinds: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["row"].as_str().unwrap_or(""),
                r["claim_id"].as_str().unwrap_or(""),
            )
        })
        .take(7)
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("claim", "C-017-1"),
            ("claim", "C-017-2"),
            ("citation", "C-017-2"),
            ("citation", "C-017-2"),
            ("claim", "C-017-3"),
            ("citation", "C-017-3"),
            ("claim", "C-017-4"),
        ]
    );
    let irrelevant = &rows[3];
    assert_eq!(irrelevant["citation_ids"], serde_json::json!(["D-02"]));
    assert_eq!(irrelevant["support"], "irrelevant");
    assert_eq!(irrelevant["sources"][0], "D-02@refunds-v2#p07");
    assert!(irrelevant["annexes"][0]
        .as_str()
        .unwrap_or("")
        .contains("bo: redundant — D-02 is redundant to C-017-2"));
    for format in ["csv", "html", "markdown"] {
        let o = veredicto(&["audit", "sheet", s(&cases), "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", stderr(&o));
        assert!(stdout(&o).contains("irrelevant"), "{format}");
    }
}

#[test]
fn a_package_keeps_the_marks_and_one_without_marks_is_unchanged() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let cases = cases_with_two_citations(d);
    let before = d.join("before");
    let o = veredicto(&[
        "audit",
        "package",
        s(&cases),
        "--out",
        s(&before),
        "--created",
        "2026-11-30T09:00:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let metrics_before = std::fs::read_to_string(before.join("metrics.json")).expect("metrics");
    assert!(
        !metrics_before.contains("citation_precision"),
        "nothing marked, nothing added"
    );

    let o = mark(
        &cases,
        "C-017-2",
        "D-02",
        "redundant",
        "ana",
        "2026-11-30T12:00:00Z",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = d.join("after");
    let o = veredicto(&["audit", "package", s(&cases), "--out", s(&after)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for p in [&before, &after] {
        let o = veredicto(&["audit", "verify", s(p)]);
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    }
    let reviews = std::fs::read_to_string(after.join("reviews.jsonl")).expect("reviews");
    assert!(reviews.contains("\"mark\":\"redundant\""), "{reviews}");
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(after.join("metrics.json")).expect("m"))
            .expect("json");
    assert_eq!(metrics[0]["citation_precision"]["precision"], 1.0);
    let sheet = std::fs::read_to_string(after.join("sheet.csv")).expect("sheet");
    assert!(sheet.contains("redundant"), "{sheet}");
    // Changing the mark in the package is caught.
    std::fs::write(
        after.join("reviews.jsonl"),
        reviews.replace("\"redundant\"", "\"irrelevant\""),
    )
    .expect("write");
    let o = veredicto(&["audit", "verify", s(&after)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("changed: reviews.jsonl"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bad_marks_exit_2_and_append_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = cases_with_two_citations(dir.path());
    let log = dir.path().join("q017.yaml.reviews.jsonl");
    let base = ["audit", "review", s(&cases), "--reviewer", "bo"];
    for (bad, says) in [
        (
            vec![
                "--claim",
                "C-017-1",
                "--citation",
                "D-02",
                "--mark",
                "necessary",
                "--reason",
                "x",
            ],
            "claim `C-017-1` does not cite `D-02` (it cites: D-01)",
        ),
        (
            vec![
                "--claim",
                "C-017-4",
                "--citation",
                "D-01",
                "--mark",
                "necessary",
                "--reason",
                "x",
            ],
            "claim `C-017-4` does not cite `D-01` (it cites: nothing)",
        ),
        (
            vec![
                "--claim",
                "C-999",
                "--citation",
                "D-01",
                "--mark",
                "necessary",
                "--reason",
                "x",
            ],
            "unknown claim id `C-999`",
        ),
        (
            vec![
                "--claim",
                "C-017-2",
                "--citation",
                "D-01",
                "--mark",
                "needed",
                "--reason",
                "x",
            ],
            "is not a citation mark (necessary, redundant, irrelevant)",
        ),
        (
            vec![
                "--claim",
                "C-017-2",
                "--citation",
                "D-01",
                "--mark",
                "redundant",
                "--reason",
                " ",
            ],
            "a citation mark needs a reason",
        ),
        (
            vec!["--claim", "C-017-2", "--citation", "D-01", "--reason", "x"],
            "--mark",
        ),
        (
            vec!["--claim", "C-017-2", "--mark", "necessary", "--reason", "x"],
            "--citation",
        ),
        (
            vec![
                "--claim",
                "C-017-2",
                "--citation",
                "D-01",
                "--mark",
                "necessary",
                "--support",
                "supported",
                "--reason",
                "x",
            ],
            "cannot be used with",
        ),
        (
            vec!["--claim", "C-017-2", "--reason", "x"],
            "give --claim ID --support VERDICT",
        ),
    ] {
        let mut args = base.to_vec();
        args.extend(bad.iter().copied());
        let o = veredicto(&args);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{bad:?}: {}", stderr(&o));
        assert!(!log.exists(), "nothing appended for {bad:?}");
    }

    // A whole line with a mark outside the three: file, line and field, exit 2.
    std::fs::write(
        &log,
        "{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"citation\":\"D-01\",\"mark\":\"maybe\",\"reason\":\"r\",\"reviewer\":\"a\",\"time\":\"t\"}\n",
    )
    .expect("write");
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("q017.yaml.reviews.jsonl: line 1: field `mark`: unknown variant `maybe`, expected one of `necessary`, `redundant`, `irrelevant`"),
        "{err}"
    );
    // A mark of a citation its claim does not cite, after a claim review: named by its place.
    std::fs::write(
        &log,
        "{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"support\":\"supported\",\"reason\":\"r\",\"reviewer\":\"a\",\"time\":\"t\"}\n{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-1\",\"citation\":\"D-02\",\"mark\":\"redundant\",\"reason\":\"r\",\"reviewer\":\"a\",\"time\":\"t\"}\n",
    )
    .expect("write");
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("citation mark 2: claim `C-017-1` does not cite `D-02` (it cites: D-01)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_mark_on_a_recorded_run_is_kept_in_the_history_and_its_package() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let cases = cases_with_two_citations(d);
    let run = |args: &[&str]| {
        let mut a = vec![args[0], "--history", "h.db"];
        a.extend_from_slice(&args[1..]);
        veredicto_in(d, &a)
    };
    let o = run(&[
        "audit",
        "record",
        s(&cases),
        "--time",
        "2026-11-30T10:00:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    let o = run(&[
        "audit",
        "review",
        &id,
        "--claim",
        "C-017-2",
        "--citation",
        "D-02",
        "--mark",
        "irrelevant",
        "--reason",
        "D-02 p07 is about refund processing",
        "--reviewer",
        "ana",
        "--time",
        "2026-11-30T11:00:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("to audit run {id} in ")),
        "{}",
        stderr(&o)
    );
    assert!(
        !d.join("q017.yaml.reviews.jsonl").exists(),
        "a run's records go to the history"
    );
    let o = run(&["audit", "check", &id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "not a gate: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["totals"]["citation_precision"]["irrelevant"], 1);
    assert_eq!(v["totals"]["citation_precision"]["precision"], 0.0);
    let o = run(&["audit", "package", &id, "--out", "pkg"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["audit", "verify", "pkg"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("reviews.jsonl = the run's first 1 of 1 review record(s)"),
        "{}",
        stdout(&o)
    );
}
