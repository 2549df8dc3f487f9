//! `veredicto audit`: grounding audit of recorded answers. Thin: resolves the
//! arguments, calls `veredicto-grounding`, renders with `veredicto_report::audit` and prints. Exit 0 ok, 1 policy missed / package differs,
//! 2 error (returned as `Err`).

use crate::audit_target::{self as target, Target};
use crate::history_args::HistoryArgs;
use crate::printer::ExitStatus;
use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
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
    /// Validate cases and print citation presence, support, coverage, abstention and
    /// document recall@k per answer (exit 1 when a `[grounding]` threshold is missed).
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
    /// Append a reviewer's support verdict (append-only: to the history for a recorded run,
    /// else to `<cases>.reviews.jsonl`).
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
    #[arg(long)]
    pub claim: String,
    /// supported | partially_supported | unsupported | not_evaluable
    #[arg(long, value_parser = parse_support)]
    pub support: g::Support,
    /// Required; for not_evaluable, what is missing.
    #[arg(long)]
    pub reason: String,
    #[arg(long)]
    pub reviewer: String,
    #[arg(long)]
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

pub fn run(args: AuditArgs) -> anyhow::Result<ExitStatus> {
    let h = &args.history;
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
    }
}

fn check(a: CheckArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let t = target::open(&a.target, h)?;
    let opts = g::CheckOptions {
        policy: match &a.policy {
            Some(p) => g::load_policy(p)?,
            None => g::GroundingPolicy::default(),
        },
        k: a.k.clone(),
    };
    let out = g::check(&t.set, &t.reviews, &opts);
    let run = t.run_meta().map(|m| m.id.as_str());
    let human = if a.format == crate::printer::Format::Markdown && !a.json {
        report::check_markdown(&out, &t.origin)
    } else {
        report::check_human(&out)
    };
    print(
        a.json || a.format == crate::printer::Format::Json,
        &report::check_json(&out, &t.origin, run),
        &human,
    )?;
    Ok(if out.pass {
        ExitStatus::Success
    } else {
        ExitStatus::Stop
    })
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

fn sheet(a: SheetArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let t = target::open(&a.target, h)?;
    let rows = g::build_sheet(&t.set, &t.reviews, &t.suggestions);
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

fn review(a: ReviewArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let t = target::open(&a.target, h)?;
    let time = a.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let rec = g::new_review(
        &t.set,
        &a.claim,
        a.support,
        &a.reason,
        &a.reviewer,
        &time,
        a.diagnosis.clone(),
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", t.origin))?;
    let original = t
        .claim(&a.claim)
        .and_then(|c| g::effective_support(c, &t.reviews));
    let appended = t.append_reviews(std::slice::from_ref(&rec))?;
    target::warn(&appended.warnings);
    let place = appended.place;
    if let Some(note) = target::recorded_elsewhere(&t, h) {
        eprintln!("{note}");
    }
    let kind = match original {
        None => "original verdict".to_string(),
        Some(o) if o == a.support => format!("annex (agrees with {})", o.as_str()),
        Some(o) => format!("annex (disagrees with {})", o.as_str()),
    };
    eprintln!(
        "appended {} on {} by {} to {place}: {kind}",
        a.support.as_str(),
        a.claim,
        a.reviewer,
    );
    Ok(ExitStatus::Success)
}

fn package(a: PackageArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let t = target::open(&a.target, h)?;
    // The previous recording: as asked, else (for a run) the run it replays or the
    // previous run of the same case file.
    let previous = match &a.previous {
        Some(p) => Some(target::open(p, h)?),
        None => match t.default_previous()? {
            Some(id) => Some(Target::from_run(h.open_existing()?, &id)?),
            None => None,
        },
    };
    let notes = match &a.notes {
        Some(p) => Some(std::fs::read(p).with_context(|| p.display().to_string())?),
        None => None,
    };
    let files = t.package_files(
        previous.as_ref(),
        notes.as_deref(),
        a.created.as_deref(),
        env!("CARGO_PKG_VERSION"),
    )?;
    let out = a.out.to_string_lossy();
    if out.ends_with(".tar.gz") || out.ends_with(".tgz") {
        let b = g::tar_gz(&files)?;
        crate::output::write_atomic(&a.out, &b)?;
    } else {
        g::write_dir(&a.out, &files)?;
    }
    let m: g::Manifest = veredicto_formats::json::from_slice(&files[g::MANIFEST])?;
    eprintln!(
        "wrote {} ({} files; missing: {})",
        a.out.display(),
        files.len(),
        if m.missing.is_empty() {
            "none".to_string()
        } else {
            m.missing
                .iter()
                .map(|x| x.part.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    Ok(ExitStatus::Success)
}

fn verify(a: VerifyArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let limits = g::ReadLimits {
        max_member_bytes: a.max_member_bytes,
        max_total_bytes: a.max_total_bytes,
        max_members: a.max_members,
    };
    let mut v = g::verify_package(&a.package, &limits)?;
    check_against_history(&mut v, h)?;
    let package = a.package.display().to_string();
    print(
        a.json || a.format == crate::printer::Format::Json,
        &report::verification_json(&v, &package),
        &report::verification_human(&v, &package),
    )?;
    Ok(if v.verified() {
        ExitStatus::Success
    } else {
        ExitStatus::Stop
    })
}

/// Ties a package naming a recorded run to that run in the history, when there is a history:
/// a run missing from a history given with --history is a difference; from the default one,
/// it is only reported as not checked.
fn check_against_history(v: &mut g::Verification, h: &HistoryArgs) -> anyhow::Result<()> {
    let Some(run) = v.run.clone() else {
        return Ok(());
    };
    let label = h.history.display().to_string();
    let explicit = h.history.is_explicit();
    if !h.history.is_file() {
        if explicit {
            bail!("no history at {label}");
        }
        return Ok(());
    }
    let history = h.open_existing()?;
    let found = match history.audit_run(&run.id) {
        Ok(r) if r.meta.id == run.id => Some(r),
        Ok(_)
        | Err(veredicto_store::StoreError::AuditRunNotFound { .. })
        | Err(veredicto_store::StoreError::BadRunRef { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let Some(r) = found else {
        if explicit {
            g::check_recorded_run(v, None, &label);
        } else {
            v.not_checked.push(format!(
                "audit run {}: not in the default history {label} (give --history)",
                veredicto_core::redact::short(&run.id)
            ));
        }
        return Ok(());
    };
    let reviews = history.audit_records(&r.meta.id, veredicto_store::AuditRecordKind::Review)?;
    let suggestions =
        history.audit_records(&r.meta.id, veredicto_store::AuditRecordKind::Suggestion)?;
    g::check_recorded_run(
        v,
        Some(g::RecordedRun {
            id: &r.meta.id,
            cases_sha256: &r.meta.cases_sha256,
            reviews: &reviews,
            suggestions: &suggestions,
        }),
        &label,
    );
    Ok(())
}

fn impact(a: ImpactArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let t = target::open(&a.target, h)?;
    let new = g::load_sources(&a.sources)?;
    let hits = g::impact(&t.set, &new);
    let reopened = g::reopened_absences(&t.set, &new);
    print(
        a.json || a.format == crate::printer::Format::Json,
        &report::impact_json(
            &hits,
            &reopened,
            &t.origin,
            &a.sources.display().to_string(),
        ),
        &report::impact_human(&hits, &reopened),
    )?;
    Ok(if hits.is_empty() && reopened.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Stop
    })
}

fn from_scifact(a: FromScifactArgs) -> anyhow::Result<ExitStatus> {
    let set = g::scifact_cases(&a.corpus, &a.claims)?;
    let json = a.out.extension().and_then(|e| e.to_str()) == Some("json");
    let text = if json {
        let mut t = serde_json::to_string_pretty(&set)?;
        t.push('\n');
        t
    } else {
        serde_norway::to_string(&set)?
    };
    crate::output::write_atomic(&a.out, text.as_bytes())
        .with_context(|| a.out.display().to_string())?;
    let with_evidence = set
        .cases
        .iter()
        .filter(|c| !c.valid_sources.is_empty())
        .count();
    eprintln!(
        "wrote {}: {} cases, {} with rationale evidence",
        a.out.display(),
        set.cases.len(),
        with_evidence
    );
    Ok(ExitStatus::Success)
}

fn agreement(a: AgreementArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let t = target::open(&a.target, h)?;
    let pairs = if a.suggestions {
        g::suggestion_pairs(&t.set, &t.reviews, &t.suggestions)
    } else {
        g::reviewer_pairs(&t.set, &t.reviews)
    };
    let ag = g::cohen_kappa(&pairs);
    print(
        a.json || a.format == crate::printer::Format::Json,
        &report::agreement_json(&ag),
        &report::agreement_human(&ag, a.suggestions),
    )?;
    Ok(ExitStatus::Success)
}

fn compare(a: CompareArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let base = target::open(&a.base, h)?;
    let new = target::open(&a.new, h)?;
    print_comparison(
        &base,
        &new,
        a.json || a.format == crate::printer::Format::Json,
    )?;
    Ok(ExitStatus::Success)
}

/// Prints the comparison of two recordings (text, or JSON with both origins).
fn print_comparison(base: &Target, new: &Target, json: bool) -> anyhow::Result<()> {
    let c = g::compare(&base.set, &base.reviews, &new.set, &new.reviews);
    print(
        json,
        &report::comparison_json(&c, &base.reference(), &new.reference()),
        &report::comparison_human(&c, &base.origin, &new.origin),
    )
}

fn suggest(a: SuggestArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let t = target::open(&a.target, h)?;
    let time = a.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let (recs, failures) = match (&a.nli, &a.judge) {
        (Some(dir), _) => (nli_suggestions(&t, dir, &time)?, Vec::new()),
        (None, Some(url)) => judge_suggestions(&t, &a, url, &time)?,
        (None, None) => bail!("give --nli DIR or --judge URL"),
    };
    let appended = t.append_suggestions(&recs)?;
    target::warn(&appended.warnings);
    let place = appended.place;
    if let Some(note) = target::recorded_elsewhere(&t, h) {
        eprintln!("{note}");
    }
    let reviewer = |claim: &str| {
        t.claim(claim)
            .and_then(|c| g::effective_support(c, &t.reviews))
    };
    print(
        a.json || a.format == crate::printer::Format::Json,
        &report::suggestions_json(&recs),
        &report::suggestions_human(&recs, &reviewer),
    )?;
    for f in &failures {
        eprintln!(
            "veredicto: no suggestion: {}",
            veredicto_core::redact::message(f)
        );
    }
    eprintln!(
        "appended {} suggestion(s) to {place} (claims without cited passage text are skipped)",
        recs.len(),
    );
    Ok(if failures.is_empty() {
        ExitStatus::Success
    } else {
        eprintln!(
            "{} claim(s) got no suggestion: the judge's reply could not be read",
            failures.len()
        );
        ExitStatus::Stop
    })
}

/// A local NLI sequence-classification model, for `veredicto_grounding::nli_suggestions`.
struct Nli(veredicto_embed::CrossEncoder);

impl g::NliModel for Nli {
    fn labels(&self) -> &[String] {
        self.0.labels()
    }
    fn logits(
        &self,
        premise: &str,
        hypothesis: &str,
    ) -> Result<Option<Vec<f32>>, g::suggest::ModelError> {
        Ok(self.0.logits(premise, &[hypothesis])?.into_iter().next())
    }
}

/// Suggestions from a local NLI sequence-classification model.
fn nli_suggestions(
    t: &Target,
    dir: &std::path::Path,
    time: &str,
) -> anyhow::Result<Vec<g::SuggestionRecord>> {
    use veredicto_embed::Reranker;
    let model = veredicto_embed::CrossEncoder::load(dir)
        .with_context(|| format!("loading NLI model {}", dir.display()))?;
    let fp = model.fingerprint();
    let model_id = format!(
        "{} ({}; {})",
        fp.name,
        fp.architecture,
        fp.files
            .get("model.safetensors")
            .cloned()
            .unwrap_or_default()
    );
    let name = dir.display().to_string();
    Ok(g::nli_suggestions(
        &t.set,
        &Nli(model),
        &name,
        &model_id,
        time,
    )?)
}

/// An OpenAI-compatible chat client, for `veredicto_grounding::judge_suggestions`.
struct ChatJudge(veredicto_embed::ChatClient);

impl g::Judge for ChatJudge {
    fn complete(&self, system: &str, user: &str) -> Result<g::JudgeReply, g::suggest::ModelError> {
        let r = self.0.complete(system, user)?;
        Ok(g::JudgeReply {
            content: r.content,
            model: r.model,
        })
    }
}

/// Suggestions from a chat model asked with the fixed `judge/1` prompt. Replies that cannot
/// be read are returned as failures (named by claim), not stored.
fn judge_suggestions(
    t: &Target,
    a: &SuggestArgs,
    url: &str,
    time: &str,
) -> anyhow::Result<(Vec<g::SuggestionRecord>, Vec<String>)> {
    let model = a
        .judge_model
        .clone()
        .context("--judge needs --judge-model")?;
    let mut cfg = veredicto_embed::ChatConfig::new(url, model.clone());
    cfg.seed = Some(a.seed);
    cfg.timeout = std::time::Duration::from_secs(a.timeout);
    cfg.retries = a.retries;
    if let Some(var) = &a.api_key_env {
        cfg.api_key = Some(
            std::env::var(var)
                .with_context(|| format!("--api-key-env {var}: the variable is not set"))?,
        );
    }
    let client = veredicto_embed::ChatClient::new(cfg)?;
    let url = client.url().to_string();
    let out = g::judge_suggestions(&t.set, &ChatJudge(client), &model, &url, time)?;
    Ok((out.records, out.failures))
}

fn record(a: RecordArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let t = target::from_file(&a.cases)?;
    let id = record_target(&t, None, a.recording, h)?;
    let c = t.counts();
    eprintln!(
        "recorded audit run {id} in {}: {} cases, {} answers, {} claims, {} record(s) carried over",
        h.history.display(),
        c.cases,
        c.answers,
        c.claims,
        t.raw_records().len()
    );
    crate::printer::stdout(&format!("{id}\n"))?;
    Ok(ExitStatus::Success)
}

/// Records `t` as a new audit run (with the reviews and suggestions beside its file).
fn record_target(
    t: &Target,
    replay_of: Option<String>,
    Recording { label, notes, time }: Recording,
    h: &HistoryArgs,
) -> anyhow::Result<String> {
    let notes = match notes {
        Some(p) => Some(std::fs::read(&p).with_context(|| p.display().to_string())?),
        None => None,
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let meta = veredicto_store::AuditRunMeta {
        id: String::new(),
        created_at: time.unwrap_or_else(crate::clock::now_rfc3339),
        label,
        replay_of,
        cases_name: t.name.clone(),
        cases_sha256: String::new(),
        counts: t.counts(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        git_revision: crate::history_args::git_revision(&cwd),
    };
    let history = h.open()?;
    Ok(history.record_audit_run(&meta, &t.bytes, notes.as_deref(), &t.raw_records())?)
}

fn replay(a: ReplayArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    if !h.history.is_file() {
        bail!(
            "no history at {}: record the base first (`veredicto audit record CASES`)",
            h.history.display()
        );
    }
    let base = Target::from_run(h.open_existing()?, &a.base)?;
    let base_id = base.run_meta().map(|m| m.id.clone()).unwrap_or_default();
    let new = target::from_file(&a.cases)?;
    let c = g::compare(&base.set, &base.reviews, &new.set, &new.reviews);
    if c.compared.is_empty() {
        let reasons: Vec<String> = c
            .not_compared
            .iter()
            .map(|n| format!("{}: {}", n.case, n.reason))
            .collect();
        bail!(
            "{}: not a replay of audit run {base_id}: no case is compatible ({})",
            a.cases.display(),
            reasons.join("; ")
        );
    }
    let id = record_target(&new, Some(base_id.clone()), a.recording, h)?;
    eprintln!("recorded audit run {id} (replay of {base_id})");
    let recorded = Target::from_run(h.open_existing()?, &id)?;
    print_comparison(
        &base,
        &recorded,
        a.json || a.format == crate::printer::Format::Json,
    )?;
    Ok(ExitStatus::Success)
}

fn runs(a: RunsArgs, h: &HistoryArgs) -> anyhow::Result<ExitStatus> {
    let history = h.open_read_only()?;
    let list = history.audit_runs(a.limit)?;
    match a.json || a.format == crate::printer::Format::Json {
        true => print_raw(report::runs_json(&list).as_bytes())?,
        false => print_raw(report::runs_human(&list, &h.history.display()).as_bytes())?,
    }
    Ok(ExitStatus::Success)
}
