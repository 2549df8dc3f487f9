//! `veredicto audit`: the worked examples of seeds 002 and 004 end to end, validation exit
//! codes, the append-only review log, packages and their verification.

use crate::common;
/// Tiny random-weight model folders (shared with veredicto-embed's tests, read-only reuse).
use crate::tiny;
use common::{stderr, stdout, veredicto, veredicto_in, workspace};
use std::path::{Path, PathBuf};

fn grounding(name: &str) -> String {
    workspace()
        .join("examples/grounding")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Copies an example into `dir` (reviews are written beside the cases).
fn copy_example(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(grounding(name), &to).expect("copy");
    to
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn check_p7_reproduces_seed_002() {
    let o = veredicto(&[
        "audit",
        "check",
        &grounding("p7.yaml"),
        "--k",
        "2,3,4",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let answers = v["answers"].as_array().expect("answers");
    let got: Vec<(String, f64, f64, f64)> = answers
        .iter()
        .map(|a| {
            let m = &a["metrics"];
            let r = |k: &str| (m[k].as_f64().expect(k) * 1000.0).round() / 10.0;
            (
                m["answer"].as_str().unwrap_or("").to_string(),
                r("citation_presence"),
                r("support"),
                r("coverage"),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("A".to_string(), 100.0, 33.3, 33.3),
            ("B".to_string(), 100.0, 100.0, 33.3),
            ("C".to_string(), 100.0, 100.0, 100.0)
        ]
    );
    let recall: Vec<f64> = answers[0]["document_recall"]
        .as_array()
        .expect("recall")
        .iter()
        .map(|x| x["value"].as_f64().expect("value"))
        .collect();
    assert_eq!(recall, vec![0.0, 0.5, 1.0]);
}

#[test]
fn check_human_output_and_policy_exit_1() {
    let o = veredicto(&["audit", "check", &grounding("p7.yaml"), "--k", "2,3,4"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(
        out.contains("document recall  @2 0.0%  @3 50.0%  @4 100.0%"),
        "{out}"
    );
    // Half the valid documents at k = 3, but only a third of the three facts.
    assert!(
        out.contains("facts retrieved  @2 0/3  @3 1/3 (G1)  @4 3/3 (G1, G2, G3)"),
        "{out}"
    );
    assert!(
        out.contains(
            "answer A        n=3  citation presence 100.0%  support 33.3%  coverage 33.3%"
        ),
        "{out}"
    );

    let o = veredicto(&[
        "audit",
        "check",
        &grounding("q017.yaml"),
        "--policy",
        &grounding("policy.toml"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("citation presence 75.0%  support 25.0%  coverage 33.3%"),
        "{out}"
    );
    assert!(
        out.contains("policy missed: support 25.0% < 90.0%"),
        "{out}"
    );
    // Fact coverage of the retrieved list, and the honest absence listed and counted.
    assert!(
        out.contains("  facts retrieved  @1 2/3 (F1, F2)  @2 3/3 (F1, F2, F3)\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "  absence U1: the sources do not say cuánto tarda en completarse el reembolso\n"
        ),
        "{out}"
    );
    assert!(out.contains("unreviewed, 1 absences"), "{out}");
    let o = veredicto(&["audit", "check", &grounding("q017.yaml"), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["totals"]["absences"], 1);
    assert_eq!(
        v["absences"][0]["lacking"],
        "cuánto tarda en completarse el reembolso"
    );
    assert_eq!(
        v["absences"][0]["sources"],
        serde_json::json!(["D-02@refunds-v2"])
    );
}

#[test]
fn invalid_cases_exit_2_naming_file_line_and_field() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = std::fs::read_to_string(grounding("q017.yaml"))
        .expect("read")
        .replace("citations: [D-02]", "citations: [D-09]");
    let p = dir.path().join("bad.yaml");
    std::fs::write(&p, text).expect("write");
    let o = veredicto(&["audit", "check", s(&p)]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad.yaml"), "{err}");
    assert!(
        err.contains("cases[0].answers[0].claims[2].citations[0] (citations)"),
        "{err}"
    );
    assert!(err.contains("unknown citation id `D-09`"), "{err}");
    assert!(err.contains("line 70:"), "{err}");

    let text = std::fs::read_to_string(grounding("q017.yaml"))
        .expect("read")
        .replace("verdict: supported", "verdict: plausible");
    std::fs::write(&p, text).expect("write");
    let o = veredicto(&["audit", "check", s(&p)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("plausible"), "{}", stderr(&o));
}

#[test]
fn sheet_csv_has_one_row_per_claim_with_separate_association_and_support() {
    let o = veredicto(&["audit", "sheet", &grounding("q017.yaml"), "--format", "csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let mut r = csv_rows(&out);
    let header = r.remove(0);
    // Four claims, then the honest absence on its own row.
    assert_eq!(r.len(), 5);
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    assert_eq!(r[4][col("row")], "absence");
    assert_eq!(r[4][col("claim_id")], "U1");
    assert_eq!(
        r[4][col("lacking")],
        "cuánto tarda en completarse el reembolso"
    );
    assert!(r[4][col("query")].starts_with("¿Puedo devolver"));
    assert_eq!(r[0][col("locations")], "/returns#plazo-de-devolucion");
    let (a, sp) = (col("association"), col("support"));
    let got: Vec<(&str, &str)> = r.iter().map(|x| (x[a].as_str(), x[sp].as_str())).collect();
    assert_eq!(
        got,
        vec![
            ("attached", "unsupported"),
            ("attached", "supported"),
            ("attached", "unsupported"),
            ("not_attached", "unsupported"),
            ("", "")
        ]
    );
    for f in ["json", "markdown", "html"] {
        let o = veredicto(&["audit", "sheet", &grounding("q017.yaml"), "--format", f]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).contains("C-017-4"));
    }
}

/// A tiny CSV reader for the test (quoted fields with doubled quotes).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => field.push(c),
        }
    }
    rows
}

#[test]
fn review_appends_and_a_disagreeing_reviewer_is_an_annex() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let o = veredicto(&[
        "audit",
        "review",
        s(&cases),
        "--claim",
        "C-017-2",
        "--support",
        "partially_supported",
        "--reason",
        "omite el alcance: compras directas, desde la entrega",
        "--reviewer",
        "ana",
        "--time",
        "2026-11-30T10:00:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("annex (disagrees with supported)"),
        "{}",
        stderr(&o)
    );
    let log = dir.path().join("q017.yaml.reviews.jsonl");
    let first = std::fs::read_to_string(&log).expect("log");
    assert_eq!(first.lines().count(), 1);

    // not_evaluable without a reason, unknown claims and verdicts: exit 2, nothing appended.
    for bad in [
        vec![
            "--claim",
            "C-017-4",
            "--support",
            "not_evaluable",
            "--reason",
            " ",
        ],
        vec![
            "--claim",
            "C-999",
            "--support",
            "unsupported",
            "--reason",
            "x",
        ],
        vec!["--claim", "C-017-4", "--support", "wrong", "--reason", "x"],
    ] {
        let mut args = vec!["audit", "review", s(&cases), "--reviewer", "bo"];
        args.extend(bad);
        let o = veredicto(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read_to_string(&log).expect("log"), first);

    let o = veredicto(&[
        "audit",
        "review",
        s(&cases),
        "--claim",
        "C-017-2",
        "--support",
        "supported",
        "--reason",
        "el plazo es el de la afirmación",
        "--reviewer",
        "bo",
        "--time",
        "2026-11-30T11:00:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let second = std::fs::read_to_string(&log).expect("log");
    assert!(second.starts_with(&first), "append-only");
    assert_eq!(second.lines().count(), 2);

    // The original row stays; the sheet shows the history; metrics keep the original.
    let o = veredicto(&["audit", "sheet", s(&cases), "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(rows[1]["support"], "supported");
    let annexes = rows[1]["annexes"].as_array().expect("annexes");
    assert_eq!(annexes.len(), 2);
    assert!(annexes[0]
        .as_str()
        .unwrap_or("")
        .contains("ana: partially_supported"));
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert!(stdout(&o).contains("support 25.0%"));

    // Two annexes on C-017-2 against `supported`: one disagrees, one agrees.
    let o = veredicto(&["audit", "agreement", s(&cases), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["agreement"]["pairs"], 2);
    assert_eq!(v["agreement"]["observed"], 0.5);
    assert_eq!(v["agreement"]["matrix"][0], serde_json::json!([1, 1, 0, 0]));
}

#[test]
fn package_dir_and_tar_gz_verify_and_detect_tampering() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "p7.yaml");
    let out = dir.path().join("pkg");
    let o = veredicto_in(
        dir.path(),
        &["audit", "package", s(&cases), "--out", s(&out)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for f in [
        "manifest.json",
        "manifest.sha256",
        "cases/p7.yaml",
        "retrieval.jsonl",
        "sheet.csv",
        "schema.json",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let o = veredicto(&["audit", "verify", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));

    let tgz = dir.path().join("p.tar.gz");
    let tgz2 = dir.path().join("q.tar.gz");
    for t in [&tgz, &tgz2] {
        let o = veredicto(&["audit", "package", s(&cases), "--out", s(t)]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(
        std::fs::read(&tgz).expect("a"),
        std::fs::read(&tgz2).expect("b"),
        "deterministic"
    );
    assert_eq!(
        veredicto(&["audit", "verify", s(&tgz)]).status.code(),
        Some(0)
    );

    std::fs::write(out.join("sheet.csv"), "tampered").expect("write");
    std::fs::write(out.join("extra.txt"), "x").expect("write");
    std::fs::remove_file(out.join("answers.json")).expect("rm");
    let o = veredicto(&["audit", "verify", s(&out)]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(text.contains("changed: sheet.csv"), "{text}");
    assert!(text.contains("extra file: extra.txt"), "{text}");
    assert!(text.contains("missing file: answers.json"), "{text}");

    let o = veredicto(&["audit", "verify", s(&dir.path().join("nope"))]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn impact_lists_claims_whose_cited_passage_changed() {
    let o = veredicto(&[
        "audit",
        "impact",
        &grounding("q017.yaml"),
        "--sources",
        &grounding("q017-sources-v5.yaml"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "Q-017 A-017 C-017-3 [D-02] D-02#p07 refunds-v2 -> refunds-v3: passage text changed"
        ),
        "{out}"
    );
    assert!(out.contains("1 claim citation(s) to re-review"), "{out}");
    assert!(!out.contains("C-017-1"), "{out}");
    // The honest absence is reopened: /refunds changed and may now give the duration.
    assert!(
        out.contains("Q-017 absence U1 reopened: D-02 refunds-v2 -> refunds-v3 (new version, passages changed) may now say: cuánto tarda en completarse el reembolso"),
        "{out}"
    );
    assert!(out.contains("1 absence(s) to answer again"), "{out}");
}

/// SciFact dev (real data from `tests/data`): converted, checked and sheeted.
#[test]
fn scifact_dev_converts_checks_and_sheets() {
    let d = common::test_data().join("scifact/original");
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("scifact_dev.yaml");
    let o = veredicto(&[
        "audit",
        "from-scifact",
        "--corpus",
        s(&d.join("corpus.jsonl")),
        "--claims",
        s(&d.join("claims_dev.jsonl")),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("300 cases, 188 with rationale evidence"));
    let o = veredicto(&["audit", "check", s(&out), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(
        v["totals"],
        serde_json::json!({"answers": 300, "abstentions": 0, "claims": 300,
                           "with_citation": 300, "supported": 124, "unreviewed": 0,
                           "absences": 0, "relevance": {"judged": 0, "addresses": 0,
                           "partly": 0, "off_topic": 0},
                           "citation_precision": {"marked": 0, "necessary": 0, "redundant": 0,
                                                  "irrelevant": 0, "precision": null}})
    );
    let o = veredicto(&["audit", "sheet", s(&out), "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(rows.as_array().map(Vec::len), Some(300));
}

#[test]
fn compare_a_replay_and_package_the_comparison() {
    let o = veredicto(&[
        "audit",
        "compare",
        &grounding("q017.yaml"),
        &grounding("q017-replay.yaml"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("Q-017 A-017 -> A-017-r2: citation presence 75.0% -> 100.0%  support 25.0% -> 100.0%  coverage 33.3% -> 100.0%"),
        "{out}"
    );
    assert!(
        out.contains("1 answer(s) compared, 0 not compared"),
        "{out}"
    );
    // What the replay changed, and its absence kept.
    assert!(
        out.contains("  generation model changed: example-llm-2026-05 → example-llm-2026-07\n"),
        "{out}"
    );
    assert!(
        out.contains("  prompt version changed: answer-v3 → answer-v4-bounded\n"),
        "{out}"
    );
    assert!(
        out.contains("  absences: 1 -> 1 (U1: cuánto tarda en completarse el reembolso)"),
        "{out}"
    );

    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("pkg");
    let o = veredicto(&[
        "audit",
        "package",
        &grounding("q017-replay.yaml"),
        "--previous",
        &grounding("q017.yaml"),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.join("comparison.json").exists());
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("json");
    let missing: Vec<&str> = m["missing"]
        .as_array()
        .expect("missing")
        .iter()
        .filter_map(|x| x["part"].as_str())
        .collect();
    assert_eq!(missing, vec!["notes.md", "reviews.jsonl"]);
    assert_eq!(
        veredicto(&["audit", "verify", s(&out)]).status.code(),
        Some(0)
    );
}

#[test]
fn suggest_with_a_tiny_nli_model_is_stored_beside_the_verdicts() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let model = dir.path().join("nli");
    tiny::write_model(
        &model,
        &tiny::Spec {
            head: tiny::Head::Bert(3),
            ..tiny::Spec::default()
        },
    );
    let o = veredicto(&[
        "audit",
        "suggest",
        s(&cases),
        "--nli",
        s(&model),
        "--time",
        "2026-11-30T10:00:00Z",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let recs: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let recs = recs.as_array().expect("array");
    // C-017-4 has no citation: no premise, no suggestion.
    let claims: Vec<&str> = recs.iter().filter_map(|r| r["claim"].as_str()).collect();
    assert_eq!(claims, vec!["C-017-1", "C-017-2", "C-017-3"]);
    for r in recs {
        let p = r["probabilities"].as_object().expect("probabilities");
        let sum: f64 = p.values().filter_map(|v| v.as_f64()).sum();
        assert!((sum - 1.0).abs() < 1e-6, "{sum}");
        assert!(r["model"].as_str().unwrap_or("").contains("sha256:"));
        let label = r["label"].as_str().unwrap_or("");
        let want = if label == "entailment" {
            "supported"
        } else {
            "unsupported"
        };
        assert_eq!(r["suggestion"], want);
    }
    let log = std::fs::read_to_string(dir.path().join("q017.yaml.suggestions.jsonl")).expect("log");
    assert_eq!(log.lines().count(), 3);
    // The case file and its verdicts are untouched.
    assert_eq!(
        std::fs::read(&cases).expect("cases"),
        std::fs::read(grounding("q017.yaml")).expect("orig")
    );
    let o = veredicto(&["audit", "agreement", s(&cases), "--suggestions", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["agreement"]["pairs"], 3);

    // A model without NLI labels is refused (exit 2).
    let plain = dir.path().join("plain");
    tiny::write_model(
        &plain,
        &tiny::Spec {
            head: tiny::Head::Bert(1),
            ..tiny::Spec::default()
        },
    );
    let o = veredicto(&["audit", "suggest", s(&cases), "--nli", s(&plain)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not an NLI model"), "{}", stderr(&o));
}

#[test]
fn check_as_markdown_for_a_pull_request_comment() {
    let o = veredicto(&[
        "audit",
        "check",
        &grounding("q017.yaml"),
        "--format",
        "markdown",
    ]);
    let text = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(text.starts_with("# Grounding check: "), "{text}");
    assert!(text.contains("q017.yaml"), "{text}");
    assert!(text.contains("\n|"), "a Markdown table: {text}");
}
