//! The own index answers a batch of cases in one pass with exactly what it answers one case
//! at a time: the same hits, scores and exact ranks of the expected chunks, bit for bit, at
//! any thread count.

use veredicto_index::{
    BatchInfo, ChunkInput, EmbeddedField, IngestSettings, ModelFingerprint, Plan,
};
use veredicto_retrieve::own_index::OwnIndex;
use veredicto_retrieve::{Ranking, Request, Retriever};

fn vector(i: usize, dim: usize) -> Vec<f32> {
    // Every fifth chunk repeats the previous one: ties are real and must break by ID.
    let i = if i % 5 == 4 { i - 1 } else { i };
    (0..dim)
        .map(|d| (((i * 37 + d * 11) % 29) as f32 - 14.0) * 0.1 + 0.01)
        .collect()
}

fn build(dir: &std::path::Path, n: usize, dim: usize) {
    let corpus: Vec<ChunkInput> = (0..n)
        .map(|i| {
            let mut c = ChunkInput::new(format!("c{i:04}"), format!("text {i}"));
            c.meta.domain = Some(format!("d{}", i % 3));
            c
        })
        .collect();
    let settings = IngestSettings {
        model: ModelFingerprint {
            value: serde_json::json!({"name": "test"}),
            hash: format!("sha256:{}", "ab".repeat(32)),
        },
        dimension: dim,
        field: EmbeddedField::Text,
        full_rebuild: false,
    };
    let vectors: Vec<Vec<f32>> = (0..n).map(|i| vector(i, dim)).collect();
    let plan = Plan::with_vectors(None, corpus, vectors, settings).unwrap();
    let batch = BatchInfo {
        name: "b1".into(),
        time: "2025-01-01T00:00:00Z".into(),
        corpus_hash: format!("sha256:{}", "cd".repeat(32)),
    };
    plan.apply(&[] as &[Vec<f32>], &batch, dir).unwrap();
}

#[test]
fn a_batch_of_cases_gets_the_same_rankings_as_one_case_at_a_time_at_any_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let (n, dim) = (700, 24);
    build(&dir, n, dim);
    let index = OwnIndex::open(&dir).unwrap();
    let queries: Vec<Vec<f32>> = (0..37).map(|q| vector(q * 13 + 2, dim)).collect();
    let expected: Vec<Vec<String>> = (0..37)
        .map(|q| {
            vec![
                format!("c{:04}", (q * 131) % n),
                format!("c{:04}", (q * 17 + 3) % n),
                "not-in-the-index".to_string(),
            ]
        })
        .collect();
    let ids: Vec<String> = (0..37).map(|q| format!("case-{q}")).collect();
    // Every fourth case filters on a domain: its ranks count only the chunks that pass.
    let filter = serde_json::json!({"domain": "d1"});
    let filter = filter.as_object().unwrap();
    let requests: Vec<Request<'_>> = (0..37)
        .map(|q| Request {
            case_id: &ids[q],
            query: "",
            vector: Some(&queries[q]),
            depth: 1 + q % 12,
            expected: &expected[q],
            exact: false,
            filters: (q % 4 == 0).then_some(filter),
        })
        .collect();
    let one_by_one: Vec<Ranking> = requests.iter().map(|r| index.search(r).unwrap()).collect();
    assert!(one_by_one.iter().any(|r| r.known.len() == 2));
    assert!(
        one_by_one.iter().any(|r| r.known.len() < 2),
        "some filtered out"
    );
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let batched = pool.install(|| index.search_batch(&requests).unwrap());
        assert_eq!(batched, one_by_one, "{threads} threads");
    }
    // A request without a vector fails the batch, naming its case.
    let mut bad = requests.clone();
    bad[5].vector = None;
    let e = index.search_batch(&bad).unwrap_err();
    assert!(e.to_string().contains("case-5"), "{e}");
}
