//! `veredicto audit`: grounding audit of recorded answers (SPEC §7). Thin: resolves the
//! arguments and calls `veredicto-grounding`. Exit 0 ok, 1 policy missed / package differs,
//! 2 error (returned as `Err`).

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use veredicto_grounding as g;

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Validate cases and print citation presence, support, coverage, abstention and
    /// document recall@k per answer (exit 1 when a `[grounding]` threshold is missed).
    Check(CheckArgs),
    /// The evidence sheet: one row per material claim.
    Sheet(SheetArgs),
    /// Append a reviewer's support verdict to `<cases>.reviews.jsonl` (append-only).
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
    /// Compare a replay with a base recording of the same frozen cases: only compatible
    /// cases (same ID, snapshot, query, passage texts); everything else is declared.
    Compare(CompareArgs),
    /// Suggest support verdicts with a local NLI cross-encoder folder (entailment / neutral /
    /// contradiction); appended to `<cases>.suggestions.jsonl`, never replacing a verdict.
    Suggest(SuggestArgs),
}

#[derive(Debug, Args)]
pub struct SuggestArgs {
    pub cases: PathBuf,
    /// Sequence-classification model folder with NLI labels in `id2label`.
    #[arg(long)]
    pub nli: PathBuf,
    /// Time recorded with the suggestions (default: now, UTC).
    #[arg(long)]
    pub time: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Base case file (with its review log beside it, if any).
    pub base: PathBuf,
    /// New case file (the replay).
    pub new: PathBuf,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AgreementArgs {
    pub cases: PathBuf,
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
    pub cases: PathBuf,
    /// Current sources: `{ sources: [...] }` in YAML or JSON.
    #[arg(long)]
    pub sources: PathBuf,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Case file (YAML, or JSON by extension).
    pub cases: PathBuf,
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
    pub cases: PathBuf,
    #[arg(long, value_enum, default_value = "csv")]
    pub format: SheetFormat,
    /// Write here instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    pub cases: PathBuf,
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
    pub cases: PathBuf,
    /// A directory (created, must be empty) or a `.tar.gz` file.
    #[arg(long)]
    pub out: PathBuf,
    /// Notes file to include (otherwise the cases' notes, else listed as missing).
    #[arg(long)]
    pub notes: Option<PathBuf>,
    /// A creation time to record (none is recorded otherwise, for byte-identical packages).
    #[arg(long)]
    pub created: Option<String>,
    /// A previous recording of the same cases: writes `comparison.json`.
    #[arg(long)]
    pub previous: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Package directory or `.tar.gz`.
    pub package: PathBuf,
    #[arg(long)]
    pub json: bool,
}

fn parse_support(s: &str) -> Result<g::Support, String> {
    s.parse()
}

pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        AuditCommand::Check(a) => check(a),
        AuditCommand::Sheet(a) => sheet(a),
        AuditCommand::Review(a) => review(a),
        AuditCommand::Package(a) => package(a),
        AuditCommand::Verify(a) => verify(a),
        AuditCommand::Impact(a) => impact(a),
        AuditCommand::FromScifact(a) => from_scifact(a),
        AuditCommand::Agreement(a) => agreement(a),
        AuditCommand::Compare(a) => compare(a),
        AuditCommand::Suggest(a) => suggest(a),
    }
}

/// Cases, their raw bytes, the review log (parsed and raw).
struct Loaded {
    set: g::CaseSet,
    bytes: Vec<u8>,
    reviews: Vec<g::ReviewRecord>,
    raw_reviews: Option<Vec<u8>>,
}

fn load(cases: &Path) -> anyhow::Result<Loaded> {
    let (set, bytes) = g::load_cases(cases)?;
    let log = g::review_log_path(cases);
    let reviews = g::read_reviews(&log)?;
    for r in &reviews {
        let known = set
            .cases
            .iter()
            .flat_map(|c| c.answers.iter())
            .flat_map(|a| a.claims.iter())
            .any(|c| c.id == r.claim);
        if !known {
            bail!("{}: review of unknown claim `{}`", log.display(), r.claim);
        }
    }
    let raw = match std::fs::read(&log) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| log.display().to_string()),
    };
    Ok(Loaded {
        set,
        bytes,
        reviews,
        raw_reviews: raw,
    })
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "undefined".to_string(), |v| format!("{:.1}%", v * 100.0))
}

fn check(a: CheckArgs) -> anyhow::Result<ExitCode> {
    let Loaded { set, reviews, .. } = load(&a.cases)?;
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
        for ans in &case.answers {
            let m = g::answer_metrics(case, ans, &|id| {
                ans.claims
                    .iter()
                    .find(|c| c.id == id)
                    .and_then(|c| g::effective_support(c, &reviews))
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
            }));
        }
    }
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let doc = serde_json::json!({
            "cases": a.cases.display().to_string(),
            "pass": !failed,
            "totals": {"answers": n_answers, "abstentions": n_abst, "claims": n_claims,
                       "with_citation": n_cited, "supported": n_supp, "unreviewed": n_unrev},
            "answers": out_json,
        });
        writeln!(stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write!(stdout, "{text}")?;
        writeln!(
            stdout,
            "totals: {n_answers} answers ({n_abst} abstentions), {n_claims} claims, {n_cited} with citation, {n_supp} supported, {n_unrev} unreviewed"
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

fn sheet(a: SheetArgs) -> anyhow::Result<ExitCode> {
    let Loaded { set, reviews, .. } = load(&a.cases)?;
    let rows = g::build_sheet(&set, &reviews);
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
        Some(p) => std::fs::write(p, &bytes).with_context(|| p.display().to_string())?,
        None => std::io::stdout().lock().write_all(&bytes)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn review(a: ReviewArgs) -> anyhow::Result<ExitCode> {
    let Loaded { set, reviews, .. } = load(&a.cases)?;
    let time = a.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let rec = g::new_review(
        &set,
        &a.claim,
        a.support,
        &a.reason,
        &a.reviewer,
        &time,
        a.diagnosis.clone(),
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", a.cases.display()))?;
    let claim = set
        .cases
        .iter()
        .flat_map(|c| c.answers.iter())
        .flat_map(|x| x.claims.iter())
        .find(|c| c.id == a.claim);
    let original = claim.and_then(|c| g::effective_support(c, &reviews));
    let log = g::review_log_path(&a.cases);
    g::append_review(&log, &rec)?;
    let kind = match original {
        None => "original verdict".to_string(),
        Some(o) if o == a.support => format!("annex (agrees with {})", o.as_str()),
        Some(o) => format!("annex (disagrees with {})", o.as_str()),
    };
    eprintln!(
        "appended {} on {} by {} to {}: {kind}",
        a.support.as_str(),
        a.claim,
        a.reviewer,
        log.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn package(a: PackageArgs) -> anyhow::Result<ExitCode> {
    let Loaded {
        set,
        bytes,
        reviews,
        raw_reviews,
    } = load(&a.cases)?;
    let comparison = match &a.previous {
        Some(p) => {
            let base = load(p)?;
            Some(g::compare(&base.set, &base.reviews, &set, &reviews))
        }
        None => None,
    };
    let sug_path = g::suggestion_log_path(&a.cases);
    let suggestions = match std::fs::read(&sug_path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| sug_path.display().to_string()),
    };
    let notes = match &a.notes {
        Some(p) => Some(std::fs::read(p).with_context(|| p.display().to_string())?),
        None => None,
    };
    let name = a
        .cases
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cases.yaml".into());
    let files = g::build_package(&g::PackageInputs {
        cases_name: &name,
        cases_bytes: &bytes,
        set: &set,
        reviews_bytes: raw_reviews.as_deref(),
        reviews: &reviews,
        suggestions_bytes: suggestions.as_deref(),
        notes: notes.as_deref(),
        tool_version: env!("CARGO_PKG_VERSION"),
        created: a.created.as_deref(),
        comparison: comparison.as_ref(),
    })?;
    let out = a.out.to_string_lossy();
    if out.ends_with(".tar.gz") || out.ends_with(".tgz") {
        let b = g::tar_gz(&files)?;
        std::fs::write(&a.out, b).with_context(|| a.out.display().to_string())?;
    } else {
        g::write_dir(&a.out, &files)?;
    }
    let m: g::Manifest = serde_json::from_slice(&files[g::MANIFEST])?;
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

fn verify(a: VerifyArgs) -> anyhow::Result<ExitCode> {
    let files = g::read_package(&a.package)?;
    let diffs = g::verify_files(&files);
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let doc = serde_json::json!({"package": a.package.display().to_string(), "verified": diffs.is_empty(), "files": files.len(), "differences": diffs});
        writeln!(stdout, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else if diffs.is_empty() {
        writeln!(
            stdout,
            "verified: {} ({} files match the manifest)",
            a.package.display(),
            files.len()
        )?;
    } else {
        for d in &diffs {
            writeln!(stdout, "{d}")?;
        }
        writeln!(stdout, "NOT verified: {} difference(s)", diffs.len())?;
    }
    Ok(if diffs.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn impact(a: ImpactArgs) -> anyhow::Result<ExitCode> {
    let Loaded { set, .. } = load(&a.cases)?;
    let new = g::load_sources(&a.sources)?;
    let hits = g::impact(&set, &new);
    let mut stdout = std::io::stdout().lock();
    if a.json {
        let doc = serde_json::json!({"cases": a.cases.display().to_string(), "sources": a.sources.display().to_string(), "impacted": hits});
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
    Ok(if hits.is_empty() {
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
    std::fs::write(&a.out, text).with_context(|| a.out.display().to_string())?;
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

fn agreement(a: AgreementArgs) -> anyhow::Result<ExitCode> {
    let Loaded { set, reviews, .. } = load(&a.cases)?;
    let pairs = if a.suggestions {
        let sug = g::read_suggestions(&g::suggestion_log_path(&a.cases))?;
        g::suggestion_pairs(&set, &reviews, &sug)
    } else {
        g::reviewer_pairs(&set, &reviews)
    };
    let ag = g::cohen_kappa(&pairs);
    let mut stdout = std::io::stdout().lock();
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

fn compare(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let base = load(&a.base)?;
    let new = load(&a.new)?;
    let c = g::compare(&base.set, &base.reviews, &new.set, &new.reviews);
    let mut stdout = std::io::stdout().lock();
    if a.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&c)?)?;
        return Ok(ExitCode::SUCCESS);
    }
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
    Ok(ExitCode::SUCCESS)
}

fn suggest(a: SuggestArgs) -> anyhow::Result<ExitCode> {
    use veredicto_embed::Reranker;
    let Loaded { set, reviews, .. } = load(&a.cases)?;
    let model = veredicto_embed::CrossEncoder::load(&a.nli)
        .with_context(|| format!("loading NLI model {}", a.nli.display()))?;
    let labels: Vec<String> = model.labels().to_vec();
    if !labels.iter().any(|l| l.eq_ignore_ascii_case("entailment")) {
        bail!(
            "{}: not an NLI model: labels {labels:?} have no `entailment`",
            a.nli.display()
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
    let time = a.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let mut recs = Vec::new();
    for (case, answer, claim, premise, hypothesis) in g::nli_inputs(&set) {
        let logits = model.logits(&premise, &[hypothesis.as_str()])?;
        let Some(row) = logits.first() else { continue };
        let p = g::softmax(row);
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
            bail!(
                "{}: label `{label}` has no support mapping",
                a.nli.display()
            );
        };
        recs.push(g::SuggestionRecord {
            case,
            answer,
            claim,
            suggestion,
            label,
            probabilities: labels.iter().cloned().zip(p.iter().copied()).collect(),
            model: model_id.clone(),
            method: g::NLI_METHOD.into(),
            time: time.clone(),
        });
    }
    let log = g::suggestion_log_path(&a.cases);
    g::append_suggestions(&log, &recs)?;
    let mut stdout = std::io::stdout().lock();
    if a.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&recs)?)?;
    } else {
        for r in &recs {
            let human = set
                .cases
                .iter()
                .flat_map(|c| c.answers.iter())
                .flat_map(|x| x.claims.iter())
                .find(|c| c.id == r.claim)
                .and_then(|c| g::effective_support(c, &reviews))
                .map_or("pending", |s| s.as_str());
            let pr = r.probabilities.get(&r.label).copied().unwrap_or(0.0);
            writeln!(
                stdout,
                "{} {} {}: suggested {} ({} {pr:.3}); reviewer: {human}",
                r.case,
                r.answer,
                r.claim,
                r.suggestion.as_str(),
                r.label
            )?;
        }
    }
    eprintln!(
        "appended {} suggestion(s) to {} (claims without cited passage text are skipped)",
        recs.len(),
        log.display()
    );
    Ok(ExitCode::SUCCESS)
}
