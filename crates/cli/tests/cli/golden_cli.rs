//! Golden sets that survive re-chunking, end to end: `golden convert` on the rack example
//! gives the same verdict and measures as the chunk-ID suite; `chunk` writes a corpus whose
//! chunks point at their documents; `golden check` says which items a chunking splits or
//! drops; bad evidence stops the exam with one line naming file, line and field, and nothing
//! is recorded.

use crate::common;
use common::*;

fn exam_json(args: &[&str]) -> (i32, serde_json::Value) {
    let o = veredicto(args);
    let code = o.status.code().unwrap_or(-1);
    let v = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", stdout(&o), stderr(&o));
    });
    (code, v)
}

#[test]
fn the_rack_example_converted_to_evidence_spans_gives_the_same_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let converted = dir.path().join("golden-evidence.jsonl");
    let (golden, corpus, documents) = (
        example("golden.jsonl"),
        example("corpus.jsonl"),
        example("documents.jsonl"),
    );
    let o = veredicto(&[
        "golden",
        "convert",
        "--golden",
        golden.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--documents",
        documents.to_str().unwrap(),
        "--out",
        converted.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&converted).unwrap();
    assert!(!text.contains("\"expected\""));
    // The example ships the converted set.
    assert_eq!(
        text,
        std::fs::read_to_string(example("golden-evidence.jsonl")).unwrap()
    );
    for (run, want) in [("run-accept.trec", 0), ("run-stop.trec", 1)] {
        let run = example(run);
        let policy = example("policy.toml");
        let common = [
            "--run",
            run.to_str().unwrap(),
            "--corpus",
            corpus.to_str().unwrap(),
            "--policy",
            policy.to_str().unwrap(),
            "--no-record",
            "--json",
            "--as-of",
            "2025-11-20",
        ];
        let mut a = vec!["exam", "--golden", golden.to_str().unwrap()];
        a.extend(common);
        let (ca, ids) = exam_json(&a);
        let mut b = vec![
            "exam",
            "--golden",
            converted.to_str().unwrap(),
            "--documents",
            documents.to_str().unwrap(),
        ];
        b.extend(common);
        let (cb, spans) = exam_json(&b);
        assert_eq!((ca, cb), (want, want));
        assert_eq!(ids["verdict"], spans["verdict"]);
        assert_eq!(ids["summary"], spans["summary"], "the same measures");
        let cases = |v: &serde_json::Value| -> Vec<(String, bool, f64)> {
            v["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["id"].as_str().unwrap().to_owned(),
                        c["passed"].as_bool().unwrap(),
                        c["recall"].as_f64().unwrap(),
                    )
                })
                .collect()
        };
        assert_eq!(cases(&ids), cases(&spans));
        let first = &spans["cases"][0]["evidence"][0];
        assert_eq!(first["chunks"][0]["id"], "gold_001");
        assert_eq!(first["rank"], 1);
    }
}

const DOCS: &str = concat!(
    "{\"id\":\"D1\",\"text\":\"The fee is computed monthly. It is 5 % of the net income. Payment is due on the first day.\",\"lang\":\"en\"}\n",
    "{\"id\":\"D2\",\"text\":\"Holidays last 22 working days. Extra days need approval.\"}\n",
);

#[test]
fn chunk_writes_located_chunks_and_golden_check_finds_split_items() {
    let dir = tempfile::tempdir().unwrap();
    let docs = write(dir.path(), "docs.jsonl", DOCS);
    let golden = write(
        dir.path(),
        "golden.jsonl",
        concat!(
            "{\"id\":\"q1\",\"query\":\"fee\",\"evidence\":[{\"doc_id\":\"D1\",\"quote\":\"computed monthly. It is 5 %\"}]}\n",
            "{\"id\":\"q2\",\"query\":\"holidays\",\"evidence\":[{\"doc_id\":\"D2\",\"start\":0,\"end\":30,\"grade\":2}]}\n",
        ),
    );
    let out = dir.path().join("corpus.jsonl");
    let o = veredicto(&[
        "chunk",
        "--documents",
        &docs,
        "--out",
        out.to_str().unwrap(),
        "--size",
        "40",
        "--split",
        "sentences",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let corpus = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<serde_json::Value> = corpus
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["id"], "D1:0-29");
    assert_eq!(lines[0]["text"], "The fee is computed monthly. ");
    assert_eq!(lines[0]["lang"], "en", "the document's fields are kept");
    assert_eq!(lines.len(), 5, "{corpus}");
    // Twice the same command: the same bytes.
    let again = dir.path().join("again.jsonl");
    veredicto(&[
        "chunk",
        "--documents",
        &docs,
        "--out",
        again.to_str().unwrap(),
        "--size",
        "40",
        "--split",
        "sentences",
    ]);
    assert_eq!(std::fs::read_to_string(&again).unwrap(), corpus);

    let o = veredicto(&[
        "golden",
        "check",
        "--golden",
        &golden,
        "--corpus",
        out.to_str().unwrap(),
        "--documents",
        &docs,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let check: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (check["items"].as_u64(), check["quotes"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(check["split"], 1);
    assert_eq!(check["whole"], 1);
    assert_eq!(check["places"][0]["placement"], "split");
    assert_eq!(check["places"][0]["chunks"][0]["id"], "D1:0-29");
    assert_eq!(check["places"][0]["chunks"][1]["id"], "D1:29-58");

    // A run over the chunks: the split item needs both chunks within K.
    let run = write(
        dir.path(),
        "run.trec",
        "q1 Q0 D1:0-29 1 3.0 t\nq1 Q0 D2:0-30 2 2.0 t\nq1 Q0 D1:29-58 3 1.0 t\nq2 Q0 D2:0-30 1 1.0 t\n",
    );
    let (_, v) = exam_json(&[
        "exam",
        "--golden",
        &golden,
        "--documents",
        &docs,
        "--corpus",
        out.to_str().unwrap(),
        "--run",
        &run,
        "--no-record",
        "--json",
    ]);
    let ev = &v["cases"][0]["evidence"][0];
    assert_eq!(ev["rank"], 3);
    assert_eq!(ev["covered"], 1.0);
    assert_eq!(v["cases"][1]["evidence"][0]["grade"], 2);

    // Grades and evidence ranks in the human, Markdown and JUnit reports (q2 fails: its
    // chunk is not retrieved).
    let run2 = write(
        dir.path(),
        "run2.trec",
        "q1 Q0 D1:0-29 1 3.0 t\nq1 Q0 D1:29-58 2 1.0 t\nq2 Q0 D1:0-29 1 1.0 t\n",
    );
    for format in ["human", "markdown", "junit"] {
        let o = veredicto(&[
            "exam",
            "--golden",
            &golden,
            "--documents",
            &docs,
            "--corpus",
            out.to_str().unwrap(),
            "--run",
            &run2,
            "--no-record",
            "--format",
            format,
        ]);
        assert_eq!(o.status.code(), Some(1), "{format}: {}", stderr(&o));
        // Markdown escapes the brackets.
        let text = stdout(&o).replace('\\', "");
        assert!(text.contains("D2[0..30]#- (grade 2)"), "{format}: {text}");
    }

    // A chunking that drops text: the item is not covered and the check says so (exit 1).
    let gappy = write(
        dir.path(),
        "gappy.jsonl",
        "{\"id\":\"a\",\"doc_id\":\"D1\",\"start\":0,\"end\":10}\n{\"id\":\"b\",\"doc_id\":\"D2\",\"start\":0,\"end\":30}\n",
    );
    let o = veredicto(&[
        "golden",
        "check",
        "--golden",
        &golden,
        "--corpus",
        &gappy,
        "--documents",
        &docs,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("items the chunking does not cover (1)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bad_evidence_is_one_line_naming_file_line_and_field_and_nothing_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let docs = write(dir.path(), "docs.jsonl", DOCS);
    let run = write(dir.path(), "run.trec", "q1 Q0 c1 1 1.0 t\n");
    let cases = [
        (
            "{\"id\":\"q1\",\"query\":\"x\",\"evidence\":[{\"doc_id\":\"D1\",\"quote\":\"not in the text\"}]}\n",
            "golden.jsonl:1: field `evidence[0].quote`",
        ),
        (
            "{\"id\":\"q1\",\"query\":\"x\",\"evidence\":[{\"doc_id\":\"D1\",\"quote\":\"is\"}]}\n",
            "golden.jsonl:1: field `evidence[0].quote`",
        ),
        (
            "{\"id\":\"q1\",\"query\":\"x\",\"evidence\":[{\"doc_id\":\"D1\",\"start\":0,\"end\":9999}]}\n",
            "golden.jsonl:1: field `evidence[0].end`",
        ),
        (
            "{\"id\":\"q1\",\"query\":\"x\",\"evidence\":[{\"doc_id\":\"NOPE\",\"start\":0,\"end\":3}]}\n",
            "golden.jsonl:1: field `evidence[0].doc_id`",
        ),
        (
            "{\"id\":\"q1\",\"query\":\"x\"}\n",
            "golden.jsonl:1: field `expected`",
        ),
    ];
    for (golden, want) in cases {
        let g = write(dir.path(), "golden.jsonl", golden);
        let o = veredicto_in(
            dir.path(),
            &["exam", "--golden", &g, "--documents", &docs, "--run", &run],
        );
        assert_eq!(o.status.code(), Some(2), "{golden}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(want), "{golden}: {err}");
        assert!(!dir.path().join(".veredicto").exists(), "nothing recorded");
    }
    // Chunk offsets that disagree with the document's text.
    let g = write(
        dir.path(),
        "golden.jsonl",
        "{\"id\":\"q1\",\"query\":\"x\",\"evidence\":[{\"doc_id\":\"D1\",\"start\":0,\"end\":3}]}\n",
    );
    let corpus = write(
        dir.path(),
        "corpus.jsonl",
        "{\"id\":\"c1\",\"doc_id\":\"D1\",\"start\":0,\"end\":7,\"text\":\"Holiday\"}\n",
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            &g,
            "--documents",
            &docs,
            "--corpus",
            &corpus,
            "--run",
            &run,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("corpus.jsonl:1: field `text`"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join(".veredicto").exists(), "nothing recorded");
}

#[test]
fn two_chunkings_with_the_same_evidence_golden_set_are_compared_case_by_case() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = write(d, "docs.jsonl", DOCS);
    let golden = write(
        d,
        "golden.jsonl",
        concat!(
            "{\"id\":\"q1\",\"query\":\"fee\",\"evidence\":[{\"doc_id\":\"D1\",\"quote\":\"It is 5 % of the net income.\"}]}\n",
            "{\"id\":\"q2\",\"query\":\"holidays\",\"evidence\":[{\"doc_id\":\"D2\",\"start\":0,\"end\":30}]}\n",
        ),
    );
    // Sentences, then 60-character windows: other chunk IDs, the same evidence.
    let mut runs = Vec::new();
    for (name, flags) in [
        ("sentences", &["--size", "200", "--split", "sentences"][..]),
        ("windows", &["--size", "60"][..]),
    ] {
        let out = format!("{name}.jsonl");
        let mut args = vec!["chunk", "--documents", &docs, "--out", &out];
        args.extend(flags);
        let o = veredicto_in(d, &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        // A run that lists every chunk of the case's document first.
        let corpus = std::fs::read_to_string(d.join(&out)).unwrap();
        let mut run = String::new();
        for (q, doc) in [("q1", "D1"), ("q2", "D2")] {
            let ids: Vec<String> = corpus
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter(|v| v["doc_id"] == doc)
                .map(|v| v["id"].as_str().unwrap().to_owned())
                .collect();
            for (r, id) in ids.iter().enumerate() {
                run.push_str(&format!("{q} Q0 {id} {} {} t\n", r + 1, 10 - r));
            }
        }
        runs.push(write(d, &format!("{name}.trec"), &run));
        let o = veredicto_in(
            d,
            &[
                "exam",
                "--golden",
                &golden,
                "--documents",
                &docs,
                "--corpus",
                &out,
                "--run",
                runs.last().unwrap(),
                "--label",
                name,
                "--json",
            ],
        );
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    }
    let o = veredicto_in(d, &["compare", "--json"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let compat = &v["comparison"]["compatibility"];
    assert_eq!(compat["golden"]["shared"], 2, "{compat}");
    assert_eq!(compat["golden"]["changed"], false);
    assert!(
        compat["config"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["key"] == "source"),
        "the note names what differs: {compat}"
    );
}

/// The rack golden set as a SQLite table with columns of other names (`case_id`,
/// `question`, `chunk_ids` as a comma-separated list, `k`), as a team keeps it in D1.
fn rack_golden_table(db: &std::path::Path) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute_batch(
        "CREATE TABLE cases (case_id TEXT, question TEXT, chunk_ids TEXT, k INTEGER, domain TEXT, tags TEXT, gold INTEGER);",
    )
    .unwrap();
    let text = std::fs::read_to_string(example("golden.jsonl")).unwrap();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let list = |key: &str| -> String {
            v[key]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|x| x.as_str().unwrap())
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        c.execute(
            "INSERT INTO cases VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![
                v["id"].as_str(),
                v["query"].as_str(),
                list("expected"),
                v["top_k"].as_i64(),
                v["domain"].as_str(),
                // an empty list of tags is no tags: NULL
                Some(list("tags")).filter(|t| !t.is_empty()),
                v["gold"].as_bool().map(i64::from),
            ],
        )
        .unwrap();
    }
}

#[test]
fn a_golden_set_in_a_sqlite_table_gives_the_jsonl_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("golden.db");
    rack_golden_table(&db);
    let spec = format!(
        "sqlite:{}?table=cases&id=case_id&query=question&expected=chunk_ids&top_k=k",
        db.display()
    );
    let (golden, corpus, policy) = (
        example("golden.jsonl"),
        example("corpus.jsonl"),
        example("policy.toml"),
    );
    for (run, want) in [("run-accept.trec", 0), ("run-stop.trec", 1)] {
        let run = example(run);
        let exam = |golden: &str| {
            exam_json(&[
                "exam",
                "--golden",
                golden,
                "--run",
                run.to_str().unwrap(),
                "--corpus",
                corpus.to_str().unwrap(),
                "--policy",
                policy.to_str().unwrap(),
                "--no-record",
                "--json",
                "--as-of",
                "2025-11-20",
            ])
        };
        let (ct, table) = exam(&spec);
        let (cj, jsonl) = exam(golden.to_str().unwrap());
        assert_eq!((ct, cj), (want, want));
        assert_eq!(table["verdict"], jsonl["verdict"]);
        assert_eq!(table["summary"], jsonl["summary"], "the same measures");
        assert_eq!(
            table["cases"], jsonl["cases"],
            "the same cases, case by case"
        );
    }
    // A bad cell: one line naming the file, the table, the row and the column; exit 2.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE cases SET chunk_ids = 'gold_001, gold_001' WHERE rowid = 2",
        [],
    )
    .unwrap();
    let o = veredicto(&[
        "exam",
        "--golden",
        &spec,
        "--run",
        example("run-stop.trec").to_str().unwrap(),
        "--no-record",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("golden.db") && err.contains("`cases`") && err.contains("chunk_ids"),
        "{err}"
    );
    println!("{}", err.trim());
}
