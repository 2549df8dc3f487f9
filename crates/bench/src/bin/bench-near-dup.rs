//! `bench-near-dup`: the near-duplicate search of `veredicto corpus check` — the blocked,
//! screened search that `hygiene::check` runs now against the plain loop over every pair it
//! replaced (kept here verbatim as the baseline) — on unit vectors of 384 dimensions (the
//! MiniLM size), in clusters of near copies so that some pairs cross the threshold. Both
//! must find the same pairs; the tool checks it.
//!
//! ```sh
//! cargo run --release -p veredicto-bench --bin bench-near-dup -- --chunks 5183 --chunks 20000
//! ```
//!
//! Prints one line per size: chunks, pairs found, CPU seconds of each, the speed-up, and
//! the load average when it ran. Single-threaded both.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::time::Duration;
use veredicto_core::case::Chunk;
use veredicto_core::hygiene::{self, CheckInput, CorpusPolicy};

fn cpu() -> Duration {
    // SAFETY: getrusage only writes into the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |tv: libc::timeval| {
        Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
    };
    t(u.ru_utime) + t(u.ru_stime)
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Unit vectors: one base per 50 chunks, each chunk its base plus noise of one of six sizes.
fn vectors(n: usize, dim: usize) -> Vec<Vec<f32>> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed = veredicto_bench::rng::mix64(seed);
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let bases: Vec<Vec<f32>> = (0..n.div_ceil(50))
        .map(|_| (0..dim).map(|_| next()).collect())
        .collect();
    (0..n)
        .map(|k| {
            let scale = [0.0, 0.05, 0.1, 0.2, 0.5, 2.0][k % 6];
            let v: Vec<f32> = bases[k / 50].iter().map(|x| x + scale * next()).collect();
            let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            v.iter().map(|x| (f64::from(*x) / norm) as f32).collect()
        })
        .collect()
}

/// The loop `hygiene::check` ran before: every pair, in order.
fn every_pair(v: &[Vec<f32>], t: f64) -> Vec<(usize, usize, f64)> {
    let mut out = Vec::new();
    for (a, va) in v.iter().enumerate() {
        for (b, vb) in v.iter().enumerate().skip(a + 1) {
            let cs = f64::from(va.iter().zip(vb).map(|(p, q)| p * q).sum::<f32>());
            if cs >= t {
                out.push((a, b, cs.min(1.0)));
            }
        }
    }
    out
}

fn main() -> anyhow::Result<()> {
    let mut sizes = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--chunks" => sizes.push(
                args.next()
                    .ok_or_else(|| anyhow::anyhow!("--chunks N"))?
                    .parse::<usize>()?,
            ),
            other => anyhow::bail!("unknown argument `{other}` (expected --chunks N ...)"),
        }
    }
    if sizes.is_empty() {
        sizes.push(5183);
    }
    let policy = CorpusPolicy::default();
    println!("| chunks | near pairs | every pair (CPU s) | blocked + screened (CPU s) | speed-up | load (1, 5, 15 min) |");
    println!("|---:|---:|---:|---:|---:|---|");
    for n in sizes {
        let vs = vectors(n, 384);
        let input = CheckInput {
            chunks: (0..n)
                .map(|i| Chunk {
                    id: format!("c{i:06}"),
                    doc_id: Some(format!("d{i}")),
                    text: Some(format!("chunk number {i}")),
                    representation: None,
                    domain: None,
                    labels: Vec::new(),
                    valid_from: None,
                    valid_to: None,
                    ingest_batch: None,
                    facets: Default::default(),
                    start: None,
                    end: None,
                })
                .collect(),
            sources: vec![None; n],
            vectors: vs.iter().cloned().map(Some).collect(),
            as_of: "2026-12-01".into(),
            ..CheckInput::default()
        };
        let start = cpu();
        let old = every_pair(&vs, policy.near_duplicate_cosine);
        let old_s = (cpu() - start).as_secs_f64();
        let start = cpu();
        let check = hygiene::check(&input, &policy);
        let new_s = (cpu() - start).as_secs_f64();
        // The same pairs: every pair found joins its two chunks in one cluster, and the
        // clusters hold exactly the chunks of some pair.
        let mut in_pair = std::collections::BTreeSet::new();
        for &(a, b, _) in &old {
            in_pair.insert(a);
            in_pair.insert(b);
        }
        let clustered: std::collections::BTreeSet<usize> = check
            .duplicates
            .iter()
            .flat_map(|d| {
                d.members
                    .iter()
                    .map(|m| m.id[1..].parse::<usize>().unwrap_or(0))
            })
            .collect();
        anyhow::ensure!(
            in_pair == clustered,
            "the two searches disagree: {} chunks in pairs, {} in clusters",
            in_pair.len(),
            clustered.len()
        );
        println!(
            "| {n} | {} | {old_s:.2} | {new_s:.2} | {:.1}x | {} |",
            old.len(),
            old_s / new_s.max(1e-9),
            load()
        );
    }
    Ok(())
}
