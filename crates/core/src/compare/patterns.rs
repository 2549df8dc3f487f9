//! Cross-run diagnosis (SPEC §4, seed 000 "leer los patrones de fallo: el diagnóstico
//! epidemiológico"): the failure patterns of a history of runs, each with what it saw and
//! the cause the seed's symptom → chapter table points to.
//!
//! | pattern | symptom | suggested cause |
//! |---|---|---|
//! | [`Pattern::DomainFailing`] | all or most cases of one domain fail while the others pass | ingestion / classification of that domain (chapters 6–9) |
//! | [`Pattern::NumericFailing`] | the failing cases are (almost) only `numeric` / table cases | chunking of tables, missing descriptions (chapters 10–12) |
//! | [`Pattern::GoldFailing`] | the failing cases are (almost) only gold cases | authority layer: the gold label and the boost calibration |
//! | [`Pattern::ChunksMissing`] | a case that passed in the last accepted run fails now because the retriever no longer holds an expected chunk | chunks deleted or re-keyed since (rows deleted, a partial re-index) |
//! | [`Pattern::IngestionRegression`] | a case that passed in the last accepted run fails now, and nothing entered its domain | regression by the latest ingestion when a newcomer outranks the old; otherwise what else changed |
//! | [`Pattern::DomainIngestionRegression`] | the same, but new chunks entered the case's own domain | the new chunks of that domain and their classification |
//! | [`Pattern::SlowDecline`] | mean recall / QS falls slowly over the last runs (significant negative slope, no single big step, several cases) | stale sources, validity windows not updated |
//! | [`Pattern::NoiseHigh`] | cases pass recall but exceed the noise ceiling, or mean noise rises | generic descriptions, mixed chunks, loose facets (chapters 12, 10, 9) |
//!
//! Thresholds are in [`DiagnoseOptions`]; definitions in `docs/compare.md`.
//!
//! Case failures are **recall** failures (`recall` or `no_results` among the case's
//! reasons): a case failing only on noise belongs to the noise pattern. A regression is a
//! case that passed (fully) in the last accepted run and fails recall now.

use super::calibration::{calibrate_noise, NoiseCalibration};
use super::cases::{distinct, gone_from, outrankers, CaseMetrics};
use super::compat::{index, same_case};
use super::rng::derive_seed;
use super::stats::{self, Direction, Method};
use super::Metric;
use crate::case::Corpus;
use crate::exam::{CaseReason, CaseResult, ExamReport, ExpectedChunk, Verdict};
use crate::history::RecordedRun;
use crate::snapshot::ChunkSnapshot;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The cross-run failure patterns, in the order of seed 000's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    DomainFailing,
    NumericFailing,
    GoldFailing,
    ChunksMissing,
    IngestionRegression,
    DomainIngestionRegression,
    SlowDecline,
    NoiseHigh,
}

impl Pattern {
    /// The pattern's ID as serialised (`domain_failing`, …).
    pub fn id(self) -> &'static str {
        match self {
            Pattern::DomainFailing => "domain_failing",
            Pattern::NumericFailing => "numeric_failing",
            Pattern::GoldFailing => "gold_failing",
            Pattern::ChunksMissing => "chunks_missing",
            Pattern::IngestionRegression => "ingestion_regression",
            Pattern::DomainIngestionRegression => "domain_ingestion_regression",
            Pattern::SlowDecline => "slow_decline",
            Pattern::NoiseHigh => "noise_high",
        }
    }
}

/// Thresholds of the cross-run diagnosis. The defaults are calibrations, like the policy's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnoseOptions {
    /// Significance level of the trend tests (default 0.05).
    pub alpha: f64,
    /// Runs a trend looks back over, the newest included (default 8).
    pub trend_window: usize,
    /// Fewer runs than this: no trend is computed (default 5; with 4 runs the smallest
    /// possible one-sided p is 1/24, which Holm over two metrics never brings below 0.05).
    pub min_trend_runs: usize,
    /// Monte-Carlo orderings when the window exceeds 8 runs (default 10,000).
    pub permutations: usize,
    /// Seed of the Monte-Carlo trend tests (default [`super::DEFAULT_SEED`]).
    pub seed: u64,
    /// "All or most" of a domain: its share of recall failures (default 0.75).
    pub domain_majority: f64,
    /// "While the others pass": the other cases' highest share of recall failures
    /// (default 0.25).
    pub others_max: f64,
    /// Smallest domain considered (default 2 cases).
    pub min_domain_cases: usize,
    /// "Only X failing": X's share of the failing cases (default 0.8).
    pub only_share: f64,
    /// Fewest recall failures for an "only X failing" pattern (default 2).
    pub min_failing: usize,
    /// Fewest recall-passing cases over the noise ceiling (default 2).
    pub noise_min_cases: usize,
    /// …and their smallest share of the recall-passing cases with a defined noise
    /// (default 0.10).
    pub noise_min_share: f64,
    /// "Slow": the largest single-run drop is at most this share of the fitted total
    /// decline (default 0.5); a larger step is a sudden change, not a slow decline.
    pub slow_max_step: f64,
    /// "Generalised": fewest cases whose value is lower in the newest run than in the
    /// first run of the window (default 2).
    pub min_declining_cases: usize,
}

impl Default for DiagnoseOptions {
    fn default() -> Self {
        DiagnoseOptions {
            alpha: 0.05,
            trend_window: 8,
            min_trend_runs: 5,
            permutations: 10_000,
            seed: super::DEFAULT_SEED,
            domain_majority: 0.75,
            others_max: 0.25,
            min_domain_cases: 2,
            only_share: 0.8,
            min_failing: 2,
            noise_min_cases: 2,
            noise_min_share: 0.10,
            slow_max_step: 0.5,
            min_declining_cases: 2,
        }
    }
}

/// A chunk that outranks an expected chunk of a regressed case in the newest run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnteredChunk {
    /// The regressed case.
    pub case: String,
    /// The expected chunk it outranks.
    pub expected: String,
    pub id: String,
    /// Its rank in the newest run.
    pub rank: usize,
    pub score: Option<f64>,
    pub ingest_batch: Option<String>,
    /// When its batch was ingested (RFC 3339), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingested_at: Option<String>,
    /// Its domain, from the corpus.
    pub domain: Option<String>,
    /// `Some(true)` when it entered after the last accepted run (its batch, or the accepted
    /// run's chunk list, says so), `Some(false)` when the accepted run itself retrieved it
    /// (`in_accepted_run`), `None` when that cannot be told (see `docs/compare.md`). Chunks
    /// known to be older by their batch or the accepted run's chunk list are not listed.
    pub entered_since: Option<bool>,
    /// Where the accepted run itself retrieved this chunk (so it did not enter since).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_accepted_run: Option<Sighting>,
}

/// Where a run retrieved a chunk: a case and the chunk's rank there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sighting {
    pub case: String,
    pub rank: usize,
}

/// One named pattern, with what it saw.
///
/// What was seen is typed in [`PatternFinding::seen`]; the sentences `saw` and `cause` are
/// worded by the report layer (`veredicto_report::findings`) when it renders, JSON
/// included (empty here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatternFinding {
    pub pattern: Pattern,
    /// What was seen, with numbers and case IDs, for people.
    #[serde(default)]
    pub saw: String,
    /// The suggested cause (the symptom → cause table above), for people.
    #[serde(default)]
    pub cause: String,
    /// What was seen, typed: one entry, or two when rising noise joins the noise seen on
    /// the newest run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<PatternSeen>,
    /// The cases concerned.
    pub cases: Vec<String>,
    /// The domain concerned, for the domain patterns.
    pub domain: Option<String>,
    /// The numbers behind `saw`, by name.
    pub evidence: BTreeMap<String, f64>,
    /// For the regression patterns: what entered since the last accepted run and outranks
    /// the expected chunks.
    pub entered: Vec<EnteredChunk>,
    /// Consecutive runs, ending with the newest, in which the pattern holds (the trend
    /// window for trend-based findings).
    pub runs: usize,
}

/// What a cross-run pattern saw, by kind (serialised as `kind` plus the fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PatternSeen {
    /// `domain_failing`: `domain_failing` of the `domain_cases` cases of `domain` fail recall,
    /// against `other_failing` of `other_cases` elsewhere.
    DomainFailing {
        domain: String,
        domain_cases: usize,
        domain_failing: usize,
        other_cases: usize,
        other_failing: usize,
        fisher_p: f64,
    },
    /// `numeric_failing` / `gold_failing`: `failing_in_group` of the `failing` recall
    /// failures are in the group (`numeric` or `gold`), which has `group_cases` cases;
    /// `failing_other` of the `other_cases` other cases fail.
    OnlyGroup {
        group: CaseGroup,
        failing: usize,
        failing_in_group: usize,
        group_cases: usize,
        failing_other: usize,
        other_cases: usize,
        fisher_p: f64,
    },
    /// `gold_failing`'s policy context: the gold label and how many boost rules the policy
    /// declares (0: no boost).
    GoldPolicy {
        gold_label: String,
        boost_rules: usize,
    },
    /// `noise_high`: cases that pass recall (`recall_passing` with a defined noise) but
    /// exceed the noise ceiling.
    NoiseOverCeiling {
        recall_passing: usize,
        over: Vec<NoisyCase>,
    },
    /// `chunks_missing`: the finding's `cases` passed in the last accepted run and fail now
    /// because the retriever's `collection` no longer holds their expected `chunks` (asked
    /// by ID by the newest run's exam).
    ChunksMissing {
        accepted_run: String,
        accepted_at: String,
        collection: String,
        chunks: Vec<String>,
    },
    /// `ingestion_regression`: the finding's `cases` passed in the last accepted run and
    /// fail now with no new chunk in their domain; `entered` lists what outranks them.
    IngestionRegression {
        accepted_run: String,
        accepted_at: String,
    },
    /// `domain_ingestion_regression`: the same for cases of `domain`, into which
    /// `new_in_domain` chunks entered.
    DomainIngestionRegression {
        domain: String,
        accepted_run: String,
        accepted_at: String,
        new_in_domain: Vec<String>,
    },
    /// `slow_decline`: the significant slow declines, one per metric.
    SlowDecline { trends: Vec<Decline> },
    /// `noise_high`: mean noise (fraction of K) rising over the window.
    NoiseRising {
        from: f64,
        to: f64,
        runs: usize,
        slope: f64,
        p_value: f64,
        cases: usize,
    },
}

/// The group of an "only X failing" pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseGroup {
    Numeric,
    Gold,
}

/// A recall-passing case over its noise ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoisyCase {
    pub case: String,
    pub noise: u32,
    pub max_noise: u32,
    pub k: u32,
}

/// One metric's slow decline over the trend window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decline {
    pub metric: String,
    /// Its mean in the first and in the newest run of the window.
    pub from: f64,
    pub to: f64,
    pub runs: usize,
    pub slope: f64,
    pub p_value: f64,
    pub p_adjusted: f64,
    pub largest_step: f64,
    /// Cases lower in the newest run than in the first, of `cases` shared ones.
    pub moving_cases: usize,
    pub cases: usize,
}

/// What the cross-run diagnosis could not check, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunsNote {
    NoRun,
    /// Regressed cases' domains cannot be checked without a corpus.
    RegressionDomainsWithoutCorpus,
    /// Some regressed cases have no domain.
    RegressedCasesWithoutDomain,
    /// No accepted run before the newest: no regression check.
    NoAcceptedRun,
    /// Too few runs for trends.
    TooFewRunsForTrends {
        needed: usize,
        available: usize,
    },
    /// No case is shared by every run of the trend window.
    NoSharedCases,
}

/// A linear trend of a suite-level mean over the last runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// `mean_recall`, `mean_quality` or `mean_noise_fraction` (noise / K).
    pub metric: String,
    /// The direction the one-sided test looks for (a decline, or rising noise).
    pub direction: Direction,
    /// The runs of the window, oldest first.
    pub runs: Vec<String>,
    /// The mean per run, over the cases shared by every run of the window.
    pub values: Vec<f64>,
    /// Cases shared by every run of the window (same ID, query, expected set and K).
    pub cases: usize,
    /// OLS slope per run.
    pub slope: f64,
    pub intercept: f64,
    /// `slope × (runs − 1)`: the fitted change over the window.
    pub total_change: f64,
    /// One-sided permutation p-value of the slope.
    pub p_value: f64,
    /// Holm-adjusted across mean recall and mean QS (noise: the raw p-value).
    pub p_adjusted: f64,
    pub method: Method,
    /// `p_adjusted < alpha` and the slope points in `direction`.
    pub significant: bool,
    /// The largest single-run move in `direction`.
    pub largest_step: f64,
    /// Cases whose value moved in `direction` between the first and the newest run.
    pub moving_cases: usize,
}

/// The cross-run diagnosis of a history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunsDiagnosis {
    /// The newest run's ID.
    pub run: Option<String>,
    /// Runs looked at.
    pub runs: usize,
    /// The last accepted run before the newest, the regression baseline.
    pub last_accepted: Option<String>,
    /// In pattern order.
    pub findings: Vec<PatternFinding>,
    /// The trends computed (also when not significant).
    pub trends: Vec<Trend>,
    /// Noise calibration of the newest run.
    pub noise: Option<NoiseCalibration>,
    /// What could not be checked, and why: sentences for people, worded by the report
    /// layer from `noted` when it renders (empty here).
    #[serde(default)]
    pub notes: Vec<String>,
    /// What could not be checked, typed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noted: Vec<RunsNote>,
}

/// Tags that mark a numeric / table case (compared lower-case).
pub const NUMERIC_TAGS: [&str; 7] = [
    "numeric",
    "numerico",
    "numérico",
    "numerica",
    "numérica",
    "table",
    "tabla",
];

fn recall_failing(c: &CaseResult) -> bool {
    c.reasons
        .iter()
        .any(|r| matches!(r, CaseReason::Recall | CaseReason::NoResults))
}

/// A numeric case: tagged so ([`NUMERIC_TAGS`]), or, with a corpus, an expected chunk is a
/// pipe table or has facet `tipo`/`type` = `tabla`/`table`.
fn is_numeric(c: &CaseResult, corpus: Option<&Corpus>) -> bool {
    if c.tags
        .iter()
        .any(|t| NUMERIC_TAGS.contains(&t.to_lowercase().as_str()))
    {
        return true;
    }
    let Some(corpus) = corpus else {
        return false;
    };
    distinct(&c.expected).any(|e| {
        corpus.get(&e.id).is_some_and(|ch| {
            ch.text.as_deref().is_some_and(crate::diagnosis::is_table)
                || ["tipo", "type"].iter().any(|k| {
                    ch.facets
                        .get(*k)
                        .and_then(|v| v.as_str())
                        .is_some_and(|v| matches!(v.to_lowercase().as_str(), "tabla" | "table"))
                })
        })
    })
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

fn ids(cases: &[&CaseResult]) -> Vec<String> {
    cases.iter().map(|c| c.id.clone()).collect()
}

fn finding(pattern: Pattern, seen: PatternSeen, cases: Vec<String>) -> PatternFinding {
    PatternFinding {
        pattern,
        saw: String::new(),
        cause: String::new(),
        seen: vec![seen],
        cases,
        domain: None,
        evidence: BTreeMap::new(),
        entered: Vec::new(),
        runs: 1,
    }
}

/// Distinct cases of a report (first occurrence of each ID).
fn cases_of(report: &ExamReport) -> Vec<&CaseResult> {
    let mut seen = BTreeSet::new();
    report
        .cases
        .iter()
        .filter(|c| seen.insert(c.id.as_str()))
        .collect()
}

/// "Only cases of a group fail": the group's share of the recall failures.
fn only_group(
    pattern: Pattern,
    cases: &[&CaseResult],
    in_group: &dyn Fn(&CaseResult) -> bool,
    group: CaseGroup,
    opts: &DiagnoseOptions,
) -> Option<PatternFinding> {
    let failing: Vec<&CaseResult> = cases
        .iter()
        .copied()
        .filter(|c| recall_failing(c))
        .collect();
    let group_n = cases.iter().filter(|c| in_group(c)).count();
    let other_n = cases.len() - group_n;
    let failing_group: Vec<&CaseResult> = failing.iter().copied().filter(|c| in_group(c)).collect();
    let failing_other = failing.len() - failing_group.len();
    let share = ratio(failing_group.len(), failing.len());
    let (rate_g, rate_o) = (
        ratio(failing_group.len(), group_n),
        ratio(failing_other, other_n),
    );
    if failing_group.len() < opts.min_failing
        || group_n == 0
        || other_n == 0
        || share < opts.only_share
        || rate_g <= rate_o
    {
        return None;
    }
    let p = stats::fisher_greater(failing_group.len(), group_n, failing_other, other_n);
    let mut f = finding(
        pattern,
        PatternSeen::OnlyGroup {
            group,
            failing: failing.len(),
            failing_in_group: failing_group.len(),
            group_cases: group_n,
            failing_other,
            other_cases: other_n,
            fisher_p: p,
        },
        ids(&failing_group),
    );
    f.evidence = BTreeMap::from([
        ("failing".to_owned(), failing.len() as f64),
        ("failing_in_group".to_owned(), failing_group.len() as f64),
        ("group_cases".to_owned(), group_n as f64),
        ("other_cases".to_owned(), other_n as f64),
        ("failing_other".to_owned(), failing_other as f64),
        ("share_of_failing".to_owned(), share),
        ("fisher_p".to_owned(), p),
    ]);
    Some(f)
}

/// The patterns visible in one report: domain, numeric, gold, and recall-green-noise-high.
fn snapshot(
    report: &ExamReport,
    corpus: Option<&Corpus>,
    opts: &DiagnoseOptions,
) -> Vec<PatternFinding> {
    let cases = cases_of(report);
    let mut out = Vec::new();

    // A whole domain failing while the others pass.
    let mut domains: BTreeMap<&str, Vec<&CaseResult>> = BTreeMap::new();
    for c in &cases {
        if let Some(d) = c.domain.as_deref() {
            domains.entry(d).or_default().push(c);
        }
    }
    for (d, dc) in &domains {
        let n_d = dc.len();
        let fail_d: Vec<&CaseResult> = dc.iter().copied().filter(|c| recall_failing(c)).collect();
        let n_o = cases.len() - n_d;
        let fail_o = cases
            .iter()
            .filter(|c| c.domain.as_deref() != Some(d) && recall_failing(c))
            .count();
        let (rate_d, rate_o) = (ratio(fail_d.len(), n_d), ratio(fail_o, n_o));
        if n_d < opts.min_domain_cases
            || n_o == 0
            || fail_d.is_empty()
            || rate_d < opts.domain_majority
            || rate_o > opts.others_max
        {
            continue;
        }
        let p = stats::fisher_greater(fail_d.len(), n_d, fail_o, n_o);
        let mut f = finding(
            Pattern::DomainFailing,
            PatternSeen::DomainFailing {
                domain: (*d).to_owned(),
                domain_cases: n_d,
                domain_failing: fail_d.len(),
                other_cases: n_o,
                other_failing: fail_o,
                fisher_p: p,
            },
            ids(&fail_d),
        );
        f.domain = Some((*d).to_owned());
        f.evidence = BTreeMap::from([
            ("domain_cases".to_owned(), n_d as f64),
            ("domain_failing".to_owned(), fail_d.len() as f64),
            ("other_cases".to_owned(), n_o as f64),
            ("other_failing".to_owned(), fail_o as f64),
            ("fisher_p".to_owned(), p),
        ]);
        out.push(f);
    }

    // Only numeric / table cases failing.
    out.extend(only_group(
        Pattern::NumericFailing,
        &cases,
        &|c| is_numeric(c, corpus),
        CaseGroup::Numeric,
        opts,
    ));

    // Only gold cases failing.
    out.extend(
        only_group(
            Pattern::GoldFailing,
            &cases,
            &|c| c.gold,
            CaseGroup::Gold,
            opts,
        )
        .map(|mut f| {
            f.seen.push(PatternSeen::GoldPolicy {
                gold_label: report.policy.gold_label.clone(),
                boost_rules: report.policy.boost.as_ref().map_or(0, |b| b.rules.len()),
            });
            f
        }),
    );

    // Recall green but noise high.
    let green: Vec<&CaseResult> = cases
        .iter()
        .copied()
        .filter(|c| !recall_failing(c) && c.noise.is_some())
        .collect();
    let noisy: Vec<&CaseResult> = green
        .iter()
        .copied()
        .filter(|c| c.noise.is_some_and(|n| n > c.max_noise))
        .collect();
    let share = ratio(noisy.len(), green.len());
    if !noisy.is_empty() && noisy.len() >= opts.noise_min_cases && share >= opts.noise_min_share {
        let over: Vec<NoisyCase> = noisy
            .iter()
            .map(|c| NoisyCase {
                case: c.id.clone(),
                noise: c.noise.unwrap_or(0),
                max_noise: c.max_noise,
                k: c.top_k,
            })
            .collect();
        let mut f = finding(
            Pattern::NoiseHigh,
            PatternSeen::NoiseOverCeiling {
                recall_passing: green.len(),
                over,
            },
            ids(&noisy),
        );
        f.evidence = BTreeMap::from([
            ("recall_passing".to_owned(), green.len() as f64),
            ("over_noise".to_owned(), noisy.len() as f64),
            ("share".to_owned(), share),
        ]);
        out.push(f);
    }
    out
}

/// `YYYY-MM-DDTHH:MM:SS` of an RFC 3339 time in UTC (`Z`), for ordering; `None` otherwise.
fn utc_seconds(s: &str) -> Option<&str> {
    let head = s.get(..19)?;
    let b = head.as_bytes();
    let shape = b.iter().enumerate().all(|(i, c)| match i {
        4 | 7 => *c == b'-',
        10 => *c == b'T' || *c == b't',
        13 | 16 => *c == b':',
        _ => c.is_ascii_digit(),
    });
    (shape && (s.ends_with('Z') || s.ends_with('z'))).then_some(head)
}

/// `2025-11-14 17:20` from an RFC 3339 time in UTC, else the time as given.
pub fn short_time(s: &str) -> String {
    match utc_seconds(s) {
        Some(t) => format!("{} {}", &t[..10], &t[11..16]),
        None => s.to_owned(),
    }
}

/// Regressions against the last accepted run (`acc` indexes `runs`; the newest is last).
///
/// Whether an outranking chunk's batch entered since the accepted run is told, in order:
/// by the batches the accepted run (or an earlier one) read or listed (known → older); by
/// the accepted run's own batch list when it has one (absent from it → new); else by the
/// batch's ingest time against the accepted run's time (both UTC); else it is unknown.
fn regressions(
    runs: &[RecordedRun],
    acc: usize,
    corpus: Option<&Corpus>,
    accepted_chunks: Option<&ChunkSnapshot>,
    notes: &mut Vec<RunsNote>,
) -> Vec<PatternFinding> {
    let Some(newest) = runs.last() else {
        return Vec::new();
    };
    let accepted = &runs[acc];
    // Chunks the accepted run retrieved (an expected chunk's rank, or a chunk listed above
    // one): they were in the collection then. First sighting in case order.
    let mut sightings: BTreeMap<&str, Sighting> = BTreeMap::new();
    for c in &accepted.report.cases {
        let ranked = c
            .expected
            .iter()
            .filter_map(|e| Some((e.id.as_str(), e.rank?)))
            .chain(
                c.diagnosis
                    .iter()
                    .flat_map(|f| f.outranked_by.iter())
                    .map(|o| (o.id.as_str(), o.rank)),
            );
        for (id, rank) in ranked {
            sightings.entry(id).or_insert_with(|| Sighting {
                case: c.id.clone(),
                rank,
            });
        }
    }
    let in_accepted_chunks = |id: &str| -> Option<bool> {
        let snap = accepted_chunks?;
        Some(
            snap.chunks
                .binary_search_by(|c| c.id.as_str().cmp(id))
                .is_ok(),
        )
    };
    let acc_time = utc_seconds(&accepted.meta.created_at);
    // Batches the accepted run or an earlier one read, or saw outranking something.
    let mut old_batches: BTreeSet<&str> = runs[..=acc]
        .iter()
        .flat_map(|r| r.report.cases.iter())
        .flat_map(|c| c.diagnosis.iter())
        .flat_map(|f| f.outranked_by.iter())
        .filter_map(|o| o.ingest_batch.as_deref())
        .collect();
    old_batches.extend(
        runs[..=acc]
            .iter()
            .flat_map(|r| r.report.batches.iter())
            .map(|b| b.name.as_str()),
    );
    let accepted_knows_batches = !accepted.report.batches.is_empty();
    let batch_entered = |batch: Option<&str>, at: Option<&str>| -> Option<bool> {
        let b = batch?;
        if old_batches.contains(b) {
            return Some(false);
        }
        if accepted_knows_batches {
            return Some(true);
        }
        Some(utc_seconds(at?)? >= acc_time?)
    };
    // Whether chunk `id` entered since the accepted run: by its batch when that tells;
    // else not when the accepted run retrieved it or its chunk list holds it, yes when that
    // list lacks it; else unknown.
    let entered_since = |id: &str, batch: Option<&str>, at: Option<&str>| -> Option<bool> {
        batch_entered(batch, at).or_else(|| {
            if sightings.contains_key(id) {
                return Some(false);
            }
            in_accepted_chunks(id).map(|held| !held)
        })
    };
    let batch_of = |id: &str, listed: Option<&String>| -> Option<String> {
        listed.cloned().or_else(|| {
            corpus
                .and_then(|c| c.get(id))
                .and_then(|c| c.ingest_batch.clone())
        })
    };
    let time_of = |batch: Option<&str>, listed: Option<&String>| -> Option<String> {
        listed
            .cloned()
            .or_else(|| corpus?.batch_time(batch?).map(str::to_owned))
    };
    let domain_of = |id: &str| -> Option<String> {
        corpus
            .and_then(|c| c.get(id))
            .and_then(|c| c.domain.clone())
    };

    // What entered since, as far as the newest run shows it: every outranking chunk listed
    // in its diagnosis whose batch is new.
    let mut entered_domains: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in &newest.report.cases {
        for o in c.diagnosis.iter().flat_map(|f| f.outranked_by.iter()) {
            let batch = batch_of(&o.id, o.ingest_batch.as_ref());
            let at = time_of(batch.as_deref(), o.ingested_at.as_ref());
            if entered_since(&o.id, batch.as_deref(), at.as_deref()) == Some(true) {
                if let Some(d) = domain_of(&o.id) {
                    entered_domains.entry(d).or_default().insert(o.id.clone());
                }
            }
        }
    }

    let accepted_cases = index(&accepted.report.cases);
    let mut unchanged: Vec<(String, Vec<EnteredChunk>)> = Vec::new();
    let mut changed: BTreeMap<String, Vec<(String, Vec<EnteredChunk>)>> = BTreeMap::new();
    let mut missing_cases: Vec<String> = Vec::new();
    let mut missing_chunks: BTreeSet<String> = BTreeSet::new();
    let mut collection: Option<String> = None;
    let mut domain_unknown = false;
    for c in cases_of(&newest.report) {
        if !recall_failing(c) {
            continue;
        }
        let Some(a) = accepted_cases.get(c.id.as_str()) else {
            continue;
        };
        if !a.passed || !same_case(a, c) {
            continue;
        }
        let fallen: Vec<&ExpectedChunk> = distinct(&c.expected).filter(|e| !e.in_top_k).collect();
        // Expected chunks the retriever said it no longer holds: nothing buried them.
        let gone: BTreeMap<&str, String> = fallen
            .iter()
            .filter_map(|e| Some((e.id.as_str(), gone_from(c, &e.id)?)))
            .collect();
        if fallen.iter().any(|e| gone.contains_key(e.id.as_str())) {
            missing_cases.push(c.id.clone());
            for e in fallen.iter().filter(|e| gone.contains_key(e.id.as_str())) {
                missing_chunks.insert(e.id.clone());
                collection.get_or_insert_with(|| gone[e.id.as_str()].clone());
            }
        }
        if fallen.iter().all(|e| gone.contains_key(e.id.as_str())) {
            continue;
        }
        let mut entered: Vec<EnteredChunk> = Vec::new();
        let mut seen = BTreeSet::new();
        for e in fallen.iter().filter(|e| !gone.contains_key(e.id.as_str())) {
            for o in outrankers(c, &e.id) {
                let batch = batch_of(&o.id, o.ingest_batch.as_ref());
                let ingested_at = time_of(batch.as_deref(), o.ingested_at.as_ref());
                let since = entered_since(&o.id, batch.as_deref(), ingested_at.as_deref());
                // Older by batch or chunk list: not listed; of no batch but retrieved by the
                // accepted run: listed with where, so that nobody reads it as a newcomer.
                let sighting = (since == Some(false)
                    && batch_entered(batch.as_deref(), ingested_at.as_deref()).is_none())
                .then(|| sightings.get(o.id.as_str()).cloned())
                .flatten();
                if (since == Some(false) && sighting.is_none())
                    || !seen.insert((e.id.clone(), o.id.clone()))
                {
                    continue;
                }
                entered.push(EnteredChunk {
                    case: c.id.clone(),
                    expected: e.id.clone(),
                    id: o.id.clone(),
                    rank: o.rank,
                    score: o.score,
                    ingest_batch: batch,
                    ingested_at,
                    domain: domain_of(&o.id),
                    entered_since: since,
                    in_accepted_run: sighting,
                });
            }
        }
        // Known newcomers when there are any; otherwise the outrankers of unknown age.
        if entered.iter().any(|e| e.entered_since == Some(true)) {
            entered.retain(|e| e.entered_since == Some(true));
        }
        let domain_changed = match (corpus, c.domain.as_deref()) {
            (Some(_), Some(d)) => Some(entered_domains.contains_key(d)),
            _ => None,
        };
        if domain_changed.is_none() {
            domain_unknown = true;
        }
        match (domain_changed, c.domain.clone()) {
            (Some(true), Some(d)) => changed.entry(d).or_default().push((c.id.clone(), entered)),
            _ => unchanged.push((c.id.clone(), entered)),
        }
    }
    if domain_unknown && !unchanged.is_empty() {
        notes.push(if corpus.is_none() {
            RunsNote::RegressionDomainsWithoutCorpus
        } else {
            RunsNote::RegressedCasesWithoutDomain
        });
    }
    let (accepted_run, accepted_at) = (accepted.meta.id.clone(), accepted.meta.created_at.clone());
    let mut out = Vec::new();
    if !missing_cases.is_empty() {
        let chunks: Vec<String> = missing_chunks.into_iter().collect();
        let mut f = finding(
            Pattern::ChunksMissing,
            PatternSeen::ChunksMissing {
                accepted_run: accepted_run.clone(),
                accepted_at: accepted_at.clone(),
                collection: collection.unwrap_or_else(|| "collection".to_owned()),
                chunks: chunks.clone(),
            },
            missing_cases,
        );
        f.evidence = BTreeMap::from([("missing_chunks".to_owned(), chunks.len() as f64)]);
        out.push(f);
    }
    if !unchanged.is_empty() {
        let cases: Vec<String> = unchanged.iter().map(|(c, _)| c.clone()).collect();
        let entered: Vec<EnteredChunk> = unchanged.into_iter().flat_map(|(_, e)| e).collect();
        let newcomers = entered
            .iter()
            .filter(|e| e.entered_since != Some(false))
            .count();
        let mut f = finding(
            Pattern::IngestionRegression,
            PatternSeen::IngestionRegression {
                accepted_run: accepted_run.clone(),
                accepted_at: accepted_at.clone(),
            },
            cases,
        );
        f.evidence = BTreeMap::from([("entered_outranking".to_owned(), newcomers as f64)]);
        f.entered = entered;
        out.push(f);
    }
    for (d, list) in changed {
        let cases: Vec<String> = list.iter().map(|(c, _)| c.clone()).collect();
        let entered: Vec<EnteredChunk> = list.into_iter().flat_map(|(_, e)| e).collect();
        let new_in_domain: Vec<String> = entered_domains
            .get(&d)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let mut f = finding(
            Pattern::DomainIngestionRegression,
            PatternSeen::DomainIngestionRegression {
                domain: d.clone(),
                accepted_run: accepted_run.clone(),
                accepted_at: accepted_at.clone(),
                new_in_domain: new_in_domain.clone(),
            },
            cases,
        );
        f.domain = Some(d);
        f.evidence = BTreeMap::from([
            ("entered_outranking".to_owned(), entered.len() as f64),
            (
                "new_chunks_in_domain".to_owned(),
                new_in_domain.len() as f64,
            ),
        ]);
        f.entered = entered;
        out.push(f);
    }
    out
}

/// The trends over the window and the findings they support.
fn trends(
    runs: &[RecordedRun],
    opts: &DiagnoseOptions,
    notes: &mut Vec<RunsNote>,
) -> (Vec<Trend>, Vec<PatternFinding>) {
    let w = opts.trend_window.min(runs.len());
    let min_runs = opts.min_trend_runs.max(2);
    if w < min_runs {
        notes.push(RunsNote::TooFewRunsForTrends {
            needed: min_runs,
            available: w,
        });
        return (Vec::new(), Vec::new());
    }
    let window = &runs[runs.len() - w..];
    let indexes: Vec<HashMap<&str, &CaseResult>> =
        window.iter().map(|r| index(&r.report.cases)).collect();
    let Some(newest) = window.last() else {
        return (Vec::new(), Vec::new());
    };
    // Cases present, with the same definition and K, in every run of the window.
    let shared: Vec<Vec<&CaseResult>> = cases_of(&newest.report)
        .into_iter()
        .filter_map(|c| {
            indexes
                .iter()
                .map(|ix| {
                    ix.get(c.id.as_str())
                        .copied()
                        .filter(|x| same_case(x, c) && x.top_k == c.top_k)
                })
                .collect::<Option<Vec<_>>>()
        })
        .collect();
    if shared.is_empty() {
        notes.push(RunsNote::NoSharedCases);
        return (Vec::new(), Vec::new());
    }
    let run_ids: Vec<String> = window.iter().map(|r| r.meta.id.clone()).collect();
    let build = |name: &str, direction: Direction, series: &[Vec<f64>]| -> Option<Trend> {
        // series[case][run]
        let n_cases = series.len();
        if n_cases == 0 {
            return None;
        }
        let values: Vec<f64> = (0..w)
            .map(|r| series.iter().map(|s| s[r]).sum::<f64>() / n_cases as f64)
            .collect();
        let (slope, intercept) = stats::ols(&values)?;
        let test = stats::slope_permutation_test(
            &values,
            direction,
            opts.permutations,
            derive_seed(opts.seed, &format!("trend/{name}")),
        );
        let sign = match direction {
            Direction::Decreasing => -1.0,
            Direction::Increasing => 1.0,
        };
        let largest_step = values
            .windows(2)
            .map(|p| sign * (p[1] - p[0]))
            .fold(0.0f64, f64::max);
        let moving_cases = series
            .iter()
            .filter(|s| sign * (s[w - 1] - s[0]) > 0.0)
            .count();
        Some(Trend {
            metric: name.to_owned(),
            direction,
            runs: run_ids.clone(),
            values,
            cases: n_cases,
            slope,
            intercept,
            total_change: slope * (w - 1) as f64,
            p_value: test.p_value,
            p_adjusted: test.p_value,
            method: test.method,
            significant: false,
            largest_step,
            moving_cases,
        })
    };
    let metric_series = |m: Metric| -> Vec<Vec<f64>> {
        shared
            .iter()
            .map(|row| {
                row.iter()
                    .map(|c| CaseMetrics::recorded(c).get(m))
                    .collect()
            })
            .collect()
    };
    let mut declines: Vec<Trend> = [Metric::MeanRecall, Metric::MeanQuality]
        .into_iter()
        .filter_map(|m| build(m.name(), Direction::Decreasing, &metric_series(m)))
        .collect();
    let raw: Vec<f64> = declines.iter().map(|t| t.p_value).collect();
    for (t, adj) in declines.iter_mut().zip(stats::holm(&raw)) {
        t.p_adjusted = adj;
        t.significant = adj < opts.alpha && t.slope < 0.0;
    }
    let noise_series: Vec<Vec<f64>> = shared
        .iter()
        .filter_map(|row| {
            row.iter()
                .map(|c| {
                    c.noise
                        .filter(|_| c.top_k > 0)
                        .map(|n| f64::from(n) / f64::from(c.top_k))
                })
                .collect::<Option<Vec<f64>>>()
        })
        .collect();
    let mut noise = build("mean_noise_fraction", Direction::Increasing, &noise_series);
    if let Some(t) = noise.as_mut() {
        t.significant = t.p_adjusted < opts.alpha && t.slope > 0.0;
    }

    let mut findings = Vec::new();
    let slow: Vec<&Trend> = declines
        .iter()
        .filter(|t| {
            t.significant
                && t.largest_step <= opts.slow_max_step * -t.total_change
                && t.moving_cases >= opts.min_declining_cases
        })
        .collect();
    if !slow.is_empty() {
        let declines: Vec<Decline> = slow
            .iter()
            .map(|t| Decline {
                metric: t.metric.clone(),
                from: t.values[0],
                to: t.values[w - 1],
                runs: w,
                slope: t.slope,
                p_value: t.p_value,
                p_adjusted: t.p_adjusted,
                largest_step: t.largest_step,
                moving_cases: t.moving_cases,
                cases: t.cases,
            })
            .collect();
        let moving: Vec<String> = shared
            .iter()
            .filter(|row| row[w - 1].recall < row[0].recall || row[w - 1].quality < row[0].quality)
            .map(|row| row[w - 1].id.clone())
            .collect();
        let mut f = finding(
            Pattern::SlowDecline,
            PatternSeen::SlowDecline { trends: declines },
            moving,
        );
        for t in &slow {
            f.evidence.insert(format!("{}_slope", t.metric), t.slope);
            f.evidence
                .insert(format!("{}_p_adjusted", t.metric), t.p_adjusted);
            f.evidence
                .insert(format!("{}_total_change", t.metric), t.total_change);
        }
        f.runs = w;
        findings.push(f);
    }
    if let Some(t) = noise.as_ref().filter(|t| t.significant) {
        let mut f = finding(
            Pattern::NoiseHigh,
            PatternSeen::NoiseRising {
                from: t.values[0],
                to: t.values[w - 1],
                runs: w,
                slope: t.slope,
                p_value: t.p_value,
                cases: t.cases,
            },
            Vec::new(),
        );
        f.evidence = BTreeMap::from([
            ("noise_slope".to_owned(), t.slope),
            ("noise_p".to_owned(), t.p_value),
        ]);
        f.runs = w;
        findings.push(f);
    }
    let mut all = declines;
    all.extend(noise);
    (all, findings)
}

/// The cross-run diagnosis of `runs`, ordered oldest → newest; `corpus` is the current
/// corpus, when available (it names domains and batches of outranking chunks and finds
/// table chunks). Never fails: an empty history gives an empty diagnosis, and what could
/// not be checked is said in [`RunsDiagnosis::notes`].
///
/// The snapshot patterns (domain, numeric, gold, noise over the ceiling) are read on the
/// newest run, with their persistence over the runs before it; the regression patterns
/// compare the newest run with the last accepted run before it; the trend patterns look at
/// the last [`DiagnoseOptions::trend_window`] runs.
pub fn diagnose_runs(
    runs: &[RecordedRun],
    corpus: Option<&Corpus>,
    opts: &DiagnoseOptions,
) -> RunsDiagnosis {
    diagnose_runs_with_chunks(runs, corpus, None, opts)
}

/// The run the regression patterns compare the newest run with: the last accepted run
/// before it (an index into `runs`).
pub fn regression_baseline(runs: &[RecordedRun]) -> Option<usize> {
    let n = runs.len().checked_sub(1)?;
    runs[..n]
        .iter()
        .rposition(|r| r.report.verdict == Verdict::Accept)
}

/// [`diagnose_runs`], with the chunk list the history kept for the regression baseline
/// ([`regression_baseline`]): a chunk in it was there then; a chunk of no known batch absent
/// from it entered since.
pub fn diagnose_runs_with_chunks(
    runs: &[RecordedRun],
    corpus: Option<&Corpus>,
    accepted_chunks: Option<&ChunkSnapshot>,
    opts: &DiagnoseOptions,
) -> RunsDiagnosis {
    let Some(newest) = runs.last() else {
        return RunsDiagnosis {
            run: None,
            runs: 0,
            last_accepted: None,
            findings: Vec::new(),
            trends: Vec::new(),
            noise: None,
            notes: Vec::new(),
            noted: vec![RunsNote::NoRun],
        };
    };
    let mut notes = Vec::new();
    let mut findings = snapshot(&newest.report, corpus, opts);
    // Persistence: walk back while some finding still holds.
    let mut alive: Vec<bool> = vec![true; findings.len()];
    for r in runs[..runs.len() - 1].iter().rev() {
        if !alive.contains(&true) {
            break;
        }
        let earlier = snapshot(&r.report, corpus, opts);
        for (f, a) in findings.iter_mut().zip(alive.iter_mut()) {
            if *a
                && earlier
                    .iter()
                    .any(|g| g.pattern == f.pattern && g.domain == f.domain)
            {
                f.runs += 1;
            } else {
                *a = false;
            }
        }
    }
    let last_accepted = regression_baseline(runs);
    match last_accepted {
        Some(i) => findings.extend(regressions(runs, i, corpus, accepted_chunks, &mut notes)),
        None => notes.push(RunsNote::NoAcceptedRun),
    }
    let (trends, trend_findings) = trends(runs, opts, &mut notes);
    for t in trend_findings {
        // Rising noise joins a noise finding already made on the newest run.
        match findings.iter_mut().find(|f| f.pattern == t.pattern) {
            Some(f) => {
                f.seen.extend(t.seen);
                f.evidence.extend(t.evidence);
            }
            None => findings.push(t),
        }
    }
    findings.sort_by_key(|f| f.pattern);
    RunsDiagnosis {
        run: Some(newest.meta.id.clone()),
        runs: runs.len(),
        last_accepted: last_accepted.map(|i| runs[i].meta.id.clone()),
        findings,
        trends,
        noise: Some(calibrate_noise(&newest.report)),
        notes: Vec::new(),
        noted: notes,
    }
}
