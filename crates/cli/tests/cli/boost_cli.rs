//! A declared boost policy end to end: the exam reranks the vector search's candidates by
//! the boosted score, reports both orders per case and which gold chunks emerge only thanks
//! to the boost, and the boost is part of the policy fingerprint.

use crate::common;
use common::*;
use serde_json::Value;

fn setup(dir: &std::path::Path) -> (String, String, String) {
    let corpus = [
        r#"{"id":"a","text":"near","vector":[1,0.1,0]}"#,
        r#"{"id":"b","text":"nearer than gold","vector":[1,0.3,0]}"#,
        r#"{"id":"g","text":"curated synthesis","labels":["SINTESIS_CURADA"],"vector":[1,0.6,0]}"#,
        r#"{"id":"z","text":"far","vector":[0,0,1]}"#,
    ]
    .join("\n");
    let c = write(dir, "corpus.jsonl", &(corpus + "\n"));
    let index = dir.join("kb").to_str().unwrap().to_owned();
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &c,
        "--index",
        &index,
        "--time",
        "2025-11-14T00:00:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let golden = write(
        dir,
        "golden.jsonl",
        r#"{"id":"q1","query":"synthesis","expected":["g"],"top_k":2,"query_vector":[1,0,0]}
"#,
    );
    (index, golden, c)
}

fn exam(index: &str, golden: &str, policy: &str, json: bool) -> std::process::Output {
    let mut a = vec![
        "exam",
        "--index",
        index,
        "--golden",
        golden,
        "--policy",
        policy,
        "--no-record",
    ];
    if json {
        a.push("--json");
    }
    veredicto(&a)
}

#[test]
fn gold_chunk_emerges_only_thanks_to_the_declared_boost() {
    let dir = tempfile::tempdir().unwrap();
    let (index, golden, _) = setup(dir.path());
    let plain = write(dir.path(), "plain.toml", "require_notes = false\n");
    let boosted = write(
        dir.path(),
        "boost.toml",
        "require_notes = false\n\n[[boost.rules]]\nlabel = \"SINTESIS_CURADA\"\nfactor = 1.2\n",
    );
    let o = exam(&index, &golden, &plain, true);
    let without: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(without["cases"][0]["recall"], 0.0, "{}", stdout(&o));
    assert!(without.get("boost").is_none());

    let o = exam(&index, &golden, &boosted, true);
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "{}",
        stderr(&o)
    );
    let with: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(with["cases"][0]["recall"], 1.0);
    let b = &with["boost"][0];
    assert_eq!(b["vector_order"], serde_json::json!(["a", "b"]));
    assert_eq!(b["boosted_order"], serde_json::json!(["g", "a"]));
    assert_eq!(b["only_with_boost"], serde_json::json!(["g"]));
    assert_eq!(b["gold_only_with_boost"], serde_json::json!(["g"]));
    let stages: Vec<&str> = with["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["retrieval", "boost"]);
    assert_ne!(with["policy_fingerprint"], without["policy_fingerprint"]);
    assert_eq!(with["policy"]["boost"]["rules"][0]["factor"], 1.2);

    let o = exam(&index, &golden, &boosted, false);
    let text = stdout(&o);
    assert!(
        text.contains("q1: vector [a, b] -> boosted [g, a]; only thanks to the boost: g (gold)"),
        "{text}"
    );
    assert!(
        text.contains("boost: mean recall vector only 0.000 · vector + boost 1.000"),
        "{text}"
    );
}

#[test]
fn a_bad_boost_rule_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let (index, golden, _) = setup(dir.path());
    let bad = write(
        dir.path(),
        "bad.toml",
        "[[boost.rules]]\nlabel = \"SINTESIS_CURADA\"\nfactor = 1.2\nadd = 0.1\n",
    );
    let o = exam(&index, &golden, &bad, true);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.toml:1: field `boost.rules[0]`"),
        "{}",
        stderr(&o)
    );
}
