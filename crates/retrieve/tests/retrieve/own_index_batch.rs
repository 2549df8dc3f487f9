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

/// The own index answering one case at a time and reading its whole corpus up front: the
/// exam as it ran before batching and lazy records, to compare with.
struct OneAtATime(OwnIndex);

impl Retriever for OneAtATime {
    fn describe(&self) -> String {
        self.0.describe()
    }
    fn kind(&self) -> &'static str {
        self.0.kind()
    }
    fn vectors(&self) -> veredicto_retrieve::Vectors {
        self.0.vectors()
    }
    fn search(&self, request: &Request<'_>) -> Result<Ranking, veredicto_retrieve::RetrieveError> {
        self.0.search(request)
    }
    fn corpus(
        &self,
    ) -> Result<Option<veredicto_core::case::Corpus>, veredicto_retrieve::RetrieveError> {
        self.0.corpus()
    }
    fn fingerprint(&self) -> Option<String> {
        self.0.fingerprint()
    }
}

fn exam_cases(n: usize, dim: usize) -> Vec<veredicto_core::case::Case> {
    let filter = serde_json::json!({"domain": "d1"});
    (0..37)
        .map(|q| veredicto_core::case::Case {
            id: format!("case-{q:02}"),
            query: format!("query {q}"),
            expected: vec![
                format!("c{:04}", (q * 131) % n),
                format!("c{:04}", (q * 17 + 3) % n),
                if q % 3 == 0 {
                    "not-in-the-index".to_owned()
                } else {
                    format!("c{:04}", (q * 13 + 2) % n)
                },
            ],
            grades: Default::default(),
            evidence: Vec::new(),
            top_k: (q % 5 == 0).then_some(3),
            query_vector: Some(vector(q * 13 + 2, dim)),
            filters: (q % 4 == 0).then(|| filter.as_object().unwrap().clone()),
            domain: None,
            tags: vec![],
            gold: q % 7 == 0,
        })
        .collect()
}

fn exam_json(
    retriever: &dyn Retriever,
    cases: &[veredicto_core::case::Case],
    corpus: Option<&veredicto_core::case::Corpus>,
    concurrency: usize,
    latency_sample: usize,
) -> (String, veredicto_retrieve::pass::Retrieval) {
    use crate::worded::examine;
    use veredicto_app::exam::Inputs;
    use veredicto_retrieve::pass::Settings;
    let policy = veredicto_core::policy::Policy::default();
    let notes = std::collections::BTreeMap::new();
    let out = examine(
        retriever,
        None,
        &Inputs {
            cases,
            corpus,
            policy: &policy,
            notes: &notes,
            as_of: Some("2025-06-01"),
        },
        &Settings {
            depth: 20,
            concurrency,
            latency_sample,
            ..Settings::default()
        },
    )
    .unwrap();
    (
        serde_json::to_string_pretty(&out.report).unwrap(),
        out.retrieval,
    )
}

#[test]
fn the_exam_over_the_batched_pass_is_the_one_case_at_a_time_exam_bit_for_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let (n, dim) = (700, 24);
    build(&dir, n, dim);
    let cases = exam_cases(n, dim);
    // Before: one search per case, the whole corpus parsed up front.
    let old = OneAtATime(OwnIndex::open(&dir).unwrap());
    let full = old.corpus().unwrap().unwrap();
    let (reference, r) = exam_json(&old, &cases, Some(&full), 4, 0);
    assert!(r.latency["search"].source.is_none(), "one timing per case");
    assert_eq!(r.latency["search"].count, cases.len());
    // The report reads the corpus: an expected chunk the index lacks is named, batches are
    // counted over the whole index.
    assert!(reference.contains("not-in-the-index"), "{reference}");
    assert!(reference.contains("\"chunks\": 700"), "{reference}");
    let batched = OwnIndex::open(&dir).unwrap();
    assert!(batched.batched());
    for threads in [1, 2, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for concurrency in [1, 3] {
            // After: one batched pass, only the needed records read.
            let (json, retrieval) =
                pool.install(|| exam_json(&batched, &cases, None, concurrency, 5));
            assert_eq!(
                json, reference,
                "{threads} threads, concurrency {concurrency}"
            );
            let search = retrieval.latency["search"];
            assert_eq!(
                search.source,
                Some(veredicto_core::history::LatencySource::SingleQuerySample)
            );
            assert_eq!((search.count, search.queries), (5, Some(cases.len())));
            assert!(search.batch_ms.is_some_and(|ms| ms >= 0.0));
            // With the whole corpus given, the same again.
            let (json, _) =
                pool.install(|| exam_json(&batched, &cases, Some(&full), concurrency, 0));
            assert_eq!(json, reference, "{threads} threads, corpus given");
        }
    }
}

#[test]
fn the_lazy_corpus_holds_the_needed_chunks_as_the_full_one_does_and_counts_every_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, 300, 8);
    let index = OwnIndex::open(&dir).unwrap();
    let full = index.corpus().unwrap().unwrap();
    let ids: std::collections::BTreeSet<&str> =
        ["c0007", "c0299", "c0100", "absent"].into_iter().collect();
    let lazy = index.corpus_for(&ids).unwrap().unwrap();
    assert_eq!(lazy.len(), 3, "only the named chunks the index holds");
    for id in ["c0007", "c0299", "c0100"] {
        assert_eq!(lazy.get(id), full.get(id), "{id}");
    }
    assert_eq!(lazy.batches(), full.batches());
    assert_eq!(lazy.source(), full.source());
}

#[test]
fn the_latency_sample_is_evenly_spaced_and_never_larger_than_the_golden_set() {
    use veredicto_retrieve::pass::latency_sample;
    assert_eq!(latency_sample(200, 4), vec![0, 50, 100, 150]);
    assert_eq!(latency_sample(3, 20), vec![0, 1, 2]);
    assert!(latency_sample(0, 20).is_empty());
    assert!(latency_sample(10, 0).is_empty());
}
