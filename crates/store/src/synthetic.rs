//! Synthetic exams for tests and benchmarks: a seeded golden set, corpus and run put through
//! the real exam ([`veredicto_core::exam::evaluate`]), so stored reports have every field a
//! real one has (extra measures, diagnosis findings with outranking chunks, notes, noise).
//! Deterministic: the same parameters give the same report.

use std::collections::BTreeMap;
use veredicto_core::case::{Case, Chunk, Corpus};
use veredicto_core::exam::{evaluate, ExamInput, ExamReport};
use veredicto_core::history::{RunConfig, RunMeta, StageLatency};
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};

/// Parameters of a synthetic exam.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Synthetic {
    /// Number of cases in the golden set.
    pub cases: usize,
    /// Seed of the run (which chunks come back where). The golden set depends only on
    /// `cases` and `golden_version`, so runs with different seeds are comparable.
    pub seed: u64,
    /// Probability that an expected chunk is retrieved inside the top-K (0..1).
    pub skill: f64,
    /// Changes the golden set (and so its fingerprint).
    pub golden_version: u32,
}

impl Synthetic {
    /// `cases` cases, run seed `seed`, skill 0.97, golden version 1.
    pub fn new(cases: usize, seed: u64) -> Self {
        Synthetic {
            cases,
            seed,
            skill: 0.97,
            golden_version: 1,
        }
    }

    /// Runs the exam over the synthetic golden set, corpus and run.
    pub fn report(&self) -> ExamReport {
        const DOMAINS: [&str; 4] = ["laboral", "fiscal", "soporte", "viajes"];
        const DISTRACTORS: usize = 400;
        let mut golden_rng = SplitMix64::new(0x9e37_79b9 ^ u64::from(self.golden_version));
        let mut rng = SplitMix64::new(self.seed);

        let mut chunks = Vec::new();
        let mut cases = Vec::with_capacity(self.cases);
        for i in 0..self.cases {
            let n_expected = 1 + golden_rng.below(3);
            let domain = DOMAINS[i % DOMAINS.len()];
            let expected: Vec<String> = (0..n_expected)
                .map(|j| format!("v{}-c{i:04}-{j}", self.golden_version))
                .collect();
            for (j, id) in expected.iter().enumerate() {
                chunks.push(Chunk {
                    id: id.clone(),
                    doc_id: Some(format!("doc-{}", i / 3)),
                    text: Some(format!("Contenido del fragmento {id} sobre {domain}.")),
                    representation: Some(format!(
                        "Pregunta frecuente {i} de {domain}: qué dice el documento {}",
                        i / 3
                    )),
                    domain: Some(domain.to_owned()),
                    labels: if j == 0 && i % 3 == 0 {
                        vec!["SINTESIS_CURADA".to_owned()]
                    } else {
                        Vec::new()
                    },
                    ingest_batch: Some("batch-1".to_owned()),
                    ..Chunk::default()
                });
            }
            cases.push(Case {
                id: format!("case-{i:04}"),
                query: format!("¿Qué plazo aplica en el supuesto {i} de {domain}?"),
                expected,
                grades: Default::default(),
                evidence: Vec::new(),
                top_k: None,
                domain: Some(domain.to_owned()),
                tags: if i % 7 == 0 {
                    vec!["numeric".to_owned()]
                } else {
                    Vec::new()
                },
                gold: false,
                query_vector: None,
                filters: None,
            });
        }
        for n in 0..DISTRACTORS {
            chunks.push(Chunk {
                id: format!("noise-{n:04}"),
                doc_id: Some(format!("other-{}", n / 4)),
                text: Some(format!("Texto de relleno {n}.")),
                representation: Some(format!("Descripción genérica {n}")),
                domain: Some(DOMAINS[n % DOMAINS.len()].to_owned()),
                ingest_batch: Some(format!("batch-{}", 1 + n % 5)),
                ..Chunk::default()
            });
        }

        let mut queries = BTreeMap::new();
        for case in &cases {
            let mut list: Vec<String> = (0..20)
                .map(|_| format!("noise-{:04}", rng.below(DISTRACTORS as u64)))
                .collect();
            list.sort();
            list.dedup();
            // A hit lands at rank 7 or 8 (pushed to at most 10 by later hits), so that no
            // more than 3 of the top 10 score below it and the case passes the noise rule; a
            // miss lands at ranks 12..20 or is not retrieved at all.
            for id in &case.expected {
                let roll = rng.unit();
                if roll < self.skill {
                    let at = (6 + rng.below(2) as usize).min(list.len());
                    list.insert(at, id.clone());
                } else if roll < self.skill + (1.0 - self.skill) / 2.0 {
                    let at = (11 + rng.below(8) as usize).min(list.len());
                    list.insert(at, id.clone());
                }
            }
            list.truncate(20);
            let results = list
                .into_iter()
                .enumerate()
                .map(|(r, id)| Retrieved {
                    id,
                    score: Some(0.95 - 0.02 * r as f64 - 0.001 * rng.unit()),
                })
                .collect();
            queries.insert(case.id.clone(), results);
        }
        let run = Run {
            name: format!("synthetic-{}", self.seed),
            queries,
            ..Run::default()
        };
        let corpus = Corpus::new(chunks);
        let policy = Policy {
            version: Some(format!("synthetic-{}", self.golden_version)),
            measures: vec!["nDCG@5".to_owned(), "R@20".to_owned()],
            ..Policy::default()
        };
        let notes: BTreeMap<String, String> = cases
            .iter()
            .step_by(5)
            .map(|c| (c.id.clone(), "known gap, tracked".to_owned()))
            .collect();
        evaluate(ExamInput {
            cases: &cases,
            run: &run,
            corpus: Some(&corpus),
            policy: &policy,
            notes: &notes,
            as_of: Some("2025-11-14"),
        })
    }
}

/// Run metadata for `report` as the CLI would fill it, with an empty ID (the history
/// assigns it).
pub fn meta(report: &ExamReport, created_at: &str, label: Option<&str>) -> RunMeta {
    let stage = |p50: f64| StageLatency {
        count: report.cases.len(),
        p50_ms: p50,
        p95_ms: p50 * 2.5,
        p99_ms: p50 * 4.0,
        max_ms: p50 * 7.25,
        ..StageLatency::from_samples(&[])
    };
    RunMeta {
        id: String::new(),
        created_at: created_at.to_owned(),
        label: label.map(str::to_owned),
        golden_fingerprint: report.golden_fingerprint.clone(),
        policy_fingerprint: report.policy_fingerprint.clone(),
        corpus_fingerprint: Some(
            "sha256:c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0".to_owned(),
        ),
        config: RunConfig {
            retriever: "run-file".to_owned(),
            source: Some(format!("runs/{}.trec", report.run.name)),
            embedding_model: Some("intfloat/multilingual-e5-small".to_owned()),
            model_hash: Some("sha256:0123456789abcdef".to_owned()),
            field: Some("representation".to_owned()),
            top_k: report.policy.top_k,
            rerank: None,
            chunk_size: Some(512),
            chunk_overlap: Some(64),
        },
        tool_version: "0.1.0".to_owned(),
        git_revision: Some("4f1c2d9e0b7a".to_owned()),
        latency: [
            ("query_embedding".to_owned(), stage(3.1)),
            ("search".to_owned(), stage(0.7)),
        ]
        .into_iter()
        .collect(),
    }
}

/// A seedable stream for synthetic data: core's SplitMix64 (one generator in the workspace),
/// with the modulo draws this data has always used (kept so that the data does not change).
#[derive(Debug, Clone)]
pub struct SplitMix64(veredicto_core::compare::rng::SplitMix64);

impl SplitMix64 {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(veredicto_core::compare::rng::SplitMix64::new(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`0` when `n` is 0; modulo, slightly biased, enough here).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
