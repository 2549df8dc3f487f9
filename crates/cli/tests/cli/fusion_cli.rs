//! Hybrid retrieval from the command line: `ingest --bm25`, a `fusion:` retriever with its
//! arms given by `--arm` (or `VEREDICTO_ARMS`, or `[retriever] arms` of veredicto.toml),
//! the fused ranking `--save-run` writes, and the report's per-arm section in every format.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;

const TEXTS: [(&str, &str); 8] = [
    ("c0", "The cat sat on the mat"),
    ("c1", "Cats and dogs are running in the park"),
    ("c2", "A dog runs after the cat"),
    ("c3", "Quantum mechanics of running particles"),
    ("c4", "The mat was red and the cat was black"),
    ("c5", "Dogs, dogs, dogs: a study of dog behaviour"),
    ("c6", "Nothing in common with the others"),
    ("c7", "Parks and recreation for dogs and cats"),
];

/// A corpus with its own vectors (no model needed), and a golden set whose queries carry
/// theirs: case `lex` is found by words only, `vec` by its vector only, `both` by both.
fn fixture(dir: &Path) -> (String, String) {
    let corpus: String = TEXTS
        .iter()
        .enumerate()
        .map(|(i, (id, text))| {
            let v = [
                1.0 + i as f64,
                (i % 3) as f64 - 1.0,
                ((i * 7) % 5) as f64 * 0.3,
            ];
            format!(
                "{}\n",
                serde_json::json!({"id": id, "text": text, "vector": v})
            )
        })
        .collect();
    let corpus = write(dir, "corpus.jsonl", &corpus);
    let golden = write(
        dir,
        "golden.jsonl",
        concat!(
            r#"{"id":"lex","query":"quantum particles","expected":["c3"],"top_k":2,"query_vector":[0,1,0]}"#,
            "\n",
            r#"{"id":"vec","query":"zzz unknown words","expected":["c6"],"top_k":2,"query_vector":[0.9,-0.1,0.05]}"#,
            "\n",
            r#"{"id":"both","query":"dogs behaviour","expected":["c5"],"top_k":2,"query_vector":[0.75,0.95,0.05]}"#,
            "\n",
        ),
    );
    (corpus, golden)
}

fn ingest(dir: &Path, corpus: &str, extra: &[&str]) -> std::process::Output {
    let index = dir.join("kb").display().to_string();
    let mut a = vec![
        "ingest",
        "--corpus",
        corpus,
        "--index",
        &index,
        "--time",
        "2025-11-14T00:00:00Z",
        "--json",
    ];
    a.extend_from_slice(extra);
    veredicto_in(dir, &a)
}

fn json(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn snapshot(dir: &Path, name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    let tmp = dir.display().to_string();
    let escaped: String = tmp
        .chars()
        .flat_map(|c| {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                vec!['\\', c]
            } else {
                vec![c]
            }
        })
        .collect();
    settings.add_filter(&escaped, "[TMP]");
    settings.add_filter(r"(?m)^latency .*\n", "");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// Two run files with scores on different scales: the BM25-like one finds `c3`, the
/// cosine-like one `c6`; both find `c5`.
fn runs(dir: &Path) -> (String, String) {
    let lexical = write(
        dir,
        "lexical.trec",
        "lex Q0 c3 1 7.5 bm25\nlex Q0 c0 2 2.0 bm25\nvec Q0 c1 1 1.5 bm25\nvec Q0 c2 2 1.0 bm25\nboth Q0 c5 1 9.0 bm25\nboth Q0 c1 2 3.0 bm25\nboth Q0 c7 3 2.5 bm25\n",
    );
    let dense = write(
        dir,
        "dense.trec",
        "lex Q0 c0 1 0.91 dense\nlex Q0 c4 2 0.85 dense\nvec Q0 c6 1 0.97 dense\nvec Q0 c2 2 0.80 dense\nboth Q0 c7 1 0.88 dense\nboth Q0 c5 2 0.86 dense\n",
    );
    (lexical, dense)
}

fn exam_runs(dir: &Path, golden: &str, extra: &[&str]) -> std::process::Output {
    let (lexical, dense) = runs(dir);
    let (a1, a2) = (format!("run:{lexical}"), format!("run:{dense}"));
    let mut a = vec![
        "exam",
        "--golden",
        golden,
        "--retriever",
        "fusion:rrf?k=60",
        "--arm",
        &a1,
        "--arm",
        &a2,
        "--no-record",
        "--as-of",
        "2025-11-14",
    ];
    a.extend_from_slice(extra);
    veredicto_in(dir, &a)
}

#[test]
fn ingest_builds_updates_and_drops_the_bm25_arm() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, _) = fixture(dir.path());
    let o = ingest(dir.path(), &corpus, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&o)["bm25"], Value::Null, "no arm unless asked for");
    let o = ingest(dir.path(), &corpus, &["--bm25", "english"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["unchanged"], false, "adding the arm is a change");
    assert_eq!(v["bm25"]["analyzer"], "english");
    assert_eq!(v["bm25"]["analysed"], 8);
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("kb/manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["lexical"]["analyzer"], "english");
    // The same corpus again keeps the arm and changes nothing.
    let o = ingest(dir.path(), &corpus, &[]);
    let v = json(&o);
    assert_eq!(v["unchanged"], true, "{v}");
    assert_eq!(v["bm25"]["analyzer"], "english");
    // Another analyser rebuilds it; `none` drops it.
    let v = json(&ingest(dir.path(), &corpus, &["--bm25", "spanish"]));
    assert_eq!(v["bm25"]["analyzer"], "spanish");
    assert_eq!(v["bm25"]["rebuilt"], true);
    let v = json(&ingest(dir.path(), &corpus, &["--bm25", "none"]));
    assert_eq!(v["bm25"], Value::Null);
    let o = ingest(dir.path(), &corpus, &["--bm25", "klingon"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("expected english, spanish or none"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_fusion_of_the_index_arms_examines_with_per_arm_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, golden) = fixture(dir.path());
    let o = ingest(dir.path(), &corpus, &["--bm25", "english"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let kb = dir.path().join("kb").display().to_string();
    let (bm25, vector) = (format!("index:{kb}?mode=bm25"), format!("index:{kb}"));
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &golden,
            "--retriever",
            "fusion:rrf?k=60",
            "--arm",
            &bm25,
            "--arm",
            &vector,
            "--no-record",
            "--json",
        ],
    );
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    let v = json(&o);
    let f = &v["fusion"];
    assert_eq!(f["method"], "rrf?k=60");
    assert_eq!(f["arms"].as_array().unwrap().len(), 2);
    assert_eq!(f["arms"][0]["uri"], bm25);
    assert_eq!(f["arms"][1]["kind"], "index");
    assert!(f["arms"][0].get("latency").is_none(), "only with --timings");
    // Found by words alone: only the BM25 arm finds `lex`.
    assert_eq!(
        f["arms"][0]["only_found"],
        serde_json::json!(["lex"]),
        "{f}"
    );
    // Byte-identical JSON on a second run.
    let again = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &golden,
            "--retriever",
            "fusion:rrf?k=60",
            "--arm",
            &bm25,
            "--arm",
            &vector,
            "--no-record",
            "--json",
        ],
    );
    assert_eq!(stdout(&again), stdout(&o));
    // The same fusion from `search`.
    let o = veredicto_in(
        dir.path(),
        &[
            "search",
            "--retriever",
            "fusion:rrf?k=60",
            "--arm",
            &bm25,
            "--arm",
            &bm25,
            "quantum particles",
            "-k",
            "2",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["results"][0]["id"], "c3", "{v}");
    // Both arms at rank 1: 2 / 61.
    assert_eq!(v["results"][0]["score"].as_f64(), Some(2.0 / 61.0));
}

#[test]
fn the_fusion_section_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let (_, golden) = fixture(dir.path());
    let o = exam_runs(dir.path(), &golden, &[]);
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    snapshot(dir.path(), "fusion_exam_human", &stdout(&o));
    let o = exam_runs(dir.path(), &golden, &["--format", "markdown"]);
    snapshot(dir.path(), "fusion_exam_markdown", &stdout(&o));
    let o = exam_runs(dir.path(), &golden, &["--json"]);
    let v = json(&o);
    snapshot(
        dir.path(),
        "fusion_exam_json",
        &serde_json::to_string_pretty(&v["fusion"]).unwrap(),
    );
    assert_eq!(
        v["fusion"]["arms"][0]["only_found"],
        serde_json::json!(["lex"])
    );
    assert_eq!(
        v["fusion"]["arms"][1]["only_found"],
        serde_json::json!(["vec"])
    );
    // With --timings each arm's time is in the JSON.
    let o = exam_runs(dir.path(), &golden, &["--json", "--timings"]);
    let v = json(&o);
    let l = &v["fusion"]["arms"][1]["latency"];
    assert_eq!(l["cases"], 3, "{l}");
    assert!(l["total_ms"].as_f64().is_some_and(|ms| ms >= 0.0));
    // And in the HTML report of the recorded run.
    let history = dir.path().join("h.db").display().to_string();
    let (lexical, dense) = runs(dir.path());
    let (a1, a2) = (format!("run:{lexical}"), format!("run:{dense}"));
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &golden,
            "--retriever",
            "fusion:rrf?k=60",
            "--arm",
            &a1,
            "--arm",
            &a2,
            "--history",
            &history,
            "--as-of",
            "2025-11-14",
        ],
    );
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    let html = dir.path().join("r.html").display().to_string();
    let o = veredicto_in(
        dir.path(),
        &[
            "report",
            "--history",
            &history,
            "--format",
            "html",
            "--out",
            &html,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2 id=\"fusion-h\">Fusion <code>rrf?k=60</code></h2>"));
    assert!(page.contains("<a href=\"#fusion\">Fusion</a>"));
}

#[test]
fn save_run_writes_the_fused_ranking_with_its_scores() {
    let dir = tempfile::tempdir().unwrap();
    let (_, golden) = fixture(dir.path());
    let saved = dir.path().join("fused.jsonl");
    let saved_s = saved.display().to_string();
    let o = exam_runs(dir.path(), &golden, &["--save-run", &saved_s]);
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    let text = std::fs::read_to_string(&saved).unwrap();
    let both: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["qid"] == "both" || v["id"] == "both" || v["query_id"] == "both")
        .unwrap_or_else(|| panic!("{text}"));
    let results = both
        .as_object()
        .unwrap()
        .values()
        .find(|v| v.is_array())
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    let ids: Vec<&str> = results.iter().map(|r| r["id"].as_str().unwrap()).collect();
    // c5: ranks 1 and 2; c7: ranks 3 and 1; c1: rank 2 of the first arm only.
    assert_eq!(ids, ["c5", "c7", "c1"], "{text}");
    assert_eq!(results[0]["score"].as_f64(), Some(1.0 / 61.0 + 1.0 / 62.0));
    assert_eq!(results[1]["score"].as_f64(), Some(1.0 / 63.0 + 1.0 / 61.0));
}

#[test]
fn arms_come_from_the_flags_the_environment_or_the_project_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, golden) = fixture(dir.path());
    runs(dir.path());
    write(
        dir.path(),
        "veredicto.toml",
        "[source]\nretriever = \"fusion:combsum?norm=min-max\"\n\n[retriever]\narms = [\"run:lexical.trec\", \"run:dense.trec\"]\n",
    );
    let exam = |extra: &[&str], env: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"));
        c.args(["exam", "--golden", &golden, "--no-record", "--json"])
            .args(extra)
            .current_dir(dir.path())
            .env("NO_COLOR", "1");
        if let Some(arms) = env {
            c.env("VEREDICTO_ARMS", arms);
        }
        let o = c.output().unwrap();
        assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
        let v = json(&o);
        v["fusion"]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                a["uri"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    // The project file's arms, relative to its folder.
    assert_eq!(exam(&[], None), ["lexical.trec", "dense.trec"]);
    // The environment over the file, the flags over both.
    let d = dir.path().join("dense.trec").display().to_string();
    let l = dir.path().join("lexical.trec").display().to_string();
    let env = format!("run:{d} | run:{l} | run:{d}");
    assert_eq!(
        exam(&[], Some(&env)),
        ["dense.trec", "lexical.trec", "dense.trec"]
    );
    let (a1, a2) = (format!("run:{l}"), format!("run:{l}"));
    assert_eq!(
        exam(&["--arm", &a1, "--arm", &a2], Some(&env)),
        ["lexical.trec", "lexical.trec"]
    );
}

#[test]
fn arms_without_a_fusion_and_a_fusion_without_arms_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_, golden) = fixture(dir.path());
    let (lexical, _) = runs(dir.path());
    let arm = format!("run:{lexical}");
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &golden,
            "--run",
            &lexical,
            "--arm",
            &arm,
            "--no-record",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--arm gives the arms of a fusion"),
        "{}",
        stderr(&o)
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &golden,
            "--retriever",
            "fusion:rrf",
            "--arm",
            &arm,
            "--no-record",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--arm URI"), "{}", stderr(&o));
    // A weighted sum with the wrong number of weights names it.
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &golden,
            "--retriever",
            "fusion:wsum?w=0.5,0.3,0.2",
            "--arm",
            &arm,
            "--arm",
            &arm,
            "--no-record",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

/// Twelve cases, two arms as run files: the first finds each case's expected chunk at rank
/// 1 in two cases out of three, the second always at rank 2 (and the first's top result at
/// rank 1), so a weighted sum leaning on the first arm wins.
fn tune_fixture(dir: &Path) -> (String, String, String) {
    let mut golden = String::new();
    let (mut a, mut b) = (String::new(), String::new());
    for i in 0..12 {
        golden.push_str(&format!(
            "{}\n",
            serde_json::json!({"id": format!("q{i:02}"), "query": format!("question {i}"), "expected": [format!("e{i}")], "top_k": 1})
        ));
        let first = if i % 3 == 0 {
            [format!("x{i}"), format!("e{i}")]
        } else {
            [format!("e{i}"), format!("x{i}")]
        };
        for (r, id) in first.iter().enumerate() {
            a.push_str(&format!(
                "q{i:02} Q0 {id} {} {} a\n",
                r + 1,
                10.0 - r as f64 * 3.0
            ));
        }
        for (r, id) in [format!("x{i}"), format!("e{i}"), format!("y{i}")]
            .iter()
            .enumerate()
        {
            b.push_str(&format!(
                "q{i:02} Q0 {id} {} {} b\n",
                r + 1,
                0.9 - r as f64 * 0.1
            ));
        }
    }
    (
        write(dir, "golden.jsonl", &golden),
        write(dir, "a.trec", &a),
        write(dir, "b.trec", &b),
    )
}

#[test]
fn tune_chooses_on_the_training_part_and_reports_the_held_out_part() {
    let dir = tempfile::tempdir().unwrap();
    let (golden, a, b) = tune_fixture(dir.path());
    let (a1, a2) = (format!("run:{a}"), format!("run:{b}"));
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "top_k = 1\nrequire_notes = false\n").unwrap();
    let policy_s = policy.display().to_string();
    let tune = |extra: &[&str]| {
        let mut args = vec![
            "tune",
            "--golden",
            &golden,
            "--retriever",
            "fusion:wsum?w=0.1,0.9&norm=min-max",
            "--arm",
            &a1,
            "--arm",
            &a2,
            "--grid",
            "w=0.1:0.9:0.4",
        ];
        args.extend_from_slice(extra);
        veredicto_in(dir.path(), &args)
    };
    let o = tune(&["--holdout", "0.5", "--json", "--seed", "3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["settings"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["held_out_cases"], 6);
    // Ties go to the first setting in grid order.
    assert_eq!(v["chosen"], "wsum?w=0.5,0.5&norm=min-max", "{v}");
    assert!(v["comparisons"][0]["delta"].as_f64().unwrap() > 0.5, "{v}");
    assert_eq!(v["training_only"], false);
    assert_eq!(v["comparisons"].as_array().unwrap().len(), 2);
    assert!(v["comparisons"][1]["against"]
        .as_str()
        .unwrap()
        .starts_with("best single arm (arm 1 "));
    // The same seed, the same bytes.
    assert_eq!(
        stdout(&tune(&["--holdout", "0.5", "--json", "--seed", "3"])),
        stdout(&o)
    );
    // Five folds by default, in words; the chosen stage written into the policy.
    let o = tune(&["--write-policy", &policy_s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("5 folds (each case held out once)"), "{text}");
    assert!(
        text.contains("chosen: wsum?w=0.5,0.5&norm=min-max"),
        "{text}"
    );
    assert!(
        text.contains("vs current wsum?w=0.1,0.9&norm=min-max: "),
        "{text}"
    );
    let written = std::fs::read_to_string(&policy).unwrap();
    assert!(
        written.contains("fusion = \"wsum?w=0.5,0.5&norm=min-max\"")
            && written.contains("top_k = 1"),
        "{written}"
    );
    // The exam of that policy refuses another fusion, and examines the declared one.
    let exam = |fusion: &str| {
        veredicto_in(
            dir.path(),
            &[
                "exam",
                "--golden",
                &golden,
                "--retriever",
                fusion,
                "--arm",
                &a1,
                "--arm",
                &a2,
                "--policy",
                &policy_s,
                "--no-record",
            ],
        )
    };
    let o = exam("fusion:rrf");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the policy declares the fusion stage `wsum?w=0.5,0.5&norm=min-max`"),
        "{}",
        stderr(&o)
    );
    let o = exam("fusion:wsum?w=0.5,0.5");
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    // A parameter of another method is refused before any arm runs.
    let o = veredicto_in(
        dir.path(),
        &[
            "tune",
            "--golden",
            &golden,
            "--retriever",
            "fusion:rrf",
            "--arm",
            &a1,
            "--arm",
            &a2,
            "--grid",
            "w=0.5",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--grid method="), "{}", stderr(&o));
}

#[test]
fn a_matrix_compares_vector_bm25_and_hybrid_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, golden) = fixture(dir.path());
    let o = ingest(dir.path(), &corpus, &["--bm25", "english"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = write(
        dir.path(),
        "matrix.toml",
        "golden = \"golden.jsonl\"\n\n[[config]]\nname = \"vector\"\nretriever = \"index:kb\"\n\n[[config]]\nname = \"bm25\"\nretriever = \"index:kb?mode=bm25\"\n\n[[config]]\nname = \"hybrid\"\nretriever = \"fusion:rrf?k=60\"\narms = [\"index:kb?mode=bm25\", \"index:kb\"]\n",
    );
    let _ = golden;
    let o = veredicto_in(
        dir.path(),
        &["matrix", "--config", &m, "--no-record", "--format", "json"],
    );
    assert!(o.status.code().is_some_and(|c| c < 2), "{}", stderr(&o));
    let v = json(&o);
    let names: Vec<&str> = v["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["vector", "bm25", "hybrid"]);
    let recall = |i: usize| v["configurations"][i]["mean_recall"].as_f64().unwrap();
    // The hybrid finds what each arm finds alone (at K = 2 here).
    assert!(recall(2) >= recall(0).max(recall(1)), "{v}");
    // A fusion row without arms names its line.
    let bad = write(
        dir.path(),
        "bad.toml",
        "golden = \"golden.jsonl\"\n\n[[config]]\nname = \"hybrid\"\nretriever = \"fusion:rrf\"\n",
    );
    let o = veredicto_in(dir.path(), &["matrix", "--config", &bad, "--no-record"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.toml:5"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a fusion needs its arms"),
        "{}",
        stderr(&o)
    );
}
