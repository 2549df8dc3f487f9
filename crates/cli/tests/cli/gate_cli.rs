//! The ingestion gate end to end: ingest rejects bad corpus lines (and records them with the
//! batch), `veredicto gate` blocks until the policy allows them or someone accepts them in
//! writing, and the acceptance is appended to the index's record.

use crate::common;
use common::*;
use serde_json::Value;

/// Twenty good lines with precomputed vectors, then one of each kind of bad line.
fn corpus(dir: &std::path::Path, bad: bool) -> String {
    let mut lines: Vec<String> = (0..20)
        .map(|i| {
            format!(
                r#"{{"id":"c{i:02}","text":"chunk {i}","vector":[{},{},1]}}"#,
                i + 1,
                20 - i
            )
        })
        .collect();
    if bad {
        lines.extend([
            r#"{"id":"c21","text":"cut"#.to_owned(),
            r#"{"text":"no id","vector":[1,0,0]}"#.to_owned(),
            r#"{"id":"c03","text":"again","vector":[1,0,0]}"#.to_owned(),
            r#"{"id":"c22","text":"","vector":[1,0,0]}"#.to_owned(),
            r#"{"id":"c23","text":"two","vector":[1,0]}"#.to_owned(),
            r#"{"id":"c24","text":"old","valid_to":"2020-12-31","vector":[1,0,0]}"#.to_owned(),
        ]);
    }
    write(dir, "corpus.jsonl", &(lines.join("\n") + "\n"))
}

fn ingest(corpus: &str, index: &str, label: &str) -> std::process::Output {
    veredicto(&[
        "ingest",
        "--corpus",
        corpus,
        "--index",
        index,
        "--batch-label",
        label,
        "--time",
        "2025-11-14T09:30:00Z",
        "--reject-expired",
        "--json",
    ])
}

#[test]
fn rejected_lines_are_reported_recorded_and_gate_the_batch_until_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("kb");
    let index = index.to_str().unwrap();
    let c = corpus(dir.path(), true);
    let o = ingest(&c, index, "nightly-1");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(summary["chunks"], 20);
    let reasons: Vec<(u64, &str, &str)> = summary["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["reason"].as_str().unwrap(),
                r["field"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            (21, "unparseable", "-"),
            (22, "missing_id", "id"),
            (23, "duplicate_id", "id"),
            (24, "empty_text", "text"),
            (25, "wrong_dimension", "vector"),
            (26, "expired", "valid_to"),
        ]
    );
    assert!(summary["rejected"][0]["file"]
        .as_str()
        .unwrap()
        .ends_with("corpus.jsonl"));

    // No policy: no rejection allowed. Blocked, naming every rejected line.
    let o = veredicto(&["gate", "--index", index]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("ingestion gate: BLOCKED:"), "{text}");
    assert!(
        text.contains("batch nightly-1: 6 of 26 corpus lines rejected"),
        "{text}"
    );
    assert!(
        text.contains("corpus.jsonl:25: field `vector`: wrong_dimension"),
        "{text}"
    );

    // A policy that allows 5 still blocks; one that allows 25% passes.
    let strict = write(
        dir.path(),
        "p5.toml",
        "top_k = 5\n[ingest]\nmax_rejected = 5\n",
    );
    let o = veredicto(&[
        "gate", "--index", index, "--policy", &strict, "--format", "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["status"], "blocked");
    assert_eq!(j["rejected_count"], 6);
    let loose = write(
        dir.path(),
        "p25.toml",
        "[ingest]\nmax_rejected_percent = 25\n",
    );
    let o = veredicto(&["gate", "--index", index, "--policy", &loose]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    // Accepting needs a reason; with one, the gate lets the batch through, and every
    // acceptance is kept.
    let o = veredicto(&["gate", "accept", "--index", index, "--reason", "  "]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--reason"), "{}", stderr(&o));
    for reason in ["export bug, ticket 12", "still the export bug"] {
        let o = veredicto(&["gate", "accept", "--index", index, "--reason", reason]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let o = veredicto(&["gate", "--index", index, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["status"], "accepted");
    assert_eq!(j["accepted"]["reason"], "still the export bug");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("kb/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["batches"][0]["acceptances"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let o = veredicto(&["index", "verify", index]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // A fixed corpus makes a new batch with no rejection: the gate passes on its own.
    let c = corpus(dir.path(), false);
    let o = ingest(&c, index, "nightly-2");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = veredicto(&["gate", "--index", index]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("PASS"), "{}", stdout(&o));
}

#[test]
fn a_corpus_where_every_line_is_bad_is_an_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let c = write(dir.path(), "c.jsonl", "{\"text\":\"no id\"}\nnot json\n");
    let index = dir.path().join("kb");
    let o = ingest(&c, index.to_str().unwrap(), "b");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("c.jsonl:1: field `id`: missing_id"),
        "{}",
        stderr(&o)
    );
    assert!(!index.exists());
}

#[test]
fn bad_ingest_table_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path(), false);
    let index = dir.path().join("kb");
    let index = index.to_str().unwrap();
    assert_eq!(ingest(&c, index, "b").status.code(), Some(0));
    let p = write(
        dir.path(),
        "p.toml",
        "top_k = 5\n\n[ingest]\nmax_rejected_percent = 140\n",
    );
    let o = veredicto(&["gate", "--index", index, "--policy", &p]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("p.toml:4: field `ingest.max_rejected_percent`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn exam_with_gate_ingest_stops_before_examining_a_blocked_batch() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("kb");
    let index = index.to_str().unwrap();
    let c = corpus(dir.path(), true);
    assert_eq!(ingest(&c, index, "b1").status.code(), Some(0));
    let golden = write(
        dir.path(),
        "golden.jsonl",
        r#"{"id":"q1","query":"chunk 0","expected":["c00"],"top_k":3,"query_vector":[1,20,1]}
"#,
    );
    let exam = |extra: &[&str]| {
        let mut a = vec![
            "exam",
            "--index",
            index,
            "--golden",
            &golden,
            "--json",
            "--no-record",
        ];
        a.extend_from_slice(extra);
        veredicto(&a)
    };
    let o = exam(&["--gate-ingest"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("ingestion gate: BLOCKED"),
        "{}",
        stderr(&o)
    );
    // Without the flag, the exam runs as before.
    let o = exam(&[]);
    assert!(stdout(&o).contains("\"cases\""), "{}", stderr(&o));
    // A policy that allows the batch lets the exam run.
    let p = write(
        dir.path(),
        "p.toml",
        "recall_floor = 0.5\n[ingest]\nmax_rejected = 10\n",
    );
    let o = exam(&["--gate-ingest", "--policy", &p]);
    assert!(stdout(&o).contains("\"cases\""), "{}", stderr(&o));
}

/// The project's policy (`[policy]` with `[policy.ingest]` in veredicto.toml) is the one
/// `exam --gate-ingest` and `gate` judge the batch by, as the exam itself does; before,
/// both judged by `--policy` only and blocked.
#[test]
fn gate_ingest_and_gate_use_the_project_policy() {
    let dir = tempfile::tempdir().unwrap();
    let c = corpus(dir.path(), true);
    let index = dir.path().join("kb");
    assert_eq!(
        ingest(&c, index.to_str().unwrap(), "b1").status.code(),
        Some(0)
    );
    write(
        dir.path(),
        "golden.jsonl",
        r#"{"id":"q1","query":"chunk 0","expected":["c00"],"top_k":3,"query_vector":[1,20,1]}
"#,
    );
    write(
        dir.path(),
        "veredicto.toml",
        "golden = \"golden.jsonl\"\n\n[source]\nindex = \"kb\"\n\n[policy]\nrecall_floor = 0.5\n\n[policy.ingest]\nmax_rejected = 10\n",
    );
    let o = veredicto_in(
        dir.path(),
        &["exam", "--gate-ingest", "--json", "--no-record"],
    );
    // The gate lets the batch through; the exam runs (and gives its own verdict).
    assert!(
        !stderr(&o).contains("ingestion gate: BLOCKED"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("\"cases\""), "{}", stderr(&o));
    let o = veredicto_in(dir.path(), &["gate", "--index", "kb"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

/// Copies the files of an index folder (no subfolders) to `to`.
fn copy_index(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// `gate accept` records the acceptance in the run history too (append-only, with who,
/// when, the index, the batch and the accepted lines); the gate honours an acceptance found
/// in either place and says where; `history acceptances` lists them; `history check`
/// counts them; `history migrate` carries them.
#[test]
fn an_acceptance_is_recorded_in_the_history_and_honoured_from_there() {
    let dir = tempfile::tempdir().unwrap();
    let kb = dir.path().join("kb");
    let c = corpus(dir.path(), true);
    assert_eq!(
        ingest(&c, kb.to_str().unwrap(), "nightly-1").status.code(),
        Some(0)
    );
    // The same batch in another folder, copied before the acceptance: its manifest has none.
    let copy = dir.path().join("copy");
    copy_index(&kb, &copy);
    let history = dir.path().join("team/history.db");
    let history = history.to_str().unwrap();

    let o = std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args([
            "gate",
            "accept",
            "--index",
            "kb",
            "--reason",
            "export bug, ticket 12",
        ])
        .args(["--history", history])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("USER", "ana")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("recorded in the history {history} as ")),
        "{}",
        stdout(&o)
    );

    // The copy passes on the history's acceptance alone, and says so.
    let copy_s = copy.to_str().unwrap();
    let o = veredicto(&[
        "gate",
        "--index",
        copy_s,
        "--history",
        history,
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["status"], "accepted");
    assert_eq!(j["accepted"]["reason"], "export bug, ticket 12");
    assert_eq!(
        j["accepted_in"],
        serde_json::json!([format!("history {history}")])
    );
    let o = veredicto(&["gate", "--index", copy_s, "--history", history]);
    assert!(
        stdout(&o).contains(&format!("acceptance found in: history {history}")),
        "{}",
        stdout(&o)
    );
    // Without that history it is blocked; the accepted index itself has both records.
    let other = dir.path().join("other.db");
    let o = veredicto(&[
        "gate",
        "--index",
        copy_s,
        "--history",
        other.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(!other.exists(), "the gate only reads a history");
    let o = veredicto(&[
        "gate",
        "--index",
        kb.to_str().unwrap(),
        "--history",
        history,
        "--format",
        "json",
    ]);
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        j["accepted_in"],
        serde_json::json!(["index manifest", format!("history {history}")])
    );

    // exam --gate-ingest on the copy: goes on, naming where the acceptance is.
    let golden = write(
        dir.path(),
        "golden.jsonl",
        r#"{"id":"q1","query":"chunk 0","expected":["c00"],"top_k":3,"query_vector":[1,20,1]}
"#,
    );
    let o = veredicto(&[
        "exam",
        "--index",
        copy_s,
        "--golden",
        &golden,
        "--json",
        "--no-record",
        "--gate-ingest",
        "--history",
        history,
    ]);
    assert!(stdout(&o).contains("\"cases\""), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("acceptance found in: history {history}")),
        "{}",
        stderr(&o)
    );

    // The listing, for people and as JSON.
    let o = veredicto(&["history", "acceptances", "--history", history]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("1 gate acceptance\n"), "{text}");
    assert!(
        text.contains(
            "by ana: index kb, batch nightly-1: 6 rejected lines accepted: export bug, ticket 12"
        ),
        "{text}"
    );
    assert!(
        text.contains("corpus.jsonl:25: field `vector`: wrong_dimension"),
        "{text}"
    );
    let o = veredicto(&["history", "acceptances", "--history", history, "--json"]);
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let a = &j["acceptances"][0];
    assert_eq!(a["index"], "kb");
    assert_eq!(a["batch"], "nightly-1");
    assert_eq!(a["who"], "ana");
    assert_eq!(a["rejected"], 6);
    assert_eq!(a["rejections"].as_array().unwrap().len(), 6);
    assert_eq!(a["rejections"][3]["reason"], "empty_text");
    assert!(a["batch_fingerprint"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));

    // Checked and migrated with the rest of the history.
    let o = veredicto(&["history", "check", "--history", history]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("gate acceptances: 1"), "{}", stdout(&o));
    let moved = dir.path().join("moved.db");
    let moved = moved.to_str().unwrap();
    let o = veredicto(&[
        "history", "migrate", "--from", history, "--to", moved, "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["gate_acceptances_copied"], 1);
    let o = veredicto(&["gate", "--index", copy_s, "--history", moved]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}
