//! `veredicto audit review --answer ID --relevance V`: the answer-relevance verdict, in the
//! same append-only log as claim verdicts, reported by `audit check` in every format, kept in
//! sheets and packages; and a bad relevance line named by file, line and field.

use crate::common;
use common::{stderr, stdout, veredicto, workspace};
use std::path::{Path, PathBuf};

fn copy_example(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(workspace().join("examples/grounding").join(name), &to).expect("copy");
    to
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn relevance(
    cases: &Path,
    verdict: &str,
    reason: &str,
    who: &str,
    time: &str,
) -> std::process::Output {
    veredicto(&[
        "audit",
        "review",
        s(cases),
        "--answer",
        "A-017",
        "--relevance",
        verdict,
        "--reason",
        reason,
        "--reviewer",
        who,
        "--time",
        time,
    ])
}

#[test]
fn an_off_topic_verdict_is_appended_reported_and_misses_the_gate() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let log = dir.path().join("q017.yaml.reviews.jsonl");

    // Before: no relevance verdict, the check passes (no policy) and says nothing of it.
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("relevance"), "{}", stdout(&o));

    let o = relevance(
        &cases,
        "off_topic",
        "asks about returns of final-sale items; the answer is about refund timing",
        "ana",
        "2026-11-30T10:00:00Z",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("appended relevance off_topic on Q-017 A-017 by ana to ")
            && stderr(&o).contains("original verdict"),
        "{}",
        stderr(&o)
    );
    let first = std::fs::read_to_string(&log).expect("log");
    assert_eq!(
        first,
        "{\"case\":\"Q-017\",\"answer\":\"A-017\",\"relevance\":\"off_topic\",\"reason\":\"asks about returns of final-sale items; the answer is about refund timing\",\"reviewer\":\"ana\",\"time\":\"2026-11-30T10:00:00Z\"}\n"
    );

    // A claim review goes to the same log, after it.
    let o = veredicto(&[
        "audit",
        "review",
        s(&cases),
        "--claim",
        "C-017-2",
        "--support",
        "supported",
        "--reason",
        "the 30 days are in D-01 p04",
        "--reviewer",
        "bo",
        "--time",
        "2026-11-30T10:30:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // A second reviewer who disagrees is an annex; the first verdict stays in force.
    let o = relevance(
        &cases,
        "partly",
        "it answers the refund half of the question",
        "bo",
        "2026-11-30T11:00:00Z",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("annex (disagrees with off_topic)"),
        "{}",
        stderr(&o)
    );
    let after = std::fs::read_to_string(&log).expect("log");
    assert!(after.starts_with(&first), "append-only");
    assert_eq!(after.lines().count(), 3);

    // check: beside the measures, in force off_topic, and the gate is missed (exit 1).
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("support 25.0%  coverage 33.3% (1/3 facts)  relevance off_topic\n"),
        "{text}"
    );
    assert!(
        text.contains("    policy missed: off topic: the answer does not address what was asked (ana: asks about returns"),
        "{text}"
    );
    assert!(
        text.contains("relevance: 1 of 1 answers judged: 0 addresses, 0 partly, 1 off topic\npolicy: missed\n"),
        "{text}"
    );

    let o = veredicto(&["audit", "check", s(&cases), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let r = &v["answers"][0]["relevance"];
    assert_eq!(r["verdict"], "off_topic");
    assert_eq!(r["reviewer"], "ana");
    assert_eq!(r["annexes"], 1);
    assert_eq!(
        v["totals"]["relevance"],
        serde_json::json!({"judged": 1, "addresses": 0, "partly": 0, "off_topic": 1})
    );
    assert_eq!(v["pass"], false);

    let o = veredicto(&["audit", "check", s(&cases), "--format", "markdown"]);
    let md = stdout(&o);
    assert!(md.contains("| Relevance |"), "{md}");
    assert!(md.contains("| off_topic (asks about returns"), "{md}");
    assert!(md.contains("Relevance: 1 of 1 answers judged"), "{md}");

    // The sheet keeps it: one relevance row after the answer's claims, with the annex.
    for format in ["json", "html", "csv"] {
        let o = veredicto(&["audit", "sheet", s(&cases), "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        if format == "json" {
            let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
            let rel = &rows[4];
            assert_eq!(rel["row"], "relevance");
            assert_eq!(rel["support"], "off_topic");
            assert_eq!(rel["reviewer"], "ana");
            assert!(rel["annexes"][0]
                .as_str()
                .unwrap_or("")
                .contains("bo: partly — it answers the refund half"));
        } else {
            assert!(stdout(&o).contains("off_topic"), "{format}");
        }
    }
}

#[test]
fn a_package_hashes_the_relevance_verdicts_and_an_older_package_still_verifies() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let cases = copy_example(d, "q017.yaml");
    let o = veredicto(&[
        "audit",
        "review",
        s(&cases),
        "--claim",
        "C-017-2",
        "--support",
        "supported",
        "--reason",
        "the 30 days are in D-01 p04",
        "--reviewer",
        "bo",
        "--time",
        "2026-11-30T10:30:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = d.join("before");
    let o = veredicto(&["audit", "package", s(&cases), "--out", s(&before)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let metrics_before = std::fs::read_to_string(before.join("metrics.json")).expect("metrics");
    assert!(
        !metrics_before.contains("relevance"),
        "nothing judged, nothing added"
    );

    let o = relevance(
        &cases,
        "addresses",
        "it answers both halves",
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
    assert!(reviews
        .lines()
        .nth(1)
        .unwrap_or("")
        .contains("\"relevance\":\"addresses\""));
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(after.join("metrics.json")).expect("m"))
            .expect("json");
    assert_eq!(metrics[0]["relevance"]["verdict"], "addresses");
    let manifest = std::fs::read_to_string(after.join("manifest.json")).expect("manifest");
    assert!(manifest.contains("\"reviews.jsonl\""), "{manifest}");
    // Changing the verdict in the package is caught.
    std::fs::write(
        after.join("reviews.jsonl"),
        reviews.replace("\"addresses\"", "\"off_topic\""),
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
fn bad_relevance_input_exits_2_and_appends_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let log = dir.path().join("q017.yaml.reviews.jsonl");
    let base = ["audit", "review", s(&cases), "--reviewer", "bo"];
    for (bad, says) in [
        (
            vec![
                "--answer",
                "A-999",
                "--relevance",
                "addresses",
                "--reason",
                "x",
            ],
            "unknown answer id `A-999`",
        ),
        (
            vec![
                "--answer",
                "A-017",
                "--relevance",
                "offtopic",
                "--reason",
                "x",
            ],
            "is not a relevance verdict (addresses, partly, off_topic)",
        ),
        (
            vec![
                "--answer",
                "A-017",
                "--relevance",
                "partly",
                "--reason",
                " ",
            ],
            "a relevance verdict needs a reason",
        ),
        (vec!["--answer", "A-017", "--reason", "x"], "--relevance"),
        (
            vec![
                "--answer",
                "A-017",
                "--relevance",
                "partly",
                "--claim",
                "C-017-1",
                "--support",
                "supported",
                "--reason",
                "x",
            ],
            "cannot be used with",
        ),
    ] {
        let mut args = base.to_vec();
        args.extend(bad.iter().copied());
        let o = veredicto(&args);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{bad:?}: {}", stderr(&o));
        assert!(!log.exists(), "nothing appended for {bad:?}");
    }

    // A whole line with a relevance verdict outside the three: file, line and field, exit 2.
    std::fs::write(
        &log,
        "{\"case\":\"Q-017\",\"answer\":\"A-017\",\"relevance\":\"maybe\",\"reason\":\"r\",\"reviewer\":\"a\",\"time\":\"t\"}\n",
    )
    .expect("write");
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("q017.yaml.reviews.jsonl: line 1: field `relevance`: unknown variant `maybe`, expected one of `addresses`, `partly`, `off_topic`"),
        "{err}"
    );
    // A relevance line naming an answer the cases do not have, after a claim review: named
    // by its place in the log.
    std::fs::write(
        &log,
        "{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"support\":\"supported\",\"reason\":\"r\",\"reviewer\":\"a\",\"time\":\"t\"}\n{\"case\":\"Q-017\",\"answer\":\"A-404\",\"relevance\":\"partly\",\"reason\":\"r\",\"reviewer\":\"a\",\"time\":\"t\"}\n",
    )
    .expect("write");
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("record 2: relevance of unknown answer `A-404` of case `Q-017`"),
        "{}",
        stderr(&o)
    );
}
