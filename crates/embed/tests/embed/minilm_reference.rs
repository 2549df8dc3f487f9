//! The real all-MiniLM-L6-v2 against an independent reference forward pass.
//!
//! The reference vectors in `tests/data/minilm_reference.json` were computed once by
//! `scripts/reference_embed.py` (NumPy, float64, one sentence at a time, token ids from the
//! `tokenizers` PyPI package); see that script and `docs/models.md`.
//!
//! The model comes from `scripts/fetch-model.sh` (CI runs it before the tests); the folder is
//! `models/all-MiniLM-L6-v2` unless `VEREDICTO_MODEL_DIR` says otherwise. A missing model
//! fails this test: it never passes silently.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use std::path::PathBuf;

use serde_json::Value;
use veredicto_embed::{Embedder, LocalEmbedder, LocalEmbedderOptions, TextKind};

fn model_dir() -> PathBuf {
    match std::env::var_os("VEREDICTO_MODEL_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/all-MiniLM-L6-v2"),
    }
}

fn load(opts: LocalEmbedderOptions) -> LocalEmbedder {
    let dir = model_dir();
    if !dir.join("model.safetensors").is_file() {
        panic!(
            "all-MiniLM-L6-v2 not found in {}: run scripts/fetch-model.sh (or set VEREDICTO_MODEL_DIR)",
            dir.display()
        );
    }
    LocalEmbedder::load_with(&dir, &opts).expect("load all-MiniLM-L6-v2")
}

fn reference() -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/minilm_reference.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn minilm_matches_reference_forward_pass() {
    let e = load(LocalEmbedderOptions::default());
    let r = reference();
    let fp = e.fingerprint();
    assert_eq!(fp.architecture, "bert");
    assert_eq!(fp.dim, 384);
    assert_eq!(fp.max_tokens, 256);
    assert_eq!(fp.pooling, "mean");
    assert!(fp.normalize);
    for (name, hash) in r["files"].as_object().unwrap() {
        assert_eq!(
            fp.files[name].as_str(),
            hash.as_str().unwrap(),
            "{name} differs from the file the reference was computed with"
        );
    }
    let cases = r["cases"].as_array().unwrap();
    let texts: Vec<&str> = cases.iter().map(|c| c["text"].as_str().unwrap()).collect();
    let got = e.embed(&texts, TextKind::Passage).unwrap();
    let mut worst = 1.0f64;
    for (case, v) in cases.iter().zip(&got) {
        let text = case["text"].as_str().unwrap();
        let want_ids: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(
            e.token_ids(text, TextKind::Passage).unwrap(),
            want_ids,
            "{text}"
        );
        let want: Vec<f64> = case["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let c = cosine(v, &want);
        eprintln!(
            "1 - cosine {:.3e}  {}",
            1.0 - c,
            text.chars().take(60).collect::<String>()
        );
        assert!(c > 0.9999, "{text:?}: cosine {c} <= 0.9999");
        worst = worst.min(c);
    }
    eprintln!(
        "min cosine vs reference: 1 - {:.3e} over {} sentences",
        1.0 - worst,
        cases.len()
    );
}

#[test]
fn minilm_is_independent_of_batching_and_threads() {
    let r = reference();
    let texts: Vec<&str> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    let whole = load(LocalEmbedderOptions {
        threads: Some(2),
        ..Default::default()
    })
    .embed(&texts, TextKind::Passage)
    .unwrap();
    let split = load(LocalEmbedderOptions {
        threads: Some(1),
        batch_size: Some(5),
        ..Default::default()
    })
    .embed(&texts, TextKind::Passage)
    .unwrap();
    assert_eq!(whole, split, "vectors must be bit-identical");
    // Many small batches, each tokenized while the previous one runs through the encoder,
    // on 3 threads: the same bits.
    let pipelined = load(LocalEmbedderOptions {
        threads: Some(3),
        batch_size: Some(2),
        ..Default::default()
    })
    .embed(&texts, TextKind::Passage)
    .unwrap();
    assert_eq!(
        whole, pipelined,
        "pipelined batches must give the same bits"
    );
    // Short texts alone (3 and 12 tokens) give the same bits as inside the batch.
    let e = load(LocalEmbedderOptions::default());
    for i in [0, 10] {
        let alone = e.embed(&[texts[i]], TextKind::Passage).unwrap();
        assert_eq!(alone[0], whole[i], "{:?} alone", texts[i]);
    }
}

#[test]
fn minilm_counts_tokens_before_truncation() {
    let e = load(LocalEmbedderOptions::default());
    let r = reference();
    let mut long = 0;
    for c in r["cases"].as_array().unwrap() {
        let text = c["text"].as_str().unwrap();
        let ids = c["ids"].as_array().unwrap().len();
        let n = e.token_count(text, TextKind::Passage).unwrap();
        if ids < 256 {
            assert_eq!(n, ids, "{text}");
        } else {
            assert!(n > 256, "{n} tokens for the long text");
            long += 1;
        }
    }
    assert_eq!(long, 1);
}
