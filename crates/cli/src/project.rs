//! This process as the application sees it: its working folder, its environment and its
//! user, read at the start of each command (never kept: a caller may run several commands
//! in one process, from different folders); the project file found from them
//! ([`veredicto_app::project::load`]) and the settings resolved over it.

use std::path::PathBuf;
use veredicto_app::project::{self, Host, Loaded};
use veredicto_app::{Env, Overrides, Settings};

/// The process's environment and working folder, as they are when a command starts.
pub struct Process {
    pub env: Env,
    pub cwd: PathBuf,
}

impl Process {
    /// The environment and the working folder now.
    pub fn now() -> Process {
        Process {
            env: Env::from_vars(std::env::vars_os()),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }

    /// Finds and reads the project file as this process sees it; the error is the project
    /// file's (one line naming the file, the line and the key).
    pub fn load(&self) -> Result<Loaded, String> {
        project::load(&Host {
            cwd: &self.cwd,
            env: &self.env,
            uid: current_uid(),
            user_name: &user_name,
        })
    }

    /// The settings of one command: its flags (`flags`) over the environment over the
    /// project file (`loaded`) over the defaults.
    pub fn settings(self, flags: &Overrides, loaded: Option<Loaded>) -> Settings {
        Settings::resolve(flags, loaded.and_then(|l| l.project), self.env, &self.cwd)
    }
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

/// Says which project file is in use (a note), and warns about project files found but not
/// used or writable by anyone. Once, before the command's work.
pub fn announce(loaded: &Loaded) {
    for w in &loaded.warnings {
        crate::printer::warn(w);
    }
    for d in &loaded.details {
        crate::printer::detail(d);
    }
    if let Some(line) = &loaded.in_use {
        crate::printer::note(line);
    }
}
