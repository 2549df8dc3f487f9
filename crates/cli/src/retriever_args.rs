//! Choosing the retriever from the command line: `--retriever URI` (or its short forms
//! `--index DIR` and `--run FILE`) and the network options of live retrievers.

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

/// The retriever URI that `--run FILE`, `--index DIR` or `--retriever URI` name (the first
/// given), or `None` when none is.
pub fn source_uri(
    run: Option<&str>,
    index: Option<&std::path::Path>,
    retriever: Option<&str>,
) -> Option<String> {
    veredicto_app::source::uri_of(run, index, retriever)
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
    /// The flags as the application's network settings.
    pub fn net(&self) -> anyhow::Result<veredicto_app::source::Net> {
        Ok(veredicto_app::source::Net {
            timeout: Duration::from_secs_f64(self.timeout),
            deadline: Duration::from_secs_f64(self.deadline),
            retries: self.retries,
            header_env: self
                .header_env
                .iter()
                .map(|h| veredicto_app::source::header_env(h))
                .collect::<Result<_, _>>()?,
            results_pointer: self.results_pointer.clone(),
            id_pointer: self.id_pointer.clone(),
            score_pointer: self.score_pointer.clone(),
            id_as_text: self.id_as_text,
            max_answer_bytes: self.max_answer_bytes,
            body_template: self.body_template.clone(),
            ca_file: self.ca_file.clone(),
            cmd_env: self.cmd_env.clone(),
        })
    }

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
        Ok(self.net()?.options(env)?)
    }
}

/// Opens the retriever `uri` names; a `fusion:` retriever over the resolved arms (`--arm`,
/// else `VEREDICTO_ARMS`, else `[retriever] arms` of veredicto.toml). `given` are the
/// `--arm` flags of this command line: refused with any other retriever.
pub fn open_retriever(
    uri: &str,
    given: &[String],
    settings: &veredicto_app::Settings,
    net: &NetArgs,
) -> anyhow::Result<veredicto_app::retriever::Opened> {
    Ok(veredicto_app::source::open(
        uri,
        given,
        settings,
        &net.net()?,
    )?)
}

/// The embedder the retriever needs ([`veredicto_app::source::embedder`]). `index_dir`: the
/// own index the retriever reads (alone or as an arm), whose recorded model is the default.
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
    Ok(veredicto_app::source::embedder(
        retriever,
        index_dir,
        &args.spec(),
        settings,
        &net.net()?,
        deadline,
        cases,
        always,
    )?)
}
