//! `veredicto signals`: import interaction logs into the signals file, and propose
//! candidate golden cases (with the triage of failed answers) from them.

use crate::models::EmbedderArgs;
use crate::printer::{self, ExitStatus};
use std::io::Write;
use std::path::PathBuf;
use veredicto_app::signals::{self as app, CandidatesRequest, DEFAULT_SIGNALS};
use veredicto_core::signals::Settings;
use veredicto_formats::signals::FieldMap;

#[derive(Debug, clap::Args)]
pub struct SignalsArgs {
    #[command(subcommand)]
    pub command: SignalsCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum SignalsCommand {
    /// Validate an interaction log (JSONL) and append its events, in canonical form, to the
    /// signals file (events already there are skipped). All or nothing.
    Import(ImportArgs),
    /// Propose candidate golden cases from the signals (a golden-set JSONL to review) and
    /// triage the failed answers: upstream (not retrieved) or downstream (retrieved, ignored).
    Candidates(Box<CandidatesArgs>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    Human,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The interaction log (JSONL, one event per line; see docs/signals.md).
    pub log: PathBuf,
    /// The log's name for a field: `FIELD=NAME` (e.g. `conversation_id=session`,
    /// `retrieved=context.ids`); repeatable.
    #[arg(long = "map", value_name = "FIELD=NAME")]
    pub map: Vec<String>,
    /// The log's name for an event, then the event it stands for: `THEIRS=EVENT` (e.g.
    /// `click=click_citation`, `thumb=thumbs`); repeatable.
    #[arg(long = "map-event", value_name = "THEIRS=EVENT")]
    pub map_event: Vec<String>,
    /// The signals file to append to.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_SIGNALS)]
    pub signals: PathBuf,
    #[arg(long, value_enum, default_value_t = OutFormat::Human)]
    pub format: OutFormat,
}

#[derive(Debug, clap::Args)]
pub struct CandidatesArgs {
    /// The signals file (written by `signals import`).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_SIGNALS, conflicts_with = "log")]
    pub signals: PathBuf,
    /// Read an interaction log directly instead of the signals file.
    #[arg(long, value_name = "LOG")]
    pub log: Option<PathBuf>,
    /// The log's name for a field (with --log): `FIELD=NAME`; repeatable.
    #[arg(long = "map", value_name = "FIELD=NAME", requires = "log")]
    pub map: Vec<String>,
    /// The log's name for an event (with --log): `THEIRS=EVENT`; repeatable.
    #[arg(long = "map-event", value_name = "THEIRS=EVENT", requires = "log")]
    pub map_event: Vec<String>,
    /// Where to write the candidate cases (golden-set JSONL).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The golden set: its questions are not proposed again, and its expected chunks are
    /// the reference of the triage.
    #[arg(long, value_name = "FILE|DIR")]
    pub golden: Option<PathBuf>,
    /// The corpus, to find the chunk a copied text came from.
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    /// Merge near-duplicate queries by embedding similarity too (cosine at or above this),
    /// with the model given by --model / --embedder.
    #[arg(long, value_name = "COSINE", default_value_t = 0.92)]
    pub merge_cosine: f64,
    /// Retrieved chunks of a rescuing final query taken as expected when it has no gesture.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub rescue_depth: usize,
    #[command(flatten)]
    pub embedder: EmbedderArgs,
    #[arg(long, value_enum, default_value_t = OutFormat::Human)]
    pub format: OutFormat,
}

impl SignalsArgs {
    /// `--model` of `signals candidates`, as a setting.
    pub fn overrides(&self) -> veredicto_app::Overrides {
        match &self.command {
            SignalsCommand::Candidates(a) => veredicto_app::Overrides {
                model: a.embedder.model.clone(),
                ..Default::default()
            },
            SignalsCommand::Import(_) => veredicto_app::Overrides::default(),
        }
    }
}

pub fn run(args: SignalsArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let status = match args.command {
        SignalsCommand::Import(a) => import(a)?,
        SignalsCommand::Candidates(a) => candidates(*a, settings)?,
    };
    Ok(status)
}

fn import(args: ImportArgs) -> anyhow::Result<ExitStatus> {
    let map = app::field_map(&args.map, &args.map_event)?;
    let done = app::import(&args.log, &map, &args.signals)?;
    let (log, signals) = (
        args.log.display().to_string(),
        args.signals.display().to_string(),
    );
    let render = match args.format {
        OutFormat::Json => veredicto_report::signals::import_json,
        OutFormat::Human => veredicto_report::signals::import_human,
    };
    printer::stdout(&render(
        &log,
        &signals,
        done.events,
        done.added,
        done.already_present,
    ))?;
    Ok(ExitStatus::Success)
}

fn candidates(
    args: CandidatesArgs,
    settings: &veredicto_app::Settings,
) -> anyhow::Result<ExitStatus> {
    let (source, map) = match &args.log {
        Some(log) => (log, app::field_map(&args.map, &args.map_event)?),
        None => (&args.signals, FieldMap::default()),
    };
    let embedder = if args.embedder.model.is_some() || args.embedder.embedder.is_some() {
        Some(args.embedder.load_for_index(settings, None, None)?)
    } else {
        None
    };
    let report = app::candidates(CandidatesRequest {
        source,
        map,
        from_log: args.log.is_some(),
        out: &args.out,
        golden: args.golden.as_deref(),
        corpus: args.corpus.as_deref(),
        settings: Settings {
            merge_cosine: args.merge_cosine,
            rescue_depth: args.rescue_depth,
        },
        embedder: embedder.as_deref(),
    })?;
    let out_name = args.out.display().to_string();
    let text = match args.format {
        OutFormat::Json => veredicto_report::signals::json(&report, Some(&out_name)),
        OutFormat::Human => veredicto_report::signals::human(&report, Some(&out_name)),
    };
    let mut w = crate::output::human_stdout(args.format == OutFormat::Json);
    match w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(ExitStatus::Success)
}
