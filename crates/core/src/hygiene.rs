//! Corpus hygiene: duplicates, obsolete and suspicious material, drift, and aggregation
//! questions. Pure: the caller reads the corpus (or the index's records and vectors), the
//! previous state and the golden set; the date is given.
//!
//! Rules (documented for users in `docs/corpus-check.md`):
//! - **Exact duplicates**: chunks with the same text after trimming, lower-casing and
//!   collapsing whitespace (the `text`, else the `representation`). **Near duplicates**:
//!   cosine of their vectors ≥ [`CorpusPolicy::near_duplicate_cosine`] (0.95 by default),
//!   when vectors exist (the index's, or the corpus lines' `vector`). Pairs are joined into
//!   clusters; a cluster whose members all come from different sources is legitimate
//!   redundancy (kept); members sharing a source are copies within that source. The source is
//!   the line's `source` field, else its `doc_id`; a chunk with neither counts as its own
//!   source only when it is alone.
//! - **Obsolete**: `valid_to` before the check date (expired), or superseded: a newer
//!   version of the same `doc_id` came in a later ingestion batch (a chunk of that document
//!   from a later batch whose `valid_from` is later than this chunk's), and this chunk is
//!   still there. Batches are ordered by their ingest time when known, then by name.
//! - **Suspicious** (listed for a human, never deleted): no `doc_id` nor `source`; an
//!   ingestion batch not among the declared [`CorpusPolicy::expected_batches`]; a chunk of
//!   the gold chunks' domain that gives a different figure for the same concept (the same
//!   word before the number, the same unit) than a gold chunk.
//! - **Drift**: against a previous corpus (chunks that entered, changed — text,
//!   representation, validity or labels — and left, by batch and domain), and against the
//!   last accepted run: the same, chunk by chunk, from the snapshot the history kept of the
//!   chunks it read ([`crate::snapshot`]), beside the batches it read (batches that entered,
//!   left or changed size; the only view for a run recorded without its chunks).

use crate::aggregation::{self, Aggregation};
use crate::case::{Case, Chunk};
use crate::exam::CorpusBatch;
use crate::signals::Groups;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The `[corpus]` table of the policy file. Thresholds are optional: an absent one is
/// reported but never stops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CorpusPolicy {
    /// Cosine at or above which two chunks' vectors make a near duplicate.
    pub near_duplicate_cosine: f64,
    /// Ingestion batches that are expected; empty: any batch is.
    pub expected_batches: Vec<String>,
    /// Most copies within one source tolerated (exact or near).
    pub max_copies_within_source: Option<usize>,
    /// Most obsolete chunks (expired or superseded) tolerated.
    pub max_obsolete: Option<usize>,
    /// Most suspicious chunks tolerated.
    pub max_suspicious: Option<usize>,
    /// Most chunks that entered, changed or left since the previous state.
    pub max_drift: Option<usize>,
    /// Most golden cases (or signal queries) that need an aggregation.
    pub max_aggregation_questions: Option<usize>,
}

impl Default for CorpusPolicy {
    fn default() -> Self {
        CorpusPolicy {
            near_duplicate_cosine: 0.95,
            expected_batches: Vec::new(),
            max_copies_within_source: None,
            max_obsolete: None,
            max_suspicious: None,
            max_drift: None,
            max_aggregation_questions: None,
        }
    }
}

impl CorpusPolicy {
    /// Checks ranges; the first problem as (key, message).
    pub fn validate(&self) -> Result<(), (String, String)> {
        let c = self.near_duplicate_cosine;
        if !(c.is_finite() && (0.0..=1.0).contains(&c) && c > 0.0) {
            return Err((
                "corpus.near_duplicate_cosine".into(),
                format!("must be above 0 and at most 1, got {c}"),
            ));
        }
        for (i, b) in self.expected_batches.iter().enumerate() {
            if b.trim().is_empty() {
                return Err((format!("corpus.expected_batches[{i}]"), "empty".into()));
            }
        }
        Ok(())
    }
}

/// What the check reads.
#[derive(Debug, Clone, Default)]
pub struct CheckInput {
    pub chunks: Vec<Chunk>,
    /// The `source` field of each chunk's line, when it has one (same order as `chunks`).
    pub sources: Vec<Option<String>>,
    /// One vector per chunk (same order), when it has one (the index's, or the line's
    /// `vector`); near duplicates are looked for among the chunks that have one.
    pub vectors: Vec<Option<Vec<f32>>>,
    /// When each batch entered (RFC 3339), as far as known.
    pub batch_times: BTreeMap<String, String>,
    /// The check date, `YYYY-MM-DD`.
    pub as_of: String,
    pub gold_label: String,
    /// A previous corpus to compare with (`--since`).
    pub previous: Option<Vec<Chunk>>,
    /// The batches the last accepted run read, and that run's ID.
    pub accepted_batches: Option<(String, Vec<CorpusBatch>)>,
    /// The chunks the last accepted run read, when its history kept them (runs recorded
    /// before chunk snapshots were kept have none: the drift is then by batch only).
    pub accepted_chunks: Option<crate::snapshot::ChunkSnapshot>,
    /// Golden cases and signal queries checked for aggregations: (where, ID, question).
    pub questions: Vec<(String, String, String)>,
}

/// One member of a duplicate cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest_batch: Option<String>,
}

/// A group of chunks that say the same thing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuplicateCluster {
    /// `exact` (same normalised text) or `near` (at least one pair only by cosine).
    pub kind: String,
    /// The lowest cosine of the pairs that joined it (1 for exact).
    pub min_cosine: f64,
    /// `across_sources` (kept: legitimate redundancy) or `within_source` (copies).
    pub verdict: String,
    pub members: Vec<Member>,
    /// The extra copies within a source: every member after the first of its source.
    pub copies: Vec<String>,
}

/// An obsolete chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obsolete {
    pub id: String,
    /// Why, with its facts (JSON: `why` and the fields of that reason).
    #[serde(flatten)]
    pub reason: ObsoleteReason,
    /// The reason as a sentence for people: empty here, worded by the report layer
    /// (`veredicto_report::corpus`).
    #[serde(default)]
    pub detail: String,
}

/// Why a chunk is obsolete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum ObsoleteReason {
    /// Its `valid_to` is before the check's date.
    Expired { valid_to: String, as_of: String },
    /// A later batch brought a newer version (`newer_id`) of the same `doc_id`.
    Superseded {
        doc_id: String,
        batch: String,
        newer_id: String,
        newer_batch: String,
        newer_valid_from: String,
    },
}

impl ObsoleteReason {
    /// `expired` or `superseded`.
    pub fn why(&self) -> &'static str {
        match self {
            ObsoleteReason::Expired { .. } => "expired",
            ObsoleteReason::Superseded { .. } => "superseded",
        }
    }
}

/// A chunk for a human to look at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspicious {
    pub id: String,
    /// Why, with its facts (JSON: `why` and the fields of that reason).
    #[serde(flatten)]
    pub reason: SuspiciousReason,
    /// The reason as a sentence for people: empty here, worded by the report layer.
    #[serde(default)]
    pub detail: String,
}

/// Why a chunk is listed for a person to look at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum SuspiciousReason {
    /// Neither `doc_id` nor `source`.
    NoSource,
    /// Its batch (`None`: it has none) is not among the policy's `expected_batches`.
    UnexpectedBatch { batch: Option<String> },
    /// The same concept (`concept`, e.g. a table column with its unit) has other figures
    /// here (`values`) than in gold chunk `gold_id` (`gold_values`).
    ContradictsGold {
        concept: String,
        values: Vec<String>,
        gold_id: String,
        gold_values: Vec<String>,
    },
}

impl SuspiciousReason {
    /// `no_source`, `unexpected_batch` or `contradicts_gold`.
    pub fn why(&self) -> &'static str {
        match self {
            SuspiciousReason::NoSource => "no_source",
            SuspiciousReason::UnexpectedBatch { .. } => "unexpected_batch",
            SuspiciousReason::ContradictsGold { .. } => "contradicts_gold",
        }
    }
}

/// What moved in one batch and domain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftGroup {
    pub batch: String,
    pub domain: String,
    pub entered: Vec<String>,
    pub changed: Vec<String>,
    pub left: Vec<String>,
}

/// A batch that differs from the last accepted run's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchDrift {
    pub batch: String,
    /// `entered`, `left` or `changed_size`.
    pub change: String,
    pub chunks_then: usize,
    pub chunks_now: usize,
}

/// Drift since the previous state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    /// Against `--since CORPUS`: chunk-level, by batch and domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_corpus: Option<CorpusDrift>,
    /// Against the last accepted run's batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_accepted_run: Option<RunDrift>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CorpusDrift {
    pub entered: usize,
    pub changed: usize,
    pub left: usize,
    pub groups: Vec<DriftGroup>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunDrift {
    pub run: String,
    pub batches: Vec<BatchDrift>,
    /// Chunk by chunk, by batch and domain, when the history kept the chunks that run read;
    /// absent for runs recorded before it did (the drift is then by batch only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<CorpusDrift>,
}

/// A question that needs an aggregation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregationQuestion {
    /// `golden` or `signals`.
    pub from: String,
    pub id: String,
    pub query: String,
    pub aggregation: Aggregation,
}

/// A declared threshold that was exceeded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breach {
    /// The policy key (`corpus.max_obsolete`).
    pub key: String,
    pub limit: usize,
    pub found: usize,
}

/// The result of [`check`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusCheck {
    pub chunks: usize,
    pub as_of: String,
    /// Chunks with a vector (near duplicates are looked for among them).
    pub vectors: usize,
    pub near_duplicate_cosine: f64,
    pub duplicates: Vec<DuplicateCluster>,
    pub copies_within_source: usize,
    pub redundant_across_sources: usize,
    pub obsolete: Vec<Obsolete>,
    pub suspicious: Vec<Suspicious>,
    pub drift: Drift,
    pub aggregation_questions: Vec<AggregationQuestion>,
    pub breaches: Vec<Breach>,
}

fn dup_key(c: &Chunk) -> Option<String> {
    let t = c.text.as_deref().or(c.representation.as_deref())?;
    let norm: Vec<String> = t.split_whitespace().map(str::to_lowercase).collect();
    if norm.is_empty() {
        None
    } else {
        Some(norm.join(" "))
    }
}

fn source_of(c: &Chunk, source: Option<&String>) -> Option<String> {
    source.cloned().or_else(|| c.doc_id.clone())
}

/// Runs every check.
pub fn check(input: &CheckInput, policy: &CorpusPolicy) -> CorpusCheck {
    let chunks = &input.chunks;
    let n = chunks.len();
    let source = |i: usize| -> Option<String> {
        source_of(&chunks[i], input.sources.get(i).and_then(|s| s.as_ref()))
    };

    // Duplicates.
    let mut groups = Groups::new(n);
    let mut exact_pairs: HashMap<String, usize> = HashMap::new();
    let mut near = vec![false; n];
    let mut min_cos = vec![1.0f64; n];
    for (i, c) in chunks.iter().enumerate() {
        if let Some(k) = dup_key(c) {
            if let Some(&first) = exact_pairs.get(&k) {
                groups.union(first, i);
            } else {
                exact_pairs.insert(k, i);
            }
        }
    }
    // Unit vectors once, so that each pair is one dot product.
    let with_vector: Vec<(usize, Vec<f32>)> = (0..n)
        .filter_map(|i| {
            let v = input.vectors.get(i).and_then(|v| v.as_deref())?;
            let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            (norm > 0.0).then(|| (i, v.iter().map(|x| (f64::from(*x) / norm) as f32).collect()))
        })
        .collect();
    let near_pairs = near_pairs(&with_vector, policy.near_duplicate_cosine);
    for &(a, b, cs) in &near_pairs {
        if groups.find(a) != groups.find(b) || dup_key(&chunks[a]) != dup_key(&chunks[b]) {
            groups.union(a, b);
            near[a] = true;
            near[b] = true;
            min_cos[a] = min_cos[a].min(cs);
            min_cos[b] = min_cos[b].min(cs);
        }
    }
    let mut clusters: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..n {
        clusters.entry(groups.find(i)).or_default().push(i);
    }
    let mut duplicates = Vec::new();
    let (mut copies_total, mut redundant) = (0, 0);
    for members in clusters.values().filter(|m| m.len() > 1) {
        let mut sorted = members.clone();
        sorted.sort_by(|&a, &b| chunks[a].id.cmp(&chunks[b].id));
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut copies = Vec::new();
        for &i in &sorted {
            // Without a source, a member cannot show it is independent: a copy.
            let s = source(i).unwrap_or_default();
            if !seen.insert(s) {
                copies.push(chunks[i].id.clone());
            }
        }
        let any_near = sorted.iter().any(|&i| near[i]);
        let min_cosine = sorted.iter().map(|&i| min_cos[i]).fold(1.0, f64::min);
        let verdict = if copies.is_empty() {
            redundant += 1;
            "across_sources"
        } else {
            copies_total += copies.len();
            "within_source"
        };
        duplicates.push(DuplicateCluster {
            kind: if any_near { "near" } else { "exact" }.into(),
            min_cosine,
            verdict: verdict.into(),
            members: sorted
                .iter()
                .map(|&i| Member {
                    id: chunks[i].id.clone(),
                    source: source(i),
                    ingest_batch: chunks[i].ingest_batch.clone(),
                })
                .collect(),
            copies,
        });
    }

    // Obsolete.
    let today = crate::time::parse_date_days(&input.as_of);
    let batch_rank = batch_order(chunks, &input.batch_times);
    // Per document, its chunks' (batch rank, valid_from, id).
    let mut versions: HashMap<&str, Vec<(usize, &str, &str)>> = HashMap::new();
    for c in chunks {
        if let (Some(d), Some(b)) = (&c.doc_id, &c.ingest_batch) {
            versions.entry(d.as_str()).or_default().push((
                batch_rank[b.as_str()],
                c.valid_from.as_deref().unwrap_or(""),
                c.id.as_str(),
            ));
        }
    }
    let rank_name: HashMap<usize, &str> = batch_rank.iter().map(|(k, v)| (*v, *k)).collect();
    let mut obsolete = Vec::new();
    for c in chunks {
        if let (Some(to), Some(today)) = (&c.valid_to, today) {
            let end = to.get(..10).and_then(crate::time::parse_date_days);
            if end.is_some_and(|e| e < today) {
                obsolete.push(Obsolete {
                    id: c.id.clone(),
                    reason: ObsoleteReason::Expired {
                        valid_to: to.clone(),
                        as_of: input.as_of.clone(),
                    },
                    detail: String::new(),
                });
                continue;
            }
        }
        if let (Some(d), Some(b)) = (&c.doc_id, &c.ingest_batch) {
            let rank = batch_rank[b.as_str()];
            let from = c.valid_from.as_deref().unwrap_or("");
            // The newest later version: latest batch, then latest valid_from, then ID.
            let newer = versions[d.as_str()]
                .iter()
                .filter(|(r, f, _)| *r > rank && *f > from)
                .max();
            if let Some((r, f, id)) = newer {
                obsolete.push(Obsolete {
                    id: c.id.clone(),
                    reason: ObsoleteReason::Superseded {
                        doc_id: d.clone(),
                        batch: b.clone(),
                        newer_id: id.to_string(),
                        newer_batch: rank_name[r].to_string(),
                        newer_valid_from: f.to_string(),
                    },
                    detail: String::new(),
                });
            }
        }
    }

    // Suspicious.
    let mut suspicious = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        if source(i).is_none() {
            suspicious.push(Suspicious {
                id: c.id.clone(),
                reason: SuspiciousReason::NoSource,
                detail: String::new(),
            });
        }
        if !policy.expected_batches.is_empty() {
            match &c.ingest_batch {
                Some(b) if policy.expected_batches.contains(b) => {}
                Some(b) => suspicious.push(Suspicious {
                    id: c.id.clone(),
                    reason: SuspiciousReason::UnexpectedBatch {
                        batch: Some(b.clone()),
                    },
                    detail: String::new(),
                }),
                None => suspicious.push(Suspicious {
                    id: c.id.clone(),
                    reason: SuspiciousReason::UnexpectedBatch { batch: None },
                    detail: String::new(),
                }),
            }
        }
    }
    suspicious.extend(contradictions(chunks, &input.gold_label));
    suspicious.sort_by(|a, b| a.id.cmp(&b.id).then(a.reason.why().cmp(b.reason.why())));

    // Drift.
    let drift = Drift {
        since_corpus: input.previous.as_ref().map(|p| corpus_drift(p, chunks)),
        since_accepted_run: input.accepted_batches.as_ref().map(|(run, then)| {
            let mut d = run_drift(run, then, chunks);
            d.chunks = input
                .accepted_chunks
                .as_ref()
                .map(|snap| snapshot_drift(snap, chunks));
            d
        }),
    };

    // Aggregations.
    let aggregation_questions: Vec<AggregationQuestion> = input
        .questions
        .iter()
        .filter_map(|(from, id, q)| {
            aggregation::classify(q).map(|a| AggregationQuestion {
                from: from.clone(),
                id: id.clone(),
                query: q.clone(),
                aggregation: a,
            })
        })
        .collect();

    let mut breaches = Vec::new();
    // `--since` when given; else the chunk-level drift since the last accepted run (a run
    // recorded before the history kept its chunks gives no count: its view is by batch).
    let drift_count = drift
        .since_corpus
        .as_ref()
        .or_else(|| {
            drift
                .since_accepted_run
                .as_ref()
                .and_then(|r| r.chunks.as_ref())
        })
        .map_or(0, |d| d.entered + d.changed + d.left);
    for (key, limit, found) in [
        (
            "corpus.max_copies_within_source",
            policy.max_copies_within_source,
            copies_total,
        ),
        ("corpus.max_obsolete", policy.max_obsolete, obsolete.len()),
        (
            "corpus.max_suspicious",
            policy.max_suspicious,
            suspicious
                .iter()
                .map(|s| s.id.as_str())
                .collect::<BTreeSet<_>>()
                .len(),
        ),
        ("corpus.max_drift", policy.max_drift, drift_count),
        (
            "corpus.max_aggregation_questions",
            policy.max_aggregation_questions,
            aggregation_questions.len(),
        ),
    ] {
        if let Some(limit) = limit {
            if found > limit {
                breaches.push(Breach {
                    key: key.into(),
                    limit,
                    found,
                });
            }
        }
    }

    CorpusCheck {
        chunks: n,
        as_of: input.as_of.clone(),
        vectors: with_vector.len(),
        near_duplicate_cosine: policy.near_duplicate_cosine,
        duplicates,
        copies_within_source: copies_total,
        redundant_across_sources: redundant,
        obsolete,
        suspicious,
        drift,
        aggregation_questions,
        breaches,
    }
}

/// Batch name → rank (0 = oldest): by ingest time when known (unknown times sort first),
/// then by name.
/// Rows compared at a time in [`near_pairs`]: two blocks of 64 vectors of 384 floats
/// (196 KB) stay in the L2 cache while every pair between them is screened.
const BLOCK: usize = 64;

/// The cosine of two unit vectors as the check defines it: the dot product summed in order,
/// in `f32`. The value compared with the threshold and reported.
fn exact_cosine(a: &[f32], b: &[f32]) -> f64 {
    f64::from(a.iter().zip(b).map(|(p, q)| p * q).sum::<f32>())
}

/// The same dot product with eight partial sums (the compiler vectorises it): used only to
/// screen pairs, each screened pair is then measured with [`exact_cosine`].
fn screen_cosine(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(p, q)| p * q).sum();
    acc.iter().sum::<f32>() + tail
}

/// Every pair of unit vectors (same dimension) whose cosine is at least `threshold`, as
/// `(a, b, cosine)` with `a < b` in input order, sorted by `(a, b)`: exactly the pairs, order
/// and values of comparing every pair in order with [`exact_cosine`].
///
/// The vectors of each dimension are copied into one contiguous table and compared block
/// against block ([`BLOCK`] rows each, so both stay in cache); a pair is screened with
/// [`screen_cosine`] against `threshold` minus a margin larger than the two sums can differ
/// by (each is within `d · ε` of the true value for unit vectors, ε = 2⁻²³), and only the
/// pairs that pass are measured exactly. Same pairs, same values, same order.
fn near_pairs(vectors: &[(usize, Vec<f32>)], threshold: f64) -> Vec<(usize, usize, f64)> {
    let mut by_dim: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (x, (_, v)) in vectors.iter().enumerate() {
        by_dim.entry(v.len()).or_default().push(x);
    }
    let mut pairs = Vec::new();
    for (dim, rows) in by_dim {
        if dim == 0 {
            continue;
        }
        let table: Vec<f32> = rows
            .iter()
            .flat_map(|&x| vectors[x].1.iter().copied())
            .collect();
        let row = |r: usize| &table[r * dim..(r + 1) * dim];
        let margin = dim as f64 * 2.5e-7 + 1e-6;
        let screen = (threshold - margin) as f32;
        let n = rows.len();
        for i0 in (0..n).step_by(BLOCK) {
            let i1 = (i0 + BLOCK).min(n);
            for j0 in (i0..n).step_by(BLOCK) {
                let j1 = (j0 + BLOCK).min(n);
                for i in i0..i1 {
                    let a = row(i);
                    for j in j0.max(i + 1)..j1 {
                        let b = row(j);
                        if screen_cosine(a, b) >= screen {
                            let cs = exact_cosine(a, b);
                            if cs >= threshold {
                                pairs.push((vectors[rows[i]].0, vectors[rows[j]].0, cs.min(1.0)));
                            }
                        }
                    }
                }
            }
        }
    }
    pairs.sort_by_key(|p| (p.0, p.1));
    pairs
}

fn batch_order<'a>(
    chunks: &'a [Chunk],
    times: &BTreeMap<String, String>,
) -> HashMap<&'a str, usize> {
    let names: BTreeSet<&str> = chunks
        .iter()
        .filter_map(|c| c.ingest_batch.as_deref())
        .collect();
    let mut list: Vec<(Option<i64>, &str)> = names
        .into_iter()
        .map(|n| {
            (
                times
                    .get(n)
                    .and_then(|t| crate::time::parse_timestamp_ms(t)),
                n,
            )
        })
        .collect();
    list.sort();
    list.into_iter()
        .enumerate()
        .map(|(i, (_, n))| (n, i))
        .collect()
}

/// Words that do not name a concept.
const STOPWORDS: &[&str] = &[
    "de", "del", "la", "el", "los", "las", "un", "una", "y", "o", "a", "en", "por", "con", "al",
    "se", "que", "es", "su", "sus", "lo", "le", "the", "of", "a", "an", "and", "or", "to", "in",
    "for", "on", "with", "is", "are", "at", "by", "hasta", "desde", "entre", "sobre", "para",
];

/// A figure and the concept it is given for: the content word before it (back to the
/// previous figure), and its unit (`%`, `€`, or a time unit); other numbers are not
/// figures of a concept (years, article numbers).
fn facts(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let norm = text.to_lowercase();
    // Keep digits with their separators together; `%` and `€` become words.
    let spaced = norm.replace('%', " % ").replace('€', " € ");
    let tokens: Vec<String> = spaced
        .split(|c: char| c.is_whitespace() || "()[]:;¿?¡!\"'«»".contains(c))
        .map(|t| t.trim_matches(|c: char| c == ',' || c == '.').to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (i, t) in tokens.iter().enumerate() {
        if !t.chars().next().is_some_and(|c| c.is_ascii_digit())
            || !t
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        {
            continue;
        }
        // Years and article numbers are not figures of a concept.
        let value: String = t.chars().filter(char::is_ascii_digit).collect();
        let unit = match tokens.get(i + 1).map(String::as_str) {
            Some("%") => "%",
            Some("€") | Some("euros") => "€",
            Some(u)
                if ["dias", "días", "days", "meses", "months", "horas", "hours"].contains(&u) =>
            {
                "time"
            }
            _ => continue,
        };
        let mut words = Vec::new();
        for w in tokens[..i].iter().rev() {
            let w: String = w.chars().map(crate::aggregation::fold_accent).collect();
            if w.chars().any(|c| c.is_ascii_digit()) || w == "%" || w == "€" {
                break;
            }
            if w.chars().all(char::is_alphabetic) && !STOPWORDS.contains(&w.as_str()) {
                words.push(w);
                if words.len() == 1 {
                    break;
                }
            }
        }
        if words.is_empty() {
            continue;
        }
        out.entry(format!("{} [{unit}]", words.join(" ")))
            .or_default()
            .insert(value);
    }
    out
}

/// Chunks (not gold) in a gold chunk's domain that give another figure for one of its
/// concepts.
fn contradictions(chunks: &[Chunk], gold_label: &str) -> Vec<Suspicious> {
    let text = |c: &Chunk| {
        c.text
            .clone()
            .or_else(|| c.representation.clone())
            .unwrap_or_default()
    };
    let gold: Vec<(&Chunk, BTreeMap<String, BTreeSet<String>>)> = chunks
        .iter()
        .filter(|c| c.has_label(gold_label))
        .map(|c| (c, facts(&text(c))))
        .collect();
    let mut out = Vec::new();
    for c in chunks.iter().filter(|c| !c.has_label(gold_label)) {
        let mine = facts(&text(c));
        for (g, theirs) in &gold {
            if g.domain != c.domain {
                continue;
            }
            for (concept, values) in &mine {
                if let Some(gv) = theirs.get(concept) {
                    if gv.is_disjoint(values) {
                        out.push(Suspicious {
                            id: c.id.clone(),
                            reason: SuspiciousReason::ContradictsGold {
                                concept: concept.clone(),
                                values: values.iter().cloned().collect(),
                                gold_id: g.id.clone(),
                                gold_values: gv.iter().cloned().collect(),
                            },
                            detail: String::new(),
                        });
                    }
                }
            }
        }
    }
    out
}

fn changed(a: &Chunk, b: &Chunk) -> bool {
    a.text != b.text
        || a.representation != b.representation
        || a.valid_from != b.valid_from
        || a.valid_to != b.valid_to
        || a.labels != b.labels
}

fn corpus_drift(previous: &[Chunk], now: &[Chunk]) -> CorpusDrift {
    let then: HashMap<&str, &Chunk> = previous.iter().map(|c| (c.id.as_str(), c)).collect();
    let current: HashMap<&str, &Chunk> = now.iter().map(|c| (c.id.as_str(), c)).collect();
    let mut groups: BTreeMap<(String, String), DriftGroup> = BTreeMap::new();
    let key = |c: &Chunk| {
        (
            c.ingest_batch.clone().unwrap_or_else(|| "-".into()),
            c.domain.clone().unwrap_or_else(|| "-".into()),
        )
    };
    let mut d = CorpusDrift::default();
    for c in now {
        match then.get(c.id.as_str()) {
            None => {
                d.entered += 1;
                group(&mut groups, key(c)).entered.push(c.id.clone());
            }
            Some(p) if changed(p, c) => {
                d.changed += 1;
                group(&mut groups, key(c)).changed.push(c.id.clone());
            }
            Some(_) => {}
        }
    }
    for p in previous {
        if !current.contains_key(p.id.as_str()) {
            d.left += 1;
            group(&mut groups, key(p)).left.push(p.id.clone());
        }
    }
    for g in groups.values_mut() {
        g.entered.sort();
        g.changed.sort();
        g.left.sort();
    }
    d.groups = groups.into_values().collect();
    d
}

fn group(
    groups: &mut BTreeMap<(String, String), DriftGroup>,
    key: (String, String),
) -> &mut DriftGroup {
    groups.entry(key.clone()).or_insert_with(|| DriftGroup {
        batch: key.0,
        domain: key.1,
        ..DriftGroup::default()
    })
}

fn run_drift(run: &str, then: &[CorpusBatch], now: &[Chunk]) -> RunDrift {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for c in now {
        if let Some(b) = c.ingest_batch.as_deref() {
            *count.entry(b).or_default() += 1;
        }
    }
    let before: BTreeMap<&str, usize> = then.iter().map(|b| (b.name.as_str(), b.chunks)).collect();
    let names: BTreeSet<&str> = count.keys().chain(before.keys()).copied().collect();
    let mut batches = Vec::new();
    for name in names {
        let (t, n) = (before.get(name).copied(), count.get(name).copied());
        let change = match (t, n) {
            (None, Some(_)) => "entered",
            (Some(_), None) => "left",
            (Some(a), Some(b)) if a != b => "changed_size",
            _ => continue,
        };
        batches.push(BatchDrift {
            batch: name.to_owned(),
            change: change.into(),
            chunks_then: t.unwrap_or(0),
            chunks_now: n.unwrap_or(0),
        });
    }
    RunDrift {
        run: run.to_owned(),
        batches,
        chunks: None,
    }
}

/// Chunk-level drift against a run's snapshot: entered and changed grouped by today's
/// batch and domain, left by the batch and domain they had then.
fn snapshot_drift(then: &crate::snapshot::ChunkSnapshot, now: &[Chunk]) -> CorpusDrift {
    let before: HashMap<&str, &crate::snapshot::ChunkPrint> =
        then.chunks.iter().map(|c| (c.id.as_str(), c)).collect();
    let current: HashSet<&str> = now.iter().map(|c| c.id.as_str()).collect();
    let mut groups: BTreeMap<(String, String), DriftGroup> = BTreeMap::new();
    let key = |b: &Option<String>, d: &Option<String>| {
        (
            b.clone().unwrap_or_else(|| "-".into()),
            d.clone().unwrap_or_else(|| "-".into()),
        )
    };
    let mut d = CorpusDrift::default();
    for c in now {
        match before.get(c.id.as_str()) {
            None => {
                d.entered += 1;
                group(&mut groups, key(&c.ingest_batch, &c.domain))
                    .entered
                    .push(c.id.clone());
            }
            Some(p) if p.hash != crate::snapshot::content_hash(c) => {
                d.changed += 1;
                group(&mut groups, key(&c.ingest_batch, &c.domain))
                    .changed
                    .push(c.id.clone());
            }
            Some(_) => {}
        }
    }
    for p in &then.chunks {
        if !current.contains(p.id.as_str()) {
            d.left += 1;
            group(&mut groups, key(&p.batch, &p.domain))
                .left
                .push(p.id.clone());
        }
    }
    for g in groups.values_mut() {
        g.entered.sort();
        g.changed.sort();
        g.left.sort();
    }
    d.groups = groups.into_values().collect();
    d
}

/// The golden cases as questions for the aggregation check.
pub fn golden_questions(cases: &[Case]) -> Vec<(String, String, String)> {
    cases
        .iter()
        .map(|c| ("golden".to_owned(), c.id.clone(), c.query.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, doc: Option<&str>, text: &str) -> Chunk {
        Chunk {
            id: id.into(),
            doc_id: doc.map(str::to_owned),
            text: Some(text.into()),
            domain: Some("fiscal".into()),
            ingest_batch: Some("b1".into()),
            ..Chunk::default()
        }
    }

    fn input(chunks: Vec<Chunk>) -> CheckInput {
        CheckInput {
            sources: vec![None; chunks.len()],
            chunks,
            as_of: "2025-11-20".into(),
            gold_label: "GOLD".into(),
            ..CheckInput::default()
        }
    }

    #[test]
    fn exact_duplicates_within_and_across_sources() {
        let r = check(
            &input(vec![
                chunk("a", Some("D1"), "La cuota es fija."),
                chunk("b", Some("D1"), "la  cuota es FIJA."),
                chunk("c", Some("D2"), "Otro texto."),
                chunk("d", Some("D3"), "Otro   texto."),
            ]),
            &CorpusPolicy::default(),
        );
        assert_eq!(r.duplicates.len(), 2);
        assert_eq!(r.duplicates[0].verdict, "within_source");
        assert_eq!(r.duplicates[0].copies, vec!["b"]);
        assert_eq!(r.duplicates[1].verdict, "across_sources");
        assert_eq!((r.copies_within_source, r.redundant_across_sources), (1, 1));
        assert_eq!(r.vectors, 0);
    }

    #[test]
    fn near_duplicates_by_cosine_at_the_threshold() {
        let mut inp = input(vec![
            chunk("a", Some("D1"), "uno"),
            chunk("b", Some("D1"), "dos"),
            chunk("c", Some("D1"), "tres"),
        ]);
        inp.vectors = vec![
            Some(vec![1.0, 0.0]),
            Some(vec![0.96, 0.28]),
            Some(vec![0.0, 1.0]),
        ];
        let r = check(&inp, &CorpusPolicy::default());
        assert_eq!(r.duplicates.len(), 1);
        assert_eq!(r.duplicates[0].kind, "near");
        assert!((r.duplicates[0].min_cosine - 0.96).abs() < 1e-6);
        let strict = CorpusPolicy {
            near_duplicate_cosine: 0.97,
            ..CorpusPolicy::default()
        };
        assert!(check(&inp, &strict).duplicates.is_empty());
    }

    #[test]
    fn expired_and_superseded_chunks_are_obsolete() {
        let mut old = chunk("old", Some("D1"), "x");
        old.valid_to = Some("2025-11-13".into());
        let mut v1 = chunk("v1", Some("D2"), "y");
        v1.ingest_batch = Some("2025-09".into());
        v1.valid_from = Some("2025-01-01".into());
        let mut v2 = chunk("v2", Some("D2"), "z");
        v2.ingest_batch = Some("2025-11".into());
        v2.valid_from = Some("2025-11-01".into());
        // Re-embedded in a later batch, same version: not a new version.
        let mut edit = chunk("edit", Some("D2"), "e");
        edit.ingest_batch = Some("2025-12".into());
        edit.valid_from = Some("2025-01-01".into());
        let mut current = chunk("cur", Some("D3"), "w");
        current.valid_to = Some("2025-11-20".into());
        let r = check(
            &input(vec![old, v1, v2, current, edit]),
            &CorpusPolicy::default(),
        );
        let got: Vec<(&str, &str)> = r
            .obsolete
            .iter()
            .map(|o| (o.id.as_str(), o.reason.why()))
            .collect();
        assert_eq!(got, vec![("old", "expired"), ("v1", "superseded")]);
    }

    #[test]
    fn a_different_figure_for_a_gold_concept_is_suspicious() {
        let mut gold = chunk(
            "g",
            Some("D1"),
            "Gastos de difícil justificación: un 5 %, con un máximo de 2.000 € al año.",
        );
        gold.labels = vec!["GOLD".into()];
        let same = chunk("s1", Some("D2"), "con un máximo de 2.000 € anuales");
        let other = chunk("s2", Some("D3"), "con un máximo de 3.000 € anuales");
        let r = check(&input(vec![gold, same, other]), &CorpusPolicy::default());
        let c: Vec<&Suspicious> = r
            .suspicious
            .iter()
            .filter(|s| s.reason.why() == "contradicts_gold")
            .collect();
        assert_eq!(c.len(), 1, "{:?}", r.suspicious);
        assert_eq!(c[0].id, "s2");
        match &c[0].reason {
            SuspiciousReason::ContradictsGold {
                values,
                gold_values,
                gold_id,
                ..
            } => {
                assert_eq!(
                    (&values[..], &gold_values[..]),
                    (&["3000".to_string()][..], &["2000".to_string()][..])
                );
                assert_eq!(gold_id, "g");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_source_and_unexpected_batch_are_suspicious_and_policy_breaches_count() {
        let mut stray = chunk("stray", None, "x");
        stray.ingest_batch = Some("manual".into());
        let policy = CorpusPolicy {
            expected_batches: vec!["b1".into()],
            max_suspicious: Some(0),
            ..CorpusPolicy::default()
        };
        let r = check(&input(vec![chunk("a", Some("D"), "y"), stray]), &policy);
        let why: Vec<&str> = r.suspicious.iter().map(|s| s.reason.why()).collect();
        assert_eq!(why, vec!["no_source", "unexpected_batch"]);
        assert_eq!(
            r.breaches,
            vec![Breach {
                key: "corpus.max_suspicious".into(),
                limit: 0,
                found: 1
            }]
        );
    }

    #[test]
    fn drift_by_batch_and_domain_and_against_the_accepted_run() {
        let prev = vec![chunk("a", Some("D"), "1"), chunk("b", Some("D"), "2")];
        let mut c2 = chunk("c", Some("D"), "3");
        c2.ingest_batch = Some("b2".into());
        let mut inp = input(vec![chunk("a", Some("D"), "1 changed"), c2]);
        inp.previous = Some(prev);
        inp.accepted_batches = Some((
            "run1".into(),
            vec![CorpusBatch {
                name: "b1".into(),
                ingested_at: None,
                chunks: 2,
            }],
        ));
        let r = check(&inp, &CorpusPolicy::default());
        let d = r.drift.since_corpus.unwrap();
        assert_eq!((d.entered, d.changed, d.left), (1, 1, 1));
        assert_eq!(d.groups[0].batch, "b1");
        assert_eq!(d.groups[0].changed, vec!["a"]);
        assert_eq!(d.groups[0].left, vec!["b"]);
        assert_eq!(d.groups[1].entered, vec!["c"]);
        let rd = r.drift.since_accepted_run.unwrap();
        let got: Vec<(&str, &str)> = rd
            .batches
            .iter()
            .map(|b| (b.batch.as_str(), b.change.as_str()))
            .collect();
        assert_eq!(got, vec![("b1", "changed_size"), ("b2", "entered")]);
    }

    /// The blocked, screened search finds exactly the pairs, values and order of comparing
    /// every pair in order, on vectors built to sit near the threshold (and of two
    /// dimensions, one not a multiple of 8).
    #[test]
    fn blocked_near_pairs_equal_every_pair_compared_in_order() {
        fn reference(v: &[(usize, Vec<f32>)], t: f64) -> Vec<(usize, usize, f64)> {
            let mut out = Vec::new();
            for (x, (a, va)) in v.iter().enumerate() {
                for (b, vb) in &v[x + 1..] {
                    if va.len() != vb.len() {
                        continue;
                    }
                    let cs = exact_cosine(va, vb);
                    if cs >= t {
                        out.push((*a, *b, cs.min(1.0)));
                    }
                }
            }
            out
        }
        // A small linear congruential generator: deterministic, no dependency.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) as f64 / f64::from(1u32 << 31)) as f32 - 0.5
        };
        let unit = |v: Vec<f32>| {
            let n = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            v.iter()
                .map(|x| (f64::from(*x) / n) as f32)
                .collect::<Vec<f32>>()
        };
        let mut vectors = Vec::new();
        for (dim, count) in [(384usize, 300usize), (19, 90)] {
            let bases: Vec<Vec<f32>> = (0..12)
                .map(|_| (0..dim).map(|_| next()).collect())
                .collect();
            for k in 0..count {
                let base = &bases[k % bases.len()];
                // Noise of several sizes around each base: cosines from ~0.8 to ~1.
                let scale = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3][k % 6];
                let v: Vec<f32> = base.iter().map(|x| x + scale * next()).collect();
                vectors.push((vectors.len() * 2 + 1, unit(v)));
            }
        }
        for t in [0.8, 0.9, 0.95, 0.99, 0.999, 1.0] {
            let fast = near_pairs(&vectors, t);
            let slow = reference(&vectors, t);
            assert_eq!(fast, slow, "threshold {t}");
        }
        assert!(!near_pairs(&vectors, 0.95).is_empty());
        // Thresholds exactly at a pair's cosine keep it, as before.
        let slow = reference(&vectors, 0.9);
        let (a, b, cs) = slow[slow.len() / 2];
        let at = near_pairs(&vectors, cs);
        assert!(
            at.iter().any(|p| p.0 == a && p.1 == b),
            "pair at the threshold kept"
        );
    }

    #[test]
    fn drift_since_a_run_snapshot_is_by_chunk_batch_and_domain() {
        let mut before = vec![
            chunk("a", None, "one"),
            chunk("b", None, "two"),
            chunk("c", None, "three"),
        ];
        before[2].domain = Some("laboral".into());
        let snap = crate::snapshot::ChunkSnapshot::of(&before);
        let mut now = vec![chunk("a", None, "one"), chunk("b", None, "two, revised")];
        let mut d = chunk("d", None, "four");
        d.ingest_batch = Some("b2".into());
        now.push(d);
        let mut i = input(now);
        i.accepted_batches = Some(("run1".into(), Vec::new()));
        i.accepted_chunks = Some(snap);
        let r = check(&i, &CorpusPolicy::default());
        let c = r.drift.since_accepted_run.unwrap().chunks.unwrap();
        assert_eq!((c.entered, c.changed, c.left), (1, 1, 1));
        type Row<'a> = (&'a str, &'a str, &'a [String], &'a [String], &'a [String]);
        let g: Vec<Row<'_>> = c
            .groups
            .iter()
            .map(|g| {
                (
                    g.batch.as_str(),
                    g.domain.as_str(),
                    &g.entered[..],
                    &g.changed[..],
                    &g.left[..],
                )
            })
            .collect();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            g,
            vec![
                ("b1", "fiscal", &[][..], &s(&["b"])[..], &[][..]),
                ("b1", "laboral", &[][..], &[][..], &s(&["c"])[..]),
                ("b2", "fiscal", &s(&["d"])[..], &[][..], &[][..]),
            ]
        );
        // Without --since, max_drift counts this drift: 3 chunks moved, 2 allowed.
        let strict = CorpusPolicy {
            max_drift: Some(2),
            ..CorpusPolicy::default()
        };
        let r = check(&i, &strict);
        let b: Vec<_> = r
            .breaches
            .iter()
            .map(|b| (b.key.as_str(), b.found))
            .collect();
        assert_eq!(b, vec![("corpus.max_drift", 3)]);
        // With --since, that comparison decides (here: nothing moved).
        i.previous = Some(i.chunks.clone());
        assert!(check(&i, &strict).breaches.is_empty());
    }
}
