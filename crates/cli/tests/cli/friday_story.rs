//! The Friday story of the method, end to end with the real binary: the Rack is ingested
//! into veredicto's index and passes the exam; a batch `viernes` brings five chunks that
//! outrank the old travel-profile table, which falls from rank 8 to rank 13; the exam stops,
//! and `compare` says what buried it and which batch brought it, from the index's own batch
//! records. Precomputed vectors (`vector`, `query_vector`) fix every rank.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stdout)]

use crate::common;
use common::{example, stderr, stdout, veredicto_in};
use serde_json::{json, Map, Value};
use std::path::Path;

const CASES: usize = 12;
/// Scores by rank: 0.25 at rank 0, falling by 0.005.
fn score(rank: usize) -> f32 {
    0.25 - 0.005 * rank as f32
}

fn jsonl(path: &Path) -> Vec<Map<String, Value>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap()
                .as_object()
                .unwrap()
                .clone()
        })
        .collect()
}

/// Unit vectors: dimension q is case q's, then one private dimension per chunk that takes
/// the rest of the norm. Every case lists its expected chunks at ranks 1, (4,) 8 and fills
/// the other ranks up to 20 with the corpus' other chunks in file order; the travel case
/// (`q-viaje-internacional`) has the old table `silver_viajes_014` at rank 8.
fn vectors(
    golden: &[Map<String, Value>],
    chunk_ids: &[String],
    extra: &[(String, usize, f32)],
) -> Vec<Vec<f32>> {
    let total = chunk_ids.len() + extra.len();
    let dim = CASES + total;
    let mut v = vec![vec![0f32; dim]; total];
    for (q, case) in golden.iter().enumerate() {
        let expected: Vec<&str> = case["expected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        let at: &[usize] = if expected.len() == 3 {
            &[1, 4, 8]
        } else {
            &[1, 8]
        };
        let mut fill = chunk_ids
            .iter()
            .enumerate()
            .filter(|(_, id)| !expected.contains(&id.as_str()));
        for rank in 1..=20 {
            let row = match at.iter().position(|r| *r == rank) {
                Some(i) => chunk_ids.iter().position(|c| c == expected[i]).unwrap(),
                None => fill.next().unwrap().0,
            };
            v[row][q] = score(rank);
        }
    }
    for (i, (_, q, s)) in extra.iter().enumerate() {
        v[chunk_ids.len() + i][*q] = *s;
    }
    for (row, x) in v.iter_mut().enumerate() {
        let used: f32 = x.iter().map(|a| a * a).sum();
        assert!(used < 1.0);
        x[CASES + row] = (1.0 - used).sqrt();
    }
    v
}

fn write_lines(path: &Path, lines: &[Map<String, Value>]) {
    let text: String = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap() + "\n")
        .collect();
    std::fs::write(path, text).unwrap();
}

fn run_ok(dir: &Path, args: &[&str], code: i32) -> String {
    let o = veredicto_in(dir, args);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{args:?}\nstdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

#[test]
fn friday_the_diagnosis_points_at_the_afternoon_ingestion() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let golden = jsonl(&example("golden.jsonl"));
    assert_eq!(golden.len(), CASES);
    let corpus = jsonl(&example("corpus.jsonl"));
    let ids: Vec<String> = corpus
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    let travel = golden
        .iter()
        .position(|c| c["id"] == "q-viaje-internacional")
        .unwrap();
    // Friday's five chunks score between ranks 1 and 2 of the travel case.
    let extra: Vec<(String, usize, f32)> = (0..5)
        .map(|i| {
            (
                format!("nuevo{i}"),
                travel,
                score(1) - 0.001 * (i + 1) as f32,
            )
        })
        .collect();
    let v = vectors(&golden, &ids, &extra);

    let mut lines: Vec<Map<String, Value>> = corpus.clone();
    for (l, x) in lines.iter_mut().zip(&v) {
        l.insert("vector".into(), json!(x));
    }
    write_lines(&dir.join("rack.jsonl"), &lines);
    let mut friday = lines.clone();
    for (i, (id, _, _)) in extra.iter().enumerate() {
        let mut m = Map::new();
        m.insert("id".into(), json!(id));
        m.insert(
            "text".into(),
            json!(format!("Nuevo procedimiento de gastos de viaje, apartado {i}: percibos de un desplazamiento internacional.")),
        );
        m.insert("domain".into(), json!("viajes"));
        m.insert("vector".into(), json!(v[ids.len() + i]));
        friday.push(m);
    }
    write_lines(&dir.join("rack-viernes.jsonl"), &friday);
    let mut cases = golden.clone();
    for (q, c) in cases.iter_mut().enumerate() {
        let mut qv = vec![0f32; CASES + ids.len() + extra.len()];
        qv[q] = 1.0;
        c.insert("query_vector".into(), json!(qv));
    }
    write_lines(&dir.join("golden.jsonl"), &cases);
    let policy = example("policy.toml");
    let policy = policy.to_str().unwrap();
    let notes = example("notes.jsonl");
    let notes = notes.to_str().unwrap();

    let ingest = |corpus: &str, label: &str, time: &str| {
        run_ok(
            dir,
            &[
                "ingest",
                "--corpus",
                corpus,
                "--index",
                "ix",
                "--batch-label",
                label,
                "--time",
                time,
            ],
            0,
        )
    };
    let exam = |code: i32| {
        run_ok(
            dir,
            &[
                "exam",
                "--golden",
                "golden.jsonl",
                "--index",
                "ix",
                "--policy",
                policy,
                "--notes",
                notes,
                "--as-of",
                "2025-11-14",
            ],
            code,
        )
    };
    ingest("rack.jsonl", "rack-base", "2025-11-07T09:00:00Z");
    let green = exam(0);
    assert!(
        green.contains("ACCEPT") || green.to_lowercase().contains("accept"),
        "{green}"
    );
    ingest("rack-viernes.jsonl", "viernes", "2025-11-14T17:20:00Z");
    let stop = exam(1);
    // The exam's own diagnosis lists the outrankers with the index's batch and time.
    assert!(
        stop.contains("nuevo0#2 (viernes, 2025-11-14 17:20)"),
        "{stop}"
    );

    let compare = run_ok(dir, &["compare"], 0);
    println!("{compare}");
    assert!(
        compare.contains("q-viaje-internacional: silver_viajes_014 fell from 8 to 13, displaced by nuevo0, nuevo1, nuevo2, nuevo3, nuevo4, all from batch `viernes` ingested 2025-11-14 17:20"),
        "{compare}"
    );
    // The cross-run diagnosis names the ingestion regression and the batch; the corpus
    // lines' own `ingest_batch` (2025-11-14-viajes for the new procedure) is not used.
    assert!(compare.contains("[ingestion_regression]"), "{compare}");
    assert!(
        compare.contains("5 chunk(s) of batch `viernes` ingested 2025-11-14 17:20: nuevo0 (rank 2) above silver_viajes_014 in q-viaje-internacional"),
        "{compare}"
    );
    assert!(
        compare.contains("regression by the latest ingestion: batch `viernes` ingested 2025-11-14 17:20 buried the old"),
        "{compare}"
    );
    assert!(!compare.contains("2025-11-14-viajes"), "{compare}");
    // The HTML report says the same.
    run_ok(dir, &["report", "--out", "report.html"], 0);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("q-viaje-internacional: silver_viajes_014 fell from 8 to 13, displaced by nuevo0, nuevo1, nuevo2, nuevo3, nuevo4, all from batch `viernes` ingested 2025-11-14 17:20"),
        "the report names the batch"
    );
    // JSON: the displacers carry batch and time.
    let json: Value = serde_json::from_str(&run_ok(dir, &["compare", "--json"], 0)).unwrap();
    let text = json.to_string();
    assert!(
        text.contains(r#""ingested_at":"2025-11-14T17:20:00Z""#),
        "{text}"
    );
    // The pattern is typed (`seen`: kind and fields) and keeps its sentences.
    let f = json["diagnosis"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["pattern"] == "ingestion_regression")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(f["seen"][0]["kind"], "ingestion_regression", "{f}");
    assert!(f["seen"][0]["accepted_run"].is_string(), "{f}");
    assert!(f["seen"][0]["accepted_at"].is_string(), "{f}");
    assert!(
        f["saw"]
            .as_str()
            .unwrap()
            .contains("5 chunk(s) of batch `viernes` ingested 2025-11-14 17:20"),
        "{f}"
    );
    assert!(
        f["cause"]
            .as_str()
            .unwrap()
            .starts_with("regression by the latest ingestion: batch `viernes`"),
        "{f}"
    );
    // The exam's buried chunk: `kind` with rank, score and K beside the sentence.
    let exam_json: Value = serde_json::from_str(&run_ok(
        dir,
        &[
            "exam",
            "--golden",
            "golden.jsonl",
            "--index",
            "ix",
            "--policy",
            policy,
            "--notes",
            notes,
            "--as-of",
            "2025-11-14",
            "--json",
        ],
        1,
    ))
    .unwrap();
    let case = exam_json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "q-viaje-internacional")
        .unwrap();
    let buried = case["diagnosis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "buried")
        .unwrap_or_else(|| panic!("{case}"));
    assert_eq!(buried["chunk"], "silver_viajes_014", "{buried}");
    assert_eq!(buried["rank"], 13, "{buried}");
    let k = buried["k"].as_u64().unwrap();
    let score = buried["score"].as_f64().unwrap();
    assert_eq!(
        buried["finding"],
        format!("buried at rank 13 (score {score:.4}) below the top {k}"),
        "{buried}"
    );
    assert_eq!(buried["outranked_by"][0]["id"], "nuevo0", "{buried}");
}
