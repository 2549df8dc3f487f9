//! The exam arithmetic that sits around [`super::evaluate`] when a retriever was examined
//! live: each case's K, one line per stage (vector search, boost, rerank), the exactness
//! check (served against exact ranking) and the "not in the collection" findings. Pure:
//! the application layer asks the retriever, these functions only count.

use std::collections::{BTreeMap, BTreeSet};

use super::{AnnLoss, CaseReason, Exactness, ExamReport, StageSummary};
use crate::case::Case;
use crate::diagnosis::{Check, DiagnosisFinding, Finding};
use crate::policy::Policy;
use crate::run::Run;

/// The K of a case under a policy: its own, else its domain's, else the policy's.
pub fn k_of(policy: &Policy, case: &Case) -> usize {
    case.top_k
        .unwrap_or(policy.thresholds(case.domain.as_deref()).top_k) as usize
}

/// One stage's line (`stage @k: mean recall · MRR · mean nDCG · cases with every expected
/// chunk`) from the report of the exam at that stage.
pub fn stage_summary(stage: &str, k: u32, r: &ExamReport) -> StageSummary {
    StageSummary {
        stage: stage.to_owned(),
        k,
        mean_recall: r.summary.mean_recall,
        mrr: r.summary.mrr,
        mean_ndcg: r.summary.mean_ndcg,
        full_recall_cases: r.cases.iter().filter(|c| c.recall >= 1.0).count(),
    }
}

/// Expected chunks the retriever said its collection does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absent {
    /// The collection, as findings name it.
    pub collection: String,
    /// The chunk IDs.
    pub ids: BTreeSet<String>,
}

/// The exactness check: compares the served ranking with the engine's exact ranking at each
/// case's K, puts "lost by the ANN index" first in the diagnosis of each failing case whose
/// expected chunk the exact search had in its top K, and says of the others whether they
/// miss under the exact search too (or only miss chunks the collection does not hold).
pub fn exactness(
    report: &mut ExamReport,
    exact_report: &ExamReport,
    cases: &[Case],
    exact: &Run,
    served: &Run,
    policy: &Policy,
    absent: Option<&Absent>,
) -> Exactness {
    let mut recall_sum = 0.0;
    let mut compared = 0usize;
    let mut lost = Vec::new();
    let (mut lost_cases, mut exact_too, mut missing_only) = (0, 0, 0);
    for ((case, result), exact_result) in
        cases.iter().zip(&mut report.cases).zip(&exact_report.cases)
    {
        let Some(x) = exact.queries.get(&case.id) else {
            continue;
        };
        let k = k_of(policy, case);
        let served_list = served.results(&case.id);
        let x_top: Vec<&str> = x.iter().take(k).map(|r| r.id.as_str()).collect();
        if !x_top.is_empty() {
            let s_top: Vec<&str> = served_list.iter().take(k).map(|r| r.id.as_str()).collect();
            let both = x_top.iter().filter(|id| s_top.contains(id)).count();
            recall_sum += both as f64 / x_top.len() as f64;
            compared += 1;
        }
        if result.passed {
            continue;
        }
        let mut any_lost = false;
        for e in &result.expected {
            if e.in_top_k {
                continue;
            }
            if let Some(p) = x_top.iter().position(|id| *id == e.id) {
                any_lost = true;
                let served_rank = served_list.iter().position(|r| r.id == e.id).map(|p| p + 1);
                lost.push(AnnLoss {
                    case: case.id.clone(),
                    chunk: e.id.clone(),
                    exact_rank: p + 1,
                    served_rank,
                });
                result.diagnosis.insert(
                    0,
                    Finding::new(
                        Check::AnnIndex,
                        Some(e.id.clone()),
                        DiagnosisFinding::LostByAnn {
                            exact_rank: p + 1,
                            served_rank,
                        },
                    ),
                );
            }
        }
        if any_lost {
            lost_cases += 1;
        }
        let exact_misses = exact_result
            .reasons
            .iter()
            .any(|r| matches!(r, CaseReason::Recall | CaseReason::NoResults));
        // Misses that the collection explains (the chunks are not in it) blame neither
        // the ANN index nor the embedding.
        let missed: BTreeSet<&str> = exact_result
            .expected
            .iter()
            .filter(|e| !e.in_top_k)
            .map(|e| e.id.as_str())
            .collect();
        let explained =
            absent.filter(|a| !missed.is_empty() && missed.iter().all(|id| a.ids.contains(*id)));
        if let (true, Some(a)) = (exact_misses, explained) {
            missing_only += 1;
            result.diagnosis.push(Finding::new(
                Check::AnnIndex,
                None,
                DiagnosisFinding::MissingUnderExactToo {
                    missing: missed.len(),
                    collection: a.collection.clone(),
                },
            ));
        } else if exact_misses {
            exact_too += 1;
            result.diagnosis.push(Finding::new(
                Check::AnnIndex,
                None,
                DiagnosisFinding::MissedUnderExactToo,
            ));
        }
    }
    Exactness {
        cases: compared,
        ann_recall_at_k: if compared == 0 {
            0.0
        } else {
            recall_sum / compared as f64
        },
        failing_lost_by_ann: lost_cases,
        failing_under_exact_too: exact_too,
        failing_missing_chunks: missing_only,
        served_plan: None,
        lost,
    }
}

/// Puts "expected chunk not in the collection" first in the diagnosis of every case (the
/// retriever did not fail for) that expects an absent chunk, in place of the findings that
/// would blame its chunking, description, labels, embedding or the retriever's ranking.
/// Corpus findings stay (a corpus file that lacks the chunk too); a chunk the own index's
/// records already name as not in the index is left as it is.
pub fn mark_absent(report: &mut ExamReport, absent: &Absent, failures: &BTreeMap<String, String>) {
    for case in &mut report.cases {
        if failures.contains_key(&case.id) {
            continue;
        }
        let mut seen = BTreeSet::new();
        let missing: Vec<String> = case
            .expected
            .iter()
            .filter(|e| e.rank.is_none() && absent.ids.contains(&e.id))
            .filter(|e| seen.insert(e.id.clone()))
            .filter(|e| {
                !case.diagnosis.iter().any(|f| {
                    f.chunk.as_deref() == Some(e.id.as_str())
                        && matches!(&f.detail, Some(DiagnosisFinding::NotInCorpus { source }) if source == "index")
                })
            })
            .map(|e| e.id.clone())
            .collect();
        if missing.is_empty() {
            continue;
        }
        case.diagnosis.retain(|f| {
            f.check == Check::Corpus || !f.chunk.as_ref().is_some_and(|c| missing.contains(c))
        });
        let first: Vec<Finding> = missing
            .into_iter()
            .map(|id| {
                Finding::new(
                    Check::Corpus,
                    Some(id),
                    DiagnosisFinding::NotInCollection {
                        collection: absent.collection.clone(),
                    },
                )
            })
            .collect();
        case.diagnosis.splice(0..0, first);
    }
}
