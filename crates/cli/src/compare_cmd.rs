//! `veredicto compare [BASE] [RUN]`: a run against its baseline, with significance, and the
//! cross-run diagnosis of the recent history.

use crate::history_args::{Baseline, HistoryArgs};
use crate::printer::{self, ExitStatus, Format};
use std::path::PathBuf;
use veredicto_app::history::{compare_runs, CompareRequest, Compared};
use veredicto_core::compare;

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline run (ID, unique prefix); default: see --baseline.
    pub base: Option<String>,
    /// The run to judge (ID, unique prefix, `latest`); default: the latest run.
    pub run: Option<String>,
    /// When BASE is not given: `previous` (the last run with the same golden set and
    /// policy before RUN), `last-accepted`, or a run ID.
    #[arg(long, value_name = "RUN", default_value = "previous")]
    pub baseline: Baseline,
    /// The current corpus, to tell the ingest batch of chunks that displaced expected ones.
    #[arg(long, value_name = "CORPUS")]
    pub corpus: Option<PathBuf>,
    /// Documents JSONL (`id`, `text`): the corpus' chunks located in them.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// Seed of the randomisation test and the bootstrap.
    #[arg(long, default_value_t = compare::DEFAULT_SEED)]
    pub seed: u64,
    /// Monte-Carlo sign patterns when exact enumeration is too large.
    #[arg(long, default_value_t = 10_000)]
    pub permutations: usize,
    /// Bootstrap resamples for the confidence intervals.
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    /// Runs of history the cross-run diagnosis looks at.
    #[arg(long, default_value_t = crate::history_args::DEFAULT_WINDOW)]
    pub window: usize,
    /// Exit 1 on a significant drop or a newly failing gold case.
    #[arg(long)]
    pub fail_on_regression: bool,
    /// Output format (markdown: a pull-request comment).
    #[arg(long, value_parser = printer::formats(&["human", "json", "markdown", "junit"]), default_value = "human")]
    pub format: Format,
    /// Alias of `--format json`.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Alias of `--format markdown`.
    #[arg(long)]
    pub markdown: bool,
    #[command(flatten)]
    pub history: HistoryArgs,
}

impl CompareArgs {
    /// `--corpus` and `--history` as settings.
    pub fn overrides(&self) -> veredicto_app::Overrides {
        veredicto_app::Overrides {
            corpus: self.corpus.clone(),
            ..self.history.overrides()
        }
    }
}

pub fn run(args: CompareArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let format = if args.markdown {
        Format::Markdown
    } else {
        args.format.or_json(args.json)
    };
    // BASE names the baseline run; without it, --baseline says which.
    let baseline = match &args.base {
        Some(b) => Baseline::Run(b.clone()),
        None => args.baseline.clone(),
    };
    // The flag, else `corpus` of veredicto.toml.
    let corpus = settings.corpus.clone();
    let Compared {
        new,
        comparison,
        diagnosis,
        ..
    } = compare_runs(
        &settings.history,
        &CompareRequest {
            run: args.run.as_deref().unwrap_or("latest"),
            baseline,
            corpus: corpus.as_deref(),
            documents: args.documents.as_deref(),
            seed: args.seed,
            permutations: args.permutations,
            bootstrap: args.bootstrap,
            window: args.window,
        },
    )?;
    let text = match format {
        Format::Json => veredicto_report::json::comparison(&comparison, &diagnosis),
        Format::Markdown => veredicto_report::comparison::markdown(&comparison),
        Format::Junit => {
            veredicto_report::junit::render_with_comparison(&new.report, Some(&comparison))
        }
        _ => {
            let mut s = veredicto_report::comparison::human(&comparison);
            s.push('\n');
            s.push_str(&veredicto_report::comparison::diagnosis_human(&diagnosis));
            s
        }
    };
    printer::stdout(&text)?;
    Ok(ExitStatus::stop_if(
        args.fail_on_regression && comparison.regression,
    ))
}
