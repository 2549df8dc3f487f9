//! The Chroma retriever against a real Chroma server (the `chromadb` wheel's server, started
//! by `scripts/engines.sh start chroma`; its URL in VEREDICTO_TEST_CHROMA, as
//! `scripts/test.sh` sets it). Each test makes its own collection with a unique name.

#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::worded::examine;
use serde_json::{json, Value};
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::diagnosis::DiagnosisFinding;
use veredicto_core::policy::Policy;
use veredicto_index::*;
use veredicto_net::{HttpClient, HttpSettings};
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options, Request, RetrieveError};

fn chroma() -> String {
    std::env::var("VEREDICTO_TEST_CHROMA").unwrap_or_else(|_| {
        panic!(
            "VEREDICTO_TEST_CHROMA is not set: start the test server with \
             `export VEREDICTO_TEST_CHROMA=$(scripts/engines.sh start chroma)` (stop it with \
             `scripts/engines.sh stop chroma`), or run scripts/test.sh"
        )
    })
}

/// A small deterministic generator (SplitMix64), uniform in [-1, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    fn vector(&mut self, dim: usize) -> Vec<f32> {
        (0..dim).map(|_| self.next()).collect()
    }
}

const DIM: usize = 8;

/// The collection: chunk `c000`…, random vectors, `domain` even/odd, labels.
fn chunks(n: usize) -> Vec<(String, Vec<f32>)> {
    let mut rng = Rng(7);
    (0..n)
        .map(|i| (format!("c{i:03}"), rng.vector(DIM)))
        .collect()
}

fn client() -> HttpClient {
    HttpClient::new(HttpSettings::default()).unwrap()
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Makes a collection (distance `space`) holding `chunks`; gives its name.
fn make_collection(space: &str, chunks: &[(String, Vec<f32>)]) -> String {
    let name = format!(
        "kb-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let base = format!(
        "{}/api/v2/tenants/default_tenant/databases/default_database/collections",
        chroma()
    );
    let c = client();
    let made = c
        .post_json(
            &base,
            &json!({"name": name, "configuration": {"hnsw": {"space": space}}}),
        )
        .unwrap();
    let id = made["id"].as_str().unwrap().to_owned();
    for batch in chunks.chunks(100) {
        let ids: Vec<&str> = batch.iter().map(|(id, _)| id.as_str()).collect();
        let vectors: Vec<&Vec<f32>> = batch.iter().map(|(_, v)| v).collect();
        let metadatas: Vec<Value> = batch
            .iter()
            .map(|(id, _)| {
                let i: usize = id[1..].parse().unwrap();
                let domain = if i.is_multiple_of(2) { "even" } else { "odd" };
                let labels: Vec<&str> = if i.is_multiple_of(3) {
                    vec!["three", "all"]
                } else {
                    vec!["all"]
                };
                json!({"domain": domain, "labels": labels})
            })
            .collect();
        c.post_json(
            &format!("{base}/{id}/add"),
            &json!({"ids": ids, "embeddings": vectors, "metadatas": metadatas}),
        )
        .unwrap();
    }
    name
}

fn uri(name: &str) -> String {
    format!("chroma+{}/{name}", chroma())
}

fn cases(n: usize, chunks: &[(String, Vec<f32>)]) -> Vec<Case> {
    let mut rng = Rng(99);
    (0..n)
        .map(|i| {
            // Each query lies near one chunk: that chunk is expected.
            let (target, v) = &chunks[(i * 7) % chunks.len()];
            let q: Vec<f32> = v.iter().map(|x| x + 0.1 * rng.next()).collect();
            Case {
                id: format!("q{i:02}"),
                query: format!("query {i}"),
                expected: vec![target.clone()],
                top_k: Some(5),
                domain: None,
                tags: vec![],
                gold: false,
                query_vector: Some(q),
                filters: None,
                grades: Default::default(),
                evidence: Vec::new(),
            }
        })
        .collect()
}

fn exam(uri: &str, cases: &[Case], exactness_check: bool) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, &Options::default())?;
    let policy = Policy {
        noise_ceiling: 1.0,
        ..Policy::default()
    };
    let notes = BTreeMap::new();
    examine(
        retriever.as_ref(),
        None,
        &Inputs {
            cases,
            corpus: None,
            policy: &policy,
            notes: &notes,
            as_of: None,
        },
        &Settings {
            depth: 10,
            exactness_check,
            ..Settings::default()
        },
    )
}

/// veredicto's own index over the same chunks and vectors.
fn own_index(dir: &std::path::Path, chunks: &[(String, Vec<f32>)]) {
    let corpus: Vec<ChunkInput> = chunks
        .iter()
        .map(|(id, _)| ChunkInput::new(id.clone(), format!("text of {id}")))
        .collect();
    let settings = IngestSettings {
        model: ModelFingerprint {
            value: json!({"name": "seeded"}),
            hash: format!("sha256:{}", "ab".repeat(32)),
        },
        dimension: DIM,
        field: EmbeddedField::Representation,
        full_rebuild: false,
    };
    let plan = Plan::new(None, corpus, settings).unwrap();
    let by_id: BTreeMap<&str, &Vec<f32>> = chunks.iter().map(|(id, v)| (id.as_str(), v)).collect();
    let vectors: Vec<Vec<f32>> = plan
        .to_embed()
        .iter()
        .map(|(id, _)| by_id[&id[..]].clone())
        .collect();
    let batch = BatchInfo {
        name: "b1".into(),
        time: "2025-01-01T00:00:00Z".into(),
        corpus_hash: format!("sha256:{}", "cd".repeat(32)),
    };
    plan.apply(&vectors, &batch, dir).unwrap();
}

fn ranks(e: &Examined) -> BTreeMap<String, Vec<String>> {
    e.retrieval
        .run
        .queries
        .iter()
        .map(|(case, list)| (case.clone(), list.iter().map(|h| h.id.clone()).collect()))
        .collect()
}

#[test]
fn chroma_ranks_agree_with_the_own_index_on_the_same_vectors() {
    // More chunks than Chroma's brute-force buffer (100): the queries go through its HNSW
    // index.
    let chunks = chunks(400);
    let name = make_collection("cosine", &chunks);
    let cases = cases(40, &chunks);
    let served = exam(&uri(&name), &cases, false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    own_index(&dir.path().join("idx"), &chunks);
    let own = exam(
        &format!("index:{}", dir.path().join("idx").display()),
        &cases,
        false,
    )
    .unwrap();
    let (a, b) = (ranks(&served), ranks(&own));
    assert_eq!(a.len(), 40);
    let identical = a
        .iter()
        .filter(|(case, list)| b.get(*case) == Some(list))
        .count();
    println!("chroma: {identical} of 40 cases with identical top-10 ranks to the own index");
    assert!(identical >= 36, "{identical} of 40");
    // Scores are similarities (1 − cosine distance), as the own index's.
    let case = &served.report.cases[0];
    assert!(case.passed, "{case:?}");
    let first_served = served.retrieval.run.queries["q00"][0].score.unwrap();
    let first_own = own.retrieval.run.queries["q00"][0].score.unwrap();
    assert!(
        (first_served - first_own).abs() < 1e-4,
        "{first_served} vs {first_own}"
    );
    assert_eq!(served.report.run.name, uri(&name));
}

#[test]
fn chroma_filters_become_a_where_clause() {
    let chunks = chunks(60);
    let name = make_collection("cosine", &chunks);
    let r = open(&uri(&name), &Options::default()).unwrap();
    let search = |filters: Value| {
        r.search(&Request {
            case_id: "q",
            query: "q",
            vector: Some(&chunks[4].1),
            depth: 10,
            expected: &[],
            exact: false,
            filters: filters.as_object(),
        })
    };
    let even = search(json!({"domain": "even"})).unwrap();
    assert_eq!(even.hits.len(), 10);
    assert_eq!(even.hits[0].id, "c004");
    assert!(even
        .hits
        .iter()
        .all(|h| h.id[1..].parse::<usize>().unwrap().is_multiple_of(2)));
    // A label matches an element of the `labels` array; with a domain, both must hold.
    let both = search(json!({"domain": "even", "labels": ["three"]})).unwrap();
    assert!(!both.hits.is_empty());
    assert!(
        both.hits
            .iter()
            .all(|h| h.id[1..].parse::<usize>().unwrap().is_multiple_of(6)),
        "{:?}",
        both.hits
    );
    let e = search(json!({"valid_at": "2025-01-01"})).err().unwrap();
    assert!(e.to_string().contains("valid_at"), "{e}");
}

#[test]
fn chroma_expected_chunk_missing_from_the_collection_is_named() {
    let chunks = chunks(30);
    let name = make_collection("cosine", &chunks);
    let mut cases = cases(3, &chunks);
    cases[1].expected = vec!["c999".to_owned()];
    let e = exam(&uri(&name), &cases, false).unwrap();
    let case = &e.report.cases[1];
    assert!(!case.passed);
    assert!(
        matches!(
            &case.diagnosis[0].detail,
            Some(DiagnosisFinding::NotInCollection { collection }) if *collection == format!("collection `{name}`")
        ),
        "{:?}",
        case.diagnosis
    );
    assert!(e.report.cases[0].passed);
}

#[test]
fn chroma_has_no_exact_mode_and_refuses_the_exactness_check() {
    let chunks = chunks(30);
    let name = make_collection("l2", &chunks);
    let cases = cases(2, &chunks);
    let e = exam(&uri(&name), &cases, true).err().unwrap();
    assert!(e.to_string().contains("--exactness-check"), "{e}");
    // l2 collections: the score is minus the distance, best first.
    let served = exam(&uri(&name), &cases, false).unwrap();
    let list = &served.retrieval.run.queries["q00"];
    assert!(list[0].score.unwrap() <= 0.0);
    assert!(list[0].score >= list[1].score);
}

#[test]
fn chroma_missing_collection_and_wrong_dimension_stop_before_any_case() {
    let e = exam(&uri("no-such-collection"), &cases(1, &chunks(5)), false)
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(
        text.contains("chroma collection `no-such-collection`: no such collection"),
        "{text}"
    );
    let chunks = chunks(10);
    let name = make_collection("cosine", &chunks);
    let r = open(&uri(&name), &Options::default()).unwrap();
    let e = r.prepare(Some(DIM + 1)).err().unwrap();
    assert!(
        e.to_string().contains(&format!(
            "its vectors have dimension {DIM}, the embedder's have {}",
            DIM + 1
        )),
        "{e}"
    );
    r.prepare(Some(DIM)).unwrap();
    // A query vector of another dimension: Chroma's refusal (HTTP 400) is an error of the
    // setup, with Chroma's own words.
    let e = r
        .search(&Request {
            case_id: "q",
            query: "q",
            vector: Some(&[1.0, 0.0]),
            depth: 3,
            expected: &[],
            exact: false,
            filters: None,
        })
        .err()
        .unwrap();
    assert!(matches!(e, RetrieveError::Setup { .. }), "{e:?}");
    assert!(e.to_string().contains("HTTP 400"), "{e}");
}

#[test]
fn chroma_returns_stored_vectors_for_the_model_check() {
    let chunks = chunks(20);
    let name = make_collection("cosine", &chunks);
    let r = open(&uri(&name), &Options::default()).unwrap();
    let got = r
        .stored_vectors(&["c003", "c999", "c001"])
        .unwrap()
        .unwrap();
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c003", "c001"]);
    // Chroma may normalise what a cosine collection stores: the direction is what counts.
    let (a, b) = (&got[0].1, &chunks[3].1);
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!(dot / (n(a) * n(b)) > 0.9999, "{a:?} vs {b:?}");
}
