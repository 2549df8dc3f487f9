//! Shared builders for the `compare_*` tests: real [`RecordedRun`]s made by running the exam
//! (`veredicto_core::exam::evaluate`) on crafted cases, runs and corpora.
//! Included by the other `compare_*` files with `#[path]`; it has no tests of its own.
#![allow(dead_code)]

use std::collections::BTreeMap;
use veredicto_core::case::{Case, Chunk, Corpus};
use veredicto_core::compare::rng::Rng;
use veredicto_core::exam::{evaluate, ExamInput};
use veredicto_core::history::{RecordedRun, RunConfig, RunMeta};
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};

/// A case with K = `k`. Built through the golden set's JSON shape, so fields the `Case`
/// type gains later (with serde defaults) do not break these tests.
pub fn case(
    id: &str,
    expected: &[&str],
    domain: Option<&str>,
    tags: &[&str],
    gold: bool,
    k: u32,
) -> Case {
    serde_json::from_value(serde_json::json!({
        "id": id,
        "query": format!("query {id}"),
        "expected": expected,
        "top_k": k,
        "domain": domain,
        "tags": tags,
        "gold": gold,
    }))
    .expect("a valid case")
}

/// A ranked list of `len` results for case `case_id`: the `placed` chunks at their 1-based
/// ranks, fillers `f:{case_id}:{rank}` elsewhere. Scores fall by 0.01 per rank from 0.99.
/// With `noise = Some(n)`, results between the worst expected chunk in the top-`k` and rank
/// `k − n` score as much as that chunk, so that exactly `n` top-`k` results score below it
/// (when `n ≤ k − worst`).
pub fn ranked(
    case_id: &str,
    len: usize,
    placed: &[(&str, usize)],
    k: usize,
    noise: Option<usize>,
) -> Vec<Retrieved> {
    let mut out: Vec<Retrieved> = (1..=len)
        .map(|rank| Retrieved {
            id: placed
                .iter()
                .find(|(_, r)| *r == rank)
                .map(|(id, _)| id.to_string())
                .unwrap_or_else(|| format!("f:{case_id}:{rank}")),
            score: Some(1.0 - rank as f64 / 100.0),
        })
        .collect();
    if let Some(n) = noise {
        if let Some(worst) = placed.iter().map(|(_, r)| *r).filter(|&r| r <= k).max() {
            let threshold = 1.0 - worst as f64 / 100.0;
            let until = k.saturating_sub(n).min(len);
            for r in (worst + 1)..=until {
                out[r - 1].score = Some(threshold);
            }
        }
    }
    out
}

/// Cases, policy and corpus shared by the runs of one scenario.
#[derive(Clone)]
pub struct Scenario {
    pub cases: Vec<Case>,
    pub policy: Policy,
    pub corpus: Option<Corpus>,
    pub notes: BTreeMap<String, String>,
}

impl Scenario {
    pub fn new(cases: Vec<Case>) -> Self {
        Scenario {
            cases,
            policy: Policy::default(),
            corpus: None,
            notes: BTreeMap::new(),
        }
    }
}

/// Runs the exam and wraps the report as the history would keep it.
pub fn record(id: &str, created_at: &str, sc: &Scenario, run: &Run) -> RecordedRun {
    let report = evaluate(ExamInput {
        cases: &sc.cases,
        run,
        corpus: sc.corpus.as_ref(),
        policy: &sc.policy,
        notes: &sc.notes,
        as_of: None,
    });
    RecordedRun {
        meta: RunMeta {
            id: id.into(),
            created_at: created_at.into(),
            label: None,
            golden_fingerprint: report.golden_fingerprint.clone(),
            policy_fingerprint: report.policy_fingerprint.clone(),
            corpus_fingerprint: None,
            config: RunConfig {
                retriever: "run-file".into(),
                top_k: sc.policy.top_k,
                ..RunConfig::default()
            },
            tool_version: "test".into(),
            git_revision: None,
            latency: BTreeMap::new(),
        },
        report,
    }
}

/// A run from per-case lists.
pub fn run_of(lists: Vec<(String, Vec<Retrieved>)>) -> Run {
    Run {
        name: "test".into(),
        queries: lists.into_iter().collect(),
        ..Run::default()
    }
}

/// A chunk that passes every checklist item (sane text and description), so a buried one
/// reaches the `embedding` check and its outrankers are listed.
pub fn sane_chunk(id: &str, domain: &str, batch: &str) -> Chunk {
    Chunk {
        id: id.into(),
        doc_id: Some(format!("DOC-{id}")),
        text: Some(format!(
            "Texto completo del fragmento {id}, con su contexto y una frase terminada."
        )),
        representation: Some(format!(
            "Descripción del fragmento {id} en palabras de los usuarios"
        )),
        domain: Some(domain.into()),
        ingest_batch: Some(batch.into()),
        ..Chunk::default()
    }
}

/// Simulation of a retriever on a synthetic golden set: `cases` cases with `m` expected
/// chunks each at cut-off `k`; case `i` retrieves each expected chunk inside the top-K with
/// probability `p[i]` (else at a rank in K+1..=len with probability 1/2, else not at all).
pub struct Sim {
    pub m: usize,
    pub k: usize,
    pub len: usize,
    pub scenario: Scenario,
}

impl Sim {
    pub fn new(cases: usize, m: usize, k: usize, len: usize) -> Self {
        let cases = (0..cases)
            .map(|i| {
                let exp: Vec<String> = (0..m).map(|j| format!("c{i}e{j}")).collect();
                let exp: Vec<&str> = exp.iter().map(String::as_str).collect();
                case(&format!("c{i}"), &exp, None, &[], false, k as u32)
            })
            .collect();
        Sim {
            m,
            k,
            len,
            scenario: Scenario::new(cases),
        }
    }

    /// For each case, the ranks of its expected chunks (`None`: not retrieved).
    pub fn draw(&self, p: &[f64], rng: &mut Rng) -> Vec<Vec<Option<usize>>> {
        p.iter()
            .map(|&pi| {
                let mut top: Vec<usize> = (1..=self.k).collect();
                let mut tail: Vec<usize> = (self.k + 1..=self.len).collect();
                (0..self.m)
                    .map(|_| {
                        if rng.unit_f64() < pi {
                            Some(take_random(&mut top, rng))
                        } else if rng.unit_f64() < 0.5 {
                            Some(take_random(&mut tail, rng))
                        } else {
                            None
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// The run for drawn ranks.
    pub fn run(&self, ranks: &[Vec<Option<usize>>]) -> Run {
        run_of(
            ranks
                .iter()
                .enumerate()
                .map(|(i, rs)| {
                    let names: Vec<String> = (0..self.m).map(|j| format!("c{i}e{j}")).collect();
                    let placed: Vec<(&str, usize)> = names
                        .iter()
                        .zip(rs)
                        .filter_map(|(n, r)| r.map(|r| (n.as_str(), r)))
                        .collect();
                    (
                        format!("c{i}"),
                        ranked(&format!("c{i}"), self.len, &placed, self.k, None),
                    )
                })
                .collect(),
        )
    }

    pub fn record(&self, id: &str, ranks: &[Vec<Option<usize>>]) -> RecordedRun {
        record(id, "2025-11-14T10:00:00Z", &self.scenario, &self.run(ranks))
    }
}

/// Removes and returns a random element (the vector must not be empty).
fn take_random(v: &mut Vec<usize>, rng: &mut Rng) -> usize {
    let i = rng.below(v.len() as u64) as usize;
    v.swap_remove(i)
}
