//! The project settings of this process: `veredicto.toml` (found by walking up from the
//! working folder, or named by `VEREDICTO_CONFIG`) with the `VEREDICTO_*` environment over
//! it, read once. Flags go over these in each command.

use std::path::PathBuf;
use std::sync::OnceLock;
use veredicto_formats::config::{self, Settings};

static SETTINGS: OnceLock<Result<Settings, String>> = OnceLock::new();

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A discovered project file as a path relative to the working folder (it is always in the
/// folder or one of its ancestors): `veredicto.toml`, `../veredicto.toml`, … so that paths
/// resolved against it read in messages as the user would type them.
fn relative_to(cwd: &std::path::Path, file: &std::path::Path) -> PathBuf {
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

fn load() -> Result<Settings, String> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let file = if env("VEREDICTO_NO_CONFIG").is_some_and(|v| v == "1") {
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
                Some(p)
            }
            None => config::discover(&cwd).map(|p| relative_to(&cwd, &p)),
        }
    };
    let project = match file {
        Some(path) => Some(config::read_project(&path).map_err(|e| e.to_string())?),
        None => None,
    };
    Ok(Settings::resolve(project, &env, &cwd))
}

/// The settings, or the error that reading the project file gave (every command that
/// needs them reports it).
pub fn settings() -> anyhow::Result<&'static Settings> {
    SETTINGS
        .get_or_init(load)
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))
}
