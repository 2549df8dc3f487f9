//! `veredicto report [RUN]`: one recorded run rendered from the history, with its baseline
//! comparison, the cross-run diagnosis and the trends: HTML (self-contained), Markdown,
//! JUnit or JSON. Computed once, rendered many ways.

use crate::history_args::{Baseline, HistoryArgs};
use crate::printer::{self, ExitStatus, Format};
use anyhow::Context;
use std::path::PathBuf;
use veredicto_app::history::{report_run, ReportRequest, RunReport};
use veredicto_core::compare;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The run (ID, unique prefix, `latest`).
    #[arg(default_value = "latest")]
    pub run: String,
    /// Output format (html: one self-contained file).
    #[arg(long, value_parser = printer::formats(&["html", "human", "json", "markdown", "junit"]), default_value = "html")]
    pub format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Write to FILE (atomically); default stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Baseline for the comparison: `previous`, `last-accepted`, a run ID, or `none`.
    #[arg(long, value_name = "RUN", default_value = "previous")]
    pub baseline: Baseline,
    /// The current corpus (ingest batches of displacing chunks).
    #[arg(long, value_name = "CORPUS")]
    pub corpus: Option<PathBuf>,
    /// Documents JSONL (`id`, `text`): the corpus' chunks located in them.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// Runs of history for the trends and the cross-run diagnosis.
    #[arg(long, default_value_t = crate::history_args::DEFAULT_WINDOW)]
    pub window: usize,
    #[arg(long, default_value_t = compare::DEFAULT_SEED)]
    pub seed: u64,
    #[command(flatten)]
    pub history: HistoryArgs,
}

impl ReportArgs {
    /// `--corpus` and `--history` as settings.
    pub fn overrides(&self) -> veredicto_app::Overrides {
        veredicto_app::Overrides {
            corpus: self.corpus.clone(),
            ..self.history.overrides()
        }
    }
}

pub fn run(args: ReportArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    // The flag, else `corpus` of veredicto.toml.
    let corpus = settings.corpus.clone();
    let RunReport {
        current,
        comparison,
        diagnosis,
        history: runs,
    } = report_run(
        &settings.history,
        &ReportRequest {
            run: &args.run,
            baseline: args.baseline.clone(),
            corpus: corpus.as_deref(),
            documents: args.documents.as_deref(),
            window: args.window,
            seed: args.seed,
        },
    )?;
    let text = match args.format.or_json(args.json) {
        Format::Html => {
            // The workbench's ratings beside the golden set, when the project names one.
            let relevant = match &settings.golden {
                Some(g) => veredicto_app::workbench::relevant_outranking(g, &current)?,
                None => Vec::new(),
            };
            // A chat model's relevance suggestions (`veredicto judge`), apart from them.
            let suggested = match &settings.golden {
                Some(g) => veredicto_app::relevance::suggested_relevant(g, &current)?,
                None => Vec::new(),
            };
            veredicto_report::html::render_with_suggestions(
                &veredicto_report::html::HtmlInput {
                    current: &current,
                    baseline_comparison: comparison.as_ref(),
                    diagnosis: Some(&diagnosis),
                    history: &runs,
                },
                &relevant,
                &suggested,
            )
        }
        Format::Human => {
            let color = args.out.is_none() && printer::get().color_stdout();
            let mut s = veredicto_report::human::render(&current.report, color);
            if let Some(c) = &comparison {
                s.push('\n');
                s.push_str(&veredicto_report::comparison::human(c));
            }
            s.push('\n');
            s.push_str(&veredicto_report::comparison::diagnosis_human(&diagnosis));
            if let Some(g) = &settings.golden {
                let suggested = veredicto_app::relevance::suggested_relevant(g, &current)?;
                if !suggested.is_empty() {
                    s.push_str(&veredicto_report::relevance::suggested_sentence(
                        suggested.len(),
                    ));
                    s.push_str(" (veredicto judge: a model's suggestion)\n");
                }
            }
            s
        }
        Format::Markdown => {
            let mut s = veredicto_report::markdown::render(&current.report);
            if let Some(c) = &comparison {
                s.push_str(&veredicto_report::comparison::markdown(c));
            }
            s
        }
        Format::Junit => {
            veredicto_report::junit::render_with_comparison(&current.report, comparison.as_ref())
        }
        Format::Json => {
            veredicto_report::json::run_report(&current, comparison.as_ref(), &diagnosis)
        }
    };
    match &args.out {
        Some(path) => crate::output::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => printer::stdout(&text)?,
    }
    Ok(ExitStatus::Success)
}
