//! The own index's modes (`index:DIR?mode=vector|bm25|hybrid`) and the `fusion:` retriever:
//! what each answers, against the index's own searches fused by hand, and what each refuses.

use std::path::Path;

use veredicto_core::fusion::Fusion;
use veredicto_index::{
    Analyzer, BatchInfo, ChunkInput, EmbeddedField, Index, IngestSettings, LexicalQuery,
    ModelFingerprint, Plan, Query,
};
use veredicto_retrieve::fusion::{fuse_rankings, FusionRetriever};
use veredicto_retrieve::{Hit, Options, Ranking, Request, Retriever, Vectors};

const TEXTS: [&str; 8] = [
    "The cat sat on the mat",
    "Cats and dogs are running in the park",
    "A dog runs after the cat",
    "Quantum mechanics of running particles",
    "The mat was red and the cat was black",
    "Dogs, dogs, dogs: a study of dog behaviour",
    "Nothing in common with the others",
    "Parks and recreation for dogs and cats",
];

fn vector(i: usize) -> Vec<f32> {
    vec![
        1.0 + i as f32,
        (i % 3) as f32 - 1.0,
        ((i * 7) % 5) as f32 * 0.3,
    ]
}

fn build(dir: &Path, lexical: bool) {
    let corpus: Vec<ChunkInput> = TEXTS
        .iter()
        .enumerate()
        .map(|(i, t)| ChunkInput::new(format!("c{i}"), t.to_string()))
        .collect();
    let settings = IngestSettings {
        model: ModelFingerprint {
            value: serde_json::json!({"name": "test"}),
            hash: format!("sha256:{}", "ab".repeat(32)),
        },
        dimension: 3,
        field: EmbeddedField::Text,
        full_rebuild: false,
    };
    let vectors: Vec<Vec<f32>> = (0..TEXTS.len()).map(vector).collect();
    let mut plan = Plan::with_vectors(None, corpus, vectors, settings).unwrap();
    if lexical {
        plan = plan.with_lexical(Some(Analyzer::English));
    }
    let batch = BatchInfo {
        name: "b1".into(),
        time: "2025-01-01T00:00:00Z".into(),
        corpus_hash: format!("sha256:{}", "cd".repeat(32)),
    };
    plan.apply(&[] as &[Vec<f32>], &batch, dir).unwrap();
}

fn request<'a>(query: &'a str, vector: Option<&'a [f32]>, expected: &'a [String]) -> Request<'a> {
    Request {
        case_id: "q1",
        query,
        vector,
        depth: 3,
        expected,
        exact: false,
        filters: None,
    }
}

/// The index's own BM25 and vector rankings of a query (top `k`), as retriever rankings.
fn direct(index: &Index, query: &str, vector: &[f32], k: usize) -> (Ranking, Ranking) {
    let to_ranking = |r: &veredicto_index::QueryResult| Ranking {
        hits: r
            .hits
            .iter()
            .map(|h| Hit {
                id: index.chunk(h.row).id().to_owned(),
                score: Some(f64::from(h.score)),
                span: None,
            })
            .collect(),
        known: Default::default(),
    };
    let lexical = index
        .search_lexical(&[LexicalQuery {
            text: query,
            k,
            filter: None,
            rank_ids: &[],
        }])
        .unwrap();
    let dense = index.search_batch(&[Query::new(vector, k)]).unwrap();
    (to_ranking(&dense[0]), to_ranking(&lexical[0]))
}

fn ids(r: &Ranking) -> Vec<&str> {
    r.hits.iter().map(|h| h.id.as_str()).collect()
}

#[test]
fn bm25_mode_ranks_by_the_lexical_arm_from_the_text_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, true);
    let uri = format!("index:{}?mode=bm25", dir.display());
    let r = veredicto_retrieve::open(&uri, &Options::default()).unwrap();
    assert_eq!(r.vectors(), Vectors::Never);
    assert!(!r.embedding_based());
    assert_eq!(r.describe(), uri);
    let expected = vec!["c5".to_string(), "c6".to_string()];
    let got = r.search(&request("dog running", None, &expected)).unwrap();
    let index = Index::open(&dir).unwrap();
    let (_, lexical) = direct(&index, "dog running", &vector(0), 3);
    assert_eq!(got.hits, lexical.hits);
    assert!(ids(&got).contains(&"c2"), "{:?}", ids(&got));
    // The exact rank of an expected chunk beyond the depth, as for the vector search; a
    // chunk without a query term has none.
    assert!(got.known.contains_key("c5") || ids(&got).contains(&"c5"));
    assert!(!got.known.contains_key("c6"));
}

#[test]
fn hybrid_mode_is_rrf_of_the_vector_and_bm25_rankings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, true);
    let uri = format!("index:{}?mode=hybrid", dir.display());
    let r = veredicto_retrieve::open(&uri, &Options::default()).unwrap();
    assert_eq!(r.vectors(), Vectors::Required);
    let v = vector(2);
    let got = r
        .search(&request("the cat on a mat", Some(&v), &[]))
        .unwrap();
    let index = Index::open(&dir).unwrap();
    let (dense, lexical) = direct(&index, "the cat on a mat", &v, 3);
    let fusion: Fusion = "rrf?k=60".parse().unwrap();
    let want = fuse_rankings(&fusion, &[dense, lexical], 3).unwrap();
    assert_eq!(got, want);
    assert_eq!(got.hits.len(), 3);
    assert!(got.hits.iter().all(|h| h.score.is_some()));
    // Without a vector, hybrid cannot search.
    assert!(r.search(&request("cat", None, &[])).is_err());
}

#[test]
fn a_bm25_mode_on_an_index_without_the_arm_and_an_unknown_mode_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, false);
    for mode in ["bm25", "hybrid"] {
        let uri = format!("index:{}?mode={mode}", dir.display());
        let e = veredicto_retrieve::open(&uri, &Options::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("has no BM25 arm"), "{e}");
    }
    let uri = format!("index:{}?mode=sparse", dir.display());
    let e = veredicto_retrieve::open(&uri, &Options::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("unknown mode `sparse`"), "{e}");
    // The vector mode, spelled or not, opens it.
    let uri = format!("index:{}?mode=vector", dir.display());
    assert!(veredicto_retrieve::open(&uri, &Options::default()).is_ok());
}

#[test]
fn a_fusion_of_an_index_arm_and_a_run_file_fuses_their_rankings_and_counts_each_arm() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, true);
    let run = tmp.path().join("run.trec");
    std::fs::write(
        &run,
        "q1 Q0 c7 1 0.9 x\nq1 Q0 c1 2 0.5 x\nq1 Q0 c3 3 0.2 x\nq1 Q0 c4 4 0.1 x\n",
    )
    .unwrap();
    let arms = [
        format!("index:{}?mode=bm25", dir.display()),
        format!("run:{}", run.display()),
    ];
    let f = FusionRetriever::open(
        "fusion:wsum?w=0.7,0.3&norm=zscore",
        &arms,
        &Options::default(),
    )
    .unwrap();
    let stats = f.stats();
    let r: Box<dyn Retriever> = Box::new(f);
    assert_eq!(r.kind(), "fusion");
    assert_eq!(r.vectors(), Vectors::Never);
    assert!(r
        .describe()
        .starts_with("fusion:wsum?w=0.7,0.3&norm=zscore arms: index:"));
    let expected = vec!["c5".to_string(), "c4".to_string()];
    let got = r.search(&request("dogs", None, &expected)).unwrap();
    let index = Index::open(&dir).unwrap();
    let (_, lexical) = direct(&index, "dogs", &vector(0), 3);
    let from_file = Ranking {
        hits: [("c7", 0.9), ("c1", 0.5), ("c3", 0.2)]
            .iter()
            .map(|(i, s)| Hit {
                id: i.to_string(),
                score: Some(*s),
                span: None,
            })
            .collect(),
        known: Default::default(),
    };
    let fusion: Fusion = "wsum?w=0.7,0.3&norm=zscore".parse().unwrap();
    let want = fuse_rankings(&fusion, &[lexical.clone(), from_file], 3).unwrap();
    assert_eq!(got, want);
    // Per arm: one call each, one case, and the rank at which each expected chunk was found.
    let arms = stats.arms();
    assert_eq!(arms.len(), 2);
    assert_eq!(arms[0].kind, "index");
    assert_eq!(arms[1].kind, "run-file");
    assert!(arms.iter().all(|a| a.cases == 1 && a.seconds.len() == 1));
    assert_eq!(arms[1].expected_ranks["q1"], [None, Some(4)]);
    let c5 = lexical
        .hits
        .iter()
        .position(|h| h.id == "c5")
        .map(|i| i + 1);
    assert_eq!(
        arms[0].expected_ranks["q1"][0],
        c5.or(arms[0].expected_ranks["q1"][0])
    );
    assert_eq!(arms[1].recall_at(3), Some(0.0));
    assert_eq!(arms[1].recall_at(4), Some(0.5));
}

#[test]
fn a_fusion_without_enough_arms_or_with_a_weight_per_arm_missing_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, true);
    let e = veredicto_retrieve::open("fusion:rrf?k=60", &Options::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("--arm"), "{e}");
    let arm = format!("index:{}?mode=bm25", dir.display());
    let e = FusionRetriever::open(
        "fusion:rrf",
        std::slice::from_ref(&arm),
        &Options::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("two arms at least"), "{e}");
    let e = FusionRetriever::open(
        "fusion:wsum?w=1",
        &[arm.clone(), arm.clone()],
        &Options::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("1 weights for 2 arms"), "{e}");
    let e = FusionRetriever::open("fusion:borda", &[arm.clone(), arm], &Options::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("unknown fusion method `borda`"), "{e}");
}
