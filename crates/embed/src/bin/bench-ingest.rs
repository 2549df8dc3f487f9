//! `bench-ingest`: a BEIR corpus (SciFact's 5,183 abstracts by default) embedded end to end
//! (read, tokenize, embed, write) by [`LocalEmbedder`] and by a Python pipeline of
//! onnxruntime + tokenizers (`scripts/bench-ingest-onnx.py`), alternating, on the same
//! threads; optionally `veredicto ingest` itself too.
//!
//! ```text
//! cargo run --release -p veredicto-embed --bin bench-ingest -- --python .venv/bin/python \
//!     [--corpus ../shared/datasets/scifact/beir/corpus.jsonl] [--model models/all-MiniLM-L6-v2] \
//!     [--threads N] [--rounds 2] [--limit N] [--onnx model.onnx] [--veredicto target/release/veredicto]
//! ```
//!
//! Each side runs as its own process and is timed from outside (start-up and model loading
//! included); each also reports its stages. Documents are `title + " " + text`, truncated
//! to the model's 256 tokens, as `veredicto ingest` embeds a BEIR corpus. Both write their
//! vectors as a float32 `.npy`; the two files are compared (lowest cosine over the corpus).
//! `--python` names an interpreter with `numpy`, `onnx`, `onnxruntime`, `tokenizers` (and
//! `sympy` for onnxruntime's graph fusions); the ONNX graph is written by
//! `scripts/reference_embed.py --export-onnx` unless `--onnx` gives one.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use veredicto_embed::{Embedder, LocalEmbedder, LocalEmbedderOptions, TextKind};

type Error = Box<dyn std::error::Error>;

struct Args {
    model: PathBuf,
    corpus: PathBuf,
    threads: usize,
    python: Option<PathBuf>,
    onnx: Option<PathBuf>,
    veredicto: Option<PathBuf>,
    rounds: usize,
    limit: usize,
    worker_out: Option<PathBuf>,
}

fn parse_args() -> Result<Args, Error> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut a = Args {
        model: root.join("models/all-MiniLM-L6-v2"),
        corpus: root.join("../shared/datasets/scifact/beir/corpus.jsonl"),
        threads: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        python: None,
        onnx: None,
        veredicto: None,
        rounds: 2,
        limit: 0,
        worker_out: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => a.model = val()?.into(),
            "--corpus" => a.corpus = val()?.into(),
            "--threads" => a.threads = val()?.parse()?,
            "--python" => a.python = Some(val()?.into()),
            "--onnx" => a.onnx = Some(val()?.into()),
            "--veredicto" => a.veredicto = Some(val()?.into()),
            "--rounds" => a.rounds = val()?.parse()?,
            "--limit" => a.limit = val()?.parse()?,
            "--worker" => a.worker_out = Some(val()?.into()),
            "-h" | "--help" => {
                println!("usage: bench-ingest [--python PATH] [--corpus FILE] [--model DIR] [--threads N] [--rounds N] [--limit N] [--onnx FILE] [--veredicto BIN]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if a.rounds == 0 || a.threads == 0 {
        return Err("--rounds and --threads must be >= 1".into());
    }
    Ok(a)
}

/// `title + " " + text` of each line of a BEIR corpus (the text alone when the title is
/// empty), as `veredicto ingest` embeds it.
fn read_corpus(path: &Path, limit: usize) -> Result<Vec<String>, Error> {
    let raw = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in raw.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        let text = v["text"].as_str().unwrap_or("");
        out.push(match v["title"].as_str() {
            Some(t) if !t.is_empty() => format!("{t} {text}"),
            _ => text.to_string(),
        });
        if limit > 0 && out.len() == limit {
            break;
        }
    }
    Ok(out)
}

/// Writes `rows` as a C-order float32 `.npy` (temp file, fsync, rename).
fn write_npy(path: &Path, rows: &[Vec<f32>]) -> Result<(), Error> {
    let dim = rows.first().map_or(0, Vec::len);
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {dim}), }}",
        rows.len()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = Vec::with_capacity(10 + header.len() + rows.len() * dim * 4);
    bytes.extend_from_slice(b"\x93NUMPY\x01\x00");
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for r in rows {
        for x in r {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    let tmp = path.with_extension("npy.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// A float32 `.npy` as (rows, dim, data).
fn read_npy(path: &Path) -> Result<(usize, usize, Vec<f32>), Error> {
    let b = std::fs::read(path)?;
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err(format!("{}: not a .npy file", path.display()).into());
    }
    let (hlen, start) = if b[6] == 1 {
        (u16::from_le_bytes([b[8], b[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12)
    };
    let header = String::from_utf8_lossy(&b[start..start + hlen]);
    let shape = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or("npy: no shape")?;
    let dims: Vec<usize> = shape
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let (n, d) = (dims[0], dims.get(1).copied().unwrap_or(1));
    let data = b[start + hlen..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((n, d, data))
}

/// The embedding pipeline itself, in this process: prints its stage times as JSON.
fn worker(a: &Args, out: &Path) -> Result<(), Error> {
    let t0 = Instant::now();
    let e = LocalEmbedder::load_with(
        &a.model,
        &LocalEmbedderOptions {
            threads: Some(a.threads),
            ..Default::default()
        },
    )?;
    let t_load = Instant::now();
    let texts = read_corpus(&a.corpus, a.limit)?;
    let t_read = Instant::now();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // In slices of 256, as `veredicto ingest` does (for its progress bar).
    let mut vectors = Vec::with_capacity(refs.len());
    for slice in refs.chunks(256) {
        vectors.extend(e.embed(slice, TextKind::Passage)?);
    }
    let t_embed = Instant::now();
    write_npy(out, &vectors)?;
    let t_write = Instant::now();
    let s = |a: Instant, b: Instant| (b - a).as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "load": s(t0, t_load),
            "read": s(t_load, t_read),
            "tokenize+embed": s(t_read, t_embed),
            "write": s(t_embed, t_write),
            "total": s(t0, t_write),
            "vectors": vectors.len(),
            "dim": e.dim(),
        })
    );
    Ok(())
}

/// Runs `cmd`, returning its wall time and its stdout parsed as JSON (when it is JSON).
fn timed(mut cmd: Command, what: &str) -> Result<(f64, serde_json::Value), Error> {
    let t = Instant::now();
    let out = cmd.output()?;
    let wall = t.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!("{what} failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    Ok((wall, v))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Lowest cosine between matching rows of two `.npy` files.
fn min_cosine(a: &Path, b: &Path) -> Result<f64, Error> {
    let (n, d, x) = read_npy(a)?;
    let (m, e, y) = read_npy(b)?;
    if n != m || d != e {
        return Err(format!("vector files differ in shape: {n}x{d} vs {m}x{e}").into());
    }
    let mut worst = 1f64;
    for i in 0..n {
        let (u, v) = (&x[i * d..(i + 1) * d], &y[i * d..(i + 1) * d]);
        let dot: f64 = u.iter().zip(v).map(|(p, q)| *p as f64 * *q as f64).sum();
        let nu: f64 = u.iter().map(|p| (*p as f64).powi(2)).sum::<f64>().sqrt();
        let nv: f64 = v.iter().map(|p| (*p as f64).powi(2)).sum::<f64>().sqrt();
        worst = worst.min(dot / (nu * nv).max(1e-30));
    }
    Ok(worst)
}

fn main() -> Result<(), Error> {
    let a = parse_args()?;
    if let Some(out) = &a.worker_out {
        return worker(&a, out);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let tmp = std::env::temp_dir().join(format!("bench-ingest-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let onnx = match (&a.python, &a.onnx) {
        (Some(py), None) => {
            let p = tmp.join("model.onnx");
            let st = Command::new(py)
                .arg(root.join("scripts/reference_embed.py"))
                .arg("--model")
                .arg(&a.model)
                .arg("--export-onnx")
                .arg(&p)
                .status()?;
            if !st.success() {
                return Err("ONNX export failed (needs numpy, onnx, tokenizers)".into());
            }
            Some(p)
        }
        (_, given) => given.clone(),
    };
    // With --limit, all sides read a copy of the corpus's first N documents.
    let corpus = if a.limit > 0 {
        let raw = std::fs::read_to_string(&a.corpus)
            .map_err(|e| format!("{}: {e}", a.corpus.display()))?;
        let mut head = String::new();
        for line in raw.lines().filter(|l| !l.trim().is_empty()).take(a.limit) {
            head.push_str(line);
            head.push('\n');
        }
        let p = tmp.join("corpus.jsonl");
        std::fs::write(&p, head)?;
        p
    } else {
        a.corpus.clone()
    };
    let exe = std::env::current_exe()?;
    let ours_npy = tmp.join("veredicto.npy");
    let ort_npy = tmp.join("onnxruntime.npy");
    let (mut ours, mut ort, mut cli) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ours_stages, mut ort_stages) = (serde_json::Value::Null, serde_json::Value::Null);
    for round in 0..a.rounds {
        let mut cmd = Command::new(&exe);
        cmd.arg("--worker")
            .arg(&ours_npy)
            .arg("--model")
            .arg(&a.model)
            .arg("--corpus")
            .arg(&corpus)
            .arg("--threads")
            .arg(a.threads.to_string());
        let (wall, stages) = timed(cmd, "veredicto pipeline")?;
        eprintln!("round {}: veredicto {wall:.2} s {stages}", round + 1);
        ours.push(wall);
        ours_stages = stages;
        if let (Some(py), Some(onnx)) = (&a.python, &onnx) {
            let mut cmd = Command::new(py);
            cmd.arg(root.join("scripts/bench-ingest-onnx.py"))
                .arg("--onnx")
                .arg(onnx)
                .arg("--tokenizer")
                .arg(a.model.join("tokenizer.json"))
                .arg("--corpus")
                .arg(&corpus)
                .arg("--out")
                .arg(&ort_npy)
                .arg("--threads")
                .arg(a.threads.to_string());
            let (wall, stages) = timed(cmd, "python pipeline")?;
            eprintln!("round {}: onnxruntime {wall:.2} s {stages}", round + 1);
            ort.push(wall);
            ort_stages = stages;
        }
        if let Some(bin) = &a.veredicto {
            let index = tmp.join(format!("index-{round}"));
            let mut cmd = Command::new(bin);
            cmd.arg("ingest")
                .arg("--corpus")
                .arg(&corpus)
                .arg("--index")
                .arg(&index)
                .arg("--model")
                .arg(&a.model)
                .arg("--json")
                .env("RAYON_NUM_THREADS", a.threads.to_string());
            let (wall, _) = timed(cmd, "veredicto ingest")?;
            eprintln!("round {}: veredicto ingest {wall:.2} s", round + 1);
            cli.push(wall);
            let _ = std::fs::remove_dir_all(&index);
        }
    }
    let n = ours_stages["vectors"].as_u64().unwrap_or(0);
    println!(
        "{n} documents of {}{} (title + text, truncated to the model's tokens), {} threads, median wall time over {} alternating rounds",
        a.corpus.display(),
        if a.limit > 0 { " (--limit)" } else { "" },
        a.threads,
        a.rounds
    );
    println!(
        "{:<44} {:>9} {:>10} {:>9}",
        "pipeline (whole process)", "seconds", "docs/s", "ratio"
    );
    let ours_t = median(ours);
    let ort_t = (!ort.is_empty()).then(|| median(ort));
    let line = |name: &str, t: f64| {
        println!(
            "{name:<44} {t:>9.2} {:>10.1} {:>9.2}",
            n as f64 / t,
            ort_t.map_or(f64::NAN, |o| o / t)
        );
    };
    line("veredicto (LocalEmbedder, bench worker)", ours_t);
    if !cli.is_empty() {
        line("veredicto ingest (CLI, index written)", median(cli));
    }
    if let Some(t) = ort_t {
        let ver = ort_stages["onnxruntime"].as_str().unwrap_or("?");
        let tv = ort_stages["tokenizers"].as_str().unwrap_or("?");
        line(&format!("onnxruntime {ver} + tokenizers {tv}"), t);
    }
    println!("ratio = onnxruntime pipeline time / this pipeline's time (> 1: veredicto faster)");
    println!("veredicto stages (last round): {ours_stages}");
    if ort_t.is_some() {
        println!("python stages (last round):    {ort_stages}");
        let emb = ours_stages["tokenize+embed"].as_f64().unwrap_or(f64::NAN);
        let ort_emb = ort_stages["tokenize"].as_f64().unwrap_or(f64::NAN)
            + ort_stages["embed"].as_f64().unwrap_or(f64::NAN);
        println!(
            "tokenize+embed stages: veredicto {emb:.2} s, onnxruntime {ort_emb:.2} s (ratio {:.2})",
            ort_emb / emb
        );
        println!(
            "lowest cosine between the two vector files: {:.7}",
            min_cosine(&ours_npy, &ort_npy)?
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
