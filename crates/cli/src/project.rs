//! This process as the application sees it: its working folder, its environment and its
//! user, read once; the project file found from them ([`veredicto_app::project::load`]).

use std::path::PathBuf;
use std::sync::OnceLock;
use veredicto_app::project::{self, Host, Loaded};
use veredicto_app::Env;
use veredicto_formats::config::Settings;
use veredicto_formats::policy::{PolicyFile, Section};

/// The process's environment and working folder, taken once.
pub struct Process {
    pub env: Env,
    pub cwd: PathBuf,
}

static PROCESS: OnceLock<Process> = OnceLock::new();
static LOADED: OnceLock<Result<(Loaded, Settings), String>> = OnceLock::new();

/// The process's environment and working folder (read on first use).
pub fn process() -> &'static Process {
    PROCESS.get_or_init(|| Process {
        env: Env::from_vars(std::env::vars_os()),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    })
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

fn loaded() -> &'static Result<(Loaded, Settings), String> {
    LOADED.get_or_init(|| {
        let p = process();
        let host = Host {
            cwd: &p.cwd,
            env: &p.env,
            uid: current_uid(),
            user_name: &user_name,
        };
        let loaded = project::load(&host)?;
        let settings = Settings::resolve(loaded.project.clone(), &|name| p.env.get(name), &p.cwd);
        Ok((loaded, settings))
    })
}

/// The project file with the environment over it (flags go over these), or the error that
/// reading the project file gave (every command that needs them reports it).
pub fn settings() -> anyhow::Result<&'static Settings> {
    loaded()
        .as_ref()
        .map(|(_, s)| s)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Says which project file is in use (a note), and warns about project files found but not
/// used or writable by anyone. Once, before the command's work; the error is the project
/// file's.
pub fn announce() -> anyhow::Result<()> {
    let (loaded, _) = loaded().as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
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

/// The policy file in effect for a command: the `--policy` flag's file, else the
/// environment's and the project's (`VEREDICTO_POLICY`, `policy_file`, the `[policy]`
/// table), else the documented defaults; parsed once into the one typed [`PolicyFile`].
/// Of a file, only `sections` are read and checked (those the command uses).
pub fn policy_file(
    flag: Option<&std::path::Path>,
    sections: &[Section],
) -> anyhow::Result<PolicyFile> {
    use veredicto_formats::config::PolicySource;
    Ok(match flag {
        Some(p) => PolicyFile::read_sections(p, sections)?,
        None => match &settings()?.policy {
            Some(PolicySource::File(p)) => PolicyFile::read_sections(p, sections)?,
            Some(PolicySource::Table(f)) => (**f).clone(),
            None => PolicyFile::default(),
        },
    })
}
