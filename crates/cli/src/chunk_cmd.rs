//! `veredicto chunk`: documents cut into a corpus (see [`veredicto_app::chunk`]).

use crate::printer::ExitStatus;
use anyhow::Context;
use std::path::PathBuf;
use veredicto_app::chunk::{Chunking, Split, Unit};

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum UnitArg {
    /// Unicode scalar values.
    Chars,
    /// Tokens of --tokenizer.
    Tokens,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SplitArg {
    /// The largest of paragraphs, line breaks, sentences, words that fits.
    Text,
    /// Markdown structure (headings, blocks, table rows).
    Markdown,
    /// One chunk per sentence (a sentence longer than --size cut as text).
    Sentences,
}

#[derive(Debug, clap::Args)]
pub struct ChunkArgs {
    /// The documents (JSONL: `id`, `text`, other fields copied onto each chunk).
    #[arg(long, value_name = "FILE")]
    pub documents: PathBuf,
    /// The corpus to write (chunk JSONL), replaced whole.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Most units per chunk.
    #[arg(long, value_name = "N")]
    pub size: usize,
    /// Units shared by consecutive chunks (less than --size).
    #[arg(long, value_name = "M", default_value_t = 0)]
    pub overlap: usize,
    /// What --size and --overlap count.
    #[arg(long, value_enum, default_value = "chars")]
    pub unit: UnitArg,
    /// Where chunks are cut.
    #[arg(long, value_enum, default_value = "text")]
    pub split: SplitArg,
    /// The tokenizer for `--unit tokens`: a model folder (its tokenizer.json) or the file.
    #[arg(long, value_name = "DIR|FILE")]
    pub tokenizer: Option<PathBuf>,
}

pub fn run(args: ChunkArgs) -> anyhow::Result<ExitStatus> {
    let documents = veredicto_formats::documents::read_documents(&args.documents)?;
    let chunking = Chunking {
        size: args.size,
        overlap: args.overlap,
        unit: match args.unit {
            UnitArg::Chars => Unit::Chars,
            UnitArg::Tokens => Unit::Tokens,
        },
        split: match args.split {
            SplitArg::Text => Split::Text,
            SplitArg::Markdown => Split::Markdown,
            SplitArg::Sentences => Split::Sentences,
        },
    };
    let out = veredicto_app::chunk::chunk(&veredicto_app::chunk::ChunkRequest {
        documents: &documents,
        chunking,
        tokenizer: args.tokenizer.as_deref(),
        events: crate::printer::events(),
    })?;
    crate::output::write_atomic(&args.out, out.text.as_bytes())
        .with_context(|| format!("writing {}", args.out.display()))?;
    crate::printer::status(&format!(
        "wrote {}: {} chunk(s) of {} document(s) (size {}, overlap {}, {}, split by {}){}",
        args.out.display(),
        out.chunks,
        out.documents,
        chunking.size,
        chunking.overlap,
        chunking.unit.as_str(),
        chunking.split.as_str(),
        if out.empty_documents > 0 {
            format!("; {} empty document(s) gave none", out.empty_documents)
        } else {
            String::new()
        }
    ));
    Ok(ExitStatus::Success)
}
