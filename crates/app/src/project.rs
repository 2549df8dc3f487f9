//! Finding the project file: `veredicto.toml` (found by walking up from the working folder,
//! or named by `VEREDICTO_CONFIG`), read once by the front end before any command; what it
//! says about the file (the line naming it, warnings about files found but not used).
//! [`crate::Settings::resolve`] puts the environment and the flags over it.
//!
//! Discovery trusts only project files that belong to the current user or root, in folders
//! that do (as git's `safe.directory`): a project file can name a `cmd:` retriever, a
//! program veredicto runs as you, so one planted in a shared folder above the working folder
//! is reported and not used. `VEREDICTO_CONFIG` (an explicit choice) and
//! `VEREDICTO_TRUSTED_PATHS` (folders trusted whoever owns them) lift the check.

use std::path::{Path, PathBuf};
use veredicto_formats::config::{self, Discovery, Foreign, Project, Trust, TrustedPath};

use crate::settings::Env;

/// Who and where the front end runs: the process's working folder, its environment, its
/// user (for the ownership check) and how that user's name is found.
pub struct Host<'a> {
    /// The working folder discovery starts from (relative paths resolve against it).
    pub cwd: &'a Path,
    /// The environment (`VEREDICTO_CONFIG`, `VEREDICTO_NO_CONFIG`, `VEREDICTO_TRUSTED_PATHS`).
    pub env: &'a Env,
    /// The effective user ID (`None`: no ownership check, as off Unix).
    pub uid: Option<u32>,
    /// The login name of a user ID, for messages.
    pub user_name: &'a dyn Fn(u32) -> Option<String>,
}

/// The project file in use and what to say about it before the command starts.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The project file, parsed (`None`: no project file is used).
    pub project: Option<Project>,
    /// The line naming the project file in use (a note: silenced by `-q`).
    pub in_use: Option<String>,
    /// Warnings about project files found but not used, or used but writable by anyone.
    pub warnings: Vec<String>,
    /// Details for `-v` (where discovery stopped).
    pub details: Vec<String>,
}

/// The variable listing trusted folders (separated like `PATH`).
pub const TRUSTED_PATHS_VAR: &str = "VEREDICTO_TRUSTED_PATHS";

/// A discovered project file as a path relative to the working folder (it is always in the
/// folder or one of its ancestors): `veredicto.toml`, `../veredicto.toml`, … so that paths
/// resolved against it read in messages as the user would type them.
fn relative_to(cwd: &Path, file: &Path) -> PathBuf {
    for (up, ancestor) in cwd.ancestors().enumerate() {
        if let Ok(rest) = file.strip_prefix(ancestor) {
            let mut p = PathBuf::new();
            for _ in 0..up {
                p.push("..");
            }
            p.push(rest);
            return p;
        }
    }
    file.to_path_buf()
}

/// `uid 1001 (alice)`, or `uid 1001` when the system has no name for it.
fn who(host: &Host<'_>, uid: u32) -> String {
    match (host.user_name)(uid) {
        Some(name) => format!("uid {uid} ({name})"),
        None => format!("uid {uid}"),
    }
}

fn trust(host: &Host<'_>) -> Trust {
    let cwd = host.cwd;
    let paths = host
        .env
        .get(TRUSTED_PATHS_VAR)
        .map(|v| {
            std::env::split_paths(&v)
                .filter_map(|p| TrustedPath::parse(&p.to_string_lossy(), cwd))
                .collect()
        })
        .unwrap_or_default();
    Trust {
        uid: host.uid,
        paths,
    }
}

fn world_writable_warning(shown: &Path) -> String {
    format!(
        "{} is writable by every user of this machine: anyone can change what veredicto runs and where it records (`chmod o-w {}`)",
        shown.display(),
        shown.display()
    )
}

/// Finds and reads the project file as `host` sees it; the error is the project file's (one
/// line naming the file, the line and the key).
pub fn load(host: &Host<'_>) -> Result<Loaded, String> {
    let cwd = host.cwd.to_path_buf();
    let env = |name: &str| host.env.get(name);
    let mut warnings = Vec::new();
    let mut details = Vec::new();
    let file: Option<(PathBuf, &str)> = if env("VEREDICTO_NO_CONFIG").is_some_and(|v| v == "1") {
        None
    } else {
        match env("VEREDICTO_CONFIG").filter(|v| !v.trim().is_empty()) {
            Some(p) => {
                let p = cwd.join(p);
                if !p.is_file() {
                    return Err(format!(
                        "VEREDICTO_CONFIG names {}, which is not a file",
                        p.display()
                    ));
                }
                Some((p, " (VEREDICTO_CONFIG)"))
            }
            None => match config::discover_trusted(&cwd, &trust(host)) {
                Discovery::Found { file, by_setting } => Some((
                    relative_to(&cwd, &file),
                    if by_setting {
                        " (trusted by VEREDICTO_TRUSTED_PATHS)"
                    } else {
                        ""
                    },
                )),
                Discovery::Untrusted {
                    file,
                    owner,
                    foreign,
                } => {
                    let folder = file.parent().unwrap_or(Path::new("/"));
                    let whose = match foreign {
                        Foreign::File => format!("it belongs to {}", who(host, owner)),
                        Foreign::Folder => format!(
                            "its folder {} belongs to {}",
                            folder.display(),
                            who(host, owner)
                        ),
                    };
                    let me = match host.uid {
                        Some(0) => "not to you (root)".to_owned(),
                        Some(uid) => format!(
                            "not to you ({}) nor to root",
                            (host.user_name)(uid).unwrap_or_else(|| format!("uid {uid}"))
                        ),
                        None => "not to you".to_owned(),
                    };
                    warnings.push(format!(
                        "{} is not used: {whose}, {me}; a project file can run programs as you (a `cmd:` retriever) and choose where runs are recorded. If you trust it: VEREDICTO_CONFIG={} or {TRUSTED_PATHS_VAR}={}",
                        relative_to(&cwd, &file).display(),
                        file.display(),
                        folder.display()
                    ));
                    None
                }
                Discovery::None { stopped_at } => {
                    if let Some((dir, uid)) = stopped_at {
                        details.push(format!(
                            "no project file: the search for veredicto.toml stopped at {}, which belongs to {}",
                            dir.display(),
                            who(host, uid)
                        ));
                    }
                    None
                }
            },
        }
    };
    let (project, in_use) = match file {
        Some((path, origin)) => {
            if config::world_writable(&path) {
                warnings.push(world_writable_warning(&path));
            }
            let in_use = format!("project file {}{origin}", path.display());
            (
                Some(config::read_project(&path).map_err(|e| e.to_string())?),
                Some(in_use),
            )
        }
        None => (None, None),
    };
    Ok(Loaded {
        project,
        in_use,
        warnings,
        details,
    })
}
