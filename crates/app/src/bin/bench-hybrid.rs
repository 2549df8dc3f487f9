//! `bench-hybrid`: vector, BM25 and hybrid (RRF) retrieval of veredicto's own index on a
//! BEIR data set, with the paired significance of the hybrid against each arm.
//!
//! ```sh
//! cargo build --release -p veredicto-app --bin bench-hybrid
//! target/release/bench-hybrid ../shared/datasets/scifact/beir models/multilingual-e5-small \
//!     [--analyzer english|spanish] [--work DIR] [--rrf-k 60]
//! ```
//!
//! Ingests `corpus.jsonl` with the model and the BM25 arm into `--work/kb-MODEL` (reused
//! when it is already the same corpus and model: nothing is re-embedded), then runs the 300
//! (or however many) test queries through `index:KB`, `index:KB?mode=bm25` and
//! `fusion:rrf?k=60` over both, 100 deep, and prints nDCG@10 and R@100 of each, the paired
//! sign-flip randomisation test of the hybrid's per-query nDCG@10 against each arm, and
//! the time of each pass (the fused pass's time split into its arms' and the fusion's own).
//! The queries are embedded once, before the passes, which all reuse the vectors: a pass's
//! time is retrieval, fusion and measures, without query embedding.
// A benchmark program, not part of the veredicto command line: it prints its own figures.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use veredicto_app::exam::{examine, Inputs};
use veredicto_app::ingest::{ingest, prepare, IngestRequest};
use veredicto_app::Events;
use veredicto_core::case::Case;
use veredicto_core::compare::stats::sign_flip_test;
use veredicto_core::measure::Measure;
use veredicto_core::policy::Policy;
use veredicto_core::run::Run;
use veredicto_core::trec::ResRels;
use veredicto_index::Analyzer;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::Options;

/// Per query (case order): nDCG@10 and R@100.
fn per_query(cases: &[Case], run: &Run) -> (Vec<f64>, Vec<f64>) {
    let (ndcg, recall) = (Measure::ndcg_at(10), Measure::recall_at(100));
    cases
        .iter()
        .map(|c| {
            let expected: BTreeSet<&str> = c.expected.iter().map(String::as_str).collect();
            let rels: Vec<bool> = run
                .queries
                .get(&c.id)
                .map(|l| l.iter().map(|h| expected.contains(h.id.as_str())).collect())
                .unwrap_or_default();
            let judged = ResRels::binary(&rels, expected.len());
            (ndcg.compute(&judged), recall.compute(&judged))
        })
        .unzip()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn main() {
    if let Err(e) = run() {
        eprintln!("bench-hybrid: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut model) = (None, None);
    let mut analyzer = Analyzer::English;
    let mut work = PathBuf::from("target/bench-hybrid");
    let mut rrf_k = 60.0;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--analyzer" => {
                analyzer = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--analyzer english|spanish")?
            }
            "--work" => work = PathBuf::from(args.next().unwrap_or_default()),
            "--rrf-k" => {
                rrf_k = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--rrf-k N")?
            }
            _ if dir.is_none() => dir = Some(PathBuf::from(a)),
            _ if model.is_none() => model = Some(PathBuf::from(a)),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let (Some(dir), Some(model)) = (dir, model) else {
        return Err("usage: bench-hybrid BEIR_DIR MODEL_DIR [--analyzer english|spanish] [--work DIR] [--rrf-k K]".into());
    };
    let mut cases =
        veredicto_formats::golden::read_golden_with(&dir, None).map_err(|e| e.to_string())?;
    let embedder = veredicto_embed::load_local_embedder(&model, None).map_err(|e| e.to_string())?;
    let name = model
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let kb = work.join(format!(
        "kb-{}-{name}",
        dir.parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let prepared = prepare(IngestRequest {
        corpus: dir.join("corpus.jsonl"),
        index: kb.clone(),
        time: "2026-12-03T00:00:00Z".into(),
        bm25: Some(Some(analyzer)),
        ..IngestRequest::default()
    })
    .map_err(|e| e.to_string())?;
    let done =
        ingest(prepared, Some(embedder.as_ref()), Events::silent()).map_err(|e| e.to_string())?;
    println!(
        "ingest {}: {} chunks, {} embedded, bm25 {:?}, {:.1} s",
        kb.display(),
        done.chunks,
        done.embedded,
        done.bm25.map(|w| w.analyzer.name()),
        started.elapsed().as_secs_f64()
    );
    // The queries are embedded once, here, and every pass below reads these vectors (as a
    // golden set's `query_vector`): the passes' times are then retrieval, fusion and
    // measures alone, and the fused pass is not charged the embedding its arms' passes
    // would each pay again. Vectors are bit-identical at any batch size.
    let started = Instant::now();
    let texts: Vec<&str> = cases.iter().map(|c| c.query.as_str()).collect();
    let vectors = embedder
        .embed(&texts, veredicto_embed::TextKind::Query)
        .map_err(|e| e.to_string())?;
    for (c, v) in cases.iter_mut().zip(vectors) {
        c.query_vector = Some(v);
    }
    println!(
        "{} queries embedded once, in one batch, {:.1} s (every pass below reuses the vectors)",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
    let policy = Policy::default();
    let notes = BTreeMap::new();
    let kb_s = kb.display().to_string();
    let vector = format!("index:{kb_s}");
    let bm25 = format!("index:{kb_s}?mode=bm25");
    let hybrid = format!("fusion:rrf?k={rrf_k}");
    let arms = vec![bm25.clone(), vector.clone()];
    let mut rows = Vec::new();
    for (label, uri) in [("vector", &vector), ("bm25", &bm25), ("hybrid", &hybrid)] {
        let opened = veredicto_app::retriever::open(uri, &arms, &Options::default())
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        let examined = examine(
            opened.retriever.as_ref(),
            Some(embedder.as_ref()),
            &Inputs {
                cases: &cases,
                corpus: None,
                policy: &policy,
                notes: &notes,
                as_of: None,
            },
            &Settings {
                depth: 100,
                latency_sample: 0,
                ..Settings::default()
            },
        )
        .map_err(|e| e.to_string())?;
        let seconds = start.elapsed().as_secs_f64();
        let in_arms: Option<f64> = opened
            .fusion
            .as_ref()
            .map(|h| h.stats.arms().iter().map(|a| a.total_seconds()).sum());
        let (ndcg, recall) = per_query(&cases, &examined.retrieval.run);
        rows.push((label, uri.clone(), ndcg, recall, seconds, in_arms));
    }
    println!(
        "\n{} queries, {}, analyser {}\n",
        cases.len(),
        name,
        analyzer.name()
    );
    println!(
        "| retriever | nDCG@10 | R@100 | hybrid − this (nDCG@10) | p (sign-flip) | pass time |"
    );
    println!("|---|---|---|---|---|---|");
    let hybrid_ndcg = rows[2].2.clone();
    for (label, uri, ndcg, recall, seconds, in_arms) in &rows {
        let (delta, p) = if *label == "hybrid" {
            ("—".to_owned(), "—".to_owned())
        } else {
            let diffs: Vec<f64> = hybrid_ndcg.iter().zip(ndcg).map(|(h, a)| h - a).collect();
            let t = sign_flip_test(&diffs, 20, 10_000, veredicto_core::compare::DEFAULT_SEED);
            (format!("{:+.4}", mean(&diffs)), format!("{:.4}", t.p_value))
        };
        let time = match in_arms {
            Some(a) => format!(
                "{seconds:.2} s (arms {a:.2} s, fusion and bookkeeping {:.3} s)",
                seconds - a
            ),
            None => format!("{seconds:.2} s"),
        };
        println!(
            "| {label} `{}` | {:.4} | {:.4} | {delta} | {p} | {time} |",
            uri.replace(&kb_s, "KB"),
            mean(ndcg),
            mean(recall)
        );
    }
    let arms_total = rows[0].4 + rows[1].4;
    println!(
        "\nfused exam {:.2} s against its arms examined alone {:.2} s + {:.2} s = {:.2} s (overhead {:+.2} s, {:+.1}%)",
        rows[2].4,
        rows[0].4,
        rows[1].4,
        arms_total,
        rows[2].4 - arms_total,
        (rows[2].4 - arms_total) / arms_total * 100.0
    );
    // A tune of the RRF constant, 5 folds: what `veredicto tune` reports.
    let opened: Vec<Box<dyn veredicto_retrieve::Retriever>> = arms
        .iter()
        .map(|a| veredicto_retrieve::open(a, &Options::default()).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let grid = [veredicto_core::tune::parse_grid("k=10,30,60,100")?];
    let start = Instant::now();
    let tuned = veredicto_app::tune::tune(veredicto_app::tune::TuneRequest {
        base: &format!("rrf?k={rrf_k}"),
        arms: &opened,
        embedder: Some(embedder.as_ref()),
        cases: &cases,
        policy: &policy,
        grid: &grid,
        split: veredicto_core::tune::Split::Folds(5),
        seed: veredicto_core::compare::DEFAULT_SEED,
        objective: veredicto_core::tune::Objective::Ndcg,
        pass: Settings {
            depth: 100,
            ..Settings::default()
        },
        events: Events::silent(),
    })
    .map_err(|e| e.to_string())?;
    println!(
        "\nveredicto tune --grid 'k=10,30,60,100' (5 folds, {:.1} s):\n```text\n{}```",
        start.elapsed().as_secs_f64(),
        veredicto_report::tune::human(&tuned).replace(&kb_s, "KB")
    );
    Ok(())
}
