//! `bench-search`: exact top-k throughput of the embedded index against numpy, side by side.
//!
//! ```sh
//! scripts/bench-search.sh            # sets up a numpy venv, then runs this in release mode
//! cargo run --release -p veredicto-index --bin bench-search -- [--sizes 100000,1000000]
//!     [--queries 200] [--k 10] [--runs 5] [--dim 384] [--python PATH | --no-numpy]
//! ```
//!
//! Random normal vectors (fixed seed), L2-normalised, are written once as real indexes under
//! `target/bench-data/`. For each size, the Rust search (`Index::search_many`) and
//! `scripts/bench-search-numpy.py` (`Q @ D.T`, `argpartition`, sort of the top k; reading the
//! same `vectors.f32`) are timed alternately, run after run, in the same process lifetime;
//! medians and the ratio are printed, with the resident memory of the index after opening
//! and after a search, and the agreement of the two top-k lists.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::exit)]

use std::path::{Path, PathBuf};
use std::time::Instant;

mod common;
use common::{median, random_unit, sha256, Numpy, SEED};
use veredicto_index::{
    BatchInfo, ChunkInput, EmbeddedField, Index, IngestSettings, ModelFingerprint, Plan, Query,
};

struct Args {
    sizes: Vec<usize>,
    queries: usize,
    k: usize,
    runs: usize,
    dim: usize,
    python: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        sizes: vec![100_000, 1_000_000],
        queries: 200,
        k: 10,
        runs: 5,
        dim: 384,
        python: Some("python3".into()),
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
            "--queries" => args.queries = num(value("--queries")?)?,
            "--k" => args.k = num(value("--k")?)?,
            "--runs" => args.runs = num(value("--runs")?)?.max(1),
            "--dim" => args.dim = num(value("--dim")?)?,
            "--python" => args.python = Some(value("--python")?),
            "--no-numpy" => args.python = None,
            "-h" | "--help" => {
                return Err(
                    "usage: bench-search [--sizes N,N] [--queries N] [--k N] [--runs N] \
                     [--dim N] [--python PATH | --no-numpy]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

fn fingerprint(dim: usize) -> ModelFingerprint {
    let value = serde_json::json!({"bench": "random-normal", "seed": SEED, "dimension": dim});
    let hash = sha256(&serde_json::to_vec(&value).unwrap_or_default());
    ModelFingerprint { value, hash }
}

/// Opens the bench index of `n` rows, building it first when missing.
fn bench_index(dir: &Path, n: usize, dim: usize) -> Result<(), String> {
    if let Ok(index) = Index::open(dir) {
        if index.len() == n && index.dimension() == dim {
            return Ok(());
        }
    }
    eprintln!(
        "generating {n} x {dim} random unit vectors into {}",
        dir.display()
    );
    let t = Instant::now();
    use rayon::prelude::*;
    let vectors: Vec<Vec<f32>> = (0..n)
        .into_par_iter()
        .map(|i| random_unit(SEED ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d), dim))
        .collect();
    let corpus: Vec<ChunkInput> = (0..n)
        .map(|i| ChunkInput::new(format!("d{i:08}"), format!("d{i:08}")))
        .collect();
    let settings = IngestSettings {
        model: fingerprint(dim),
        dimension: dim,
        field: EmbeddedField::Text,
        full_rebuild: true,
    };
    let plan = Plan::new(None, corpus, settings).map_err(|e| e.to_string())?;
    let batch = BatchInfo {
        name: "bench".into(),
        time: "1970-01-01T00:00:00Z".into(),
        corpus_hash: fingerprint(n).hash,
    };
    plan.apply(&vectors, &batch, dir)
        .map_err(|e| e.to_string())?;
    eprintln!("  built in {:.1} s", t.elapsed().as_secs_f64());
    Ok(())
}

fn rss_bytes() -> u64 {
    // VmRSS in kB from /proc/self/status (Linux); 0 elsewhere.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// CPU time (user + system) of this process so far, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = here
        .parent()
        .and_then(Path::parent)
        .map_or(here.clone(), Path::to_path_buf);
    // Under the cargo target folder (CARGO_TARGET_DIR when set at run time).
    let data = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("bench-data");
    std::fs::create_dir_all(&data).map_err(|e| format!("{}: {e}", data.display()))?;
    let script = root.join("scripts/bench-search-numpy.py");
    let threads = rayon::current_num_threads();
    println!(
        "bench-search: exact top-{} of {} queries (one batch), dim {}, kernel {}, {} threads, median of {} runs",
        args.k,
        args.queries,
        args.dim,
        Index::kernel_name(),
        threads,
        args.runs
    );

    let queries: Vec<Vec<f32>> = (0..args.queries)
        .map(|i| random_unit(!SEED ^ (i as u64).wrapping_mul(0x9e37_79b9), args.dim))
        .collect();
    let qpath = data.join(format!("queries-{}x{}.f32", args.queries, args.dim));
    let mut qbytes = Vec::with_capacity(args.queries * args.dim * 4);
    for q in &queries {
        for x in q {
            qbytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(&qpath, &qbytes).map_err(|e| format!("{}: {e}", qpath.display()))?;

    let mut rows = Vec::new();
    for &n in &args.sizes {
        let dir = data.join(format!("index-{n}x{}", args.dim));
        bench_index(&dir, n, args.dim)?;

        let before = rss_bytes();
        let t = Instant::now();
        let c = cpu_seconds();
        let index = Index::open(&dir).map_err(|e| e.to_string())?;
        let open_ms = t.elapsed().as_secs_f64() * 1e3;
        let open_cpu_ms = (cpu_seconds() - c) * 1e3;
        let after_open = rss_bytes();
        let raw = (n * args.dim * 4) as f64;
        let on_disk: u64 = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        // The check made once before the first search (vectors' norms, chunk table's hash).
        let t = Instant::now();
        index.check_vectors().map_err(|e| e.to_string())?;
        let check_ms = t.elapsed().as_secs_f64() * 1e3;

        let mut numpy = match &args.python {
            Some(py) => {
                let (np, info) = Numpy::start(
                    py,
                    &script,
                    [dir.join("vectors.f32").as_path(), &qpath],
                    [n, args.dim, args.queries, args.k],
                )?;
                println!("numpy: {info}");
                Some(np)
            }
            None => None,
        };

        // Warm-up (pages the vectors in), and the agreement of the top-k lists.
        let ours = index
            .search_many(&queries, args.k, None)
            .map_err(|e| e.to_string())?;
        let after_search = rss_bytes();
        let mut agreement = None;
        if let Some(np) = numpy.as_mut() {
            let theirs = np.ask("ids")?;
            let mut same = 0usize;
            let mut total = 0usize;
            for (q, hits) in ours.iter().enumerate() {
                let their_rows: Vec<usize> = theirs["ids"][q]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_u64())
                            .map(|x| x as usize)
                            .collect()
                    })
                    .unwrap_or_default();
                total += hits.len();
                same += hits.iter().filter(|h| their_rows.contains(&h.row)).count();
            }
            agreement = Some(same as f64 / total.max(1) as f64);
        }

        let mut ours_qps = Vec::new();
        let mut ours_cpu = Vec::new();
        let mut theirs_qps = Vec::new();
        let mut theirs_cpu = Vec::new();
        let mut sgemm_secs = Vec::new();
        let mut sgemm_cpu = Vec::new();
        let mut sgemm1_cpu = Vec::new();
        for _ in 0..args.runs {
            let t = Instant::now();
            let c = cpu_seconds();
            let r = index
                .search_many(&queries, args.k, None)
                .map_err(|e| e.to_string())?;
            let secs = t.elapsed().as_secs_f64();
            ours_cpu.push(cpu_seconds() - c);
            std::hint::black_box(r);
            ours_qps.push(args.queries as f64 / secs);
            if let Some(np) = numpy.as_mut() {
                let reply = np.ask("run")?;
                let secs = reply["seconds"].as_f64().ok_or("numpy: no seconds")?;
                theirs_qps.push(args.queries as f64 / secs);
                theirs_cpu.push(reply["cpu_seconds"].as_f64().unwrap_or(f64::NAN));
                let reply = np.ask("sgemm")?;
                sgemm_secs.push(reply["seconds"].as_f64().ok_or("numpy: no seconds")?);
                sgemm_cpu.push(reply["cpu_seconds"].as_f64().unwrap_or(f64::NAN));
                let reply = np.ask("sgemm1")?;
                if let Some(cpu) = reply["cpu_seconds"].as_f64() {
                    sgemm1_cpu.push(cpu);
                }
            }
        }
        // The exam's case: top-k plus the exact rank of chunks anywhere in the ranking. Three
        // random chunks per query rank around the middle: the slow path sees most scores.
        let rank_ids: Vec<Vec<String>> = (0..args.queries)
            .map(|i| {
                [7919usize, 104_729, 15_485_863]
                    .iter()
                    .map(|p| index.chunk((i * p + 1) % n).id().to_string())
                    .collect()
            })
            .collect();
        let batch: Vec<Query<'_>> = queries
            .iter()
            .zip(&rank_ids)
            .map(|(q, ids)| Query {
                vector: q,
                k: args.k,
                filter: None,
                rank_ids: ids,
            })
            .collect();
        let mut ranked_qps = Vec::new();
        for _ in 0..args.runs {
            let t = Instant::now();
            let r = index.search_batch(&batch).map_err(|e| e.to_string())?;
            ranked_qps.push(args.queries as f64 / t.elapsed().as_secs_f64());
            std::hint::black_box(r);
        }
        let ranked_m = median(&ranked_qps);
        // One query at a time (memory-bound: every search streams all the vectors).
        let mut single_ms = Vec::new();
        let c = cpu_seconds();
        for q in queries.iter().take(20) {
            let t = Instant::now();
            let r = index.search(q, args.k, None).map_err(|e| e.to_string())?;
            single_ms.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(r);
        }
        let single_cpu_ms = (cpu_seconds() - c) * 1e3 / 20.0;
        // The check again on fresh opens with the vectors in the page cache: what an exam
        // pays once per process (wall and CPU, median of 7).
        let (mut check_warm_ms, mut check_warm_cpu_ms) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            let fresh = Index::open(&dir).map_err(|e| e.to_string())?;
            let (t, c) = (Instant::now(), cpu_seconds());
            fresh.check_vectors().map_err(|e| e.to_string())?;
            check_warm_ms.push(t.elapsed().as_secs_f64() * 1e3);
            check_warm_cpu_ms.push((cpu_seconds() - c) * 1e3);
        }
        let check_warm = median(&check_warm_ms);
        let check_warm_cpu = median(&check_warm_cpu_ms);
        let single_m = median(&single_ms);
        let ours_m = median(&ours_qps);
        let theirs_m = (!theirs_qps.is_empty()).then(|| median(&theirs_qps));
        let open_delta = after_open.saturating_sub(before) as f64;
        let search_delta = after_search.saturating_sub(before) as f64;
        rows.push((n, ours_m, theirs_m, agreement));
        println!(
            "{n:>9} x {}: veredicto {ours_m:>8.1} q/s   numpy {}   ratio {}   top-{} agreement {}",
            args.dim,
            theirs_m.map_or("-".into(), |t| format!("{t:>8.1} q/s")),
            theirs_m.map_or("-".into(), |t| format!("{:.2}x", ours_m / t)),
            args.k,
            agreement.map_or("-".into(), |a| format!("{:.2}%", a * 100.0)),
        );
        println!(
            "          runs (q/s): veredicto {:?}  numpy {:?}",
            ours_qps.iter().map(|x| x.round()).collect::<Vec<_>>(),
            theirs_qps.iter().map(|x| x.round()).collect::<Vec<_>>()
        );
        let flop = 2.0 * n as f64 * args.dim as f64 * args.queries as f64;
        let cpu_line = |cpu: &mut Vec<f64>| {
            let m = median(cpu);
            format!(
                "{m:.3} CPU-s per batch ({:.1} GFLOP per CPU-second)",
                flop / m / 1e9
            )
        };
        let ours_cpu_m = median(&ours_cpu.clone());
        println!(
            "          CPU time (median): veredicto {}{}",
            cpu_line(&mut ours_cpu),
            if theirs_cpu.is_empty() {
                String::new()
            } else {
                format!(", numpy {}", cpu_line(&mut theirs_cpu))
            }
        );
        if !sgemm_cpu.is_empty() {
            // The bound of the score kernel: numpy's BLAS sgemm alone (Q @ D.T into an output
            // allocated once, no top-k), in the same runs; our whole search against it.
            let sgemm_cpu_m = median(&sgemm_cpu);
            let sgemm_wall_m = median(&sgemm_secs);
            println!(
                "          sgemm alone (numpy Q @ D.T): {sgemm_cpu_m:.3} CPU-s ({:.1} GFLOP per CPU-second), \
                 {sgemm_wall_m:.3} s wall ({:.1} GFLOP/s); veredicto's search at {:.0}% of its rate per CPU-second",
                flop / sgemm_cpu_m / 1e9,
                flop / sgemm_wall_m / 1e9,
                100.0 * sgemm_cpu_m / ours_cpu_m
            );
        }
        if !sgemm1_cpu.is_empty() {
            // One BLAS thread: its CPU time holds no waiting between threads (the strictest
            // per-CPU-second bound).
            let m = median(&sgemm1_cpu);
            println!(
                "          sgemm alone on 1 BLAS thread: {m:.3} CPU-s ({:.1} GFLOP per CPU-second); \
                 veredicto's search (2 threads) at {:.0}% of its rate per CPU-second",
                flop / m / 1e9,
                100.0 * m / ours_cpu_m
            );
        }
        println!(
            "          with the exact rank of 3 random chunks per query: veredicto {ranked_m:.1} q/s; \
             one query at a time: {single_m:.2} ms per query (median of 20; {single_cpu_ms:.2} CPU-ms)"
        );
        println!(
            "          index format {}: {:.1} MB on disk ({:.3}x raw); open {open_ms:.1} ms ({open_cpu_ms:.1} CPU-ms), check before the first search {check_ms:.0} ms (first), \
             {check_warm:.1} ms ({check_warm_cpu:.1} CPU-ms) warm (median of 7 fresh opens)",
            index.manifest().format_version,
            on_disk as f64 / 1e6,
            on_disk as f64 / raw
        );
        println!(
            "          memory: raw vectors {:.1} MB; RSS +{:.1} MB after open ({:.3}x raw), +{:.1} MB after a search ({:.3}x raw)",
            raw / 1e6,
            open_delta / 1e6,
            open_delta / raw,
            search_delta / 1e6,
            search_delta / raw
        );
        drop(numpy);
        drop(index);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bench-search: {e}");
        std::process::exit(2);
    }
}
