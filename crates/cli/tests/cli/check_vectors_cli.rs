//! `veredicto embed --to postgres://…` and `--check-vectors N` against a real PostgreSQL with
//! pgvector (`scripts/postgres.sh start`, its URL in VEREDICTO_TEST_POSTGRES), with the two
//! real models of the repository (`models/all-MiniLM-L6-v2`, `models/multilingual-e5-small`,
//! both 384-dimensional): the rack corpus embedded with MiniLM into a table, checked with
//! MiniLM (cosine 1.000) and with e5 as the query model (the table was embedded with
//! another model), in every renderer and in the JSON; then the file outputs of `embed`.
// A test may show figures it measured.
#![allow(clippy::print_stdout)]

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;

fn pg_url() -> String {
    std::env::var("VEREDICTO_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "VEREDICTO_TEST_POSTGRES is not set: start the test server with \
             `export VEREDICTO_TEST_POSTGRES=$(scripts/postgres.sh start)`"
        )
    })
}

fn model(name: &str) -> String {
    let dir = workspace().join("models").join(name);
    assert!(
        dir.exists(),
        "{} missing: run scripts/fetch-model.sh and scripts/fetch-e5.sh",
        dir.display()
    );
    dir.display().to_string()
}

fn minilm() -> String {
    model("all-MiniLM-L6-v2")
}

fn e5() -> String {
    model("multilingual-e5-small")
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `exam --retriever TABLE --check-vectors 20` with `query_model`, in `format`.
fn exam(dir: &Path, table: &str, query_model: &str, format: &str) -> std::process::Output {
    let uri = format!("{}?table={table}&id=id&vector=embedding", pg_url());
    veredicto_in(
        dir,
        &[
            "exam",
            "--golden",
            &s(&example("golden.jsonl")),
            "--corpus",
            &s(&example("corpus.jsonl")),
            "--retriever",
            &uri,
            "--model",
            query_model,
            "--check-vectors",
            "20",
            "--no-record",
            "--as-of",
            "2025-11-14",
            "--format",
            format,
        ],
    )
}

fn stored(o: &std::process::Output) -> Value {
    let v: Value = serde_json::from_str(&stdout(o)).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}\n{}", stdout(o), stderr(o));
    });
    v["stored_vectors"].clone()
}

#[test]
fn check_vectors_names_a_table_embedded_with_another_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let table = format!("rack_minilm_{}", std::process::id());
    let o = veredicto_in(
        dir,
        &[
            "embed",
            "--corpus",
            &s(&example("corpus.jsonl")),
            "--to",
            &format!("{}?table={table}", pg_url()),
            "--model",
            &minilm(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("42 vectors of dimension 384 embedded with all-MiniLM-L6-v2"),
        "{}",
        stdout(&o)
    );
    // Loading again replaces the rows: still 42.
    let o = veredicto_in(
        dir,
        &[
            "embed",
            "--corpus",
            &s(&example("corpus.jsonl")),
            "--to",
            &format!("{}?table={table}", pg_url()),
            "--model",
            &minilm(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut client = postgres::Client::connect(&pg_url(), postgres::NoTls).unwrap();
    let rows: i64 = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 42);

    // The model that embedded the table: every stored vector is the recomputed one.
    let same = exam(dir, &table, &minilm(), "json");
    assert!(
        same.status.code().is_some_and(|c| c < 2),
        "{}",
        stderr(&same)
    );
    let same = stored(&same);
    assert_eq!(same["sampled"], 20);
    assert_eq!(same["compared"], 20);
    assert_eq!(same["other_model"], false);
    assert!(same["mean_cosine"].as_f64().unwrap() > 0.9999, "{same}");
    assert_eq!(same["below"], 0);
    assert_eq!(same["collection"], format!("table `{table}`"));

    // Queries embedded with e5 (same dimension, so the exam runs): named.
    let other = exam(dir, &table, &e5(), "json");
    assert!(
        other.status.code().is_some_and(|c| c < 2),
        "{}",
        stderr(&other)
    );
    let other = stored(&other);
    assert_eq!(other["other_model"], true);
    assert!(other["mean_cosine"].as_f64().unwrap() < 0.5, "{other}");
    assert_eq!(other["below"], 20);

    // Every renderer says it.
    let mut lines = Vec::new();
    for format in ["human", "markdown", "junit"] {
        let o = exam(dir, &table, &e5(), format);
        let text = stdout(&o);
        let line = text
            .lines()
            .find(|l| l.contains("was embedded with another model"))
            .unwrap_or_else(|| panic!("{format}: no stored-vector line in\n{text}"))
            .to_owned();
        lines.push(line);
    }
    assert!(lines[0].starts_with(&format!(
        "warning: table `{table}` was embedded with another model: mean cosine"
    )));
    let human_same = stdout(&exam(dir, &table, &minilm(), "human"));
    let ok_line = human_same
        .lines()
        .find(|l| l.starts_with("stored vectors:"))
        .expect("the check's line")
        .to_owned();
    println!("check-vectors, MiniLM table, MiniLM queries: {ok_line}");
    println!("check-vectors, MiniLM table, e5 queries: {}", lines[0]);
    let shown = |l: &str| l.replace(&table, "rack_minilm");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        insta::assert_snapshot!(
            "check_vectors_lines",
            format!("{}\n{}\n", shown(&ok_line), shown(&lines[0]))
        )
    });

    // search --retriever takes the check too.
    let o = veredicto_in(
        dir,
        &[
            "search",
            "--retriever",
            &format!("{}?table={table}&id=id&vector=embedding", pg_url()),
            "--model",
            &e5(),
            "--check-vectors",
            "5",
            "--corpus",
            &s(&example("corpus.jsonl")),
            "--json",
            "¿Cuántos días de vacaciones tengo?",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["stored_vectors"]["other_model"], true);
    assert_eq!(v["stored_vectors"]["sampled"], 5);
    client
        .batch_execute(&format!("DROP TABLE {table}"))
        .unwrap();
}

#[test]
fn check_vectors_refuses_what_it_cannot_check() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // A retriever that cannot return vectors (a run file has none).
    let o = veredicto_in(
        dir,
        &[
            "exam",
            "--golden",
            &s(&example("golden.jsonl")),
            "--corpus",
            &s(&example("corpus.jsonl")),
            "--run",
            &s(&example("run-accept.trec")),
            "--model",
            &minilm(),
            "--check-vectors",
            "5",
            "--no-record",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot return its stored vectors (pgvector, Qdrant and Chroma can)"),
        "{}",
        stderr(&o)
    );
    // Without the chunks' texts.
    let uri = format!("{}?table=nope&id=id&vector=embedding", pg_url());
    let o = veredicto_in(
        dir,
        &[
            "exam",
            "--golden",
            &s(&example("golden.jsonl")),
            "--retriever",
            &uri,
            "--model",
            &minilm(),
            "--check-vectors",
            "5",
            "--no-record",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("give --corpus FILE"), "{}", stderr(&o));
}

#[test]
fn embed_writes_jsonl_and_npy_that_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let jsonl = dir.join("vectors.jsonl");
    let o = veredicto_in(
        dir,
        &[
            "embed",
            "--corpus",
            &s(&example("corpus.jsonl")),
            "--out",
            &s(&jsonl),
            "--model",
            &minilm(),
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let summary: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(summary["rows"], 42);
    assert_eq!(summary["dimension"], 384);
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["vector"].as_array().unwrap().len(), 384);
    assert_eq!(first["model"], summary["model_hash"]);
    assert_eq!(text.lines().count(), 42);

    // The golden queries as .npy (format from the extension) with their IDs beside.
    let npy = dir.join("queries.npy");
    let o = veredicto_in(
        dir,
        &[
            "embed",
            "--golden",
            &s(&example("golden.jsonl")),
            "--out",
            &s(&npy),
            "--model",
            &minilm(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bytes = std::fs::read(&npy).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(header.contains("'shape': (12, 384)"), "{header}");
    assert_eq!(bytes.len(), 10 + header_len + 12 * 384 * 4);
    let ids = std::fs::read_to_string(dir.join("queries.npy.ids.txt")).unwrap();
    assert_eq!(ids.lines().count(), 12);
    assert_eq!(ids.lines().next(), Some("q-irpf-autonomos"));

    // Bad input: a target without a table, exit 2 before anything is embedded.
    let o = veredicto_in(
        dir,
        &[
            "embed",
            "--corpus",
            &s(&example("corpus.jsonl")),
            "--to",
            "postgres://u@127.0.0.1:1/db",
            "--model",
            &minilm(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("?table=T"), "{}", stderr(&o));
}

#[test]
fn embed_writes_parquet_whose_floats_are_the_npy_output_s() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::{ListAccessor, RowAccessor};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (pq, npy) = (dir.join("queries.parquet"), dir.join("queries.npy"));
    // The format from the extension, for both files.
    for out in [&pq, &npy] {
        let o = veredicto_in(
            dir,
            &[
                "embed",
                "--golden",
                &s(&example("golden.jsonl")),
                "--out",
                &s(out),
                "--model",
                &minilm(),
                "--json",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let reader = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    assert_eq!(reader.metadata().file_metadata().num_rows(), 12);
    let (mut ids, mut bits, mut models) = (Vec::new(), Vec::new(), Vec::new());
    for row in reader.get_row_iter(None).unwrap() {
        let row = row.unwrap();
        ids.push(row.get_string(0).unwrap().clone());
        let list = row.get_list(1).unwrap();
        assert_eq!(list.len(), 384);
        for i in 0..list.len() {
            bits.push(list.get_float(i).unwrap().to_bits());
        }
        models.push(row.get_string(2).unwrap().clone());
    }
    let npy_ids = std::fs::read_to_string(dir.join("queries.npy.ids.txt")).unwrap();
    assert_eq!(ids, npy_ids.lines().collect::<Vec<_>>());
    assert!(models.iter().all(|m| m.starts_with("sha256:")));
    let bytes = std::fs::read(&npy).unwrap();
    let header = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let npy_bits: Vec<u32> = bytes[header..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(bits.len(), 12 * 384);
    assert!(
        bits == npy_bits,
        "the Parquet floats differ from the .npy's"
    );
    println!(
        "embed: {} floats in queries.parquet bit-identical to queries.npy",
        bits.len()
    );
    // --format wins over the extension.
    let forced = dir.join("queries.bin");
    let o = veredicto_in(
        dir,
        &[
            "embed",
            "--golden",
            &s(&example("golden.jsonl")),
            "--out",
            &s(&forced),
            "--format",
            "parquet",
            "--model",
            &minilm(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(&std::fs::read(&forced).unwrap()[..4], b"PAR1");
}
