//! Calibration: the suite run once through the exam (never recorded: a calibration is not
//! a run), the noise ceiling calibrated on its healthy cases
//! (`veredicto_core::exam::calibrate`), and a commented policy file written, optionally
//! with the project file pointed at it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use veredicto_core::case::{Case, Corpus};
use veredicto_core::exam::calibrate::{self, Calibration};
use veredicto_core::exam::{evaluate, ExamInput};
use veredicto_embed::Embedder;
use veredicto_formats::config::PolicySource;
use veredicto_formats::policy::PolicyFile;
use veredicto_report::calibration::{self as render, Verdicts};
use veredicto_retrieve::pass::Settings as PassSettings;
use veredicto_retrieve::Retriever;

use crate::{Context, Error, Events, ExamRequest, Result, Settings};

/// Where the calibrated policy goes, as the user asked for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OutputChoice {
    /// The file named (`--out`); `None`: the project's policy file with `write_project`,
    /// else `policy.toml`.
    pub out: Option<PathBuf>,
    /// Whether the policy was named for this command (`--policy`) rather than taken from
    /// the environment or the project.
    pub policy_named: bool,
    /// Point the project file at the calibrated policy.
    pub write_project: bool,
    /// Replace the file when it exists.
    pub force: bool,
    /// Write nothing.
    pub dry_run: bool,
}

/// Where the calibrated policy will be written ([`plan_output`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// The policy file.
    pub path: PathBuf,
    /// Replace it when it exists.
    pub force: bool,
    /// The project file to point at it (`policy_file`), when asked.
    pub project_file: Option<PathBuf>,
    /// The working folder (the project file records the policy relative to its folder).
    pub cwd: PathBuf,
}

/// Where the calibrated policy goes (`None`: a dry run), checked before the suite runs: an
/// existing file is replaced only with `force`, or when it is the project's own policy file
/// and the project is to be updated.
pub fn plan_output(choice: &OutputChoice, settings: &Settings) -> Result<Option<Output>> {
    let project_file = settings.project.clone();
    if choice.write_project && project_file.is_none() {
        crate::bail!("--write-project: no veredicto.toml is in use (`veredicto init` writes one)");
    }
    // The project's own policy file is the one to update; else a new policy.toml.
    let own_policy = match (choice.policy_named, &settings.policy) {
        (false, Some(PolicySource::File(p))) => Some(p.clone()),
        _ => None,
    };
    let out = match (&choice.out, choice.write_project) {
        (Some(o), _) => o.clone(),
        (None, true) => own_policy.clone().unwrap_or_else(|| {
            settings
                .root
                .clone()
                .unwrap_or_default()
                .join("policy.toml")
        }),
        (None, false) => PathBuf::from("policy.toml"),
    };
    // Updating the project's own policy file is what --write-project asks for.
    let force = choice.force || (choice.write_project && own_policy.as_ref() == Some(&out));
    if !force && !choice.dry_run && out.exists() {
        crate::bail!(
            "{} exists: give --force to replace it, or --out FILE",
            out.display()
        );
    }
    Ok((!choice.dry_run).then(|| Output {
        path: out,
        force,
        project_file: project_file.filter(|_| choice.write_project),
        cwd: settings.cwd.clone(),
    }))
}

/// One calibration.
pub struct CalibrateRequest<'a> {
    /// The retriever whose answers the suite is run on.
    pub retriever: &'a dyn Retriever,
    /// The query embedder, when the retriever needs one.
    pub embedder: Option<&'a dyn Embedder>,
    /// The golden cases.
    pub cases: &'a [Case],
    /// Chunks given by the caller; `None` takes the retriever's own.
    pub corpus: Option<Corpus>,
    /// Diagnosis notes per case ID (for the verdicts before and after).
    pub notes: &'a BTreeMap<String, String>,
    /// The exam date (`YYYY-MM-DD`) for validity windows.
    pub as_of: &'a str,
    /// The policy to start from: every key but the noise ceiling is kept, and its tables
    /// for other commands are carried over as written.
    pub starting: &'a PolicyFile,
    /// Depth, concurrency, the answer rules.
    pub pass: PassSettings<'a>,
    /// Fewest healthy cases to calibrate from.
    pub min_healthy: usize,
    /// Where to write the policy (`None`: nothing is written).
    pub output: Option<Output>,
    /// Progress and notes of the pass.
    pub events: Events<'a>,
}

/// What a calibration found and wrote.
#[derive(Debug, Clone)]
pub struct Calibrated {
    /// The calibration (the new policy, the healthy cases, the rule).
    pub calibration: Calibration,
    /// The verdict under the starting policy and under the calibrated one.
    pub verdicts: Verdicts,
    /// The policy file written.
    pub written: Option<PathBuf>,
    /// The project file pointed at it.
    pub project_updated: Option<PathBuf>,
}

/// Runs the suite, calibrates, and writes the policy (and the project file) as asked.
pub fn calibrate(request: CalibrateRequest<'_>) -> Result<Calibrated> {
    let policy = request.starting.exam.clone();
    // The chunks the exam reads (the caller's, else the retriever's own), kept for the
    // verdict under the calibrated policy.
    let corpus = match request.corpus {
        Some(c) => Some(c),
        None => request.retriever.corpus()?,
    };
    let outcome = crate::run_exam(ExamRequest {
        retriever: request.retriever,
        embedder: request.embedder,
        cases: request.cases,
        policy: &policy,
        corpus: corpus.clone(),
        corpus_fingerprint: None,
        notes: request.notes,
        as_of: request.as_of,
        settings: request.pass,
        rerank_spec: None,
        fusion: None,
        check_vectors: None,
        timings: false,
        record: None,
        drafts: Vec::new(),
        events: request.events,
    })?;
    let report = outcome.report;
    let calibration = calibrate::calibrate(
        &report,
        calibrate::Settings {
            min_healthy: request.min_healthy,
        },
    )
    .map_err(Error::msg)?;
    let after = evaluate(ExamInput {
        cases: request.cases,
        run: &outcome.retrieval.run,
        corpus: corpus.as_ref(),
        policy: &calibration.policy,
        notes: request.notes,
        as_of: Some(request.as_of),
    });
    let verdicts = Verdicts {
        before: report.verdict,
        after: after.verdict,
    };
    let (mut written, mut project_updated) = (None, None);
    if let Some(out) = &request.output {
        let mut text = render::policy_toml(&calibration, &report.golden_fingerprint);
        // The starting policy's tables for other commands (`[grounding]`, `[corpus]`,
        // `[ingest]`) come along.
        let others = &request.starting.others;
        if !others.is_empty() {
            text.push_str(
                "\n# The tables of other commands, carried over from the starting policy:\n",
            );
            text.push_str(others.trim_start_matches('\n'));
        }
        // The file must load as a policy: a renderer bug must not leave a broken file.
        veredicto_formats::policy::parse_policy(&out.path, &text)
            .context("the calibrated policy does not read back")?;
        write_file(&out.path, text.as_bytes(), out.force)?;
        if let Some(file) = &out.project_file {
            update_project(file, &out.path, &out.cwd)?;
            project_updated = Some(file.clone());
        }
        written = Some(out.path.clone());
    }
    Ok(Calibrated {
        calibration,
        verdicts,
        written,
        project_updated,
    })
}

/// Points the project file at the policy file written (relative to the project's folder
/// when inside it); the new text must read back as a project file before it replaces the
/// old one.
fn update_project(file: &Path, policy: &Path, cwd: &Path) -> Result<()> {
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
    let new = veredicto_formats::config::with_policy_file(&text, &value);
    veredicto_formats::config::parse_project(file, &new)
        .context("the updated project file does not read back")?;
    write_file(file, new.as_bytes(), true)
}

/// Temp file in the target's folder, then a rename; without `force` the rename refuses to
/// replace a file that appeared meanwhile.
fn write_file(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
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
            Error::msg(format!(
                "{} exists: give --force to replace it, or --out FILE",
                path.display()
            ))
        } else {
            Error::Context {
                context: format!("writing {}", path.display()),
                source: Box::new(Error::Io(e.error)),
            }
        }
    })
}
