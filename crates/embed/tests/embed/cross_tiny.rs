//! CrossEncoder on tiny random-weight classification models the tests write themselves.

use crate::common;
use common::*;
use veredicto_embed::{CrossEncoder, CrossEncoderOptions, EmbedError, Reranker};

const QUERY: &str = "the quick fox";
const PASSAGES: &[&str] = &[
    "the lazy dog",
    "hello world",
    "the quick brown fox jumps over the lazy dog.",
    "",
    "rack bolt shelf load",
];

/// Pair ids: [CLS] q [SEP] p [SEP], type ids 0 for the first segment and 1 (BERT) after.
fn pair_ids(spec: &Spec, q: &str, p: &str) -> (Vec<u32>, Vec<u32>) {
    let a = ids_of(spec, q);
    let b = ids_of(spec, p);
    let mut ids = a.clone();
    ids.extend_from_slice(&b[1..]);
    let second = if spec.arch == Arch::Bert { 1 } else { 0 };
    let mut types = vec![0u32; a.len()];
    types.extend(std::iter::repeat_n(second, b.len() - 1));
    (ids, types)
}

#[test]
fn bert_cross_encoder_matches_naive_logits() {
    let spec = Spec {
        head: Head::Bert(1),
        ..Spec::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let w = write_model(dir.path(), &spec);
    let ce = CrossEncoder::load(dir.path()).unwrap();
    assert_eq!(ce.fingerprint().score, "logit");
    assert_eq!(ce.fingerprint().architecture, "bert");
    let scores = ce.score(QUERY, PASSAGES).unwrap();
    assert_eq!(scores.len(), PASSAGES.len());
    for (p, s) in PASSAGES.iter().zip(&scores) {
        let (ids, types) = pair_ids(&spec, QUERY, p);
        let want = naive_logits(&w, &spec, &ids, &types)[0];
        assert!((*s as f64 - want).abs() < 1e-4, "{p:?}: {s} vs {want}");
    }
    // Scores are not all equal (the head is not degenerate).
    assert!(scores.iter().any(|s| (s - scores[0]).abs() > 1e-4));
}

#[test]
fn xlm_roberta_nli_head_scores_entailment_probability() {
    let spec = Spec {
        arch: Arch::XlmRoberta,
        head: Head::Roberta(3),
        ..Spec::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let w = write_model(dir.path(), &spec);
    let ce = CrossEncoder::load(dir.path()).unwrap();
    assert_eq!(ce.labels(), ["contradiction", "entailment", "neutral"]);
    assert_eq!(ce.fingerprint().score, "softmax:entailment");
    let scores = ce.score(QUERY, PASSAGES).unwrap();
    let logits = ce.logits(QUERY, PASSAGES).unwrap();
    for ((p, s), l) in PASSAGES.iter().zip(&scores).zip(&logits) {
        let (ids, types) = pair_ids(&spec, QUERY, p);
        let want = naive_logits(&w, &spec, &ids, &types);
        for (a, b) in l.iter().zip(&want) {
            assert!((*a as f64 - b).abs() < 1e-4, "{p:?}: {l:?} vs {want:?}");
        }
        let z: f64 = want.iter().map(|x| x.exp()).sum();
        assert!((*s as f64 - want[1].exp() / z).abs() < 1e-5);
        assert!((0.0..=1.0).contains(s));
    }
    // Another label on request.
    let ce2 = CrossEncoder::load_with(
        dir.path(),
        &CrossEncoderOptions {
            label: Some("neutral".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ce2.fingerprint().score, "softmax:neutral");
    // A label the model does not have.
    let err = CrossEncoder::load_with(
        dir.path(),
        &CrossEncoderOptions {
            label: Some("relevant".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("entailment"), "{err}");
}

#[test]
fn scores_do_not_depend_on_batch_size() {
    let spec = Spec {
        head: Head::Bert(1),
        ..Spec::default()
    };
    let dir = tempfile::tempdir().unwrap();
    write_model(dir.path(), &spec);
    let whole = CrossEncoder::load(dir.path())
        .unwrap()
        .score(QUERY, PASSAGES)
        .unwrap();
    for (b, t) in [(1, 1), (2, 2), (3, 1)] {
        let ce = CrossEncoder::load_with(
            dir.path(),
            &CrossEncoderOptions {
                batch_size: Some(b),
                threads: Some(t),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ce.score(QUERY, PASSAGES).unwrap(), whole);
    }
    assert!(CrossEncoder::load(dir.path())
        .unwrap()
        .score(QUERY, &[])
        .unwrap()
        .is_empty());
}

#[test]
fn long_pairs_are_truncated_not_rejected() {
    let spec = Spec {
        head: Head::Bert(1),
        ..Spec::default()
    };
    let dir = tempfile::tempdir().unwrap();
    write_model(dir.path(), &spec);
    let ce = CrossEncoder::load(dir.path()).unwrap();
    assert_eq!(ce.fingerprint().max_tokens, MAX_POS);
    let long = vec!["hello"; 500].join(" ");
    let s = ce.score(&long, &[&long, "a"]).unwrap();
    assert!(s.iter().all(|x| x.is_finite()));
}

#[test]
fn embedding_model_without_head_is_refused_with_the_tensor_named() {
    let dir = tempfile::tempdir().unwrap();
    write_model(dir.path(), &Spec::default());
    let err = CrossEncoder::load(dir.path()).unwrap_err();
    assert!(matches!(err, EmbedError::MissingTensor { .. }), "{err}");
    assert!(err.to_string().contains("classifier"), "{err}");
}
