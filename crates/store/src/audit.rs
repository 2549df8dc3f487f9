//! Grounding audit runs (SPEC §7) in the history database (schema version 2).
//!
//! An audit run is one recorded set of answers to frozen cases: the case file exactly as
//! given (bytes and SHA-256), what it counts, and, for a replay, the run it replays. Reviews
//! and model suggestions are appended to a run as JSON records, in order, at any time; the
//! store never parses them (`veredicto-grounding` owns their format) and never changes or
//! removes one.

use crate::backend::{values, Backend, BadValue, Col, Conn, ConnExt, Lock, Row};
use crate::seal::{self, SealKind, SealOrigin};
use crate::store::{resolve_in, Table};
use crate::{id, time, StoreError};
use sha2::{Digest, Sha256};
use std::path::Path;
use veredicto_core::history::{
    AuditCounts, AuditRecordKind, AuditRun, AuditRunMeta, AuditRunSummary,
};

pub(crate) fn sha256(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub(crate) const META_COLUMNS: &str =
    "seq, id, created_at, label, replay_of, cases_name, cases_sha256, \
                            counts, tool_version, git_revision";

/// What recording an audit run checks and serialises before its transaction, for either
/// backend: `(created_ms, random bits, counts JSON)`.
pub(crate) fn prepare_audit(
    location: &Path,
    meta: &AuditRunMeta,
) -> Result<(i64, [u8; 10], String), StoreError> {
    let created_ms =
        time::parse_timestamp_ms(&meta.created_at).ok_or_else(|| StoreError::BadTime {
            path: location.to_owned(),
            field: "created_at",
            value: meta.created_at.clone(),
        })?;
    let random = id::random_bits().map_err(|e| StoreError::NoRandomness {
        path: location.to_owned(),
        message: e.to_string(),
    })?;
    let counts = serde_json::to_string(&meta.counts).map_err(|error| StoreError::Unstorable {
        path: location.to_owned(),
        what: "audit counts",
        error,
    })?;
    Ok((created_ms, random, counts))
}

/// Records an audit run in one transaction — the case file, its notes and the records
/// already made for it (reviews and suggestions kept beside the file before it was
/// recorded) — and returns its new ID. `meta.id` must be empty and `meta.replay_of`, when
/// set, must name a recorded audit run (ID or unique prefix; it is stored resolved).
pub(crate) fn record_audit_run(
    b: &impl Backend,
    meta: &AuditRunMeta,
    cases: &[u8],
    notes: Option<&[u8]>,
    records: &[(AuditRecordKind, String)],
) -> Result<String, StoreError> {
    if !meta.id.is_empty() {
        return Err(StoreError::IdGiven {
            path: b.location().to_owned(),
            id: meta.id.clone(),
        });
    }
    insert_audit_run(b, meta, None, cases, notes, records)
}

/// Records an audit run copied from another history under its own ID (`meta.id`), with
/// its records, in one transaction.
pub(crate) fn import_audit_run(
    b: &impl Backend,
    run: &AuditRun,
    records: &[(AuditRecordKind, String)],
) -> Result<(), StoreError> {
    insert_audit_run(
        b,
        &run.meta,
        Some(&run.meta.id),
        &run.cases,
        run.notes.as_deref(),
        records,
    )
    .map(drop)
}

fn insert_audit_run(
    b: &impl Backend,
    meta: &AuditRunMeta,
    fixed_id: Option<&str>,
    cases: &[u8],
    notes: Option<&[u8]>,
    records: &[(AuditRecordKind, String)],
) -> Result<String, StoreError> {
    const OP: &str = "recording an audit run";
    let (created_ms, random, counts) = prepare_audit(b.location(), meta)?;
    b.write(OP, Lock::AuditRuns, |c| {
        let replay_of = match &meta.replay_of {
            Some(r) => Some(resolve_in(c, Table::AuditRuns, r)?),
            None => None,
        };
        let (seq, newest) = c.one(
            OP,
            "SELECT coalesce(max(seq), 0) + 1, max(id) FROM audit_runs",
            &[],
            |r| Ok((r.int(0)?, r.opt_text(1)?)),
        )?;
        let run_id = match fixed_id {
            Some(kept) => kept.to_owned(),
            None => id::next(created_ms, random, newest.as_deref()),
        };
        c.execute(
            OP,
            "INSERT INTO audit_runs (seq, id, created_at, created_ms, label, replay_of,
                 cases_name, cases_sha256, cases_body, notes, counts, tool_version,
                 git_revision)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            &values![
                seq,
                &run_id,
                &meta.created_at,
                created_ms,
                meta.label.as_deref(),
                replay_of,
                &meta.cases_name,
                sha256(cases),
                cases,
                notes,
                counts,
                &meta.tool_version,
                meta.git_revision.as_deref(),
            ],
        )?;
        insert_records(c, seq, records)?;
        seal::seal(c, SealKind::AuditRun, &run_id, 0)?;
        for kind in [AuditRecordKind::Review, AuditRecordKind::Suggestion] {
            seal::seal_records(c, &run_id, kind, 0, SealOrigin::Recorded)?;
        }
        Ok(run_id)
    })
}

fn insert_records(
    c: &dyn Conn,
    run: i64,
    records: &[(AuditRecordKind, String)],
) -> Result<(), StoreError> {
    const COLUMNS: [(&str, Col); 3] = [("run", Col::Int), ("kind", Col::Text), ("body", Col::Text)];
    let rows: Vec<_> = records
        .iter()
        .map(|(kind, body)| values![run, kind.as_str(), body].to_vec())
        .collect();
    c.insert_rows(
        "appending to an audit run",
        "audit_records",
        &COLUMNS,
        &rows,
    )
}

/// Appends records to a recorded audit run, all in one transaction.
pub(crate) fn append_audit_records(
    b: &impl Backend,
    run: &str,
    records: &[(AuditRecordKind, String)],
) -> Result<(), StoreError> {
    const OP: &str = "appending to an audit run";
    let id = resolve_in(b, Table::AuditRuns, run)?;
    let seq = audit_seq(b, &id)?;
    b.write(OP, Lock::AuditRecords(seq), |c| {
        let kinds = [AuditRecordKind::Review, AuditRecordKind::Suggestion];
        let before = kinds.map(|kind| count_records(c, seq, kind));
        insert_records(c, seq, records)?;
        for (kind, before) in kinds.into_iter().zip(before) {
            seal::seal_records(c, &id, kind, before?, SealOrigin::Recorded)?;
        }
        Ok(())
    })
}

fn count_records(c: &dyn Conn, run: i64, kind: AuditRecordKind) -> Result<usize, StoreError> {
    c.one(
        "appending to an audit run",
        "SELECT count(*) FROM audit_records WHERE run = ?1 AND kind = ?2",
        &values![run, kind.as_str()],
        |r| r.count(0),
    )
}

fn audit_seq(c: &dyn Conn, id: &str) -> Result<i64, StoreError> {
    c.first(
        "reading an audit run",
        "SELECT seq FROM audit_runs WHERE id = ?1",
        &values![id],
        |r| r.int(0),
    )?
    .ok_or_else(|| StoreError::AuditRunNotFound {
        path: c.location().to_owned(),
        query: id.to_owned(),
    })
}

/// An audit run's metadata from the [`META_COLUMNS`] of `r`, and its counts' JSON.
fn meta_row(r: &Row) -> Result<(AuditRunMeta, String), BadValue> {
    Ok((
        AuditRunMeta {
            id: r.text(1)?,
            created_at: r.text(2)?,
            label: r.opt_text(3)?,
            replay_of: r.opt_text(4)?,
            cases_name: r.text(5)?,
            cases_sha256: r.text(6)?,
            counts: AuditCounts::default(),
            tool_version: r.text(8)?,
            git_revision: r.opt_text(9)?,
        },
        r.text(7)?,
    ))
}

fn with_counts(
    c: &dyn Conn,
    (mut meta, counts): (AuditRunMeta, String),
) -> Result<AuditRunMeta, StoreError> {
    meta.counts = serde_json::from_str(&counts)
        .map_err(|err| c.corrupt(&meta.id, "audit counts", err.to_string()))?;
    Ok(meta)
}

/// The whole audit run: metadata, case file bytes (checked against their SHA-256) and
/// notes.
pub(crate) fn audit_run(c: &dyn Conn, id_or_prefix: &str) -> Result<AuditRun, StoreError> {
    const OP: &str = "reading an audit run";
    let id = resolve_in(c, Table::AuditRuns, id_or_prefix)?;
    let (raw, cases, notes) = c.one(
        OP,
        &format!("SELECT {META_COLUMNS}, cases_body, notes FROM audit_runs WHERE id = ?1"),
        &values![&id],
        |r| Ok((meta_row(r)?, r.blob(10)?, r.opt_blob(11)?)),
    )?;
    let meta = with_counts(c, raw)?;
    let actual = sha256(&cases);
    if actual != meta.cases_sha256 {
        return Err(c.corrupt(
            &id,
            "case file",
            format!("SHA-256 is {actual}, recorded {}", meta.cases_sha256),
        ));
    }
    Ok(AuditRun { meta, cases, notes })
}

/// The records of `kind` appended to an audit run, in the order they were appended.
pub(crate) fn audit_records(
    c: &dyn Conn,
    id_or_prefix: &str,
    kind: AuditRecordKind,
) -> Result<Vec<String>, StoreError> {
    let id = resolve_in(c, Table::AuditRuns, id_or_prefix)?;
    let seq = audit_seq(c, &id)?;
    c.rows(
        "reading audit records",
        "SELECT body FROM audit_records WHERE run = ?1 AND kind = ?2 ORDER BY seq",
        &values![seq, kind.as_str()],
        |r| r.text(0),
    )
}

/// Audit runs, newest first (at most `limit`).
pub(crate) fn audit_runs(
    c: &dyn Conn,
    limit: Option<usize>,
) -> Result<Vec<AuditRunSummary>, StoreError> {
    const OP: &str = "listing audit runs";
    let limit = limit.map_or_else(String::new, |n| format!(" LIMIT {n}"));
    let rows = c.rows(
        OP,
        &format!(
            "SELECT {META_COLUMNS},
                 (SELECT count(*) FROM audit_records WHERE run = a.seq AND kind = 'review'),
                 (SELECT count(*) FROM audit_records WHERE run = a.seq AND kind = 'suggestion')
             FROM audit_runs a ORDER BY seq DESC{limit}"
        ),
        &[],
        |r| Ok((meta_row(r)?, r.count(10)?, r.count(11)?)),
    )?;
    rows.into_iter()
        .map(|(raw, reviews, suggestions)| {
            Ok(AuditRunSummary {
                meta: with_counts(c, raw)?,
                reviews,
                suggestions,
            })
        })
        .collect()
}

/// `(audit runs, IDs of those whose case file bytes no longer match their SHA-256)`.
pub(crate) fn check_audit_runs(c: &dyn Conn) -> Result<(usize, Vec<String>), StoreError> {
    let rows = c.rows(
        "checking audit runs",
        "SELECT id, cases_sha256, cases_body FROM audit_runs ORDER BY seq",
        &[],
        |r| Ok((r.text(0)?, r.text(1)?, r.blob(2)?)),
    )?;
    let altered = rows
        .iter()
        .filter(|(_, sha, body)| sha256(body) != *sha)
        .map(|(id, _, _)| id.clone())
        .collect();
    Ok((rows.len(), altered))
}

/// IDs of the audit runs recorded from a case file with these exact bytes, newest first.
pub(crate) fn audit_runs_of(c: &dyn Conn, cases: &[u8]) -> Result<Vec<String>, StoreError> {
    c.rows(
        "reading audit runs",
        "SELECT id FROM audit_runs WHERE cases_sha256 = ?1 ORDER BY seq DESC",
        &values![sha256(cases)],
        |r| r.text(0),
    )
}

/// The run an audit run is compared with by default: the run it replays, else the newest
/// earlier run recorded from a case file of the same name.
pub(crate) fn previous_audit_run(
    c: &dyn Conn,
    id_or_prefix: &str,
) -> Result<Option<String>, StoreError> {
    let run = audit_run(c, id_or_prefix)?;
    if let Some(r) = run.meta.replay_of {
        return Ok(Some(r));
    }
    c.first(
        "reading an audit run",
        "SELECT id FROM audit_runs WHERE id < ?1 AND cases_name = ?2 ORDER BY seq DESC LIMIT 1",
        &values![&run.meta.id, &run.meta.cases_name],
        |r| r.text(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{schema, RunStore, SqliteHistory};

    fn meta(name: &str) -> AuditRunMeta {
        AuditRunMeta {
            id: String::new(),
            created_at: "2026-11-30T10:00:00Z".into(),
            label: None,
            replay_of: None,
            cases_name: name.into(),
            cases_sha256: String::new(),
            counts: AuditCounts {
                cases: 1,
                answers: 2,
                claims: 3,
                abstentions: 0,
                snapshots: vec!["S1".into()],
            },
            tool_version: "0.1.0".into(),
            git_revision: None,
        }
    }

    #[test]
    fn records_reads_appends_and_refuses_changes() {
        let dir = tempfile::tempdir().unwrap();
        let h = SqliteHistory::open(&dir.path().join("h.db")).unwrap();
        let first = h
            .record_audit_run(
                &meta("q.yaml"),
                b"schema: x\n",
                Some(b"notes"),
                &[(AuditRecordKind::Review, "{\"a\":1}".into())],
            )
            .unwrap();
        let mut m = meta("q.yaml");
        m.replay_of = Some(first[..10].to_string());
        let second = h.record_audit_run(&m, b"schema: y\n", None, &[]).unwrap();
        assert!(second > first, "IDs sort in recording order");
        h.append_audit_records(
            &second,
            &[
                (AuditRecordKind::Review, "r1".into()),
                (AuditRecordKind::Suggestion, "s1".into()),
                (AuditRecordKind::Review, "r2".into()),
            ],
        )
        .unwrap();
        let run = h.audit_run("latest").unwrap();
        assert_eq!(run.meta.id, second);
        assert_eq!(run.meta.replay_of.as_deref(), Some(first.as_str()));
        assert_eq!(run.cases, b"schema: y\n");
        assert_eq!(run.meta.counts.claims, 3);
        assert_eq!(
            h.audit_records(&second, AuditRecordKind::Review).unwrap(),
            vec!["r1", "r2"]
        );
        assert_eq!(h.previous_audit_run(&second).unwrap(), Some(first.clone()));
        assert_eq!(h.previous_audit_run(&first).unwrap(), None);
        assert_eq!(
            h.audit_runs_of(b"schema: y\n").unwrap(),
            vec![second.clone()]
        );
        assert!(h.audit_runs_of(b"other").unwrap().is_empty());
        let list = h.audit_runs(None).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!((list[0].reviews, list[0].suggestions), (2, 1));
        assert_eq!(list[1].meta.id, first);
        assert_eq!(
            h.audit_run(&first).unwrap().notes.as_deref(),
            Some(&b"notes"[..])
        );
        // Append-only: no update, no delete, on either table.
        for sql in [
            "UPDATE audit_runs SET label = 'x'",
            "DELETE FROM audit_runs",
            "UPDATE audit_records SET body = 'x'",
            "DELETE FROM audit_records",
            "INSERT OR REPLACE INTO audit_records (seq, run, kind, body) VALUES (1, 1, 'review', 'x')",
        ] {
            let err = h.conn.execute(sql, []).unwrap_err().to_string();
            assert!(err.contains("append-only"), "{sql}: {err}");
        }
        // Unknown runs are named.
        let err = h.audit_run("01ZZZZ").unwrap_err().to_string();
        assert!(err.contains("no audit run matches"), "{err}");
        let mut bad = meta("q.yaml");
        bad.replay_of = Some("01ZZZZ".into());
        assert!(h.record_audit_run(&bad, b"x", None, &[]).is_err());
        assert_eq!(
            h.audit_runs(None).unwrap().len(),
            2,
            "nothing half-recorded"
        );
    }

    #[test]
    fn a_version_1_history_is_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        {
            let c = rusqlite::Connection::open(&path).unwrap();
            c.execute_batch(schema::SCHEMA_V1).unwrap();
            c.execute_batch(&schema::triggers()).unwrap();
            c.execute_batch(&format!(
                "PRAGMA application_id = {}; PRAGMA user_version = 1;",
                schema::APPLICATION_ID
            ))
            .unwrap();
        }
        let h = SqliteHistory::open_existing(&path).unwrap();
        let v: i64 = h
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, schema::SCHEMA_VERSION);
        h.record_audit_run(&meta("a.json"), b"{}", None, &[])
            .unwrap();
        assert!(h.check().unwrap().is_ok());
        drop(h);
        // Opening again changes nothing (the upgrade does not run twice).
        let h = SqliteHistory::open_existing(&path).unwrap();
        assert_eq!(h.audit_runs(None).unwrap().len(), 1);
    }
}
