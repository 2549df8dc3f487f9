//! The index's chunk records read back as a corpus: texts, batches and batch times as
//! ingest kept them.

use crate::common;
use common::build;
use veredicto_index::records::corpus_of;
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
