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
            None => config::discover(&cwd),
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
