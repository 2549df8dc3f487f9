//! Written acceptances of an ingestion batch's rejected corpus lines (`veredicto gate
//! accept`), kept in the history beside the runs (schema version 3), append-only: the
//! library can add one and list them, never change or remove one, and the database's
//! triggers refuse UPDATE and DELETE.

use crate::backend::{values, Backend, BadValue, Conn, ConnExt, Lock, Row};
use crate::seal::{self, SealKind};
use crate::{id, time, StoreError};
use std::path::Path;
use veredicto_core::gate::Rejection;
use veredicto_core::history::GateAcceptance;

pub(crate) const COLUMNS: &str = "id, created_at, index_name, batch, batch_fingerprint, reason, \
                                  rejected, rejections, who, tool_version";

/// Checks an acceptance and serialises it before the transaction: `(created_ms, random
/// bits, rejections JSON)`.
pub(crate) fn prepare_acceptance(
    location: &Path,
    a: &GateAcceptance,
) -> Result<(i64, [u8; 10], String), StoreError> {
    let created_ms =
        time::parse_timestamp_ms(&a.created_at).ok_or_else(|| StoreError::BadTime {
            path: location.to_owned(),
            field: "created_at",
            value: a.created_at.clone(),
        })?;
    if a.reason.trim().is_empty() {
        return Err(StoreError::Invalid {
            path: location.to_owned(),
            field: "reason",
            message: "a written reason is required".to_owned(),
        });
    }
    if a.rejected != a.rejections.len() {
        return Err(StoreError::Invalid {
            path: location.to_owned(),
            field: "rejected",
            message: format!(
                "{} rejected lines declared, {} listed",
                a.rejected,
                a.rejections.len()
            ),
        });
    }
    let random = id::random_bits().map_err(|e| StoreError::NoRandomness {
        path: location.to_owned(),
        message: e.to_string(),
    })?;
    let rejections =
        serde_json::to_string(&a.rejections).map_err(|error| StoreError::Unstorable {
            path: location.to_owned(),
            what: "accepted rejections",
            error,
        })?;
    Ok((created_ms, random, rejections))
}

/// Reads the stored rejections back.
pub(crate) fn parse_rejections(
    location: &Path,
    id: &str,
    json: &str,
) -> Result<Vec<Rejection>, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt {
        path: location.to_owned(),
        run: id.to_owned(),
        what: "accepted rejections",
        message: e.to_string(),
    })
}

/// IDs of `(id, rejected, rejections JSON)` rows whose list does not parse or does not
/// have `rejected` entries.
pub(crate) fn unreadable(location: &Path, rows: &[(String, i64, String)]) -> Vec<String> {
    rows.iter()
        .filter(|(id, n, json)| {
            parse_rejections(location, id, json)
                .map_or(true, |r| i64::try_from(r.len()).ok() != Some(*n))
        })
        .map(|(id, _, _)| id.clone())
        .collect()
}

fn row(r: &Row) -> Result<(GateAcceptance, String), BadValue> {
    Ok((
        GateAcceptance {
            id: r.text(0)?,
            created_at: r.text(1)?,
            index: r.text(2)?,
            batch: r.text(3)?,
            batch_fingerprint: r.text(4)?,
            reason: r.text(5)?,
            rejected: r.count(6)?,
            rejections: Vec::new(),
            who: r.opt_text(8)?,
            tool_version: r.text(9)?,
        },
        r.text(7)?,
    ))
}

/// Appends an acceptance in one transaction and returns its ID: a new one when `a.id` is
/// empty, else `a.id` (a migrated acceptance), which must sort after every acceptance
/// recorded here.
pub(crate) fn record_acceptance(
    b: &impl Backend,
    a: &GateAcceptance,
) -> Result<String, StoreError> {
    const OP: &str = "recording a gate acceptance";
    let (created_ms, random, rejections) = prepare_acceptance(b.location(), a)?;
    b.write(OP, Lock::Acceptances, |c| {
        let (seq, newest) = c.one(
            OP,
            "SELECT coalesce(max(seq), 0) + 1, max(id) FROM gate_acceptances",
            &[],
            |r| Ok((r.int(0)?, r.opt_text(1)?)),
        )?;
        let new_id = if a.id.is_empty() {
            id::next(created_ms, random, newest.as_deref())
        } else {
            a.id.clone()
        };
        c.execute(
            OP,
            "INSERT INTO gate_acceptances (seq, id, created_at, created_ms, index_name, batch,
                 batch_fingerprint, reason, rejected, rejections, who, tool_version)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            &values![
                seq,
                &new_id,
                &a.created_at,
                created_ms,
                &a.index,
                &a.batch,
                &a.batch_fingerprint,
                &a.reason,
                a.rejected,
                rejections,
                a.who.as_deref(),
                &a.tool_version,
            ],
        )?;
        seal::seal(c, SealKind::GateAcceptance, &new_id, 0)?;
        Ok(new_id)
    })
}

/// Acceptances, oldest first; only those of one batch when `batch_fingerprint` is given. A
/// version-2 file opened read-only (not upgraded) has none.
pub(crate) fn acceptances(
    c: &dyn Conn,
    batch_fingerprint: Option<&str>,
) -> Result<Vec<GateAcceptance>, StoreError> {
    if !c.has_table("gate_acceptances")? {
        return Ok(Vec::new());
    }
    let rows = c.rows(
        "reading gate acceptances",
        &format!(
            "SELECT {COLUMNS} FROM gate_acceptances
             WHERE CAST(?1 AS TEXT) IS NULL OR batch_fingerprint = ?1 ORDER BY seq"
        ),
        &values![batch_fingerprint],
        row,
    )?;
    rows.into_iter()
        .map(|(mut a, json)| {
            a.rejections = parse_rejections(c.location(), &a.id, &json)?;
            Ok(a)
        })
        .collect()
}

/// `(acceptances, IDs of those that do not read back)` for `check`.
pub(crate) fn check_acceptances(c: &dyn Conn) -> Result<(usize, Vec<String>), StoreError> {
    if !c.has_table("gate_acceptances")? {
        return Ok((0, Vec::new()));
    }
    let rows = c.rows(
        "checking gate acceptances",
        "SELECT id, rejected, rejections FROM gate_acceptances ORDER BY seq",
        &[],
        |r| Ok((r.text(0)?, r.int(1)?, r.text(2)?)),
    )?;
    Ok((rows.len(), unreadable(c.location(), &rows)))
}
