//! `veredicto embed`: a corpus (or a golden set's queries) embedded with veredicto's model
//! and written as JSONL, `.npy`, Parquet or into a pgvector table.

use crate::models::EmbedderArgs;
use crate::printer::ExitStatus;
use std::path::PathBuf;
use veredicto_app::embed as app;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VectorFormat {
    /// `{"id": …, "vector": […], "model": "sha256:…"}` a line.
    Jsonl,
    /// A NumPy `.npy` array (rows × dimension, float32) and `FILE.ids.txt` with the IDs.
    Npy,
    /// A Parquet file: columns `id` (string), `vector` (list of float32), `model` (string).
    Parquet,
}

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("input").required(true).multiple(false))]
#[command(group = clap::ArgGroup::new("output").required(true).multiple(false))]
pub struct EmbedArgs {
    /// Chunk JSONL: each chunk's `representation`, else its `text`, embedded as a passage.
    #[arg(long, value_name = "CORPUS", group = "input")]
    pub corpus: Option<PathBuf>,
    /// A golden set: each case's query embedded as a query (the case ID is the row's ID).
    #[arg(long, value_name = "GOLDEN", group = "input")]
    pub golden: Option<PathBuf>,
    /// The file to write (atomically).
    #[arg(long, value_name = "FILE", group = "output")]
    pub out: Option<PathBuf>,
    /// The file's format (default: from its extension, `.npy`, `.parquet`, else JSONL).
    #[arg(long, value_enum, value_name = "jsonl|npy|parquet", requires = "out")]
    pub format: Option<VectorFormat>,
    /// A pgvector table instead: `postgres://USER@HOST:PORT/DB?table=T[&id=COL&vector=COL]`,
    /// created when missing (columns `id` and `embedding` by default); rows with the same
    /// IDs are replaced.
    #[arg(long, value_name = "URI", group = "output")]
    pub to: Option<String>,
    #[command(flatten)]
    pub embedder: EmbedderArgs,
    /// Per-request timeout of an embeddings server and per statement of the table, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = crate::retriever_args::positive_secs)]
    pub timeout: f64,
    /// Retries after a 429, a 5xx or a timeout of the embeddings server.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

impl EmbedArgs {
    /// What the flags say about the shared settings (the model).
    pub fn overrides(&self) -> veredicto_app::Overrides {
        veredicto_app::Overrides {
            model: self.embedder.model.clone(),
            ..Default::default()
        }
    }
}

pub fn run(args: EmbedArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let source = match (&args.corpus, &args.golden) {
        (Some(c), _) => app::EmbedSource::Corpus(c.clone()),
        (None, Some(g)) => app::EmbedSource::Golden(g.clone()),
        (None, None) => anyhow::bail!("embed needs --corpus FILE or --golden FILE"),
    };
    let target = match (&args.out, &args.to) {
        (Some(path), _) => {
            let format = match args.format {
                Some(VectorFormat::Jsonl) => app::FileFormat::Jsonl,
                Some(VectorFormat::Npy) => app::FileFormat::Npy,
                Some(VectorFormat::Parquet) => app::FileFormat::Parquet,
                None => app::FileFormat::from_extension(path),
            };
            app::EmbedTarget::File {
                path: path.clone(),
                format,
            }
        }
        (None, Some(uri)) => app::EmbedTarget::Postgres(uri.clone()),
        (None, None) => anyhow::bail!("embed needs --out FILE or --to postgres://…?table=T"),
    };
    let timeout = std::time::Duration::from_secs_f64(args.timeout);
    let embedder =
        args.embedder
            .load_for_index(settings, None, Some((timeout, args.retries).into()))?;
    let done = app::embed(app::EmbedRequest {
        source,
        target,
        embedder: embedder.as_ref(),
        timeout,
        events: crate::printer::events(),
    })?;
    if !done.skipped.is_empty() {
        crate::printer::warn(&format!(
            "{} chunk(s) without a text were left out: {}",
            done.skipped.len(),
            veredicto_core::redact::short(&done.skipped.join(", "))
        ));
    }
    let out = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "rows": done.rows,
                "dimension": done.dimension,
                "model": done.model,
                "model_hash": done.model_hash,
                "written_to": done.written_to,
                "skipped": done.skipped,
            }))?
        )
    } else {
        format!(
            "{} vectors of dimension {} embedded with {} ({}) written to {}\n",
            done.rows,
            done.dimension,
            veredicto_core::redact::escape_control(&done.model),
            veredicto_report::short_fingerprint(&done.model_hash),
            veredicto_core::redact::escape_control(&done.written_to)
        )
    };
    crate::output::print_stdout(&out)?;
    Ok(ExitStatus::Success)
}
