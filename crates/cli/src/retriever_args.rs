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
    /// Retries after a 5xx or 429 answer or a timeout (never after another 4xx or a refused connection).
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
    /// Read numeric chunk IDs as text (integers, written exactly); by default an ID must be
    /// a JSON string.
    #[arg(long)]
    pub id_as_text: bool,
    /// Largest answer read from a live retriever: an HTTP body, a command's answer line
    /// (bytes, or with KiB / MiB / GiB). Only `--depth` results of an answer are kept.
    #[arg(long, value_name = "BYTES", default_value = "64MiB", value_parser = byte_size)]
    pub max_answer_bytes: u64,
    /// An HTTP retriever's request body: a JSON file with `{{query}}`, `{{k}}`,
    /// `{{query_vector}}`, `{{filters}}` or `{{filter_terms}}` where the values go (see
    /// docs/retrievers.md).
    #[arg(long, value_name = "FILE")]
    pub body_template: Option<std::path::PathBuf>,
    /// A PEM file of root certificates trusted for HTTPS besides the system's: a live
    /// retriever, an embeddings server, a rerank server.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<std::path::PathBuf>,
    /// An environment variable to pass to a `cmd:` retriever besides PATH, HOME, LANG,
    /// LANGUAGE, LC_*, TMPDIR and TZ (repeatable); no other is passed.
    #[arg(long = "cmd-env", value_name = "NAME")]
    pub cmd_env: Vec<String>,
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

/// `--duplicates`: `keep-first` or `refuse`.
pub fn duplicate_rule(s: &str) -> Result<DuplicateRule, String> {
    s.parse()
}

/// `--max-retriever-failures`: `N` or `P%`.
pub fn failure_limit(s: &str) -> Result<FailureLimit, String> {
    s.parse()
}

/// `--max-answer-bytes`: a whole number of bytes, optionally with `KiB`, `MiB` or `GiB`,
/// from 1 KiB to 4 GiB.
pub fn byte_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (number, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&t[..i], t[i..].trim()),
        None => (t, ""),
    };
    let scale: u64 = match unit {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => 0,
    };
    match number.parse::<u64>().ok().and_then(|n| n.checked_mul(scale)) {
        Some(n) if scale > 0 && ((1 << 10)..=(4 << 30)).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a size between 1KiB and 4GiB (bytes, or a whole number with KiB, MiB or GiB), got `{}`",
            veredicto_core::redact::short(s)
        )),
    }
}

/// Largest `--body-template` file read.
const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

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
    /// (per-request timeout, retries, `--ca-file`) for an embeddings or rerank server.
    pub fn embedder_net(&self) -> crate::models::HttpNet {
        crate::models::HttpNet {
            timeout: Duration::from_secs_f64(self.timeout),
            retries: self.retries,
            ca_file: self.ca_file.clone(),
        }
    }

    /// The run's total deadline (`--deadline`), starting now: it bounds the embeddings
    /// server and the HTTP reranker as it bounds the retriever.
    pub fn total_deadline(&self) -> veredicto_embed::Deadline {
        veredicto_embed::Deadline::after(Duration::from_secs_f64(self.deadline))
    }

    /// The library's options, with header values read from the environment `env`.
    pub fn options(&self, env: &veredicto_app::Env) -> anyhow::Result<Options> {
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
            let value = env.get(var.trim()).with_context(|| {
                format!("--header-env {name}: environment variable `{var}` is not set")
            })?;
            headers.push((name.trim().to_owned(), value));
        }
        let body_template = match &self.body_template {
            Some(path) => Some(read_template(path)?),
            None => None,
        };
        Ok(Options {
            timeout: Duration::from_secs_f64(self.timeout),
            deadline: Duration::from_secs_f64(self.deadline),
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
    /// set, and each `--cmd-env NAME` (an error when it is not set). Values are never
    /// printed.
    fn command_env(
        &self,
        vars: &veredicto_app::Env,
    ) -> anyhow::Result<Vec<(std::ffi::OsString, std::ffi::OsString)>> {
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
            anyhow::ensure!(
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

/// Reads and checks `--body-template FILE`.
fn read_template(
    path: &std::path::Path,
) -> anyhow::Result<veredicto_retrieve::template::BodyTemplate> {
    use std::io::Read;
    let shown = path.display().to_string();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TEMPLATE_BYTES + 1).read_to_string(&mut text))
        .with_context(|| format!("--body-template {shown}: cannot read the file"))?;
    anyhow::ensure!(
        text.len() as u64 <= MAX_TEMPLATE_BYTES,
        "--body-template {shown}: larger than 1 MiB"
    );
    veredicto_retrieve::template::BodyTemplate::parse(&text, &shown)
        .map_err(|e| anyhow::anyhow!("--body-template {e}"))
}

/// Opens the retriever `uri` names; a `fusion:` retriever over the resolved arms (`--arm`,
/// else `VEREDICTO_ARMS`, else `[retriever] arms` of veredicto.toml). `given` are the
/// `--arm` flags of this command line: refused with any other retriever.
pub fn open_retriever(
    uri: &str,
    given: &[String],
    settings: &veredicto_app::Settings,
    options: &Options,
) -> anyhow::Result<veredicto_app::retriever::Opened> {
    anyhow::ensure!(
        given.is_empty() || veredicto_app::retriever::is_fusion(uri),
        "--arm gives the arms of a fusion: use it with --retriever 'fusion:rrf' (or combsum, combmnz, combmax, wsum), not with `{}`",
        veredicto_core::redact::url(uri)
    );
    Ok(veredicto_app::retriever::open(
        uri,
        &settings.arms,
        options,
    )?)
}

/// The embedder the retriever needs ([`veredicto_app::models::embedder_for`]): for one that
/// requires vectors, the model when a case has no `query_vector`; for one that accepts
/// vectors, only when `--embedder` or `--model` is given explicitly. `index_dir`: the own
/// index the retriever reads (alone or as an arm), whose recorded model is the default.
#[allow(clippy::too_many_arguments)] // the flags of one command, each needed once
pub fn load_embedder(
    retriever: &dyn veredicto_retrieve::Retriever,
    index_dir: Option<&std::path::Path>,
    args: &crate::models::EmbedderArgs,
    settings: &veredicto_app::Settings,
    net: &NetArgs,
    deadline: veredicto_embed::Deadline,
    cases: &[veredicto_core::case::Case],
    always: bool,
) -> anyhow::Result<Option<Box<dyn veredicto_embed::Embedder>>> {
    if always {
        // Loaded even when the queries need no vectors (the stored-vector check embeds).
        let e = veredicto_app::models::load_embedder(
            &args.spec(),
            veredicto_app::models::ModelPlaces::of(settings),
            index_dir,
            Some(net.embedder_net()),
            Some(deadline),
        )?;
        retriever.check_model(&veredicto_app::ingest::index_fingerprint(e.as_ref()).hash)?;
        return Ok(Some(e));
    }
    Ok(veredicto_app::models::embedder_for(
        retriever,
        index_dir,
        &args.spec(),
        veredicto_app::models::ModelPlaces::of(settings),
        net.embedder_net(),
        deadline,
        cases,
    )?)
}
