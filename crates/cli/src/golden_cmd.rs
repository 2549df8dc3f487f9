//! `veredicto golden`: `check` (where each evidence item sits in a chunking), `convert`
//! (a chunk-ID golden set rewritten as evidence spans), `draft` (candidate cases drafted by
//! a chat model) and `accept` / `reject` (a person's decision on a draft).

use crate::printer::{ExitStatus, Format};
use anyhow::Context;
use std::path::PathBuf;
use veredicto_formats::policy::Section;

#[derive(Debug, clap::Args)]
pub struct GoldenArgs {
    #[command(subcommand)]
    pub command: GoldenCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum GoldenCommand {
    /// Where each evidence item sits in a chunking: every quote located, the chunks holding
    /// each item, items split across chunks, items no chunk covers, items that cannot be
    /// located (exit 0 clean, 1 problems found, 2 unreadable input).
    Check(CheckArgs),
    /// Rewrite a chunk-ID golden set (`expected`) as evidence spans of documents, from the
    /// chunks' offsets or (with --documents) where their text sits.
    Convert(ConvertArgs),
    /// Draft candidate cases from a corpus with a chat model: questions answered by one
    /// chunk, questions needing two chunks of different documents, and questions the corpus
    /// does not answer, each with its quotes located in the chunk text and why it was
    /// drafted (`origin: "draft"`: no exam uses them until a person accepts them).
    #[command(after_help = crate::help::golden_draft())]
    Draft(DraftArgs),
    /// Accept a draft: its case moves into the golden file (`origin: "accepted"`, with the
    /// reviewer, the time and the reason), and the decision is logged.
    #[command(after_help = crate::help::golden_accept())]
    Accept(DecideArgs),
    /// Reject a draft: it leaves the drafts file, and the decision and its reason are
    /// logged (a later `golden draft` does not draft it again).
    #[command(after_help = crate::help::golden_reject())]
    Reject(DecideArgs),
}

#[derive(Debug, clap::Args)]
pub struct DraftArgs {
    /// The chunk corpus (JSONL `id`, `text`, `doc_id`, `domain`).
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    /// Where the drafts are written (JSONL, replaced).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The golden set: questions it asks, and drafts decided in its log, are left out
    /// (default: the project's).
    #[arg(long, value_name = "FILE")]
    pub golden: Option<PathBuf>,
    /// Drafts asked for per domain and kind.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub per_domain: usize,
    /// Most drafts asked for in all.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// The embedding model that merges near-duplicate questions (a known model's name or
    /// a model folder; default: the project's `model`, else questions merge by text only).
    #[arg(long, value_name = "NAME|DIR")]
    pub embed_model: Option<String>,
    /// Cosine at or above which two drafted questions are merged into the first.
    #[arg(long, value_name = "COS", default_value_t = 0.9)]
    pub merge_cosine: f32,
    #[command(flatten)]
    pub chat: crate::chat_args::ChatArgs,
}

#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// The draft's ID (`d-…`).
    pub id: String,
    /// The drafts file (`golden draft --out`).
    #[arg(long, value_name = "FILE")]
    pub drafts: PathBuf,
    /// The golden file (default: the project's).
    #[arg(long, value_name = "FILE")]
    pub golden: Option<PathBuf>,
    /// Why (required).
    #[arg(long)]
    pub reason: String,
    /// Who decides (default: $USER).
    #[arg(long, value_name = "NAME")]
    pub reviewer: Option<String>,
    /// Time recorded with the decision (RFC 3339; default: now, UTC).
    #[arg(long, value_name = "TIME", value_parser = crate::date_args::timestamp)]
    pub time: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The golden set (JSONL).
    #[arg(long, value_name = "FILE")]
    pub golden: PathBuf,
    /// The chunking to check against (chunk JSONL with `doc_id`, and `start`/`end` or text).
    #[arg(long, value_name = "FILE")]
    pub corpus: PathBuf,
    /// The documents (JSONL `id`, `text`): quotes are located in them, chunk offsets checked,
    /// chunks without offsets located by their text.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// The policy file (its `evidence_coverage`); default the project's.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The golden set with `expected` chunk IDs (JSONL).
    #[arg(long, value_name = "FILE")]
    pub golden: PathBuf,
    /// The corpus the chunk IDs name.
    #[arg(long, value_name = "FILE")]
    pub corpus: PathBuf,
    /// The documents, to locate chunks that carry no offsets by their text.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// Where to write the converted golden set (default: standard output).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: GoldenArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    match args.command {
        GoldenCommand::Check(a) => check(a, settings),
        GoldenCommand::Convert(a) => convert(a),
        GoldenCommand::Draft(a) => draft(a, settings),
        GoldenCommand::Accept(a) => decide(a, settings, true),
        GoldenCommand::Reject(a) => decide(a, settings, false),
    }
}

fn draft(args: DraftArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let Some(corpus) = args.corpus.clone().or_else(|| settings.corpus.clone()) else {
        anyhow::bail!(
            "golden draft needs a corpus: give --corpus FILE, or `corpus` in veredicto.toml"
        );
    };
    let golden = args.golden.clone().or_else(|| settings.golden.clone());
    let model = args.embed_model.clone().or_else(|| settings.model.clone());
    let embedder = match model {
        Some(m) => Some(
            crate::models::EmbedderArgs {
                model: Some(m),
                embedder: None,
                embedder_model: "text-embedding-3-small".into(),
                api_key_env: "OPENAI_API_KEY".into(),
            }
            .load_for_index(settings, None, None)?,
        ),
        None => {
            crate::printer::note(
                "no embedding model (--embed-model, or `model` in veredicto.toml): near-duplicate questions merge by their text only",
            );
            None
        }
    };
    let asker = veredicto_app::chat::Asker::new(args.chat.settings(settings)?)?;
    let out = veredicto_app::drafts::draft(&veredicto_app::drafts::DraftRequest {
        corpus: &corpus,
        out: &args.out,
        golden: golden.as_deref(),
        per_domain: args.per_domain,
        limit: args.limit,
        embedder: embedder.as_deref(),
        merge_cosine: args.merge_cosine,
        asker: &asker,
        events: crate::printer::events(),
    })?;
    let kinds = |k: &str| {
        out.drafts
            .iter()
            .filter(|d| d["kind"].as_str() == Some(k))
            .count()
    };
    crate::printer::status(&format!(
        "wrote {}: {} draft(s) in {} ({} answered by one chunk, {} by two, {} unanswerable); {} merged into an earlier one, {} already in the golden set or decided",
        args.out.display(),
        out.drafts.len(),
        out.language.name(),
        kinds("one_chunk"),
        kinds("two_chunks"),
        kinds("unanswerable"),
        out.merged,
        out.known
    ));
    crate::printer::status(&out.tally.to_string());
    if let Some(first) = out.failures.first() {
        anyhow::bail!(
            "the chat model's reply for {first}{}; the {} readable draft(s) were written to {}",
            if out.failures.len() > 1 {
                format!(" (and {} more)", out.failures.len() - 1)
            } else {
                String::new()
            },
            out.drafts.len(),
            args.out.display()
        );
    }
    Ok(ExitStatus::Success)
}

fn decide(
    args: DecideArgs,
    settings: &veredicto_app::Settings,
    accept: bool,
) -> anyhow::Result<ExitStatus> {
    let Some(golden) = args.golden.clone().or_else(|| settings.golden.clone()) else {
        anyhow::bail!("give --golden FILE, or `golden` in veredicto.toml");
    };
    let who = match args.reviewer.clone().or_else(|| settings.env.get("USER")) {
        Some(w) => w,
        None => anyhow::bail!("give --reviewer NAME (who decides)"),
    };
    let at = args.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let d = veredicto_app::drafts::Decision {
        drafts: &args.drafts,
        golden: &golden,
        id: &args.id,
        reason: &args.reason,
        who: &who,
        at: &at,
    };
    let done = if accept {
        veredicto_app::drafts::accept(&d)?
    } else {
        veredicto_app::drafts::reject(&d)?
    };
    match done.line {
        Some(line) => crate::printer::status(&format!(
            "accepted {}: {}:{line} ({} draft(s) left in {})",
            args.id,
            golden.display(),
            done.left,
            args.drafts.display()
        )),
        None => crate::printer::status(&format!(
            "rejected {} ({} draft(s) left in {})",
            args.id,
            done.left,
            args.drafts.display()
        )),
    }
    Ok(ExitStatus::Success)
}

fn check(args: CheckArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let policy = match &args.policy {
        Some(p) => veredicto_formats::policy::PolicyFile::read_sections(p, &[Section::Exam])?,
        None => settings.policy_sections(&[Section::Exam])?,
    };
    let report = veredicto_app::golden::check(
        &veredicto_app::golden::CheckRequest {
            golden: &args.golden,
            corpus: &args.corpus,
            documents: args.documents.as_deref(),
            coverage: policy.exam.evidence_coverage,
        },
        crate::printer::events(),
    )?;
    let text = match args.format.or_json(args.json) {
        Format::Json => veredicto_report::golden::json(&report),
        _ => veredicto_report::golden::human(&report),
    };
    crate::printer::stdout(&text)?;
    Ok(if report.clean() {
        ExitStatus::Success
    } else {
        ExitStatus::Stop
    })
}

fn convert(args: ConvertArgs) -> anyhow::Result<ExitStatus> {
    let out = veredicto_app::golden::convert(
        &veredicto_app::golden::ConvertRequest {
            golden: &args.golden,
            corpus: &args.corpus,
            documents: args.documents.as_deref(),
        },
        crate::printer::events(),
    )?;
    match &args.out {
        Some(path) => {
            crate::output::write_atomic(path, out.text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            crate::printer::status(&format!(
                "wrote {}: {} of {} case(s) converted to {} evidence item(s)",
                path.display(),
                out.converted,
                out.cases,
                out.items
            ));
        }
        None => crate::printer::stdout(&out.text)?,
    }
    Ok(ExitStatus::Success)
}
