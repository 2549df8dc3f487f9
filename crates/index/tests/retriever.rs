//! The index retriever: precomputed query vectors, exact ranks beyond the listed depth,
//! a second stage that reorders the candidates, and errors that name the case.

mod common;

use common::build;
use veredicto_core::case::Case;
use veredicto_embed::{EmbedError, Reranker, RerankerFingerprint};
use veredicto_index::retriever::{corpus_of, retrieve, RetrieveError, Settings};
use veredicto_index::ChunkMeta;

/// 40 chunks on the unit circle: chunk `c{i}` at angle i degrees, so a query at 0 degrees
/// ranks them c0, c1, c2, ... exactly.
fn circle() -> Vec<(String, Vec<f32>)> {
    (0..40)
        .map(|i| {
            let a = (i as f32).to_radians();
            (format!("c{i}"), vec![a.cos(), a.sin()])
        })
        .collect()
}

fn case(id: &str, expected: &[&str]) -> Case {
    Case {
        id: id.into(),
        query: format!("query {id}"),
        expected: expected.iter().map(|s| s.to_string()).collect(),
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: Some(3),
        domain: None,
        tags: Vec::new(),
        gold: false,
        query_vector: Some(vec![1.0, 0.0]),
        filters: None,
    }
}

/// A second stage that prefers the passage whose chunk number is highest (it reads the text
/// the index kept: `text of c{i}` is not in the record, so it gets the chunk ID).
struct ByNumber(RerankerFingerprint);

impl Reranker for ByNumber {
    fn fingerprint(&self) -> &RerankerFingerprint {
        &self.0
    }
    fn score(&self, _query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Ok(passages
            .iter()
            .map(|p| p.trim_start_matches('c').parse::<f32>().unwrap_or(-1.0))
            .collect())
    }
}

fn by_number() -> ByNumber {
    ByNumber(RerankerFingerprint {
        name: "by-number".into(),
        architecture: "test".into(),
        files: Default::default(),
        max_tokens: 0,
        score: "logit".into(),
    })
}

#[test]
fn lists_depth_and_knows_ranks_beyond_it() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(&dir.path().join("ix"), &circle(), |_| ChunkMeta::default());
    let cases = [case("q1", &["c1", "c25"])];
    let r = retrieve(
        &index,
        None,
        &cases,
        |c| c.top_k.unwrap_or(10) as usize,
        &Settings {
            depth: 5,
            reranker: None,
            candidates: 0,
            keep: 0,
        },
    )
    .unwrap();
    let ids: Vec<&str> = r.run.queries["q1"].iter().map(|x| x.id.as_str()).collect();
    assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4"]);
    let known = &r.run.known_ranks["q1"];
    assert_eq!(known["c1"].0, 2);
    assert_eq!(
        known["c25"].0, 26,
        "the exact rank far beyond the listed depth"
    );
    assert!(r.stage1.is_none());
    assert_eq!(r.latency["search"].count, 1);
    assert!(
        !r.latency.contains_key("query_embedding"),
        "no model was needed"
    );
}

#[test]
fn a_second_stage_reorders_the_candidates_and_keeps_stage_one() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(&dir.path().join("ix"), &circle(), |_| ChunkMeta::default());
    let cases = [case("q1", &["c0", "c9", "c30"])];
    let rr = by_number();
    let r = retrieve(
        &index,
        None,
        &cases,
        |_| 3,
        &Settings {
            depth: 3,
            reranker: Some(&rr),
            candidates: 10,
            keep: 4,
        },
    )
    .unwrap();
    let ids: Vec<&str> = r.run.queries["q1"].iter().map(|x| x.id.as_str()).collect();
    assert_eq!(ids, ["c9", "c8", "c7", "c6"], "reranked, `keep` deep");
    let known = &r.run.known_ranks["q1"];
    assert_eq!(known["c9"].0, 1);
    assert_eq!(known["c0"].0, 10, "last of the reranked candidates");
    assert_eq!(
        known["c30"].0, 31,
        "outside the candidates: its stage-1 rank"
    );
    let s1 = r.stage1.expect("stage 1 kept");
    assert_eq!(s1.queries["q1"].len(), 10);
    assert_eq!(s1.queries["q1"][0].id, "c0");
    assert_eq!(r.latency["rerank"].count, 1);
}

#[test]
fn errors_name_the_case() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(&dir.path().join("ix"), &circle(), |_| ChunkMeta::default());
    let settings = Settings {
        depth: 3,
        reranker: None,
        candidates: 0,
        keep: 0,
    };
    let mut bad = case("q-dim", &["c1"]);
    bad.query_vector = Some(vec![1.0, 0.0, 0.0]);
    let e = retrieve(&index, None, &[bad], |_| 3, &settings).unwrap_err();
    assert!(matches!(
        e,
        RetrieveError::QueryDimension {
            got: 3,
            want: 2,
            ..
        }
    ));
    assert!(e.to_string().contains("q-dim"), "{e}");
    let mut none = case("q-none", &["c1"]);
    none.query_vector = None;
    let e = retrieve(&index, None, &[none], |_| 3, &settings).unwrap_err();
    assert!(
        e.to_string()
            .contains("case `q-none` has no `query_vector`"),
        "{e}"
    );
}

#[test]
fn the_corpus_comes_back_from_the_stored_records() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(&dir.path().join("ix"), &circle(), |_| ChunkMeta::default());
    let corpus = corpus_of(&index).unwrap();
    assert_eq!(corpus.len(), 40);
    let c3 = corpus.get("c3").expect("c3");
    assert_eq!(
        c3.ingest_batch.as_deref(),
        Some("b1"),
        "the batch comes from the index"
    );
    assert_eq!(
        corpus.batch_time("b1"),
        Some("2025-01-01T00:00:00Z"),
        "with its time from the index's batch record"
    );
    assert_eq!(corpus.batches().len(), 1);
    assert_eq!(corpus.batches()[0].chunks, 40);
}
