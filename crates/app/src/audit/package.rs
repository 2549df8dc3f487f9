//! Audit packages: writing one (a directory, or a `.tar.gz`) with a SHA-256 manifest, and
//! verifying one against its manifest and, for a recorded run, against the history.

use std::path::Path;
use veredicto_grounding as g;

use super::AuditTarget;
use crate::history::HistorySpec;
use crate::{bail, Context, Events, Result};

/// What goes into a package besides the target.
#[derive(Debug, Clone, Default)]
pub struct PackageRequest<'a> {
    /// The previous recording to compare with (run or case file) for `comparison.json`;
    /// default for a run: the run it replays, else the previous run of the same case file.
    pub previous: Option<&'a str>,
    /// Notes file to include (otherwise the run's notes, else the cases' notes, else
    /// listed as missing).
    pub notes: Option<&'a Path>,
    /// A creation time to record (RFC 3339).
    pub created: Option<&'a str>,
    /// The tool version recorded in the manifest.
    pub tool_version: &'a str,
}

/// A package written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packaged {
    /// Files in the package.
    pub files: usize,
    /// The parts listed as missing in the manifest.
    pub missing: Vec<String>,
}

/// Writes the audit package of `t` to `out`: a `.tar.gz` (or `.tgz`) file atomically, else
/// a directory (created, must be empty).
pub fn package(
    t: &AuditTarget,
    out: &Path,
    req: &PackageRequest<'_>,
    history: &HistorySpec,
    events: Events<'_>,
) -> Result<Packaged> {
    // The previous recording: as asked, else (for a run) the run it replays or the
    // previous run of the same case file.
    let previous = match req.previous {
        Some(p) => Some(super::open(p, history, events)?),
        None => match t.default_previous()? {
            Some(id) => Some(AuditTarget::from_run(history.open_existing()?, &id)?),
            None => None,
        },
    };
    let notes = match req.notes {
        Some(p) => Some(std::fs::read(p).with_context(|| p.display().to_string())?),
        None => None,
    };
    let files = t.package_files(
        previous.as_ref(),
        notes.as_deref(),
        req.created,
        req.tool_version,
    )?;
    let name = out.to_string_lossy();
    if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        let b = g::tar_gz(&files)?;
        crate::files::write_atomic(out, &b)?;
    } else {
        g::write_dir(out, &files)?;
    }
    let m: g::Manifest = veredicto_formats::json::from_slice(&files[g::MANIFEST])?;
    Ok(Packaged {
        files: files.len(),
        missing: m.missing.iter().map(|x| x.part.clone()).collect(),
    })
}

/// Verifies the package at `path` against its manifest and, when it names a recorded run,
/// against that run in the history at `history`: a run missing from a history the user
/// chose is a difference; from the default one, it is only reported as not checked.
pub fn verify(
    path: &Path,
    limits: &g::ReadLimits,
    history: &HistorySpec,
) -> Result<g::Verification> {
    let mut v = g::verify_package(path, limits)?;
    check_against_history(&mut v, history)?;
    Ok(v)
}

fn check_against_history(v: &mut g::Verification, h: &HistorySpec) -> Result<()> {
    let Some(run) = v.run.clone() else {
        return Ok(());
    };
    let label = h.display();
    let explicit = h.is_explicit();
    if !h.is_file() {
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
