//! LocalEmbedder on tiny random-weight models the tests write themselves.

use crate::common;
use common::*;
use veredicto_embed::{
    EmbedError, Embedder, LocalEmbedder, LocalEmbedderOptions, Pooling, TextKind,
};

const TEXTS: &[&str] = &[
    "the quick brown fox jumps over the lazy dog.",
    "hello world",
    "a",
    "",
    "rack bolt shelf load?",
    "el trabajo de la",
    "the dog, the fox, the dog.",
    "hello hello hello hello hello hello hello hello hello hello hello hello",
    "c b a",
    "passage: the contract",
];

fn tiny(spec: &Spec) -> (tempfile::TempDir, Weights) {
    let dir = tempfile::tempdir().unwrap();
    let w = write_model(dir.path(), spec);
    (dir, w)
}

fn load(dir: &std::path::Path, opts: LocalEmbedderOptions) -> LocalEmbedder {
    LocalEmbedder::load_with(dir, &opts).unwrap()
}

#[test]
fn matches_naive_reference_bert_mean_normalized() {
    let spec = Spec::default();
    let (dir, w) = tiny(&spec);
    let e = LocalEmbedder::load(dir.path()).unwrap();
    assert_eq!(e.dim(), HIDDEN);
    let got = e.embed(TEXTS, TextKind::Passage).unwrap();
    for (text, v) in TEXTS.iter().zip(&got) {
        let want = naive_embed(&w, &spec, &ids_of(&spec, text), true);
        let c = cosine(v, &want);
        assert!(c > 0.99999, "{text:?}: cosine {c}");
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
}

#[test]
fn matches_naive_reference_xlm_roberta_cls() {
    let spec = Spec {
        arch: Arch::XlmRoberta,
        pooling_cls: true,
        normalize: false,
        ..Spec::default()
    };
    let (dir, w) = tiny(&spec);
    let e = LocalEmbedder::load(dir.path()).unwrap();
    assert_eq!(e.fingerprint().architecture, "xlm-roberta");
    assert_eq!(e.fingerprint().pooling, "cls");
    assert!(!e.fingerprint().normalize);
    let got = e.embed(TEXTS, TextKind::Passage).unwrap();
    for (text, v) in TEXTS.iter().zip(&got) {
        let want = naive_embed(&w, &spec, &ids_of(&spec, text), false);
        let c = cosine(v, &want);
        assert!(c > 0.99999, "{text:?}: cosine {c}");
        let rel: f64 = v
            .iter()
            .zip(&want)
            .map(|(a, b)| (*a as f64 - b).abs())
            .fold(0.0, f64::max);
        assert!(rel < 1e-4, "max abs diff {rel}");
    }
}

#[test]
fn f16_weights_load() {
    let spec = Spec {
        f16: true,
        ..Spec::default()
    };
    let (dir, w) = tiny(&spec);
    // The reference uses the f16-rounded weights.
    let w16: Weights = w
        .into_iter()
        .map(|(k, (s, v))| {
            let r = safetensors_roundtrip_f16(&v);
            (k, (s, r))
        })
        .collect();
    let e = LocalEmbedder::load(dir.path()).unwrap();
    let got = e.embed(&TEXTS[..3], TextKind::Passage).unwrap();
    for (text, v) in TEXTS.iter().zip(&got) {
        let want = naive_embed(&w16, &spec, &ids_of(&spec, text), true);
        assert!(cosine(v, &want) > 0.99999);
    }
}

fn safetensors_roundtrip_f16(v: &[f32]) -> Vec<f32> {
    let bytes = safetensors_bytes(
        &[("x".to_string(), (vec![v.len()], v.to_vec()))]
            .into_iter()
            .collect(),
        true,
    );
    let hl = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    bytes[8 + hl..]
        .chunks_exact(2)
        .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
        .collect()
}

#[test]
fn deterministic_and_independent_of_batch_split_and_threads() {
    let (dir, _) = tiny(&Spec::default());
    let whole = load(dir.path(), LocalEmbedderOptions::default())
        .embed(TEXTS, TextKind::Passage)
        .unwrap();
    let again = load(dir.path(), LocalEmbedderOptions::default())
        .embed(TEXTS, TextKind::Passage)
        .unwrap();
    assert_eq!(whole, again);
    for (batch, threads) in [(1, 1), (3, 2), (4, 1), (32, 2), (7, 3)] {
        let e = load(
            dir.path(),
            LocalEmbedderOptions {
                batch_size: Some(batch),
                threads: Some(threads),
                ..Default::default()
            },
        );
        assert_eq!(
            e.embed(TEXTS, TextKind::Passage).unwrap(),
            whole,
            "batch {batch}, threads {threads}"
        );
    }
    // One text at a time through the public API, too.
    let e = load(dir.path(), LocalEmbedderOptions::default());
    for (i, t) in TEXTS.iter().enumerate() {
        assert_eq!(e.embed(&[t], TextKind::Passage).unwrap()[0], whole[i]);
    }
    assert!(e.embed(&[], TextKind::Query).unwrap().is_empty());
}

#[test]
fn query_prefix_from_prompts_is_applied() {
    let (dir, _) = tiny(&Spec::default()); // prompts: query = "query: ", no passage prompt
    let e = LocalEmbedder::load(dir.path()).unwrap();
    assert_eq!(e.fingerprint().query_prefix, "query: ");
    assert_eq!(e.fingerprint().passage_prefix, "");
    let q = e.embed(&["hello world"], TextKind::Query).unwrap();
    let p = e.embed(&["hello world"], TextKind::Passage).unwrap();
    let p_with_prefix = e.embed(&["query: hello world"], TextKind::Passage).unwrap();
    assert_ne!(q, p);
    assert_eq!(q, p_with_prefix);

    // Options override the folder.
    let e2 = load(
        dir.path(),
        LocalEmbedderOptions {
            query_prefix: Some(String::new()),
            passage_prefix: Some("passage: ".into()),
            ..Default::default()
        },
    );
    assert_eq!(e2.embed(&["hello world"], TextKind::Query).unwrap(), p);
    assert_eq!(
        e2.embed(&["hello world"], TextKind::Passage).unwrap(),
        e.embed(&["passage: hello world"], TextKind::Passage)
            .unwrap()
    );
    assert_ne!(e.fingerprint(), e2.fingerprint());
}

#[test]
fn pooling_and_normalisation_options() {
    let spec = Spec::default();
    let (dir, w) = tiny(&spec);
    let e = load(
        dir.path(),
        LocalEmbedderOptions {
            pooling: Some(Pooling::Cls),
            normalize: Some(false),
            ..Default::default()
        },
    );
    assert_eq!(e.fingerprint().pooling, "cls");
    assert!(!e.fingerprint().normalize);
    let v = &e.embed(&["hello world"], TextKind::Passage).unwrap()[0];
    let cls_spec = Spec {
        pooling_cls: true,
        ..spec.clone()
    };
    let want = naive_embed(&w, &cls_spec, &ids_of(&spec, "hello world"), false);
    for (a, b) in v.iter().zip(&want) {
        assert!((*a as f64 - b).abs() < 1e-4);
    }
    let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() > 1e-3, "not normalised: {norm}");
}

#[test]
fn folder_without_sentence_transformers_files_uses_defaults() {
    let spec = Spec {
        sentence_transformers_files: false,
        ..Spec::default()
    };
    let (dir, _) = tiny(&spec);
    let e = LocalEmbedder::load(dir.path()).unwrap();
    let fp = e.fingerprint();
    assert_eq!(fp.pooling, "mean");
    assert!(!fp.normalize);
    assert_eq!(fp.max_tokens, 64, "tokenizer says 128, positions allow 64");
    assert_eq!(fp.query_prefix, "");
}

#[test]
fn truncates_to_max_tokens() {
    let (dir, _) = tiny(&Spec::default());
    let e = LocalEmbedder::load(dir.path()).unwrap();
    assert_eq!(e.fingerprint().max_tokens, MAX_SEQ);
    let long = vec!["hello"; 200].join(" ");
    let exact = vec!["hello"; MAX_SEQ - 2].join(" ");
    let a = e.embed(&[&long], TextKind::Passage).unwrap();
    let b = e.embed(&[&exact], TextKind::Passage).unwrap();
    assert_eq!(a, b);
    let err = LocalEmbedder::load_with(
        dir.path(),
        &LocalEmbedderOptions {
            max_tokens: Some(MAX_POS + 1),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::InvalidOption {
                option: "max_tokens",
                ..
            }
        ),
        "{err}"
    );
}

/// The truncation count of `embed_counting_truncated` (taken from the ids the vectors are
/// computed from) is the one the untruncated token count gives, at and around the limit,
/// whatever the batch split and thread count; its vectors are `embed`'s.
#[test]
fn truncation_is_counted_in_the_embedding_tokenisation() {
    let (dir, _) = tiny(&Spec::default());
    let texts: Vec<String> = [1, MAX_SEQ - 3, MAX_SEQ - 2, MAX_SEQ - 1, MAX_SEQ, 200]
        .iter()
        .map(|&n| vec!["hello"; n].join(" "))
        .chain(TEXTS.iter().map(|t| t.to_string()))
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    for (batch_size, threads) in [(None, None), (Some(2), Some(3)), (Some(1), Some(1))] {
        let e = load(
            dir.path(),
            LocalEmbedderOptions {
                batch_size,
                threads,
                ..Default::default()
            },
        );
        let max = e.fingerprint().max_tokens;
        let by_count = texts
            .iter()
            .filter(|t| e.token_count(t, TextKind::Passage).unwrap() > max)
            .count();
        assert_eq!(by_count, 3, "texts of MAX_SEQ - 1, MAX_SEQ and 200 words");
        let (vectors, truncated) = e
            .embed_counting_truncated(&texts, TextKind::Passage)
            .unwrap();
        assert_eq!(truncated, Some(by_count));
        assert_eq!(vectors, e.embed(&texts, TextKind::Passage).unwrap());
    }
}

#[test]
fn tensor_names_with_bert_prefix_are_accepted() {
    let plain = Spec::default();
    let prefixed = Spec {
        tensor_prefix: "bert.",
        ..Spec::default()
    };
    let (d1, _) = tiny(&plain);
    let (d2, _) = tiny(&prefixed);
    let a = LocalEmbedder::load(d1.path())
        .unwrap()
        .embed(TEXTS, TextKind::Passage)
        .unwrap();
    let b = LocalEmbedder::load(d2.path())
        .unwrap()
        .embed(TEXTS, TextKind::Passage)
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn fingerprint_records_file_hashes() {
    use sha2::Digest;
    let (dir, _) = tiny(&Spec::default());
    let e = LocalEmbedder::load(dir.path()).unwrap();
    let fp = e.fingerprint().clone();
    assert_eq!(fp.files.len(), 3);
    for (name, hash) in &fp.files {
        let bytes = std::fs::read(dir.path().join(name)).unwrap();
        let want = format!("sha256:{:x}", sha2::Sha256::digest(&bytes));
        assert_eq!(hash, &want, "{name}");
    }
    assert_eq!(fp.dim, HIDDEN);
    assert_eq!(fp.name, dir.path().file_name().unwrap().to_string_lossy());
    assert!(fp.digest().starts_with("sha256:"));
    // Round-trips through JSON.
    let json = serde_json::to_string(&fp).unwrap();
    let back: veredicto_embed::ModelFingerprint = serde_json::from_str(&json).unwrap();
    assert_eq!(back, fp);
    // Another seed: other weights, other fingerprint.
    let (dir2, _) = tiny(&Spec {
        seed: 7,
        ..Spec::default()
    });
    let fp2 = LocalEmbedder::load_with(
        dir2.path(),
        &LocalEmbedderOptions {
            name: Some(fp.name.clone()),
            ..Default::default()
        },
    )
    .unwrap()
    .fingerprint()
    .clone();
    assert_ne!(
        fp2.files["model.safetensors"],
        fp.files["model.safetensors"]
    );
    assert_ne!(fp2.digest(), fp.digest());
}

// ------------------------------------------------------------------ bad input

fn err_of(dir: &std::path::Path) -> String {
    LocalEmbedder::load(dir).unwrap_err().to_string()
}

#[test]
fn missing_files_are_named() {
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        let (dir, _) = tiny(&Spec::default());
        std::fs::remove_file(dir.path().join(file)).unwrap();
        let msg = err_of(dir.path());
        assert!(msg.contains(file), "{msg}");
        assert!(msg.contains("missing file"), "{msg}");
    }
    let msg = err_of(std::path::Path::new("/nonexistent/model-dir"));
    assert!(msg.contains("/nonexistent/model-dir"), "{msg}");
    assert!(msg.contains("fetch-model.sh"), "{msg}");
}

#[test]
fn corrupt_safetensors_is_named() {
    let (dir, _) = tiny(&Spec::default());
    let path = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    // Truncated file.
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let msg = err_of(dir.path());
    assert!(
        msg.contains("model.safetensors") && msg.contains("corrupt"),
        "{msg}"
    );
    // Not a safetensors file at all.
    std::fs::write(&path, b"<html>not found</html>").unwrap();
    let msg = err_of(dir.path());
    assert!(
        msg.contains("model.safetensors") && msg.contains("corrupt"),
        "{msg}"
    );
    // Garbage header.
    let mut b = 16u64.to_le_bytes().to_vec();
    b.extend_from_slice(b"{not json at all");
    std::fs::write(&path, b).unwrap();
    let msg = err_of(dir.path());
    assert!(
        msg.contains("model.safetensors") && msg.contains("JSON"),
        "{msg}"
    );
}

#[test]
fn corrupt_json_files_are_named() {
    for file in [
        "config.json",
        "tokenizer.json",
        "modules.json",
        "1_Pooling/config.json",
    ] {
        let (dir, _) = tiny(&Spec::default());
        std::fs::write(dir.path().join(file), b"{\"truncated\": ").unwrap();
        let msg = err_of(dir.path());
        assert!(msg.contains(file), "{file}: {msg}");
    }
}

#[test]
fn unsupported_architecture_lists_supported_ones() {
    let (dir, _) = tiny(&Spec::default());
    let p = dir.path().join("config.json");
    let mut cfg: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    cfg["model_type"] = "gpt2".into();
    cfg["architectures"] = serde_json::json!(["GPT2LMHeadModel"]);
    std::fs::write(&p, cfg.to_string()).unwrap();
    let err = LocalEmbedder::load(dir.path()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, EmbedError::UnsupportedArchitecture { .. }));
    assert!(msg.contains("gpt2") && msg.contains("config.json"), "{msg}");
    for a in veredicto_embed::SUPPORTED_ARCHITECTURES {
        assert!(msg.contains(a), "{msg}");
    }
}

#[test]
fn missing_or_misshapen_tensor_is_named() {
    let spec = Spec::default();
    let (dir, mut w) = tiny(&spec);
    w.remove("encoder.layer.1.output.dense.weight");
    std::fs::write(
        dir.path().join("model.safetensors"),
        safetensors_bytes(&w, false),
    )
    .unwrap();
    let msg = err_of(dir.path());
    assert!(msg.contains("encoder.layer.1.output.dense.weight"), "{msg}");

    let (dir, mut w) = tiny(&spec);
    w.insert(
        "encoder.layer.0.intermediate.dense.weight".into(),
        (vec![INTER + 1, HIDDEN], vec![0.0; (INTER + 1) * HIDDEN]),
    );
    std::fs::write(
        dir.path().join("model.safetensors"),
        safetensors_bytes(&w, false),
    )
    .unwrap();
    let err = LocalEmbedder::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, EmbedError::TensorShape { name, .. } if name == "encoder.layer.0.intermediate.dense.weight"),
        "{err}"
    );
}

#[test]
fn tokenizer_larger_than_model_vocab_is_an_error_not_a_panic() {
    let spec = Spec::default();
    let (dir, _) = tiny(&spec);
    let p = dir.path().join("config.json");
    let mut cfg: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let small = 10;
    cfg["vocab_size"] = small.into();
    std::fs::write(&p, cfg.to_string()).unwrap();
    // The weights no longer match the config: the loader says so.
    let msg = err_of(dir.path());
    assert!(msg.contains("word_embeddings"), "{msg}");
}

#[test]
fn invalid_options_are_rejected() {
    let (dir, _) = tiny(&Spec::default());
    for opts in [
        LocalEmbedderOptions {
            batch_size: Some(0),
            ..Default::default()
        },
        LocalEmbedderOptions {
            threads: Some(0),
            ..Default::default()
        },
        LocalEmbedderOptions {
            max_tokens: Some(0),
            ..Default::default()
        },
    ] {
        assert!(matches!(
            LocalEmbedder::load_with(dir.path(), &opts),
            Err(EmbedError::InvalidOption { .. })
        ));
    }
}
