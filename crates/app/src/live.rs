//! What the exam asks a retriever after the search, so that the diagnosis names the real
//! cause: which expected chunks that came back nowhere the collection holds at all
//! ([`Retriever::holds`]), why some answers were shorter than asked
//! ([`Retriever::short_cause`]), and how the engine plans the served query
//! ([`Retriever::served_plan`], for the exactness check). Each question is asked once per
//! exam, after every case ran, in case order: the answers do not depend on the thread count.

use std::collections::{BTreeMap, BTreeSet};

use veredicto_core::case::Case;
use veredicto_core::exam::stages::Absent;
use veredicto_core::exam::{ExamReport, ExamWarning, ServedPlan, ShortCase};
use veredicto_retrieve::pass::{depth_of, Retrieval, Settings};
use veredicto_retrieve::{Request, RetrieveError, Retriever, HOLDS_MAX};

/// Asks the retriever, once, which of the expected chunks that no case retrieved it holds
/// (cases the retriever failed for are left out: their failure is the cause). `None` when
/// it cannot tell or nothing is to be asked.
#[allow(clippy::result_large_err)] // the retrievers' own error, as their seam returns it
pub(crate) fn absent_expected(
    retriever: &dyn Retriever,
    report: &ExamReport,
    failures: &BTreeMap<String, String>,
) -> Result<Option<Absent>, RetrieveError> {
    let unretrieved: BTreeSet<&str> = report
        .cases
        .iter()
        .filter(|c| !failures.contains_key(&c.id))
        .flat_map(|c| c.expected.iter())
        .filter(|e| e.rank.is_none())
        .map(|e| e.id.as_str())
        .collect();
    if unretrieved.is_empty() {
        return Ok(None);
    }
    let asked: Vec<&str> = unretrieved.into_iter().take(HOLDS_MAX).collect();
    let Some(holding) = retriever.holds(&asked)? else {
        return Ok(None);
    };
    let ids: BTreeSet<String> = asked
        .iter()
        .filter(|id| !holding.present.contains(**id))
        .map(|id| (*id).to_owned())
        .collect();
    Ok((!ids.is_empty()).then_some(Absent {
        collection: holding.collection,
        ids,
    }))
}

/// The request the one-off questions are asked with for `case`: its own query vector when
/// the golden set gives one (the engine plans with one of its own otherwise), its filters.
fn probe<'a>(case: &'a Case, depth: usize) -> Request<'a> {
    Request {
        case_id: &case.id,
        query: &case.query,
        vector: case.query_vector.as_deref(),
        depth,
        expected: &[],
        exact: false,
        filters: case.filters.as_ref(),
    }
}

/// The warning for cases whose answer was shorter than asked (the stage-1 list with a
/// reranker), with the retriever's reason when it can give one. `None` when every answer
/// was full, for a run file (its depth is what it holds), and for cases the retriever
/// failed for (their failure is reported).
#[allow(clippy::result_large_err)] // the retrievers' own error, as their seam returns it
pub(crate) fn short_results(
    retriever: &dyn Retriever,
    cases: &[Case],
    retrieval: &Retrieval,
    settings: &Settings<'_>,
    k_of: &dyn Fn(&Case) -> usize,
) -> Result<Option<ExamWarning>, RetrieveError> {
    if retriever.preloaded().is_some() {
        return Ok(None);
    }
    let answers = retrieval.stage1.as_ref().unwrap_or(&retrieval.run);
    let mut short = Vec::new();
    let mut first = None;
    for case in cases {
        let Some(list) = answers.queries.get(&case.id) else {
            continue;
        };
        if retrieval.failures.contains_key(&case.id) {
            continue;
        }
        let asked = depth_of(settings, k_of(case));
        if list.len() < asked {
            first.get_or_insert((case, asked));
            short.push(ShortCase {
                case: case.id.clone(),
                asked,
                returned: list.len(),
            });
        }
    }
    let Some((case, asked)) = first else {
        return Ok(None);
    };
    let cause = retriever.short_cause(&probe(case, asked))?;
    Ok(Some(ExamWarning::ShortResults {
        cases: short,
        cause,
    }))
}

/// How the engine plans the first case's served query, for the exactness check.
#[allow(clippy::result_large_err)] // the retrievers' own error, as their seam returns it
pub(crate) fn served_plan(
    retriever: &dyn Retriever,
    cases: &[Case],
    settings: &Settings<'_>,
    k_of: &dyn Fn(&Case) -> usize,
) -> Result<Option<ServedPlan>, RetrieveError> {
    match cases.first() {
        Some(case) => retriever.served_plan(&probe(case, depth_of(settings, k_of(case)))),
        None => Ok(None),
    }
}
