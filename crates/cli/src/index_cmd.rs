//! `veredicto index`: maintenance of an index folder (`verify`).

use crate::printer::ExitStatus;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct IndexArgs {
    #[command(subcommand)]
    pub command: IndexCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum IndexCommand {
    /// Check every file of an index against its manifest (sizes, SHA-256, finite unit
    /// vectors): exit 0 when intact, 2 naming the first file that is not.
    Verify(VerifyArgs),
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The index folder.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: IndexArgs) -> anyhow::Result<ExitStatus> {
    match args.command {
        IndexCommand::Verify(v) => verify(v),
    }
}

fn verify(args: VerifyArgs) -> anyhow::Result<ExitStatus> {
    let done = veredicto_app::index::verify(&args.dir)?;
    let (files, bytes) = (&done.files, done.bytes());
    let text = if args.json || args.format == crate::printer::Format::Json {
        let summary = serde_json::json!({
            "index": args.dir.display().to_string(),
            "ok": true,
            "chunks": done.chunks,
            "files": files,
        });
        format!("{}\n", serde_json::to_string_pretty(&summary)?)
    } else {
        format!(
            "{}: ok: {} chunks; {} files ({bytes} bytes) match the manifest's SHA-256; every vector is finite and normalised\n",
            veredicto_core::redact::escape_control(&args.dir.display().to_string()),
            done.chunks,
            files.len(),
        )
    };
    crate::output::print_stdout(&text)?;
    Ok(ExitStatus::Success)
}
