//! `veredicto trec`: the trec_eval-compatible command.
//!
//! Same command line and same output as trec_eval 10.0 for the qrels and TREC-run formats
//! (see docs/measures.md for the conventions and the few deliberate differences). Files are
//! read and queries evaluated in parallel; the output does not depend on the thread count,
//! because the summary adds queries in qrels order.

use crate::printer::ExitStatus;
use anyhow::{anyhow, bail, Context};
use rayon::prelude::*;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use veredicto_core::measure::{registry, Syntax};
use veredicto_core::trec::hash::IdBuildHasher;
use veredicto_core::trec::plan::{Complete, SETS};
use veredicto_core::trec::zscore::ZScores;
use veredicto_core::trec::{
    sort_trec_keyed, EvalOptions, Plan, QueryEval, QueryQrels, ResRels, Scratch, Summary,
};
use veredicto_formats::trec::{
    find_run_lines, read_qrels, read_run_indexed, read_zscores, RunSource,
};

/// Command line of `veredicto trec` (trec_eval's, short options may be attached: `-mP.5`,
/// `-l2`, `-M100`).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Measures: -m takes trec_eval names (map, P.5,10, ndcg_cut.10, ndcg.1=3,2=9, \
                  rbp.p=0.95...), the sets official (default), set and all_trec, or canonical \
                  names (nDCG@10). `veredicto trec --list` lists them all."
)]
pub struct TrecArgs {
    /// Also print the evaluation of each query.
    #[arg(short = 'q', long = "query_eval_wanted")]
    pub per_query: bool,
    /// Average over every query of the qrels: queries the run lacks score 0.
    #[arg(short = 'c', long = "complete_rel_info_wanted")]
    pub complete: bool,
    /// Minimum relevance level that counts as relevant.
    #[arg(
        short = 'l',
        long = "level_for_rel",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_name = "N"
    )]
    pub level: i64,
    /// Evaluate only the first N documents of each query.
    #[arg(short = 'M', long = "Max_retrieved_per_topic", value_name = "N")]
    pub max_retrieved: Option<u64>,
    /// Measure(s) to compute (repeatable).
    #[arg(short = 'm', long = "measure", value_name = "MEASURE")]
    pub measures: Vec<String>,
    /// Do not print the summary.
    #[arg(short = 'n', long = "nosummary")]
    pub no_summary: bool,
    /// Drop unjudged documents before evaluating (use with care).
    #[arg(short = 'J', long = "Judged_docs_only")]
    pub judged_only: bool,
    /// Number of documents in the collection (for utility).
    #[arg(
        short = 'N',
        long = "Number_docs_in_coll",
        default_value_t = 0,
        value_name = "N"
    )]
    pub num_docs_in_coll: i64,
    /// Print Z-scores against the means and standard deviations in this file.
    #[arg(short = 'Z', long = "Zscore", value_name = "FILE")]
    pub zscore: Option<PathBuf>,
    /// Relevance file format (only `qrels` is supported).
    #[arg(short = 'R', long = "Rel_info_format", value_name = "FORMAT")]
    pub rel_format: Option<String>,
    /// Results file format (only `trec_results` is supported).
    #[arg(short = 'T', long = "Results_format", value_name = "FORMAT")]
    pub results_format: Option<String>,
    /// List the measures (canonical name, trec_eval name, description) and exit.
    #[arg(long)]
    pub list: bool,
    /// Qrels file (`qid iter docno rel`).
    #[arg(required_unless_present = "list")]
    pub qrels: Option<PathBuf>,
    /// Run file (`qid Q0 docno rank score run_id`); `-` reads standard input.
    #[arg(required_unless_present = "list")]
    pub run: Option<PathBuf>,
}

/// Runs `veredicto trec`.
pub fn run(args: TrecArgs) -> anyhow::Result<ExitStatus> {
    if args.list {
        let mut text = String::new();
        write_list(&mut text);
        let mut out = Output::new();
        if out.write(&text)? {
            out.finish()?;
        }
        return Ok(ExitStatus::Success);
    }
    if let Some(f) = args.rel_format.as_deref().filter(|f| *f != "qrels") {
        bail!("relevance format '{f}' is not supported (only qrels)");
    }
    if let Some(f) = args
        .results_format
        .as_deref()
        .filter(|f| *f != "trec_results")
    {
        bail!("results format '{f}' is not supported (only trec_results)");
    }
    let (Some(qrels_path), Some(run_path)) = (args.qrels.as_deref(), args.run.as_deref()) else {
        bail!("give a qrels file and a run file");
    };
    let plan = Plan::from_args(&args.measures)?;
    let opts = EvalOptions {
        relevance_level: args.level,
        max_retrieved: args.max_retrieved,
        judged_only: args.judged_only,
        num_docs_in_coll: args.num_docs_in_coll,
    };
    let zscores = match &args.zscore {
        Some(p) => Some(ZScores::new(read_zscores(p)?)),
        None => None,
    };

    let qrels = read_qrels(qrels_path)?;
    let judged: Vec<QueryQrels<'_>> = qrels
        .queries
        .par_iter()
        .map(|q| {
            QueryQrels::new(q.judgments.iter().map(|j| (j.docno.as_bytes(), j.rel)))
                .map_err(|e| anyhow!("{}: query '{}': {e}", qrels_path.display(), q.qid))
        })
        .collect::<anyhow::Result<_>>()?;
    let index: HashMap<&[u8], u32, IdBuildHasher> = qrels
        .queries
        .iter()
        .enumerate()
        .map(|(i, q)| (q.qid.as_bytes(), i as u32))
        .collect();
    let lookup = |qid: &[u8]| index.get(qid).copied();
    let source = if run_path == Path::new("-") {
        RunSource::Reader {
            reader: Box::new(io::stdin()),
            name: PathBuf::from("<stdin>"),
        }
    } else {
        RunSource::Path(run_path)
    };
    let run = read_run_indexed(source, &lookup, qrels.queries.len())?;
    if !run.has_results() {
        bail!("{}: the run has no results", run_path.display());
    }

    // Evaluate every qrels query (in parallel); `None` = not in the run and no -c.
    let evals: Vec<Option<Result<QueryEval, String>>> = (0..qrels.queries.len())
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
                } else if args.complete {
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
        let lines = if run_path == Path::new("-") {
            Vec::new()
        } else {
            find_run_lines(run_path, qid, docno)
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

    let mut out = Output::new();
    let mut summary = Summary::new(&plan);
    let mut text = String::new();
    let mut missing: Vec<&str> = Vec::new();
    for (qi, eval) in evals.iter().enumerate() {
        let qid = qrels.queries[qi].qid.as_str();
        match eval {
            Some(Ok(eval)) => {
                summary.add(eval);
                if args.per_query {
                    text.clear();
                    plan.write_query(&mut text, qid, eval, zscores.is_some());
                    if !out.write(&text)? {
                        return Ok(ExitStatus::Success);
                    }
                }
            }
            _ => missing.push(qid),
        }
    }
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(5).copied().collect();
        crate::printer::warn(&format!(
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
        ));
    }
    if !args.no_summary {
        let complete = args.complete.then(|| Complete {
            num_queries: qrels.queries.len() as u64,
            num_positive: judged.iter().map(QueryQrels::num_positive).sum(),
        });
        let values = summary.finish(&plan, complete);
        text.clear();
        plan.write_summary(&mut text, run.runid(), &values, zscores.is_some());
        if !out.write(&text)? {
            return Ok(ExitStatus::Success);
        }
    }
    out.finish()?;
    Ok(ExitStatus::Success)
}

/// Buffered standard output where a closed pipe (`| head`) ends the output quietly.
struct Output {
    out: io::BufWriter<io::StdoutLock<'static>>,
}

impl Output {
    fn new() -> Self {
        Output {
            out: io::BufWriter::with_capacity(1 << 16, io::stdout().lock()),
        }
    }

    /// Writes `text`; `Ok(false)` if the reader has gone.
    fn write(&mut self, text: &str) -> anyhow::Result<bool> {
        match self.out.write_all(text.as_bytes()) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
            Err(e) => Err(e).context("writing to standard output"),
        }
    }

    fn finish(mut self) -> anyhow::Result<()> {
        match self.out.flush() {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
                Err(e).context("writing to standard output")
            }
            _ => Ok(()),
        }
    }
}

/// The `--list` table, from the registry.
fn write_list(out: &mut String) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "{:<28}{:<24}DESCRIPTION", "CANONICAL", "TREC_EVAL");
    for s in registry() {
        let trec = match (s.trec, s.params) {
            (None, _) => "-".to_string(),
            (Some(t), Syntax::AtRank | Syntax::AtValue) => format!("{t}.k"),
            (Some(t), Syntax::Plain) => t.to_string(),
            (Some(t), _) => format!("{t}[.params]"),
        };
        let _ = writeln!(out, "{:<28}{:<24}{}", s.syntax, trec, s.description);
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<28}{:<24}Relevance of the first n documents (per query, with -q).",
        "-", "relstring[.n]"
    );
    let _ = writeln!(
        out,
        "{:<28}{:<24}Run tag of the run file's last line.",
        "-", "runid"
    );
    for (name, members) in SETS {
        let _ = writeln!(out, "set {name}: {}", members.join(" "));
    }
}
