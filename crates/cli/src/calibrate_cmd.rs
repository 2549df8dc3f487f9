//! `veredicto calibrate`: runs the suite from any source, calibrates the noise ceiling on its
//! healthy cases (veredicto_core::exam::calibrate) and writes a commented policy file.
//! Nothing is recorded in the history: a calibration is not a run.

use crate::printer::ExitStatus;
use std::collections::BTreeMap;
use std::path::PathBuf;
use veredicto_app::calibrate as app;
use veredicto_core::exam::calibrate;
use veredicto_formats as formats;
use veredicto_formats::config::Source;
use veredicto_report::calibration as render;

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("source").multiple(false))]
pub struct CalibrateArgs {
    /// Golden set: JSONL cases, or a BEIR folder (queries.jsonl + qrels/test.tsv); default:
    /// `golden` of veredicto.toml.
    #[arg(long, value_name = "GOLDEN")]
    pub golden: Option<PathBuf>,
    /// The retriever's results: a TREC or JSONL run file (`-` reads standard input).
    #[arg(long, value_name = "RUN", group = "source")]
    pub run: Option<String>,
    /// Run every case against veredicto's index.
    #[arg(long, value_name = "DIR", group = "source")]
    pub index: Option<PathBuf>,
    /// A live retriever, by its URI: every scheme is listed at the end of this help.
    #[arg(long, value_name = "URI", group = "source")]
    pub retriever: Option<String>,
    /// An arm of a `fusion:` retriever (repeatable, in order; `run:FILE` for a run file):
    /// `--retriever 'fusion:rrf?k=60' --arm 'index:kb?mode=bm25' --arm index:kb`. Default:
    /// `VEREDICTO_ARMS`, else `[retriever] arms` of veredicto.toml.
    #[arg(long = "arm", value_name = "URI")]
    pub arm: Vec<String>,
    #[command(flatten)]
    pub embedder: crate::models::EmbedderArgs,
    /// Results asked per case.
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::pass::DEFAULT_DEPTH)]
    pub depth: usize,
    /// Cases sent to the retriever at once.
    #[arg(long, value_name = "N", default_value_t = veredicto_retrieve::pass::DEFAULT_CONCURRENCY, value_parser = crate::retriever_args::concurrency)]
    pub concurrency: usize,
    #[command(flatten)]
    pub net: crate::retriever_args::NetArgs,
    #[command(flatten)]
    pub answers: crate::retriever_args::AnswerArgs,
    /// Chunk JSONL: gold labels and the chunks' texts for the diagnosis.
    #[arg(long, value_name = "CORPUS")]
    pub corpus: Option<PathBuf>,
    /// Documents JSONL (`id`, `text`): quotes located, chunk offsets checked, chunks
    /// without offsets located by text.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// The policy to start from (every key but the noise ceiling is kept); default: the
    /// policy of veredicto.toml, else the documented defaults.
    #[arg(long, value_name = "POLICY.toml")]
    pub policy: Option<PathBuf>,
    /// Diagnosis notes (for the verdicts before and after).
    #[arg(long, value_name = "NOTES")]
    pub notes: Option<PathBuf>,
    /// Exam date (YYYY-MM-DD) for validity windows; default: today (UTC).
    #[arg(long, value_name = "DATE", value_parser = crate::date_args::date)]
    pub as_of: Option<String>,
    /// Where the calibrated policy is written; default: policy.toml (with --write-project:
    /// the project's policy file, else policy.toml next to veredicto.toml).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Point veredicto.toml at the calibrated policy: its `[policy]` table gives way to
    /// `policy_file = "FILE"` (the table's keys start the calibration, so none is lost).
    #[arg(long, conflicts_with = "dry_run")]
    pub write_project: bool,
    /// Replace FILE when it exists.
    #[arg(long)]
    pub force: bool,
    /// Print the calibration without writing a policy file.
    #[arg(long)]
    pub dry_run: bool,
    /// Fewest healthy cases to calibrate from.
    #[arg(long, value_name = "N", default_value_t = calibrate::DEFAULT_MIN_HEALTHY)]
    pub min_healthy: usize,
    /// Output format of the summary.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

impl CalibrateArgs {
    /// What the flags say about the shared settings (golden set, corpus, source, policy,
    /// model, the answer rules).
    pub fn overrides(&self) -> veredicto_app::Overrides {
        let source = match (&self.run, &self.index, &self.retriever) {
            (Some(run), _, _) => Some(Source::Run(PathBuf::from(run))),
            (_, Some(dir), _) => Some(Source::Index(dir.clone())),
            (_, _, Some(uri)) => Some(Source::Retriever(uri.clone())),
            _ => None,
        };
        veredicto_app::Overrides {
            golden: self.golden.clone(),
            corpus: self.corpus.clone(),
            source,
            policy: self.policy.clone(),
            model: self.embedder.model.clone(),
            duplicates: self.answers.duplicates,
            max_retriever_failures: self.answers.max_retriever_failures,
            arms: Some(self.arm.clone()),
            ..Default::default()
        }
    }
}

pub fn run(args: CalibrateArgs, project: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let golden = match (&args.golden, &project.golden) {
        (Some(g), _) | (None, Some(g)) => g.clone(),
        (None, None) => anyhow::bail!(
            "calibrate needs a golden set: give --golden FILE, or `golden` in veredicto.toml (`veredicto init` writes one)"
        ),
    };
    // The exam's keys are checked; the other commands' tables are carried over as written.
    let starting = project.policy_sections(&[formats::policy::Section::Exam])?;
    // Every argument is checked before the suite runs.
    let output = app::plan_output(
        &app::OutputChoice {
            out: args.out.clone(),
            policy_named: args.policy.is_some(),
            write_project: args.write_project,
            force: args.force,
            dry_run: args.dry_run,
        },
        project,
    )?;
    let veredicto_app::golden::Loaded { cases, corpus, .. } = veredicto_app::golden::load(
        &golden,
        project.corpus.as_deref(),
        args.documents.as_deref(),
        crate::printer::events(),
    )?;
    let notes = match &args.notes {
        Some(p) => formats::notes::read_notes(p)?,
        None => BTreeMap::new(),
    };
    let Some(uri) = project.source_uri() else {
        anyhow::bail!(
            "give --retriever URI, --index DIR or --run FILE, or a [source] in veredicto.toml"
        );
    };
    let deadline = args.net.total_deadline();
    let opened = crate::retriever_args::open_retriever(&uri, &args.arm, project, &args.net)?;
    let retriever = opened.retriever;
    let embedder = crate::retriever_args::load_embedder(
        retriever.as_ref(),
        opened.index_dir.as_deref(),
        &args.embedder,
        project,
        &args.net,
        deadline,
        &cases,
        false,
    )?;
    let as_of = args.as_of.clone().unwrap_or_else(crate::clock::today_utc);
    let done = app::calibrate(app::CalibrateRequest {
        retriever: retriever.as_ref(),
        embedder: embedder.as_deref(),
        cases: &cases,
        corpus,
        notes: &notes,
        as_of: &as_of,
        starting: &starting,
        pass: veredicto_retrieve::pass::Settings {
            depth: args.depth,
            concurrency: args.concurrency,
            duplicates: project.duplicates,
            max_retriever_failures: project.max_retriever_failures,
            ..Default::default()
        },
        min_healthy: args.min_healthy,
        output,
        events: crate::printer::events(),
    })?;
    let written = done.written.as_ref().map(|p| p.display().to_string());
    let out = if args.format.or_json(args.json) == crate::printer::Format::Json {
        render::render_json(&done.calibration, Some(done.verdicts))
    } else {
        let mut text = render::render_human(
            &done.calibration,
            Some(done.verdicts),
            written.as_deref().filter(|_| !args.write_project),
        );
        if let (Some(path), Some(file)) = (&written, &done.project_updated) {
            text.push_str(&format!(
                "wrote {path} and pointed {} at it (policy_file): the exam uses it from now on\n",
                file.display()
            ));
        }
        text
    };
    crate::output::print_stdout(&out)?;
    Ok(ExitStatus::Success)
}
