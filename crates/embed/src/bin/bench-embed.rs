//! `bench-embed`: sentence-embedding throughput of [`LocalEmbedder`] on all-MiniLM-L6-v2,
//! side by side with onnxruntime (Python) on the same token ids, batch size and threads.
//!
//! ```text
//! cargo run --release -p veredicto-embed --bin bench-embed -- \
//!     [--model models/all-MiniLM-L6-v2] [--batch 32] [--tokens 40] [--batches 20] \
//!     [--threads N] [--python .venv/bin/python] [--onnx model.onnx] [--json]
//! ```
//!
//! `--python` names an interpreter with `numpy`, `onnx` and `onnxruntime`; the ONNX graph is
//! built from the same safetensors by `scripts/reference_embed.py --export-onnx` (the model
//! wheels ship no `.onnx`) unless `--onnx` gives one. The FLOP bound is computed from the
//! model's dimensions and `--gflops` (default 100, this machine's measured sgemm rate).
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use veredicto_embed::{Embedder, LocalEmbedder, LocalEmbedderOptions, TextKind};

type Error = Box<dyn std::error::Error>;

struct Args {
    model: PathBuf,
    batch: usize,
    tokens: usize,
    batches: usize,
    threads: Option<usize>,
    python: Option<PathBuf>,
    onnx: Option<PathBuf>,
    gflops: f64,
    rounds: usize,
    json: bool,
}

fn parse_args() -> Result<Args, Error> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut a = Args {
        model: root.join("models/all-MiniLM-L6-v2"),
        batch: 32,
        tokens: 40,
        batches: 20,
        threads: None,
        python: None,
        onnx: None,
        gflops: 100.0,
        rounds: 3,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => a.model = val()?.into(),
            "--batch" => a.batch = val()?.parse()?,
            "--tokens" => a.tokens = val()?.parse()?,
            "--batches" => a.batches = val()?.parse()?,
            "--threads" => a.threads = Some(val()?.parse()?),
            "--python" => a.python = Some(val()?.into()),
            "--onnx" => a.onnx = Some(val()?.into()),
            "--gflops" => a.gflops = val()?.parse()?,
            "--rounds" => a.rounds = val()?.parse()?,
            "--json" => a.json = true,
            "-h" | "--help" => {
                println!("usage: bench-embed [--model DIR] [--batch N] [--tokens N] [--batches N] [--threads N] [--python PATH] [--onnx FILE] [--gflops G] [--rounds N] [--json]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if a.batch == 0 || a.batches == 0 || a.rounds == 0 || a.tokens < 3 {
        return Err("--batch, --batches and --rounds must be >= 1, --tokens >= 3".into());
    }
    Ok(a)
}

/// Common English words that are single WordPiece tokens in the BERT uncased vocabulary.
const WORDS: &[&str] = &[
    "the", "model", "data", "search", "result", "query", "document", "index", "vector", "score",
    "rank", "test", "case", "chunk", "table", "page", "text", "time", "year", "system", "report",
    "value", "order", "number", "level", "point", "group", "state", "water", "power", "light",
    "house", "money", "school", "market", "energy", "health", "policy", "service", "support",
];

/// `n` sentences of exactly `tokens` tokens (special tokens included), deterministic.
fn sentences(e: &LocalEmbedder, n: usize, tokens: usize) -> Result<Vec<String>, Error> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let mut words: Vec<&str> = Vec::new();
        loop {
            let len = e.token_ids(&words.join(" "), TextKind::Passage)?.len();
            if len >= tokens {
                break;
            }
            words.push(WORDS[(next() % WORDS.len() as u64) as usize]);
        }
        out.push(words.join(" "));
    }
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Multiply-adds x2 per sentence of `t` tokens for a BERT encoder of hidden `h`, `l` layers,
/// intermediate `i`.
fn flops_per_sentence(t: f64, h: f64, l: f64, i: f64) -> f64 {
    let dense = 2.0 * t * (4.0 * h * h + 2.0 * h * i);
    let attn = 2.0 * 2.0 * t * t * h;
    l * (dense + attn)
}

const ORT_SCRIPT: &str = r#"
import json, sys, time
import numpy as np
import onnxruntime as ort
onnx_path, ids_path, threads, batches = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ids = np.array(json.load(open(ids_path)), dtype=np.int64)
o = ort.SessionOptions()
o.intra_op_num_threads = threads
o.inter_op_num_threads = 1
o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(onnx_path, o, providers=["CPUExecutionProvider"])
feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
names = [i.name for i in s.get_inputs()]
feed = {k: v for k, v in feed.items() if k in names}
out = s.run(None, feed)[0]
times = []
for _ in range(batches):
    t = time.perf_counter(); s.run(None, feed); times.append(time.perf_counter() - t)
print(json.dumps({"times": times, "version": ort.__version__, "first": out[0][:8].tolist()}))
"#;

/// Writes the ONNX graph of the model with `scripts/reference_embed.py --export-onnx`.
fn export_onnx(args: &Args, python: &Path, dir: &Path) -> Result<PathBuf, Error> {
    let p = dir.join("model.onnx");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/reference_embed.py");
    let st = Command::new(python)
        .arg(&script)
        .arg("--model")
        .arg(&args.model)
        .arg("--export-onnx")
        .arg(&p)
        .status()?;
    if !st.success() {
        return Err("ONNX export failed (needs numpy, onnx, tokenizers)".into());
    }
    Ok(p)
}

/// Median seconds per batch of onnxruntime, and its version.
fn run_ort(
    python: &Path,
    onnx: &Path,
    tmp: &Path,
    ids: &[Vec<u32>],
    threads: usize,
    batches: usize,
) -> Result<(f64, String), Error> {
    let ids_path = tmp.join("ids.json");
    std::fs::write(&ids_path, serde_json::to_vec(ids)?)?;
    let out = Command::new(python)
        .arg("-c")
        .arg(ORT_SCRIPT)
        .arg(onnx)
        .arg(&ids_path)
        .arg(threads.to_string())
        .arg(batches.to_string())
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "onnxruntime run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let times: Vec<f64> = v["times"]
        .as_array()
        .ok_or("no times")?
        .iter()
        .filter_map(|t| t.as_f64())
        .collect();
    Ok((
        median(times),
        v["version"].as_str().unwrap_or("?").to_string(),
    ))
}

fn main() -> Result<(), Error> {
    let args = parse_args()?;
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let e = LocalEmbedder::load_with(
        &args.model,
        &LocalEmbedderOptions {
            batch_size: Some(args.batch),
            threads: Some(threads),
            ..Default::default()
        },
    )?;
    let texts = sentences(&e, args.batch, args.tokens)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let ids: Vec<Vec<u32>> = refs
        .iter()
        .map(|t| e.token_ids(t, TextKind::Passage))
        .collect::<Result<_, _>>()?;
    let mean_tokens = ids.iter().map(Vec::len).sum::<usize>() as f64 / ids.len() as f64;

    // Rounds alternate the two engines so that both see the same machine load.
    e.embed(&refs, TextKind::Passage)?; // warm-up
    let mut ours_rounds = Vec::with_capacity(args.rounds);
    let mut ort_rounds = Vec::with_capacity(args.rounds);
    let mut ort_version = None;
    let tmp = std::env::temp_dir().join(format!("bench-embed-{}", std::process::id()));
    let onnx = match (&args.python, &args.onnx) {
        (Some(py), None) => {
            std::fs::create_dir_all(&tmp)?;
            Some(export_onnx(&args, py, &tmp)?)
        }
        (_, given) => given.clone(),
    };
    for _ in 0..args.rounds {
        let mut times = Vec::with_capacity(args.batches);
        for _ in 0..args.batches {
            let t = Instant::now();
            let v = e.embed(&refs, TextKind::Passage)?;
            times.push(t.elapsed().as_secs_f64());
            if v.len() != refs.len() {
                return Err("wrong number of vectors".into());
            }
        }
        ours_rounds.push(median(times));
        if let (Some(py), Some(onnx)) = (&args.python, &onnx) {
            std::fs::create_dir_all(&tmp)?;
            let (t, ver) = run_ort(py, onnx, &tmp, &ids, threads, args.batches)?;
            ort_rounds.push(t);
            ort_version = Some(ver);
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let ours_sps = args.batch as f64 / median(ours_rounds);

    // FLOP bound from config.json.
    let cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(args.model.join("config.json"))?)?;
    let g = |k: &str| cfg[k].as_f64().unwrap_or(0.0);
    let fps = flops_per_sentence(
        mean_tokens,
        g("hidden_size"),
        g("num_hidden_layers"),
        g("intermediate_size"),
    );
    let bound = args.gflops * 1e9 / fps;

    let ort_sps = (!ort_rounds.is_empty()).then(|| args.batch as f64 / median(ort_rounds));

    if args.json {
        let v = serde_json::json!({
            "model": e.fingerprint().name,
            "batch": args.batch,
            "mean_tokens": mean_tokens,
            "threads": threads,
            "batches": args.batches,
            "veredicto_sentences_per_s": ours_sps,
            "onnxruntime_sentences_per_s": ort_sps,
            "onnxruntime_version": ort_version,
            "rounds": args.rounds,
            "flop_bound_sentences_per_s": bound,
            "gflops_assumed": args.gflops,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{}: batch {} x {:.1} tokens, {} threads, median over {} alternating rounds of {} batches",
        e.fingerprint().name,
        args.batch,
        mean_tokens,
        threads,
        args.rounds,
        args.batches
    );
    println!(
        "FLOP bound at {:.0} GFLOP/s: {:.1} sentences/s ({:.2} GFLOP/sentence)",
        args.gflops,
        bound,
        fps / 1e9
    );
    println!(
        "{:<28} {:>12} {:>10} {:>10}",
        "engine", "sentences/s", "vs ort", "of bound"
    );
    let ort_line = |sps: f64| format!("{:>10.2}", sps / ort_sps.unwrap_or(f64::NAN));
    println!(
        "{:<28} {:>12.1} {} {:>9.0}%",
        "veredicto (gemm, packed)",
        ours_sps,
        ort_line(ours_sps),
        100.0 * ours_sps / bound
    );
    if let (Some(sps), Some(ver)) = (ort_sps, &ort_version) {
        println!(
            "{:<28} {:>12.1} {} {:>9.0}%",
            format!("onnxruntime {ver} (python)"),
            sps,
            ort_line(sps),
            100.0 * sps / bound
        );
    }
    Ok(())
}
