//! Bad input: one-line error naming file, line and field; exit 2; no output file left.

use crate::common;
use common::*;

const GOLDEN: &str = "{\"id\": \"q1\", \"query\": \"a\", \"expected\": [\"c1\", \"c2\"]}\n{\"id\": \"q2\", \"query\": \"b\", \"expected\": [\"c3\"]}\n";
const RUN: &str = "q1 Q0 c1 1 0.9 t\nq1 Q0 x 2 0.5 t\nq2 Q0 c3 1 0.8 t\n";

/// Runs the exam with one file replaced by bad content; checks exit 2, the message's
/// `file:line: field` prefix and that `--out` was not created.
fn assert_rejected(
    golden: &str,
    run: &str,
    policy: Option<&str>,
    notes: Option<&str>,
    expect: &str,
) {
    let dir = tempfile::tempdir().unwrap();
    let g = write(dir.path(), "golden.jsonl", golden);
    let r = write(dir.path(), "run.trec", run);
    let out = dir.path().join("report.json");
    let out_s = out.to_string_lossy().into_owned();
    let mut args = vec![
        "exam", "--golden", &g, "--run", &r, "--format", "json", "--out", &out_s,
    ];
    let p;
    if let Some(policy) = policy {
        p = write(dir.path(), "policy.toml", policy);
        args.extend(["--policy", &p]);
    }
    let n;
    if let Some(notes) = notes {
        n = write(dir.path(), "notes.jsonl", notes);
        args.extend(["--notes", &n]);
    }
    let o = veredicto(&args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(expect), "expected `{expect}` in: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one-line error: {err}");
    assert!(!out.exists(), "no output file on error");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
}

#[test]
fn malformed_json_line() {
    let g = "{\"id\": \"q1\", \"query\": \"a\", \"expected\": [\"c1\"]}\n{\"id\": \"q2\", \"query\": \n";
    assert_rejected(
        g,
        RUN,
        None,
        None,
        "golden.jsonl:2: field `-`: malformed JSON",
    );
}

#[test]
fn missing_fields() {
    assert_rejected(
        "{\"query\": \"a\", \"expected\": [\"c1\"]}\n",
        RUN,
        None,
        None,
        "golden.jsonl:1: field `id`: missing",
    );
    assert_rejected(
        "{\"id\": \"q1\", \"expected\": [\"c1\"]}\n",
        RUN,
        None,
        None,
        "golden.jsonl:1: field `query`: missing",
    );
    assert_rejected(
        "{\"id\": \"q1\", \"query\": \"a\"}\n",
        RUN,
        None,
        None,
        "golden.jsonl:1: field `expected`: missing",
    );
}

#[test]
fn duplicate_case_ids() {
    let g = "{\"id\": \"q1\", \"query\": \"a\", \"expected\": [\"c1\"]}\n\n{\"id\": \"q1\", \"query\": \"b\", \"expected\": [\"c2\"]}\n";
    assert_rejected(
        g,
        RUN,
        None,
        None,
        "golden.jsonl:3: field `id`: duplicate case ID `q1` (first on line 1)",
    );
}

#[test]
fn empty_expected() {
    assert_rejected(
        "{\"id\": \"q1\", \"query\": \"a\", \"expected\": []}\n",
        RUN,
        None,
        None,
        "golden.jsonl:1: field `expected`: empty",
    );
}

#[test]
fn bad_top_k() {
    for (v, shown) in [
        ("0", "0"),
        ("-2", "-2"),
        ("2.5", "2.5"),
        ("\"ten\"", "a string"),
    ] {
        let g = format!(
            "{{\"id\": \"q1\", \"query\": \"a\", \"expected\": [\"c1\"], \"top_k\": {v}}}\n"
        );
        assert_rejected(&g, RUN, None, None, "golden.jsonl:1: field `top_k`");
        let _ = shown;
    }
}

#[test]
fn bad_scores() {
    for bad in ["NaN", "inf", "-inf", "abc"] {
        let run = format!("q1 Q0 c1 1 0.9 t\nq1 Q0 c2 2 {bad} t\n");
        assert_rejected(GOLDEN, &run, None, None, "run.trec:2: field `score`");
    }
    let jsonl = "{\"query_id\": \"q1\", \"results\": [{\"id\": \"c1\", \"score\": \"high\"}]}\n";
    assert_rejected(
        GOLDEN,
        jsonl,
        None,
        None,
        "run.trec:1: field `results[0].score`",
    );
}

#[test]
fn trec_line_with_wrong_column_count() {
    assert_rejected(
        GOLDEN,
        "q1 Q0 c1 1 0.9 t\nq1 Q0 c2 2 0.8\n",
        None,
        None,
        "run.trec:2:",
    );
}

#[test]
fn policy_unknown_key_and_out_of_range() {
    assert_rejected(
        GOLDEN,
        RUN,
        Some("top_k = 10\nrecal_floor = 0.9\n"),
        None,
        "policy.toml:2: field `recal_floor`",
    );
    assert_rejected(
        GOLDEN,
        RUN,
        Some("noise_ceiling = 3.0\n"),
        None,
        "policy.toml:1: field `noise_ceiling`: must be between 0 and 1",
    );
    assert_rejected(
        GOLDEN,
        RUN,
        Some("min_mean_quality = 120\n"),
        None,
        "policy.toml:1: field `min_mean_quality`",
    );
}

#[test]
fn unknown_measure_lists_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let g = write(dir.path(), "golden.jsonl", GOLDEN);
    let r = write(dir.path(), "run.trec", RUN);
    let p = write(
        dir.path(),
        "policy.toml",
        "measures = [\"nDCG@10\", \"ndgc@10\"]\n",
    );
    let o = veredicto(&["exam", "--golden", &g, "--run", &r, "--policy", &p]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("policy.toml:1: field `measures[1]`"), "{err}");
    assert!(err.contains("nDCG"), "lists known measures: {err}");
}

#[test]
fn duplicate_notes() {
    let notes = "{\"id\": \"q1\", \"note\": \"x\"}\n{\"id\": \"q1\", \"note\": \"y\"}\n";
    assert_rejected(
        GOLDEN,
        RUN,
        None,
        Some(notes),
        "notes.jsonl:2: field `id`: duplicate note ID `q1`",
    );
}

#[test]
fn bom_and_crlf_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let g = write(
        dir.path(),
        "golden.jsonl",
        &format!("\u{feff}{}", GOLDEN.replace('\n', "\r\n")),
    );
    let r = write(
        dir.path(),
        "run.trec",
        &format!("\u{feff}{}", RUN.replace('\n', "\r\n")),
    );
    let p = write(
        dir.path(),
        "policy.toml",
        "\u{feff}top_k = 10\r\nrecall_floor = 0.5\r\n",
    );
    let o = veredicto(&[
        "exam", "--golden", &g, "--run", &r, "--policy", &p, "--json",
    ]);
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["cases"][0]["recall"], 0.5);
    assert_eq!(v["cases"][1]["recall"], 1.0);
}

#[test]
fn duplicate_chunk_ids_in_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let g = write(dir.path(), "golden.jsonl", GOLDEN);
    let r = write(dir.path(), "run.trec", RUN);
    let c = write(
        dir.path(),
        "corpus.jsonl",
        "{\"id\": \"c1\", \"text\": \"a\"}\n{\"id\": \"c1\", \"text\": \"b\"}\n",
    );
    let o = veredicto(&["exam", "--golden", &g, "--run", &r, "--corpus", &c]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("corpus.jsonl:2: field `id`: duplicate chunk ID `c1`"),
        "{}",
        stderr(&o)
    );
}
