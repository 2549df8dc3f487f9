//! `veredicto matrix --config matrix.toml`: the exam once per declared configuration,
//! each recorded in the history with its configuration and labelled with its name, and
//! one table of the results.

use crate::printer::{self, ExitStatus};
use clap::Parser;
use std::path::PathBuf;
use veredicto_app::matrix::{run_matrix, ConfigRun};

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
    for arm in &c.arms {
        opt("--arm", Some(arm.clone()));
    }
    opt("--label", Some(c.name.clone()));
    opt("--history", args.history.clone());
    if args.no_record {
        v.push("--no-record".into());
    }
    v
}

impl MatrixArgs {
    /// `--history` as a setting.
    pub fn overrides(&self) -> veredicto_app::Overrides {
        veredicto_app::Overrides {
            history: self.history.clone().filter(|h| !h.is_empty()),
            ..Default::default()
        }
    }
}

pub fn run(args: MatrixArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let matrix = veredicto_formats::matrix::read_matrix(&args.config)?;
    // One configuration's exam, parsed and resolved as `veredicto exam` does.
    let mut exam =
        |c: &veredicto_formats::matrix::MatrixConfig| -> veredicto_app::Result<ConfigRun> {
            let argv = exam_argv(&matrix, c, &args);
            let exam = ExamOnly::try_parse_from(&argv)
                .map_err(|e| veredicto_app::Error::msg(e.to_string().trim()))?
                .exam;
            // The configuration's flags over the matrix's settings.
            let settings = settings.overridden(&exam.overrides());
            let outcome = crate::exam_cmd::outcome(&exam, &settings, c.top_k)
                .map_err(|e| veredicto_app::Error::msg(format!("{e:#}")))?;
            Ok(ConfigRun {
                outcome,
                history: (!args.no_record).then(|| settings.history.clone()),
            })
        };
    let outcome = run_matrix(&matrix, &args.config, &mut exam)?;
    let text = match args.format {
        MatrixFormat::Human => veredicto_report::matrix::human(&outcome.rows),
        MatrixFormat::Json => veredicto_report::matrix::json(&outcome.rows),
    };
    printer::stdout(&text)?;
    Ok(ExitStatus::stop_if(!outcome.accepted()))
}
