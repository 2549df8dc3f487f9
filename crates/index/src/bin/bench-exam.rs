//! `bench-exam`: the whole `veredicto exam --index` process against numpy's bare batched
//! search on the same vectors, side by side.
//!
//! ```sh
//! cargo build --release -p veredicto --bin veredicto
//! cargo run --release -p veredicto-index --bin bench-exam -- [--sizes 100000,1000000]
//!     [--cases 200] [--runs 5] [--dim 384] [--veredicto PATH]
//!     [--python PATH | --no-numpy] [--delete]
//! ```
//!
//! For each size, random normal vectors (fixed seed, L2-normalised; the generator of
//! `bench-search`) are ingested once as a real index under `bench-data/exam-N/` of the cargo
//! target folder, beside a golden set of `--cases` cases whose queries are precomputed
//! vectors (`query_vector`): each query is its expected chunk's vector plus as much random
//! noise, so the exam has real hits and misses. Then, alternately, run after run:
//!
//! - veredicto: the whole process `veredicto exam --index DIR --golden FILE --format json
//!   --no-record` (start, open, read the golden set, search, metrics, diagnosis, JSON written
//!   to a file), timed from spawn to exit, with its CPU time and peak resident memory;
//! - numpy: `scripts/bench-search-numpy.py` (`Q @ D.T`, `argpartition`, sort of the top 10)
//!   on the same `vectors.f32` and queries, already loaded in memory (its load is not timed).
//!
//! Medians and the ratio (numpy time / veredicto time) are printed with the load average.
//! `--delete` removes the generated data after each size.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

mod common;
use common::{median, random_unit, sha256, Numpy, SEED};
use veredicto_index::{
    BatchInfo, ChunkInput, EmbeddedField, Index, IngestSettings, ModelFingerprint, Plan,
};

const QUERY_SEED: u64 = 0x0e8a_3a11;

struct Args {
    sizes: Vec<usize>,
    cases: usize,
    runs: usize,
    dim: usize,
    veredicto: Option<PathBuf>,
    python: Option<String>,
    delete: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        sizes: vec![100_000, 1_000_000],
        cases: 200,
        runs: 5,
        dim: 384,
        veredicto: None,
        python: Some("python3".into()),
        delete: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let num = |s: String| s.parse::<usize>().map_err(|e| format!("{s:?}: {e}"));
        match flag.as_str() {
            "--sizes" => {
                args.sizes = value("--sizes")?
                    .split(',')
                    .map(|s| num(s.to_string()))
                    .collect::<Result<_, _>>()?
            }
            "--cases" => args.cases = num(value("--cases")?)?.max(1),
            "--runs" => args.runs = num(value("--runs")?)?.max(1),
            "--dim" => args.dim = num(value("--dim")?)?,
            "--veredicto" => args.veredicto = Some(PathBuf::from(value("--veredicto")?)),
            "--python" => args.python = Some(value("--python")?),
            "--no-numpy" => args.python = None,
            "--delete" => args.delete = true,
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: bench-exam [--sizes N,N] [--cases N] \
                     [--runs N] [--dim N] [--veredicto PATH] [--python PATH | --no-numpy] [--delete]"
                ))
            }
        }
    }
    Ok(args)
}

fn row_vector(row: usize, dim: usize) -> Vec<f32> {
    random_unit(SEED ^ (row as u64).wrapping_mul(0x2545_f491_4f6c_dd1d), dim)
}

/// The index of `n` rows and its golden set (JSONL) and query file (`queries.f32`), built
/// when missing. Returns the golden file.
fn prepare(dir: &Path, n: usize, dim: usize, cases: usize) -> Result<PathBuf, String> {
    let index_dir = dir.join("index");
    let golden = dir.join(format!("golden-{cases}.jsonl"));
    let queries = dir.join(format!("queries-{cases}.f32"));
    let built = Index::open(&index_dir).is_ok_and(|i| i.len() == n && i.dimension() == dim);
    if !built {
        eprintln!(
            "ingesting {n} x {dim} random unit vectors into {}",
            index_dir.display()
        );
        let t = Instant::now();
        use rayon::prelude::*;
        let vectors: Vec<Vec<f32>> = (0..n).into_par_iter().map(|i| row_vector(i, dim)).collect();
        let corpus: Vec<ChunkInput> = (0..n)
            .map(|i| ChunkInput::new(format!("d{i:08}"), format!("chunk d{i:08}")))
            .collect();
        let value = serde_json::json!({"bench": "random-normal", "seed": SEED, "dimension": dim});
        let settings = IngestSettings {
            model: ModelFingerprint {
                hash: sha256(value.to_string().as_bytes()),
                value,
            },
            dimension: dim,
            field: EmbeddedField::Text,
            full_rebuild: true,
        };
        let plan = Plan::new(None, corpus, settings).map_err(|e| e.to_string())?;
        let batch = BatchInfo {
            name: "bench".into(),
            time: "1970-01-01T00:00:00Z".into(),
            corpus_hash: sha256(format!("{n}x{dim}").as_bytes()),
        };
        plan.apply(&vectors, &batch, &index_dir)
            .map_err(|e| e.to_string())?;
        eprintln!("  ingested in {:.1} s", t.elapsed().as_secs_f64());
    }
    if !golden.is_file() || !queries.is_file() {
        let mut lines = String::new();
        let mut raw = Vec::with_capacity(cases * dim * 4);
        for c in 0..cases {
            // A spread of expected rows; the query is the row's vector plus random noise
            // of the same norm, so that most but not all expected chunks rank first.
            let row = (c * 7919 + 13) % n;
            let noise = random_unit(QUERY_SEED ^ c as u64, dim);
            let sum: Vec<f32> = row_vector(row, dim)
                .iter()
                .zip(&noise)
                .map(|(a, b)| a + 0.9 * b)
                .collect();
            let q = veredicto_index::normalize(&sum).unwrap_or(sum);
            for x in &q {
                raw.extend_from_slice(&x.to_le_bytes());
            }
            let case = serde_json::json!({
                "id": format!("q{c:04}"),
                "query": format!("query {c}"),
                "expected": [format!("d{row:08}")],
                "query_vector": q,
            });
            lines.push_str(&case.to_string());
            lines.push('\n');
        }
        std::fs::write(&golden, lines).map_err(|e| format!("{}: {e}", golden.display()))?;
        std::fs::write(&queries, raw).map_err(|e| format!("{}: {e}", queries.display()))?;
    }
    Ok(golden)
}

/// CPU time (user + system) and peak resident memory (bytes) of the waited-for children.
fn children_usage() -> (f64, u64) {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return (0.0, 0);
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        tv(usage.ru_utime) + tv(usage.ru_stime),
        usage.ru_maxrss as u64 * 1024,
    )
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// One whole `veredicto exam` process: wall seconds, CPU seconds.
fn exam_once(veredicto: &Path, dir: &Path, golden: &Path) -> Result<(f64, f64), String> {
    let out = std::fs::File::create(dir.join("exam.json")).map_err(|e| e.to_string())?;
    let (cpu0, _) = children_usage();
    let t = Instant::now();
    let status = Command::new(veredicto)
        .current_dir(dir)
        .args(["exam", "--index", "index", "--golden"])
        .arg(golden)
        .args(["--format", "json", "--no-record", "--quiet"])
        .stdout(out)
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("{}: {e}", veredicto.display()))?;
    let wall = t.elapsed().as_secs_f64();
    let (cpu1, _) = children_usage();
    // 0 accepted, 1 rejected by the gate: both are a finished exam.
    if !matches!(status.code(), Some(0 | 1)) {
        return Err(format!("veredicto exam ended with {status}"));
    }
    Ok((wall, cpu1 - cpu0))
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = here
        .parent()
        .and_then(Path::parent)
        .map_or(here.clone(), Path::to_path_buf);
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let veredicto = args
        .veredicto
        .clone()
        .unwrap_or_else(|| target.join("release/veredicto"));
    if !veredicto.is_file() {
        return Err(format!(
            "{} not found: build it first (cargo build --release -p veredicto --bin veredicto) or give --veredicto PATH",
            veredicto.display()
        ));
    }
    let data = target.join("bench-data");
    let script = root.join("scripts/bench-search-numpy.py");
    println!(
        "bench-exam: {} cases, top 10, {} runs each, alternating; {} CPUs; load average at start {}",
        args.cases,
        args.runs,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    for &n in &args.sizes {
        let dir = data.join(format!("exam-{n}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let golden = prepare(&dir, n, args.dim, args.cases)?;
        let mut numpy = match &args.python {
            Some(py) => {
                let queries = dir.join(format!("queries-{}.f32", args.cases));
                let vectors = dir.join("index").join("vectors.f32");
                let (np, info) = Numpy::start(
                    py,
                    &script,
                    [&vectors, &queries],
                    [n, args.dim, args.cases, 10],
                )?;
                println!("numpy: {info}");
                Some(np)
            }
            None => None,
        };
        // One unmeasured run each: the page cache holds the vectors for both.
        exam_once(&veredicto, &dir, &golden)?;
        if let Some(np) = numpy.as_mut() {
            np.ask("run")?;
        }
        let load_before = load_average();
        let (mut ours, mut ours_cpu, mut theirs, mut theirs_cpu) = (vec![], vec![], vec![], vec![]);
        for _ in 0..args.runs {
            let (wall, cpu) = exam_once(&veredicto, &dir, &golden)?;
            ours.push(wall);
            ours_cpu.push(cpu);
            if let Some(np) = numpy.as_mut() {
                let reply = np.ask("run")?;
                theirs.push(reply["seconds"].as_f64().ok_or("numpy: no seconds")?);
                theirs_cpu.push(reply["cpu_seconds"].as_f64().unwrap_or(0.0));
            }
        }
        drop(numpy);
        let (_, peak) = children_usage();
        let o = median(&ours);
        let line = if theirs.is_empty() {
            "numpy —".to_owned()
        } else {
            let t = median(&theirs);
            format!(
                "numpy {t:.3} s (CPU {:.2} s)   ratio {:.2}x",
                median(&theirs_cpu),
                t / o
            )
        };
        println!(
            "{n:>9} x {}: veredicto exam {o:.3} s (CPU {:.2} s, peak RSS of any child so far {:.0} MB)   {line}   load {load_before} -> {}",
            args.dim,
            median(&ours_cpu),
            peak as f64 / 1e6,
            load_average()
        );
        println!("          runs (s): veredicto {ours:.3?}  numpy {theirs:.3?}");
        if args.delete {
            std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bench-exam: {e}");
        std::process::exit(2);
    }
}
