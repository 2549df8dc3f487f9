//! Starting a project: `veredicto.toml` written from plain values (nothing asked), checked
//! to read back, and what to run next.

use std::path::PathBuf;

use veredicto_formats::config::{self, InitOptions};

use crate::{Context, Result};

/// The corpus named when none is given.
pub const DEFAULT_CORPUS: &str = "corpus.jsonl";

/// What the project file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitRequest {
    /// The folder to write veredicto.toml into.
    pub dir: PathBuf,
    /// The golden set, relative to `dir`.
    pub golden: String,
    /// The chunk corpus, relative to `dir`; `None`: [`DEFAULT_CORPUS`] for an index, and for
    /// a retriever or a run file only when that file exists.
    pub corpus: Option<String>,
    /// veredicto's own index (the default source: `.veredicto/index`).
    pub index: Option<String>,
    /// A live retriever's URI (never with a credential in it).
    pub retriever: Option<String>,
    /// A recorded run file.
    pub run: Option<String>,
    /// The run history: an SQLite file relative to `dir`, or a `postgres://` URL (without a
    /// password).
    pub history: String,
    /// The embedding model.
    pub model: Option<String>,
    /// Replace an existing veredicto.toml.
    pub force: bool,
}

impl Default for InitRequest {
    fn default() -> Self {
        InitRequest {
            dir: PathBuf::from("."),
            golden: "golden.jsonl".to_owned(),
            corpus: None,
            index: None,
            retriever: None,
            run: None,
            history: ".veredicto/history.db".to_owned(),
            model: None,
            force: false,
        }
    }
}

/// What [`init`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Initialised {
    /// The project file.
    pub path: PathBuf,
    /// The source's kind (`index`, `retriever`, `run`) and value.
    pub source: (&'static str, String),
    /// Files the project names that do not exist yet.
    pub missing: Vec<String>,
    /// The commands to run next, each with a comment.
    pub next: Vec<String>,
}

/// Writes the project file (atomically; an existing one only with `force`).
pub fn init(request: &InitRequest) -> Result<Initialised> {
    let r = request;
    let path = r.dir.join(config::FILE_NAME);
    if path.exists() && !r.force {
        crate::bail!("{} already exists (--force overwrites it)", path.display());
    }
    // A user name is not a credential (`postgres://ci@db/veredicto` is fine); a password, a
    // token or a secret parameter is, and the message shows it masked where it was.
    if veredicto_core::redact::url_has_credentials(&r.history) {
        crate::bail!(
            "--history: the URL carries a credential ({}); give the password through PGPASSWORD or ~/.pgpass, never in the project file",
            veredicto_core::redact::url_masked(&r.history)
        );
    }
    let source: (&'static str, String) = match (&r.index, &r.retriever, &r.run) {
        (_, Some(uri), _) => {
            if veredicto_core::redact::url_has_credentials(uri) {
                crate::bail!(
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
    let corpus = match (&r.corpus, source.0) {
        (Some(c), _) => Some(c.clone()),
        (None, "index") => Some(DEFAULT_CORPUS.to_owned()),
        (None, _) => Some(DEFAULT_CORPUS.to_owned()).filter(|c| r.dir.join(c).is_file()),
    };
    let options = InitOptions {
        golden: r.golden.clone(),
        corpus: corpus.clone(),
        source: (source.0.to_owned(), source.1.clone()),
        history: r.history.clone(),
        model: r.model.clone(),
    };
    let text = config::init_text(&options);
    // What we write must read back: a bad value is found now, not by the next command.
    config::parse_project(&path, &text)?;
    std::fs::create_dir_all(&r.dir).with_context(|| format!("creating {}", r.dir.display()))?;
    crate::files::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;

    let missing: Vec<String> = std::iter::once(r.golden.as_str())
        .chain(corpus.as_deref())
        .filter(|p| !r.dir.join(p).exists())
        .map(str::to_owned)
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
        r.golden, source.0
    ));
    next.push(
        "veredicto calibrate # proposes the policy's noise ceiling from the healthy cases"
            .to_owned(),
    );
    Ok(Initialised {
        path,
        source,
        missing,
        next,
    })
}
