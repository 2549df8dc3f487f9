//! Opening what a command examines from typed settings: the retriever a URI names (with
//! the arms of a fusion), the network options of live retrievers and model servers, the
//! query embedder the retriever needs and the rerank stage. Every front end (the command
//! line, the Python package, the workbench) opens its retriever here, so a URI means the
//! same thing in each of them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use veredicto_core::case::Case;
use veredicto_embed::{Deadline, Embedder, Reranker};
use veredicto_retrieve::{Options, Retriever};

use crate::models::{EmbedderSpec, HttpNet, ModelPlaces};
use crate::retriever::Opened;
use crate::{Context, Env, Error, Result, Settings};

/// Largest request-body template read.
const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

/// How a live retriever, an embeddings server and a rerank server are reached. The
/// defaults are the command line's.
#[derive(Debug, Clone, PartialEq)]
pub struct Net {
    /// Per-request timeout.
    pub timeout: Duration,
    /// Total deadline for every request of one run (retriever, embedder, reranker).
    pub deadline: Duration,
    /// Retries after a 5xx or 429 answer or a timeout.
    pub retries: u32,
    /// Request headers whose values are read from environment variables: (header name,
    /// variable name). Values are never stored or printed.
    pub header_env: Vec<(String, String)>,
    /// JSON pointer to the result list in an HTTP / command answer.
    pub results_pointer: String,
    /// JSON pointer to the chunk ID inside one result.
    pub id_pointer: String,
    /// JSON pointer to the score inside one result.
    pub score_pointer: String,
    /// Read numeric chunk IDs as text.
    pub id_as_text: bool,
    /// Largest answer read from a live retriever, in bytes.
    pub max_answer_bytes: u64,
    /// An HTTP retriever's request body template (a JSON file).
    pub body_template: Option<PathBuf>,
    /// Root certificates trusted for HTTPS besides the system's (a PEM file).
    pub ca_file: Option<PathBuf>,
    /// Environment variables passed to a `cmd:` retriever besides the default ones.
    pub cmd_env: Vec<String>,
}

impl Default for Net {
    fn default() -> Self {
        Net {
            timeout: veredicto_retrieve::DEFAULT_TIMEOUT,
            deadline: veredicto_retrieve::DEFAULT_DEADLINE,
            retries: 2,
            header_env: Vec::new(),
            results_pointer: "/results".into(),
            id_pointer: "/id".into(),
            score_pointer: "/score".into(),
            id_as_text: false,
            max_answer_bytes: veredicto_retrieve::DEFAULT_MAX_ANSWER_BYTES,
            body_template: None,
            ca_file: None,
            cmd_env: Vec::new(),
        }
    }
}

impl Net {
    /// (per-request timeout, retries, trusted roots) for an embeddings or rerank server.
    pub fn http(&self) -> HttpNet {
        HttpNet {
            timeout: self.timeout,
            retries: self.retries,
            ca_file: self.ca_file.clone(),
        }
    }

    /// The run's total deadline, starting now.
    pub fn total_deadline(&self) -> Deadline {
        Deadline::after(self.deadline)
    }

    /// The retriever library's options, with header values and a `cmd:` retriever's
    /// environment read from `env`, and the body template read and checked.
    pub fn options(&self, env: &Env) -> Result<Options> {
        let mut headers = Vec::new();
        for (name, var) in &self.header_env {
            let value = env.get(var).with_context(|| {
                format!("--header-env {name}: environment variable `{var}` is not set")
            })?;
            headers.push((name.clone(), value));
        }
        let body_template = match &self.body_template {
            Some(path) => Some(read_template(path)?),
            None => None,
        };
        Ok(Options {
            timeout: self.timeout,
            deadline: self.deadline,
            retries: self.retries,
            headers,
            results_pointer: self.results_pointer.clone(),
            id_pointer: self.id_pointer.clone(),
            score_pointer: self.score_pointer.clone(),
            id_as_text: self.id_as_text,
            max_answer_bytes: self.max_answer_bytes,
            command_env: self.command_env(env)?,
            body_template,
            ca_file: self.ca_file.clone(),
            ..Options::default()
        })
    }

    /// The environment of a `cmd:` retriever: the variables passed by default that are
    /// set, and each of `cmd_env` (an error when it is not set).
    fn command_env(&self, vars: &Env) -> Result<Vec<(std::ffi::OsString, std::ffi::OsString)>> {
        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vars
            .vars_os()
            .filter(|(name, _)| {
                name.to_str()
                    .is_some_and(veredicto_retrieve::cmd::passed_by_default)
            })
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        for name in &self.cmd_env {
            let valid =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            crate::ensure!(
                valid,
                "--cmd-env expects the name of an environment variable (letters, digits, `_`), got `{}`",
                veredicto_core::redact::short(name)
            );
            let value = vars.get_os(name).map(ToOwned::to_owned).with_context(|| {
                format!("--cmd-env {name}: environment variable `{name}` is not set")
            })?;
            env.retain(|(n, _)| n.to_str() != Some(name.as_str()));
            env.push((name.into(), value));
        }
        Ok(env)
    }
}

/// Parses `NAME=ENVVAR` (a header whose value is read from an environment variable).
pub fn header_env(spec: &str) -> Result<(String, String)> {
    spec.split_once('=')
        .filter(|(n, v)| !n.trim().is_empty() && !v.trim().is_empty())
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .with_context(|| {
            format!(
                "--header-env expects NAME=ENVVAR, got `{}`",
                veredicto_core::redact::short(spec)
            )
        })
}

/// Reads and checks a request-body template file.
fn read_template(path: &Path) -> Result<veredicto_retrieve::template::BodyTemplate> {
    use std::io::Read;
    let shown = path.display().to_string();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TEMPLATE_BYTES + 1).read_to_string(&mut text))
        .with_context(|| format!("--body-template {shown}: cannot read the file"))?;
    crate::ensure!(
        text.len() as u64 <= MAX_TEMPLATE_BYTES,
        "--body-template {shown}: larger than 1 MiB"
    );
    veredicto_retrieve::template::BodyTemplate::parse(&text, &shown)
        .map_err(|e| Error::msg(format!("--body-template {e}")))
}

/// The retriever URI that a run file, an index folder or a URI name (the first given), or
/// `None` when none is.
pub fn uri_of(run: Option<&str>, index: Option<&Path>, retriever: Option<&str>) -> Option<String> {
    match (run, index, retriever) {
        (Some(run), _, _) => Some(format!("run:{run}")),
        (_, Some(dir), _) => Some(format!("index:{}", dir.display())),
        (_, _, Some(uri)) => Some(uri.to_owned()),
        _ => None,
    }
}

/// A retriever URI, or a run file's path (anything without a known scheme) read as
/// `run:PATH`.
pub fn uri_or_run_file(text: &str) -> String {
    if veredicto_retrieve::scheme_of(text).is_some() || crate::retriever::is_fusion(text) {
        text.to_owned()
    } else {
        format!("run:{text}")
    }
}

/// Opens the retriever `uri` names; a `fusion:` retriever over `given` arms when there are
/// some, else over the settings' arms (`VEREDICTO_ARMS`, `[retriever] arms` of
/// veredicto.toml). `given` arms with any other retriever are refused.
pub fn open(uri: &str, given: &[String], settings: &Settings, net: &Net) -> Result<Opened> {
    crate::ensure!(
        given.is_empty() || crate::retriever::is_fusion(uri),
        "--arm gives the arms of a fusion: use it with --retriever 'fusion:rrf' (or combsum, combmnz, combmax, wsum), not with `{}`",
        veredicto_core::redact::url(uri)
    );
    let arms = if given.is_empty() {
        &settings.arms
    } else {
        given
    };
    crate::retriever::open(uri, arms, &net.options(&settings.env)?)
}

/// The query embedder `retriever` needs ([`crate::models::embedder_for`]): for one that
/// requires vectors, the model when a case has no `query_vector`; for one that accepts
/// vectors, only when a model or server is named explicitly. With `always`, loaded in any
/// case (the stored-vector check embeds) and checked against the retriever's recorded
/// model. `index_dir`: the own index the retriever reads, whose model is the default.
#[allow(clippy::too_many_arguments)] // each input of the choice, needed once
pub fn embedder(
    retriever: &dyn Retriever,
    index_dir: Option<&Path>,
    spec: &EmbedderSpec,
    settings: &Settings,
    net: &Net,
    deadline: Deadline,
    cases: &[Case],
    always: bool,
) -> Result<Option<Box<dyn Embedder>>> {
    if always {
        let e = crate::models::load_embedder(
            spec,
            ModelPlaces::of(settings),
            index_dir,
            Some(net.http()),
            Some(deadline),
        )?;
        retriever.check_model(&crate::ingest::index_fingerprint(e.as_ref()).hash)?;
        return Ok(Some(e));
    }
    crate::models::embedder_for(
        retriever,
        index_dir,
        spec,
        ModelPlaces::of(settings),
        net.http(),
        deadline,
        cases,
    )
}

/// The rerank stage `spec` names (a cross-encoder folder, or an HTTP `/rerank` URL whose
/// API key is read from the settings' environment variable `api_key_env`).
pub fn reranker(
    spec: &str,
    settings: &Settings,
    api_key_env: &str,
    net: &Net,
    deadline: Deadline,
) -> Result<Box<dyn Reranker>> {
    crate::models::load_reranker(
        spec,
        &settings.env,
        api_key_env,
        Some(net.http()),
        Some(deadline),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_spec_is_a_name_and_a_variable() {
        assert_eq!(
            header_env(" Authorization = SEARCH_AUTH ").unwrap(),
            ("Authorization".to_owned(), "SEARCH_AUTH".to_owned())
        );
        assert!(header_env("Authorization").is_err());
        assert!(header_env("=X").is_err());
    }

    #[test]
    fn a_path_without_a_scheme_is_a_run_file() {
        assert_eq!(uri_or_run_file("runs/a.trec"), "run:runs/a.trec");
        assert_eq!(uri_or_run_file("index:kb"), "index:kb");
        assert_eq!(uri_or_run_file("fusion:rrf?k=60"), "fusion:rrf?k=60");
        assert_eq!(
            uri_of(None, Some(Path::new("kb")), Some("http://x")),
            Some("index:kb".to_owned())
        );
    }

    #[test]
    fn arms_are_refused_with_a_retriever_that_is_not_a_fusion() {
        let settings = Settings::resolve(
            &crate::Overrides::default(),
            None,
            Env::default(),
            Path::new("/"),
        );
        let e = open(
            "run:x.trec",
            &["index:kb".into()],
            &settings,
            &Net::default(),
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("--arm gives the arms of a fusion"));
    }

    #[test]
    fn a_header_from_an_unset_variable_is_named() {
        let net = Net {
            header_env: vec![("Authorization".into(), "NOT_SET_HERE".into())],
            ..Net::default()
        };
        let e = net.options(&Env::default()).unwrap_err().to_string();
        assert!(e.contains("`NOT_SET_HERE` is not set"), "{e}");
    }
}
