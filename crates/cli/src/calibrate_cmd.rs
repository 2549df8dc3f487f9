//! `veredicto calibrate`: runs the suite from any source, calibrates the noise ceiling on its
//! healthy cases (veredicto_core::exam::calibrate) and writes a commented policy file.
//! Nothing is recorded in the history: a calibration is not a run.

use crate::printer::ExitStatus;
use anyhow::Context;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use veredicto_app::ExamRequest;
use veredicto_core::case::Corpus;
use veredicto_core::exam::calibrate::{self, Settings};
use veredicto_core::exam::{evaluate, ExamInput};
use veredicto_core::policy::Policy;
use veredicto_formats as formats;
use veredicto_formats::config::{PolicySource, Source};
use veredicto_report::calibration::{self as render, Verdicts};

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
            ..Default::default()
        }
    }
}

pub fn run(args: CalibrateArgs, project: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let settings = Settings {
        min_healthy: args.min_healthy,
    };
    let golden = match (&args.golden, &project.golden) {
        (Some(g), _) | (None, Some(g)) => g.clone(),
        (None, None) => anyhow::bail!(
            "calibrate needs a golden set: give --golden FILE, or `golden` in veredicto.toml (`veredicto init` writes one)"
        ),
    };
    let corpus_path = project.corpus.clone();
    // The exam's keys are checked; the other commands' tables are carried over as written.
    let starting = project.policy_sections(&[formats::policy::Section::Exam])?;
    let project_file = project.project.clone();
    if args.write_project && project_file.is_none() {
        anyhow::bail!("--write-project: no veredicto.toml is in use (`veredicto init` writes one)");
    }
    // The project's own policy file is the one to update; else a new policy.toml.
    let own_policy = match (&args.policy, &project.policy) {
        (None, Some(PolicySource::File(p))) => Some(p.clone()),
        _ => None,
    };
    let out = match (&args.out, args.write_project) {
        (Some(o), _) => o.clone(),
        (None, true) => own_policy
            .clone()
            .unwrap_or_else(|| project.root.clone().unwrap_or_default().join("policy.toml")),
        (None, false) => PathBuf::from("policy.toml"),
    };
    // Updating the project's own policy file is what --write-project asks for.
    let force = args.force || (args.write_project && own_policy.as_ref() == Some(&out));
    // Every argument is checked before the suite runs.
    if !force && !args.dry_run && out.exists() {
        anyhow::bail!(
            "{} exists: give --force to replace it, or --out FILE",
            out.display()
        );
    }
    let policy: Policy = starting.exam.clone();
    let cases = formats::golden::read_golden(&golden)?;
    let given_corpus = match &corpus_path {
        Some(p) => Some(Corpus::new(formats::corpus::read_corpus(p)?)),
        None => None,
    };
    let notes = match &args.notes {
        Some(p) => formats::notes::read_notes(p)?,
        None => BTreeMap::new(),
    };
    let from_project = project.source.as_ref().map(|s| match s {
        Source::Index(d) => format!("index:{}", d.display()),
        Source::Run(f) => format!("run:{}", f.display()),
        Source::Retriever(u) => u.clone(),
    });
    let Some(uri) = crate::retriever_args::source_uri(
        args.run.as_deref(),
        args.index.as_deref(),
        args.retriever.as_deref(),
    )
    .or(from_project) else {
        anyhow::bail!(
            "give --retriever URI, --index DIR or --run FILE, or a [source] in veredicto.toml"
        );
    };
    let (duplicates, max_retriever_failures) = (project.duplicates, project.max_retriever_failures);
    let deadline = args.net.total_deadline();
    let retriever = veredicto_retrieve::open(&uri, &args.net.options(&project.env)?)?;
    let embedder = crate::retriever_args::load_embedder(
        retriever.as_ref(),
        &args.embedder,
        project,
        &args.net,
        deadline,
        &cases,
    )?;
    // The chunks the exam reads (the file's, else the retriever's own), kept for the
    // verdict under the calibrated policy.
    let corpus = match given_corpus {
        Some(c) => Some(c),
        None => retriever.corpus()?,
    };
    let as_of = args.as_of.clone().unwrap_or_else(crate::clock::today_utc);
    // The exam library's entry point, without recording: a calibration is not a run.
    let outcome = veredicto_app::run_exam(ExamRequest {
        retriever: retriever.as_ref(),
        embedder: embedder.as_deref(),
        cases: &cases,
        policy: &policy,
        corpus: corpus.clone(),
        corpus_fingerprint: None,
        notes: &notes,
        as_of: &as_of,
        settings: veredicto_retrieve::pass::Settings {
            depth: args.depth,
            concurrency: args.concurrency,
            duplicates,
            max_retriever_failures,
            ..Default::default()
        },
        rerank_spec: None,
        timings: false,
        record: None,
        events: crate::printer::events(),
    })?;
    let report = outcome.report;
    let examined = outcome.retrieval;
    let calibration = calibrate::calibrate(&report, settings)?;
    let after = evaluate(ExamInput {
        cases: &cases,
        run: &examined.run,
        corpus: corpus.as_ref(),
        policy: &calibration.policy,
        notes: &notes,
        as_of: Some(&as_of),
    });
    let verdicts = Verdicts {
        before: report.verdict,
        after: after.verdict,
    };
    let written = if args.dry_run {
        None
    } else {
        let mut text = render::policy_toml(&calibration, &report.golden_fingerprint);
        // The starting policy's tables for other commands (`[grounding]`, `[corpus]`,
        // `[ingest]`) come along.
        let others = &starting.others;
        if !others.is_empty() {
            text.push_str(
                "\n# The tables of other commands, carried over from the starting policy:\n",
            );
            text.push_str(others.trim_start_matches('\n'));
        }
        // The file must load as a policy: a renderer bug must not leave a broken file.
        formats::policy::parse_policy(&out, &text)
            .context("the calibrated policy does not read back")?;
        write_policy(&out, text.as_bytes(), force)?;
        if let (true, Some(file)) = (args.write_project, &project_file) {
            update_project(file, &out, &project.cwd)?;
        }
        Some(out.display().to_string())
    };
    let out = if args.format.or_json(args.json) == crate::printer::Format::Json {
        render::render_json(&calibration, Some(verdicts))
    } else {
        let mut text = render::render_human(
            &calibration,
            Some(verdicts),
            written.as_deref().filter(|_| !args.write_project),
        );
        if let (true, Some(path), Some(file)) = (args.write_project, &written, &project_file) {
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

/// Points the project file at the policy file written (relative to the project's folder
/// when inside it); the new text must read back as a project file before it replaces the
/// old one.
fn update_project(file: &Path, policy: &Path, cwd: &Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let root = file.parent().unwrap_or(Path::new(""));
    let absolute = cwd.join(policy);
    let value = match absolute.strip_prefix(cwd.join(root)) {
        Ok(rest) => rest.display().to_string(),
        Err(_) => std::fs::canonicalize(&absolute)
            .unwrap_or(absolute)
            .display()
            .to_string(),
    };
    let new = formats::config::with_policy_file(&text, &value);
    formats::config::parse_project(file, &new)
        .context("the updated project file does not read back")?;
    write_policy(file, new.as_bytes(), true)
}

/// Temp file in the target's folder, then a rename; without `force` the rename refuses to
/// replace a file that appeared meanwhile.
fn write_policy(path: &Path, bytes: &[u8], force: bool) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    let persisted = if force {
        tmp.persist(path).map(drop)
    } else {
        tmp.persist_noclobber(path).map(drop)
    };
    persisted.map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "{} exists: give --force to replace it, or --out FILE",
                path.display()
            )
        } else {
            anyhow::Error::new(e.error).context(format!("writing {}", path.display()))
        }
    })
}
