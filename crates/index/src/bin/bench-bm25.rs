//! `bench-bm25`: the own index's lexical (BM25) arm on a BEIR data set, against tantivy
//! used the way its own examples use it, on the same texts.
//!
//! ```sh
//! cargo run --release -p veredicto-index --bin bench-bm25 -- ../shared/datasets/scifact/beir
//!     [--analyzer english|spanish] [--split test] [--rounds 3] [--save-run FILE]
//! ```
//!
//! Reads `corpus.jsonl` (BEIR: each chunk's text is `title + " " + text`), `queries.jsonl`
//! and `qrels/SPLIT.tsv`, then, round by round and alternating:
//!
//! - **veredicto**: builds an index whose lexical arm holds every chunk (the vectors are a
//!   constant 1-d placeholder; the arm's build is timed as the difference between an ingest
//!   with and one without the arm), then searches every query in one batch, top 100 with the
//!   exact rank of each relevant chunk (what the exam asks), and every query alone (latency);
//! - **tantivy**: a plain tantivy index of the same texts (`en_stem`: lower-case and
//!   Snowball English stemming, no stop words, no accent folding), one writer thread with the
//!   same memory budget, and `TopDocs` top 100 of an OR of the query's terms (block-max WAND),
//!   query by query.
//!
//! Prints nDCG@10 and R@100 of both (veredicto's measures), the build and query times
//! (medians over the rounds) and the load average.

// A benchmark prints its figures.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Schema, TextFieldIndexing, TextOptions, STORED, STRING};
use tantivy::{IndexWriter, TantivyDocument, Term};
use veredicto_core::case::Case;
use veredicto_core::measure::Measure;
use veredicto_core::trec::ResRels;
use veredicto_index::{
    Analyzer, BatchInfo, ChunkInput, ChunkMeta, EmbeddedField, Index, IngestSettings, LexicalQuery,
    ModelFingerprint, Plan,
};

struct Args {
    dir: PathBuf,
    analyzer: Analyzer,
    split: String,
    rounds: usize,
    save_run: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut dir = None;
    let mut args = Args {
        dir: PathBuf::new(),
        analyzer: Analyzer::English,
        split: "test".into(),
        rounds: 3,
        save_run: None,
    };
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--analyzer" => args.analyzer = value("--analyzer")?.parse()?,
            "--split" => args.split = value("--split")?,
            "--rounds" => {
                args.rounds = value("--rounds")?
                    .parse()
                    .map_err(|e| format!("--rounds: {e}"))?
            }
            "--save-run" => args.save_run = Some(PathBuf::from(value("--save-run")?)),
            s if !s.starts_with("--") && dir.is_none() => dir = Some(PathBuf::from(s)),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    args.dir = dir.ok_or("usage: bench-bm25 BEIR_DIR [--analyzer A] [--split S] [--rounds N]")?;
    Ok(args)
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn percentile(xs: &[f64], p: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[i.min(v.len() - 1)]
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into())
}

/// Mean nDCG@10 and R@100 of ranked ID lists against the cases.
fn quality(cases: &[Case], ranked: &BTreeMap<String, Vec<String>>) -> (f64, f64) {
    let (ndcg, recall) = (Measure::ndcg_at(10), Measure::recall_at(100));
    let (mut n, mut r) = (0.0, 0.0);
    for c in cases {
        let expected: BTreeSet<&str> = c.expected.iter().map(String::as_str).collect();
        let list = ranked.get(&c.id).map(Vec::as_slice).unwrap_or(&[]);
        let rels: Vec<bool> = list
            .iter()
            .map(|id| expected.contains(id.as_str()))
            .collect();
        let judged = ResRels::binary(&rels, expected.len());
        n += ndcg.compute(&judged);
        r += recall.compute(&judged);
    }
    (n / cases.len() as f64, r / cases.len() as f64)
}

fn fingerprint() -> ModelFingerprint {
    let value = serde_json::json!({"name": "placeholder", "dim": 1});
    let hash = format!("sha256:{}", "ab".repeat(32));
    ModelFingerprint { value, hash }
}

/// An index of `chunks` at `dir` (replaced), with or without the lexical arm; its time.
fn build_own(dir: &Path, chunks: &[ChunkInput], analyzer: Option<Analyzer>) -> (Index, f64) {
    let _ = std::fs::remove_dir_all(dir);
    let settings = IngestSettings {
        model: fingerprint(),
        dimension: 1,
        field: EmbeddedField::TitleText,
        full_rebuild: false,
    };
    let t = Instant::now();
    let vectors = vec![vec![1.0f32]; chunks.len()];
    let mut plan = Plan::with_vectors(None, chunks.to_vec(), vectors, settings).expect("plan");
    plan = plan.with_lexical(analyzer);
    let none: Vec<Vec<f32>> = Vec::new();
    let batch = BatchInfo {
        name: "bench".into(),
        time: "2025-01-01T00:00:00Z".into(),
        corpus_hash: format!("sha256:{}", "cd".repeat(32)),
    };
    let index = plan.apply(&none, &batch, dir).expect("apply");
    (index, t.elapsed().as_secs_f64())
}

struct Plain {
    index: tantivy::Index,
    id: tantivy::schema::Field,
    text: tantivy::schema::Field,
}

/// tantivy on its own: `en_stem`, one writer thread, 64 MB; its build time.
fn build_plain(dir: &Path, chunks: &[ChunkInput]) -> (Plain, f64) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut schema = Schema::builder();
    let id = schema.add_text_field("id", STRING | STORED);
    let text = schema.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("en_stem")
                .set_index_option(IndexRecordOption::WithFreqs),
        ),
    );
    let t = Instant::now();
    let index = tantivy::Index::create_in_dir(dir, schema.build()).expect("create");
    {
        let mut w: IndexWriter<TantivyDocument> =
            index.writer_with_num_threads(1, 64 << 20).expect("writer");
        for c in chunks {
            let mut doc = TantivyDocument::default();
            doc.add_text(id, &c.id);
            doc.add_text(text, &c.text);
            w.add_document(doc).expect("add");
        }
        w.commit().expect("commit");
        w.wait_merging_threads().expect("wait");
    }
    (Plain { index, id, text }, t.elapsed().as_secs_f64())
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench-bm25: {e}");
            std::process::exit(2);
        }
    };
    let lines = veredicto_formats::corpus::read_corpus_lines(&args.dir.join("corpus.jsonl"))
        .expect("corpus");
    let chunks: Vec<ChunkInput> = lines
        .iter()
        .map(|l| ChunkInput {
            id: l.chunk.id.clone(),
            text: l.chunk.text.clone().unwrap_or_default(),
            meta: ChunkMeta::default(),
            record: None,
        })
        .collect();
    let cases = veredicto_formats::golden::read_beir(&args.dir, &args.split).expect("golden");
    let bytes: usize = chunks.iter().map(|c| c.text.len()).sum();
    println!(
        "{}: {} chunks ({:.1} MB of text), {} queries ({}), analyser {}",
        args.dir.display(),
        chunks.len(),
        bytes as f64 / 1e6,
        cases.len(),
        args.split,
        args.analyzer
    );
    let work = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("bench-data")
        .join("bm25");
    std::fs::create_dir_all(&work).expect("work folder");

    let mut t_without = Vec::new();
    let mut t_with = Vec::new();
    let mut t_plain = Vec::new();
    let mut t_batch = Vec::new();
    let mut t_single: Vec<f64> = Vec::new();
    let mut t_plain_q: Vec<f64> = Vec::new();
    let mut own_ranked = BTreeMap::new();
    let mut plain_ranked = BTreeMap::new();
    let mut arm_bytes = 0u64;
    for round in 0..args.rounds {
        let (_, a) = build_own(&work.join("without"), &chunks, None);
        let (index, b) = build_own(&work.join("with"), &chunks, Some(args.analyzer));
        let (plain, c) = build_plain(&work.join("tantivy"), &chunks);
        t_without.push(a);
        t_with.push(b);
        t_plain.push(c);
        arm_bytes = index
            .manifest()
            .files
            .iter()
            .filter(|(k, _)| k.starts_with("lexical/"))
            .map(|(_, f)| f.bytes)
            .sum();

        // veredicto: one batch, as the exam sends it (the first call checks the arm).
        let reopened = Index::open(index.dir()).expect("open");
        let queries: Vec<LexicalQuery<'_>> = cases
            .iter()
            .map(|c| LexicalQuery {
                text: &c.query,
                k: 100,
                filter: None,
                rank_ids: &c.expected,
            })
            .collect();
        let t = Instant::now();
        let results = reopened.search_lexical(&queries).expect("search");
        t_batch.push(t.elapsed().as_secs_f64());
        for q in &queries {
            let t = Instant::now();
            reopened
                .search_lexical(std::slice::from_ref(q))
                .expect("search");
            t_single.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        if round == 0 {
            for (c, r) in cases.iter().zip(&results) {
                let ids: Vec<String> = r
                    .hits
                    .iter()
                    .map(|h| reopened.chunk(h.row).id().to_string())
                    .collect();
                own_ranked.insert(c.id.clone(), ids);
            }
            if let Some(path) = &args.save_run {
                let mut out = String::new();
                for (c, r) in cases.iter().zip(&results) {
                    for (i, h) in r.hits.iter().enumerate() {
                        out.push_str(&format!(
                            "{} Q0 {} {} {} veredicto-bm25\n",
                            c.id,
                            reopened.chunk(h.row).id(),
                            i + 1,
                            h.score
                        ));
                    }
                }
                std::fs::write(path, out).expect("save run");
            }
        }

        // tantivy: TopDocs per query.
        let reader = plain.index.reader().expect("reader");
        let searcher = reader.searcher();
        let mut analyzer = plain
            .index
            .tokenizer_for_field(plain.text)
            .expect("tokenizer");
        for c in &cases {
            let t = Instant::now();
            let mut stream = analyzer.token_stream(&c.query);
            let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
            while let Some(tok) = stream.next() {
                clauses.push((
                    Occur::Should,
                    Box::new(TermQuery::new(
                        Term::from_field_text(plain.text, &tok.text),
                        IndexRecordOption::WithFreqs,
                    )),
                ));
            }
            let query = BooleanQuery::new(clauses);
            let top = searcher
                .search(&query, &TopDocs::with_limit(100).order_by_score())
                .expect("search");
            t_plain_q.push(t.elapsed().as_secs_f64() * 1000.0);
            if round == 0 {
                let ids: Vec<String> = top
                    .iter()
                    .map(|(_, addr)| {
                        let doc: TantivyDocument = searcher.doc(*addr).expect("doc");
                        doc.get_first(plain.id)
                            .and_then(|v| tantivy::schema::Value::as_str(&v).map(str::to_owned))
                            .unwrap_or_default()
                    })
                    .collect();
                plain_ranked.insert(c.id.clone(), ids);
            }
        }
        eprintln!("round {} done (load {})", round + 1, load());
    }
    let (own_ndcg, own_recall) = quality(&cases, &own_ranked);
    let (plain_ndcg, plain_recall) = quality(&cases, &plain_ranked);
    let arm = median(&t_with) - median(&t_without);
    println!("quality            nDCG@10   R@100");
    println!("veredicto BM25     {own_ndcg:.4}    {own_recall:.4}");
    println!("tantivy en_stem    {plain_ndcg:.4}    {plain_recall:.4}");
    println!(
        "build (median of {}): veredicto index with arm {:.3} s, without {:.3} s, arm {:.3} s ({:.1} MB on disk); tantivy alone {:.3} s",
        args.rounds,
        median(&t_with),
        median(&t_without),
        arm,
        arm_bytes as f64 / 1e6,
        median(&t_plain)
    );
    println!(
        "queries: veredicto batch of {} (top 100 + ranks, first search includes the arm's check) {:.1} ms median = {:.3} ms/query; one at a time p50 {:.3} ms, p95 {:.3} ms; tantivy TopDocs(100) one at a time p50 {:.3} ms, p95 {:.3} ms",
        cases.len(),
        median(&t_batch) * 1000.0,
        median(&t_batch) * 1000.0 / cases.len() as f64,
        percentile(&t_single, 50.0),
        percentile(&t_single, 95.0),
        percentile(&t_plain_q, 50.0),
        percentile(&t_plain_q, 95.0),
    );
    println!(
        "threads: rayon {}; load average {}",
        rayon::current_num_threads(),
        load()
    );
}
