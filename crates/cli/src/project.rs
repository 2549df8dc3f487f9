//! The project settings of this process: `veredicto.toml` (found by walking up from the
//! working folder, or named by `VEREDICTO_CONFIG`) with the `VEREDICTO_*` environment over
//! it, read once. Flags go over these in each command.
//!
//! Discovery trusts only project files that belong to the current user or root, in folders
//! that do (as git's `safe.directory`): a project file can name a `cmd:` retriever, a
//! program veredicto runs as you, so one planted in a shared folder above the working folder
//! is reported and not used. `VEREDICTO_CONFIG` (an explicit choice) and
//! `VEREDICTO_TRUSTED_PATHS` (folders trusted whoever owns them) lift the check.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use veredicto_formats::config::{self, Discovery, Foreign, Settings, Trust, TrustedPath};

/// The settings and what the command says about them before it starts.
struct Loaded {
    settings: Settings,
    /// The line naming the project file in use (a note: silenced by `-q`).
    in_use: Option<String>,
    /// Warnings about project files found but not used, or used but writable by anyone.
    warnings: Vec<String>,
    /// Details for `-v` (where discovery stopped).
    details: Vec<String>,
}

static LOADED: OnceLock<Result<Loaded, String>> = OnceLock::new();

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
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

/// The effective user of this process (`None` off Unix: no ownership checks).
fn current_uid() -> Option<u32> {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        Some(unsafe { libc::geteuid() })
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// `uid 1001 (alice)`, or `uid 1001` when the system has no name for it.
fn who(uid: u32) -> String {
    match user_name(uid) {
        Some(name) => format!("uid {uid} ({name})"),
        None => format!("uid {uid}"),
    }
}

#[cfg(unix)]
fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: `passwd` is plain data; getpwuid_r writes it and the strings it points to
    // into `buf`, which outlives every read below.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: a non-null `pw_name` from a successful call is a NUL-terminated string in `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

#[cfg(not(unix))]
fn user_name(_uid: u32) -> Option<String> {
    None
}

fn trust(cwd: &Path) -> Trust {
    let paths = env(TRUSTED_PATHS_VAR)
        .map(|v| {
            std::env::split_paths(&v)
                .filter_map(|p| TrustedPath::parse(&p.to_string_lossy(), cwd))
                .collect()
        })
        .unwrap_or_default();
    Trust {
        uid: current_uid(),
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

fn load() -> Result<Loaded, String> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
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
            None => match config::discover_trusted(&cwd, &trust(&cwd)) {
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
                        Foreign::File => format!("it belongs to {}", who(owner)),
                        Foreign::Folder => {
                            format!("its folder {} belongs to {}", folder.display(), who(owner))
                        }
                    };
                    let me = match current_uid() {
                        Some(0) => "not to you (root)".to_owned(),
                        Some(uid) => format!(
                            "not to you ({}) nor to root",
                            user_name(uid).unwrap_or_else(|| format!("uid {uid}"))
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
                            who(uid)
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
        settings: Settings::resolve(project, &env, &cwd),
        in_use,
        warnings,
        details,
    })
}

/// The settings, or the error that reading the project file gave (every command that
/// needs them reports it).
pub fn settings() -> anyhow::Result<&'static Settings> {
    LOADED
        .get_or_init(load)
        .as_ref()
        .map(|l| &l.settings)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Says which project file is in use (a note), and warns about project files found but not
/// used or writable by anyone. Once, before the command's work; the error is the project
/// file's.
pub fn announce() -> anyhow::Result<()> {
    let loaded = LOADED
        .get_or_init(load)
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &loaded.warnings {
        crate::printer::warn(w);
    }
    for d in &loaded.details {
        crate::printer::detail(d);
    }
    if let Some(line) = &loaded.in_use {
        crate::printer::note(line);
    }
    Ok(())
}
