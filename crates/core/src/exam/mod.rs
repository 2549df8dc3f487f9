//! The acceptance exam (SPEC §2): per-case metrics at K, the Quality Score, the noise rule,
//! and the suite's verdict. One pure function, [`evaluate`], computes an [`ExamReport`] that
//! every renderer (human, JSON, Markdown, JUnit) prints without recomputing anything.
//!
//! Conventions (documented in `docs/exam.md` and tested):
//! - K is the case's `top_k`, else its domain's, else the policy's.
//! - Ranks are 1-based positions in the run's ordering for the case; a chunk absent from the
//!   results has no rank. A rank beyond K is still reported.
//! - Metrics use binary relevance: a result is relevant when it is an expected chunk.
//! - A list names each chunk once: the exam pipeline removed later occurrences of a repeated
//!   ID before the run got here ([`crate::retrieval`]), and the run says which
//!   ([`Run::duplicates`]); each case reports them in `duplicates_removed`.
//! - A case with no results scores 0 everywhere and fails with `no_results` (never dropped).
//! - Queries in the run that are not in the golden set are ignored and counted.
//! - Cases keep the golden set's order; means are plain arithmetic means over all cases.

pub mod calibrate;
pub mod noise;
pub mod quality;
pub mod stages;
pub mod verdict;

use crate::case::{Case, Corpus};
use crate::diagnosis::{self, Finding, NoiseFinding};
use crate::measure::Measure;
use crate::policy::Policy;
use crate::run::Run;
use crate::trec::ResRels;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};
pub use verdict::{CaseReason, StopReason, Verdict};

/// Everything the exam reads. The CLI builds it from files.
#[derive(Debug, Clone, Copy)]
pub struct ExamInput<'a> {
    pub cases: &'a [Case],
    pub run: &'a Run,
    pub corpus: Option<&'a Corpus>,
    pub policy: &'a Policy,
    /// Diagnosis notes keyed by case ID.
    pub notes: &'a BTreeMap<String, String>,
    /// The exam date (`YYYY-MM-DD`) for validity windows; `None` skips that check.
    pub as_of: Option<&'a str>,
}

/// The exam's result: computed once, rendered many ways. Its JSON is the documented wire
/// format (`docs/exam-json.md`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExamReport {
    pub verdict: Verdict,
    pub reasons: Vec<StopReason>,
    pub summary: Summary,
    pub policy: Policy,
    pub policy_fingerprint: String,
    /// `false` when the exam ran on the built-in default policy (no policy file, or one that
    /// restates the defaults): its thresholds were not calibrated on this suite
    /// (`veredicto calibrate`). Records written before this field read as `true`.
    #[serde(default = "yes")]
    pub policy_calibrated: bool,
    /// Warnings about the exam's inputs and about what the retriever returned, in a fixed
    /// order (the kinds' order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<ExamWarning>,
    pub golden_fingerprint: String,
    /// The exam date used for validity windows, when one was given.
    pub as_of: Option<String>,
    pub run: RunInfo,
    /// The model that embedded the queries, when the exam loaded one (`--model`,
    /// `--embedder`); absent when the queries came with their vectors or the retriever reads
    /// text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_embedder: Option<QueryEmbedder>,
    /// Per-stage summaries when the retriever has several stages (retrieve wide, then
    /// rerank): stage 1's recall at N is the reranker's ceiling. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageSummary>,
    /// Per-stage latency, only when asked for (`--timings`): it differs on every run, and
    /// the rest of the report is byte-identical for the same inputs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub latency: BTreeMap<String, crate::history::StageLatency>,
    /// The exactness check (`--exactness-check`): how the served (approximate) ranking
    /// compares with the exact ranking of the same engine. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exactness: Option<Exactness>,
    /// The stored-vector check (`--check-vectors N`): sampled chunks' stored vectors against
    /// the same chunks embedded by the query model. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_vectors: Option<StoredVectors>,
    /// The ingestion batches of the corpus (or index) the exam read, when it read one:
    /// a later comparison tells a batch that entered since this run from an older one by
    /// this list, not by the batch's name or clock.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batches: Vec<CorpusBatch>,
    /// Per case, when the policy declares a `[boost]`: the vector-only and the boosted top
    /// K, and which expected (and gold) chunks emerge only thanks to the boost. The cases'
    /// results are those of the boosted order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boost: Vec<crate::boost::BoostCase>,
    /// When the retriever is a fusion of arms (`fusion:METHOD` with `--arm`): recall at K
    /// of each arm and of the fusion, and the cases only one arm finds. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fusion: Option<FusionReport>,
    pub cases: Vec<CaseResult>,
}

/// The stage metrics of a fusion retriever: what each arm found on its own, and what the
/// fused ranking keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FusionReport {
    /// The fusion, as written after `fusion:` (`rrf?k=60`).
    pub method: String,
    /// Mean recall at K (each case's K) of the fused ranking over the cases with expected
    /// chunks.
    pub recall: Option<f64>,
    /// Each arm, in arm order.
    pub arms: Vec<FusionArm>,
}

/// One arm of a fusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FusionArm {
    /// The arm's URI, without credentials.
    pub uri: String,
    /// Its backend (`index`, `run-file`, …).
    pub kind: String,
    /// Mean recall at K (each case's K) of the arm's own ranking over the cases with
    /// expected chunks.
    pub recall: Option<f64>,
    /// The cases (ID order) with expected chunks in this arm's top K and in no other arm's.
    pub only_found: Vec<String>,
    /// Time spent in the arm, only when asked for (`--timings`): it differs on every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<ArmLatency>,
}

/// An arm's time over the exam.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmLatency {
    /// Calls to the arm (one per batch when it batches, else one per case).
    pub calls: usize,
    /// Cases it answered.
    pub cases: usize,
    /// Total milliseconds in the arm.
    pub total_ms: f64,
    /// `total_ms` per case.
    pub ms_per_case: f64,
}

/// What one arm of a fusion answered: per case ID, the 1-based rank at which it found each
/// expected chunk (in the case's order; `None`: not found).
pub type ArmRanks = BTreeMap<String, Vec<Option<usize>>>;

impl FusionReport {
    /// The section's figures: each arm's recall at each case's K (`cases`' `top_k`) from
    /// its own ranks, the fusion's from the report's ranks of the expected chunks, and the
    /// cases only one arm finds within K. `arms` are `(uri, kind, ranks, latency)`, in
    /// arm order.
    pub fn from_ranks(
        method: &str,
        arms: Vec<(String, String, ArmRanks, Option<ArmLatency>)>,
        cases: &[CaseResult],
    ) -> FusionReport {
        let within = |ranks: &[Option<usize>], k: usize| {
            ranks.iter().filter(|r| r.is_some_and(|r| r <= k)).count()
        };
        let recall = |ranks: &dyn Fn(&CaseResult) -> Vec<Option<usize>>| {
            let per_case: Vec<f64> = cases
                .iter()
                .filter(|c| !c.expected.is_empty())
                .map(|c| within(&ranks(c), c.top_k as usize) as f64 / c.expected.len() as f64)
                .collect();
            (!per_case.is_empty()).then(|| per_case.iter().sum::<f64>() / per_case.len() as f64)
        };
        let arm_ranks = |a: &ArmRanks, c: &CaseResult| {
            a.get(&c.id)
                .cloned()
                .unwrap_or_else(|| vec![None; c.expected.len()])
        };
        let finds = |a: &ArmRanks, c: &CaseResult| within(&arm_ranks(a, c), c.top_k as usize) > 0;
        let fused = recall(&|c: &CaseResult| c.expected.iter().map(|e| e.rank).collect());
        let out = arms
            .iter()
            .enumerate()
            .map(|(i, (uri, kind, ranks, latency))| FusionArm {
                uri: uri.clone(),
                kind: kind.clone(),
                recall: recall(&|c: &CaseResult| arm_ranks(ranks, c)),
                only_found: cases
                    .iter()
                    .filter(|c| finds(ranks, c))
                    .filter(|c| {
                        arms.iter()
                            .enumerate()
                            .all(|(j, other)| j == i || !finds(&other.2, c))
                    })
                    .map(|c| c.id.clone())
                    .collect(),
                latency: latency.clone(),
            })
            .collect();
        FusionReport {
            method: method.to_owned(),
            recall: fused,
            arms: out,
        }
    }
}

fn yes() -> bool {
    true
}

/// The query embedder of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryEmbedder {
    /// The model's name (its folder, or the model a server was asked for).
    pub name: String,
    /// The fingerprint of everything that determines its vectors (`sha256:…`): the same
    /// hash an index built with it records.
    pub fingerprint: String,
}

/// A warning about the exam's inputs or about what the retriever returned. Renderers word
/// it; JSON carries it tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExamWarning {
    /// The policy names a gold label, but the exam had no corpus (nor an index) to read
    /// labels from, and no case says `gold: true`: no case can be gold, so a failing case
    /// that should stop the suite may be excused by a note.
    GoldUnknown { gold_label: String },
    /// The retriever returned fewer results than asked for `cases` (in case order, each with
    /// what was asked and what came back); `cause` says why when the retriever can tell.
    /// Added after the exam by the retriever pipeline (a run file is never short).
    ShortResults {
        cases: Vec<ShortCase>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<ShortCause>,
    },
    /// Listed results of evidence cases that are located in no document (no `doc_id`,
    /// `start` and `end` from the retriever or the corpus): they hold no evidence.
    UnlocatedResults { cases: usize, results: usize },
    /// Golden cases that are drafts no person accepted (`origin: "draft"`), examined because
    /// the exam was told to (`--allow-drafts`): their results stand on a model's word.
    UnacceptedDrafts { cases: Vec<String> },
}

/// One case for which the retriever returned fewer results than asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShortCase {
    pub case: String,
    /// Results asked (the exam's depth, at least the case's K).
    pub asked: usize,
    /// Results returned.
    pub returned: usize,
}

/// Why a retriever returned fewer results than asked, as far as it can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShortCause {
    /// The rows the retriever searches (its table under the URI's condition) are fewer
    /// than asked: a short answer is all there is.
    FewerRows { rows: usize, asked: usize },
    /// pgvector: the served query scans the HNSW index `index`, which yields at most
    /// `hnsw.ef_search` candidates (before any `where` condition drops some).
    /// `iterative_scan`: the extension (`version`) has iterative index scans (0.8.0 and
    /// later), which go on scanning until the limit is reached.
    HnswEfSearch {
        index: String,
        ef_search: u32,
        asked: usize,
        version: String,
        iterative_scan: bool,
    },
    /// pgvector: the served query scans the IVFFlat index `index`, which only looks into
    /// `ivfflat.probes` of its lists.
    IvfflatProbes {
        index: String,
        probes: u32,
        asked: usize,
        version: String,
    },
}

/// How an engine answers the served (approximate) query, as its planner says (pgvector:
/// `EXPLAIN` of the served statement).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedPlan {
    /// The ANN index the served query scans; `None`: it scans none (a sequential scan and a
    /// sort), so the served ranking is already the exact one.
    pub ann_index: Option<String>,
    /// That index's access method (`hnsw`, `ivfflat`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

impl ServedPlan {
    /// Whether the served query is exact (scans no ANN index).
    pub fn exact(&self) -> bool {
        self.ann_index.is_none()
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The exactness check over the suite: the served ranking against the engine's exact one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exactness {
    /// Cases compared (those for which the exact search answered).
    pub cases: usize,
    /// Mean over the cases of |served top K ∩ exact top K| / |exact top K| (each case's K):
    /// the ANN index's recall at K against exact search.
    pub ann_recall_at_k: f64,
    /// Failing cases in which the ANN index lost at least one expected chunk that the
    /// exact search ranks inside the top K.
    pub failing_lost_by_ann: usize,
    /// Failing cases whose exact ranking also misses an expected chunk in the top K (recall
    /// below the floor, or no results): embedding, chunking, labels, not the ANN index.
    /// Cases whose exact misses are all chunks the collection does not hold are counted in
    /// `failing_missing_chunks` instead.
    pub failing_under_exact_too: usize,
    /// Failing cases whose exact ranking misses only expected chunks that the collection
    /// does not hold (asked by ID): neither the ANN index nor the embedding.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failing_missing_chunks: usize,
    /// How the engine answers the served query, when it can say: with no ANN index in the
    /// plan the served ranking is already exact and the ANN recall above measures nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_plan: Option<ServedPlan>,
    /// The expected chunks lost by the ANN index, in case order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<AnnLoss>,
}

/// The stored-vector check: how close a live retriever's stored vectors are to the same
/// chunks' texts embedded by the model that embeds the exam's queries. A table embedded with
/// another model (or left behind by a model upgrade) has a low mean cosine, or vectors of
/// another dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredVectors {
    /// What holds the vectors, as messages name it (``table `kb` ``, ``collection `kb` ``).
    pub collection: String,
    /// The query model (its name) that re-embedded the chunks.
    pub query_model: String,
    /// Chunks sampled (from the corpus, in the documented order).
    pub sampled: usize,
    /// Sampled chunks whose stored vector the retriever did not return (it does not hold
    /// them).
    pub not_held: usize,
    /// Chunks compared (stored vector of the query model's dimension).
    pub compared: usize,
    /// Mean cosine between stored and recomputed vectors over the compared chunks.
    pub mean_cosine: f64,
    /// The lowest cosine, with its chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowest: Option<ChunkCosine>,
    /// Compared chunks whose cosine is below `threshold`.
    pub below: usize,
    /// The cosine under which a stored vector is not the query model's.
    pub threshold: f64,
    /// Chunks whose stored vector has another dimension than the query model's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_dimension: Vec<String>,
    /// Whether the store looks embedded with another model (a vector of another dimension,
    /// or a mean cosine below `threshold`).
    pub other_model: bool,
}

/// A chunk and a cosine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkCosine {
    pub chunk: String,
    pub cosine: f64,
}

/// One expected chunk that the ANN index lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnnLoss {
    pub case: String,
    pub chunk: String,
    /// Its rank under exact search (inside the top K).
    pub exact_rank: usize,
    /// Its rank in the served results, `None` when not served within the depth.
    pub served_rank: Option<usize>,
}

/// One ingestion batch present in the corpus an exam read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorpusBatch {
    /// The batch name (`ingest_batch`, or the index's `--batch-label`).
    pub name: String,
    /// When it was ingested (RFC 3339), when the source records it (the index does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingested_at: Option<String>,
    /// Chunks of the corpus that belong to it.
    pub chunks: usize,
}

/// One retrieval stage's quality at its own cut-off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    /// `retrieval` (stage 1, the vector index) or `rerank`.
    pub stage: String,
    /// The stage's cut-off: N candidates for stage 1, K for the final list.
    pub k: u32,
    pub mean_recall: f64,
    pub mrr: f64,
    pub mean_ndcg: f64,
    /// Cases with every expected chunk within the cut-off.
    pub full_recall_cases: usize,
}

/// What the run held besides the golden set's queries.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub name: String,
    /// Queries in the run.
    pub queries: usize,
    /// Queries in the run that are not in the golden set (ignored).
    pub ignored_queries: usize,
    /// Their IDs, sorted (at most 20 listed).
    pub ignored_query_ids: Vec<String>,
}

/// Suite-level aggregates.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub cases: usize,
    pub gold_cases: usize,
    /// Mean Quality Score, 0..100.
    pub mean_quality: f64,
    pub mean_recall: f64,
    /// Mean reciprocal rank at K.
    pub mrr: f64,
    pub mean_precision: f64,
    pub mean_ndcg: f64,
    pub mean_average_precision: f64,
    /// Fraction of cases with at least one expected chunk in the top-K.
    pub hit_rate: f64,
    pub failing: usize,
    pub failing_gold: usize,
    /// Failing non-gold cases that have a note.
    pub failing_documented: usize,
    /// Most non-gold failing cases the policy tolerates.
    pub max_failing: usize,
    /// Cases whose noise exceeds their ceiling.
    pub over_noise: usize,
    /// Cases whose noise is undefined (no expected chunk in the top-K, or no scores).
    pub noise_undefined: usize,
    /// Failing cases whose only reason is structural noise (noise that a perfect ranking
    /// of the case would also have). Records written before this field read 0.
    #[serde(default)]
    pub structural_only: usize,
    /// Of those, gold cases.
    #[serde(default)]
    pub structural_only_gold: usize,
    /// Failing cases per reason.
    pub by_reason: BTreeMap<String, usize>,
    /// Number of cases per noise value (cases with undefined noise are not counted).
    pub noise_distribution: BTreeMap<u32, usize>,
    /// Mean of each extra measure of the policy, by canonical name.
    pub measures: BTreeMap<String, f64>,
    /// Duplicate results removed from the retriever's answers, over all cases (each later
    /// occurrence of a chunk ID in one case's list counts once; the first is kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicates_removed: usize,
    /// Cases whose answer had duplicates removed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cases_with_duplicates: usize,
    /// Cases the retriever failed for (within `--max-retriever-failures`): they fail with
    /// `no_results`, and say nothing about the knowledge base. Filled in by the exam
    /// pipeline, which sees the retriever's errors.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retriever_failures: usize,
}

/// One case's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    pub id: String,
    pub query: String,
    pub gold: bool,
    pub domain: Option<String>,
    pub tags: Vec<String>,
    pub top_k: u32,
    /// Results the run holds for this case (after duplicates were removed).
    pub retrieved: usize,
    /// The duplicate chunk IDs removed from the retriever's answer for this case (the first
    /// occurrence of each is kept, ranks close up); absent when there were none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates_removed: Option<crate::retrieval::RemovedDuplicates>,
    pub recall: f64,
    pub quality: f64,
    pub precision: f64,
    pub reciprocal_rank: f64,
    pub ndcg: f64,
    pub average_precision: f64,
    pub noise: Option<u32>,
    pub noise_threshold: Option<f64>,
    /// `⌊noise_ceiling × K⌋` for this case.
    pub max_noise: u32,
    pub recall_floor: f64,
    pub passed: bool,
    pub reasons: Vec<CaseReason>,
    pub documented: bool,
    pub note: Option<String>,
    pub expected: Vec<ExpectedChunk>,
    /// Extra measures of the policy, by canonical name.
    pub measures: BTreeMap<String, f64>,
    /// Why the case is over its noise ceiling (structural or ranking), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_finding: Option<NoiseFinding>,
    /// Diagnosis findings in checklist order: the full checklist for failing cases; for
    /// passing ones only expected chunks missing from the corpus.
    pub diagnosis: Vec<Finding>,
    /// Per evidence item of the case, in the golden set's order: where it came out. Empty
    /// for cases that name chunk IDs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<crate::evidence::EvidenceResult>,
}

impl CaseResult {
    /// Whether an expected chunk or evidence item that counts (grade at least
    /// `relevance_level`) is retrieved within the case's top K.
    pub fn hit(&self, relevance_level: u32) -> bool {
        self.expected
            .iter()
            .any(|e| e.in_top_k && e.grade >= relevance_level)
            || self
                .evidence
                .iter()
                .any(|e| e.grade >= relevance_level && e.in_top_k(self.top_k, self.retrieved))
    }

    /// The case fails, and only because of noise that a perfect ranking of it would also
    /// have ([`CaseReason::StructuralNoise`]): its recall passes, its K exceeds what its
    /// expected list can fill under the ceiling.
    pub fn fails_on_structural_noise_only(&self) -> bool {
        !self.passed && self.reasons == [CaseReason::StructuralNoise]
    }
}

/// Where one expected chunk came out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExpectedChunk {
    pub id: String,
    /// 1-based rank in the run's list; `None` when absent.
    pub rank: Option<usize>,
    pub score: Option<f64>,
    /// The chunk carries the gold label in the corpus.
    pub gold: bool,
    pub in_top_k: bool,
    /// Whether the corpus has this chunk; `None` without a corpus.
    pub in_corpus: Option<bool>,
    /// Its grade in the golden set (1 unless given; written out only when not 1).
    #[serde(
        default = "crate::evidence::default_grade",
        skip_serializing_if = "crate::evidence::is_default_grade"
    )]
    pub grade: u32,
}

/// The measures the exam always reports, at one cut-off K.
struct CoreMeasures {
    recall: Measure,
    precision: Measure,
    rr: Measure,
    ndcg: Measure,
    ap: Measure,
}

impl CoreMeasures {
    fn at(k: u32) -> Self {
        CoreMeasures {
            recall: Measure::recall_at(k),
            precision: Measure::precision_at(k),
            rr: Measure::reciprocal_rank_at(k),
            ndcg: Measure::ndcg_at(k),
            ap: Measure::average_precision_at(k),
        }
    }
}

/// Runs the exam. The policy must have been validated ([`Policy::validate`]); extra
/// measures that do not parse are skipped.
pub fn evaluate(input: ExamInput<'_>) -> ExamReport {
    let mut unlocated = Unlocated::default();
    let mut report = evaluate_counting(input, &mut unlocated);
    if unlocated.results > 0 {
        report.warnings.push(ExamWarning::UnlocatedResults {
            cases: unlocated.cases,
            results: unlocated.results,
        });
    }
    report
}

/// Listed results of evidence cases that are not located in any document.
#[derive(Default)]
struct Unlocated {
    cases: usize,
    results: usize,
}

fn evaluate_counting(input: ExamInput<'_>, unlocated: &mut Unlocated) -> ExamReport {
    let policy = input.policy;
    let extra: Vec<Measure> = policy
        .measures
        .iter()
        .filter_map(|m| m.parse().ok())
        .collect();
    let mut by_k: BTreeMap<u32, CoreMeasures> = BTreeMap::new();
    let cases: Vec<CaseResult> = input
        .cases
        .iter()
        .map(|case| {
            let th = policy.thresholds(case.domain.as_deref());
            let k = case.top_k.unwrap_or(th.top_k);
            let measures = by_k.entry(k).or_insert_with(|| CoreMeasures::at(k));
            evaluate_case(case, &input, measures, &extra, unlocated)
        })
        .collect();

    let summary = summarise(&cases, policy, &extra);
    let verdict = verdict::decide(&summary, policy);
    let reasons = stop_reasons(&cases, &summary, policy);
    debug_assert_eq!(verdict == Verdict::Stop, !reasons.is_empty());

    let golden: HashSet<&str> = input.cases.iter().map(|c| c.id.as_str()).collect();
    let ignored: Vec<String> = input
        .run
        .queries
        .keys()
        .filter(|q| !golden.contains(q.as_str()))
        .cloned()
        .collect();
    ExamReport {
        verdict,
        reasons,
        summary,
        policy: policy.clone(),
        policy_fingerprint: policy.fingerprint(),
        policy_calibrated: *policy != Policy::default(),
        warnings: warnings(&input),
        golden_fingerprint: crate::fingerprint::sha256_json(&input.cases),
        as_of: input.as_of.map(str::to_owned),
        run: RunInfo {
            name: input.run.name.clone(),
            queries: input.run.queries.len(),
            ignored_queries: ignored.len(),
            ignored_query_ids: ignored.into_iter().take(20).collect(),
        },
        query_embedder: None,
        stages: Vec::new(),
        latency: BTreeMap::new(),
        exactness: None,
        stored_vectors: None,
        batches: input.corpus.map(Corpus::batches).unwrap_or_default(),
        boost: Vec::new(),
        fusion: None,
        cases,
    }
}

fn evaluate_case(
    case: &Case,
    input: &ExamInput<'_>,
    m: &CoreMeasures,
    extra: &[Measure],
    unlocated: &mut Unlocated,
) -> CaseResult {
    let policy = input.policy;
    let th = policy.thresholds(case.domain.as_deref());
    let k = case.top_k.unwrap_or(th.top_k);
    let results = input.run.results(&case.id);
    let expected: BTreeSet<&str> = case.expected.iter().map(String::as_str).collect();
    let level = policy.relevance_level;
    let top_len = results.len().min(k as usize);

    // Evidence cases: items covered by the spans of the ranked chunks.
    let span_of = |id: &str| input.run.span_of(id, input.corpus);
    let judged_evidence = case.by_evidence().then(|| {
        crate::evidence::judge(&crate::evidence::JudgeInput {
            items: &case.evidence,
            results,
            known: input.run.known_ranks.get(&case.id),
            span_of: &span_of,
            index: input.corpus.map(Corpus::spans),
            k,
            coverage: policy.evidence_coverage,
            relevance_level: level,
        })
    });
    if let Some(ev) = &judged_evidence {
        if ev.unlocated > 0 {
            unlocated.cases += 1;
            unlocated.results += ev.unlocated;
        }
    }

    // Per listed result: whether it is an expected chunk that counts (or, for evidence, a
    // chunk at a counted item's rank), for the noise rule.
    let (judged, relevant) = match &judged_evidence {
        Some(ev) => {
            let opts = crate::trec::EvalOptions {
                relevance_level: i64::from(level),
                ..Default::default()
            };
            (
                ResRels::from_rels(ev.rels.clone(), &ev.levels, &opts),
                ev.at_item_rank.clone(),
            )
        }
        None => chunk_judgements(case, results, &expected, level),
    };
    let (recall, precision, reciprocal_rank) = match &judged_evidence {
        Some(ev) => (ev.recall, ev.precision, ev.reciprocal_rank),
        None => (
            m.recall.compute(&judged),
            m.precision.compute(&judged),
            m.rr.compute(&judged),
        ),
    };
    let ndcg = m.ndcg.compute(&judged);
    let average_precision = m.ap.compute(&judged);
    let quality = quality::quality_score(recall, th.recall_floor);

    let top: Vec<(bool, Option<f64>)> = results[..top_len]
        .iter()
        .zip(&relevant)
        .map(|(r, &rel)| (rel, r.score))
        .collect();
    let noise = noise::noise(&top);
    let max_noise = noise::max_noise(th.noise_ceiling, k);

    let gold_label = policy.gold_label.as_str();
    let expected_chunks: Vec<ExpectedChunk> = case
        .expected
        .iter()
        .map(|id| {
            let found = input.run.rank_of(&case.id, id);
            let chunk = input.corpus.and_then(|c| c.get(id));
            ExpectedChunk {
                id: id.clone(),
                rank: found.map(|(r, _)| r),
                score: found.and_then(|(_, s)| s),
                gold: chunk.is_some_and(|c| c.has_label(gold_label)),
                in_top_k: found.is_some_and(|(r, _)| r <= k as usize && r <= results.len()),
                in_corpus: input.corpus.map(|_| chunk.is_some()),
                grade: case.grade_of(id),
            }
        })
        .collect();
    // Evidence cases are gold when a chunk of the corpus that holds a counted item carries
    // the gold label.
    let evidence_gold = judged_evidence.as_ref().is_some_and(|ev| {
        ev.items.iter().filter(|i| i.grade >= level).any(|i| {
            i.chunks.iter().any(|h| {
                input
                    .corpus
                    .and_then(|c| c.get(&h.id))
                    .is_some_and(|c| c.has_label(gold_label))
            })
        })
    });
    let gold = case.gold || expected_chunks.iter().any(|e| e.gold) || evidence_gold;
    // What a perfect ranking of the case would put first, for the structural-noise check.
    let (counted, counted_ranks) = match &judged_evidence {
        Some(ev) => (ev.needed_chunks, ev.ranks_in_top_k.clone()),
        None => {
            let mut ids: Vec<&str> = expected_chunks
                .iter()
                .filter(|e| e.grade >= level)
                .map(|e| e.id.as_str())
                .collect();
            ids.sort_unstable();
            ids.dedup();
            let mut ranks: Vec<usize> = expected_chunks
                .iter()
                .filter(|e| e.in_top_k && e.grade >= level)
                .filter_map(|e| e.rank)
                .collect();
            ranks.sort_unstable();
            ranks.dedup();
            (ids.len() as u32, ranks)
        }
    };

    let mut reasons = Vec::new();
    if results.is_empty() {
        reasons.push(CaseReason::NoResults);
    }
    if recall < th.recall_floor {
        reasons.push(CaseReason::Recall);
    }
    let over_noise = noise.is_some_and(|(n, _)| n > max_noise);
    let passed = reasons.is_empty() && !over_noise;
    let note = input
        .notes
        .get(&case.id)
        .filter(|n| !n.trim().is_empty())
        .cloned();
    let measures = extra
        .iter()
        .map(|x| (x.to_string(), x.compute(&judged)))
        .collect();
    let view = diagnosis::CaseView {
        case,
        passed,
        k,
        results,
        expected: &expected_chunks,
        corpus: input.corpus,
        as_of: input.as_of,
        noise: noise.map(|(n, _)| n),
        max_noise,
        noise_ceiling: th.noise_ceiling,
        counted,
        counted_ranks,
        evidence: judged_evidence.as_ref(),
        evidence_coverage: policy.evidence_coverage,
        relevance_level: level,
    };
    let diagnosis = diagnosis::diagnose_case(&view);
    let noise_finding = diagnosis::classify_noise(&view);
    // Noise that a perfect ranking of the case would also have is its own reason.
    if over_noise {
        reasons.push(match noise_finding {
            Some(NoiseFinding::Structural { .. }) => CaseReason::StructuralNoise,
            _ => CaseReason::Noise,
        });
    }
    CaseResult {
        id: case.id.clone(),
        query: case.query.clone(),
        gold,
        domain: case.domain.clone(),
        tags: case.tags.clone(),
        top_k: k,
        retrieved: results.len(),
        duplicates_removed: input.run.duplicates.get(&case.id).cloned(),
        recall,
        quality,
        precision,
        reciprocal_rank,
        ndcg,
        average_precision,
        noise: noise.map(|(n, _)| n),
        noise_threshold: noise.map(|(_, t)| t),
        max_noise,
        recall_floor: th.recall_floor,
        passed,
        documented: note.is_some(),
        note,
        reasons,
        expected: expected_chunks,
        measures,
        noise_finding,
        diagnosis,
        evidence: judged_evidence.map(|ev| ev.items).unwrap_or_default(),
    }
}

/// The judgements of a case that names chunk IDs: binary relevance (as trec_eval with every
/// expected chunk at level 1) unless the golden set grades its chunks or the policy's
/// relevance level is not 1, then the grades as trec_eval's levels. Also, per listed result,
/// whether it is an expected chunk that counts.
fn chunk_judgements(
    case: &Case,
    results: &[crate::run::Retrieved],
    expected: &BTreeSet<&str>,
    level: u32,
) -> (ResRels, Vec<bool>) {
    let counts = |id: &str| expected.contains(id) && case.grade_of(id) >= level;
    let relevant: Vec<bool> = results.iter().map(|r| counts(&r.id)).collect();
    if case.grades.is_empty() && level == 1 {
        return (ResRels::binary(&relevant, expected.len()), relevant);
    }
    let rels: Vec<i32> = results
        .iter()
        .map(|r| {
            if expected.contains(r.id.as_str()) {
                case.grade_of(&r.id) as i32
            } else {
                0
            }
        })
        .collect();
    let mut levels: Vec<(i32, u64)> = expected
        .iter()
        .map(|id| (case.grade_of(id) as i32, 1))
        .collect();
    let nonrel = rels.iter().filter(|&&r| r == 0).count() as u64;
    if nonrel > 0 {
        levels.push((0, nonrel));
    }
    let opts = crate::trec::EvalOptions {
        relevance_level: i64::from(level),
        ..Default::default()
    };
    (ResRels::from_rels(rels, &levels, &opts), relevant)
}

/// Why the suite stops, in [`StopReason`]'s order; empty exactly when
/// [`verdict::decide`] accepts.
///
/// The cases that fail on structural noise alone ([`CaseResult::fails_on_structural_noise_only`])
/// are set apart: `gold_case_failed`, `undocumented_failures` and `too_many_failures` count
/// only the other failing cases, and `structural_noise` applies when the set-apart cases
/// stop the suite by the same rules (a gold one, an undocumented one while notes are
/// required, or non-gold failures over the tolerance counting them). Every failing case is
/// still counted by the rule that decides the verdict: this only says which cases stop it.
fn stop_reasons(cases: &[CaseResult], summary: &Summary, policy: &Policy) -> Vec<StopReason> {
    let mut reasons = Vec::new();
    if summary.mean_quality < policy.min_mean_quality {
        reasons.push(StopReason::MeanQuality);
    }
    let failing = cases.iter().filter(|c| !c.passed);
    let (structural, other): (Vec<&CaseResult>, Vec<&CaseResult>) =
        failing.partition(|c| c.fails_on_structural_noise_only());
    let other_non_gold = other.iter().filter(|c| !c.gold).count();
    if other.iter().any(|c| c.gold) {
        reasons.push(StopReason::GoldCaseFailed);
    }
    if policy.require_notes && other.iter().any(|c| !c.gold && !c.documented) {
        reasons.push(StopReason::UndocumentedFailures);
    }
    if other_non_gold > summary.max_failing {
        reasons.push(StopReason::TooManyFailures);
    }
    let structural_non_gold = structural.iter().filter(|c| !c.gold).count();
    let failing_non_gold = summary.failing - summary.failing_gold;
    if structural.iter().any(|c| c.gold)
        || (policy.require_notes && structural.iter().any(|c| !c.gold && !c.documented))
        || (structural_non_gold > 0 && failing_non_gold > summary.max_failing)
    {
        reasons.push(StopReason::StructuralNoise);
    }
    reasons
}

/// The input warnings, in [`ExamWarning`]'s order.
fn warnings(input: &ExamInput<'_>) -> Vec<ExamWarning> {
    let mut out = Vec::new();
    if input.corpus.is_none() && !input.cases.iter().any(|c| c.gold) {
        out.push(ExamWarning::GoldUnknown {
            gold_label: input.policy.gold_label.clone(),
        });
    }
    out
}

fn mean(values: impl Iterator<Item = f64>, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        values.sum::<f64>() / n as f64
    }
}

fn summarise(cases: &[CaseResult], policy: &Policy, extra: &[Measure]) -> Summary {
    let n = cases.len();
    let failing: Vec<&CaseResult> = cases.iter().filter(|c| !c.passed).collect();
    let mut by_reason = BTreeMap::new();
    for c in &failing {
        for r in &c.reasons {
            *by_reason.entry(r.as_str().to_owned()).or_insert(0) += 1;
        }
    }
    let mut noise_distribution = BTreeMap::new();
    for c in cases {
        if let Some(nz) = c.noise {
            *noise_distribution.entry(nz).or_insert(0) += 1;
        }
    }
    let measures = extra
        .iter()
        .map(|m| {
            let name = m.to_string();
            let v = mean(cases.iter().map(|c| c.measures[&name]), n);
            (name, v)
        })
        .collect();
    Summary {
        cases: n,
        gold_cases: cases.iter().filter(|c| c.gold).count(),
        mean_quality: mean(cases.iter().map(|c| c.quality), n),
        mean_recall: mean(cases.iter().map(|c| c.recall), n),
        mrr: mean(cases.iter().map(|c| c.reciprocal_rank), n),
        mean_precision: mean(cases.iter().map(|c| c.precision), n),
        mean_ndcg: mean(cases.iter().map(|c| c.ndcg), n),
        mean_average_precision: mean(cases.iter().map(|c| c.average_precision), n),
        hit_rate: mean(
            cases
                .iter()
                .map(|c| f64::from(u8::from(c.hit(policy.relevance_level)))),
            n,
        ),
        failing: failing.len(),
        failing_gold: failing.iter().filter(|c| c.gold).count(),
        failing_documented: failing.iter().filter(|c| !c.gold && c.documented).count(),
        max_failing: verdict::max_failing(policy.max_failing_fraction, n),
        over_noise: cases
            .iter()
            .filter(|c| c.noise.is_some_and(|nz| nz > c.max_noise))
            .count(),
        noise_undefined: cases.iter().filter(|c| c.noise.is_none()).count(),
        structural_only: failing
            .iter()
            .filter(|c| c.fails_on_structural_noise_only())
            .count(),
        structural_only_gold: failing
            .iter()
            .filter(|c| c.gold && c.fails_on_structural_noise_only())
            .count(),
        by_reason,
        noise_distribution,
        measures,
        duplicates_removed: cases
            .iter()
            .filter_map(|c| c.duplicates_removed.as_ref())
            .map(|d| d.count)
            .sum(),
        cases_with_duplicates: cases
            .iter()
            .filter(|c| c.duplicates_removed.is_some())
            .count(),
        retriever_failures: 0,
    }
}
