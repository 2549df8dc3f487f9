//! A run file (TREC or JSONL) behind the [`Retriever`] seam: `--run FILE`, `run:FILE`,
//! and `run:-` / `--run -` for standard input.

use std::io::Read;
use std::path::Path;

use veredicto_core::run::Run;

use crate::{Hit, Ranking, Request, RetrieveError, Retriever, Vectors};

/// Results read in advance. A golden case absent from the file fails with `no_results`
/// and says so in its diagnosis.
pub struct RunFile {
    run: Run,
    uri: String,
}

impl RunFile {
    /// Reads `path`, or standard input when `path` is `-`.
    pub fn open(path: &str) -> Result<RunFile, RetrieveError> {
        if path == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(RetrieveError::Stdin)?;
            return Self::from_stdin_bytes(&bytes);
        }
        Ok(RunFile {
            run: veredicto_formats::run::read_run(Path::new(path))?,
            uri: path.to_owned(),
        })
    }

    /// A run given as bytes read from standard input. Errors name the file `stdin`.
    pub fn from_stdin_bytes(bytes: &[u8]) -> Result<RunFile, RetrieveError> {
        // The run readers read files; standard input goes through a private temporary
        // folder holding a file called `stdin`, so that errors say `stdin:LINE`.
        let dir = tempfile::tempdir().map_err(RetrieveError::Stdin)?;
        let path = dir.path().join("stdin");
        std::fs::write(&path, bytes).map_err(RetrieveError::Stdin)?;
        let run = veredicto_formats::run::read_run(&path).map_err(|e| {
            let text = e.to_string().replace(&path.display().to_string(), "stdin");
            RetrieveError::Setup {
                uri: "run:-".into(),
                reason: text,
            }
        })?;
        Ok(RunFile {
            run,
            uri: "-".to_owned(),
        })
    }

    /// The run as read.
    pub fn run(&self) -> &Run {
        &self.run
    }
}

impl Retriever for RunFile {
    fn describe(&self) -> String {
        self.uri.clone()
    }

    fn kind(&self) -> &'static str {
        "run-file"
    }

    fn vectors(&self) -> Vectors {
        Vectors::Never
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        match self.run.queries.get(request.case_id) {
            Some(results) => Ok(Ranking {
                hits: results
                    .iter()
                    .map(|r| Hit {
                        id: r.id.clone(),
                        score: r.score,
                        span: None,
                    })
                    .collect(),
                known: self
                    .run
                    .known_ranks
                    .get(request.case_id)
                    .cloned()
                    .unwrap_or_default(),
            }),
            None => Err(RetrieveError::Case {
                uri: self.describe(),
                reason: format!("case `{}` is not in the run file", request.case_id),
            }),
        }
    }

    fn preloaded(&self) -> Option<&Run> {
        Some(&self.run)
    }
}
