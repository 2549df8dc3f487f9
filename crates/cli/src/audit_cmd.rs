//! `veredicto audit`: grounding audit of recorded answers (SPEC §7). Thin: resolves the
//! arguments and calls `veredicto-grounding`. Exit 0 ok, 1 policy missed / package differs,
//! 2 error (returned as `Err`).

use crate::audit_target::Target;
use crate::history_args::HistoryArgs;
use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use veredicto_grounding as g;

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
    /// Recording time (default: now, UTC).
    #[arg(long)]
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
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Newest N runs only.
    #[arg(long)]
    pub limit: Option<usize>,
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
    /// Retries of a judge request after a 429, a 5xx, a timeout or a connection error.
    #[arg(long, default_value_t = 4)]
    pub retries: u32,
    /// Time recorded with the suggestions (default: now, UTC).
    #[arg(long)]
    pub time: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The base: an audit run (ID, prefix, `latest`) or a case file.
    pub base: String,
    /// The new recording (the replay): an audit run or a case file.
    pub new: String,
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
    /// Time of the review (default: now, UTC).
    #[arg(long)]
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
    /// file, so that packages are byte-identical).
    #[arg(long)]
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

pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
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

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "undefined".to_string(), |v| format!("{:.1}%", v * 100.0))
}

fn check(a: CheckArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let t = Target::open(&a.target, h)?;
    let (set, reviews) = (&t.set, &t.reviews);
    let policy = match &a.policy {
        Some(p) => g::load_policy(p)?,
        None => g::GroundingPolicy::default(),
    };
    let mut failed = false;
    let mut out_json = Vec::new();
    // Counts over all answers (no averaged scores: seed 004).
    let (mut n_answers, mut n_abst, mut n_claims, mut n_cited, mut n_supp, mut n_unrev) =
        (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
    let mut text = String::new();
    for case in &set.cases {
        let ks: Vec<usize> = if a.k.is_empty() {
            (1..=case.retrieval.len().min(10)).collect()
        } else {
            a.k.clone()
        };
        let recall: Vec<(usize, Option<f64>)> = ks
            .iter()
            .map(|&k| (k, g::document_recall_at(case, k)))
            .collect();
        let policy_recall = policy.recall_k.and_then(|k| g::document_recall_at(case, k));
        text.push_str(&format!(
            "case {}  snapshot {}  query: {}\n",
            case.id, case.snapshot, case.query
        ));
        if !case.valid_sources.is_empty() {
            let r: Vec<String> = recall
                .iter()
                .map(|(k, v)| format!("@{k} {}", pct(*v)))
                .collect();
            text.push_str(&format!("  document recall  {}\n", r.join("  ")));
        }
        let facts = g::fact_coverage(case, &ks);
        if !facts.is_empty() {
            let r: Vec<String> = facts
                .iter()
                .map(|f| match f.facts.is_empty() {
                    true => format!("@{} 0/{}", f.k, f.required),
                    false => format!(
                        "@{} {}/{} ({})",
                        f.k,
                        f.facts.len(),
                        f.required,
                        f.facts.join(", ")
                    ),
                })
                .collect();
            text.push_str(&format!("  facts retrieved  {}\n", r.join("  ")));
        }
        for (id, x) in case.absences() {
            text.push_str(&format!(
                "  absence {id}: the sources do not say {}\n",
                x.text
            ));
        }
        for ans in &case.answers {
            let m = g::answer_metrics(case, ans, &|id| {
                ans.claims
                    .iter()
                    .find(|c| c.id == id)
                    .and_then(|c| g::effective_support(c, reviews))
            });
            n_answers += 1;
            n_abst += usize::from(m.abstention);
            n_claims += m.claims;
            n_cited += m.with_citation;
            n_supp += m.supported;
            n_unrev += m.unreviewed;
            let v = g::violations(&policy, &m, policy_recall);
            failed |= !v.is_empty();
            if m.abstention {
                text.push_str(&format!(
                    "  answer {:<8} abstention (n = 0)  support undefined  coverage {}\n",
                    m.answer,
                    pct(m.coverage)
                ));
            } else {
                text.push_str(&format!(
                    "  answer {:<8} n={}  citation presence {}  support {}  coverage {} ({}/{} facts){}\n",
                    m.answer,
                    m.claims,
                    pct(m.citation_presence),
                    pct(m.support),
                    pct(m.coverage),
                    m.facts_covered,
                    m.required_facts,
                    if m.unreviewed > 0 { format!("  {} unreviewed", m.unreviewed) } else { String::new() }
                ));
            }
            for x in &v {
                text.push_str(&format!("    policy missed: {x}\n"));
            }
            out_json.push(serde_json::json!({
                "metrics": m,
                "document_recall": recall.iter().map(|(k, v)| serde_json::json!({"k": k, "value": v})).collect::<Vec<_>>(),
                "violations": v,
                "fact_coverage": g::fact_coverage(case, &ks),
            }));
        }
    }
    let mut stdout = crate::output::human_stdout(a.json);
    if a.json {
        let doc = serde_json::json!({
            "cases": t.origin,
            "run": t.run_meta().map(|m| m.id.clone()),
            "pass": !failed,
            "totals": {"answers": n_answers, "abstentions": n_abst, "claims": n_claims,
                       "with_citation": n_cited, "supported": n_supp, "unreviewed": n_unrev,
                       "absences": g::absences(set).len()},
            "answers": out_json,
            "absences": g::absences(set),
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write!(stdout, "{text}")?;
        writeln!(
            stdout,
            "totals: {n_answers} answers ({n_abst} abstentions), {n_claims} claims, {n_cited} with citation, {n_supp} supported, {n_unrev} unreviewed, {} absences",
            g::absences(set).len()
        )?;
        writeln!(
            stdout,
            "{}",
            if failed {
                "policy: missed"
            } else {
                "policy: met"
            }
        )?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn sheet(a: SheetArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let t = Target::open(&a.target, h)?;
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
        None => std::io::stdout().lock().write_all(&bytes)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn review(a: ReviewArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let t = Target::open(&a.target, h)?;
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
    let place = t.append_reviews(std::slice::from_ref(&rec))?;
    if let Some(note) = t.recorded_elsewhere(h) {
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
    Ok(ExitCode::SUCCESS)
}

fn package(a: PackageArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let t = Target::open(&a.target, h)?;
    // The previous recording: as asked, else (for a run) the run it replays or the
    // previous run of the same case file.
    let previous = match (&a.previous, t.run_meta(), t.history()) {
        (Some(p), _, _) => Some(Target::open(p, h)?),
        (None, Some(meta), Some(history)) => match history.previous_audit_run(&meta.id)? {
            Some(id) => Some(Target::from_run(h.open_existing()?, &id)?),
            None => None,
        },
        _ => None,
    };
    let comparison = previous
        .as_ref()
        .map(|b| g::compare(&b.set, &b.reviews, &t.set, &t.reviews));
    let notes = match &a.notes {
        Some(p) => Some(std::fs::read(p).with_context(|| p.display().to_string())?),
        None => t.notes.clone(),
    };
    let run = t.run_meta().map(|m| {
        serde_json::json!({
            "id": m.id, "created_at": m.created_at, "label": m.label, "replay_of": m.replay_of,
            "cases_sha256": m.cases_sha256, "recorded_by": m.tool_version,
            "git_revision": m.git_revision,
            "compared_with": previous.as_ref().map(|p| p.run_meta().map_or_else(|| p.origin.clone(), |m| m.id.clone())),
        })
    });
    let created = a
        .created
        .clone()
        .or_else(|| t.run_meta().map(|m| m.created_at.clone()));
    let files = g::build_package(&g::PackageInputs {
        cases_name: &t.name,
        cases_bytes: &t.bytes,
        set: &t.set,
        reviews_bytes: t.raw_reviews.as_deref(),
        reviews: &t.reviews,
        suggestions_bytes: t.raw_suggestions.as_deref(),
        suggestions: &t.suggestions,
        run,
        notes: notes.as_deref(),
        tool_version: env!("CARGO_PKG_VERSION"),
        created: created.as_deref(),
        comparison: comparison.as_ref(),
    })?;
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
    Ok(ExitCode::SUCCESS)
}

fn verify(a: VerifyArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let limits = g::ReadLimits {
        max_member_bytes: a.max_member_bytes,
        max_total_bytes: a.max_total_bytes,
        max_members: a.max_members,
    };
    let mut v = g::verify_package(&a.package, &limits)?;
    check_against_history(&mut v, h)?;
    let files = v.members.len();
    let mut stdout = crate::output::human_stdout(a.json);
    if a.json {
        let doc = serde_json::json!({
            "package": a.package.display().to_string(), "verified": v.verified(), "files": files,
            "run": v.run.as_ref().map(|r| r.id.clone()),
            "differences": v.differences, "checked": v.checked, "not_checked": v.not_checked,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        for d in &v.differences {
            writeln!(stdout, "{d}")?;
        }
        for c in &v.checked {
            writeln!(stdout, "checked: {c}")?;
        }
        for n in &v.not_checked {
            writeln!(stdout, "not checked: {n}")?;
        }
        if v.verified() {
            writeln!(
                stdout,
                "verified: {} ({files} files match the manifest)",
                a.package.display()
            )?;
        } else {
            writeln!(
                stdout,
                "NOT verified: {} difference(s)",
                v.differences.len()
            )?;
        }
    }
    Ok(if v.verified() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
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
    let explicit = h.history.as_str() != crate::history_args::DEFAULT_HISTORY;
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

fn impact(a: ImpactArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let t = Target::open(&a.target, h)?;
    let new = g::load_sources(&a.sources)?;
    let hits = g::impact(&t.set, &new);
    let reopened = g::reopened_absences(&t.set, &new);
    let mut stdout = crate::output::human_stdout(a.json);
    if a.json {
        let doc = serde_json::json!({"cases": t.origin, "sources": a.sources.display().to_string(), "impacted": hits, "reopened_absences": reopened});
        writeln!(stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else if hits.is_empty() {
        writeln!(stdout, "no cited passage changed")?;
    } else {
        for h in &hits {
            writeln!(
                stdout,
                "{} {} {} [{}] {}{} {} -> {}: {}",
                h.case,
                h.answer,
                h.claim,
                h.citation,
                h.source,
                h.passage
                    .as_deref()
                    .map(|p| format!("#{p}"))
                    .unwrap_or_default(),
                h.old_version,
                h.new_version.as_deref().unwrap_or("(gone)"),
                h.change
            )?;
        }
        writeln!(stdout, "{} claim citation(s) to re-review", hits.len())?;
    }
    if !a.json {
        for r in &reopened {
            writeln!(
                stdout,
                "{} absence {} reopened: {} {} -> {} ({}) may now say: {}",
                r.case, r.absence, r.source, r.old_version, r.new_version, r.change, r.lacking
            )?;
        }
        if !reopened.is_empty() {
            writeln!(stdout, "{} absence(s) to answer again", reopened.len())?;
        }
    }
    Ok(if hits.is_empty() && reopened.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn from_scifact(a: FromScifactArgs) -> anyhow::Result<ExitCode> {
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
    Ok(ExitCode::SUCCESS)
}

fn agreement(a: AgreementArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let t = Target::open(&a.target, h)?;
    let pairs = if a.suggestions {
        g::suggestion_pairs(&t.set, &t.reviews, &t.suggestions)
    } else {
        g::reviewer_pairs(&t.set, &t.reviews)
    };
    let ag = g::cohen_kappa(&pairs);
    let mut stdout = crate::output::human_stdout(a.json);
    if a.json {
        let labels: Vec<&str> = g::VERDICTS.iter().map(|v| v.as_str()).collect();
        let doc = serde_json::json!({"labels": labels, "agreement": ag});
        writeln!(stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let f = |v: Option<f64>| v.map_or_else(|| "undefined".to_string(), |v| format!("{v:.3}"));
    writeln!(
        stdout,
        "pairs {}  observed {}  chance {}  Cohen's kappa {}",
        ag.pairs,
        f(ag.observed),
        f(ag.expected),
        f(ag.kappa)
    )?;
    writeln!(
        stdout,
        "rows: verdict in force; columns: {}",
        if a.suggestions {
            "model suggestion"
        } else {
            "annex reviewer"
        }
    )?;
    write!(stdout, "{:<20}", "")?;
    for v in g::VERDICTS {
        write!(stdout, "{:>20}", v.as_str())?;
    }
    writeln!(stdout)?;
    for (i, v) in g::VERDICTS.iter().enumerate() {
        write!(stdout, "{:<20}", v.as_str())?;
        for n in ag.matrix[i] {
            write!(stdout, "{n:>20}")?;
        }
        writeln!(stdout)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn compare(a: CompareArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let base = Target::open(&a.base, h)?;
    let new = Target::open(&a.new, h)?;
    print_comparison(&base, &new, a.json)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the comparison of two recordings (text, or JSON with both origins).
fn print_comparison(base: &Target, new: &Target, json: bool) -> anyhow::Result<()> {
    let c = g::compare(&base.set, &base.reviews, &new.set, &new.reviews);
    let mut stdout = crate::output::human_stdout(json);
    if json {
        let doc = serde_json::json!({
            "base": base.run_meta().map_or_else(|| base.origin.clone(), |m| m.id.clone()),
            "new": new.run_meta().map_or_else(|| new.origin.clone(), |m| m.id.clone()),
            "compared": c.compared,
            "not_compared": c.not_compared,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    writeln!(stdout, "base: {}\nnew:  {}", base.origin, new.origin)?;
    for x in &c.compared {
        writeln!(
            stdout,
            "{} {} -> {}: citation presence {} -> {}  support {} -> {}  coverage {} -> {}",
            x.case,
            x.base.answer,
            x.new.answer,
            pct(x.base.citation_presence),
            pct(x.new.citation_presence),
            pct(x.base.support),
            pct(x.new.support),
            pct(x.base.coverage),
            pct(x.new.coverage)
        )?;
        for v in &x.verdict_changes {
            writeln!(stdout, "  verdict changed: {v}")?;
        }
        for v in &x.claims_only_in_base {
            writeln!(stdout, "  claim only in base: {v}")?;
        }
        for v in &x.claims_only_in_new {
            writeln!(stdout, "  claim only in new: {v}")?;
        }
        for v in &x.configuration_changes {
            writeln!(stdout, "  {v}")?;
        }
        writeln!(
            stdout,
            "  absences: {} -> {}{}",
            x.absences_base.len(),
            x.absences_new.len(),
            if x.absences_new.is_empty() {
                String::new()
            } else {
                format!(" ({})", x.absences_new.join("; "))
            }
        )?;
        for v in &x.absence_changes {
            writeln!(stdout, "  {v}")?;
        }
    }
    for n in &c.not_compared {
        match &n.answer {
            Some(ans) => writeln!(stdout, "not compared: {} {ans}: {}", n.case, n.reason)?,
            None => writeln!(stdout, "not compared: {}: {}", n.case, n.reason)?,
        }
    }
    writeln!(
        stdout,
        "{} answer(s) compared, {} not compared",
        c.compared.len(),
        c.not_compared.len()
    )?;
    Ok(())
}

fn suggest(a: SuggestArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let t = Target::open(&a.target, h)?;
    let time = a.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let (recs, failures) = match (&a.nli, &a.judge) {
        (Some(dir), _) => (nli_suggestions(&t, dir, &time)?, Vec::new()),
        (None, Some(url)) => judge_suggestions(&t, &a, url, &time)?,
        (None, None) => bail!("give --nli DIR or --judge URL"),
    };
    let place = t.append_suggestions(&recs)?;
    if let Some(note) = t.recorded_elsewhere(h) {
        eprintln!("{note}");
    }
    let mut stdout = crate::output::human_stdout(a.json);
    if a.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&recs)?)?;
    } else {
        for r in &recs {
            let human = t
                .claim(&r.claim)
                .and_then(|c| g::effective_support(c, &t.reviews))
                .map_or("pending", |s| s.as_str());
            let score = r.score().map_or_else(String::new, |v| format!(" {v:.3}"));
            writeln!(
                stdout,
                "{} {} {}: suggested {} ({}{score}); reviewer: {human}",
                r.case,
                r.answer,
                r.claim,
                r.suggestion.as_str(),
                r.label
            )?;
        }
    }
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
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "{} claim(s) got no suggestion: the judge's reply could not be read",
            failures.len()
        );
        ExitCode::from(1)
    })
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
    let labels: Vec<String> = model.labels().to_vec();
    if !labels.iter().any(|l| l.eq_ignore_ascii_case("entailment")) {
        bail!(
            "{}: not an NLI model: labels {labels:?} have no `entailment`",
            dir.display()
        );
    }
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
    let mut recs = Vec::new();
    for (case, answer, claim, premise, hypothesis) in g::nli_inputs(&t.set) {
        let logits = model.logits(&premise, &[hypothesis.as_str()])?;
        let Some(row) = logits.first() else { continue };
        let p = g::softmax(row);
        // Highest probability; ties go to the lowest label index.
        let (top, _) = p
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| {
                if v > bv {
                    (i, v)
                } else {
                    (bi, bv)
                }
            });
        let label = labels.get(top).cloned().unwrap_or_default();
        let Some(suggestion) = g::label_to_support(&label) else {
            bail!("{}: label `{label}` has no support mapping", dir.display());
        };
        recs.push(g::SuggestionRecord {
            case,
            answer,
            claim,
            suggestion,
            label,
            probabilities: labels.iter().cloned().zip(p.iter().copied()).collect(),
            confidence: None,
            reason: None,
            model: model_id.clone(),
            method: g::NLI_METHOD.into(),
            time: time.to_string(),
        });
    }
    Ok(recs)
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
    let method = g::judge_method();
    let mut recs = Vec::new();
    let mut failures = Vec::new();
    for input in g::judge_inputs(&t.set) {
        let reply = client
            .complete(g::JUDGE_SYSTEM_PROMPT, &g::judge_user_message(&input))
            .with_context(|| format!("judge for claim {}", input.claim))?;
        match g::parse_judge_reply(&reply.content) {
            Ok(v) => {
                let answered = match &reply.model {
                    Some(m) if m != &model => format!(" (answered by {m})"),
                    _ => String::new(),
                };
                recs.push(g::SuggestionRecord {
                    case: input.case,
                    answer: input.answer,
                    claim: input.claim,
                    suggestion: v.verdict,
                    label: v.verdict.as_str().into(),
                    probabilities: Default::default(),
                    confidence: v.confidence,
                    reason: v.reason,
                    model: format!("{model} @ {}{answered}", client.url()),
                    method: method.clone(),
                    time: time.to_string(),
                });
            }
            Err(e) => failures.push(format!("{} {}: {e}", input.case, input.claim)),
        }
    }
    Ok((recs, failures))
}

fn record(a: RecordArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let t = Target::from_file(&a.cases)?;
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
    println!("{id}");
    Ok(ExitCode::SUCCESS)
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

fn replay(a: ReplayArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    if !h.history.is_file() {
        bail!(
            "no history at {}: record the base first (`veredicto audit record CASES`)",
            h.history.display()
        );
    }
    let base = Target::from_run(h.open_existing()?, &a.base)?;
    let base_id = base.run_meta().map(|m| m.id.clone()).unwrap_or_default();
    let new = Target::from_file(&a.cases)?;
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
    print_comparison(&base, &recorded, a.json)?;
    Ok(ExitCode::SUCCESS)
}

fn runs(a: RunsArgs, h: &HistoryArgs) -> anyhow::Result<ExitCode> {
    let history = h.open_read_only()?;
    let list = history.audit_runs(a.limit)?;
    let mut stdout = std::io::stdout().lock();
    if a.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        writeln!(stdout, "no audit runs in {}", h.history.display())?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        stdout,
        "{:<26}  {:<24}  {:<16}  {:>5} {:>7} {:>6} {:>7} {:>11}  replay of / label",
        "id", "created", "cases file", "cases", "answers", "claims", "reviews", "suggestions"
    )?;
    for r in &list {
        let m = &r.meta;
        let tail = [
            m.replay_of.clone().map(|x| format!("replay of {x}")),
            m.label.clone(),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("  ");
        let esc = veredicto_core::redact::escape_control;
        writeln!(
            stdout,
            "{:<26}  {:<24}  {:<16}  {:>5} {:>7} {:>6} {:>7} {:>11}  {}",
            m.id,
            esc(&m.created_at),
            esc(&m.cases_name),
            m.counts.cases,
            m.counts.answers,
            m.counts.claims,
            r.reviews,
            r.suggestions,
            esc(&tail)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
