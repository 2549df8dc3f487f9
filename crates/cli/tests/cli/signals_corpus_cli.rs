//! `veredicto signals` and `veredicto corpus check` end to end: signals simulated from
//! SciFact's queries (seeded clicks, copies, reformulations and thumbs), and a duplicated /
//! obsolete / poisoned copy of the rack example's corpus.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;

/// A small deterministic generator (LCG), so that the simulated log is the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// SciFact's test queries with their first relevant document, in qrels order.
fn scifact_queries(n: usize) -> Vec<(String, String, String)> {
    let beir = test_data().join("scifact/beir");
    let qrels = std::fs::read_to_string(beir.join("qrels/test.tsv")).unwrap();
    let mut rel: Vec<(String, String)> = Vec::new();
    for line in qrels.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        if !rel.iter().any(|(q, _)| q == c[0]) {
            rel.push((c[0].to_owned(), c[1].to_owned()));
        }
    }
    let mut text = std::collections::HashMap::new();
    for line in std::fs::read_to_string(beir.join("queries.jsonl"))
        .unwrap()
        .lines()
    {
        let v: Value = serde_json::from_str(line).unwrap();
        text.insert(
            v["_id"].as_str().unwrap().to_owned(),
            v["text"].as_str().unwrap().to_owned(),
        );
    }
    rel.into_iter()
        .take(n)
        .map(|(q, d)| {
            let t = text[&q].clone();
            (q, t, d)
        })
        .collect()
}

/// What the simulation expects the triage to say.
#[derive(Default, Debug)]
struct Expect {
    clicks: usize,
    copies: usize,
    rescues: usize,
    thumbs_down_retrieved: usize,
}

/// One conversation per query; the scenario comes from the seeded generator:
/// 0 click on the relevant document at rank 2; 1 a shortened query that missed it,
/// reformulated into the full query that got it (clicked); 2 thumbs down although the
/// relevant document was retrieved at rank 3; 3 the relevant document copied.
fn simulate(queries: &[(String, String, String)], seed: u64) -> (String, Expect) {
    let mut rng = Rng(seed);
    let docs: Vec<&str> = queries.iter().map(|q| q.2.as_str()).collect();
    let mut log = String::new();
    let mut expect = Expect::default();
    for (i, (_, text, d)) in queries.iter().enumerate() {
        // Three distinct documents other than the relevant one.
        let mut others: Vec<&str> = Vec::new();
        let mut k = 1 + rng.next() as usize % 5;
        while others.len() < 3 {
            let x = docs[(i + k) % docs.len()];
            if x != d && !others.contains(&x) {
                others.push(x);
            }
            k += 1;
        }
        let conv = format!("conv-{i:03}");
        let t = |m: u32| format!("2025-11-20T10:{:02}:{:02}Z", i % 60, m);
        let mut line = |v: Value| {
            log.push_str(&v.to_string());
            log.push('\n');
        };
        match rng.next() % 4 {
            0 => {
                expect.clicks += 1;
                let retrieved = vec![others[0], d.as_str(), others[1]];
                line(
                    json!({"conversation_id": conv, "time": t(0), "query": text, "retrieved": retrieved, "answer_id": format!("{conv}-a1"), "event": "answer"}),
                );
                line(
                    json!({"conversation_id": conv, "time": t(1), "query": text, "retrieved": retrieved, "answer_id": format!("{conv}-a1"), "event": "click_citation", "chunk": d}),
                );
            }
            1 => {
                expect.rescues += 1;
                let words: Vec<&str> = text.split_whitespace().collect();
                let short = words[..words.len().div_ceil(2)].join(" ") + " (short)";
                line(
                    json!({"conversation_id": conv, "time": t(0), "query": short, "retrieved": others, "answer_id": format!("{conv}-a1"), "event": "answer"}),
                );
                let retrieved = vec![d.as_str(), others[0]];
                line(
                    json!({"conversation_id": conv, "time": t(1), "query": text, "retrieved": retrieved, "answer_id": format!("{conv}-a2"), "event": "reformulate"}),
                );
                line(
                    json!({"conversation_id": conv, "time": t(2), "query": text, "retrieved": retrieved, "answer_id": format!("{conv}-a2"), "event": "click_citation", "chunk": d}),
                );
            }
            2 => {
                expect.thumbs_down_retrieved += 1;
                let retrieved = vec![others[0], others[1], d.as_str()];
                line(
                    json!({"conversation_id": conv, "time": t(0), "query": text, "retrieved": retrieved, "answer_id": format!("{conv}-a1"), "event": "thumbs", "value": "down"}),
                );
            }
            _ => {
                expect.copies += 1;
                line(
                    json!({"conversation_id": conv, "time": t(0), "query": text, "retrieved": [d], "answer_id": format!("{conv}-a1"), "event": "copy", "chunk": d}),
                );
            }
        }
    }
    (log, expect)
}

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn read_jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn scifact_signals_become_candidates_and_failed_answers_are_triaged() {
    let queries = scifact_queries(80);
    let (log, expect) = simulate(&queries, 15);
    assert!(expect.clicks > 5 && expect.rescues > 5 && expect.thumbs_down_retrieved > 5);
    let dir = tempfile::tempdir().unwrap();
    let log_path = write(dir.path(), "log.jsonl", &log);

    let o = veredicto_in(
        dir.path(),
        &["signals", "import", &log_path, "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    let events = log.lines().count() as u64;
    assert_eq!(v["added"], events);
    assert!(dir.path().join(".veredicto/signals.jsonl").is_file());
    // Importing the same log again adds nothing.
    let o = veredicto_in(
        dir.path(),
        &["signals", "import", &log_path, "--format", "json"],
    );
    assert_eq!(json_of(&o)["already_present"], events);

    // Without a golden set: every query with a gesture is a candidate; the shortened
    // queries are failed-query candidates expecting the document the full query got.
    let out = dir.path().join("candidates.jsonl");
    let o = veredicto_in(
        dir.path(),
        &[
            "signals",
            "candidates",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json_of(&o);
    let counts = &report["counts"];
    eprintln!("SciFact signals, 80 queries, seed 15: {counts}");
    let n = expect.clicks + expect.copies + 2 * expect.rescues;
    assert_eq!(counts["candidates"], n as u64, "{expect:?} {counts}");
    assert_eq!(counts["failed_query_candidates"], expect.rescues as u64);
    assert_eq!(
        counts["without_evidence"],
        expect.thumbs_down_retrieved as u64
    );
    assert_eq!(
        counts["triage"]["upstream"], expect.rescues as u64,
        "{counts}"
    );
    assert_eq!(
        counts["triage"]["no_reference"],
        expect.thumbs_down_retrieved as u64
    );
    let cands = read_jsonl(&out);
    assert_eq!(cands.len(), n);
    let by_query: std::collections::HashMap<&str, &str> = queries
        .iter()
        .map(|(_, t, d)| (t.as_str(), d.as_str()))
        .collect();
    for c in &cands {
        assert_eq!(c["candidate"], true);
        assert_eq!(c["gold"], false);
        assert!(c["support"]["events"].as_u64().unwrap() >= 1);
        assert!(!c["evidence"].as_array().unwrap().is_empty());
        let q = c["query"].as_str().unwrap();
        let expected = c["expected"][0].as_str().unwrap();
        match by_query.get(q) {
            Some(d) => assert_eq!(expected, *d, "{q}"),
            None => {
                assert!(q.ends_with("(short)"), "{q}");
                assert!(c["tags"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("failed-query")));
            }
        }
    }
    // The candidates file is a golden set that veredicto's golden-set reader accepts.
    let o = veredicto_in(
        dir.path(),
        &[
            "corpus",
            "check",
            "--corpus",
            example("corpus.jsonl").to_str().unwrap(),
            "--golden",
            out.to_str().unwrap(),
            "--format",
            "json",
            "--as-of",
            "2025-11-20",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // With SciFact's golden set, the full queries are covered; a thumbs down with the
    // relevant document in the context is downstream.
    let o = veredicto_in(
        dir.path(),
        &[
            "signals",
            "candidates",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
            "--golden",
            &test_data().join("scifact/beir").to_string_lossy(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report = json_of(&o);
    assert_eq!(report["counts"]["candidates"], expect.rescues as u64);
    assert_eq!(
        report["counts"]["triage"]["downstream"],
        expect.thumbs_down_retrieved as u64
    );
    assert_eq!(
        report["counts"]["triage"]["upstream"],
        expect.rescues as u64
    );
    let down = report["triage"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["verdict"] == "downstream")
        .unwrap();
    assert!(down["reference"].as_str().unwrap().starts_with("golden:"));
    assert_eq!(down["retrieved_expected"][0][1], 3);

    // Same inputs, byte-identical output.
    let again = veredicto_in(
        dir.path(),
        &[
            "signals",
            "candidates",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
            "--golden",
            &test_data().join("scifact/beir").to_string_lossy(),
        ],
    );
    assert_eq!(stdout(&o), stdout(&again));
}

#[test]
fn bad_logs_are_refused_with_file_line_and_field_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(
        dir.path(),
        "log.jsonl",
        "{\"session\":\"s\",\"time\":\"2025-11-20T10:00:00Z\",\"query\":\"q\",\"type\":\"answer\"}\n\
         {\"session\":\"s\",\"time\":\"2025-11-20T10:01:00Z\",\"query\":\"q\",\"type\":\"thumbs\",\"value\":\"meh\"}\n",
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "signals",
            "import",
            &log,
            "--map",
            "conversation_id=session",
            "--map",
            "event=type",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("log.jsonl:2: field `value`: expected `up` or `down`"),
        "{err}"
    );
    assert!(!dir.path().join(".veredicto/signals.jsonl").exists());
    // Unmapped, the same log misses its conversation.
    let o = veredicto_in(dir.path(), &["signals", "import", &log]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("log.jsonl:1: field `conversation_id`: missing"),
        "{}",
        stderr(&o)
    );
    let o = veredicto_in(
        dir.path(),
        &["signals", "import", &log, "--map", "conversation=session"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown field `conversation`"),
        "{}",
        stderr(&o)
    );
    // No signals file yet.
    let o = veredicto_in(dir.path(), &["signals", "candidates", "--out", "c.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("signals import"), "{}", stderr(&o));
}

/// The rack corpus with problems added: a copy of a gold chunk within its own document,
/// a document re-ingested in a later batch (its old chunk left behind), a chunk without
/// source from an unexpected batch, and a poisoned figure (3.000 € where the gold chunk says
/// 2.000 €).
fn dirty_rack(dir: &Path) -> (String, String) {
    let original = std::fs::read_to_string(example("corpus.jsonl")).unwrap();
    let mut lines: Vec<Value> = original
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let gold_002 = lines
        .iter()
        .find(|l| l["id"] == "gold_002")
        .unwrap()
        .clone();
    let mut copy = gold_002.clone();
    copy["id"] = json!("gold_002_copia");
    lines.push(copy);
    let art = lines
        .iter()
        .find(|l| l["id"] == "silver_acuerdo_004")
        .unwrap()
        .clone();
    let mut again = art.clone();
    again["id"] = json!("silver_acuerdo_004_v2");
    again["text"] = json!(format!("{} (revisado)", art["text"].as_str().unwrap()));
    again["ingest_batch"] = json!("2025-11-25-reingesta");
    again["valid_from"] = json!("2025-11-25");
    lines.push(again);
    lines.push(json!({"id": "pegado_a_mano", "text": "Nota sin origen.", "domain": "laboral", "ingest_batch": "manual"}));
    lines.push(json!({
        "id": "silver_blog_001", "doc_id": "DOC-BLOG-AUTONOMOS", "domain": "fiscal",
        "text": "Gastos de difícil justificación en estimación directa simplificada, con un máximo de 3.000 € al año.",
        "ingest_batch": "2025-11-25-reingesta"
    }));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let dirty = write(dir, "corpus.jsonl", &text);
    let policy = std::fs::read_to_string(example("policy.toml")).unwrap()
        + "\n[corpus]\nexpected_batches = [\"2025-09-01-inicial\", \"2025-10-20-nominas\", \"2025-11-14-viajes\", \"2025-11-25-reingesta\"]\nmax_copies_within_source = 0\nmax_obsolete = 5\nmax_suspicious = 1\n";
    let policy = write(dir, "policy.toml", &policy);
    (dirty, policy)
}

#[test]
fn rack_copy_with_duplicates_obsolete_and_poison_is_found_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, policy) = dirty_rack(dir.path());
    let golden = example("golden.jsonl");
    let since = example("corpus.jsonl");
    let args = [
        "corpus",
        "check",
        "--corpus",
        &corpus,
        "--policy",
        &policy,
        "--golden",
        golden.to_str().unwrap(),
        "--since",
        since.to_str().unwrap(),
        "--as-of",
        "2025-11-20",
        "--format",
        "json",
    ];
    // An accepted exam of the clean corpus, recorded in the history of this folder.
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--run",
            example("run-accept.trec").to_str().unwrap(),
            "--corpus",
            since.to_str().unwrap(),
            "--policy",
            example("policy.toml").to_str().unwrap(),
            "--as-of",
            "2025-11-20",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let o = veredicto_in(dir.path(), &args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json_of(&o);
    // Same inputs, byte-identical JSON.
    assert_eq!(stdout(&veredicto_in(dir.path(), &args)), stdout(&o));
    // Since that run: the batches that entered, and the one that grew (the copy of gold_002).
    let batches: Vec<(&str, &str, u64, u64)> = v["drift"]["since_accepted_run"]["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["batch"].as_str().unwrap(),
                b["change"].as_str().unwrap(),
                b["chunks_then"].as_u64().unwrap(),
                b["chunks_now"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        batches,
        vec![
            ("2025-09-01-inicial", "changed_size", 32, 33),
            ("2025-11-25-reingesta", "entered", 0, 2),
            ("manual", "entered", 0, 1),
        ]
    );
    // The copy of gold_002 within its document; the two rack chunks that repeat a text
    // across two documents are kept as redundancy.
    let within: Vec<&Value> = v["duplicates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["verdict"] == "within_source")
        .collect();
    assert_eq!(within.len(), 1);
    assert_eq!(within[0]["copies"], json!(["gold_002_copia"]));
    assert_eq!(v["redundant_across_sources"], 1);
    // Five expired rack chunks plus the two chunks of the agreement's first version, superseded
    // by the new version that came in a later batch.
    let obsolete: Vec<(String, String)> = v["obsolete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().to_owned(),
                o["why"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(obsolete.len(), 7, "{obsolete:?}");
    let superseded: Vec<&str> = obsolete
        .iter()
        .filter(|(_, why)| why == "superseded")
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(superseded, vec!["silver_acuerdo_004", "silver_acuerdo_006"]);
    let suspicious: Vec<(String, String)> = v["suspicious"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().to_owned(),
                o["why"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        suspicious,
        vec![
            ("pegado_a_mano".to_owned(), "no_source".to_owned()),
            ("pegado_a_mano".to_owned(), "unexpected_batch".to_owned()),
            ("silver_blog_001".to_owned(), "contradicts_gold".to_owned()),
        ]
    );
    let drift = &v["drift"]["since_corpus"];
    assert_eq!(
        (
            drift["entered"].as_u64(),
            drift["changed"].as_u64(),
            drift["left"].as_u64()
        ),
        (Some(4), Some(0), Some(0))
    );
    let breaches: Vec<&str> = v["breaches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        breaches,
        vec![
            "corpus.max_copies_within_source",
            "corpus.max_obsolete",
            "corpus.max_suspicious"
        ]
    );

    // The human report names the same findings; the clean rack corpus passes the policy.
    let human: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| *a != "--format" && *a != "json")
        .collect();
    let o = veredicto_in(dir.path(), &human);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("within_source") && text.contains("gold_002_copia"),
        "{text}"
    );
    assert!(text.contains("contradicts_gold  silver_blog_001"), "{text}");
    assert!(
        text.contains("corpus.max_suspicious: 2 found, at most 1 allowed"),
        "{text}"
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "corpus",
            "check",
            "--corpus",
            since.to_str().unwrap(),
            "--policy",
            &policy,
            "--as-of",
            "2025-11-20",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn aggregation_questions_are_flagged_in_golden_sets_and_signals() {
    let dir = tempfile::tempdir().unwrap();
    let golden = write(
        dir.path(),
        "golden.jsonl",
        "{\"id\":\"agg-1\",\"query\":\"¿Cuántos contratos vencen este trimestre?\",\"expected\":[\"x\"]}\n\
         {\"id\":\"agg-2\",\"query\":\"Which is the most expensive supplier?\",\"expected\":[\"x\"]}\n\
         {\"id\":\"fact\",\"query\":\"¿Cuántos días de asuntos propios corresponden?\",\"expected\":[\"x\"]}\n",
    );
    let signals = write(
        dir.path(),
        "signals.jsonl",
        "{\"conversation_id\":\"c\",\"time\":\"2025-11-20T10:00:00Z\",\"query\":\"gasto en dietas mes a mes\",\"event\":\"thumbs\",\"value\":\"down\"}\n",
    );
    let policy = write(
        dir.path(),
        "policy.toml",
        "[corpus]\nmax_aggregation_questions = 2\n",
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "corpus",
            "check",
            "--corpus",
            example("corpus.jsonl").to_str().unwrap(),
            "--golden",
            &golden,
            "--signals",
            &signals,
            "--policy",
            &policy,
            "--format",
            "json",
            "--as-of",
            "2025-11-20",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json_of(&o);
    let kinds: Vec<(&str, &str)> = v["aggregation_questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["id"].as_str().unwrap(),
                a["aggregation"]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds.len(), 3);
    assert_eq!(kinds[0], ("agg-1", "count"));
    assert_eq!(kinds[1], ("agg-2", "superlative"));
    assert_eq!(kinds[2].1, "series");
    // The failed signal on that question is not a retrieval failure.
    let o = veredicto_in(
        dir.path(),
        &[
            "signals",
            "candidates",
            "--log",
            &signals,
            "--out",
            "c.jsonl",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_of(&o)["counts"]["triage"]["aggregation"], 1);
}

#[test]
fn corpus_check_bad_input_exits_2_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = example("corpus.jsonl");
    let policy = write(
        dir.path(),
        "policy.toml",
        "top_k = 10\n[corpus]\nmax_obsolet = 1\n",
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "corpus",
            "check",
            "--corpus",
            corpus.to_str().unwrap(),
            "--policy",
            &policy,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("policy.toml:3: field `corpus.max_obsolet`"),
        "{}",
        stderr(&o)
    );
    let bad = write(
        dir.path(),
        "bad.jsonl",
        "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"a\"}\n",
    );
    let o = veredicto_in(dir.path(), &["corpus", "check", "--corpus", &bad]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad.jsonl:2: field `id`: duplicate"),
        "{}",
        stderr(&o)
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "corpus",
            "check",
            "--corpus",
            corpus.to_str().unwrap(),
            "--as-of",
            "2025-13-01",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    // The exam still reads a policy that has a [corpus] table.
    let ok = write(
        dir.path(),
        "ok.toml",
        "top_k = 10\n[corpus]\nmax_obsolete = 1\n",
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            example("golden.jsonl").to_str().unwrap(),
            "--run",
            example("run-accept.trec").to_str().unwrap(),
            "--policy",
            &ok,
            "--no-record",
        ],
    );
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// Paraphrases merge by embedding similarity with the MiniLM model (equal normalised text
/// would not join them); near duplicates of the corpus come from the index's vectors.
#[test]
fn paraphrases_merge_with_a_model_and_index_vectors_find_near_duplicates() {
    let model = workspace().join("models/all-MiniLM-L6-v2");
    if !model.join("model.safetensors").is_file() {
        eprintln!("skipped: no MiniLM model");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = write(
        dir.path(),
        "log.jsonl",
        "{\"conversation_id\":\"c1\",\"time\":\"2025-11-20T10:00:00Z\",\"query\":\"How many vacation days do I get per year?\",\"event\":\"click_citation\",\"chunk\":\"gold_002\"}\n\
         {\"conversation_id\":\"c2\",\"time\":\"2025-11-20T10:05:00Z\",\"query\":\"How many days of vacation do I get each year?\",\"event\":\"click_citation\",\"chunk\":\"gold_002\"}\n\
         {\"conversation_id\":\"c3\",\"time\":\"2025-11-20T10:09:00Z\",\"query\":\"What is the travel allowance abroad?\",\"event\":\"click_citation\",\"chunk\":\"gold_005\"}\n",
    );
    let m = model.to_string_lossy();
    let run = |extra: &[&str]| {
        let mut a = vec![
            "signals",
            "candidates",
            "--log",
            &log,
            "--out",
            "c.jsonl",
            "--format",
            "json",
        ];
        a.extend_from_slice(extra);
        json_of(&veredicto_in(dir.path(), &a))
    };
    assert_eq!(run(&[])["counts"]["candidates"], 3);
    let merged = run(&["--model", &m]);
    assert_eq!(merged["counts"]["candidates"], 2, "{merged}");
    assert_eq!(merged["counts"]["merged_by_embedding"], 1);

    // An index of the rack corpus plus a reworded copy of a chunk.
    let original = std::fs::read_to_string(example("corpus.jsonl")).unwrap();
    let mut text = original.clone();
    let mut g: Value = serde_json::from_str(
        original
            .lines()
            .find(|l| l.contains("\"gold_003\""))
            .unwrap(),
    )
    .unwrap();
    g["id"] = json!("gold_003_bis");
    g["representation"] = json!(format!(
        "{} ",
        g["representation"]
            .as_str()
            .unwrap()
            .replace("Síntesis", "Resumen")
    ));
    g["text"] = json!(g["text"]
        .as_str()
        .unwrap()
        .replace("Síntesis curada.", "Resumen curado."));
    text.push_str(&format!("{g}\n"));
    let corpus = write(dir.path(), "corpus.jsonl", &text);
    let index = dir.path().join("index");
    let o = veredicto_in(
        dir.path(),
        &[
            "ingest",
            "--corpus",
            &corpus,
            "--index",
            index.to_str().unwrap(),
            "--model",
            &m,
            "--batch-label",
            "b1",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = veredicto_in(
        dir.path(),
        &[
            "corpus",
            "check",
            "--index",
            index.to_str().unwrap(),
            "--format",
            "json",
            "--as-of",
            "2025-11-20",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = json_of(&o);
    assert_eq!(v["vectors"], 43);
    let near: Vec<&Value> = v["duplicates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "near")
        .collect();
    assert!(
        near.iter().any(|d| d["members"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "gold_003_bis")),
        "{v}"
    );
}

/// Imports running at once append whole lines under the lock: nothing lost, nothing
/// interleaved, and a second round adds nothing.
#[test]
fn concurrent_imports_keep_every_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let queries = scifact_queries(40);
    let mut logs = Vec::new();
    let mut total = 0;
    for k in 0..4u64 {
        let (log, _) = simulate(&queries[k as usize * 10..(k as usize + 1) * 10], 100 + k);
        total += log.lines().count();
        logs.push(write(dir.path(), &format!("log{k}.jsonl"), &log));
    }
    for _round in 0..2 {
        let children: Vec<std::process::Child> = logs
            .iter()
            .map(|l| {
                std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"))
                    .args(["signals", "import", l])
                    .current_dir(dir.path())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let stored = std::fs::read_to_string(dir.path().join(".veredicto/signals.jsonl")).unwrap();
        assert_eq!(stored.lines().count(), total);
        for l in stored.lines() {
            serde_json::from_str::<Value>(l).unwrap();
        }
    }
}

/// A log with its own event names: `--map-event` maps them to veredicto's (the imported
/// events are canonical, and a mapped click makes a candidate like a canonical one); an
/// unmapped name is refused with file, line and field; a bad mapping before reading.
#[test]
fn event_names_are_mapped_with_map_event() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(
        dir.path(),
        "log.jsonl",
        "{\"conversation_id\":\"s\",\"time\":\"2025-11-20T10:00:00Z\",\"query\":\"what is the rack depth\",\"retrieved\":[\"a\",\"b\"],\"type\":\"cite\",\"chunk\":\"b\"}\n\
         {\"conversation_id\":\"s\",\"time\":\"2025-11-20T10:01:00Z\",\"query\":\"what is the rack depth\",\"type\":\"vote\",\"value\":\"up\"}\n",
    );
    let args = |extra: &[&str]| {
        let mut a = vec![
            "signals",
            "import",
            log.as_str(),
            "--map",
            "event=type",
            "--format",
            "json",
        ];
        a.extend_from_slice(extra);
        veredicto_in(dir.path(), &a)
    };
    let o = args(&["--map-event", "cite=click_citation"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("log.jsonl:2: field `type`: unknown event `vote`"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join(".veredicto/signals.jsonl").exists());
    let o = args(&["--map-event", "click_citation=cite"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--map-event cite=click_citation"),
        "{}",
        stderr(&o)
    );
    let o = args(&[
        "--map-event",
        "cite=click_citation",
        "--map-event",
        "vote=thumbs",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let stored = std::fs::read_to_string(dir.path().join(".veredicto/signals.jsonl")).unwrap();
    assert!(stored.contains("\"event\":\"click_citation\""), "{stored}");
    assert!(stored.contains("\"event\":\"thumbs\""), "{stored}");
    let o = veredicto_in(
        dir.path(),
        &[
            "signals",
            "candidates",
            "--out",
            "c.jsonl",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let cases = std::fs::read_to_string(dir.path().join("c.jsonl")).unwrap();
    assert!(cases.contains("\"expected\":[\"b\"]"), "{cases}");
}
