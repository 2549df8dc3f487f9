//! `veredicto matrix --config matrix.toml`: the exam once per declared configuration,
//! each recorded in the history with its configuration and labelled with its name, and
//! one table of the results.

use crate::printer::ExitStatus;
use anyhow::Context;
use clap::Parser;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum MatrixFormat {
    Human,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct MatrixArgs {
    /// The matrix file (docs/matrix.md).
    #[arg(long, value_name = "MATRIX.toml")]
    pub config: PathBuf,
    /// The history the runs are recorded in (as for `exam --history`).
    #[arg(long, value_name = "PATH|URL")]
    pub history: Option<String>,
    /// Do not record the runs.
    #[arg(long)]
    pub no_record: bool,
    #[arg(long, value_enum, default_value = "human")]
    pub format: MatrixFormat,
}

/// The exam's arguments, parsed as `veredicto exam` parses them.
#[derive(Debug, Parser)]
#[command(name = "exam")]
struct ExamOnly {
    #[command(flatten)]
    exam: crate::exam_cmd::ExamArgs,
}

/// The `veredicto exam` command line of one configuration.
fn exam_argv(
    m: &veredicto_formats::matrix::Matrix,
    c: &veredicto_formats::matrix::MatrixConfig,
    args: &MatrixArgs,
) -> Vec<String> {
    let mut v: Vec<String> = vec!["exam".into(), "--golden".into()];
    v.push(m.golden.display().to_string());
    let mut opt = |flag: &str, value: Option<String>| {
        if let Some(value) = value {
            v.push(flag.into());
            v.push(value);
        }
    };
    opt(
        "--policy",
        m.policy.as_ref().map(|p| p.display().to_string()),
    );
    opt(
        "--corpus",
        m.corpus.as_ref().map(|p| p.display().to_string()),
    );
    opt("--as-of", m.as_of.clone());
    opt("--index", c.index.as_ref().map(|p| p.display().to_string()));
    opt("--retriever", c.retriever.clone());
    opt("--run", c.run.clone());
    opt("--model", c.model.clone());
    opt("--rerank", c.rerank.clone());
    opt("--chunk-size", c.chunk_size.map(|n| n.to_string()));
    opt("--chunk-overlap", c.chunk_overlap.map(|n| n.to_string()));
    opt("--depth", c.depth.map(|n| n.to_string()));
    opt("--label", Some(c.name.clone()));
    opt("--history", args.history.clone());
    if args.no_record {
        v.push("--no-record".into());
    }
    v
}

pub fn run(args: MatrixArgs) -> anyhow::Result<ExitStatus> {
    let matrix = veredicto_formats::matrix::read_matrix(&args.config)?;
    let mut rows = Vec::new();
    let mut history = None;
    for c in &matrix.configs {
        let argv = exam_argv(&matrix, c, &args);
        let exam = ExamOnly::try_parse_from(&argv)
            .map_err(|e| anyhow::anyhow!("{}", e.to_string().trim()))
            .with_context(|| {
                format!(
                    "{}: configuration `{}`",
                    args.config.display(),
                    veredicto_core::redact::short(&c.name)
                )
            })?
            .exam;
        let outcome = crate::exam_cmd::outcome(&exam, c.top_k).with_context(|| {
            format!(
                "{}: configuration `{}`",
                args.config.display(),
                veredicto_core::redact::short(&c.name)
            )
        })?;
        if !args.no_record {
            history = Some(exam.record.history.clone());
        }
        let s = &outcome.report.summary;
        rows.push(veredicto_report::matrix::MatrixRow {
            name: c.name.clone(),
            verdict: if outcome.accepted() { "accept" } else { "stop" }.into(),
            top_k: outcome.report.policy.top_k,
            cases: s.cases,
            mean_quality: s.mean_quality,
            mean_recall: s.mean_recall,
            mrr: s.mrr,
            mean_ndcg: s.mean_ndcg,
            failing: s.failing,
            run_id: outcome.run_id.clone(),
            recall_trend: Vec::new(),
        });
    }
    // Each configuration's trend: its recorded runs (by label) on this golden set.
    if let Some(spec) = history {
        let store = spec.open_read_only()?;
        for row in rows.iter_mut() {
            let runs = store.list(&veredicto_store::RunFilter {
                label: Some(row.name.clone()),
                limit: Some(10),
                ..Default::default()
            })?;
            let golden = runs
                .iter()
                .find(|r| Some(&r.id) == row.run_id.as_ref())
                .map(|r| r.golden_fingerprint.clone());
            row.recall_trend = runs
                .iter()
                .rev()
                .filter(|r| Some(&r.golden_fingerprint) == golden.as_ref())
                .map(|r| r.mean_recall)
                .collect();
        }
    }
    let text = match args.format {
        MatrixFormat::Human => veredicto_report::matrix::human(&rows),
        MatrixFormat::Json => veredicto_report::matrix::json(&rows),
    };
    crate::output::print_stdout(&text)?;
    Ok(ExitStatus::stop_if(
        !rows.iter().all(|r| r.verdict == "accept"),
    ))
}
