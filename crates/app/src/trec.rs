//! The trec_eval-compatible evaluation: a qrels file and a TREC run in, trec_eval 10.0's
//! output out (per query when asked, then the summary), for the qrels and TREC-run formats
//! (docs/measures.md gives the conventions and the few deliberate differences). Files are
//! read and queries evaluated in parallel; the output does not depend on the thread count,
//! because the summary adds queries in qrels order.

use rayon::prelude::*;
use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use veredicto_core::trec::hash::IdBuildHasher;
use veredicto_core::trec::plan::Complete;
use veredicto_core::trec::zscore::ZScores;
use veredicto_core::trec::{
    sort_trec_keyed, EvalOptions, Plan, QueryEval, QueryQrels, ResRels, Scratch, Summary,
};
use veredicto_formats::trec::{
    find_run_lines, read_qrels, read_run_indexed, read_zscores, RunSource,
};

use crate::{bail, Error, Events, Result};

/// Where the run comes from.
pub enum TrecRun {
    /// A run file.
    File(PathBuf),
    /// The caller's standard input (`-` on the command line; `<stdin>` in parse errors).
    Stdin(Box<dyn Read + Send>),
}

impl std::fmt::Debug for TrecRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrecRun::File(p) => f.debug_tuple("File").field(p).finish(),
            TrecRun::Stdin(_) => f.write_str("Stdin"),
        }
    }
}

/// One evaluation, as trec_eval's command line gives it.
#[derive(Debug)]
pub struct TrecRequest {
    /// The qrels file (`qid iter docno rel`).
    pub qrels: PathBuf,
    /// The run (`qid Q0 docno rank score run_id`).
    pub run: TrecRun,
    /// Measures (trec_eval names, sets or canonical names); empty: the official set.
    pub measures: Vec<String>,
    /// `-q`: the evaluation of each query too.
    pub per_query: bool,
    /// `-c`: average over every query of the qrels (queries the run lacks score 0).
    pub complete: bool,
    /// `-n`: no summary.
    pub no_summary: bool,
    /// Relevance, depth, judged-only and collection size.
    pub options: EvalOptions,
    /// `-Z`: the file of means and standard deviations for Z-scores.
    pub zscore: Option<PathBuf>,
    /// `-R`: the relevance format (only `qrels`).
    pub rel_format: Option<String>,
    /// `-T`: the results format (only `trec_results`).
    pub results_format: Option<String>,
}

/// What an evaluation gives: trec_eval's text, and the qrels queries left out.
#[derive(Debug, Clone, PartialEq)]
pub struct TrecOutcome {
    /// The output, byte for byte as trec_eval prints it.
    pub text: String,
    /// Qrels queries not in the run and not evaluated (without `-c`), in qrels order.
    pub missing: Vec<String>,
}

/// Evaluates the run against the qrels. A run that cannot be evaluated (a document
/// retrieved twice, no query in common) is an error and gives no output at all; qrels
/// queries the run lacks are a warning (through `events`) and listed in the outcome.
pub fn run_trec(req: TrecRequest, events: Events<'_>) -> Result<TrecOutcome> {
    if let Some(f) = req.rel_format.as_deref().filter(|f| *f != "qrels") {
        bail!("relevance format '{f}' is not supported (only qrels)");
    }
    if let Some(f) = req
        .results_format
        .as_deref()
        .filter(|f| *f != "trec_results")
    {
        bail!("results format '{f}' is not supported (only trec_results)");
    }
    let plan = Plan::from_args(&req.measures).map_err(Error::msg)?;
    let opts = req.options;
    let zscores = match &req.zscore {
        Some(p) => Some(ZScores::new(read_zscores(p)?)),
        None => None,
    };

    let qrels_path = req.qrels.as_path();
    let qrels = read_qrels(qrels_path)?;
    let judged: Vec<QueryQrels<'_>> = qrels
        .queries
        .par_iter()
        .map(|q| {
            QueryQrels::new(q.judgments.iter().map(|j| (j.docno.as_bytes(), j.rel))).map_err(|e| {
                Error::msg(format!("{}: query '{}': {e}", qrels_path.display(), q.qid))
            })
        })
        .collect::<Result<_>>()?;
    let index: HashMap<&[u8], u32, IdBuildHasher> = qrels
        .queries
        .iter()
        .enumerate()
        .map(|(i, q)| (q.qid.as_bytes(), i as u32))
        .collect();
    let lookup = |qid: &[u8]| index.get(qid).copied();
    let (run, run_path, run_file) = match req.run {
        TrecRun::File(path) => (
            read_run_indexed(RunSource::Path(&path), &lookup, qrels.queries.len())?,
            path,
            true,
        ),
        TrecRun::Stdin(reader) => (
            read_run_indexed(
                RunSource::Reader {
                    reader,
                    name: PathBuf::from("<stdin>"),
                },
                &lookup,
                qrels.queries.len(),
            )?,
            PathBuf::from("-"),
            false,
        ),
    };
    if !run.has_results() {
        bail!("{}: the run has no results", run_path.display());
    }

    // Evaluate every qrels query (in parallel); `None` = not in the run and no -c.
    let complete = req.complete;
    let evals: Vec<Option<std::result::Result<QueryEval, String>>> = (0..qrels.queries.len())
        .into_par_iter()
        .map_init(
            || (Vec::new(), Scratch::default()),
            |(docs, scratch), qi| {
                let qrels_q = &judged[qi];
                let mut eval = if run.has_query(qi as u32) {
                    docs.clear();
                    run.docs_into(qi as u32, docs);
                    sort_trec_keyed(docs);
                    match ResRels::from_ranking_in(scratch, docs, |d| d.1, qrels_q, &opts) {
                        Ok(rr) => plan.evaluate(&rr),
                        Err(e) => return Some(Err(e.docno)),
                    }
                } else if complete {
                    plan.evaluate_missing(qrels_q, &opts)
                } else {
                    return None;
                };
                if let Some(z) = &zscores {
                    z.apply(&plan, &qrels.queries[qi].qid, &mut eval);
                }
                Some(Ok(eval))
            },
        )
        .collect();

    // Errors first, so that a failure prints nothing.
    let failed = evals.iter().enumerate().find_map(|(qi, e)| match e {
        Some(Err(docno)) => Some((qrels.queries[qi].qid.as_str(), docno)),
        _ => None,
    });
    if let Some((qid, docno)) = failed {
        let lines = if run_file {
            find_run_lines(&run_path, qid, docno)
        } else {
            Vec::new()
        };
        let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
        bail!(
            "{}: query '{qid}' retrieves document '{docno}' more than once{}",
            run_path.display(),
            if lines.is_empty() {
                String::new()
            } else {
                format!(" (lines {})", lines.join(", "))
            }
        );
    }
    let evaluated = evals.iter().filter(|e| e.is_some()).count();
    if evaluated == 0 {
        bail!(
            "no query has both results and relevance judgements ({} qrels queries; none in {})",
            qrels.queries.len(),
            run_path.display()
        );
    }

    let mut summary = Summary::new(&plan);
    let mut text = String::new();
    let mut missing: Vec<String> = Vec::new();
    for (qi, eval) in evals.iter().enumerate() {
        let qid = qrels.queries[qi].qid.as_str();
        match eval {
            Some(Ok(eval)) => {
                summary.add(eval);
                if req.per_query {
                    plan.write_query(&mut text, qid, eval, zscores.is_some());
                }
            }
            _ => missing.push(qid.to_owned()),
        }
    }
    if !missing.is_empty() {
        events.warn(missing_warning(&missing));
    }
    if !req.no_summary {
        let complete = req.complete.then(|| Complete {
            num_queries: qrels.queries.len() as u64,
            num_positive: judged.iter().map(QueryQrels::num_positive).sum(),
        });
        let values = summary.finish(&plan, complete);
        plan.write_summary(&mut text, run.runid(), &values, zscores.is_some());
    }
    Ok(TrecOutcome { text, missing })
}

/// The warning about qrels queries the run lacks (five named).
fn missing_warning(missing: &[String]) -> String {
    let shown: Vec<&str> = missing.iter().take(5).map(String::as_str).collect();
    format!(
        "{} qrels quer{} not in the run and not evaluated ({}{}); use -c to score {} 0",
        missing.len(),
        if missing.len() == 1 {
            "y is"
        } else {
            "ies are"
        },
        shown.join(", "),
        if missing.len() > shown.len() {
            ", ..."
        } else {
            ""
        },
        if missing.len() == 1 { "it" } else { "them" },
    )
}

/// Relevance judgements held in memory, by query (the Python package's
/// `RelevanceEvaluator` keeps them between evaluations, as pytrec_eval does).
#[derive(Debug, Clone, Default)]
pub struct Judgements {
    qids: Vec<String>,
    docs: Vec<Vec<(String, i32)>>,
    index: HashMap<String, usize>,
}

impl Judgements {
    /// No judgements yet.
    pub fn new() -> Judgements {
        Judgements::default()
    }

    /// Adds a query's judgements (document ID, level); a query added again replaces its
    /// judgements.
    pub fn insert(&mut self, qid: String, docs: Vec<(String, i32)>) {
        match self.index.get(&qid) {
            Some(&i) => self.docs[i] = docs,
            None => {
                self.index.insert(qid.clone(), self.qids.len());
                self.qids.push(qid);
                self.docs.push(docs);
            }
        }
    }

    /// The position of a query, in insertion order.
    pub fn position(&self, qid: &str) -> Option<usize> {
        self.index.get(qid).copied()
    }

    /// The query IDs, in insertion order.
    pub fn qids(&self) -> &[String] {
        &self.qids
    }
}

/// One query's ranked results held in memory: document IDs concatenated in `ids` (the
/// `i`-th is `ids[ends[i-1]..ends[i]]`) with their scores; any order (they are sorted as
/// trec_eval sorts: score descending, then document ID descending).
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// The query's position in the [`Judgements`].
    pub query: usize,
    /// The document IDs, concatenated.
    pub ids: Vec<u8>,
    /// Where each document ID ends in `ids`.
    pub ends: Vec<usize>,
    /// Each document's score.
    pub scores: Vec<f64>,
}

/// Evaluates queries held in memory with `plan`: one [`QueryEval`] per [`Results`], in
/// order, computed in parallel (the values do not depend on the thread count). The same
/// arithmetic as [`run_trec`] per query; a document listed twice for a query is an error.
pub fn evaluate_in_memory(
    judgements: &Judgements,
    results: &[Results],
    plan: &Plan,
    opts: &EvalOptions,
) -> Result<Vec<QueryEval>> {
    results
        .par_iter()
        .map_init(
            || (Vec::new(), Scratch::default()),
            |(docs, scratch), r| {
                let qid = &judgements.qids[r.query];
                let qrels = QueryQrels::new(
                    judgements.docs[r.query]
                        .iter()
                        .map(|(d, rel)| (d.as_bytes(), *rel)),
                )
                .map_err(|e| Error::msg(format!("judgements of query '{qid}': {e}")))?;
                docs.clear();
                let mut start = 0;
                for (&end, &score) in r.ends.iter().zip(&r.scores) {
                    docs.push((veredicto_core::trec::score_key(score), &r.ids[start..end]));
                    start = end;
                }
                sort_trec_keyed(docs);
                let rr = ResRels::from_ranking_in(scratch, docs, |d| d.1, &qrels, opts)
                    .map_err(|e| Error::msg(format!("results of query '{qid}': {e}")))?;
                Ok(plan.evaluate(&rr))
            },
        )
        .collect()
}
