//! `veredicto audit`: grounding audit of recorded answers. Thin: parses the arguments,
//! calls `veredicto_app::audit`, renders with `veredicto_report::audit` and prints. Exit 0
//! ok, 1 policy missed / package differs / claims need re-review, 2 error (returned as
//! `Err`).

use crate::audit_target::{self as target, Target};
use crate::history_args::HistoryArgs;
use crate::printer::{self, ExitStatus, Format};
use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use veredicto_app::audit as app;
use veredicto_app::audit::suggest::{JudgeSettings, Suggester};
use veredicto_app::Settings;
use veredicto_grounding as g;
use veredicto_report::audit as report;

/// TARGET arguments: a case file, or a recorded audit run.
const TARGET_HELP: &str = "Case file (YAML, or JSON by extension), or an audit run in the \
history: ID, unique prefix or `latest`";

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub history: HistoryArgs,
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Validate cases and print citation presence, support, coverage, abstention, answer
    /// relevance and document recall@k per answer (exit 1 when a `[grounding]` threshold is
    /// missed or an answer is judged off topic).
    Check(CheckArgs),
    /// Record a case file (with the reviews and suggestions beside it) as an audit run in
    /// the history; prints the new run ID.
    Record(RecordArgs),
    /// Record new answers to the frozen cases of a recorded run as a new run that replays
    /// it, and compare the two (only compatible cases; the rest is listed).
    Replay(ReplayArgs),
    /// List the audit runs in the history, newest first.
    Runs(RunsArgs),
    /// The evidence sheet: one row per material claim.
    Sheet(SheetArgs),
    /// Append a reviewer's support verdict on a claim (`--claim --support`), mark of one of
    /// a claim's citations (`--claim --citation --mark`: necessary, redundant or irrelevant)
    /// or relevance verdict on an answer (`--answer --relevance`: does it address what was
    /// asked?); append-only: to the history for a recorded run, else to `<cases>.reviews.jsonl`.
    Review(ReviewArgs),
    /// Write an audit package (directory, or FILE.tar.gz) with a SHA-256 manifest.
    Package(PackageArgs),
    /// Verify a package against its manifest (exit 0 all match, 1 any difference).
    Verify(VerifyArgs),
    /// List claims whose cited passages changed (by SHA-256) in NEW_SOURCES
    /// (exit 1 when any claim needs re-review).
    Impact(ImpactArgs),
    /// Convert the original SciFact release (corpus + labelled claims) into frozen cases.
    FromScifact(FromScifactArgs),
    /// Inter-reviewer agreement on support verdicts (Cohen's kappa, confusion matrix):
    /// the verdict in force against every annex by a different reviewer.
    Agreement(AgreementArgs),
    /// Compare two recordings (runs or case files) of the same frozen cases: only compatible
    /// cases (same ID, snapshot, query, passage texts); everything else is declared.
    Compare(CompareArgs),
    /// Suggest support verdicts with a local NLI model folder (entailment / neutral /
    /// contradiction) or an OpenAI-compatible chat model as a judge (fixed, versioned
    /// prompt). Stored beside the reviewer's verdict, never in its place.
    Suggest(SuggestArgs),
    /// Split recorded answers into suggested material claims with a chat model (fixed,
    /// versioned prompt), each with the answer's words that state it; written to their own
    /// file, never into the case file.
    #[command(after_help = crate::help::audit_extract())]
    Extract(Box<crate::audit_extract_cmd::ExtractArgs>),
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Case file to record.
    pub cases: PathBuf,
    #[command(flatten)]
    pub recording: Recording,
}

/// What a new audit run records besides the case file.
#[derive(Debug, Args)]
pub struct Recording {
    #[arg(long)]
    pub label: Option<String>,
    /// Notes file recorded with the run (packaged as notes.md).
    #[arg(long)]
    pub notes: Option<PathBuf>,
    /// Recording time (RFC 3339; default: now, UTC).
    #[arg(long, value_name = "TIME", value_parser = crate::date_args::timestamp)]
    pub time: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The recorded run whose frozen cases were replayed (ID, unique prefix or `latest`).
    pub base: String,
    /// Case file with the new answers (same cases, snapshot and queries).
    pub cases: PathBuf,
    #[command(flatten)]
    pub recording: Recording,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Newest N runs only.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SuggestArgs {
    #[arg(help = TARGET_HELP)]
    pub target: String,
    /// Sequence-classification model folder with NLI labels in `id2label`
    /// (BERT, RoBERTa / XLM-R or DeBERTa-v2/v3).
    #[arg(long, required_unless_present = "judge", conflicts_with = "judge")]
    pub nli: Option<PathBuf>,
    /// OpenAI-compatible chat server used as a judge (`http://host:port`, `.../v1` or the
    /// full `/chat/completions` URL). Prompt: `judge/1` (docs/grounding.md).
    #[arg(long, requires = "judge_model")]
    pub judge: Option<String>,
    /// The `model` asked for at the judge server.
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Environment variable holding the judge's API key (sent as a Bearer token).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Seed sent to the judge (servers that honour it repeat their answers).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Timeout of one judge request, in seconds.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Retries of a judge request after a 429, a 5xx or a timeout (never after a refused connection).
    #[arg(long, default_value_t = 4)]
    pub retries: u32,
    /// Time recorded with the suggestions (RFC 3339; default: now, UTC).
    #[arg(long, value_name = "TIME", value_parser = crate::date_args::timestamp)]
    pub time: Option<String>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The base: an audit run (ID, prefix, `latest`) or a case file.
    pub base: String,
    /// The new recording (the replay): an audit run or a case file.
    pub new: String,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AgreementArgs {
    #[arg(help = TARGET_HELP)]
    pub target: String,
    /// Compare the verdicts in force with the latest model suggestions instead of reviewers.
    #[arg(long)]
    pub suggestions: bool,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FromScifactArgs {
    /// `corpus.jsonl` of the original release.
    #[arg(long)]
    pub corpus: PathBuf,
    /// `claims_dev.jsonl` or `claims_train.jsonl` (labels needed).
    #[arg(long)]
    pub claims: PathBuf,
    /// Output case file (`.json`, else YAML).
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct ImpactArgs {
    #[arg(help = TARGET_HELP)]
    pub target: String,
    /// Current sources: `{ sources: [...] }` in YAML or JSON.
    #[arg(long)]
    pub sources: PathBuf,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[arg(help = TARGET_HELP)]
    pub target: String,
    /// Policy TOML with a `[grounding]` table.
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Cut-offs for document recall (default: 1..=retrieved, at most 10).
    #[arg(long, value_delimiter = ',')]
    pub k: Vec<usize>,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json", "markdown"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SheetFormat {
    Csv,
    Json,
    Markdown,
    Html,
}

#[derive(Debug, Args)]
pub struct SheetArgs {
    #[arg(help = TARGET_HELP)]
    pub target: String,
    #[arg(long, value_enum, default_value = "csv")]
    pub format: SheetFormat,
    /// Write here instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[arg(help = TARGET_HELP)]
    pub target: String,
    /// The claim judged for support (with --support), or whose citation is marked (with
    /// --citation and --mark).
    #[arg(long, required_unless_present = "answer", conflicts_with = "answer")]
    pub claim: Option<String>,
    /// supported | partially_supported | unsupported | not_evaluable
    #[arg(long, value_parser = parse_support, requires = "claim")]
    pub support: Option<g::Support>,
    /// A citation of the claim (its ID, as in the answer: `D-01`) to mark (with --mark).
    #[arg(long, requires_all = ["claim", "mark"], conflicts_with = "support")]
    pub citation: Option<String>,
    /// necessary | redundant (the claim's other citations already support it) | irrelevant
    /// (it supports nothing of the claim): counted in citation precision.
    #[arg(long, value_parser = parse_mark, requires = "citation")]
    pub mark: Option<g::CitationMark>,
    /// The answer judged for relevance (with --relevance).
    #[arg(long, requires = "relevance")]
    pub answer: Option<String>,
    /// addresses | partly | off_topic: does the answer address what was asked?
    #[arg(long, value_parser = parse_relevance, requires = "answer")]
    pub relevance: Option<g::Relevance>,
    /// The answer's case, when the answer ID is in more than one case.
    #[arg(long = "case", value_name = "CASE", requires = "answer")]
    pub case_id: Option<String>,
    /// Required; for not_evaluable, what is missing.
    #[arg(long)]
    pub reason: String,
    #[arg(long)]
    pub reviewer: String,
    #[arg(long, conflicts_with_all = ["answer", "citation"])]
    pub diagnosis: Option<String>,
    /// Time of the review (RFC 3339; default: now, UTC).
    #[arg(long, value_name = "TIME", value_parser = crate::date_args::timestamp)]
    pub time: Option<String>,
}

#[derive(Debug, Args)]
pub struct PackageArgs {
    #[arg(help = TARGET_HELP)]
    pub target: String,
    /// A directory (created, must be empty) or a `.tar.gz` file.
    #[arg(long)]
    pub out: PathBuf,
    /// Notes file to include (otherwise the run's notes, else the cases' notes, else
    /// listed as missing).
    #[arg(long)]
    pub notes: Option<PathBuf>,
    /// A creation time to record (a run's recording time by default; none for a case
    /// file, so that packages are byte-identical). RFC 3339.
    #[arg(long, value_name = "TIME", value_parser = crate::date_args::timestamp)]
    pub created: Option<String>,
    /// The previous recording to compare with (run or case file) for `comparison.json`.
    /// Default for a run: the run it replays, else the previous run of the same case file.
    #[arg(long)]
    pub previous: Option<String>,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Package directory or `.tar.gz`.
    pub package: PathBuf,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Largest member read, in bytes (a larger one is an error, exit 2).
    #[arg(long, value_name = "BYTES", default_value_t = g::DEFAULT_MAX_MEMBER_BYTES)]
    pub max_member_bytes: u64,
    /// Largest total read, in bytes: the decompressed archive, or the sum of a folder's files.
    #[arg(long, value_name = "BYTES", default_value_t = g::DEFAULT_MAX_TOTAL_BYTES)]
    pub max_total_bytes: u64,
    /// Most members (archive entries or folder entries) read.
    #[arg(long, value_name = "N", default_value_t = g::DEFAULT_MAX_MEMBERS)]
    pub max_members: usize,
}

fn parse_support(s: &str) -> Result<g::Support, String> {
    s.parse()
}

fn parse_relevance(s: &str) -> Result<g::Relevance, String> {
    s.parse()
}

fn parse_mark(s: &str) -> Result<g::CitationMark, String> {
    s.parse()
}

pub fn run(args: AuditArgs, settings: &Settings) -> anyhow::Result<ExitStatus> {
    let h = settings;
    match args.command {
        AuditCommand::Check(a) => check(a, h),
        AuditCommand::Record(a) => record(a, h),
        AuditCommand::Replay(a) => replay(a, h),
        AuditCommand::Runs(a) => runs(a, h),
        AuditCommand::Sheet(a) => sheet(a, h),
        AuditCommand::Review(a) => review(a, h),
        AuditCommand::Package(a) => package(a, h),
        AuditCommand::Verify(a) => verify(a, h),
        AuditCommand::Impact(a) => impact(a, h),
        AuditCommand::FromScifact(a) => from_scifact(a),
        AuditCommand::Agreement(a) => agreement(a, h),
        AuditCommand::Compare(a) => compare(a, h),
        AuditCommand::Suggest(a) => suggest(a, h),
        AuditCommand::Extract(a) => crate::audit_extract_cmd::run(*a, h),
    }
}

fn check(a: CheckArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let t = target::open(&a.target, h)?;
    let out = app::check(&t, a.policy.as_deref(), &a.k)?;
    let run = t.run_meta().map(|m| m.id.as_str());
    let human = if a.format == Format::Markdown && !a.json {
        report::check_markdown(&out, &t.origin)
    } else {
        report::check_human(&out)
    };
    print(
        a.json || a.format == Format::Json,
        &report::check_json(&out, &t.origin, run),
        &human,
    )?;
    Ok(ExitStatus::stop_if(!out.pass))
}

/// Prints one rendering to stdout: the JSON as is, the human text escaped for the terminal.
/// (Every audit command's stdout goes through here.)
fn print(json: bool, json_text: &str, human_text: &str) -> anyhow::Result<()> {
    let mut stdout = crate::output::human_stdout(json);
    stdout.write_all(if json { json_text } else { human_text }.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Prints bytes to stdout unchanged (sheets, and text its renderer already escaped).
fn print_raw(bytes: &[u8]) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(())
}

fn sheet(a: SheetArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let t = target::open(&a.target, h)?;
    let rows = g::build_sheet_with_marks(
        &t.set,
        &t.reviews,
        &t.relevance,
        &t.citation_marks,
        &t.suggestions,
        &t.relevance_suggestions,
    );
    let bytes = match a.format {
        SheetFormat::Csv => g::to_csv(&rows)?,
        SheetFormat::Json => {
            let mut s = g::to_json(&rows);
            s.push('\n');
            s.into_bytes()
        }
        SheetFormat::Markdown => g::to_markdown(&rows).into_bytes(),
        SheetFormat::Html => g::to_html(&rows).into_bytes(),
    };
    match &a.out {
        Some(p) => crate::output::write_atomic(p, &bytes)?,
        None => print_raw(&bytes)?,
    }
    Ok(ExitStatus::Success)
}

fn review(a: ReviewArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let t = target::open(&a.target, h)?;
    let time = a.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    if let (Some(claim), Some(citation), Some(mark)) = (&a.claim, &a.citation, a.mark) {
        return review_citation(&a, &t, &time, h, (claim, citation, mark));
    }
    let (Some(claim), Some(support)) = (&a.claim, a.support) else {
        return review_relevance(&a, &t, &time, h);
    };
    let done = app::record::review(
        &t,
        &app::record::Review {
            claim,
            support,
            reason: &a.reason,
            reviewer: &a.reviewer,
            diagnosis: a.diagnosis.clone(),
            time: &time,
        },
    )?;
    target::appended(&t, &done.warnings, h);
    let kind = match done.original {
        None => "original verdict".to_string(),
        Some(o) if o == support => format!("annex (agrees with {})", o.as_str()),
        Some(o) => format!("annex (disagrees with {})", o.as_str()),
    };
    printer::status(&format!(
        "appended {} on {} by {} to {}: {kind}",
        support.as_str(),
        claim,
        a.reviewer,
        done.place,
    ));
    Ok(ExitStatus::Success)
}

/// `audit review --answer ID --relevance V`: an answer-relevance verdict, appended to the
/// same log as claim verdicts.
fn review_relevance(
    a: &ReviewArgs,
    t: &Target,
    time: &str,
    h: &veredicto_app::HistorySpec,
) -> anyhow::Result<ExitStatus> {
    let (Some(answer), Some(relevance)) = (&a.answer, a.relevance) else {
        bail!("give --claim ID --support VERDICT, --claim ID --citation CIT --mark MARK, or --answer ID --relevance VERDICT");
    };
    let done = app::record::review_relevance(
        t,
        &app::record::RelevanceReview {
            case: a.case_id.as_deref(),
            answer,
            relevance,
            reason: &a.reason,
            reviewer: &a.reviewer,
            time,
        },
    )?;
    target::appended(t, &done.warnings, h);
    let kind = match done.original {
        None => "original verdict".to_string(),
        Some(o) if o == relevance => format!("annex (agrees with {o})"),
        Some(o) => format!("annex (disagrees with {o})"),
    };
    printer::status(&format!(
        "appended relevance {relevance} on {} {answer} by {} to {}: {kind}",
        done.record.case, a.reviewer, done.place,
    ));
    Ok(ExitStatus::Success)
}

/// `audit review --claim ID --citation CIT --mark M`: a mark of one of the claim's
/// citations, appended to the same log as claim verdicts.
fn review_citation(
    a: &ReviewArgs,
    t: &Target,
    time: &str,
    h: &veredicto_app::HistorySpec,
    (claim, citation, mark): (&str, &str, g::CitationMark),
) -> anyhow::Result<ExitStatus> {
    let done = app::record::review_citation(
        t,
        &app::record::CitationReview {
            claim,
            citation,
            mark,
            reason: &a.reason,
            reviewer: &a.reviewer,
            time,
        },
    )?;
    target::appended(t, &done.warnings, h);
    let kind = match done.original {
        None => "original mark".to_string(),
        Some(o) if o == mark => format!("annex (agrees with {o})"),
        Some(o) => format!("annex (disagrees with {o})"),
    };
    printer::status(&format!(
        "appended {mark} on citation {citation} of {claim} by {} to {}: {kind}",
        a.reviewer, done.place,
    ));
    Ok(ExitStatus::Success)
}

fn package(a: PackageArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let t = target::open(&a.target, h)?;
    let done = app::package::package(
        &t,
        &a.out,
        &app::package::PackageRequest {
            previous: a.previous.as_deref(),
            notes: a.notes.as_deref(),
            created: a.created.as_deref(),
            tool_version: env!("CARGO_PKG_VERSION"),
        },
        h,
        printer::events(),
    )?;
    printer::status(&format!(
        "wrote {} ({} files; missing: {})",
        a.out.display(),
        done.files,
        if done.missing.is_empty() {
            "none".to_string()
        } else {
            done.missing.join(", ")
        }
    ));
    Ok(ExitStatus::Success)
}

fn verify(a: VerifyArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let limits = g::ReadLimits {
        max_member_bytes: a.max_member_bytes,
        max_total_bytes: a.max_total_bytes,
        max_members: a.max_members,
    };
    let v = app::package::verify(&a.package, &limits, h)?;
    let package = a.package.display().to_string();
    print(
        a.json || a.format == Format::Json,
        &report::verification_json(&v, &package),
        &report::verification_human(&v, &package),
    )?;
    Ok(ExitStatus::stop_if(!v.verified()))
}

fn impact(a: ImpactArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let t = target::open(&a.target, h)?;
    let (hits, reopened) = app::impact(&t, &a.sources)?;
    print(
        a.json || a.format == Format::Json,
        &report::impact_json(
            &hits,
            &reopened,
            &t.origin,
            &a.sources.display().to_string(),
        ),
        &report::impact_human(&hits, &reopened),
    )?;
    Ok(ExitStatus::stop_if(
        !(hits.is_empty() && reopened.is_empty()),
    ))
}

fn from_scifact(a: FromScifactArgs) -> anyhow::Result<ExitStatus> {
    let done = app::from_scifact(&a.corpus, &a.claims, &a.out)?;
    printer::status(&format!(
        "wrote {}: {} cases, {} with rationale evidence",
        a.out.display(),
        done.cases,
        done.with_evidence
    ));
    Ok(ExitStatus::Success)
}

fn agreement(a: AgreementArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let t = target::open(&a.target, h)?;
    let ag = app::agreement(&t, a.suggestions);
    print(
        a.json || a.format == Format::Json,
        &report::agreement_json(&ag),
        &report::agreement_human(&ag, a.suggestions),
    )?;
    Ok(ExitStatus::Success)
}

fn compare(a: CompareArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let base = target::open(&a.base, h)?;
    let new = target::open(&a.new, h)?;
    print_comparison(&base, &new, a.json || a.format == Format::Json)?;
    Ok(ExitStatus::Success)
}

/// Prints the comparison of two recordings (text, or JSON with both origins).
fn print_comparison(base: &Target, new: &Target, json: bool) -> anyhow::Result<()> {
    let c = app::compare(base, new);
    print(
        json,
        &report::comparison_json(&c, &base.reference(), &new.reference()),
        &report::comparison_human(&c, &base.origin, &new.origin),
    )
}

fn suggest(a: SuggestArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let t = target::open(&a.target, h)?;
    let time = a.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let by = match (&a.nli, &a.judge) {
        (Some(dir), _) => Suggester::Nli(dir.clone()),
        (None, Some(url)) => {
            let model = a
                .judge_model
                .clone()
                .context("--judge needs --judge-model")?;
            let api_key =
                match &a.api_key_env {
                    Some(var) => Some(s.env.get(var).with_context(|| {
                        format!("--api-key-env {var}: the variable is not set")
                    })?),
                    None => None,
                };
            Suggester::Judge(JudgeSettings {
                url: url.clone(),
                model,
                api_key,
                seed: a.seed,
                timeout: std::time::Duration::from_secs(a.timeout),
                retries: a.retries,
            })
        }
        (None, None) => bail!("give --nli DIR or --judge URL"),
    };
    // A reply that could not be read is an error; the suggestions that could are shown
    // (and were stored) before it.
    let (done, unreadable) = match app::suggest::suggest(&t, &by, &time) {
        Ok(done) => (done, None),
        Err(veredicto_app::Error::UnreadableReply(u)) => (u.suggested.clone(), Some(u)),
        Err(e) => return Err(e.into()),
    };
    target::appended(&t, &done.warnings, h);
    let reviewer = |claim: &str| {
        t.claim(claim)
            .and_then(|c| g::effective_support(c, &t.reviews))
    };
    let relevance_in_force = |case: &str, answer: &str| {
        g::effective_relevance(case, answer, &t.relevance).map(|r| r.relevance)
    };
    let human = report::suggestions_human(&done.records, &reviewer)
        + &report::relevance_suggestions_human(&done.relevance, &relevance_in_force);
    print(
        a.json || a.format == Format::Json,
        &report::suggestion_lines_json(&done.records, &done.relevance),
        &human,
    )?;
    printer::status(&format!(
        "appended {} suggestion(s) to {} (claims without cited passage text are skipped){}",
        done.records.len(),
        done.place,
        if done.relevance.is_empty() {
            String::new()
        } else {
            format!(
                ", and {} answer-relevance suggestion(s)",
                done.relevance.len()
            )
        },
    ));
    match unreadable {
        Some(u) => Err(veredicto_app::Error::UnreadableReply(u).into()),
        None => Ok(ExitStatus::Success),
    }
}

/// What a new audit run records, from the flags.
fn recording(r: Recording, cwd: &std::path::Path) -> app::record::Recording {
    app::record::Recording {
        label: r.label,
        notes: r.notes,
        time: r.time.unwrap_or_else(crate::clock::now_rfc3339),
        git_revision: veredicto_app::history::git_revision(cwd),
        tool_version: env!("CARGO_PKG_VERSION").into(),
    }
}

fn record(a: RecordArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let t = target::from_file(&a.cases)?;
    let id = app::record::record(&t, None, &recording(a.recording, &s.cwd), h)?;
    let c = t.counts();
    printer::status(&format!(
        "recorded audit run {id} in {}: {} cases, {} answers, {} claims, {} record(s) carried over",
        h.display(),
        c.cases,
        c.answers,
        c.claims,
        t.raw_records().len()
    ));
    printer::stdout(&format!("{id}\n"))?;
    Ok(ExitStatus::Success)
}

fn replay(a: ReplayArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let done = app::record::replay(
        &a.base,
        &a.cases,
        &recording(a.recording, &s.cwd),
        h,
        printer::events(),
    )?;
    printer::status(&format!(
        "recorded audit run {} (replay of {})",
        done.id, done.base_id
    ));
    print_comparison(
        &done.base,
        &done.recorded,
        a.json || a.format == Format::Json,
    )?;
    Ok(ExitStatus::Success)
}

fn runs(a: RunsArgs, s: &Settings) -> anyhow::Result<ExitStatus> {
    let h = &s.history;
    let history = h.open_read_only()?;
    let list = history.audit_runs(a.limit)?;
    match a.json || a.format == Format::Json {
        true => print_raw(report::runs_json(&list).as_bytes())?,
        false => print_raw(report::runs_human(&list, &h.display()).as_bytes())?,
    }
    Ok(ExitStatus::Success)
}
