//! Synthetic TREC qrels + run generator with a fixed seed.
//!
//! What it produces, per shape (see `docs/benchmarks.md` for the prose version):
//!
//! * **Corpus**: document numbers `0..8_841_823` (the MS MARCO passage corpus size). A document's
//!   id is a pure function of its number: 92% are plain MS MARCO-style numeric ids (`"4339068"`),
//!   4% MS MARCO v2-style strings (`"msmarco_passage_17_1234567"`), 4% MS MARCO document-style
//!   strings (`"D4339068"`). Ids are unique, so a run never repeats a docid within a query.
//! * **Qrels**: graded relevance 0-3. `msmarco`: 1-4 relevant documents per query, ~1.1 on
//!   average as in the MS MARCO dev qrels, plus judged non-relevant (grade 0) documents for a
//!   quarter of the queries. `wide`: ~3 relevant and ~2.5 judged non-relevant per query; 1% of
//!   queries have grade-0 judgments only. Qrels are written in shuffled query order.
//! * **Run**: exactly `depth` distinct documents per query, one line per document, ranks 1..depth
//!   in file order and scores non-increasing. A judged document is retrieved with a probability
//!   that grows with its grade, at a rank skewed towards the top (`depth * u^k`), which gives a
//!   BM25-like MRR on `msmarco`. Other slots hold random corpus documents that are not judged.
//!   Scores have four decimals; about 5% of adjacent pairs are tied, and tied documents are in
//!   random docid order, so an evaluator must apply trec_eval's tie-break (docid descending) to
//!   get trec_eval's numbers.

use crate::rng::{mix64, Draws, Rng};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The one seed behind all benchmark data ("VEREDICT" in ASCII).
pub const SEED: u64 = 0x5645_5245_4449_4354;
/// Bump when the generator's output changes: cached data with another version is regenerated.
pub const GENERATOR_VERSION: u32 = 1;
/// Documents in the MS MARCO passage corpus.
pub const CORPUS_SIZE: u64 = 8_841_823;
/// The run tag written in the last column of every run line.
pub const RUN_TAG: &str = "veredicto-bench";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// MS MARCO dev shape: 6,980 queries x 1,000 results, ~1.1 relevant per query.
    Msmarco,
    /// 100,000 queries x 100 results.
    Wide,
}

impl Shape {
    pub const ALL: [Shape; 2] = [Shape::Msmarco, Shape::Wide];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Msmarco => "msmarco",
            Shape::Wide => "wide",
        }
    }

    pub fn queries(self) -> usize {
        match self {
            Shape::Msmarco => 6_980,
            Shape::Wide => 100_000,
        }
    }

    pub fn depth(self) -> usize {
        match self {
            Shape::Msmarco => 1_000,
            Shape::Wide => 100,
        }
    }

    pub fn parse(s: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|shape| shape.name() == s)
    }

    /// Per-shape seed, derived from [`SEED`] so the shapes do not share a stream.
    fn seed(self) -> u64 {
        mix64(SEED ^ mix64(self as u64 + 1))
    }

    fn profile(self) -> Profile {
        match self {
            Shape::Msmarco => Profile {
                rel_count_cdf: &[0.92, 0.985, 0.997, 1.0],
                no_rel_share: 0.0,
                nonrel_share: 0.25,
                nonrel_max: 2,
                grade_cdf: [0.60, 0.88, 1.0],
                retrieve_p: [0.60, 0.82, 0.87, 0.92],
                rank_skew: 4.0,
            },
            Shape::Wide => Profile {
                rel_count_cdf: &[0.2, 0.4, 0.6, 0.8, 1.0],
                no_rel_share: 0.01,
                nonrel_share: 5.0 / 6.0,
                nonrel_max: 5,
                grade_cdf: [0.55, 0.85, 1.0],
                retrieve_p: [0.55, 0.70, 0.78, 0.85],
                rank_skew: 2.5,
            },
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The knobs of one shape's judgments and run.
struct Profile {
    /// CDF of the number of relevant documents (1, 2, ...) for a query that has some.
    rel_count_cdf: &'static [f64],
    /// Share of queries with no relevant document at all (grade-0 judgments only).
    no_rel_share: f64,
    /// Share of queries (with relevant documents) that also get grade-0 judgments.
    nonrel_share: f64,
    /// Those get `1..=nonrel_max` grade-0 judgments.
    nonrel_max: u64,
    /// CDF of the grade (1, 2, 3) of a relevant document.
    grade_cdf: [f64; 3],
    /// Probability that a judged document with grade 0..=3 is retrieved at all.
    retrieve_p: [f64; 4],
    /// Rank of a retrieved judged document: `floor(depth * u^rank_skew)` (then the next free slot).
    rank_skew: f64,
}

/// Writes the id of document number `n` (see the module docs for the mix of forms).
pub fn write_docid(out: &mut impl Write, n: u64) -> io::Result<()> {
    match mix64(n ^ 0xD0C5_1D5E_ED00_0000) % 100 {
        0..=3 => write!(out, "msmarco_passage_{:02}_{}", n % 70, n * 389),
        4..=7 => write!(out, "D{n}"),
        _ => write!(out, "{n}"),
    }
}

pub fn docid(n: u64) -> String {
    let mut v = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_docid(&mut v, n);
    String::from_utf8_lossy(&v).into_owned()
}

/// What the generator wrote, recorded in `meta.json` and shown in the docs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub queries: usize,
    pub qrels_lines: usize,
    pub relevant_judgments: usize,
    pub queries_without_relevant: usize,
    pub grade_counts: [usize; 4],
    pub run_lines: usize,
    pub relevant_retrieved: usize,
    pub tied_adjacent_pairs: usize,
    pub string_docids_in_run: usize,
}

impl Stats {
    pub fn relevant_per_query(&self) -> f64 {
        self.relevant_judgments as f64 / self.queries.max(1) as f64
    }
}

/// The identity of a data set: if any of this differs from a cached `meta.json`, regenerate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub generator_version: u32,
    pub seed: u64,
    pub shape: Shape,
    pub queries: usize,
    pub depth: usize,
    pub corpus_size: u64,
    pub qrels_bytes: u64,
    pub run_bytes: u64,
    pub stats: Stats,
}

impl Meta {
    fn same_recipe(&self, shape: Shape, queries: usize) -> bool {
        self.generator_version == GENERATOR_VERSION
            && self.seed == SEED
            && self.shape == shape
            && self.queries == queries
            && self.depth == shape.depth()
            && self.corpus_size == CORPUS_SIZE
    }
}

/// A generated (or reused) data set on disk.
#[derive(Debug, Clone)]
pub struct DataSet {
    pub shape: Shape,
    pub qrels: PathBuf,
    pub run: PathBuf,
    pub meta: Meta,
    /// False if it was found in the cache.
    pub generated: bool,
}

/// Returns the data set for `shape` under `root/<shape>/`, generating it unless a matching one
/// (same generator version, seed and shape; files of the recorded sizes) is already there.
pub fn ensure(root: &Path, shape: Shape) -> io::Result<DataSet> {
    ensure_sized(root, shape, shape.queries())
}

/// [`ensure`] with the first `queries` queries only (tests use small data sets).
pub fn ensure_sized(root: &Path, shape: Shape, queries: usize) -> io::Result<DataSet> {
    let dir = root.join(shape.name());
    let qrels = dir.join("qrels.txt");
    let run = dir.join("run.txt");
    let meta_path = dir.join("meta.json");
    if let Some(meta) = read_meta(&meta_path) {
        let sizes_ok =
            file_len(&qrels) == Some(meta.qrels_bytes) && file_len(&run) == Some(meta.run_bytes);
        if meta.same_recipe(shape, queries) && sizes_ok {
            return Ok(DataSet {
                shape,
                qrels,
                run,
                meta,
                generated: false,
            });
        }
    }
    fs::create_dir_all(&dir)?;
    // Remove the old meta first: an interrupted generation then never looks complete.
    let _ = fs::remove_file(&meta_path);
    let qrels_tmp = dir.join("qrels.txt.tmp");
    let run_tmp = dir.join("run.txt.tmp");
    let stats = {
        let mut q = BufWriter::with_capacity(1 << 20, File::create(&qrels_tmp)?);
        let mut r = BufWriter::with_capacity(1 << 20, File::create(&run_tmp)?);
        let stats = generate_sized(shape, queries, &mut q, &mut r)?;
        q.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        r.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        stats
    };
    fs::rename(&qrels_tmp, &qrels)?;
    fs::rename(&run_tmp, &run)?;
    let meta = Meta {
        generator_version: GENERATOR_VERSION,
        seed: SEED,
        shape,
        queries,
        depth: shape.depth(),
        corpus_size: CORPUS_SIZE,
        qrels_bytes: file_len(&qrels).unwrap_or(0),
        run_bytes: file_len(&run).unwrap_or(0),
        stats,
    };
    let json = serde_json::to_vec_pretty(&meta).map_err(io::Error::other)?;
    fs::write(&meta_path, json)?;
    Ok(DataSet {
        shape,
        qrels,
        run,
        meta,
        generated: true,
    })
}

fn read_meta(path: &Path) -> Option<Meta> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn file_len(path: &Path) -> Option<u64> {
    fs::metadata(path).ok().map(|m| m.len())
}

fn pick_cdf(rng: &mut Rng, cdf: &[f64]) -> usize {
    let u = rng.unit();
    cdf.iter().position(|&c| u < c).unwrap_or(cdf.len() - 1)
}

/// Query ids, in run order. `msmarco`: increasing numeric ids in MS MARCO dev's range; `wide`:
/// increasing numbers with every tenth-ish one a string (`topic_<n>`).
fn query_ids(shape: Shape, queries: usize, rng: &mut Rng) -> Vec<String> {
    let mut next: u64 = 2;
    (0..queries)
        .map(|_| {
            match shape {
                Shape::Msmarco => next += 1 + rng.below(300),
                Shape::Wide => next += 1 + rng.below(20),
            }
            match shape {
                Shape::Wide if mix64(next ^ 0x7091_C000) % 100 < 10 => format!("topic_{next}"),
                _ => next.to_string(),
            }
        })
        .collect()
}

/// Generates one shape's qrels and run into the two writers (deterministic for the shape).
pub fn generate(
    shape: Shape,
    qrels_out: &mut impl Write,
    run_out: &mut impl Write,
) -> io::Result<Stats> {
    generate_sized(shape, shape.queries(), qrels_out, run_out)
}

/// [`generate`] with `queries` queries instead of the shape's count.
pub fn generate_sized(
    shape: Shape,
    queries: usize,
    qrels_out: &mut impl Write,
    run_out: &mut impl Write,
) -> io::Result<Stats> {
    let mut rng = Rng::new(shape.seed());
    let profile = shape.profile();
    let depth = shape.depth();
    let qids = query_ids(shape, queries, &mut rng);
    let mut stats = Stats {
        queries: qids.len(),
        ..Stats::default()
    };

    // Judgments are kept (they are small) and written at the end in shuffled query order.
    let mut judgments: Vec<Vec<(u64, u8)>> = Vec::with_capacity(qids.len());
    let mut used: HashSet<u64> = HashSet::with_capacity(depth * 2);
    let mut slots: Vec<Option<u64>> = vec![None; depth];

    for qid in &qids {
        used.clear();
        slots.iter_mut().for_each(|s| *s = None);

        // --- judgments ---
        let no_rel = rng.chance(profile.no_rel_share);
        let n_rel = if no_rel {
            0
        } else {
            pick_cdf(&mut rng, profile.rel_count_cdf) + 1
        };
        let n_nonrel = if no_rel || rng.chance(profile.nonrel_share) {
            1 + rng.below(profile.nonrel_max) as usize
        } else {
            0
        };
        let mut judged: Vec<(u64, u8)> = Vec::with_capacity(n_rel + n_nonrel);
        for i in 0..n_rel + n_nonrel {
            let doc = loop {
                let d = rng.below(CORPUS_SIZE);
                if used.insert(d) {
                    break d;
                }
            };
            let grade = if i < n_rel {
                pick_cdf(&mut rng, &profile.grade_cdf) as u8 + 1
            } else {
                0
            };
            judged.push((doc, grade));
        }
        rng.shuffle(&mut judged);
        if n_rel == 0 {
            stats.queries_without_relevant += 1;
        }

        // --- where the judged documents land in the run ---
        for &(doc, grade) in &judged {
            if !rng.chance(profile.retrieve_p[grade as usize]) {
                continue;
            }
            let mut pos = ((depth as f64) * rng.unit().powf(profile.rank_skew)) as usize;
            pos = pos.min(depth - 1);
            while slots[pos].is_some() {
                pos = (pos + 1) % depth;
            }
            slots[pos] = Some(doc);
            if grade > 0 {
                stats.relevant_retrieved += 1;
            }
        }
        // --- the rest: unjudged corpus documents ---
        for slot in slots.iter_mut().filter(|s| s.is_none()) {
            let doc = loop {
                let d = rng.below(CORPUS_SIZE);
                if used.insert(d) {
                    break d;
                }
            };
            *slot = Some(doc);
        }

        // --- scores: 4 decimals, non-increasing, ~5% of adjacent pairs tied ---
        let mut ticks: u64 = 600_000 + rng.below(100_000);
        for (i, slot) in slots.iter().enumerate() {
            if i > 0 {
                if rng.chance(0.05) {
                    stats.tied_adjacent_pairs += 1;
                } else {
                    ticks -= 1 + rng.below(400);
                }
            }
            let doc = slot.unwrap_or_default();
            write!(run_out, "{qid} Q0 ")?;
            write_docid(run_out, doc)?;
            writeln!(
                run_out,
                " {} {}.{:04} {RUN_TAG}",
                i + 1,
                ticks / 10_000,
                ticks % 10_000
            )?;
            if mix64(doc ^ 0xD0C5_1D5E_ED00_0000) % 100 < 8 {
                stats.string_docids_in_run += 1;
            }
        }
        stats.run_lines += depth;

        for &(_, g) in &judged {
            stats.grade_counts[g as usize] += 1;
        }
        stats.relevant_judgments += n_rel;
        stats.qrels_lines += judged.len();
        judgments.push(judged);
    }

    let mut order: Vec<usize> = (0..qids.len()).collect();
    rng.shuffle(&mut order);
    for qi in order {
        for &(doc, grade) in &judgments[qi] {
            write!(qrels_out, "{} 0 ", qids[qi])?;
            write_docid(qrels_out, doc)?;
            writeln!(qrels_out, " {grade}")?;
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn docids_are_unique_and_mixed() {
        let mut seen = HashSet::new();
        let mut strings = 0;
        for n in 0..100_000u64 {
            let id = docid(n);
            if !id.bytes().all(|b| b.is_ascii_digit()) {
                strings += 1;
            }
            assert!(seen.insert(id), "duplicate id for {n}");
        }
        assert!((6_000..10_000).contains(&strings), "string ids: {strings}");
    }

    /// A tenth of the msmarco shape: enough for the shares to be close to the full set's.
    const TEST_QUERIES: usize = 698;

    fn generate_msmarco() -> (Stats, String, String) {
        let mut q = Vec::new();
        let mut r = Vec::new();
        let stats = generate_sized(Shape::Msmarco, TEST_QUERIES, &mut q, &mut r)
            .expect("in-memory generation");
        (
            stats,
            String::from_utf8(q).expect("utf8"),
            String::from_utf8(r).expect("utf8"),
        )
    }

    #[test]
    fn msmarco_shape_is_realistic_and_well_formed() {
        let (stats, qrels, run) = generate_msmarco();
        assert_eq!(stats.queries, TEST_QUERIES);
        assert_eq!(stats.run_lines, TEST_QUERIES * 1_000);
        let rel = stats.relevant_per_query();
        assert!((1.05..1.15).contains(&rel), "relevant per query {rel}");
        assert!(
            stats.grade_counts.iter().all(|&c| c > 0),
            "all grades present: {:?}",
            stats.grade_counts
        );
        let tie_share = stats.tied_adjacent_pairs as f64 / (stats.run_lines - stats.queries) as f64;
        assert!((0.04..0.06).contains(&tie_share), "tie share {tie_share}");

        // Qrels: 4 fields, grade 0-3, no (qid, docid) twice.
        let mut judged: HashMap<(&str, &str), u8> = HashMap::new();
        for line in qrels.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 4, "{line}");
            assert_eq!(f[1], "0");
            let g: u8 = f[3].parse().expect("grade");
            assert!(g <= 3);
            assert!(
                judged.insert((f[0], f[2]), g).is_none(),
                "duplicate judgment {line}"
            );
        }
        assert_eq!(judged.len(), stats.qrels_lines);

        // Run: 6 fields, 1000 distinct docs per query, ranks 1.., scores non-increasing.
        let mut current = "";
        let mut docs: HashSet<&str> = HashSet::new();
        let mut last_score = f64::INFINITY;
        let mut expected_rank = 1;
        let mut rel_retrieved = 0;
        for line in run.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 6, "{line}");
            if f[0] != current {
                current = f[0];
                docs.clear();
                last_score = f64::INFINITY;
                expected_rank = 1;
            }
            assert!(docs.insert(f[2]), "duplicate doc in run: {line}");
            assert_eq!(f[3].parse::<usize>().expect("rank"), expected_rank);
            expected_rank += 1;
            let score: f64 = f[4].parse().expect("score");
            assert!(score <= last_score && score > 0.0);
            last_score = score;
            if judged.get(&(f[0], f[2])).is_some_and(|&g| g > 0) {
                rel_retrieved += 1;
            }
        }
        assert_eq!(rel_retrieved, stats.relevant_retrieved);
        let recall = rel_retrieved as f64 / stats.relevant_judgments as f64;
        assert!((0.75..0.92).contains(&recall), "recall@1000 {recall}");
    }

    #[test]
    fn generation_is_deterministic() {
        let a = generate_msmarco();
        let b = generate_msmarco();
        assert_eq!(a.0, b.0);
        assert!(a.1 == b.1 && a.2 == b.2);
    }

    #[test]
    fn ensure_reuses_a_matching_cache_and_regenerates_a_stale_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = ensure_sized(dir.path(), Shape::Wide, 50).expect("generate");
        assert!(first.generated);
        assert_eq!(first.meta.stats.run_lines, 5_000);
        let second = ensure_sized(dir.path(), Shape::Wide, 50).expect("reuse");
        assert!(!second.generated);
        assert_eq!(first.meta, second.meta);
        // A truncated run file no longer matches the recorded size.
        let f = fs::OpenOptions::new()
            .write(true)
            .open(&second.run)
            .expect("open");
        f.set_len(10).expect("truncate");
        let third = ensure_sized(dir.path(), Shape::Wide, 50).expect("regenerate");
        assert!(third.generated);
        assert_eq!(file_len(&third.run), Some(first.meta.run_bytes));
    }
}
