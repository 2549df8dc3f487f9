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

/// The `veredicto exam` command line of one configuration; `chunked` is the index and
/// corpus veredicto made for its `chunk`.
fn exam_argv(
    m: &veredicto_formats::matrix::Matrix,
    c: &veredicto_formats::matrix::MatrixConfig,
    args: &MatrixArgs,
    chunked: Option<&veredicto_app::matrix::Chunked>,
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
    let corpus = match chunked {
        Some(ch) => Some(&ch.corpus),
        None => m.corpus.as_ref(),
    };
    opt("--corpus", corpus.map(|p| p.display().to_string()));
    opt(
        "--documents",
        m.documents.as_ref().map(|p| p.display().to_string()),
    );
    opt("--as-of", m.as_of.clone());
    let index = c.index.as_ref().or(chunked.map(|ch| &ch.index));
    opt("--index", index.map(|p| p.display().to_string()));
    opt("--retriever", c.retriever.clone());
    opt("--run", c.run.clone());
    opt("--model", c.model.clone());
    opt("--rerank", c.rerank.clone());
    let declared = c
        .chunk
        .as_ref()
        .map(|ch| (Some(ch.size as u32), Some(ch.overlap as u32)));
    let (size, overlap) = declared.unwrap_or((c.chunk_size, c.chunk_overlap));
    opt("--chunk-size", size.map(|n| n.to_string()));
    opt("--chunk-overlap", overlap.map(|n| n.to_string()));
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

/// A configuration's `chunk`: the documents cut and ingested with its model, kept under
/// `.veredicto/chunkings/` beside the matrix file (by the chunking's fingerprint).
fn chunked(
    args: &MatrixArgs,
    settings: &veredicto_app::Settings,
    spec: &veredicto_formats::matrix::ChunkSpec,
    documents: &std::path::Path,
    model: &str,
) -> veredicto_app::Result<veredicto_app::matrix::Chunked> {
    let base = args
        .config
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let spec_of_model = veredicto_app::models::EmbedderSpec {
        model: Some(model.to_owned()),
        ..Default::default()
    };
    let mut load = |index: &std::path::Path| {
        veredicto_app::models::load_embedder(
            &spec_of_model,
            veredicto_app::models::ModelPlaces::of(settings),
            Some(index),
            None,
            None,
        )
    };
    let done = veredicto_app::matrix::chunked_index(veredicto_app::matrix::ChunkedRequest {
        documents,
        spec,
        model,
        cache: &base.join(".veredicto").join("chunkings"),
        time: crate::clock::now_rfc3339(),
        embedder: &mut load,
        events: printer::events(),
    })?;
    printer::status(&format!(
        "chunking {} (size {}, overlap {}, {}, split by {}): {}{}",
        done.fingerprint,
        spec.size,
        spec.overlap,
        spec.unit,
        spec.split,
        if done.cut { "cut now" } else { "cut before" },
        match done.embedded {
            0 => ", index up to date".to_owned(),
            n => format!(", {n} chunk(s) embedded into {}", done.index.display()),
        }
    ));
    Ok(done)
}

pub fn run(args: MatrixArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let matrix = veredicto_formats::matrix::read_matrix(&args.config)?;
    // One configuration's exam, parsed and resolved as `veredicto exam` does.
    let mut exam =
        |c: &veredicto_formats::matrix::MatrixConfig| -> veredicto_app::Result<ConfigRun> {
            let chunked = match (&c.chunk, &matrix.documents, &c.model) {
                (Some(spec), Some(documents), Some(model)) => {
                    Some(chunked(&args, settings, spec, documents, model)?)
                }
                _ => None,
            };
            let argv = exam_argv(&matrix, c, &args, chunked.as_ref());
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
