//! `veredicto matrix`: one exam per configuration, each recorded with its name and
//! configuration, one table with the best value per column marked.

use crate::common;
use common::*;
use serde_json::Value;

fn setup(dir: &std::path::Path) -> String {
    let corpus: String = (0..12)
        .map(|i| {
            format!(
                "{{\"id\":\"c{i:02}\",\"text\":\"chunk {i}\",\"vector\":[1,{},0]}}\n",
                f64::from(i) / 10.0
            )
        })
        .collect();
    let c = write(dir, "corpus.jsonl", &corpus);
    let o = veredicto(&[
        "ingest",
        "--corpus",
        &c,
        "--index",
        dir.join("kb").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // q1's expected chunk is 3rd by cosine: found at K=3, missed at K=1.
    write(
        dir,
        "golden.jsonl",
        "{\"id\":\"q1\",\"query\":\"x\",\"expected\":[\"c02\"],\"query_vector\":[1,0,0]}\n{\"id\":\"q2\",\"query\":\"y\",\"expected\":[\"c00\"],\"query_vector\":[1,0,0]}\n",
    );
    write(
        dir,
        "policy.toml",
        "require_notes = false\nnoise_ceiling = 1.0\n",
    );
    write(
        dir,
        "matrix.toml",
        "golden = \"golden.jsonl\"\npolicy = \"policy.toml\"\nas_of = \"2025-11-14\"\n\n[[config]]\nname = \"own-k1\"\nindex = \"kb\"\ntop_k = 1\nchunk_size = 256\n\n[[config]]\nname = \"own-k3\"\nindex = \"kb\"\ntop_k = 3\nchunk_size = 256\n",
    )
}

#[test]
fn each_configuration_is_examined_recorded_and_tabled() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = setup(dir.path());
    let history = dir.path().join("h.db").display().to_string();
    let o = veredicto(&[
        "matrix",
        "--config",
        &matrix,
        "--history",
        &history,
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = j["configurations"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0]["name"].as_str(), rows[0]["top_k"].as_u64()),
        (Some("own-k1"), Some(1))
    );
    assert_eq!(rows[0]["verdict"], "stop");
    assert_eq!(rows[1]["verdict"], "accept");
    assert_eq!(rows[1]["mean_recall"], 1.0);
    assert_eq!(j["best"]["mean_recall"], serde_json::json!(["own-k3"]));
    assert_ne!(rows[0]["run_id"], rows[1]["run_id"]);

    // Both runs are in the history with their label and configuration.
    let o = veredicto(&["runs", "list", "--history", &history, "--json"]);
    let text = stdout(&o);
    assert!(
        text.contains("own-k1") && text.contains("own-k3"),
        "{text}{}",
        stderr(&o)
    );

    // A second night: each configuration's trend holds both of its runs, oldest first.
    let o = veredicto(&[
        "matrix",
        "--config",
        &matrix,
        "--history",
        &history,
        "--format",
        "json",
    ]);
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = j["configurations"].as_array().unwrap();
    assert_eq!(rows[0]["recall_trend"], serde_json::json!([0.5, 0.5]));
    assert_eq!(rows[1]["recall_trend"], serde_json::json!([1.0, 1.0]));

    let o = veredicto(&["matrix", "--config", &matrix, "--no-record"]);
    let text = stdout(&o);
    assert!(text.starts_with("configuration"), "{text}{}", stderr(&o));
    assert!(
        text.lines()
            .any(|l| l.starts_with("own-k3") && l.contains("1.000*") && l.contains("ACCEPT")),
        "{text}"
    );
}

#[test]
fn a_bad_matrix_names_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(
        dir.path(),
        "matrix.toml",
        "golden = \"g.jsonl\"\n\n[[config]]\nname = \"a\"\nindex = \"kb\"\ntop_k = 0\n",
    );
    let o = veredicto(&["matrix", "--config", &m]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("matrix.toml:6: field `config[0].top_k`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_configuration_may_name_a_chunking_that_the_matrix_cuts_ingests_and_caches() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "documents.jsonl",
        concat!(
            "{\"id\":\"D1\",\"text\":\"The fee is computed monthly. It is 5 % of the net income. Payment is due on the first day.\"}\n",
            "{\"id\":\"D2\",\"text\":\"Holidays last 22 working days. Extra days need approval.\"}\n",
        ),
    );
    write(
        d,
        "golden.jsonl",
        concat!(
            "{\"id\":\"q1\",\"query\":\"how is the fee computed\",\"evidence\":[{\"doc_id\":\"D1\",\"quote\":\"The fee is computed monthly.\"}]}\n",
            "{\"id\":\"q2\",\"query\":\"how long are the holidays\",\"evidence\":[{\"doc_id\":\"D2\",\"quote\":\"Holidays last 22 working days.\"}]}\n",
        ),
    );
    write(
        d,
        "policy.toml",
        "require_notes = false\nnoise_ceiling = 1.0\ntop_k = 3\n",
    );
    let model = workspace().join("models/all-MiniLM-L6-v2");
    let model = model.to_str().unwrap();
    let matrix = write(
        d,
        "matrix.toml",
        &format!(
            "golden = \"golden.jsonl\"\npolicy = \"policy.toml\"\ndocuments = \"documents.jsonl\"\n\n\
             [[config]]\nname = \"sentences\"\nmodel = \"{model}\"\nchunk = {{size = 200, split = \"sentences\"}}\n\n\
             [[config]]\nname = \"windows-20\"\nmodel = \"{model}\"\nchunk = {{size = 20, overlap = 5}}\n"
        ),
    );
    let run = || {
        veredicto(&[
            "matrix",
            "--config",
            &matrix,
            "--no-record",
            "--format",
            "json",
        ])
    };
    let o = run();
    assert!(
        o.status.code().unwrap_or(2) < 2,
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = j["configurations"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["sentences", "windows-20"]);
    // One sentence per chunk holds each quote whole: both cases retrieve their evidence in
    // the top 3 of two documents' five sentences.
    assert_eq!(rows[0]["mean_recall"], 1.0, "{j}");
    assert_eq!(rows[0]["cases"], 2);
    // One folder per chunking, each with its corpus and its index.
    let cache = d.join(".veredicto/chunkings");
    let mut kept: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    kept.sort();
    assert_eq!(kept.len(), 2, "{kept:?}");
    for k in &kept {
        assert!(k.join("corpus.jsonl").exists());
        let indexes = std::fs::read_dir(k)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("index-")
            })
            .count();
        assert_eq!(indexes, 1);
    }
    assert!(stderr(&o).contains("cut now"), "{}", stderr(&o));
    // Again: nothing is cut or embedded, the same table.
    let again = run();
    assert!(
        stderr(&again).contains("cut before, index up to date"),
        "{}",
        stderr(&again)
    );
    assert!(!stderr(&again).contains("cut now"), "{}", stderr(&again));
    assert_eq!(stdout(&again), stdout(&o));
    // A chunking without documents is refused naming the field.
    let bad = write(
        d,
        "bad.toml",
        &format!("golden = \"golden.jsonl\"\n\n[[config]]\nname = \"s\"\nmodel = \"{model}\"\nchunk = {{size = 200}}\n"),
    );
    let o = veredicto(&["matrix", "--config", &bad, "--no-record"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.toml:6: field `config[0].chunk`: a chunking needs the documents"),
        "{}",
        stderr(&o)
    );
}
