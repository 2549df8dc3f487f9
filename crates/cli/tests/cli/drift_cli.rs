//! `corpus check`'s drift since the last accepted run, chunk by chunk: an accepted exam of
//! the rack example's corpus is recorded (with the chunks it read), the corpus then changes
//! (one chunk added, one text changed, one removed), and the check shows exactly those, by
//! batch and domain, in JSON and in the human list. A run recorded without its chunks (as
//! every run before this history kept them) falls back to the by-batch view and says so.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// The rack corpus with `silver_nominas_020` added (new batch), `silver_viajes_103`'s text
/// changed and `silver_finanzas_140` removed.
fn changed_rack(dir: &Path) -> String {
    let mut lines = Vec::new();
    for l in std::fs::read_to_string(example("corpus.jsonl"))
        .unwrap()
        .lines()
    {
        let mut v: Value = serde_json::from_str(l).unwrap();
        match v["id"].as_str().unwrap() {
            "silver_finanzas_140" => continue,
            "silver_viajes_103" => {
                let t = v["text"].as_str().unwrap().to_owned();
                v["text"] = json!(format!("{t} Revisado en diciembre."));
            }
            _ => {}
        }
        lines.push(v.to_string());
    }
    lines.push(
        json!({
            "id": "silver_nominas_020", "doc_id": "DOC-NOMINAS-2026", "domain": "nominas",
            "text": "Tablas de retención de nóminas para 2026.",
            "ingest_batch": "2025-12-01-nominas"
        })
        .to_string(),
    );
    write(dir, "corpus-changed.jsonl", &(lines.join("\n") + "\n"))
}

fn accepted_exam(dir: &Path, with_corpus: bool) {
    let golden = example("golden.jsonl");
    let run = example("run-accept.trec");
    let corpus = example("corpus.jsonl");
    let policy = example("policy.toml");
    let mut args = vec![
        "exam",
        "--golden",
        golden.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--as-of",
        "2025-11-20",
    ];
    if with_corpus {
        args.extend(["--corpus", corpus.to_str().unwrap()]);
    }
    let o = veredicto_in(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

fn check(dir: &Path, corpus: &str, format: &str) -> std::process::Output {
    veredicto_in(
        dir,
        &[
            "corpus",
            "check",
            "--corpus",
            corpus,
            "--as-of",
            "2025-11-20",
            "--format",
            format,
        ],
    )
}

#[test]
fn drift_since_the_accepted_run_is_chunk_level_by_batch_and_domain() {
    let dir = tempfile::tempdir().unwrap();
    // Two accepted runs of the same corpus: the second stores no second chunk list.
    accepted_exam(dir.path(), true);
    accepted_exam(dir.path(), true);
    let o = veredicto_in(dir.path(), &["history", "check", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let h = json_of(&o);
    assert_eq!(
        (&h["run_chunks"], &h["chunk_snapshots"]),
        (&json!(2), &json!(1))
    );

    let corpus = changed_rack(dir.path());
    let o = check(dir.path(), &corpus, "json");
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json_of(&o);
    let since = &v["drift"]["since_accepted_run"];
    assert_eq!(
        since["chunks"],
        json!({
            "entered": 1, "changed": 1, "left": 1,
            "groups": [
                {"batch": "2025-09-01-inicial", "domain": "fiscal",
                 "entered": [], "changed": [], "left": ["silver_finanzas_140"]},
                {"batch": "2025-11-14-viajes", "domain": "viajes",
                 "entered": [], "changed": ["silver_viajes_103"], "left": []},
                {"batch": "2025-12-01-nominas", "domain": "nominas",
                 "entered": ["silver_nominas_020"], "changed": [], "left": []}
            ]
        })
    );
    // The by-batch view is still there beside it.
    assert_eq!(since["batches"].as_array().unwrap().len(), 2);
    // Same inputs, byte-identical JSON.
    assert_eq!(stdout(&check(dir.path(), &corpus, "json")), stdout(&o));

    let human = stdout(&check(dir.path(), &corpus, "human"));
    let run = since["run"].as_str().unwrap();
    for line in [
        format!("since the last accepted run {run}: 1 entered, 1 changed, 1 left"),
        "batch 2025-09-01-inicial / domain fiscal: left 1 (silver_finanzas_140)".to_owned(),
        "batch 2025-11-14-viajes / domain viajes: changed 1 (silver_viajes_103)".to_owned(),
        "batch 2025-12-01-nominas / domain nominas: entered 1 (silver_nominas_020)".to_owned(),
    ] {
        assert!(human.contains(&line), "{line}\n{human}");
    }
    assert!(!human.contains("by batch only"), "{human}");

    // The unchanged corpus: nothing moved.
    let o = check(
        dir.path(),
        example("corpus.jsonl").to_str().unwrap(),
        "json",
    );
    let c = &json_of(&o)["drift"]["since_accepted_run"]["chunks"];
    assert_eq!(
        c,
        &json!({"entered": 0, "changed": 0, "left": 0, "groups": []})
    );
}

#[test]
fn a_run_recorded_without_its_chunks_falls_back_to_the_batch_view_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // Without --corpus, a TREC run has no chunks to keep: the history holds the run's
    // batches only, as for every run recorded before the chunk lists existed.
    accepted_exam(dir.path(), false);
    let corpus = changed_rack(dir.path());
    let v = json_of(&check(dir.path(), &corpus, "json"));
    let since = &v["drift"]["since_accepted_run"];
    assert!(since.get("chunks").is_none(), "{since}");
    assert!(since["run"].is_string());
    let human = stdout(&check(dir.path(), &corpus, "human"));
    assert!(
        human.contains(
            "by batch only: that run was recorded before the history kept each run's chunks"
        ),
        "{human}"
    );
}

/// One-hot vectors of dimension 8: chunk `i` points along axis `i`.
fn axis(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; 8];
    v[i] = 1.0;
    v
}

#[test]
fn an_exam_of_an_index_keeps_its_chunks_and_the_check_of_the_changed_index_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let line = |id: &str, i: usize, text: &str, domain: &str, batch: &str| {
        json!({"id": id, "text": text, "domain": domain, "ingest_batch": batch, "vector": axis(i)})
            .to_string()
    };
    let corpus = write(
        d,
        "corpus.jsonl",
        &[
            line("c1", 1, "vacaciones anuales", "laboral", "b1"),
            line("c2", 2, "asuntos propios", "laboral", "b1"),
            line("c3", 3, "tramos del IRPF", "fiscal", "b1"),
        ]
        .join("\n"),
    );
    let golden = write(
        d,
        "golden.jsonl",
        &(json!({"id": "q1", "query": "vacaciones", "expected": ["c1"], "top_k": 1,
                 "query_vector": axis(1)})
        .to_string()
            + "\n"),
    );
    let index = d.join("idx").display().to_string();
    let ingest = |c: &str, batch: &str| {
        let o = veredicto_in(
            d,
            &[
                "ingest",
                "--corpus",
                c,
                "--index",
                &index,
                "--json",
                "--batch-label",
                batch,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    };
    ingest(&corpus, "b1");
    let o = veredicto_in(
        d,
        &[
            "exam",
            "--index",
            &index,
            "--golden",
            &golden,
            "--model",
            "/nonexistent",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let h = json_of(&veredicto_in(d, &["history", "check", "--json"]));
    assert_eq!(h["run_chunks"], 1, "{h}");
    // The index changes in batch b2: c2's text, c3 removed, c4 added (the index labels a
    // new or changed chunk with the batch that brought it).
    let changed = write(
        d,
        "corpus2.jsonl",
        &[
            line("c1", 1, "vacaciones anuales", "laboral", "b1"),
            line("c2", 2, "asuntos propios: tres días", "laboral", "b1"),
            line("c4", 4, "dietas", "viajes", "b2"),
        ]
        .join("\n"),
    );
    ingest(&changed, "b2");
    let o = veredicto_in(
        d,
        &["corpus", "check", "--index", &index, "--format", "json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let c = &json_of(&o)["drift"]["since_accepted_run"]["chunks"];
    assert_eq!(
        (&c["entered"], &c["changed"], &c["left"]),
        (&json!(1), &json!(1), &json!(1)),
        "{c}"
    );
    assert_eq!(
        c["groups"],
        json!([
            {"batch": "b1", "domain": "fiscal", "entered": [], "changed": [], "left": ["c3"]},
            {"batch": "b2", "domain": "laboral", "entered": [], "changed": ["c2"], "left": []},
            {"batch": "b2", "domain": "viajes", "entered": ["c4"], "changed": [], "left": []}
        ])
    );
}
