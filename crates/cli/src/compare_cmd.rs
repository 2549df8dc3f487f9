//! `veredicto compare [BASE] [RUN]`: a run against its baseline, with significance, and the
//! cross-run diagnosis of the recent history.

use crate::history_args::{Baseline, HistoryArgs};
use crate::printer::{self, ExitStatus, Format};
use std::path::PathBuf;
use veredicto_core::case::Corpus;
use veredicto_core::compare::{self, CompareOptions, DiagnoseOptions};
use veredicto_core::history::RecordedRun;
use veredicto_store::{History, RunFilter};

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

/// The last `window` runs of `run`'s golden set up to and including it, oldest first.
pub fn recent_runs(
    history: &History,
    run: &RecordedRun,
    window: usize,
) -> anyhow::Result<Vec<RecordedRun>> {
    let mut ids: Vec<String> = history
        .list(&RunFilter {
            golden_fingerprint: Some(run.meta.golden_fingerprint.clone()),
            before: Some(run.meta.id.clone()),
            limit: Some(window.saturating_sub(1)),
            ..RunFilter::default()
        })?
        .into_iter()
        .map(|s| s.id)
        .collect();
    ids.reverse();
    let mut runs = Vec::with_capacity(ids.len() + 1);
    for id in ids {
        runs.push(history.get(&id)?);
    }
    runs.push(run.clone());
    Ok(runs)
}

/// The chunk list the history kept for the run the cross-run diagnosis compares the newest
/// of `runs` with (the last accepted one before it), when it kept one.
pub fn baseline_chunks(
    history: &History,
    runs: &[RecordedRun],
) -> anyhow::Result<Option<veredicto_core::snapshot::ChunkSnapshot>> {
    match compare::regression_baseline(runs) {
        Some(i) => Ok(history.run_chunks(&runs[i].meta.id)?),
        None => Ok(None),
    }
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitStatus> {
    if args.baseline == Baseline::None && args.base.is_none() {
        anyhow::bail!(
            "--baseline none: compare needs a baseline (previous, last-accepted or a run ID)"
        );
    }
    let format = if args.markdown {
        Format::Markdown
    } else {
        args.format.or_json(args.json)
    };
    let history = args.history.open_read_only()?;
    let new = history.get(args.run.as_deref().unwrap_or("latest"))?;
    let base_id = match &args.base {
        Some(b) => history.resolve(b)?,
        None => match crate::history_args::baseline_of(&history, &new.meta, &args.baseline)? {
            Some(id) => id,
            None => anyhow::bail!(
                "no {} baseline for run {} in {}",
                args.baseline,
                new.meta.id,
                args.history.history.display()
            ),
        },
    };
    let base = history.get(&base_id)?;
    // The flag, else `corpus` of veredicto.toml.
    let corpus_path = args
        .corpus
        .clone()
        .or_else(|| crate::project::settings().ok()?.corpus.clone());
    let corpus = match &corpus_path {
        Some(p) => Some(Corpus::new(veredicto_formats::corpus::read_corpus(p)?)),
        None => None,
    };
    let opts = CompareOptions {
        seed: args.seed,
        permutations: args.permutations,
        bootstrap: args.bootstrap,
        corpus: corpus.as_ref(),
        ..CompareOptions::default()
    };
    let mut comparison = compare::compare(&base, &new, &opts);
    veredicto_report::findings::fill_comparison(&mut comparison);
    let runs = recent_runs(&history, &new, args.window)?;
    let accepted_chunks = baseline_chunks(&history, &runs)?;
    let mut diagnosis = compare::diagnose_runs_with_chunks(
        &runs,
        corpus.as_ref(),
        accepted_chunks.as_ref(),
        &DiagnoseOptions {
            seed: args.seed,
            ..DiagnoseOptions::default()
        },
    );
    veredicto_report::findings::fill_runs(&mut diagnosis);
    let text = match format {
        Format::Json => printer::json(&serde_json::json!({
            "comparison": comparison,
            "diagnosis": diagnosis,
        }))?,
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
