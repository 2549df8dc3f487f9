//! Precomputed vectors belong to their chunk: their bytes are part of its identity.
//!
//! Regression tests for a silent wrong result: vectors were keyed by text only, so a
//! re-ingest whose vectors changed but whose texts did not kept the old vectors, and two
//! chunks with the same text shared the first chunk's vector.

use crate::common;
use common::*;
use veredicto_index::*;

fn corpus(items: &[(&str, &str)]) -> Vec<ChunkInput> {
    items
        .iter()
        .map(|(id, text)| ChunkInput::new(*id, *text))
        .collect()
}

fn unit(v: &[f32]) -> Vec<f32> {
    normalize(v).expect("finite, non-zero")
}

fn ingest(
    base: Option<&Index>,
    items: &[(&str, &str)],
    vectors: Vec<Vec<f32>>,
    dir: &std::path::Path,
    name: &str,
) -> Index {
    let plan = Plan::with_vectors(base, corpus(items), vectors, settings(3, 7)).unwrap();
    assert!(plan.to_embed().is_empty());
    plan.apply(
        &[] as &[Vec<f32>],
        &batch(name, "2025-01-01T00:00:00Z"),
        dir,
    )
    .unwrap()
}

#[test]
fn precomputed_vectors_changed_with_same_text_are_not_reused_from_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let items = [("a", "same text"), ("b", "other text")];
    let first = ingest(
        None,
        &items,
        vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]],
        &dir,
        "b1",
    );
    let new_a = vec![0.0, 0.0, 2.0];
    let plan = Plan::with_vectors(
        Some(&first),
        corpus(&items),
        vec![new_a.clone(), vec![0.0, 1.0, 0.0]],
        settings(3, 7),
    )
    .unwrap();
    assert_eq!(plan.changed(), ["a"], "a's vector changed");
    assert_eq!(plan.unchanged(), ["b"]);
    assert_eq!(plan.reused(), 0);
    assert_eq!(plan.new_vectors(), 1);
    let second = plan
        .apply(
            &[] as &[Vec<f32>],
            &batch("b2", "2025-02-01T00:00:00Z"),
            &dir,
        )
        .unwrap();
    assert_eq!(second.get("a").unwrap().vector(), unit(&new_a).as_slice());
    assert_eq!(second.get("b").unwrap().vector(), [0.0, 1.0, 0.0]);
    assert_eq!(
        second.get("a").unwrap().vector_hash(),
        Some(TextHash::of_vector(&new_a))
    );
    // b kept its batch; a was re-taken in the new one.
    assert_eq!(second.get("a").unwrap().ingest_batch(), "b2");
    assert_eq!(second.get("b").unwrap().ingest_batch(), "b1");
    second.verify().unwrap();
}

#[test]
fn precomputed_vectors_of_chunks_with_identical_text_are_not_shared() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    // Same text three times, three different vectors, in one corpus.
    let items = [("a", "dup"), ("b", "dup"), ("c", "dup")];
    let vectors = vec![
        vec![1.0, 0.0, 0.0],
        vec![0.0, 1.0, 0.0],
        vec![0.0, 0.0, 1.0],
    ];
    let index = ingest(None, &items, vectors.clone(), &dir, "b1");
    for ((id, _), v) in items.iter().zip(&vectors) {
        assert_eq!(index.get(id).unwrap().vector(), v.as_slice(), "chunk {id}");
    }
    // A new chunk whose text is already in the index keeps its own vector too.
    let mut more = items.to_vec();
    more.push(("d", "dup"));
    let mut vectors = vectors;
    vectors.push(vec![1.0, 1.0, 0.0]);
    let index = ingest(Some(&index), &more, vectors, &dir, "b2");
    assert_eq!(
        index.get("d").unwrap().vector(),
        unit(&[1.0, 1.0, 0.0]).as_slice()
    );
    assert_eq!(index.manifest().batches[1].reused, 0);
    assert_eq!(index.manifest().batches[1].added, 1);
    assert_eq!(index.manifest().batches[1].unchanged, 3);
}

#[test]
fn unchanged_precomputed_vectors_are_kept_and_the_index_is_reproducible() {
    let tmp = tempfile::tempdir().unwrap();
    let items = [("a", "x"), ("b", "y")];
    let vectors = vec![vec![1.0, 2.0, 3.0], vec![3.0, 2.0, 1.0]];
    let one = ingest(None, &items, vectors.clone(), &tmp.path().join("one"), "b1");
    let plan =
        Plan::with_vectors(Some(&one), corpus(&items), vectors.clone(), settings(3, 7)).unwrap();
    assert_eq!(plan.unchanged(), ["a", "b"]);
    assert_eq!(plan.new_vectors(), 0);
    let two = ingest(None, &items, vectors, &tmp.path().join("two"), "b1");
    for name in [files::VECTORS, files::CHUNK_TABLE, files::MANIFEST] {
        assert_eq!(
            std::fs::read(one.dir().join(name)).unwrap(),
            std::fs::read(two.dir().join(name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn an_index_built_by_a_model_then_given_vectors_treats_every_chunk_as_changed() {
    // An index without vector hashes (built before vectors were hashed, or by a model with
    // `full_rebuild`): nothing can be proven unchanged, so every vector is re-taken.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let base = build(&dir, &[("a".to_string(), vec![1.0, 0.0, 0.0])], |_| {
        ChunkMeta::default()
    });
    let s = IngestSettings {
        full_rebuild: true,
        ..settings(3, 1)
    };
    let plan = Plan::with_vectors(
        Some(&base),
        vec![ChunkInput::new("a", "text of a")],
        vec![vec![0.0, 1.0, 0.0]],
        s,
    )
    .unwrap();
    assert_eq!(plan.changed(), ["a"]);
    let index = plan
        .apply(&[] as &[Vec<f32>], &batch("b2", "t"), &dir)
        .unwrap();
    assert_eq!(index.get("a").unwrap().vector(), [0.0, 1.0, 0.0]);
}

#[test]
fn bad_precomputed_vectors_are_refused_naming_the_chunk() {
    let c = corpus(&[("a", "x"), ("b", "y")]);
    let e = Plan::with_vectors(
        None,
        c.clone(),
        vec![vec![1.0, 0.0, 0.0], vec![f32::NAN, 0.0, 0.0]],
        settings(3, 7),
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("\"b\"") && e.to_string().contains("NaN"),
        "{e}"
    );
    let e = Plan::with_vectors(
        None,
        c.clone(),
        vec![vec![f32::INFINITY, 0.0, 0.0], vec![1.0, 0.0, 0.0]],
        settings(3, 7),
    )
    .unwrap_err();
    assert!(e.to_string().contains("\"a\""), "{e}");
    let e = Plan::with_vectors(
        None,
        c.clone(),
        vec![vec![0.0; 3], vec![1.0; 3]],
        settings(3, 7),
    )
    .unwrap_err();
    assert!(e.to_string().contains("all zeros"), "{e}");
    let e = Plan::with_vectors(None, c.clone(), vec![vec![1.0; 3]], settings(3, 7)).unwrap_err();
    assert!(matches!(e, IndexError::VectorCount { .. }), "{e}");
    let e =
        Plan::with_vectors(None, c, vec![vec![1.0; 3], vec![1.0; 2]], settings(3, 7)).unwrap_err();
    assert!(matches!(e, IndexError::DimensionMismatch { .. }), "{e}");
    // Vectors given to apply when the plan already has them are refused.
    let plan = Plan::with_vectors(
        None,
        corpus(&[("a", "x")]),
        vec![vec![1.0; 3]],
        settings(3, 7),
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let e = plan
        .apply(&[vec![1.0f32; 3]], &batch("b", "t"), &tmp.path().join("kb"))
        .unwrap_err();
    assert!(matches!(e, IndexError::VectorCount { .. }), "{e}");
}

#[test]
fn records_are_kept_without_their_vectors_and_vector_hashes_survive_reopening() {
    // Regression: records.jsonl repeated every precomputed vector as JSON text (365 MB of
    // 541 MB for 100k × 384); the vector lives in vectors.f32 only.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let vectors = vec![vec![1.0, 2.0, 3.0], vec![3.0, 2.0, 1.0]];
    let corpus: Vec<ChunkInput> = [("a", "x"), ("b", "y")]
        .iter()
        .zip(&vectors)
        .map(|((id, text), v)| ChunkInput {
            record: Some(serde_json::json!({"id": id, "text": text, "vector": v})),
            ..ChunkInput::new(*id, *text)
        })
        .collect();
    let plan = Plan::with_vectors(None, corpus, vectors.clone(), settings(3, 7)).unwrap();
    let index = plan
        .apply(&[] as &[Vec<f32>], &batch("b1", "t"), &dir)
        .unwrap();
    let records = std::fs::read_to_string(dir.join(files::RECORDS)).unwrap();
    assert!(!records.contains("vector"), "{records}");
    assert_eq!(
        index.get("b").unwrap().record().unwrap().unwrap(),
        serde_json::json!({"id": "b", "text": "y"})
    );
    let reopened = Index::open(&dir).unwrap();
    assert_eq!(
        reopened.get("b").unwrap().vector_hash(),
        Some(TextHash::of_vector(&vectors[1]))
    );
    assert_eq!(
        reopened.get("a").unwrap().vector(),
        unit(&vectors[0]).as_slice()
    );
}
