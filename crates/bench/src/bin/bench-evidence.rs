//! `bench-evidence`: what evidence spans cost — locating the golden set's quotes in their
//! documents, indexing every chunk's span per document, placing every item in the chunking
//! (`golden check`), and judging each case's items against its top-10 chunks (the exam) — on
//! synthetic documents cut into overlapping character windows, at several corpus sizes, so
//! that the cost per chunk and per case shows whether it grows linearly.
//!
//! ```sh
//! cargo run --release -p veredicto-bench --bin bench-evidence -- --chunks 52000 --chunks 1000000
//! ```
//!
//! Documents of `--doc-chars` characters (random words, so that a quote occurs once), cut
//! into windows of `--chunk-chars` with `--overlap`; `--cases` cases, each one quote of 60 to
//! 240 characters of a random document. Prints one line per size: chunks, documents,
//! characters, and the CPU time of each step. Single-threaded.
// A benchmark program, not part of the veredicto command line: it prints its own figures
// (and exits with its own codes).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::Parser;
use std::collections::HashMap;
use std::time::Duration;
use veredicto_core::case::Case;
use veredicto_core::evidence::text::Locator;
use veredicto_core::evidence::{check, judge, EvidenceItem, JudgeInput, SpanIndex, SpanRef};
use veredicto_core::run::Retrieved;

#[derive(Parser)]
struct Args {
    /// Corpus sizes, in chunks (repeat the flag).
    #[arg(long = "chunks")]
    chunks: Vec<usize>,
    /// Characters per document (SciFact's abstracts: about 1,500).
    #[arg(long, default_value_t = 1500)]
    doc_chars: usize,
    /// Characters per chunk.
    #[arg(long, default_value_t = 150)]
    chunk_chars: usize,
    /// Characters shared by consecutive chunks.
    #[arg(long, default_value_t = 30)]
    overlap: usize,
    /// Cases (SciFact's dev claims with rationales: about 190).
    #[arg(long, default_value_t = 300)]
    cases: usize,
}

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

/// Seconds of CPU `f` takes, and its value.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = cpu();
    let v = f();
    ((cpu() - t).as_secs_f64(), v)
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = veredicto_bench::rng::mix64(self.0);
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A document of about `chars` characters: random words of 3 to 8 lowercase letters.
fn document(rng: &mut Rng, chars: usize) -> String {
    let mut s = String::with_capacity(chars + 10);
    while s.len() < chars {
        if !s.is_empty() {
            s.push(' ');
        }
        let len = 3 + rng.below(6);
        for _ in 0..len {
            s.push((b'a' + rng.below(26) as u8) as char);
        }
    }
    s.truncate(chars);
    s
}

fn main() {
    let mut args = Args::parse();
    if args.chunks.is_empty() {
        args.chunks = vec![52_000, 1_000_000];
    }
    let stride = args.chunk_chars - args.overlap;
    let per_doc = (args.doc_chars - args.overlap).div_ceil(stride);
    println!(
        "documents of {} chars, windows of {} chars overlapping {} ({per_doc} per document), {} cases; load {}",
        args.doc_chars,
        args.chunk_chars,
        args.overlap,
        args.cases,
        load()
    );
    println!(
        "{:>9} {:>7} {:>11} | {:>9} {:>10} {:>10} {:>10} | {:>9} {:>9} {:>9}",
        "chunks",
        "docs",
        "chars",
        "locate s",
        "index s",
        "place s",
        "judge s",
        "index ns/chunk",
        "place us/case",
        "judge us/case"
    );
    for &n in &args.chunks {
        let docs = n.div_ceil(per_doc);
        let mut rng = Rng(0x5eed ^ n as u64);
        let texts: Vec<String> = (0..docs)
            .map(|_| document(&mut rng, args.doc_chars))
            .collect();
        let doc_ids: Vec<String> = (0..docs).map(|d| format!("doc{d:07}")).collect();
        // Chunks: (doc, start, end, id), every document cut the same way.
        let mut chunks: Vec<(usize, usize, usize, String)> = Vec::with_capacity(docs * per_doc);
        for (d, doc_id) in doc_ids.iter().enumerate() {
            let mut start = 0;
            loop {
                let end = (start + args.chunk_chars).min(args.doc_chars);
                chunks.push((d, start, end, format!("{doc_id}:{start}-{end}")));
                if end == args.doc_chars {
                    break;
                }
                start += stride;
            }
        }
        // Quotes: a span of a random document, from a word's start to a word's end.
        let quotes: Vec<(usize, String)> = (0..args.cases)
            .map(|_| {
                let d = rng.below(docs);
                let t = &texts[d];
                let len = 60 + rng.below(181);
                let mut a = rng.below(args.doc_chars - len);
                while a > 0 && t.as_bytes()[a - 1] != b' ' {
                    a -= 1;
                }
                let mut b = a + len;
                while b < t.len() && t.as_bytes()[b] != b' ' {
                    b += 1;
                }
                (d, t[a..b].to_owned())
            })
            .collect();

        // 1. Locating the quotes: one locator per document a quote names, built once.
        let (t_locate, cases) = timed(|| {
            let mut locators: HashMap<usize, Locator> = HashMap::new();
            quotes
                .iter()
                .enumerate()
                .map(|(i, (d, q))| {
                    let loc = locators
                        .entry(*d)
                        .or_insert_with(|| Locator::new(&texts[*d]));
                    let (start, end) = loc
                        .locate(q, None)
                        .expect("a quote of random words occurs once");
                    Case {
                        id: format!("q{i}"),
                        query: String::new(),
                        expected: Vec::new(),
                        grades: Default::default(),
                        evidence: vec![EvidenceItem {
                            doc_id: doc_ids[*d].clone(),
                            start,
                            end,
                            grade: 1,
                            quote: Some(q.clone()),
                        }],
                        top_k: Some(10),
                        domain: None,
                        tags: Vec::new(),
                        gold: false,
                        query_vector: None,
                        filters: None,
                    }
                })
                .collect::<Vec<Case>>()
        });
        // 2. The interval structure over every chunk's span.
        let (t_index, index) = timed(|| {
            SpanIndex::new(
                chunks
                    .iter()
                    .map(|(d, s, e, id)| (doc_ids[*d].as_str(), *s, *e, id.as_str())),
            )
        });
        // 3. `golden check`: every item placed in the chunking.
        let (t_place, places) = timed(|| check::place_items(&cases, &index, 1.0));
        assert!(places
            .iter()
            .all(|p| p.placement != check::Placement::Dropped));
        // 4. The exam: each case's items against a ranking of 10 chunks, those holding the
        // item first, then random ones.
        let span_of_id: HashMap<&str, (usize, usize, usize)> = chunks
            .iter()
            .map(|(d, s, e, id)| (id.as_str(), (*d, *s, *e)))
            .collect();
        let rankings: Vec<Vec<Retrieved>> = places
            .iter()
            .map(|p| {
                let mut r: Vec<Retrieved> = p
                    .chunks
                    .iter()
                    .map(|h| Retrieved {
                        id: h.id.clone(),
                        score: None,
                    })
                    .collect();
                while r.len() < 10 {
                    r.push(Retrieved {
                        id: chunks[rng.below(chunks.len())].3.clone(),
                        score: None,
                    });
                }
                r.truncate(10);
                r
            })
            .collect();
        let span_of = |id: &str| -> Option<SpanRef<'_>> {
            span_of_id.get(id).map(|&(d, start, end)| SpanRef {
                doc_id: doc_ids[d].as_str(),
                start,
                end,
            })
        };
        let (t_judge, retrieved) = timed(|| {
            cases
                .iter()
                .zip(&rankings)
                .map(|(c, r)| {
                    judge(&JudgeInput {
                        items: &c.evidence,
                        results: r,
                        known: None,
                        span_of: &span_of,
                        index: Some(&index),
                        k: 10,
                        coverage: 1.0,
                        relevance_level: 1,
                    })
                    .retrieved
                })
                .sum::<usize>()
        });
        assert_eq!(
            retrieved,
            cases.len(),
            "every item is covered by its holders"
        );
        let chars: usize = texts.iter().map(String::len).sum();
        println!(
            "{:>9} {:>7} {:>11} | {:>9.4} {:>10.4} {:>10.4} {:>10.4} | {:>14.1} {:>13.1} {:>13.1}",
            chunks.len(),
            docs,
            chars,
            t_locate,
            t_index,
            t_place,
            t_judge,
            t_index * 1e9 / chunks.len() as f64,
            t_place * 1e6 / cases.len() as f64,
            t_judge * 1e6 / cases.len() as f64,
        );
    }
}
