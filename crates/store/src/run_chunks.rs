//! The chunks each recorded run read (`run_chunks`, schema version 3), so that `corpus
//! check` can report chunk-level drift since the last accepted run. One row per run:
//! the snapshot's fingerprint, its chunk count, and the snapshot itself
//! ([`ChunkSnapshot::encode`], zlib-compressed) only when no earlier row holds a snapshot
//! with that fingerprint: runs on an unchanged corpus point to the earlier snapshot and
//! add no body. Append-only like the other tables.

use crate::{SqliteHistory, StoreError};
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use rusqlite::{params, OptionalExtension};
use std::io::{Read, Write};
use std::path::Path;
use veredicto_core::snapshot::{fingerprint_of, ChunkSnapshot};

/// `run_chunks.encoding` of a stored body.
pub(crate) const ENCODING: &str = "vcs1+zlib";

/// The table, the same in both backends (the PostgreSQL one uses `bytea` and `bigint`).
pub(crate) const SQLITE_TABLE: &str = r#"
CREATE TABLE run_chunks (
    seq         INTEGER PRIMARY KEY,
    run         TEXT    NOT NULL UNIQUE REFERENCES runs (id),
    fingerprint TEXT    NOT NULL,
    chunks      INTEGER NOT NULL,
    encoding    TEXT,
    body        BLOB,
    CHECK ((encoding IS NULL) = (body IS NULL))
);
CREATE INDEX run_chunks_by_fingerprint ON run_chunks (fingerprint, seq);
"#;

/// The snapshot's binary form, compressed.
pub(crate) fn compress(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = ZlibEncoder::new(Vec::with_capacity(raw.len() / 2), Compression::new(9));
    enc.write_all(raw)?;
    enc.finish()
}

/// Reads a stored body back and checks it against its fingerprint.
pub(crate) fn read_body(
    location: &Path,
    run: &str,
    fingerprint: &str,
    encoding: &str,
    body: &[u8],
) -> Result<ChunkSnapshot, StoreError> {
    let corrupt = |message: String| StoreError::Corrupt {
        path: location.to_owned(),
        run: run.to_owned(),
        what: "chunk snapshot",
        message,
    };
    if encoding != ENCODING {
        return Err(corrupt(format!("unknown encoding `{encoding}`")));
    }
    let mut raw = Vec::with_capacity(body.len() * 3);
    ZlibDecoder::new(body)
        .read_to_end(&mut raw)
        .map_err(|e| corrupt(format!("cannot decompress: {e}")))?;
    if fingerprint_of(&raw) != fingerprint {
        return Err(corrupt(format!(
            "the stored snapshot does not have its recorded fingerprint {fingerprint}"
        )));
    }
    ChunkSnapshot::decode(&raw).map_err(corrupt)
}

impl SqliteHistory {
    /// Keeps the chunks run `run` read, in one transaction; the body only when no earlier
    /// row has the same fingerprint. Returns the bytes stored (0 for a known snapshot).
    pub fn record_run_chunks(
        &self,
        run: &str,
        snapshot: &ChunkSnapshot,
    ) -> Result<usize, StoreError> {
        const OP: &str = "recording the run's chunks";
        let raw = snapshot.encode();
        let fingerprint = fingerprint_of(&raw);
        let tx = self.begin(OP)?;
        let e = |e| self.sql(OP, e);
        if !has_table(&tx).map_err(e)? {
            // A version-3 file made before the table existed.
            tx.execute_batch(SQLITE_TABLE)
                .and_then(|()| tx.execute_batch(&crate::schema::run_chunks_triggers()))
                .map_err(e)?;
        }
        let known: bool = tx
            .prepare_cached(
                "SELECT count(*) > 0 FROM run_chunks WHERE fingerprint = ?1 AND body IS NOT NULL",
            )
            .and_then(|mut st| st.query_row([&fingerprint], |r| r.get(0)))
            .map_err(e)?;
        let body = if known {
            None
        } else {
            Some(compress(&raw).map_err(|err| StoreError::Invalid {
                path: self.path.clone(),
                field: "run_chunks",
                message: format!("cannot compress: {err}"),
            })?)
        };
        tx.prepare_cached(
            "INSERT INTO run_chunks (run, fingerprint, chunks, encoding, body)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut st| {
            st.execute(params![
                run,
                fingerprint,
                i64::try_from(snapshot.chunks.len()).unwrap_or(i64::MAX),
                body.as_ref().map(|_| ENCODING),
                body,
            ])
        })
        .map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(body.map_or(0, |b| b.len()))
    }

    /// The chunks run `run` (a full ID) read, when they were kept.
    pub fn run_chunks(&self, run: &str) -> Result<Option<ChunkSnapshot>, StoreError> {
        const OP: &str = "reading the run's chunks";
        let e = |e| self.sql(OP, e);
        if !has_table(&self.conn).map_err(e)? {
            return Ok(None);
        }
        let Some(fingerprint): Option<String> = self
            .conn
            .prepare_cached("SELECT fingerprint FROM run_chunks WHERE run = ?1")
            .and_then(|mut st| st.query_row([run], |r| r.get(0)).optional())
            .map_err(e)?
        else {
            return Ok(None);
        };
        let (encoding, body): (String, Vec<u8>) = self
            .conn
            .prepare_cached(
                "SELECT encoding, body FROM run_chunks
                 WHERE fingerprint = ?1 AND body IS NOT NULL ORDER BY seq LIMIT 1",
            )
            .and_then(|mut st| st.query_row([&fingerprint], |r| Ok((r.get(0)?, r.get(1)?))))
            .map_err(e)?;
        read_body(&self.path, run, &fingerprint, &encoding, &body).map(Some)
    }

    /// IDs of the runs whose chunks were kept, in recording order.
    pub fn runs_with_chunks(&self) -> Result<Vec<String>, StoreError> {
        let e = |e| self.sql("reading the runs' chunks", e);
        if !has_table(&self.conn).map_err(e)? {
            return Ok(Vec::new());
        }
        self.conn
            .prepare("SELECT run FROM run_chunks ORDER BY seq")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .map_err(e)
    }

    /// `(rows, stored bodies, runs whose chunks do not read back)` for `check`.
    pub(crate) fn check_run_chunks(&self) -> Result<(usize, usize, Vec<String>), StoreError> {
        let runs = self.runs_with_chunks()?;
        let mut bodies = 0;
        let mut bad = Vec::new();
        if !runs.is_empty() {
            bodies = self
                .conn
                .query_row(
                    "SELECT count(*) FROM run_chunks WHERE body IS NOT NULL",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(|e| self.sql("checking the runs' chunks", e))?;
        }
        for run in &runs {
            match self.run_chunks(run) {
                Ok(Some(s)) if self.chunk_count(run)? == s.chunks.len() => {}
                _ => bad.push(run.clone()),
            }
        }
        Ok((runs.len(), usize::try_from(bodies).unwrap_or(0), bad))
    }

    fn chunk_count(&self, run: &str) -> Result<usize, StoreError> {
        self.conn
            .query_row("SELECT chunks FROM run_chunks WHERE run = ?1", [run], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(|e| self.sql("checking the runs' chunks", e))
    }
}

fn has_table(conn: &rusqlite::Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'run_chunks'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}
