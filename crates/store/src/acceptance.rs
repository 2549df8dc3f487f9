//! Written acceptances of an ingestion batch's rejected corpus lines (`veredicto gate
//! accept`), kept in the history beside the runs (schema version 3), append-only: the
//! library can add one and list them, never change or remove one, and the database's
//! triggers refuse UPDATE and DELETE.

use crate::{id, time, SqliteHistory, StoreError};
use rusqlite::params;
use serde::{Deserialize, Serialize};
use std::path::Path;
use veredicto_core::gate::Rejection;

/// One written acceptance of a batch's rejections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateAcceptance {
    /// Assigned by the history when recording (leave it empty); kept when migrated.
    pub id: String,
    /// When it was given (RFC 3339; the caller reads the clock).
    pub created_at: String,
    /// The index, as a path relative to the project (or as given when outside it).
    pub index: String,
    /// The batch's label.
    pub batch: String,
    /// `sha256:<hex>` of the batch's identity (label, time and rejections): what the gate
    /// looks the acceptance up by, wherever the index has moved.
    pub batch_fingerprint: String,
    /// The written reason.
    pub reason: String,
    /// How many rejected lines were accepted.
    pub rejected: usize,
    /// The rejected lines accepted: file, line, chunk ID, reason, field, message.
    pub rejections: Vec<Rejection>,
    /// Who accepted (the git user name, else `$USER`); never a credential.
    pub who: Option<String>,
    pub tool_version: String,
}

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

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(GateAcceptance, String)> {
    let rejected: i64 = r.get(6)?;
    Ok((
        GateAcceptance {
            id: r.get(0)?,
            created_at: r.get(1)?,
            index: r.get(2)?,
            batch: r.get(3)?,
            batch_fingerprint: r.get(4)?,
            reason: r.get(5)?,
            rejected: usize::try_from(rejected).unwrap_or(0),
            rejections: Vec::new(),
            who: r.get(8)?,
            tool_version: r.get(9)?,
        },
        r.get(7)?,
    ))
}

impl SqliteHistory {
    /// Appends an acceptance in one transaction and returns its ID: a new one when
    /// `a.id` is empty, else `a.id` (a migrated acceptance), which must sort after every
    /// acceptance recorded here.
    pub fn record_acceptance(&self, a: &GateAcceptance) -> Result<String, StoreError> {
        const OP: &str = "recording a gate acceptance";
        let (created_ms, random, rejections) = prepare_acceptance(&self.path, a)?;
        let tx = self.begin(OP)?;
        let e = |e| self.sql(OP, e);
        let newest: Option<String> = tx
            .prepare_cached("SELECT max(id) FROM gate_acceptances")
            .and_then(|mut st| st.query_row([], |r| r.get(0)))
            .map_err(e)?;
        let new_id = if a.id.is_empty() {
            id::next(created_ms, random, newest.as_deref())
        } else {
            a.id.clone()
        };
        tx.prepare_cached(
            "INSERT INTO gate_acceptances (id, created_at, created_ms, index_name, batch,
                 batch_fingerprint, reason, rejected, rejections, who, tool_version)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .and_then(|mut st| {
            st.execute(params![
                new_id,
                a.created_at,
                created_ms,
                a.index,
                a.batch,
                a.batch_fingerprint,
                a.reason,
                i64::try_from(a.rejected).unwrap_or(i64::MAX),
                rejections,
                a.who,
                a.tool_version,
            ])
        })
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(new_id)
    }

    /// Acceptances, oldest first; only those of one batch when `batch_fingerprint` is given.
    pub fn acceptances(
        &self,
        batch_fingerprint: Option<&str>,
    ) -> Result<Vec<GateAcceptance>, StoreError> {
        const OP: &str = "reading gate acceptances";
        if !self.has_acceptances()? {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM gate_acceptances
             WHERE ?1 IS NULL OR batch_fingerprint = ?1 ORDER BY seq"
        );
        let rows: Vec<(GateAcceptance, String)> = self
            .conn
            .prepare_cached(&sql)
            .and_then(|mut st| st.query_map([batch_fingerprint], row)?.collect())
            .map_err(|e| self.sql(OP, e))?;
        rows.into_iter()
            .map(|(mut a, json)| {
                a.rejections = parse_rejections(&self.path, &a.id, &json)?;
                Ok(a)
            })
            .collect()
    }

    /// Whether the file has the acceptances table: a version-2 file opened read-only is
    /// not upgraded, and has none to list.
    fn has_acceptances(&self) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'gate_acceptances'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| self.sql("reading gate acceptances", e))
    }

    /// `(acceptances, IDs of those that do not read back)` for [`SqliteHistory::check`].
    pub(crate) fn check_acceptances(&self) -> Result<(usize, Vec<String>), StoreError> {
        if !self.has_acceptances()? {
            return Ok((0, Vec::new()));
        }
        let rows: Vec<(String, i64, String)> = self
            .conn
            .prepare("SELECT id, rejected, rejections FROM gate_acceptances ORDER BY seq")
            .and_then(|mut st| {
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(|e| self.sql("checking gate acceptances", e))?;
        Ok((rows.len(), unreadable(&self.path, &rows)))
    }
}
