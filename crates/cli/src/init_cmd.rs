//! `veredicto init`: writes the project file, asking nothing (a flag for each value), and
//! says what to run next.

use crate::printer::{self, ExitStatus, Format};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("source").multiple(false))]
pub struct InitArgs {
    /// The folder to write veredicto.toml into.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// The golden set (JSONL cases or a BEIR folder), relative to DIR.
    #[arg(long, value_name = "GOLDEN", default_value = "golden.jsonl")]
    pub golden: String,
    /// The chunk corpus (JSONL), relative to DIR. Default: corpus.jsonl for an index (what
    /// `ingest` embeds); for a retriever or a run file, corpus.jsonl only when it exists.
    #[arg(long, value_name = "CORPUS")]
    pub corpus: Option<String>,
    /// Examine veredicto's own index in this folder (the default source: .veredicto/index).
    #[arg(long, value_name = "DIR", group = "source")]
    pub index: Option<String>,
    /// Examine a live retriever (`http(s)://…`, `cmd:…`; see docs/retrievers.md).
    #[arg(long, value_name = "URI", group = "source")]
    pub retriever: Option<String>,
    /// Examine a recorded run file (TREC or JSONL).
    #[arg(long, value_name = "FILE", group = "source")]
    pub run: Option<String>,
    /// The run history: an SQLite file relative to DIR, or a postgres:// URL.
    #[arg(long, value_name = "PATH|URL", default_value = ".veredicto/history.db")]
    pub history: String,
    /// The embedding model: a known name (`veredicto models list`) or a folder.
    #[arg(long, value_name = "NAME|DIR")]
    pub model: Option<String>,
    /// Overwrite an existing veredicto.toml.
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_parser = printer::formats(&["human", "json"]), default_value = "human")]
    pub format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: InitArgs) -> anyhow::Result<ExitStatus> {
    let done = veredicto_app::init::init(&veredicto_app::init::InitRequest {
        dir: args.dir,
        golden: args.golden,
        corpus: args.corpus,
        index: args.index,
        retriever: args.retriever,
        run: args.run,
        history: args.history,
        model: args.model,
        force: args.force,
    })?;
    let (path, source) = (&done.path, &done.source);
    let out = match args.format.or_json(args.json) {
        Format::Json => printer::json(&serde_json::json!({
            "config": path.display().to_string(),
            "source": {"kind": source.0, "value": source.1},
            "missing": done.missing,
            "next": done.next,
        }))?,
        _ => {
            let mut s = format!("wrote {}\n", path.display());
            for m in &done.missing {
                s.push_str(&format!(
                    "note: {m} does not exist yet: put your data there or edit the file\n"
                ));
            }
            s.push_str("next:\n");
            for n in &done.next {
                s.push_str(&format!("  {n}\n"));
            }
            s
        }
    };
    printer::stdout(&out)?;
    Ok(ExitStatus::Success)
}
