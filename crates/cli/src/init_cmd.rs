//! `veredicto init`: writes the project file, asking nothing (a flag for each value), and
//! says what to run next.

use crate::printer::{self, ExitStatus, Format};
use anyhow::Context;
use std::path::PathBuf;
use veredicto_formats::config::{self, InitOptions};

/// The corpus `init` names when `--corpus` is not given.
const DEFAULT_CORPUS: &str = "corpus.jsonl";

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
    let path = args.dir.join(config::FILE_NAME);
    if path.exists() && !args.force {
        anyhow::bail!("{} already exists (--force overwrites it)", path.display());
    }
    // A user name is not a credential (`postgres://ci@db/veredicto` is fine); a password, a
    // token or a secret parameter is, and the message shows it masked where it was.
    if veredicto_core::redact::url_has_credentials(&args.history) {
        anyhow::bail!(
            "--history: the URL carries a credential ({}); give the password through PGPASSWORD or ~/.pgpass, never in the project file",
            veredicto_core::redact::url_masked(&args.history)
        );
    }
    let source = match (&args.index, &args.retriever, &args.run) {
        (_, Some(uri), _) => {
            if veredicto_core::redact::url_has_credentials(uri) {
                anyhow::bail!(
                    "--retriever: the URI carries a credential ({}); keep it out of the project file (PGPASSWORD or ~/.pgpass for PostgreSQL; a header or the server's own configuration for HTTP)",
                    veredicto_core::redact::url_masked(uri)
                );
            }
            ("retriever", uri.clone())
        }
        (_, _, Some(run)) => ("run", run.clone()),
        (Some(dir), _, _) => ("index", dir.clone()),
        _ => ("index", ".veredicto/index".to_owned()),
    };
    // The index needs a corpus to ingest; a live retriever or a run file only uses one for
    // the diagnosis, so a default that does not exist is left out (commented).
    let corpus = match (&args.corpus, source.0) {
        (Some(c), _) => Some(c.clone()),
        (None, "index") => Some(DEFAULT_CORPUS.to_owned()),
        (None, _) => Some(DEFAULT_CORPUS.to_owned()).filter(|c| args.dir.join(c).is_file()),
    };
    let options = InitOptions {
        golden: args.golden.clone(),
        corpus: corpus.clone(),
        source: (source.0.to_owned(), source.1.clone()),
        history: args.history.clone(),
        model: args.model.clone(),
    };
    let text = config::init_text(&options);
    // What we write must read back: a bad value is found now, not by the next command.
    config::parse_project(&path, &text)?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    crate::output::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;

    let missing: Vec<&str> = std::iter::once(args.golden.as_str())
        .chain(corpus.as_deref())
        .filter(|p| !args.dir.join(p).exists())
        .collect();
    let mut next = Vec::new();
    if source.0 == "index" {
        next.push(format!(
            "veredicto ingest    # embeds {} into {}",
            corpus.as_deref().unwrap_or(DEFAULT_CORPUS),
            source.1
        ));
    }
    next.push(format!(
        "veredicto exam      # examines {} against the {}, records the run",
        args.golden, source.0
    ));
    next.push(
        "veredicto calibrate # proposes the policy's noise ceiling from the healthy cases"
            .to_owned(),
    );
    let out = match args.format.or_json(args.json) {
        Format::Json => printer::json(&serde_json::json!({
            "config": path.display().to_string(),
            "source": {"kind": source.0, "value": source.1},
            "missing": missing,
            "next": next,
        }))?,
        _ => {
            let mut s = format!("wrote {}\n", path.display());
            for m in &missing {
                s.push_str(&format!(
                    "note: {m} does not exist yet: put your data there or edit the file\n"
                ));
            }
            s.push_str("next:\n");
            for n in &next {
                s.push_str(&format!("  {n}\n"));
            }
            s
        }
    };
    printer::stdout(&out)?;
    Ok(ExitStatus::Success)
}
