//! Settings, resolved once by the front end and passed down: what the user gave (flags,
//! keyword arguments, a form: [`Overrides`]) over the `VEREDICTO_*` environment over the
//! project file over the defaults. The environment and the working folder are inputs too
//! ([`Env`], [`Settings::cwd`]), and so is the time ([`Clock`]): nothing in the application
//! reads them from the process.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use veredicto_core::retrieval::{DuplicateRule, FailureLimit};
use veredicto_formats::config::{self, PolicySource, Project, Source};
use veredicto_formats::policy::{PolicyFile, Section};

use crate::history::HistorySpec;
use crate::Result;

/// A snapshot of environment variables, taken by the front end (the command line takes its
/// process's whole environment once).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: Vec<(OsString, OsString)>,
}

impl Env {
    /// The variables given (later ones win over earlier ones of the same name).
    pub fn from_vars(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Env {
        Env {
            vars: vars.into_iter().collect(),
        }
    }

    /// The same with `name` set to `value`.
    pub fn with(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Env {
        self.vars.push((name.into(), value.into()));
        self
    }

    /// A variable's value, when it is set and is UTF-8.
    pub fn get(&self, name: &str) -> Option<String> {
        self.get_os(name)
            .and_then(|v| v.to_str())
            .map(str::to_owned)
    }

    /// A variable's value as the system gave it.
    pub fn get_os(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// Every variable (for the environment a `cmd:` retriever may be given).
    pub fn vars_os(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        let mut seen = std::collections::BTreeSet::new();
        let mut out: Vec<(&OsStr, &OsStr)> = Vec::new();
        for (n, v) in self.vars.iter().rev() {
            if seen.insert(n.as_os_str()) {
                out.push((n.as_os_str(), v.as_os_str()));
            }
        }
        out.reverse();
        out.into_iter()
    }
}

/// The time, as the front end reads it.
pub trait Clock: Sync {
    /// Now in UTC, RFC 3339 with milliseconds (`2026-11-30T10:20:30.123Z`).
    fn now(&self) -> String;
    /// Today's date in UTC (`YYYY-MM-DD`).
    fn today(&self) -> String {
        self.now().get(..10).unwrap_or_default().to_owned()
    }
}

/// A clock that always says the same time (tests, reproducible runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedClock(pub String);

impl Clock for FixedClock {
    fn now(&self) -> String {
        self.0.clone()
    }
}

/// What the user gave for the settings every command shares; `None` leaves it to the
/// environment, the project file and the defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `--golden`.
    pub golden: Option<PathBuf>,
    /// `--corpus`.
    pub corpus: Option<PathBuf>,
    /// `--index`, `--run`, `--retriever`.
    pub source: Option<Source>,
    /// `--policy`.
    pub policy: Option<PathBuf>,
    /// `--history`.
    pub history: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--duplicates`.
    pub duplicates: Option<DuplicateRule>,
    /// `--max-retriever-failures`.
    pub max_retriever_failures: Option<FailureLimit>,
    /// `--arm` (each given; `None` or empty leaves the arms to the environment and the
    /// project file).
    pub arms: Option<Vec<String>>,
}

/// The effective settings of one command: flags, else the environment, else the project
/// file, else the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The working folder (relative paths given by the user resolve against it).
    pub cwd: PathBuf,
    /// The environment the command may read (API keys named by flags, the models folder,
    /// what a `cmd:` retriever is passed).
    pub env: Env,
    /// The project file in use, if any.
    pub project: Option<PathBuf>,
    /// The project root (the project file's folder).
    pub root: Option<PathBuf>,
    /// The golden set.
    pub golden: Option<PathBuf>,
    /// The chunk corpus.
    pub corpus: Option<PathBuf>,
    /// Where results come from.
    pub source: Option<Source>,
    /// The policy: a file, or the project file's `[policy]` table.
    pub policy: Option<PolicySource>,
    /// The run history.
    pub history: HistorySpec,
    /// The embedding model (a known name or a folder).
    pub model: Option<String>,
    /// What to do with a chunk ID answered twice for one case.
    pub duplicates: DuplicateRule,
    /// The most cases a live retriever may fail for.
    pub max_retriever_failures: FailureLimit,
    /// The arms of a `fusion:` retriever, in order (read only when the source is one).
    pub arms: Vec<String>,
}

impl Settings {
    /// Resolves the settings once: `flags` over the `VEREDICTO_*` variables of `env` over
    /// `project` over the defaults. Relative paths from the environment resolve against
    /// `cwd`; the project file's against its folder.
    pub fn resolve(flags: &Overrides, project: Option<Project>, env: Env, cwd: &Path) -> Settings {
        let base = config::Settings::resolve(project, &|name| env.get(name), cwd);
        let history = match (&flags.history, &base.history) {
            (Some(h), _) => HistorySpec::chosen(h.clone()),
            (None, Some(h)) => HistorySpec::chosen(h.clone()),
            (None, None) => HistorySpec::default_at(base.history_or_default()),
        };
        Settings {
            cwd: cwd.to_path_buf(),
            project: base.project,
            root: base.root,
            golden: flags.golden.clone().or(base.golden),
            corpus: flags.corpus.clone().or(base.corpus),
            source: flags.source.clone().or(base.source),
            policy: match &flags.policy {
                Some(p) => Some(PolicySource::File(p.clone())),
                None => base.policy,
            },
            history,
            model: flags.model.clone().or(base.model),
            duplicates: flags.duplicates.or(base.duplicates).unwrap_or_default(),
            max_retriever_failures: flags
                .max_retriever_failures
                .or(base.max_retriever_failures)
                .unwrap_or_default(),
            arms: match &flags.arms {
                Some(a) if !a.is_empty() => a.clone(),
                _ => base.arms,
            },
            env,
        }
    }

    /// These settings with `flags` over them (what one step of a larger command gives, e.g.
    /// a configuration of a matrix): each setting `flags` names replaces the resolved one.
    pub fn overridden(&self, flags: &Overrides) -> Settings {
        let mut s = self.clone();
        if let Some(g) = &flags.golden {
            s.golden = Some(g.clone());
        }
        if let Some(c) = &flags.corpus {
            s.corpus = Some(c.clone());
        }
        if let Some(src) = &flags.source {
            s.source = Some(src.clone());
        }
        if let Some(p) = &flags.policy {
            s.policy = Some(PolicySource::File(p.clone()));
        }
        if let Some(h) = &flags.history {
            s.history = HistorySpec::chosen(h.clone());
        }
        if let Some(m) = &flags.model {
            s.model = Some(m.clone());
        }
        if let Some(d) = flags.duplicates {
            s.duplicates = d;
        }
        if let Some(f) = flags.max_retriever_failures {
            s.max_retriever_failures = f;
        }
        if let Some(a) = flags.arms.as_ref().filter(|a| !a.is_empty()) {
            s.arms = a.clone();
        }
        s
    }

    /// Settings with nothing but the defaults, in `cwd` (tests, front ends without a
    /// project).
    pub fn defaults(cwd: &Path) -> Settings {
        Settings::resolve(&Overrides::default(), None, Env::default(), cwd)
    }

    /// The policy file in effect, parsed once: the file given, else the project's
    /// `[policy]` table, else the documented defaults.
    pub fn policy_file(&self) -> Result<PolicyFile> {
        Ok(match &self.policy {
            Some(PolicySource::File(p)) => PolicyFile::read(p)?,
            Some(PolicySource::Table(f)) => (**f).clone(),
            None => PolicyFile::default(),
        })
    }

    /// [`Self::policy_file`], reading and checking only `sections` of a policy file (those
    /// the command uses; the other tables are kept as written).
    pub fn policy_sections(&self, sections: &[Section]) -> Result<PolicyFile> {
        Ok(match &self.policy {
            Some(PolicySource::File(p)) => PolicyFile::read_sections(p, sections)?,
            Some(PolicySource::Table(f)) => (**f).clone(),
            None => PolicyFile::default(),
        })
    }

    /// The policy file's path, when the policy comes from one.
    pub fn policy_path(&self) -> Option<&Path> {
        match &self.policy {
            Some(PolicySource::File(p)) => Some(p),
            _ => None,
        }
    }

    /// The index folder of the source, when the source is veredicto's index.
    pub fn index(&self) -> Option<&Path> {
        match &self.source {
            Some(Source::Index(d)) => Some(d),
            Some(Source::Retriever(u)) => u.strip_prefix("index:").map(Path::new),
            _ => None,
        }
    }

    /// The source as a retriever URI (`index:DIR`, `run:FILE`, or the URI).
    pub fn source_uri(&self) -> Option<String> {
        self.source.as_ref().map(source_uri)
    }
}

/// A source as a retriever URI (`index:DIR`, `run:FILE`, or the URI as given).
pub fn source_uri(source: &Source) -> String {
    match source {
        Source::Index(dir) => format!("index:{}", dir.display()),
        Source::Run(file) => format!("run:{}", file.display()),
        Source::Retriever(uri) => uri.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flags over the environment over the defaults, and a step's own flags over those.
    #[test]
    fn flags_go_over_the_environment_and_a_steps_flags_over_both() {
        let env = Env::default()
            .with("VEREDICTO_HISTORY", "env.db")
            .with("VEREDICTO_GOLDEN", "env.jsonl");
        let cwd = Path::new("/work");
        let none = Settings::resolve(&Overrides::default(), None, env.clone(), cwd);
        assert_eq!(none.history.as_str(), "env.db");
        assert!(none.history.is_explicit());
        let flags = Overrides {
            history: Some("flag.db".into()),
            ..Overrides::default()
        };
        let given = Settings::resolve(&flags, None, env, cwd);
        assert_eq!(given.history.as_str(), "flag.db");
        assert_eq!(given.golden, none.golden);
        let step = given.overridden(&Overrides {
            golden: Some("step.jsonl".into()),
            duplicates: Some(DuplicateRule::Refuse),
            ..Overrides::default()
        });
        assert_eq!(step.golden.as_deref(), Some(Path::new("step.jsonl")));
        assert_eq!(step.history.as_str(), "flag.db");
        assert_eq!(step.duplicates, DuplicateRule::Refuse);
        assert_eq!(given.overridden(&Overrides::default()), given);
    }

    #[test]
    fn without_a_history_named_the_default_file_is_not_explicit() {
        let s = Settings::defaults(Path::new("/work"));
        assert_eq!(s.history.as_str(), ".veredicto/history.db");
        assert!(!s.history.is_explicit());
    }
}
