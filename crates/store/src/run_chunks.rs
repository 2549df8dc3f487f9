//! The chunks each recorded run read (`run_chunks`, schema version 3), so that `corpus
//! check` can report chunk-level drift since the last accepted run. One row per run:
//! the snapshot's fingerprint, its chunk count, and the snapshot itself
//! ([`ChunkSnapshot::encode`], zlib-compressed) only when no earlier row holds a snapshot
//! with that fingerprint: runs on an unchanged corpus point to the earlier snapshot and
//! add no body. Append-only like the other tables.

use crate::backend::{values, Backend, Conn, ConnExt, Lock};
use crate::seal::{self, SealKind};
use crate::StoreError;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
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

/// Keeps the chunks run `run` read, in one transaction; the body only when no earlier row
/// has the same fingerprint. Returns the bytes stored (0 for a known snapshot).
pub(crate) fn record_run_chunks(
    b: &impl Backend,
    run: &str,
    snapshot: &ChunkSnapshot,
) -> Result<usize, StoreError> {
    const OP: &str = "recording the run's chunks";
    let raw = snapshot.encode();
    let fingerprint = fingerprint_of(&raw);
    b.write(OP, Lock::RunChunks, |c| {
        if !c.has_table("run_chunks")? {
            c.create_run_chunks(OP)?;
        }
        let (seq, known) = c.one(
            OP,
            "SELECT coalesce(max(seq), 0) + 1,
                    (SELECT count(*) FROM run_chunks WHERE fingerprint = ?1 AND body IS NOT NULL)
             FROM run_chunks",
            &values![&fingerprint],
            |r| Ok((r.int(0)?, r.int(1)? > 0)),
        )?;
        let body = if known {
            None
        } else {
            Some(compress(&raw).map_err(|err| StoreError::Invalid {
                path: c.location().to_owned(),
                field: "run_chunks",
                message: format!("cannot compress: {err}"),
            })?)
        };
        c.execute(
            OP,
            "INSERT INTO run_chunks (seq, run, fingerprint, chunks, encoding, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &values![
                seq,
                run,
                &fingerprint,
                snapshot.chunks.len(),
                body.as_ref().map(|_| ENCODING),
                body.clone(),
            ],
        )?;
        seal::seal(c, SealKind::RunChunks, run, 0)?;
        Ok(body.map_or(0, |b| b.len()))
    })
}

/// The chunks run `run` (a full ID) read, when they were kept.
pub(crate) fn run_chunks(c: &dyn Conn, run: &str) -> Result<Option<ChunkSnapshot>, StoreError> {
    const OP: &str = "reading the run's chunks";
    if !c.has_table("run_chunks")? {
        return Ok(None);
    }
    let Some(fingerprint) = c.first(
        OP,
        "SELECT fingerprint FROM run_chunks WHERE run = ?1",
        &values![run],
        |r| r.text(0),
    )?
    else {
        return Ok(None);
    };
    let Some((encoding, body)) = c.first(
        OP,
        "SELECT encoding, body FROM run_chunks
         WHERE fingerprint = ?1 AND body IS NOT NULL ORDER BY seq LIMIT 1",
        &values![&fingerprint],
        |r| Ok((r.text(0)?, r.blob(1)?)),
    )?
    else {
        return Err(StoreError::Corrupt {
            path: c.location().to_owned(),
            run: run.to_owned(),
            what: "chunk snapshot",
            message: format!("no stored snapshot has its fingerprint {fingerprint}"),
        });
    };
    read_body(c.location(), run, &fingerprint, &encoding, &body).map(Some)
}

/// IDs of the runs whose chunks were kept, in recording order.
pub(crate) fn runs_with_chunks(c: &dyn Conn) -> Result<Vec<String>, StoreError> {
    if !c.has_table("run_chunks")? {
        return Ok(Vec::new());
    }
    c.rows(
        "reading the runs' chunks",
        "SELECT run FROM run_chunks ORDER BY seq",
        &[],
        |r| r.text(0),
    )
}

/// `(rows, stored bodies, runs whose chunks do not read back)` for `check`.
pub(crate) fn check_run_chunks(c: &dyn Conn) -> Result<(usize, usize, Vec<String>), StoreError> {
    const OP: &str = "checking the runs' chunks";
    if !c.has_table("run_chunks")? {
        return Ok((0, 0, Vec::new()));
    }
    let rows = c.rows(
        OP,
        "SELECT run, chunks FROM run_chunks ORDER BY seq",
        &[],
        |r| Ok((r.text(0)?, r.count(1)?)),
    )?;
    let bodies = c.one(
        OP,
        "SELECT count(*) FROM run_chunks WHERE body IS NOT NULL",
        &[],
        |r| r.count(0),
    )?;
    let mut bad = Vec::new();
    for (run, count) in &rows {
        match run_chunks(c, run) {
            Ok(Some(s)) if s.chunks.len() == *count => {}
            _ => bad.push(run.clone()),
        }
    }
    Ok((rows.len(), bodies, bad))
}
