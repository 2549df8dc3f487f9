//! A golden case's `filters` through veredicto's own index: only matching chunks are ranked,
//! with the same shape the index's own `--filter` reads.

#![allow(clippy::result_large_err)]

use veredicto_index::*;
use veredicto_retrieve::{open, Options, Request};

fn build(dir: &std::path::Path) {
    let corpus: Vec<ChunkInput> = (0..12)
        .map(|i| {
            let mut c = ChunkInput::new(format!("c{i:02}"), format!("text {i}"));
            c.meta.domain = Some(if i % 3 == 0 { "laboral" } else { "fiscal" }.to_owned());
            c
        })
        .collect();
    let settings = IngestSettings {
        model: ModelFingerprint {
            value: serde_json::json!({"name": "seeded"}),
            hash: format!("sha256:{}", "ab".repeat(32)),
        },
        dimension: 2,
        field: EmbeddedField::Representation,
        full_rebuild: false,
    };
    let plan = Plan::new(None, corpus, settings).unwrap();
    let vectors: Vec<Vec<f32>> = plan
        .to_embed()
        .iter()
        .map(|(id, _)| {
            let i: f32 = id[1..].parse().unwrap();
            vec![(i * 0.3).cos(), (i * 0.3).sin()]
        })
        .collect();
    let batch = BatchInfo {
        name: "b1".into(),
        time: "2025-01-01T00:00:00Z".into(),
        corpus_hash: format!("sha256:{}", "cd".repeat(32)),
    };
    plan.apply(&vectors, &batch, dir).unwrap();
}

#[test]
fn the_own_index_ranks_only_the_chunks_a_cases_filters_match() {
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("idx");
    build(&idx);
    let r = open(&format!("index:{}", idx.display()), &Options::default()).unwrap();
    let filters = serde_json::json!({"domain": "laboral"});
    let expected = vec!["c03".to_owned()];
    let search = |filters: Option<&serde_json::Map<String, serde_json::Value>>| {
        r.search(&Request {
            case_id: "q",
            query: "q",
            vector: Some(&[1.0, 0.0]),
            depth: 10,
            expected: &expected,
            exact: false,
            filters,
        })
    };
    let all = search(None).unwrap();
    assert_eq!(all.hits.len(), 10);
    let only = search(filters.as_object()).unwrap();
    let ids: Vec<&str> = only.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert!(ids
        .iter()
        .all(|id| ["c00", "c03", "c06", "c09"].contains(id)));
    // c03 ranks among the filtered chunks only.
    assert!(only.known.get("c03").is_some_and(|(rank, _)| *rank <= 4));
    let bad = serde_json::json!({"valid_at": "someday"});
    let e = search(bad.as_object()).err().unwrap();
    assert!(e.to_string().contains("case `q`"), "{e}");
}
