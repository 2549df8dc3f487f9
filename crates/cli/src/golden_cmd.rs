//! `veredicto golden`: `check` (where each evidence item sits in a chunking) and `convert`
//! (a chunk-ID golden set rewritten as evidence spans).

use crate::printer::{ExitStatus, Format};
use anyhow::Context;
use std::path::PathBuf;
use veredicto_formats::policy::Section;

#[derive(Debug, clap::Args)]
pub struct GoldenArgs {
    #[command(subcommand)]
    pub command: GoldenCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum GoldenCommand {
    /// Where each evidence item sits in a chunking: every quote located, the chunks holding
    /// each item, items split across chunks, items no chunk covers, items that cannot be
    /// located (exit 0 clean, 1 problems found, 2 unreadable input).
    Check(CheckArgs),
    /// Rewrite a chunk-ID golden set (`expected`) as evidence spans of documents, from the
    /// chunks' offsets or (with --documents) where their text sits.
    Convert(ConvertArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The golden set (JSONL).
    #[arg(long, value_name = "FILE")]
    pub golden: PathBuf,
    /// The chunking to check against (chunk JSONL with `doc_id`, and `start`/`end` or text).
    #[arg(long, value_name = "FILE")]
    pub corpus: PathBuf,
    /// The documents (JSONL `id`, `text`): quotes are located in them, chunk offsets checked,
    /// chunks without offsets located by their text.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// The policy file (its `evidence_coverage`); default the project's.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The golden set with `expected` chunk IDs (JSONL).
    #[arg(long, value_name = "FILE")]
    pub golden: PathBuf,
    /// The corpus the chunk IDs name.
    #[arg(long, value_name = "FILE")]
    pub corpus: PathBuf,
    /// The documents, to locate chunks that carry no offsets by their text.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// Where to write the converted golden set (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: GoldenArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    match args.command {
        GoldenCommand::Check(a) => check(a, settings),
        GoldenCommand::Convert(a) => convert(a),
    }
}

fn check(args: CheckArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let policy = match &args.policy {
        Some(p) => veredicto_formats::policy::PolicyFile::read_sections(p, &[Section::Exam])?,
        None => settings.policy_sections(&[Section::Exam])?,
    };
    let report = veredicto_app::golden::check(
        &veredicto_app::golden::CheckRequest {
            golden: &args.golden,
            corpus: &args.corpus,
            documents: args.documents.as_deref(),
            coverage: policy.exam.evidence_coverage,
        },
        crate::printer::events(),
    )?;
    let text = match args.format.or_json(args.json) {
        Format::Json => veredicto_report::golden::json(&report),
        _ => veredicto_report::golden::human(&report),
    };
    crate::printer::stdout(&text)?;
    Ok(if report.clean() {
        ExitStatus::Success
    } else {
        ExitStatus::Stop
    })
}

fn convert(args: ConvertArgs) -> anyhow::Result<ExitStatus> {
    let out = veredicto_app::golden::convert(
        &veredicto_app::golden::ConvertRequest {
            golden: &args.golden,
            corpus: &args.corpus,
            documents: args.documents.as_deref(),
        },
        crate::printer::events(),
    )?;
    match &args.out {
        Some(path) => {
            crate::output::write_atomic(path, out.text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            crate::printer::status(&format!(
                "wrote {}: {} of {} case(s) converted to {} evidence item(s)",
                path.display(),
                out.converted,
                out.cases,
                out.items
            ));
        }
        None => crate::printer::stdout(&out.text)?,
    }
    Ok(ExitStatus::Success)
}
