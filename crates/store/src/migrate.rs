//! Copying a history into another (`veredicto history migrate`): from a file to a team's
//! PostgreSQL database, or back. Runs keep their IDs, so a copy can be stopped and run again:
//! runs already in the target are skipped, each copied run is one transaction, and the end
//! verifies that every source run reads back from the target with the same metadata and the
//! same report bytes.
//!
//! Items are copied as stored, value for value ([`RunStore::export`](crate::RunStore::export)),
//! so each keeps its seal: the target seals what it wrote and refuses the item when that is
//! not what the source's seal covers (an item changed in the source after it was sealed),
//! and a seal made at upgrade time stays one. A source whose chain of seals does not verify
//! is refused before anything is copied; at the end every source seal must be in the target
//! with the same content and origin, and the target's chain must verify.

use crate::seal::first_bad_link;
use crate::{AuditRecordKind, History, ItemRef, RunFilter, Seal, SealKind, StoreError};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// What a migration did and verified.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MigrateReport {
    /// Exam runs in the source.
    pub runs: usize,
    /// Exam runs copied now.
    pub copied: usize,
    /// Exam runs that were already in the target.
    pub skipped: usize,
    /// Audit runs in the source.
    pub audit_runs: usize,
    /// Audit runs copied now.
    pub audit_copied: usize,
    /// Audit records appended to audit runs already in the target (reviews made since the
    /// last migration).
    pub audit_records_appended: usize,
    /// Ingestion gate acceptances in the source.
    pub gate_acceptances: usize,
    /// Acceptances copied now.
    pub gate_acceptances_copied: usize,
    /// Runs of the source whose chunks were kept (for `corpus check`'s drift).
    #[serde(default)]
    pub run_chunks: usize,
    /// Of those, copied now.
    #[serde(default)]
    pub run_chunks_copied: usize,
    /// SHA-256 over every source run's ID, metadata and report JSON, in ID order; equal in
    /// source and target.
    pub digest: String,
    /// Seals of the source, each found in the target with the same content and origin.
    pub seals: usize,
    /// The target's last seal digest after the copy.
    pub head: Option<String>,
}

fn sha256_hex(h: Sha256) -> String {
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in h.finalize() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn migrate_error(to: &History, message: String) -> StoreError {
    StoreError::Migrate {
        path: to.path().to_owned(),
        message,
    }
}

/// Copies every run of `from` missing in `to`, oldest first, then verifies the copy.
/// `progress` is called after each copied run with `(done, total)`.
pub fn migrate(
    from: &History,
    to: &History,
    mut progress: impl FnMut(usize, usize),
) -> Result<MigrateReport, StoreError> {
    let mut report = MigrateReport::default();
    let source_seals = from.seals()?;
    if let Some(i) = first_bad_link(&source_seals) {
        return Err(migrate_error(
            from,
            format!(
                "the source's seals do not verify from seal {} ({}) on: it was changed after \
                 it was sealed; run `veredicto history check` on it",
                i + 1,
                source_seals[i].item()
            ),
        ));
    }
    let mut source: Vec<String> = from
        .list(&RunFilter::default())?
        .into_iter()
        .map(|s| s.id)
        .collect();
    source.reverse();
    report.runs = source.len();
    let present: BTreeSet<String> = to
        .list(&RunFilter::default())?
        .into_iter()
        .map(|s| s.id)
        .collect();
    let mut newest = present.iter().next_back().cloned();
    for (i, id) in source.iter().enumerate() {
        if present.contains(id) {
            report.skipped += 1;
            continue;
        }
        if let Some(n) = &newest {
            if id <= n {
                return Err(migrate_error(
                    to,
                    format!(
                        "run {id} of the source sorts before run {n}, which the target has \
                         and the source does not; runs are appended in ID order, so migrate \
                         into an empty history or one made by an earlier migration of this \
                         source"
                    ),
                ));
            }
        }
        to.import_items(&from.export(ItemRef::Run(id))?)?;
        newest = Some(id.clone());
        report.copied += 1;
        progress(i + 1, source.len());
    }
    migrate_audit(from, to, &mut report)?;
    migrate_acceptances(from, to, &mut report)?;
    migrate_run_chunks(from, to, &mut report)?;
    report.digest = verify(from, to, &source)?;
    report.head = verify_seals(to, &source_seals)?;
    report.seals = source_seals.len();
    Ok(report)
}

/// Every source seal is in the target with the same content and origin, and the target's
/// chain verifies; returns the target's head.
fn verify_seals(to: &History, source: &[Seal]) -> Result<Option<String>, StoreError> {
    let target = to.seals()?;
    if let Some(i) = first_bad_link(&target) {
        return Err(migrate_error(
            to,
            format!(
                "verification failed: the copy's seal {} ({}) does not follow from the one before it",
                i + 1,
                target[i].item()
            ),
        ));
    }
    let copied: std::collections::BTreeMap<(SealKind, &str, usize), &Seal> = target
        .iter()
        .map(|s| ((s.kind, s.id.as_str(), s.part), s))
        .collect();
    for s in source {
        match copied.get(&(s.kind, s.id.as_str(), s.part)) {
            Some(t) if t.content == s.content && t.origin == s.origin => {}
            Some(_) => {
                return Err(migrate_error(
                    to,
                    format!("verification failed: the seal of {} differs", s.item()),
                ))
            }
            None => {
                return Err(migrate_error(
                    to,
                    format!("verification failed: {} has no seal in the copy", s.item()),
                ))
            }
        }
    }
    Ok(target.last().map(|s| s.digest.clone()))
}

fn migrate_audit(
    from: &History,
    to: &History,
    report: &mut MigrateReport,
) -> Result<(), StoreError> {
    let mut source = from.audit_runs(None)?;
    source.reverse();
    report.audit_runs = source.len();
    let present: BTreeSet<String> = to
        .audit_runs(None)?
        .into_iter()
        .map(|s| s.meta.id)
        .collect();
    let mut newest = present.iter().next_back().cloned();
    for summary in source {
        let id = summary.meta.id;
        let kinds = [AuditRecordKind::Review, AuditRecordKind::Suggestion];
        if present.contains(&id) {
            // Records appended in the source since the last migration follow.
            for kind in kinds {
                let have = to.audit_records(&id, kind)?;
                let all = from.audit_records(&id, kind)?;
                if all.get(..have.len()) != Some(&have[..]) {
                    return Err(migrate_error(
                        to,
                        format!("audit run {id}: the target's records differ from the source's"),
                    ));
                }
                if all.len() > have.len() {
                    to.import_items(&from.export(ItemRef::Records {
                        run: &id,
                        kind,
                        from: have.len(),
                    })?)?;
                    report.audit_records_appended += all.len() - have.len();
                }
            }
            continue;
        }
        if let Some(n) = &newest {
            if &id <= n {
                return Err(migrate_error(
                    to,
                    format!(
                        "audit run {id} of the source sorts before audit run {n}, which the \
                         target has and the source does not; migrate into an empty history"
                    ),
                ));
            }
        }
        // The case file is checked against its SHA-256 before it is copied.
        from.audit_run(&id)?;
        to.import_items(&from.export(ItemRef::AuditRun(&id))?)?;
        newest = Some(id);
        report.audit_copied += 1;
    }
    Ok(())
}

/// Copies the gate acceptances the target lacks, oldest first, under their IDs; then
/// checks that the target holds every source acceptance as it is in the source.
fn migrate_acceptances(
    from: &History,
    to: &History,
    report: &mut MigrateReport,
) -> Result<(), StoreError> {
    let source = from.acceptances(None)?;
    report.gate_acceptances = source.len();
    let present: BTreeSet<String> = to.acceptances(None)?.into_iter().map(|a| a.id).collect();
    let mut newest = present.iter().next_back().cloned();
    for a in &source {
        if present.contains(&a.id) {
            continue;
        }
        if let Some(n) = &newest {
            if &a.id <= n {
                return Err(migrate_error(
                    to,
                    format!(
                        "gate acceptance {} of the source sorts before acceptance {n}, which \
                         the target has and the source does not; migrate into an empty history",
                        a.id
                    ),
                ));
            }
        }
        to.import_items(&from.export(ItemRef::Acceptance(&a.id))?)?;
        newest = Some(a.id.clone());
        report.gate_acceptances_copied += 1;
    }
    let copied: std::collections::BTreeMap<String, crate::GateAcceptance> = to
        .acceptances(None)?
        .into_iter()
        .map(|a| (a.id.clone(), a))
        .collect();
    for a in &source {
        if copied.get(&a.id) != Some(a) {
            return Err(migrate_error(
                to,
                format!("verification failed: gate acceptance {} differs", a.id),
            ));
        }
    }
    Ok(())
}

/// Copies the chunk snapshots of the runs the target lacks them for (the runs themselves
/// are copied first), then checks that each reads back with the source's chunks.
fn migrate_run_chunks(
    from: &History,
    to: &History,
    report: &mut MigrateReport,
) -> Result<(), StoreError> {
    let source = from.runs_with_chunks()?;
    report.run_chunks = source.len();
    let present: BTreeSet<String> = to.runs_with_chunks()?.into_iter().collect();
    for run in &source {
        let Some(snapshot) = from.run_chunks(run)? else {
            continue;
        };
        if !present.contains(run) {
            to.import_items(&from.export(ItemRef::RunChunks(run))?)?;
            report.run_chunks_copied += 1;
        }
        if to.run_chunks(run)?.as_ref() != Some(&snapshot) {
            return Err(migrate_error(
                to,
                format!("verification failed: the chunks of run {run} differ"),
            ));
        }
    }
    Ok(())
}

/// Reads every source run back from both histories and compares them; returns the digest.
fn verify(from: &History, to: &History, ids: &[String]) -> Result<String, StoreError> {
    let (mut a, mut b) = (Sha256::new(), Sha256::new());
    for id in ids {
        for (h, digest) in [(from, &mut a), (to, &mut b)] {
            let run = h.get(id)?;
            digest.update(id.as_bytes());
            digest.update(serde_json::to_vec(&run.meta).unwrap_or_default());
            digest.update(serde_json::to_vec(&run.report).unwrap_or_default());
        }
    }
    let (a, b) = (sha256_hex(a), sha256_hex(b));
    if a != b {
        return Err(migrate_error(
            to,
            format!("verification failed: the copied runs hash to {b}, the source's to {a}"),
        ));
    }
    for run in from.audit_runs(None)? {
        let theirs = to.audit_run(&run.meta.id)?;
        let ours = from.audit_run(&run.meta.id)?;
        if theirs != ours {
            return Err(migrate_error(
                to,
                format!("verification failed: audit run {} differs", run.meta.id),
            ));
        }
    }
    Ok(a)
}
