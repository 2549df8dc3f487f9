//! Exact search: every score is computed, top-k and ranks are exact, ties are broken by row
//! (= chunk ID ascending, since rows are stored in ID order).
//!
//! One pass per batch: the queries are packed into panels, the documents are scanned in
//! blocks (in parallel over fixed row ranges), and each tile of scores is tested against a
//! per-query gate in registers. A score reaches the (scalar) slow path only when it could
//! enter that query's top-k or outranks one of the chunks whose rank was asked for. Partial
//! results of the row ranges are merged under the total order (score descending, row
//! ascending), so the result does not depend on the number of threads.

use crate::error::{IndexError, Result};
use crate::filter::Filter;
use crate::index::Index;
use crate::kernel::{self, Kernel, PackedQueries, MR, WMAX};
use rayon::prelude::*;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One result of a search: a row of the index and its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Row of the chunk in the index ([`Index::chunk`] gives its ID and metadata).
    pub row: usize,
    /// Cosine similarity of the query and the chunk (inner product of normalised vectors).
    pub score: f32,
}

/// Where a chunk ranks for a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rank {
    /// 1-based rank among the chunks the filter lets through, with its score.
    Ranked {
        /// 1 for the best chunk.
        rank: usize,
        /// The chunk's score.
        score: f32,
    },
    /// The chunk is in the index but the query's filter excludes it.
    FilteredOut {
        /// The chunk's score (it would have had).
        score: f32,
    },
    /// No chunk with this ID is in the index.
    NotInIndex,
    /// Lexical search only: the chunk shares no term with the query, so it has no score
    /// and no rank.
    Unmatched,
}

impl Rank {
    /// The rank, when the chunk is ranked.
    pub fn rank(&self) -> Option<usize> {
        match self {
            Rank::Ranked { rank, .. } => Some(*rank),
            _ => None,
        }
    }

    /// The score, when the chunk is in the index.
    pub fn score(&self) -> Option<f32> {
        match self {
            Rank::Ranked { score, .. } | Rank::FilteredOut { score } => Some(*score),
            Rank::NotInIndex | Rank::Unmatched => None,
        }
    }
}

/// One query of a batch.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The query vector (any length-`dimension` finite, non-zero vector; it is L2-normalised).
    pub vector: &'a [f32],
    /// How many hits to return (fewer when fewer chunks pass the filter).
    pub k: usize,
    /// Only chunks matching this filter are ranked.
    pub filter: Option<&'a Filter>,
    /// Chunk IDs whose exact rank and score are wanted, wherever they rank.
    pub rank_ids: &'a [String],
}

impl<'a> Query<'a> {
    /// A plain top-`k` query.
    pub fn new(vector: &'a [f32], k: usize) -> Query<'a> {
        Query {
            vector,
            k,
            filter: None,
            rank_ids: &[],
        }
    }
}

/// The answer to one [`Query`].
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// The top-k, best first (score descending, then row ascending).
    pub hits: Vec<Hit>,
    /// One entry per `rank_ids`, in the same order.
    pub ranks: Vec<Rank>,
}

/// A candidate; ordered so that the *worse* one is greater (the heap's top is the worst).
#[derive(Debug, Clone, Copy)]
struct Cand {
    score: f32,
    row: u32,
}

/// `a` ranks before `b`: higher score, or equal score and lower row.
#[inline]
fn better(a_score: f32, a_row: u32, b_score: f32, b_row: u32) -> bool {
    a_score > b_score || (a_score == b_score && a_row < b_row)
}

impl PartialEq for Cand {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Cand {
    fn cmp(&self, other: &Self) -> Ordering {
        // Scores are never NaN (vectors are validated and normalised).
        other
            .score
            .partial_cmp(&self.score)
            .unwrap_or(Ordering::Equal)
            .then(self.row.cmp(&other.row))
    }
}

/// The best `k` candidates seen so far.
#[derive(Debug, Clone)]
struct TopK {
    k: usize,
    heap: BinaryHeap<Cand>,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1024) + 1),
        }
    }

    /// Lowest score that may still enter.
    fn gate(&self) -> f32 {
        if self.k == 0 {
            f32::INFINITY
        } else if self.heap.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.heap.peek().map_or(f32::NEG_INFINITY, |c| c.score)
        }
    }

    /// Offers a candidate; true when it entered.
    fn offer(&mut self, c: Cand) -> bool {
        if self.heap.len() < self.k {
            self.heap.push(c);
            return true;
        }
        match self.heap.peek() {
            Some(w) if better(c.score, c.row, w.score, w.row) => {
                self.heap.pop();
                self.heap.push(c);
                true
            }
            _ => false,
        }
    }

    fn merge(&mut self, other: TopK) {
        for c in other.heap {
            self.offer(c);
        }
    }

    fn into_hits(self) -> Vec<Hit> {
        // Ascending under "worse is greater" = best first.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|c| Hit {
                row: c.row as usize,
                score: c.score,
            })
            .collect()
    }
}

/// A chunk whose rank is counted: its row and score.
#[derive(Debug, Clone, Copy)]
struct Target {
    row: u32,
    score: f32,
}

/// Targets of unfiltered queries, counted in SIMD for a whole tile at once: slot `s`, lane
/// `l` is a target of query `panel.first + l` (score `+inf` where there is none).
#[derive(Debug, Clone, Default)]
struct PanelTargets {
    scores: Vec<[f32; WMAX]>,
    rows: Vec<[u32; WMAX]>,
}

/// What a scan needs about each query (indexes are query positions in the batch).
struct Plan<'a> {
    /// Filter bitmap per query (`None`: no filter).
    filter: Vec<Option<&'a [u64]>>,
    /// Every target.
    targets: Vec<Target>,
    /// Where each target is counted: `Some((panel, slot, lane))` in SIMD, `None` on the
    /// slow path (targets of filtered queries, whose counts must skip filtered-out rows).
    counted_in: Vec<Option<(usize, usize, usize)>>,
    /// Slow-path targets of query `q`: `slow[slow_range[q].0 .. slow_range[q].1]`.
    slow_range: Vec<(usize, usize)>,
    slow: Vec<usize>,
    /// Lowest slow-path target score per query slot (`+inf` when none).
    target_gate: Vec<f32>,
    panel_targets: Vec<PanelTargets>,
    k: Vec<usize>,
    padded: usize,
}

/// Per-thread state of a scan.
struct State {
    top: Vec<TopK>,
    /// Per target (slow path): rows that pass the filter and rank before it.
    counts: Vec<u64>,
    /// Per panel, slot and lane (SIMD path): rows that rank before the target.
    panel_counts: Vec<Vec<[u32; WMAX]>>,
    /// Per query slot (padded): scores `>=` this reach the slow path.
    gates: Vec<f32>,
}

impl State {
    fn new(plan: &Plan<'_>) -> State {
        let top: Vec<TopK> = plan.k.iter().map(|&k| TopK::new(k)).collect();
        let mut gates = vec![f32::INFINITY; plan.padded];
        for (q, t) in top.iter().enumerate() {
            gates[q] = t.gate().min(plan.target_gate[q]);
        }
        State {
            top,
            counts: vec![0; plan.targets.len()],
            panel_counts: plan
                .panel_targets
                .iter()
                .map(|p| vec![[0; WMAX]; p.scores.len()])
                .collect(),
            gates,
        }
    }

    #[inline(never)]
    fn offer(&mut self, plan: &Plan<'_>, q: usize, row: u32, score: f32) {
        if !allows(plan.filter[q], row as usize) {
            return;
        }
        let (t0, t1) = plan.slow_range[q];
        for &t in &plan.slow[t0..t1] {
            let target = plan.targets[t];
            if better(score, row, target.score, target.row) {
                self.counts[t] += 1;
            }
        }
        if self.top[q].offer(Cand { score, row }) {
            self.gates[q] = self.top[q].gate().min(plan.target_gate[q]);
        }
    }

    fn merge(mut self, other: State, plan: &Plan<'_>) -> State {
        for (a, b) in self.top.iter_mut().zip(other.top) {
            a.merge(b);
        }
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
        for (pa, pb) in self.panel_counts.iter_mut().zip(other.panel_counts) {
            for (a, b) in pa.iter_mut().zip(pb) {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
            }
        }
        for (q, t) in self.top.iter().enumerate() {
            self.gates[q] = t.gate().min(plan.target_gate[q]);
        }
        self
    }

    /// Rows ranked before target `t`.
    fn count(&self, plan: &Plan<'_>, t: usize) -> u64 {
        match plan.counted_in[t] {
            Some((p, s, l)) => u64::from(self.panel_counts[p][s][l]),
            None => self.counts[t],
        }
    }
}

/// Rows per parallel work item (fixed, so the split does not depend on the thread count;
/// results would not either, since merging is exact).
const ROWS_PER_TASK: usize = 4 * 1024;
/// Rows per cache block inside a task (a multiple of `MR`).
const BLOCK_ROWS: usize = MR * 32;

/// Scans rows `start..end`, offering to `state` every score that passes its gate and
/// counting the rows that rank before each SIMD-counted target.
fn scan(
    kernel: Kernel,
    vectors: &[f32],
    dim: usize,
    queries: &PackedQueries,
    plan: &Plan<'_>,
    (start, end): (usize, usize),
    state: &mut State,
) {
    let zero = vec![0.0f32; dim];
    let mut out = [0.0f32; MR * WMAX];
    let mut block = start;
    while block < end {
        let block_end = (block + BLOCK_ROWS).min(end);
        for (pi, panel) in queries.panels.iter().enumerate() {
            let targets = &plan.panel_targets[pi];
            let counting = !targets.scores.is_empty();
            let mut r = block;
            while r < block_end {
                let valid = (block_end - r).min(MR);
                let rows: [*const f32; MR] = std::array::from_fn(|t| {
                    if t < valid {
                        vectors[(r + t) * dim..(r + t + 1) * dim].as_ptr()
                    } else {
                        zero.as_ptr()
                    }
                });
                let gates = &state.gates[panel.first..panel.first + panel.width];
                // SAFETY: every row pointer is valid for `dim` floats (a row of `vectors` or
                // `zero`), and `gates` holds `panel.width` values.
                let mut mask =
                    unsafe { kernel.tile(&rows, queries, panel, gates, counting, &mut out) };
                if counting {
                    let counts = &mut state.panel_counts[pi];
                    if kernel.count_above(&out, valid, &targets.scores, counts) {
                        // Equal scores rank before the target when their row is lower.
                        for (s, c) in counts.iter_mut().enumerate() {
                            for t in 0..valid {
                                for l in 0..WMAX {
                                    if out[t * WMAX + l] == targets.scores[s][l]
                                        && ((r + t) as u32) < targets.rows[s][l]
                                    {
                                        c[l] += 1;
                                    }
                                }
                            }
                        }
                    }
                }
                while mask != 0 {
                    let bit = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    let (t, l) = (bit / WMAX, bit % WMAX);
                    let q = panel.first + l;
                    if t < valid && q < plan.k.len() {
                        // Rows fit in u32: checked when the index is opened.
                        state.offer(plan, q, (r + t) as u32, out[bit]);
                    }
                }
                r += MR;
            }
        }
        block = block_end;
    }
}

impl Index {
    /// Name of the score kernel this machine uses (`avx2+fma` or `portable`); both give the
    /// same bits.
    pub fn kernel_name() -> &'static str {
        Kernel::detect().name()
    }

    /// The exact top-`k` for one query vector.
    pub fn search(&self, query: &[f32], k: usize, filter: Option<&Filter>) -> Result<Vec<Hit>> {
        let q = Query {
            vector: query,
            k,
            filter,
            rank_ids: &[],
        };
        Ok(self
            .search_batch(&[q])?
            .pop()
            .map(|r| r.hits)
            .unwrap_or_default())
    }

    /// The exact top-`k` for each of `queries` (one pass over the vectors for the batch).
    pub fn search_many<V: AsRef<[f32]>>(
        &self,
        queries: &[V],
        k: usize,
        filter: Option<&Filter>,
    ) -> Result<Vec<Vec<Hit>>> {
        let batch: Vec<Query<'_>> = queries
            .iter()
            .map(|v| Query {
                vector: v.as_ref(),
                k,
                filter,
                rank_ids: &[],
            })
            .collect();
        Ok(self
            .search_batch(&batch)?
            .into_iter()
            .map(|r| r.hits)
            .collect())
    }

    /// The exact rank and score of chunk `chunk_id` for `query` (also far outside any top-k).
    pub fn rank_of(&self, query: &[f32], chunk_id: &str, filter: Option<&Filter>) -> Result<Rank> {
        let ids = [chunk_id.to_string()];
        let q = Query {
            vector: query,
            k: 0,
            filter,
            rank_ids: &ids,
        };
        Ok(self
            .search_batch(&[q])?
            .pop()
            .and_then(|mut r| r.ranks.pop())
            .unwrap_or(Rank::NotInIndex))
    }

    /// Runs a batch of queries in one pass: each query's top-k and the exact ranks of the
    /// chunk IDs it asks for. Deterministic: same index and queries, same result, whatever
    /// the number of threads.
    pub fn search_batch(&self, queries: &[Query<'_>]) -> Result<Vec<QueryResult>> {
        self.search_batch_with(queries, Kernel::detect())
    }

    fn search_batch_with(&self, queries: &[Query<'_>], engine: Kernel) -> Result<Vec<QueryResult>> {
        let dim = self.dimension();
        let n = self.len();
        // A damaged vector must not rank (a NaN scores below everything, silently).
        self.check_vectors()?;
        // Validate and normalise the queries.
        let mut normalised = Vec::with_capacity(queries.len());
        for (i, q) in queries.iter().enumerate() {
            if q.vector.len() != dim {
                return Err(IndexError::DimensionMismatch {
                    what: format!("query {i}"),
                    expected: dim,
                    got: q.vector.len(),
                });
            }
            normalised.push(kernel::normalize(q.vector).ok_or_else(|| {
                IndexError::InvalidVector {
                    what: format!("query {i}"),
                    problem: "has a NaN or infinite component, or is all zeros".into(),
                }
            })?);
        }
        // One bitmap per distinct filter.
        let mut distinct: Vec<&Filter> = Vec::new();
        let mut which = Vec::with_capacity(queries.len());
        for q in queries {
            which.push(
                q.filter
                    .map(|f| match distinct.iter().position(|d| *d == f) {
                        Some(i) => i,
                        None => {
                            distinct.push(f);
                            distinct.len() - 1
                        }
                    }),
            );
        }
        if !distinct.is_empty() {
            // Binary tables parse their filter metadata on first use: damage is an error.
            self.table().check_meta()?;
        }
        let bitmaps: Vec<Vec<u64>> = distinct.iter().map(|f| self.filter_bitmap(f)).collect();
        // Targets: rows and scores of the chunks whose rank is asked for.
        let padded = queries.len().div_ceil(8) * 8;
        let packed = PackedQueries::new(&normalised, dim);
        let mut plan = Plan {
            filter: which
                .iter()
                .map(|w| w.map(|i| bitmaps[i].as_slice()))
                .collect(),
            targets: Vec::new(),
            counted_in: Vec::new(),
            slow_range: Vec::with_capacity(queries.len()),
            slow: Vec::new(),
            target_gate: vec![f32::INFINITY; padded],
            panel_targets: vec![PanelTargets::default(); packed.panels.len()],
            k: queries.iter().map(|q| q.k.min(n)).collect(),
            padded,
        };
        // Per query and rank id: either a final answer, or the index of a counted target.
        let mut pending: Vec<Vec<std::result::Result<Rank, usize>>> = Vec::new();
        for (qi, q) in queries.iter().enumerate() {
            let slow_start = plan.slow.len();
            let bits = which[qi].map(|i| bitmaps[i].as_slice());
            // Panels are 16 wide except the last, which may be 8.
            let pi = qi / WMAX;
            let panel = packed.panels.get(pi);
            let lane = qi % WMAX;
            let mut simd_slots = 0;
            let mut answers = Vec::with_capacity(q.rank_ids.len());
            for id in q.rank_ids {
                let answer = match self.row_of(id) {
                    None => Ok(Rank::NotInIndex),
                    Some(row) if !allows(bits, row) => Ok(Rank::FilteredOut {
                        score: kernel::dot(self.vector(row), &normalised[qi]),
                    }),
                    Some(row) => {
                        let score = kernel::dot(self.vector(row), &normalised[qi]);
                        let t = plan.targets.len();
                        plan.targets.push(Target {
                            row: row as u32,
                            score,
                        });
                        if bits.is_none() && panel.is_some() {
                            let pt = &mut plan.panel_targets[pi];
                            if pt.scores.len() == simd_slots {
                                pt.scores.push([f32::INFINITY; WMAX]);
                                pt.rows.push([0; WMAX]);
                            }
                            pt.scores[simd_slots][lane] = score;
                            pt.rows[simd_slots][lane] = row as u32;
                            plan.counted_in.push(Some((pi, simd_slots, lane)));
                            simd_slots += 1;
                        } else {
                            plan.slow.push(t);
                            plan.counted_in.push(None);
                            plan.target_gate[qi] = plan.target_gate[qi].min(score);
                        }
                        Err(t)
                    }
                };
                answers.push(answer);
            }
            plan.slow_range.push((slow_start, plan.slow.len()));
            pending.push(answers);
        }
        let state = if n == 0 || queries.is_empty() {
            State::new(&plan)
        } else {
            let vectors = self.vectors();
            let tasks = n.div_ceil(ROWS_PER_TASK);
            let plan_ref = &plan;
            // Each fold piece starts with empty top-k heaps that fill before the gate can
            // skip anything, and every piece is merged once: at depth 100 over 4,096-row
            // tasks, letting rayon split down to single tasks spent a fifth of an exam's CPU
            // time in heap work. A few pieces per thread keep the stealing balance; the
            // result is the same at any split (exact top-k under `better`, exact counts).
            let min_len = tasks.div_ceil(4 * rayon::current_num_threads()).max(1);
            (0..tasks)
                .into_par_iter()
                .with_min_len(min_len)
                .fold(
                    || State::new(plan_ref),
                    |mut state, task| {
                        let start = task * ROWS_PER_TASK;
                        let end = (start + ROWS_PER_TASK).min(n);
                        scan(
                            engine,
                            vectors,
                            dim,
                            &packed,
                            plan_ref,
                            (start, end),
                            &mut state,
                        );
                        state
                    },
                )
                .reduce(|| State::new(plan_ref), |a, b| a.merge(b, plan_ref))
        };
        let counts: Vec<u64> = (0..plan.targets.len())
            .map(|t| state.count(&plan, t))
            .collect();
        // Scores are finite for finite unit vectors; anything else is an error, never a rank.
        let not_finite = plan
            .targets
            .iter()
            .map(|t| (t.row, t.score))
            .chain(
                state
                    .top
                    .iter()
                    .flat_map(|t| t.heap.iter().map(|c| (c.row, c.score))),
            )
            .find(|(_, score)| !score.is_finite());
        if let Some((row, score)) = not_finite {
            return Err(IndexError::corrupt(
                &self.dir().join(crate::manifest::files::VECTORS),
                0,
                format!(
                    "row {row} (chunk \"{}\") scores {score}: the vector is damaged",
                    veredicto_core::redact::short(self.table().id(row as usize))
                ),
            ));
        }
        Ok(state
            .top
            .into_iter()
            .zip(pending)
            .map(|(top, answers)| QueryResult {
                hits: top.into_hits(),
                ranks: answers
                    .into_iter()
                    .map(|a| match a {
                        Ok(rank) => rank,
                        Err(t) => Rank::Ranked {
                            rank: counts[t] as usize + 1,
                            score: plan.targets[t].score,
                        },
                    })
                    .collect(),
            })
            .collect())
    }

    /// Bitmap (one bit per row) of the rows `filter` lets through.
    pub(crate) fn filter_bitmap(&self, filter: &Filter) -> Vec<u64> {
        let n = self.len();
        let mut bits = vec![0u64; n.div_ceil(64)];
        for row in 0..n {
            if filter.matches(self.table().meta(row)) {
                bits[row / 64] |= 1u64 << (row % 64);
            }
        }
        bits
    }
}

/// Whether `row` passes the filter whose bitmap is `bits` (`None`: no filter).
#[inline]
pub(crate) fn allows(bits: Option<&[u64]>, row: usize) -> bool {
    bits.is_none_or(|b| b[row / 64] & (1u64 << (row % 64)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BatchInfo, ChunkInput, ChunkMeta, EmbeddedField, IngestSettings, Plan};
    use std::path::Path;

    /// A real index of `corpus` with `vectors` (one batch, a fixed model fingerprint).
    fn build(corpus: Vec<ChunkInput>, vectors: &[Vec<f32>], dim: usize, dir: &Path) -> Index {
        let settings = IngestSettings {
            model: crate::ModelFingerprint {
                value: serde_json::json!("m"),
                hash: format!("sha256:{}", "0".repeat(64)),
            },
            dimension: dim,
            field: EmbeddedField::Text,
            full_rebuild: false,
        };
        let batch = BatchInfo {
            name: "b".into(),
            time: "t".into(),
            corpus_hash: format!("sha256:{}", "1".repeat(64)),
        };
        Plan::new(None, corpus, settings)
            .unwrap()
            .apply(vectors, &batch, dir)
            .unwrap()
    }

    /// The portable kernel and the machine's kernel give the same results (this machine
    /// may not run the portable one otherwise).
    #[test]
    fn portable_and_native_kernels_agree() {
        let dim = 5;
        let n = 5_000;
        let mut seed = 3u64;
        let mut rnd = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % 5) as f32 - 2.0
        };
        let mut vectors = Vec::new();
        let corpus: Vec<ChunkInput> = (0..n)
            .map(|i| {
                let mut v: Vec<f32> = (0..dim).map(|_| rnd()).collect();
                v[0] += 0.5;
                vectors.push(v);
                ChunkInput {
                    meta: ChunkMeta {
                        domain: Some(if i % 2 == 0 { "a" } else { "b" }.into()),
                        ..ChunkMeta::default()
                    },
                    ..ChunkInput::new(format!("r{i:05}"), format!("t{i}"))
                }
            })
            .collect();
        let tmp = tempfile::tempdir().unwrap();
        let index = build(corpus, &vectors, dim, &tmp.path().join("idx"));
        let queries: Vec<Vec<f32>> = (0..19)
            .map(|_| (0..dim).map(|_| rnd() + 0.1).collect())
            .collect();
        let ids: Vec<String> = ["r00000", "r02500", "r04999"].map(String::from).to_vec();
        let filter = Filter::Domain("a".into());
        let batch: Vec<Query<'_>> = queries
            .iter()
            .enumerate()
            .map(|(i, q)| Query {
                vector: q,
                k: 7,
                filter: (i % 3 == 0).then_some(&filter),
                rank_ids: &ids,
            })
            .collect();
        let portable = index.search_batch_with(&batch, Kernel::Portable).unwrap();
        let native = index.search_batch_with(&batch, Kernel::detect()).unwrap();
        assert_eq!(portable, native);
        assert!(portable
            .iter()
            .all(|r| r.hits.len() == 7 && r.ranks.len() == 3));
    }

    /// Real-valued unit vectors at the models' dimension (384), where a different summation
    /// order would change the last bits: the portable and the machine's kernel give the same
    /// score bits, at 1 and 2 threads (two parallel tasks), in a batch of 24 queries (a panel
    /// of 16 and one of 8) and one query at a time; the scores are those of `kernel::dot`.
    /// A query's hits and ranks as (row, score bits) pairs.
    type Bits = (Vec<(usize, u32)>, Vec<Option<(usize, u32)>>);

    #[test]
    fn kernels_threads_and_batch_sizes_give_the_same_score_bits_at_dim_384() {
        let dim = 384;
        let n = ROWS_PER_TASK + 997;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        let vectors: Vec<Vec<f32>> = (0..n)
            .map(|_| kernel::normalize(&(0..dim).map(|_| rnd()).collect::<Vec<_>>()).unwrap())
            .collect();
        let corpus: Vec<ChunkInput> = (0..n)
            .map(|i| ChunkInput::new(format!("c{i:05}"), format!("t{i}")))
            .collect();
        let tmp = tempfile::tempdir().unwrap();
        let index = build(corpus, &vectors, dim, &tmp.path().join("idx"));
        let queries: Vec<Vec<f32>> = (0..24).map(|_| (0..dim).map(|_| rnd()).collect()).collect();
        let ids: Vec<String> = ["c00000", "c02100", "c05092"].map(String::from).to_vec();
        let batch: Vec<Query<'_>> = queries
            .iter()
            .map(|q| Query {
                vector: q,
                k: 10,
                filter: None,
                rank_ids: &ids,
            })
            .collect();
        let run = |threads: usize, kernel: Kernel, batch: &[Query<'_>]| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| index.search_batch_with(batch, kernel).unwrap())
        };
        let bits = |results: &[QueryResult]| -> Vec<Bits> {
            results
                .iter()
                .map(|r| {
                    (
                        r.hits.iter().map(|h| (h.row, h.score.to_bits())).collect(),
                        r.ranks
                            .iter()
                            .map(|k| k.rank().zip(k.score().map(f32::to_bits)))
                            .collect(),
                    )
                })
                .collect()
        };
        let reference = bits(&run(1, Kernel::Portable, &batch));
        for threads in [1, 2] {
            for kernel in [Kernel::Portable, Kernel::detect()] {
                let got = bits(&run(threads, kernel, &batch));
                assert_eq!(got, reference, "{kernel:?} on {threads} threads");
            }
        }
        // One query at a time (a lone panel of 8, seven of them padding).
        for (i, q) in batch.iter().enumerate().step_by(7) {
            for kernel in [Kernel::Portable, Kernel::detect()] {
                let got = bits(&run(2, kernel, std::slice::from_ref(q)));
                assert_eq!(got[0], reference[i], "{kernel:?}, query {i} alone");
            }
        }
        // The scores are the sequential FMA chain of `kernel::dot`.
        for (i, (hits, _)) in reference.iter().enumerate().step_by(5) {
            let q = kernel::normalize(&queries[i]).unwrap();
            for &(row, score) in hits {
                assert_eq!(kernel::dot(index.vector(row), &q).to_bits(), score);
            }
        }
    }
}
