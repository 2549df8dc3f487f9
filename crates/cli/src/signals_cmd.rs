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

/// `signals import --format`: what the input is (an interaction log, or exported traces);
/// `human` and `json`, the output formats of earlier versions, still choose the output of
/// an interaction log's import.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// An interaction log (JSONL), the summary for people (the default).
    Human,
    /// An interaction log (JSONL), the summary as JSON (as `--json`).
    Json,
    /// OpenInference spans (Phoenix, the OpenTelemetry SDKs' span JSON) and annotations.
    Openinference,
    /// OTLP JSON (`ExportTraceServiceRequest`, or the collector's file exporter's lines).
    OtlpJson,
    /// Langfuse's traces, observations and scores (API objects or an export).
    Langfuse,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The interaction log (JSONL, one event per line; see docs/signals.md), or with a trace
    /// `--format` the trace files (several: spans and annotations, traces and scores).
    #[arg(required = true, num_args = 1.., value_name = "LOG")]
    pub log: Vec<PathBuf>,
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
    /// What the input is: an interaction log (`human`, `json`: the summary's format), or
    /// exported traces (`openinference`, `otlp-json`, `langfuse`).
    #[arg(long, value_enum, default_value_t = ImportFormat::Human, value_name = "FORMAT")]
    pub format: ImportFormat,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// With traces: an annotation or score name that is user feedback (read as thumbs up or
    /// down); repeatable, replaces the defaults (`feedback`, `user feedback`, `thumbs`).
    #[arg(long = "feedback-name", value_name = "NAME")]
    pub feedback_name: Vec<String>,
    /// With traces: a trace of the same session that starts at most this many seconds after
    /// the previous one reformulates it (the previous answer failed); 0 infers none.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub reformulation_window: f64,
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
    use veredicto_formats::traces::TraceFormat;
    let trace_format = match args.format {
        ImportFormat::Human | ImportFormat::Json => None,
        ImportFormat::Openinference => Some(TraceFormat::OpenInference),
        ImportFormat::OtlpJson => Some(TraceFormat::OtlpJson),
        ImportFormat::Langfuse => Some(TraceFormat::Langfuse),
    };
    if let Some(format) = trace_format {
        return import_traces(&args, format);
    }
    if !args.feedback_name.is_empty() {
        anyhow::bail!(
            "--feedback-name reads traces: give --format openinference, otlp-json or langfuse"
        );
    }
    let [log] = args.log.as_slice() else {
        anyhow::bail!(
            "signals import reads one interaction log at a time ({} given); several files are for traces (--format openinference, otlp-json or langfuse)",
            args.log.len()
        );
    };
    let map = app::field_map(&args.map, &args.map_event)?;
    let done = app::import(log, &map, &args.signals)?;
    let (log, signals) = (
        log.display().to_string(),
        args.signals.display().to_string(),
    );
    let render = if args.json || args.format == ImportFormat::Json {
        veredicto_report::signals::import_json
    } else {
        veredicto_report::signals::import_human
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

/// `signals import --format openinference|otlp-json|langfuse FILE…`.
fn import_traces(
    args: &ImportArgs,
    format: veredicto_formats::traces::TraceFormat,
) -> anyhow::Result<ExitStatus> {
    use veredicto_formats::traces::ReadSettings;
    if !args.map.is_empty() || !args.map_event.is_empty() {
        anyhow::bail!(
            "--map and --map-event rename an interaction log's fields and events; traces ({}) are read by their format's conventions",
            format.as_str()
        );
    }
    if !(args.reformulation_window.is_finite() && args.reformulation_window >= 0.0) {
        anyhow::bail!(
            "--reformulation-window: expected a number of seconds, 0 or more, got {}",
            args.reformulation_window
        );
    }
    let mut settings = ReadSettings::default();
    if !args.feedback_name.is_empty() {
        settings.feedback_names = args.feedback_name.clone();
    }
    settings.events.reformulation_window_ms = (args.reformulation_window > 0.0)
        .then(|| (args.reformulation_window * 1000.0).round() as i64);
    let done = app::import_traces(&args.log, format, &settings, &args.signals)?;
    let signals = args.signals.display().to_string();
    let view = veredicto_report::signals::TracesImport {
        format: format.as_str(),
        files: args.log.iter().map(|p| p.display().to_string()).collect(),
        signals: &signals,
        records: done.report.records,
        traces: done.report.traces,
        interactions: done.report.interactions,
        feedback: done.report.feedback,
        events: done.imported.events,
        added: done.imported.added,
        already_present: done.imported.already_present,
        unmapped: done
            .report
            .unmapped
            .iter()
            .map(|u| veredicto_report::signals::UnmappedLine {
                reason: u.reason.as_str(),
                count: u.count,
                examples: &u.examples,
            })
            .collect(),
        feedback_names: settings.feedback_names.clone(),
    };
    printer::stdout(&if args.json {
        veredicto_report::signals::traces_json(&view)
    } else {
        veredicto_report::signals::traces_human(&view)
    })?;
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
