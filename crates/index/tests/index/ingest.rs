//! Incremental ingest: the plan, vector reuse, batches, and what is refused.

use crate::common;
use common::*;
use veredicto_index::*;

fn chunk(id: &str, text: &str) -> ChunkInput {
    ChunkInput {
        id: id.into(),
        text: text.into(),
        meta: ChunkMeta {
            domain: Some("laboral".into()),
            ..ChunkMeta::default()
        },
        record: Some(serde_json::json!({"id": id, "text": text, "extra": [1, 2]})),
    }
}

/// A deterministic "embedder": the vector depends only on the text.
fn embed(texts: &[(&str, &str)]) -> Vec<Vec<f32>> {
    texts
        .iter()
        .map(|(_, t)| {
            let mut v = vec![0.0f32; 4];
            for (i, b) in t.bytes().enumerate() {
                v[i % 4] += f32::from(b) / 100.0;
            }
            v[3] += 1.0;
            v
        })
        .collect()
}

#[test]
fn incremental_ingest_embeds_only_what_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let first = vec![
        chunk("b", "beta"),
        chunk("a", "alpha"),
        chunk("c", "gamma"),
        chunk("d", "delta"),
    ];
    let plan = Plan::new(None, first, settings(4, 1)).unwrap();
    assert_eq!(plan.added(), ["b", "a", "c", "d"]);
    assert_eq!(plan.embed_count(), 4);
    let texts = plan.to_embed();
    assert_eq!(texts[0], ("b", "beta"));
    let vectors = embed(&texts);
    let index = plan
        .apply(&vectors, &batch("2025-01", "2025-01-01T00:00:00Z"), &dir)
        .unwrap();
    // Rows are in ID order.
    let ids: Vec<&str> = index.chunks().map(|c| c.id()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    let a_vector = index.get("a").unwrap().vector().to_vec();

    // Second corpus: a unchanged, b changed, c removed, d unchanged, e added with the text
    // c had (reused from the index), f added twice-the-same-text as g (embedded once).
    let second = vec![
        chunk("a", "alpha"),
        chunk("b", "beta v2"),
        chunk("d", "delta"),
        chunk("e", "gamma"),
        chunk("f", "phi"),
        chunk("g", "phi"),
    ];
    let plan = Plan::new(Some(&index), second, settings(4, 1)).unwrap();
    assert_eq!(plan.added(), ["e", "f", "g"]);
    assert_eq!(plan.changed(), ["b"]);
    assert_eq!(plan.removed(), ["c"]);
    assert_eq!(plan.unchanged(), ["a", "d"]);
    assert_eq!(plan.reused(), 1);
    let texts = plan.to_embed();
    assert_eq!(texts, [("b", "beta v2"), ("f", "phi")]);
    let vectors = embed(&texts);
    let new = plan
        .apply(&vectors, &batch("2025-02", "2025-02-01T00:00:00Z"), &dir)
        .unwrap();
    drop(index);

    let ids: Vec<&str> = new.chunks().map(|c| c.id()).collect();
    assert_eq!(ids, ["a", "b", "d", "e", "f", "g"]);
    // Unchanged chunks keep their batch and time; the others get the new one.
    let batch_of = |id: &str| {
        let c = new.get(id).unwrap();
        (c.ingest_batch().to_string(), c.ingested_at().to_string())
    };
    assert_eq!(
        batch_of("a"),
        ("2025-01".into(), "2025-01-01T00:00:00Z".into())
    );
    assert_eq!(batch_of("d").0, "2025-01");
    for id in ["b", "e", "f", "g"] {
        assert_eq!(
            batch_of(id),
            ("2025-02".into(), "2025-02-01T00:00:00Z".into())
        );
    }
    // Stored vectors are copied bit for bit; equal texts share a vector.
    assert_eq!(new.get("a").unwrap().vector(), a_vector.as_slice());
    assert_eq!(
        new.get("f").unwrap().vector(),
        new.get("g").unwrap().vector()
    );
    assert_eq!(
        new.get("e").unwrap().text_hash(),
        TextHash::of("gamma"),
        "e reuses c's vector by text hash"
    );
    // The manifest records both batches.
    let m = new.manifest();
    assert_eq!(m.batches.len(), 2);
    assert_eq!(
        (
            m.batches[1].added,
            m.batches[1].changed,
            m.batches[1].removed
        ),
        (3, 1, 1)
    );
    assert_eq!((m.batches[1].embedded, m.batches[1].reused), (2, 1));
    assert_eq!(m.created_at, "2025-01-01T00:00:00Z");
    assert_eq!(m.updated_at, "2025-02-01T00:00:00Z");
    // Rehydration gives back the original chunk JSON.
    assert_eq!(
        new.get("b").unwrap().record().unwrap(),
        Some(serde_json::json!({"id": "b", "text": "beta v2", "extra": [1, 2]}))
    );
    assert_eq!(
        new.get("b").unwrap().meta().domain.as_deref(),
        Some("laboral")
    );

    // Re-ingesting the same corpus embeds nothing.
    let again = Plan::new(
        Some(&new),
        vec![chunk("a", "alpha"), chunk("g", "phi")],
        settings(4, 1),
    )
    .unwrap();
    assert_eq!(again.embed_count(), 0);
    assert_eq!(again.removed(), ["b", "d", "e", "f"]);
}

#[test]
fn another_model_is_refused_unless_full_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let index = build(&dir, &[("a".to_string(), vec![1.0, 2.0])], |_| {
        ChunkMeta::default()
    });
    let e = Plan::new(Some(&index), vec![chunk("a", "text of a")], settings(2, 2)).unwrap_err();
    match &e {
        IndexError::ModelMismatch { path, index, given } => {
            assert!(path.ends_with("kb/manifest.json"), "{}", path.display());
            assert_eq!(index, &fake_hash(1));
            assert_eq!(given, &fake_hash(2));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(e.to_string().contains("manifest.json"));
    assert!(index.check_model(&fake_hash(2)).is_err());

    // Full rebuild: everything is embedded again, history restarts.
    let mut s = settings(3, 2);
    s.full_rebuild = true;
    let plan = Plan::new(Some(&index), vec![chunk("a", "text of a")], s).unwrap();
    assert_eq!(plan.unchanged(), ["a"]);
    assert_eq!(plan.embed_count(), 1);
    let new = plan
        .apply(&[vec![0.0, 0.0, 3.0]], &batch("rebuild", "t2"), &dir)
        .unwrap();
    assert_eq!(new.model_hash(), fake_hash(2));
    assert_eq!(new.dimension(), 3);
    assert_eq!(new.manifest().batches.len(), 1);
    assert_eq!(new.manifest().created_at, "t2");
    assert_eq!(new.get("a").unwrap().vector(), [0.0, 0.0, 1.0]);
}

#[test]
fn bad_inputs_are_refused_with_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let index = build(&dir, &[("a".to_string(), vec![1.0, 2.0])], |_| {
        ChunkMeta::default()
    });
    // Same model, other dimension.
    let e = Plan::new(Some(&index), vec![], settings(3, 1)).unwrap_err();
    assert!(
        matches!(
            e,
            IndexError::DimensionMismatch {
                expected: 2,
                got: 3,
                ..
            }
        ),
        "{e}"
    );
    // Duplicate IDs.
    let e = Plan::new(None, vec![chunk("x", "1"), chunk("x", "2")], settings(2, 1)).unwrap_err();
    assert!(
        matches!(e, IndexError::DuplicateId { ref id, first: 0, second: 1 } if id == "x"),
        "{e}"
    );
    // A validity date that is not a date.
    let mut c = chunk("x", "1");
    c.meta.valid_to = Some("soon".into());
    let e = Plan::new(None, vec![c], settings(2, 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "chunk \"x\": field `valid_to`: expected a calendar date YYYY-MM-DD, got \"soon\""
    );
    // Nor one that has the shape of a date but is not in the calendar (the library took
    // `2025-13-45` and `2025-02-30`, which the ingest's screen refused).
    for bad in ["2025-13-45", "2025-02-30"] {
        let mut c = chunk("x", "1");
        c.meta.valid_from = Some(bad.into());
        let e = Plan::new(None, vec![c], settings(2, 1)).unwrap_err();
        assert!(
            e.to_string().contains("field `valid_from`") && e.to_string().contains("calendar"),
            "{bad}: {e}"
        );
    }
    // A malformed fingerprint hash.
    let mut s = settings(2, 1);
    s.model.hash = "md5:abc".into();
    assert!(Plan::new(None, vec![], s).is_err());
    // Wrong number of vectors, wrong dimension.
    let plan = Plan::new(None, vec![chunk("x", "1")], settings(2, 1)).unwrap();
    let e = plan
        .apply::<Vec<f32>>(&[], &batch("b", "t"), &tmp.path().join("other"))
        .unwrap_err();
    assert!(
        matches!(
            e,
            IndexError::VectorCount {
                expected: 1,
                got: 0
            }
        ),
        "{e}"
    );
    let plan = Plan::new(None, vec![chunk("x", "1")], settings(2, 1)).unwrap();
    let e = plan
        .apply(&[vec![1.0]], &batch("b", "t"), &tmp.path().join("other"))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "vector for chunk \"x\": dimension mismatch: expected 2, got 1"
    );
    assert!(!tmp.path().join("other").exists());
}

/// The ingestion gate's record: a batch keeps the lines its ingest rejected, the manifest
/// of an index without rejections is unchanged in form, and acceptances are only appended.
#[test]
fn rejections_are_recorded_per_batch_and_acceptances_appended() {
    use veredicto_core::gate::{Acceptance, RejectReason, Rejection};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let plan = Plan::new(None, vec![chunk("a", "alpha")], settings(4, 1)).unwrap();
    let v = embed(&plan.to_embed());
    let index = plan
        .apply(&v, &batch("clean", "2025-01-01T00:00:00Z"), &dir)
        .unwrap();
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(
        !text.contains("rejected") && !text.contains("acceptances"),
        "{text}"
    );

    let rejection = Rejection {
        file: "c.jsonl".into(),
        line: 2,
        id: Some("b".into()),
        reason: RejectReason::EmptyText,
        field: "text".into(),
        message: "nothing to embed".into(),
    };
    let plan = Plan::new(Some(&index), vec![chunk("a", "alpha")], settings(4, 1))
        .unwrap()
        .with_rejections(vec![rejection.clone()]);
    let v = embed(&plan.to_embed());
    let index = plan
        .apply(&v, &batch("dirty", "2025-01-02T00:00:00Z"), &dir)
        .unwrap();
    let last = index.manifest().batches.last().unwrap();
    assert_eq!(last.rejected, [rejection]);
    assert_eq!(last.lines_read(), 2);
    assert!(index.manifest().batches[0].rejected.is_empty());

    for reason in ["first", "second"] {
        accept_latest_batch(
            &dir,
            Acceptance {
                time: "2025-01-03T00:00:00Z".into(),
                reason: reason.into(),
                rejected: 1,
            },
            std::time::Duration::ZERO,
        )
        .unwrap();
    }
    let reopened = Index::open(&dir).unwrap();
    reopened.verify().unwrap();
    let reasons: Vec<_> = reopened.manifest().batches[1]
        .acceptances
        .iter()
        .map(|a| a.reason.as_str())
        .collect();
    assert_eq!(reasons, ["first", "second"]);
}
