//! `veredicto trec`: the trec_eval-compatible command. Same command line and same output
//! as trec_eval 10.0 (the evaluation is `veredicto_app::trec`).

use crate::printer::{self, ExitStatus};
use anyhow::bail;
use std::path::{Path, PathBuf};
use veredicto_app::trec::{run_trec, TrecRequest, TrecRun};
use veredicto_core::trec::EvalOptions;

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
        printer::stdout(&veredicto_report::trec::measure_list())?;
        return Ok(ExitStatus::Success);
    }
    let (Some(qrels), Some(run)) = (args.qrels, args.run) else {
        bail!("give a qrels file and a run file");
    };
    let run = if run == Path::new("-") {
        TrecRun::Stdin(Box::new(std::io::stdin()))
    } else {
        TrecRun::File(run)
    };
    let outcome = run_trec(
        TrecRequest {
            qrels,
            run,
            measures: args.measures,
            per_query: args.per_query,
            complete: args.complete,
            no_summary: args.no_summary,
            options: EvalOptions {
                relevance_level: args.level,
                max_retrieved: args.max_retrieved,
                judged_only: args.judged_only,
                num_docs_in_coll: args.num_docs_in_coll,
            },
            zscore: args.zscore,
            rel_format: args.rel_format,
            results_format: args.results_format,
        },
        printer::events(),
    )?;
    printer::stdout(&outcome.text)?;
    Ok(ExitStatus::Success)
}
