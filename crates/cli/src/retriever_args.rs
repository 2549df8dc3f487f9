//! Choosing the retriever from the command line: `--retriever URI` (or its short forms
//! `--index DIR` and `--run FILE`) and the network options of live retrievers.

use anyhow::Context;
use std::time::Duration;
use veredicto_core::retrieval::{DuplicateRule, FailureLimit};
use veredicto_retrieve::Options;

/// Network options shared by `exam` and `search`.
#[derive(Debug, Clone, clap::Args)]
pub struct NetArgs {
    /// Per-request timeout of a live retriever, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = positive_secs)]
    pub timeout: f64,
    /// Total deadline for all requests of a live retriever, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 300.0, value_parser = positive_secs)]
    pub deadline: f64,
    /// Retries after a 5xx answer or a timeout (never after a 4xx or a refused connection).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// A request header whose value is read from an environment variable, e.g.
    /// `Authorization=SEARCH_AUTH` (repeatable). Never stored or printed.
    #[arg(long = "header-env", value_name = "NAME=ENVVAR")]
    pub header_env: Vec<String>,
    /// JSON pointer to the result list in an HTTP / command answer.
    #[arg(long, value_name = "POINTER", default_value = "/results")]
    pub results_pointer: String,
    /// JSON pointer to the chunk ID inside one result.
    #[arg(long, value_name = "POINTER", default_value = "/id")]
    pub id_pointer: String,
    /// JSON pointer to the score inside one result (absent = no score).
    #[arg(long, value_name = "POINTER", default_value = "/score")]
    pub score_pointer: String,
}

/// What the exam does with a retriever's answers, the same for every retriever (see
/// docs/retrievers.md): shared by `exam` and `calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct AnswerArgs {
    /// A chunk ID returned twice for one case: `keep-first` (the first occurrence counts,
    /// the later ones are removed and reported) or `refuse` (exit 2 naming the case and the
    /// chunk). Default: `[source] duplicates` of veredicto.toml, else keep-first.
    #[arg(long, value_name = "keep-first|refuse", value_parser = duplicate_rule)]
    pub duplicates: Option<DuplicateRule>,
    /// The most cases a live retriever may fail for (a number, or a share such as `10%`);
    /// beyond it, or when every case failed, the exam exits 2 and records nothing. Default:
    /// `[source] max_retriever_failures` of veredicto.toml, else 25%.
    #[arg(long, value_name = "N|P%", value_parser = failure_limit)]
    pub max_retriever_failures: Option<FailureLimit>,
}

impl AnswerArgs {
    /// The flags, else the project file, else the defaults.
    pub fn resolve(&self) -> anyhow::Result<(DuplicateRule, FailureLimit)> {
        let settings = crate::project::settings()?;
        Ok((
            self.duplicates.or(settings.duplicates).unwrap_or_default(),
            self.max_retriever_failures
                .or(settings.max_retriever_failures)
                .unwrap_or_default(),
        ))
    }
}

/// `--duplicates`: `keep-first` or `refuse`.
pub fn duplicate_rule(s: &str) -> Result<DuplicateRule, String> {
    s.parse()
}

/// `--max-retriever-failures`: `N` or `P%`.
pub fn failure_limit(s: &str) -> Result<FailureLimit, String> {
    s.parse()
}

/// The retriever URI that `--run FILE`, `--index DIR` or `--retriever URI` name (the first
/// given), or `None` when none is.
pub fn source_uri(
    run: Option<&str>,
    index: Option<&std::path::Path>,
    retriever: Option<&str>,
) -> Option<String> {
    match (run, index, retriever) {
        (Some(run), _, _) => Some(format!("run:{run}")),
        (_, Some(dir), _) => Some(format!("index:{}", dir.display())),
        (_, _, Some(uri)) => Some(uri.to_owned()),
        _ => None,
    }
}

/// `--concurrency`: 1 to 256.
pub fn concurrency(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=256).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a number of cases between 1 and 256, got `{}`",
            veredicto_core::redact::short(s)
        )),
    }
}

pub fn positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "expected a number of seconds between 0 and 86400, got `{}`",
            veredicto_core::redact::short(s)
        )),
    }
}

impl NetArgs {
    /// (per-request timeout, retries) for an embeddings server.
    pub fn embedder_net(&self) -> (Duration, u32) {
        (Duration::from_secs_f64(self.timeout), self.retries)
    }

    /// The run's total deadline (`--deadline`), starting now: it bounds the embeddings
    /// server and the HTTP reranker as it bounds the retriever.
    pub fn total_deadline(&self) -> veredicto_embed::Deadline {
        veredicto_embed::Deadline::after(Duration::from_secs_f64(self.deadline))
    }

    /// The library's options, with header values read from the environment.
    pub fn options(&self) -> anyhow::Result<Options> {
        let mut headers = Vec::new();
        for spec in &self.header_env {
            let (name, var) = spec
                .split_once('=')
                .filter(|(n, v)| !n.trim().is_empty() && !v.trim().is_empty())
                .with_context(|| {
                    format!(
                        "--header-env expects NAME=ENVVAR, got `{}`",
                        veredicto_core::redact::short(spec)
                    )
                })?;
            let value = std::env::var(var.trim()).with_context(|| {
                format!("--header-env {name}: environment variable `{var}` is not set")
            })?;
            headers.push((name.trim().to_owned(), value));
        }
        Ok(Options {
            timeout: Duration::from_secs_f64(self.timeout),
            deadline: Duration::from_secs_f64(self.deadline),
            retries: self.retries,
            headers,
            results_pointer: self.results_pointer.clone(),
            id_pointer: self.id_pointer.clone(),
            score_pointer: self.score_pointer.clone(),
            ..Options::default()
        })
    }
}

/// The embedder the retriever needs: for one that requires vectors, the model when a case
/// has no `query_vector` (checked against the collection's model when it records one); for
/// one that accepts vectors, only when `--embedder` or `--model` is given explicitly.
pub fn load_embedder(
    retriever: &dyn veredicto_retrieve::Retriever,
    args: &crate::models::EmbedderArgs,
    net: &NetArgs,
    deadline: veredicto_embed::Deadline,
    cases: &[veredicto_core::case::Case],
) -> anyhow::Result<Option<Box<dyn veredicto_embed::Embedder>>> {
    let explicit = args.embedder.is_some() || args.model.is_some();
    if !veredicto_retrieve::conclude::needs_embedder(retriever, cases, explicit) {
        return Ok(None);
    }
    // The own index remembers the model it was built with.
    let index_dir =
        (retriever.kind() == "index").then(|| std::path::PathBuf::from(retriever.describe()));
    let e = args.load_within(
        index_dir.as_deref(),
        Some(net.embedder_net()),
        Some(deadline),
    )?;
    retriever.check_model(&crate::models::index_fingerprint(e.as_ref()).hash)?;
    Ok(Some(e))
}
