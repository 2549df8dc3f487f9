//! The project file, `veredicto.toml`: where the golden set, the corpus, the retriever, the
//! policy, the history and the model of a project are, so that every command can run
//! without repeating them.
//!
//! A command finds the file by walking up from its working folder ([`discover_trusted`]),
//! the way ruff finds `ruff.toml`, using only files of the current user's or root's in
//! folders of theirs (as git's `safe.directory`). Paths in the file resolve relative to the file's folder, never to
//! the working folder: `exam --compare` run from a subfolder records into, and compares
//! with, the same history as from the project root.
//!
//! Precedence, highest first: command-line flags, `VEREDICTO_*` environment variables
//! ([`ENV_VARS`]), the file, the built-in defaults. This module does not read the
//! environment itself: the caller passes the variables it read ([`Settings::resolve`]).
//!
//! ```toml
//! golden = "golden.jsonl"
//! corpus = "corpus.jsonl"
//! history = ".veredicto/history.db"
//! model = "all-minilm-l6-v2"
//!
//! [source]
//! index = ".veredicto/index"
//!
//! [policy]
//! top_k = 10
//! ```

use crate::error::{FormatError, Result};
use crate::text;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use veredicto_core::policy::Policy;
use veredicto_core::retrieval::{DuplicateRule, FailureLimit};

/// The project file's name.
pub const FILE_NAME: &str = "veredicto.toml";

/// The environment variables that override the project file (and are overridden by flags),
/// with what each one names. Relative paths in them resolve against the working folder.
pub const ENV_VARS: &[(&str, &str)] = &[
    (
        "VEREDICTO_CONFIG",
        "the project file to use instead of discovering veredicto.toml",
    ),
    (
        "VEREDICTO_NO_CONFIG",
        "when set to 1: no project file is read",
    ),
    (
        "VEREDICTO_TRUSTED_PATHS",
        "folders whose project file is used whoever owns it (`DIR`, `DIR/*`, `*`)",
    ),
    ("VEREDICTO_GOLDEN", "the golden set (`golden`)"),
    ("VEREDICTO_CORPUS", "the chunk corpus (`corpus`)"),
    ("VEREDICTO_INDEX", "the index folder (`source.index`)"),
    (
        "VEREDICTO_RETRIEVER",
        "the retriever URI (`source.retriever`)",
    ),
    ("VEREDICTO_RUN", "a TREC or JSONL run file (`source.run`)"),
    (
        "VEREDICTO_ARMS",
        "the arms of a fusion retriever, separated by `|` (`retriever.arms`)",
    ),
    (
        "VEREDICTO_POLICY",
        "a policy TOML file (replaces `[policy]`)",
    ),
    (
        "VEREDICTO_HISTORY",
        "the run history: SQLite file or postgres:// URL (`history`)",
    ),
    (
        "VEREDICTO_MODEL",
        "the embedding model, name or folder (`model`)",
    ),
];

/// Where a command's results come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// veredicto's own index folder.
    Index(PathBuf),
    /// A live retriever URI (`http(s)://…`, `cmd:…`, …; see the retrievers' documentation).
    Retriever(String),
    /// A recorded run file (TREC or JSONL).
    Run(PathBuf),
}

/// Where the policy comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicySource {
    /// The `[policy]` table of the project file (with its `[policy.corpus]`,
    /// `[policy.ingest]` and `[policy.grounding]` tables), already validated.
    Table(Box<crate::policy::PolicyFile>),
    /// A policy file (`policy_file` in the project file, or `VEREDICTO_POLICY`).
    File(PathBuf),
}

/// A parsed project file with its paths resolved against its folder.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Project {
    /// The file itself.
    pub path: PathBuf,
    /// Its folder: the project root, against which its relative paths resolve.
    pub root: PathBuf,
    pub golden: Option<PathBuf>,
    pub corpus: Option<PathBuf>,
    pub source: Option<Source>,
    pub policy: Option<PolicySource>,
    /// A file path (resolved) or a `postgres://` URL (as written).
    pub history: Option<String>,
    /// A known model's name (as written) or a model folder (resolved).
    pub model: Option<String>,
    /// `[source] duplicates`: what to do with a chunk ID answered twice for one case.
    pub duplicates: Option<DuplicateRule>,
    /// `[source] max_retriever_failures`: the most cases a live retriever may fail for.
    pub max_retriever_failures: Option<FailureLimit>,
    /// `[retriever] arms`: the arms of a `fusion:` retriever, in order (the paths of
    /// `index:` and `run:` arms resolved against the root).
    pub arms: Vec<String>,
}

/// The effective settings: the project file with the environment over it. Flags go over
/// these in the command line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// The project file read, if any.
    pub project: Option<PathBuf>,
    /// The project root (the file's folder); `None` without a file.
    pub root: Option<PathBuf>,
    pub golden: Option<PathBuf>,
    pub corpus: Option<PathBuf>,
    pub source: Option<Source>,
    pub policy: Option<PolicySource>,
    pub history: Option<String>,
    pub model: Option<String>,
    /// `[source] duplicates` (flags go over it).
    pub duplicates: Option<DuplicateRule>,
    /// `[source] max_retriever_failures` (flags go over it).
    pub max_retriever_failures: Option<FailureLimit>,
    /// `[retriever] arms`, or `VEREDICTO_ARMS` (flags go over it).
    pub arms: Vec<String>,
}

/// The file's keys, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProject {
    golden: Option<String>,
    corpus: Option<String>,
    history: Option<String>,
    model: Option<String>,
    policy_file: Option<String>,
    source: Option<RawSource>,
    retriever: Option<RawRetriever>,
    /// Checked separately (with the policy reader's messages and line numbers).
    policy: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    index: Option<String>,
    retriever: Option<String>,
    run: Option<String>,
    duplicates: Option<String>,
    /// `"10%"` or a number of cases.
    max_retriever_failures: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetriever {
    arms: Option<Vec<String>>,
}

/// An arm as written in the project file: the path of an `index:` or `run:` arm resolved
/// against `root` (a query string kept), every other URI as written.
pub(crate) fn arm_value(root: &Path, arm: &str) -> String {
    for scheme in ["index:", "run:"] {
        if let Some(rest) = arm.strip_prefix(scheme) {
            let (path, query) = match rest.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (rest, None),
            };
            if path.is_empty() || path == "-" || Path::new(path).is_absolute() {
                return arm.to_owned();
            }
            let resolved = under(root, path).display().to_string();
            return match query {
                Some(q) => format!("{scheme}{resolved}?{q}"),
                None => format!("{scheme}{resolved}"),
            };
        }
    }
    arm.to_owned()
}

/// The arms of `VEREDICTO_ARMS`: URIs separated by `|`, each trimmed, empty ones left out.
pub fn split_arms(value: &str) -> Vec<String> {
    value
        .split('|')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The nearest `veredicto.toml` in `start` or one of its ancestors, whoever owns it (see
/// [`discover_trusted`] for the walk that commands use).
pub fn discover(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(FILE_NAME))
        .find(|p| p.is_file())
}

/// Whose project files discovery may use, the way git's `safe.directory` decides whose
/// repositories it opens: a project file can name a `cmd:` retriever (a program veredicto
/// runs as the invoking user) and the history runs are recorded into, so one planted in a
/// shared folder must not be picked up by walking into that folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trust {
    /// The current (effective) user. `None`: no ownership check (not a Unix system).
    pub uid: Option<u32>,
    /// Folders whose project file is used whoever owns it or its folder
    /// (`VEREDICTO_TRUSTED_PATHS`).
    pub paths: Vec<TrustedPath>,
}

/// One entry of the trusted paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustedPath {
    /// `DIR`: that folder only.
    Folder(PathBuf),
    /// `DIR/*`: that folder and every folder below it.
    Below(PathBuf),
    /// `*`: every folder.
    Any,
}

impl TrustedPath {
    /// An entry as written: `*`, `DIR/*` or `DIR` (relative folders resolve against `cwd`;
    /// a trailing separator is ignored). `None` for an empty entry.
    pub fn parse(entry: &str, cwd: &Path) -> Option<TrustedPath> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        if entry == "*" {
            return Some(TrustedPath::Any);
        }
        let (dir, below) = match entry.strip_suffix("/*") {
            Some(d) => (if d.is_empty() { "/" } else { d }, true),
            None => (entry, false),
        };
        let dir = cwd.join(dir);
        // The walk sees physical folders (the working folder has no symbolic links).
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        Some(if below {
            TrustedPath::Below(dir)
        } else {
            TrustedPath::Folder(dir)
        })
    }

    fn covers(&self, dir: &Path) -> bool {
        match self {
            TrustedPath::Any => true,
            TrustedPath::Folder(d) => d == dir,
            TrustedPath::Below(d) => dir.starts_with(d),
        }
    }
}

impl Trust {
    fn by_setting(&self, dir: &Path) -> bool {
        self.paths.iter().any(|p| p.covers(dir))
    }

    /// Whether `uid` is the current user or root.
    fn owner_ok(&self, uid: u32) -> bool {
        self.uid.is_none_or(|me| uid == me || uid == 0)
    }
}

/// What is foreign about an untrusted project file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    /// The file itself belongs to another user.
    File,
    /// The folder it is in belongs to another user.
    Folder,
}

/// The result of [`discover_trusted`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discovery {
    /// No project file in the folder or its ancestors up to where the walk stopped:
    /// `stopped_at` is the first folder owned by another user (not searched), if any.
    None { stopped_at: Option<(PathBuf, u32)> },
    /// The project file to use. `by_setting`: its folder is a trusted path (its owner was not
    /// checked).
    Found { file: PathBuf, by_setting: bool },
    /// The nearest project file belongs to another user, or is in another user's folder:
    /// not used, and the walk stops there.
    Untrusted {
        file: PathBuf,
        owner: u32,
        foreign: Foreign,
    },
}

/// The owner of a file (following symbolic links: a link in your folder to someone else's
/// file is their file). `None` where the system has no owners or the file cannot be read.
pub fn owner(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| m.uid())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// True when every user of the machine may write `path` (mode `o+w`).
pub fn world_writable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o002 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// The nearest `veredicto.toml` in `start` or an ancestor that `trust` allows. The walk
/// goes up from `start` and stops at the first folder owned by neither the current user nor
/// root (unless a trusted path covers it): that folder is not searched, nor any above it. A
/// project file found in a trusted folder is used only when it too belongs to the current
/// user or root (or a trusted path covers its folder); otherwise it is reported as
/// [`Discovery::Untrusted`] and the walk stops.
pub fn discover_trusted(start: &Path, trust: &Trust) -> Discovery {
    walk(start, trust, &owner)
}

/// [`discover_trusted`] with the owner lookup given (tests give owners without `chown`).
fn walk(start: &Path, trust: &Trust, owner: &dyn Fn(&Path) -> Option<u32>) -> Discovery {
    for dir in start.ancestors() {
        let file = dir.join(FILE_NAME);
        let present = file.is_file();
        if trust.by_setting(dir) {
            if present {
                return Discovery::Found {
                    file,
                    by_setting: true,
                };
            }
            continue;
        }
        if let Some(uid) = owner(dir).filter(|&u| !trust.owner_ok(u)) {
            return if present {
                let owner = owner(&file).filter(|&u| !trust.owner_ok(u)).unwrap_or(uid);
                Discovery::Untrusted {
                    file,
                    owner,
                    foreign: Foreign::Folder,
                }
            } else {
                Discovery::None {
                    stopped_at: Some((dir.to_path_buf(), uid)),
                }
            };
        }
        if present {
            return match owner(&file).filter(|&u| !trust.owner_ok(u)) {
                Some(uid) => Discovery::Untrusted {
                    file,
                    owner: uid,
                    foreign: Foreign::File,
                },
                None => Discovery::Found {
                    file,
                    by_setting: false,
                },
            };
        }
    }
    Discovery::None { stopped_at: None }
}

/// Reads and validates a project file.
pub fn read_project(path: &Path) -> Result<Project> {
    let source = text::read_to_string(path)?;
    parse_project(path, &source)
}

/// Parses and validates a project file's text; `path` locates it (its folder is the root
/// for relative paths) and names it in messages.
pub fn parse_project(path: &Path, text: &str) -> Result<Project> {
    let source_text = text;
    let raw: RawProject = toml::from_str(source_text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let (field, message) = match unknown_field(&message) {
            Some((field, expected)) => {
                let hint = did_you_mean(&field, expected.iter().map(String::as_str))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                let known = expected
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                (
                    field,
                    format!("unknown key{hint}; the keys of this table are {known}"),
                )
            }
            None => ("-".to_owned(), message),
        };
        let line = Some(crate::policy::key_line(source_text, &field))
            .filter(|&l| l > 0)
            .or_else(|| {
                e.span().map(|s| {
                    1 + source_text[..s.start.min(source_text.len())]
                        .matches('\n')
                        .count()
                })
            })
            .unwrap_or(0);
        FormatError::invalid(path, line, field, message)
    })?;
    let root = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let resolve = |p: &str| under(&root, p);
    let line_of = |key: &str| crate::policy::key_line(source_text, key);
    let nonempty = |key: &str, v: Option<String>| -> Result<Option<String>> {
        match v {
            Some(s) if s.trim().is_empty() => Err(FormatError::invalid(
                path,
                line_of(key),
                key,
                "empty: remove the key or give a value",
            )),
            other => Ok(other),
        }
    };
    let golden = nonempty("golden", raw.golden)?.map(|p| resolve(&p));
    let corpus = nonempty("corpus", raw.corpus)?.map(|p| resolve(&p));
    let history = nonempty("history", raw.history)?.map(|h| history_value(&root, &h));
    let model = nonempty("model", raw.model)?.map(|m| model_value(&root, &m));
    let mut duplicates = None;
    let mut max_retriever_failures = None;
    if let Some(s) = &raw.source {
        let invalid = |key: &str, message: String| {
            let full = format!("source.{key}");
            FormatError::invalid(path, line_of(&full), full, message)
        };
        if let Some(d) = &s.duplicates {
            duplicates = Some(
                d.parse::<DuplicateRule>()
                    .map_err(|m| invalid("duplicates", m))?,
            );
        }
        if let Some(v) = &s.max_retriever_failures {
            let text = match v {
                toml::Value::String(t) => t.clone(),
                toml::Value::Integer(n) => n.to_string(),
                other => {
                    return Err(invalid(
                        "max_retriever_failures",
                        format!(
                            "expected a number of cases (3) or a share of the cases (\"10%\"), found a {}",
                            other.type_str()
                        ),
                    ))
                }
            };
            max_retriever_failures = Some(
                text.parse::<FailureLimit>()
                    .map_err(|m| invalid("max_retriever_failures", m))?,
            );
        }
    }
    let source = match raw.source {
        None => None,
        Some(s) => {
            let given: Vec<(&str, String)> = [
                ("index", s.index),
                ("retriever", s.retriever),
                ("run", s.run),
            ]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
            match given.as_slice() {
                [] => None,
                [(key, value)] => {
                    let full = format!("source.{key}");
                    let value = nonempty(&full, Some(value.clone()))?.unwrap_or_default();
                    Some(match *key {
                        "index" => Source::Index(resolve(&value)),
                        "run" => Source::Run(resolve(&value)),
                        _ => Source::Retriever(value),
                    })
                }
                [_, (second, _), ..] => {
                    return Err(FormatError::invalid(
                        path,
                        line_of(&format!("source.{second}")),
                        format!("source.{second}"),
                        "give one source: `index`, `retriever` or `run`",
                    ))
                }
            }
        }
    };
    let mut arms = Vec::new();
    if let Some(r) = &raw.retriever {
        for (i, arm) in r.arms.iter().flatten().enumerate() {
            if arm.trim().is_empty() {
                return Err(FormatError::invalid(
                    path,
                    line_of("retriever.arms"),
                    format!("retriever.arms[{i}]"),
                    "empty: give a retriever URI (`index:DIR?mode=bm25`, `run:FILE`, …)",
                ));
            }
            arms.push(arm_value(&root, arm.trim()));
        }
    }
    let policy = match (raw.policy, raw.policy_file) {
        (Some(_), Some(_)) => {
            return Err(FormatError::invalid(
                path,
                line_of("policy_file"),
                "policy_file",
                "give the policy either as a [policy] table or as policy_file, not both",
            ))
        }
        (Some(toml::Value::Table(_)), None) => Some(PolicySource::Table(Box::new(
            crate::policy::PolicyFile::parse(path, &policy_section(source_text))
                .map_err(prefix_policy_field)?,
        ))),
        (Some(_), None) => {
            return Err(FormatError::invalid(
                path,
                line_of("policy"),
                "policy",
                "must be a [policy] table (use policy_file = \"FILE\" for a separate file)",
            ))
        }
        (None, Some(f)) => {
            nonempty("policy_file", Some(f))?.map(|f| PolicySource::File(resolve(&f)))
        }
        (None, None) => None,
    };
    Ok(Project {
        path: path.to_path_buf(),
        root,
        golden,
        corpus,
        source,
        policy,
        history,
        model,
        duplicates,
        max_retriever_failures,
        arms,
    })
}

/// `value` resolved against `root`, without a leading `./` when the root is the working
/// folder itself (messages then show `.veredicto/history.db`, as the user would write it).
fn under(root: &Path, value: &str) -> PathBuf {
    if root == Path::new(".") {
        PathBuf::from(value)
    } else {
        root.join(value)
    }
}

/// A history value: a `postgres://` URL as written, a path resolved against `root`.
fn history_value(root: &Path, value: &str) -> String {
    if value.starts_with("postgres://") || value.starts_with("postgresql://") {
        value.to_owned()
    } else {
        under(root, value).display().to_string()
    }
}

/// A model value: a path-like value (with a separator or a leading `.`) resolved against
/// `root`; a name (`multilingual-e5-small`) as written.
fn model_value(root: &Path, value: &str) -> String {
    if value.contains('/') || value.contains('\\') || value.starts_with('.') {
        under(root, value).display().to_string()
    } else {
        value.to_owned()
    }
}

/// The project file's `[policy]` and `[policy.…]` tables as a policy file of their own,
/// every other line blanked so that line numbers stay those of the project file.
fn policy_section(source: &str) -> String {
    let mut inside = false;
    let mut out = String::with_capacity(source.len());
    for raw in source.lines() {
        let line = raw.trim();
        if line.starts_with('[') {
            let header = line
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim();
            if header == "policy" {
                inside = true;
                out.push('\n');
                continue;
            }
            if let Some(rest) = header.strip_prefix("policy.") {
                inside = true;
                let double = line.starts_with("[[");
                out.push_str(if double { "[[" } else { "[" });
                out.push_str(rest);
                out.push_str(if double { "]]\n" } else { "]\n" });
                continue;
            }
            inside = false;
            out.push('\n');
            continue;
        }
        if inside {
            out.push_str(raw);
        }
        out.push('\n');
    }
    out
}

/// Policy errors name their key inside `[policy]`: `top_k` becomes `policy.top_k`.
fn prefix_policy_field(e: FormatError) -> FormatError {
    match e {
        FormatError::Invalid {
            path,
            line,
            field,
            message,
        } if field != "-" => FormatError::Invalid {
            path,
            line,
            field: format!("policy.{field}"),
            message,
        },
        other => other,
    }
}

/// serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a`"): the field and
/// the keys it lists.
pub(crate) fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    Some((field.to_owned(), expected))
}

/// The candidate closest to `unknown` when it is close enough to be a typo (Jaro-Winkler
/// similarity of at least 0.8; ties go to the first candidate).
pub fn did_you_mean<'a>(
    unknown: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(&str, f64)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(unknown, c);
        if score >= 0.8 && best.is_none_or(|(_, s)| score > s) {
            best = Some((c, score));
        }
    }
    best.map(|(c, _)| c)
}

impl Settings {
    /// The effective settings from the project file (if any) and the `VEREDICTO_*`
    /// variables `env` returns (empty values count as unset). Relative paths from the
    /// environment resolve against `cwd`.
    pub fn resolve(
        project: Option<Project>,
        env: &dyn Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> Settings {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let path = |name: &str| var(name).map(|v| cwd.join(v));
        let mut s = match project {
            Some(p) => Settings {
                project: Some(p.path),
                root: Some(p.root),
                golden: p.golden,
                corpus: p.corpus,
                source: p.source,
                policy: p.policy,
                history: p.history,
                model: p.model,
                duplicates: p.duplicates,
                max_retriever_failures: p.max_retriever_failures,
                arms: p.arms,
            },
            None => Settings::default(),
        };
        if let Some(v) = path("VEREDICTO_GOLDEN") {
            s.golden = Some(v);
        }
        if let Some(v) = path("VEREDICTO_CORPUS") {
            s.corpus = Some(v);
        }
        if let Some(v) = path("VEREDICTO_INDEX") {
            s.source = Some(Source::Index(v));
        } else if let Some(v) = var("VEREDICTO_RETRIEVER") {
            s.source = Some(Source::Retriever(v));
        } else if let Some(v) = path("VEREDICTO_RUN") {
            s.source = Some(Source::Run(v));
        }
        if let Some(v) = path("VEREDICTO_POLICY") {
            s.policy = Some(PolicySource::File(v));
        }
        // As written: a relative path is relative to the working folder anyway, and
        // messages show it the way the user gave it.
        if let Some(v) = var("VEREDICTO_HISTORY") {
            s.history = Some(v);
        }
        if let Some(v) = var("VEREDICTO_MODEL") {
            s.model = Some(model_value(cwd, &v));
        }
        if let Some(v) = var("VEREDICTO_ARMS") {
            s.arms = split_arms(&v);
        }
        s
    }

    /// The history when neither a flag, the environment nor the file names one:
    /// `.veredicto/history.db` in the project root, else in the working folder.
    pub fn history_or_default(&self) -> String {
        match (&self.history, &self.root) {
            (Some(h), _) => h.clone(),
            (None, Some(root)) => under(root, ".veredicto/history.db").display().to_string(),
            (None, None) => ".veredicto/history.db".to_owned(),
        }
    }
}

/// What `veredicto init` writes.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    pub golden: String,
    pub corpus: Option<String>,
    /// `("index" | "retriever" | "run", value)`.
    pub source: (String, String),
    pub history: String,
    pub model: Option<String>,
}

/// The text of a new project file: the given values, and the default policy written out
/// with a comment per key so that a team sees what it may change.
pub fn init_text(o: &InitOptions) -> String {
    let q = |s: &str| toml::Value::String(s.to_owned()).to_string();
    let p = Policy::default();
    let mut t = String::new();
    t.push_str("# veredicto project file. Every command finds it by walking up from its working\n");
    t.push_str("# folder; relative paths resolve against this file's folder. Flags override it,\n");
    t.push_str("# and VEREDICTO_* environment variables override it too (see docs/config.md).\n\n");
    t.push_str("# The golden set: JSONL cases, or a BEIR folder.\n");
    t.push_str(&format!("golden = {}\n", q(&o.golden)));
    match &o.corpus {
        Some(c) => {
            t.push_str("# The chunks (JSONL): ingested into the index, and labels/text for the diagnosis.\n");
            t.push_str(&format!("corpus = {}\n", q(c)));
        }
        None => t.push_str("# corpus = \"corpus.jsonl\"\n"),
    }
    t.push_str("# The run history (SQLite file, or a postgres:// URL without password).\n");
    t.push_str(&format!("history = {}\n", q(&o.history)));
    match &o.model {
        Some(m) => {
            t.push_str(
                "# The embedding model: a known name (`veredicto models list`) or a folder.\n",
            );
            t.push_str(&format!("model = {}\n", q(m)));
        }
        None => t.push_str("# model = \"multilingual-e5-small\"   # the default; or all-minilm-l6-v2, or a folder\n"),
    }
    t.push_str("\n# Where the results come from: one of index, retriever or run.\n[source]\n");
    t.push_str(&format!("{} = {}\n", o.source.0, q(&o.source.1)));
    t.push_str(
        "\n# The acceptance policy (the defaults, uncalibrated: `veredicto calibrate` proposes\n",
    );
    t.push_str("# values from your first complete suite).\n[policy]\n");
    t.push_str("# Results examined per case (K).\n");
    t.push_str(&format!("top_k = {}\n", p.top_k));
    t.push_str("# A case fails when its recall@K is below this.\n");
    t.push_str(&format!("recall_floor = {:?}\n", p.recall_floor));
    t.push_str("# The suite stops when the mean Quality Score (0..100) is below this.\n");
    t.push_str(&format!("min_mean_quality = {:?}\n", p.min_mean_quality));
    t.push_str("# Results scoring below the worst expected chunk, as a fraction of K.\n");
    t.push_str(&format!("noise_ceiling = {:?}\n", p.noise_ceiling));
    t.push_str("# Chunks with this label are curated (gold): a failing gold case always stops.\n");
    t.push_str(&format!("gold_label = {}\n", q(&p.gold_label)));
    t.push_str("# Non-gold failing cases tolerated, as a fraction of all cases.\n");
    t.push_str(&format!(
        "max_failing_fraction = {:?}\n",
        p.max_failing_fraction
    ));
    t
}

/// A project file's text pointing its policy at `policy_file` (`veredicto calibrate
/// --write-project`): the `[policy]` and `[policy.…]` tables (with the comment lines just
/// above them) and any `policy_file` key give way to one `policy_file = "…"` line among the
/// top-level keys, so that the file gives the policy one way only. Every other line stays
/// as written.
pub fn with_policy_file(text: &str, policy_file: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let header_of = |line: &str| -> Option<String> {
        let t = line.trim();
        t.starts_with('[').then(|| {
            t.trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim()
                .to_owned()
        })
    };
    let is_policy = |h: &str| h == "policy" || h.starts_with("policy.");
    let mut keep = vec![true; lines.len()];
    let mut in_policy = false;
    let mut top_level = true;
    for (i, line) in lines.iter().enumerate() {
        if let Some(h) = header_of(line) {
            top_level = false;
            in_policy = is_policy(&h);
            if in_policy {
                // The comment block just above the table goes with it.
                let mut j = i;
                while j > 0 && lines[j - 1].trim_start().starts_with('#') && keep[j - 1] {
                    j -= 1;
                    keep[j] = false;
                }
            }
        }
        let key = line.split('=').next().unwrap_or("").trim();
        if in_policy || (top_level && key == "policy_file") {
            keep[i] = false;
        }
    }
    let value = toml::Value::String(policy_file.to_owned()).to_string();
    let entry = format!(
        "# The acceptance policy, calibrated by `veredicto calibrate`.\npolicy_file = {value}\n"
    );
    let first_table = lines
        .iter()
        .position(|l| header_of(l).is_some())
        .unwrap_or(lines.len());
    // The comment block above the first table belongs to that table: the key goes before it.
    let mut at = first_table;
    while at > 0 && lines[at - 1].trim_start().starts_with('#') {
        at -= 1;
    }
    let mut out = String::with_capacity(text.len() + entry.len());
    let mut inserted = false;
    for (i, line) in lines.iter().enumerate() {
        if i == at {
            out.push_str(&entry);
            out.push('\n');
            inserted = true;
        }
        if keep[i] {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !inserted {
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(&entry);
    }
    // No run of blank lines where the tables were.
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn with_policy_file_replaces_the_policy_table_and_keeps_the_rest() {
        let text = "golden = \"g.jsonl\"\n\n# Where results come from.\n[source]\nindex = \"kb\"\n\n# The acceptance policy.\n[policy]\ntop_k = 5\n\n[policy.ingest]\nmax_rejected = 3\n\n[history]\n";
        let out = super::with_policy_file(text, "policy.toml");
        assert_eq!(
            out,
            "golden = \"g.jsonl\"\n\n# The acceptance policy, calibrated by `veredicto calibrate`.\npolicy_file = \"policy.toml\"\n\n# Where results come from.\n[source]\nindex = \"kb\"\n\n[history]\n"
        );
        let again = super::with_policy_file(&out, "other.toml");
        assert_eq!(again.matches("policy_file").count(), 1, "{again}");
        assert!(again.contains("policy_file = \"other.toml\""), "{again}");
    }

    use super::*;

    fn parse(s: &str) -> Result<Project> {
        parse_project(Path::new("/p/veredicto.toml"), s)
    }

    #[test]
    fn paths_resolve_against_the_file_folder() {
        let p = parse(
            "golden = \"g.jsonl\"\ncorpus = \"data/c.jsonl\"\nhistory = \".veredicto/h.db\"\nmodel = \"./m\"\n[source]\nindex = \"idx\"\n",
        )
        .unwrap();
        assert_eq!(p.golden, Some(PathBuf::from("/p/g.jsonl")));
        assert_eq!(p.corpus, Some(PathBuf::from("/p/data/c.jsonl")));
        assert_eq!(p.history.as_deref(), Some("/p/.veredicto/h.db"));
        assert_eq!(p.model.as_deref(), Some("/p/./m"));
        assert_eq!(p.source, Some(Source::Index(PathBuf::from("/p/idx"))));
    }

    #[test]
    fn names_and_urls_are_kept_as_written() {
        let p = parse("model = \"multilingual-e5-small\"\nhistory = \"postgres://u@h/db\"\n[source]\nretriever = \"http://127.0.0.1:9/s\"\n").unwrap();
        assert_eq!(p.model.as_deref(), Some("multilingual-e5-small"));
        assert_eq!(p.history.as_deref(), Some("postgres://u@h/db"));
        assert_eq!(
            p.source,
            Some(Source::Retriever("http://127.0.0.1:9/s".into()))
        );
    }

    #[test]
    fn unknown_key_names_line_and_suggests() {
        let err = parse("golden = \"g\"\ncorpsu = \"c\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "/p/veredicto.toml:2: field `corpsu`: unknown key (did you mean `corpus`?)"
            ),
            "{err}"
        );
        let err = parse("[source]\nindx = \"i\"\n").unwrap_err().to_string();
        assert!(err.contains(":2: field `indx`"), "{err}");
        assert!(err.contains("did you mean `index`?"), "{err}");
    }

    #[test]
    fn policy_table_keeps_line_numbers_and_suggests() {
        let p =
            parse("golden = \"g\"\n\n[policy]\ntop_k = 5\n\n[policy.domains.viajes]\ntop_k = 3\n")
                .unwrap();
        match p.policy {
            Some(PolicySource::Table(pol)) => {
                assert_eq!(pol.exam.top_k, 5);
                assert_eq!(pol.exam.domains["viajes"].top_k, Some(3));
            }
            other => panic!("{other:?}"),
        }
        let err = parse(
            "golden = \"g\"\n[policy]\ntop_k = 5\nrecal_floor = 0.8\n[source]\nrun = \"r\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("/p/veredicto.toml:4: field `policy.recal_floor`"),
            "{err}"
        );
        assert!(err.contains("did you mean `recall_floor`?"), "{err}");
        let err = parse("[policy]\nnoise_ceiling = 2.0\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/p/veredicto.toml:2: field `policy.noise_ceiling`"),
            "{err}"
        );
    }

    #[test]
    fn two_sources_or_two_policies_are_errors() {
        let err = parse("[source]\nindex = \"i\"\nrun = \"r\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/p/veredicto.toml:3: field `source.run`: give one source"),
            "{err}"
        );
        let err = parse("policy_file = \"p.toml\"\n[policy]\ntop_k = 3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains(":1: field `policy_file`"), "{err}");
        let err = parse("golden = \"\"\n").unwrap_err().to_string();
        assert!(err.contains(":1: field `golden`: empty"), "{err}");
    }

    #[test]
    fn the_source_says_how_answers_are_treated() {
        let p = parse(
            "[source]\nretriever = \"http://127.0.0.1:9/s\"\nduplicates = \"refuse\"\nmax_retriever_failures = \"10%\"\n",
        )
        .unwrap();
        assert_eq!(p.duplicates, Some(DuplicateRule::Refuse));
        assert_eq!(p.max_retriever_failures, Some(FailureLimit::Share(0.1)));
        let p = parse("[source]\nmax_retriever_failures = 3\n").unwrap();
        assert_eq!(p.max_retriever_failures, Some(FailureLimit::Count(3)));
        assert_eq!(p.source, None);
        let err = parse("[source]\nindex = \"i\"\n\nduplicates = \"first\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "/p/veredicto.toml:4: field `source.duplicates`: expected `keep-first` or `refuse`"
            ),
            "{err}"
        );
        let err = parse("[source]\nmax_retriever_failures = \"150%\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("/p/veredicto.toml:2: field `source.max_retriever_failures`"),
            "{err}"
        );
    }

    #[test]
    fn environment_overrides_the_file() {
        let p = parse("golden = \"g.jsonl\"\n[source]\nindex = \"idx\"\n").unwrap();
        let env = |k: &str| match k {
            "VEREDICTO_GOLDEN" => Some("other.jsonl".to_owned()),
            "VEREDICTO_RUN" => Some("r.trec".to_owned()),
            "VEREDICTO_HISTORY" => Some(String::new()),
            _ => None,
        };
        let s = Settings::resolve(Some(p), &env, Path::new("/cwd"));
        assert_eq!(s.golden, Some(PathBuf::from("/cwd/other.jsonl")));
        assert_eq!(s.source, Some(Source::Run(PathBuf::from("/cwd/r.trec"))));
        assert_eq!(s.history_or_default(), "/p/.veredicto/history.db");
        let none = Settings::resolve(None, &|_| None, Path::new("/cwd"));
        assert_eq!(none.history_or_default(), ".veredicto/history.db");
    }

    #[test]
    fn init_text_parses_back() {
        let text = init_text(&InitOptions {
            golden: "golden.jsonl".into(),
            corpus: Some("corpus.jsonl".into()),
            source: ("index".into(), ".veredicto/index".into()),
            history: ".veredicto/history.db".into(),
            model: Some("all-minilm-l6-v2".into()),
        });
        let p = parse(&text).unwrap();
        assert_eq!(p.golden, Some(PathBuf::from("/p/golden.jsonl")));
        assert_eq!(p.policy, Some(PolicySource::Table(Box::default())));
    }

    #[test]
    fn discovery_walks_up() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(discover(&sub), None);
        std::fs::write(dir.path().join(FILE_NAME), "").unwrap();
        assert_eq!(discover(&sub), Some(dir.path().join(FILE_NAME)));
    }

    /// Regression: discovery walked into folders of other users and used the project file
    /// it found there (its `cmd:` retriever runs as the invoking user).
    #[test]
    fn discovery_stops_at_files_and_folders_of_other_users_unless_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let shared = root.join("shared");
        let mine = shared.join("mine");
        let sub = mine.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(shared.join(FILE_NAME), "").unwrap();
        let me = 1000;
        let trust = |paths: Vec<TrustedPath>| Trust {
            uid: Some(me),
            paths,
        };
        // Everything is mine (or root's) but what is named here.
        let owners = |foreign: Vec<PathBuf>| {
            move |p: &Path| {
                Some(if foreign.iter().any(|f| f == p) {
                    7
                } else {
                    me
                })
            }
        };
        let shared_file = shared.join(FILE_NAME);
        // Their folder: the file in it is not used, whoever owns the file.
        assert_eq!(
            walk(&sub, &trust(vec![]), &owners(vec![shared.clone()])),
            Discovery::Untrusted {
                file: shared_file.clone(),
                owner: 7,
                foreign: Foreign::Folder
            }
        );
        // Their file in my folder.
        assert_eq!(
            walk(&sub, &trust(vec![]), &owners(vec![shared_file.clone()])),
            Discovery::Untrusted {
                file: shared_file.clone(),
                owner: 7,
                foreign: Foreign::File
            }
        );
        // Root's folders and files are trusted.
        let root_owned = |p: &Path| Some(if p.starts_with(&mine) { me } else { 0 });
        assert_eq!(
            walk(&sub, &trust(vec![]), &root_owned),
            Discovery::Found {
                file: shared_file.clone(),
                by_setting: false
            }
        );
        // A file of mine above their folder is not reached.
        std::fs::remove_file(&shared_file).unwrap();
        std::fs::write(root.join(FILE_NAME), "").unwrap();
        assert_eq!(
            walk(&sub, &trust(vec![]), &owners(vec![shared.clone()])),
            Discovery::None {
                stopped_at: Some((shared.clone(), 7))
            }
        );
        // Trusted paths: the folder itself, `DIR/*` below it, `*` everywhere.
        std::fs::write(&shared_file, "").unwrap();
        for entry in [
            shared.display().to_string(),
            format!("{}/", shared.display()),
            format!("{}/*", root.display()),
            "*".to_owned(),
        ] {
            let t = trust(vec![TrustedPath::parse(&entry, &root).unwrap()]);
            assert_eq!(
                walk(&sub, &t, &owners(vec![shared.clone(), shared_file.clone()])),
                Discovery::Found {
                    file: shared_file.clone(),
                    by_setting: true
                },
                "{entry}"
            );
        }
        // `DIR` does not trust the folders below it; a relative entry is the working folder's.
        let t = trust(vec![TrustedPath::parse("shared", &root).unwrap()]);
        assert_eq!(
            walk(&sub, &t, &owners(vec![mine.clone(), shared.clone()])),
            Discovery::None {
                stopped_at: Some((mine.clone(), 7))
            }
        );
        assert_eq!(TrustedPath::parse("  ", &root), None);
        // No ownership check where the system has none.
        let t = Trust {
            uid: None,
            paths: vec![],
        };
        assert_eq!(
            walk(&sub, &t, &owners(vec![shared.clone()])),
            Discovery::Found {
                file: shared_file,
                by_setting: false
            }
        );
    }

    #[test]
    fn suggestions_only_for_close_names() {
        assert_eq!(
            did_you_mean("recal_floor", ["top_k", "recall_floor"]),
            Some("recall_floor")
        );
        assert_eq!(did_you_mean("zzz", ["top_k", "recall_floor"]), None);
    }
}
