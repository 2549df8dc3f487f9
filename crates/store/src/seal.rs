//! Seals: what makes a rewritten history visible (schema version 4).
//!
//! The append-only triggers stop mistakes, not someone who owns the database: a trigger can
//! be dropped or disabled, rows rewritten, and the trigger put back. So every item the
//! history records is sealed, in the transaction that writes it, by a row of the `chain`
//! table: the SHA-256 of the item's content as stored, and a digest linking it to the seal
//! before it, as an append-only log's hash chain does:
//!
//! ```text
//! content_n = sha256(canonical bytes of item n, as stored)
//! digest_n  = sha256(digest_{n-1} ‖ kind_n ‖ id_n ‖ part_n ‖ origin_n ‖ content_n)    digest_0 = ""
//! ```
//!
//! (each field in the canonical encoding below). `check` reads every item again, recomputes
//! its content and every link, and names the first seal that does not match. Rewriting an
//! item breaks its seal's content; rewriting the seal too breaks the next seal's link; only
//! rewriting every later seal as well goes unnoticed — which is why `check` prints the last
//! digest (the *head*): noted elsewhere (a CI log, a commit), it shows such a rewrite too.
//!
//! # What is sealed, exactly
//!
//! Values are encoded by type: NULL as byte 0; an integer as byte 1 and 8 bytes big-endian;
//! a real as byte 2 and its IEEE-754 bits, 8 bytes big-endian (−0 as +0); text as byte 3, its
//! length (8 bytes big-endian) and its UTF-8 bytes; bytes as byte 4, their length and the
//! bytes. An item's content starts with the text `veredicto seal 1` and its kind, then:
//!
//! - **`run`**: the `runs` row (every column but the internal `seq`, in the order of
//!   [`RUN_COLUMNS`]: ID, times, label, fingerprints, configuration, provenance, verdict,
//!   reasons, summary counts and means, latency); the report's JSON as stored (decompressed:
//!   its compressed form and encoding are how it is kept, not what it says); then the number
//!   of case rows and each row (every column but `run`, by ordinal), the same for the
//!   measure rows (by ordinal and measure) and the expected-chunk rows (by ordinal and
//!   position).
//! - **`audit_run`**: the `audit_runs` row but `seq` (ID, times, label, the run it replays,
//!   the case file's name, SHA-256 and bytes, notes, counts, provenance).
//! - **`review`**, **`suggestion`**: the audit run's ID, the record's position among that
//!   run's records of its kind (from 0) and its JSON body.
//! - **`gate_acceptance`**: the `gate_acceptances` row but `seq`.
//! - **`run_chunks`**: the run's ID, the snapshot's fingerprint and its chunk count (the
//!   fingerprint is the SHA-256 of the snapshot, which `check` verifies against the body).
//!
//! Not sealed: internal keys, the `sealed` marker rows (`check` counts them), and how a body
//! is compressed.
//!
//! A history written by an earlier veredicto (schema version 3) is sealed when it is first
//! opened for writing, in the upgrade's transaction: those seals have origin `upgrade`, and
//! `check` says that a change made to those items before the upgrade cannot be detected.

use crate::backend::{values, BadValue, Col, Conn, ConnExt, Lock, Row, Value};
use crate::codec;
use crate::StoreError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use veredicto_core::history::AuditRecordKind;

/// What a seal covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SealKind {
    /// An exam run: its row, report, cases, measures and expected chunks.
    Run,
    /// A grounding audit run: its row (case file and notes included).
    AuditRun,
    /// One review appended to an audit run.
    Review,
    /// One model suggestion appended to an audit run.
    Suggestion,
    /// A written acceptance of an ingestion batch's rejections.
    GateAcceptance,
    /// The chunk list kept for an exam run.
    RunChunks,
}

impl SealKind {
    /// The kind's name in the `chain` table and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            SealKind::Run => "run",
            SealKind::AuditRun => "audit_run",
            SealKind::Review => "review",
            SealKind::Suggestion => "suggestion",
            SealKind::GateAcceptance => "gate_acceptance",
            SealKind::RunChunks => "run_chunks",
        }
    }

    fn parse(s: &str) -> Option<SealKind> {
        [
            SealKind::Run,
            SealKind::AuditRun,
            SealKind::Review,
            SealKind::Suggestion,
            SealKind::GateAcceptance,
            SealKind::RunChunks,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }

    fn record(kind: AuditRecordKind) -> SealKind {
        match kind {
            AuditRecordKind::Review => SealKind::Review,
            AuditRecordKind::Suggestion => SealKind::Suggestion,
        }
    }
}

/// When an item was sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SealOrigin {
    /// In the transaction that wrote it.
    Recorded,
    /// When the history was upgraded to sealing (an earlier veredicto wrote the item), or,
    /// in a copy, when the source had no seal for it: a change made before then cannot be
    /// detected.
    Upgrade,
}

impl SealOrigin {
    fn as_str(self) -> &'static str {
        match self {
            SealOrigin::Recorded => "recorded",
            SealOrigin::Upgrade => "upgrade",
        }
    }
}

/// One seal of the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    /// Position in the chain, from 1.
    pub position: usize,
    /// What is sealed.
    pub kind: SealKind,
    /// The run's, audit run's or acceptance's ID; for a review or suggestion its audit
    /// run's, for a chunk list its exam run's.
    pub id: String,
    /// A review's or suggestion's position among its audit run's records of that kind, from
    /// 0; 0 for the other kinds.
    pub part: usize,
    /// When it was sealed.
    pub origin: SealOrigin,
    /// `sha256:` of the item's content (module docs).
    pub content: String,
    /// `sha256:` of the previous seal's digest and this seal.
    pub digest: String,
}

impl Seal {
    /// How messages name the sealed item: `run 01J…`, `review 2 of audit run 01J…`.
    pub fn item(&self) -> String {
        label(self.kind, &self.id, self.part)
    }
}

fn label(kind: SealKind, id: &str, part: usize) -> String {
    match kind {
        SealKind::Run => format!("run {id}"),
        SealKind::AuditRun => format!("audit run {id}"),
        SealKind::Review => format!("review {} of audit run {id}", part + 1),
        SealKind::Suggestion => format!("suggestion {} of audit run {id}", part + 1),
        SealKind::GateAcceptance => format!("gate acceptance {id}"),
        SealKind::RunChunks => format!("chunk list of run {id}"),
    }
}

/// What the integrity check (`history check`) found about the seals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SealCheck {
    /// Whether the history has seals: `false` only for a history written by an earlier
    /// veredicto and opened read-only (it is sealed when next opened for writing).
    pub sealed: bool,
    /// Seals in the chain. (The last one's digest, the *head*, is
    /// [`RunStore::seals`](crate::RunStore::seals)`.last()`: noted elsewhere, it shows even a
    /// rewrite of the whole chain. It is left out here because it depends on the run IDs,
    /// which are random.)
    pub seals: usize,
    /// Seals made when the history was upgraded to sealing rather than when their item was
    /// written: a change to those items before the upgrade cannot be detected.
    pub sealed_at_upgrade: usize,
    /// Of those, exam runs.
    pub runs_sealed_at_upgrade: usize,
    /// The first seal that does not match, in chain order.
    pub first_break: Option<SealBreak>,
    /// Seals that do not match (content or link).
    pub broken: usize,
    /// Items recorded without a seal (`run 01J…`).
    pub unsealed: Vec<String>,
}

impl SealCheck {
    /// Whether every seal matches and every item has one.
    pub fn is_ok(&self) -> bool {
        self.first_break.is_none() && self.unsealed.is_empty()
    }
}

/// A seal that does not match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealBreak {
    /// Its position in the chain, from 1.
    pub position: usize,
    /// What it seals.
    pub kind: SealKind,
    /// The sealed item's ID (as in [`Seal::id`]).
    pub id: String,
    /// As in [`Seal::part`].
    pub part: usize,
    /// What does not match.
    pub problem: SealProblem,
    /// The item, as messages name it.
    pub item: String,
}

/// How a seal fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SealProblem {
    /// The item's content as stored now is not what was sealed: it was changed.
    Content,
    /// The item is no longer in the history.
    Missing,
    /// The seal's digest does not follow from the seal before it: a seal was changed,
    /// removed or inserted.
    Link,
}

// ---- canonical content ----

/// The SHA-256 of values in the canonical encoding (module docs).
struct Canon(Sha256);

impl Canon {
    fn new(kind: SealKind) -> Canon {
        let mut c = Canon(Sha256::new());
        c.bytes(3, b"veredicto seal 1");
        c.bytes(3, kind.as_str().as_bytes());
        c
    }

    fn bytes(&mut self, tag: u8, b: &[u8]) {
        self.0.update([tag]);
        self.0
            .update(u64::try_from(b.len()).unwrap_or(u64::MAX).to_be_bytes());
        self.0.update(b);
    }

    fn int(&mut self, v: i64) {
        self.0.update([1]);
        self.0.update(v.to_be_bytes());
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.0.update([0]),
            Value::Int(i) => self.int(*i),
            Value::Real(r) => {
                // −0 and +0 are one value (SQLite keeps an integral real as an integer).
                let r = if *r == 0.0 { 0.0 } else { *r };
                self.0.update([2]);
                self.0.update(r.to_bits().to_be_bytes());
            }
            Value::Text(t) => self.bytes(3, t.as_bytes()),
            Value::Blob(b) => self.bytes(4, b),
        }
    }

    fn row(&mut self, r: &Row) {
        for v in &r.0 {
            self.value(v);
        }
    }

    fn rows(&mut self, rows: &[Row]) {
        self.int(i64::try_from(rows.len()).unwrap_or(i64::MAX));
        for r in rows {
            self.row(r);
        }
    }

    fn finish(self) -> String {
        sha256_text(self.0)
    }
}

fn sha256_text(h: Sha256) -> String {
    let mut s = String::with_capacity(71);
    s.push_str("sha256:");
    for b in h.finalize() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Columns of `runs` in a run's content (all but `seq`), in this order.
pub(crate) const RUN_COLUMNS: [&str; 29] = [
    "id",
    "created_at",
    "created_ms",
    "label",
    "golden_fingerprint",
    "policy_fingerprint",
    "corpus_fingerprint",
    "retriever",
    "top_k",
    "embedding_model",
    "model_hash",
    "config",
    "tool_version",
    "git_revision",
    "verdict",
    "reasons",
    "cases",
    "gold_cases",
    "failing",
    "failing_gold",
    "mean_quality",
    "mean_recall",
    "mrr",
    "mean_precision",
    "mean_ndcg",
    "mean_average_precision",
    "hit_rate",
    "over_noise",
    "latency",
];

/// Columns of `audit_runs` in an audit run's content (all but `seq`).
const AUDIT_RUN_COLUMNS: [&str; 12] = [
    "id",
    "created_at",
    "created_ms",
    "label",
    "replay_of",
    "cases_name",
    "cases_sha256",
    "cases_body",
    "notes",
    "counts",
    "tool_version",
    "git_revision",
];

/// Columns of `gate_acceptances` in an acceptance's content (all but `seq`).
const ACCEPTANCE_COLUMNS: [&str; 11] = [
    "id",
    "created_at",
    "created_ms",
    "index_name",
    "batch",
    "batch_fingerprint",
    "reason",
    "rejected",
    "rejections",
    "who",
    "tool_version",
];

/// `a, b, c` of column names.
fn list(columns: impl IntoIterator<Item = &'static str>) -> String {
    columns.into_iter().collect::<Vec<_>>().join(", ")
}

/// `?1, ?2, …, ?n`.
fn slots(n: usize) -> String {
    (1..=n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An item as stored: what its content is computed from, and what `history migrate`
/// copies, value for value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Item {
    Run {
        /// [`RUN_COLUMNS`].
        row: Row,
        /// `reports.encoding` and `reports.body`, as stored.
        encoding: String,
        body: Vec<u8>,
        /// `cases`, `case_measures` and `expected_chunks` rows without `run`.
        cases: Vec<Row>,
        measures: Vec<Row>,
        chunks: Vec<Row>,
    },
    AuditRun {
        /// [`AUDIT_RUN_COLUMNS`].
        row: Row,
    },
    Record {
        run: String,
        kind: AuditRecordKind,
        part: usize,
        body: String,
    },
    Acceptance {
        /// [`ACCEPTANCE_COLUMNS`].
        row: Row,
    },
    RunChunks {
        run: String,
        fingerprint: String,
        chunks: i64,
        /// The snapshot's stored body (`encoding`, `body`), wherever it is kept; `None`
        /// when no row holds it (for content only the fingerprint counts).
        body: Option<(String, Vec<u8>)>,
    },
}

impl Item {
    pub(crate) fn kind(&self) -> SealKind {
        match self {
            Item::Run { .. } => SealKind::Run,
            Item::AuditRun { .. } => SealKind::AuditRun,
            Item::Record { kind, .. } => SealKind::record(*kind),
            Item::Acceptance { .. } => SealKind::GateAcceptance,
            Item::RunChunks { .. } => SealKind::RunChunks,
        }
    }

    /// `(id, part)` as in [`Seal`].
    pub(crate) fn key(&self) -> (String, usize) {
        let first_text = |r: &Row| r.text(0).unwrap_or_default();
        match self {
            Item::Run { row, .. } | Item::AuditRun { row } | Item::Acceptance { row } => {
                (first_text(row), 0)
            }
            Item::Record { run, part, .. } => (run.clone(), *part),
            Item::RunChunks { run, .. } => (run.clone(), 0),
        }
    }

    /// `sha256:` of the canonical content (module docs).
    pub(crate) fn content(&self) -> String {
        let mut c = Canon::new(self.kind());
        match self {
            Item::Run {
                row,
                encoding,
                body,
                cases,
                measures,
                chunks,
            } => {
                c.row(row);
                match codec::decompress(encoding, body) {
                    Ok(json) => c.bytes(4, &json),
                    // A damaged body cannot be what was sealed: its stored form stands in.
                    Err(_) => {
                        c.bytes(3, encoding.as_bytes());
                        c.bytes(3, body);
                    }
                }
                c.rows(cases);
                c.rows(measures);
                c.rows(chunks);
            }
            Item::AuditRun { row } | Item::Acceptance { row } => c.row(row),
            Item::Record {
                run,
                kind,
                part,
                body,
            } => {
                c.bytes(3, run.as_bytes());
                c.bytes(3, kind.as_str().as_bytes());
                c.int(i64::try_from(*part).unwrap_or(i64::MAX));
                c.bytes(3, body.as_bytes());
            }
            Item::RunChunks {
                run,
                fingerprint,
                chunks,
                ..
            } => {
                c.bytes(3, run.as_bytes());
                c.bytes(3, fingerprint.as_bytes());
                c.int(*chunks);
            }
        }
        c.finish()
    }
}

fn rows_of(
    c: &dyn Conn,
    op: &'static str,
    sql: &str,
    params: &[Value],
) -> Result<Vec<Row>, StoreError> {
    c.query(op, sql, params)
}

/// The exam run `id` as stored, with its internal key; `None` when there is no such run.
fn read_run(c: &dyn Conn, id: &str) -> Result<Option<(i64, Item)>, StoreError> {
    const OP: &str = "reading a run's seal";
    let Some(mut row) = rows_of(
        c,
        OP,
        &format!("SELECT {}, seq FROM runs WHERE id = ?1", list(RUN_COLUMNS)),
        &values![id],
    )?
    .into_iter()
    .next() else {
        return Ok(None);
    };
    let seq = match row.0.pop() {
        Some(Value::Int(seq)) => seq,
        other => return Err(c.bad_value(OP, BadValue::new(format!("seq: {other:?}")))),
    };
    let (encoding, body) = c
        .first(
            OP,
            "SELECT encoding, body FROM reports WHERE run = ?1",
            &values![seq],
            |r| Ok((r.text(0)?, r.blob(1)?)),
        )?
        .unwrap_or_default();
    let names = |cols: &[(&'static str, Col)]| list(cols.iter().skip(1).map(|(n, _)| *n));
    let cases = rows_of(
        c,
        OP,
        &format!(
            "SELECT {} FROM cases WHERE run = ?1 ORDER BY ordinal",
            names(&crate::store::CASE_COLUMNS)
        ),
        &values![seq],
    )?;
    let measures = rows_of(
        c,
        OP,
        &format!(
            "SELECT {} FROM case_measures WHERE run = ?1 ORDER BY ordinal, measure",
            names(&crate::store::MEASURE_COLUMNS)
        ),
        &values![seq],
    )?;
    let chunks = rows_of(
        c,
        OP,
        &format!(
            "SELECT {} FROM expected_chunks WHERE run = ?1 ORDER BY ordinal, position",
            names(&crate::store::CHUNK_COLUMNS)
        ),
        &values![seq],
    )?;
    Ok(Some((
        seq,
        Item::Run {
            row,
            encoding,
            body,
            cases,
            measures,
            chunks,
        },
    )))
}

fn read_row(
    c: &dyn Conn,
    table: &str,
    columns: &[&'static str],
    id: &str,
) -> Result<Option<Row>, StoreError> {
    Ok(rows_of(
        c,
        "reading a seal",
        &format!(
            "SELECT {} FROM {table} WHERE id = ?1",
            list(columns.iter().copied())
        ),
        &values![id],
    )?
    .into_iter()
    .next())
}

/// The bodies of an audit run's records of `kind`, in order.
fn record_bodies(
    c: &dyn Conn,
    run: &str,
    kind: AuditRecordKind,
) -> Result<Vec<String>, StoreError> {
    c.rows(
        "reading a seal",
        "SELECT r.body FROM audit_records r JOIN audit_runs a ON a.seq = r.run
         WHERE a.id = ?1 AND r.kind = ?2 ORDER BY r.seq",
        &values![run, kind.as_str()],
        |r| r.text(0),
    )
}

fn read_run_chunks(c: &dyn Conn, run: &str) -> Result<Option<Item>, StoreError> {
    const OP: &str = "reading a seal";
    if !c.has_table("run_chunks")? {
        return Ok(None);
    }
    let Some((fingerprint, chunks)) = c.first(
        OP,
        "SELECT fingerprint, chunks FROM run_chunks WHERE run = ?1",
        &values![run],
        |r| Ok((r.text(0)?, r.int(1)?)),
    )?
    else {
        return Ok(None);
    };
    let body = c.first(
        OP,
        "SELECT encoding, body FROM run_chunks
         WHERE fingerprint = ?1 AND body IS NOT NULL ORDER BY seq LIMIT 1",
        &values![&fingerprint],
        |r| Ok((r.text(0)?, r.blob(1)?)),
    )?;
    Ok(Some(Item::RunChunks {
        run: run.to_owned(),
        fingerprint,
        chunks,
        body,
    }))
}

/// The item a seal covers, as stored now; `None` when it is not in the history.
pub(crate) fn read_item(
    c: &dyn Conn,
    kind: SealKind,
    id: &str,
    part: usize,
) -> Result<Option<Item>, StoreError> {
    Ok(match kind {
        SealKind::Run => read_run(c, id)?.map(|(_, item)| item),
        SealKind::AuditRun => {
            read_row(c, "audit_runs", &AUDIT_RUN_COLUMNS, id)?.map(|row| Item::AuditRun { row })
        }
        SealKind::Review | SealKind::Suggestion => {
            let kind = if kind == SealKind::Review {
                AuditRecordKind::Review
            } else {
                AuditRecordKind::Suggestion
            };
            record_bodies(c, id, kind)?
                .into_iter()
                .nth(part)
                .map(|body| Item::Record {
                    run: id.to_owned(),
                    kind,
                    part,
                    body,
                })
        }
        SealKind::GateAcceptance => read_row(c, "gate_acceptances", &ACCEPTANCE_COLUMNS, id)?
            .map(|row| Item::Acceptance { row }),
        SealKind::RunChunks => read_run_chunks(c, id)?,
    })
}

// ---- the chain ----

/// The digest that links a seal to the previous one (`""` before the first).
fn link(previous: &str, s: &Seal) -> String {
    let mut c = Canon(Sha256::new());
    c.bytes(3, b"veredicto chain 1");
    c.bytes(3, previous.as_bytes());
    c.bytes(3, s.kind.as_str().as_bytes());
    c.bytes(3, s.id.as_bytes());
    c.int(i64::try_from(s.part).unwrap_or(i64::MAX));
    c.bytes(3, s.origin.as_str().as_bytes());
    c.bytes(3, s.content.as_bytes());
    c.finish()
}

/// The position of the first seal whose digest does not follow from the one before it (or
/// whose position is out of sequence).
pub(crate) fn first_bad_link(seals: &[Seal]) -> Option<usize> {
    let mut previous = "";
    for (i, s) in seals.iter().enumerate() {
        if s.position != i + 1 || link(previous, s) != s.digest {
            return Some(i);
        }
        previous = &s.digest;
    }
    None
}

/// Appends the seal of `item` (as stored, inside the open write transaction) to the chain.
/// With `expect`, a seal copied from another history: its origin is kept, and the content
/// sealed here must be the same, else nothing is written ([`StoreError::Migrate`]).
pub(crate) fn append(
    c: &dyn Conn,
    item: &Item,
    origin: SealOrigin,
    expect: Option<&Seal>,
) -> Result<Seal, StoreError> {
    const OP: &str = "sealing";
    let (id, part) = item.key();
    let content = item.content();
    if let Some(want) = expect {
        if want.content != content {
            return Err(StoreError::Migrate {
                path: c.location().to_owned(),
                message: format!(
                    "{}: the copy does not match the source's seal (copy {content}, seal \
                     {}): the source's item was changed after it was sealed; run `veredicto \
                     history check` on the source",
                    label(item.kind(), &id, part),
                    want.content
                ),
            });
        }
    }
    // Every writer extends the one chain, one at a time.
    c.lock(OP, Lock::Chain)?;
    let (position, previous) = c.one(
        OP,
        "SELECT coalesce(max(seq), 0) + 1,
                (SELECT digest FROM chain ORDER BY seq DESC LIMIT 1)
         FROM chain",
        &[],
        |r| Ok((r.count(0)?, r.opt_text(1)?)),
    )?;
    let mut seal = Seal {
        position,
        kind: item.kind(),
        id,
        part,
        origin: expect.map_or(origin, |s| s.origin),
        content,
        digest: String::new(),
    };
    seal.digest = link(previous.as_deref().unwrap_or(""), &seal);
    c.execute(
        OP,
        "INSERT INTO chain (seq, kind, item, part, origin, content, digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &values![
            seal.position,
            seal.kind.as_str(),
            &seal.id,
            seal.part,
            seal.origin.as_str(),
            &seal.content,
            &seal.digest,
        ],
    )?;
    Ok(seal)
}

/// Seals the item `(kind, id, part)` just written in the open transaction.
pub(crate) fn seal(
    c: &dyn Conn,
    kind: SealKind,
    id: &str,
    part: usize,
) -> Result<Seal, StoreError> {
    let item = read_item(c, kind, id, part)?.ok_or_else(|| StoreError::BadValue {
        path: c.location().to_owned(),
        operation: "sealing",
        message: format!("{} is not in the history", label(kind, id, part)),
    })?;
    append(c, &item, SealOrigin::Recorded, None)
}

/// Seals the records of `kind` of audit run `run` from position `from` on (just appended).
pub(crate) fn seal_records(
    c: &dyn Conn,
    run: &str,
    kind: AuditRecordKind,
    from: usize,
    origin: SealOrigin,
) -> Result<(), StoreError> {
    for (part, body) in record_bodies(c, run, kind)?
        .into_iter()
        .enumerate()
        .skip(from)
    {
        let item = Item::Record {
            run: run.to_owned(),
            kind,
            part,
            body,
        };
        append(c, &item, origin, None)?;
    }
    Ok(())
}

/// The chain, in order (empty when the history has none).
pub(crate) fn seals(c: &dyn Conn) -> Result<Vec<Seal>, StoreError> {
    const OP: &str = "reading the seals";
    if !c.has_table("chain")? {
        return Ok(Vec::new());
    }
    let raw = c.rows(
        OP,
        "SELECT seq, kind, item, part, origin, content, digest FROM chain ORDER BY seq",
        &[],
        |r| {
            Ok((
                r.count(0)?,
                r.text(1)?,
                r.text(2)?,
                r.count(3)?,
                r.text(4)?,
                r.text(5)?,
                r.text(6)?,
            ))
        },
    )?;
    raw.into_iter()
        .map(|(position, kind, id, part, origin, content, digest)| {
            let bad = |what: &str, v: &str| {
                c.bad_value(OP, BadValue::new(format!("seal {position}: {what} `{v}`")))
            };
            Ok(Seal {
                position,
                kind: SealKind::parse(&kind).ok_or_else(|| bad("kind", &kind))?,
                id,
                part,
                origin: match origin.as_str() {
                    "recorded" => SealOrigin::Recorded,
                    "upgrade" => SealOrigin::Upgrade,
                    other => return Err(bad("origin", other)),
                },
                content,
                digest,
            })
        })
        .collect()
}

/// Every item of the history without a seal, in the order an upgrade seals them: exam runs,
/// audit runs each with its reviews and suggestions, gate acceptances, chunk lists.
fn unsealed_items(
    c: &dyn Conn,
    sealed: &BTreeSet<(SealKind, String, usize)>,
) -> Result<Vec<(SealKind, String, usize)>, StoreError> {
    const OP: &str = "reading the seals";
    let ids = |table: &str| -> Result<Vec<String>, StoreError> {
        c.rows(
            OP,
            &format!("SELECT id FROM {table} ORDER BY seq"),
            &[],
            |r| r.text(0),
        )
    };
    let mut out = Vec::new();
    let mut add = |kind: SealKind, id: &str, part: usize| {
        if !sealed.contains(&(kind, id.to_owned(), part)) {
            out.push((kind, id.to_owned(), part));
        }
    };
    for id in ids("runs")? {
        add(SealKind::Run, &id, 0);
    }
    if c.has_table("audit_runs")? {
        let mut records: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (id, kind) in c.rows(
            OP,
            "SELECT a.id, r.kind FROM audit_records r JOIN audit_runs a ON a.seq = r.run
             ORDER BY r.seq",
            &[],
            |r| Ok((r.text(0)?, r.text(1)?)),
        )? {
            *records.entry((id, kind)).or_default() += 1;
        }
        for id in ids("audit_runs")? {
            add(SealKind::AuditRun, &id, 0);
            for (kind, seal_kind) in [
                (AuditRecordKind::Review, SealKind::Review),
                (AuditRecordKind::Suggestion, SealKind::Suggestion),
            ] {
                let n = records
                    .get(&(id.clone(), kind.as_str().to_owned()))
                    .copied()
                    .unwrap_or(0);
                for part in 0..n {
                    add(seal_kind, &id, part);
                }
            }
        }
    }
    if c.has_table("gate_acceptances")? {
        for id in ids("gate_acceptances")? {
            add(SealKind::GateAcceptance, &id, 0);
        }
    }
    if c.has_table("run_chunks")? {
        for run in c.rows(OP, "SELECT run FROM run_chunks ORDER BY seq", &[], |r| {
            r.text(0)
        })? {
            add(SealKind::RunChunks, &run, 0);
        }
    }
    Ok(out)
}

fn sealed_set(seals: &[Seal]) -> BTreeSet<(SealKind, String, usize)> {
    seals
        .iter()
        .map(|s| (s.kind, s.id.clone(), s.part))
        .collect()
}

/// Seals every item that has none, with origin `upgrade`: the schema upgrade to version 4,
/// inside its transaction.
pub(crate) fn seal_at_upgrade(c: &dyn Conn) -> Result<usize, StoreError> {
    let existing = seals(c)?;
    let todo = unsealed_items(c, &sealed_set(&existing))?;
    for (kind, id, part) in &todo {
        if let Some(item) = read_item(c, *kind, id, *part)? {
            append(c, &item, SealOrigin::Upgrade, None)?;
        }
    }
    Ok(todo.len())
}

/// Recomputes every seal: each item's content as stored now and each link.
pub(crate) fn check(c: &dyn Conn) -> Result<SealCheck, StoreError> {
    if !c.has_table("chain")? {
        return Ok(SealCheck::default());
    }
    let seals = seals(c)?;
    // Records are read once per audit run and kind, not once per seal.
    let mut records: BTreeMap<(String, &'static str), Vec<String>> = BTreeMap::new();
    let mut report = SealCheck {
        sealed: true,
        seals: seals.len(),
        ..SealCheck::default()
    };
    let mut previous = "";
    for (i, s) in seals.iter().enumerate() {
        if s.origin == SealOrigin::Upgrade {
            report.sealed_at_upgrade += 1;
            if s.kind == SealKind::Run {
                report.runs_sealed_at_upgrade += 1;
            }
        }
        let item = match s.kind {
            SealKind::Review | SealKind::Suggestion => {
                let kind = if s.kind == SealKind::Review {
                    AuditRecordKind::Review
                } else {
                    AuditRecordKind::Suggestion
                };
                let bodies = match records.entry((s.id.clone(), kind.as_str())) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(record_bodies(c, &s.id, kind)?)
                    }
                };
                bodies.get(s.part).map(|body| Item::Record {
                    run: s.id.clone(),
                    kind,
                    part: s.part,
                    body: body.clone(),
                })
            }
            kind => read_item(c, kind, &s.id, s.part)?,
        };
        let problem = if s.position != i + 1 || link(previous, s) != s.digest {
            Some(SealProblem::Link)
        } else {
            match item {
                None => Some(SealProblem::Missing),
                Some(item) if item.content() != s.content => Some(SealProblem::Content),
                Some(_) => None,
            }
        };
        previous = &s.digest;
        if let Some(problem) = problem {
            report.broken += 1;
            report.first_break.get_or_insert_with(|| SealBreak {
                position: s.position,
                kind: s.kind,
                id: s.id.clone(),
                part: s.part,
                problem,
                item: s.item(),
            });
        }
    }
    report.unsealed = unsealed_items(c, &sealed_set(&seals))?
        .into_iter()
        .map(|(kind, id, part)| label(kind, &id, part))
        .collect();
    Ok(report)
}

// ---- copying items between histories (`history migrate`) ----

/// An item of a history exactly as stored, with its seal: what `history migrate` copies
/// into another history, value for value, so that the copy's seal is the source's.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredItem {
    pub(crate) item: Item,
    pub(crate) seal: Option<Seal>,
}

impl StoredItem {
    /// The source's seal of the item (`None` when it has none: the copy is then sealed
    /// with origin `upgrade`).
    pub fn seal(&self) -> Option<&Seal> {
        self.seal.as_ref()
    }

    /// How messages name the item.
    pub fn label(&self) -> String {
        let (id, part) = self.item.key();
        label(self.item.kind(), &id, part)
    }
}

/// Which items to export from a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemRef<'a> {
    /// An exam run (full ID).
    Run(&'a str),
    /// An audit run (full ID) and all its records.
    AuditRun(&'a str),
    /// An audit run's records of one kind from position `from` on.
    Records {
        run: &'a str,
        kind: AuditRecordKind,
        from: usize,
    },
    /// A gate acceptance (full ID).
    Acceptance(&'a str),
    /// The chunk list of an exam run (full ID).
    RunChunks(&'a str),
}

fn seal_of(
    c: &dyn Conn,
    kind: SealKind,
    id: &str,
    part: usize,
) -> Result<Option<Seal>, StoreError> {
    if !c.has_table("chain")? {
        return Ok(None);
    }
    let position = c.first(
        "reading the seals",
        "SELECT seq FROM chain WHERE kind = ?1 AND item = ?2 AND part = ?3",
        &values![kind.as_str(), id, part],
        |r| r.count(0),
    )?;
    let Some(position) = position else {
        return Ok(None);
    };
    // One row: read it with the same mapping as the whole chain.
    let raw = c.rows(
        "reading the seals",
        "SELECT origin, content, digest FROM chain WHERE seq = ?1",
        &values![position],
        |r| Ok((r.text(0)?, r.text(1)?, r.text(2)?)),
    )?;
    Ok(raw
        .into_iter()
        .next()
        .map(|(origin, content, digest)| Seal {
            position,
            kind,
            id: id.to_owned(),
            part,
            origin: if origin == "recorded" {
                SealOrigin::Recorded
            } else {
                SealOrigin::Upgrade
            },
            content,
            digest,
        }))
}

/// The items `what` names, as stored, each with its seal.
pub(crate) fn export(c: &dyn Conn, what: ItemRef<'_>) -> Result<Vec<StoredItem>, StoreError> {
    let one = |kind: SealKind, id: &str| -> Result<Vec<(SealKind, String, usize)>, StoreError> {
        Ok(vec![(kind, id.to_owned(), 0)])
    };
    let records = |run: &str, kind: AuditRecordKind, from: usize| {
        let n = record_bodies(c, run, kind)?.len();
        Ok::<_, StoreError>(
            (from..n)
                .map(|part| (SealKind::record(kind), run.to_owned(), part))
                .collect::<Vec<_>>(),
        )
    };
    let keys = match what {
        ItemRef::Run(id) => one(SealKind::Run, id)?,
        ItemRef::AuditRun(id) => {
            let mut keys = one(SealKind::AuditRun, id)?;
            keys.extend(records(id, AuditRecordKind::Review, 0)?);
            keys.extend(records(id, AuditRecordKind::Suggestion, 0)?);
            keys
        }
        ItemRef::Records { run, kind, from } => records(run, kind, from)?,
        ItemRef::Acceptance(id) => one(SealKind::GateAcceptance, id)?,
        ItemRef::RunChunks(run) => one(SealKind::RunChunks, run)?,
    };
    keys.into_iter()
        .map(|(kind, id, part)| {
            let item = read_item(c, kind, &id, part)?.ok_or_else(|| StoreError::Migrate {
                path: c.location().to_owned(),
                message: format!("{} is not in the history", label(kind, &id, part)),
            })?;
            Ok(StoredItem {
                item,
                seal: seal_of(c, kind, &id, part)?,
            })
        })
        .collect()
}

/// The advisory lock a copy of `item` takes (PostgreSQL), as its ordinary writer would.
pub(crate) fn lock_of(c: &dyn Conn, item: &Item) -> Result<Lock, StoreError> {
    Ok(match item {
        Item::Run { .. } => Lock::Runs,
        Item::AuditRun { .. } => Lock::AuditRuns,
        Item::Record { run, .. } => Lock::AuditRecords(audit_seq(c, run)?),
        Item::Acceptance { .. } => Lock::Acceptances,
        Item::RunChunks { .. } => Lock::RunChunks,
    })
}

fn audit_seq(c: &dyn Conn, id: &str) -> Result<i64, StoreError> {
    c.first(
        "copying an audit run",
        "SELECT seq FROM audit_runs WHERE id = ?1",
        &values![id],
        |r| r.int(0),
    )?
    .ok_or_else(|| StoreError::AuditRunNotFound {
        path: c.location().to_owned(),
        query: id.to_owned(),
    })
}

fn next_seq(c: &dyn Conn, op: &'static str, table: &str) -> Result<i64, StoreError> {
    c.one(
        op,
        &format!("SELECT coalesce(max(seq), 0) + 1 FROM {table}"),
        &[],
        |r| r.int(0),
    )
}

/// `seq` followed by the row's values.
fn keyed(seq: i64, row: &Row) -> Vec<Value> {
    let mut v = Vec::with_capacity(row.0.len() + 1);
    v.push(Value::Int(seq));
    v.extend(row.0.iter().cloned());
    v
}

/// Writes a copied item, value for value, with this history's internal keys, inside the
/// open write transaction (the append-only triggers check it as any other write), then
/// seals it with the source's seal ([`append`]).
pub(crate) fn import(c: &dyn Conn, stored: &StoredItem) -> Result<(), StoreError> {
    const OP: &str = "copying an item";
    c.lock(OP, lock_of(c, &stored.item)?)?;
    match &stored.item {
        Item::Run {
            row,
            encoding,
            body,
            cases,
            measures,
            chunks,
        } => {
            let seq = next_seq(c, OP, "runs")?;
            c.execute(
                OP,
                &format!(
                    "INSERT INTO runs (seq, {}) VALUES ({})",
                    list(RUN_COLUMNS),
                    slots(RUN_COLUMNS.len() + 1)
                ),
                &keyed(seq, row),
            )?;
            c.execute(
                OP,
                "INSERT INTO reports (run, encoding, body) VALUES (?1, ?2, ?3)",
                &values![seq, encoding, body.as_slice()],
            )?;
            for (table, columns, rows) in [
                ("cases", &crate::store::CASE_COLUMNS[..], cases),
                (
                    "case_measures",
                    &crate::store::MEASURE_COLUMNS[..],
                    measures,
                ),
                ("expected_chunks", &crate::store::CHUNK_COLUMNS[..], chunks),
            ] {
                let rows: Vec<Vec<Value>> = rows.iter().map(|r| keyed(seq, r)).collect();
                c.insert_rows(OP, table, columns, &rows)?;
            }
            c.execute(OP, "INSERT INTO sealed (run) VALUES (?1)", &values![seq])?;
        }
        Item::AuditRun { row } => {
            let seq = next_seq(c, OP, "audit_runs")?;
            c.execute(
                OP,
                &format!(
                    "INSERT INTO audit_runs (seq, {}) VALUES ({})",
                    list(AUDIT_RUN_COLUMNS),
                    slots(AUDIT_RUN_COLUMNS.len() + 1)
                ),
                &keyed(seq, row),
            )?;
        }
        Item::Record {
            run,
            kind,
            part,
            body,
        } => {
            let have = record_bodies(c, run, *kind)?.len();
            if have != *part {
                return Err(StoreError::Migrate {
                    path: c.location().to_owned(),
                    message: format!(
                        "audit run {run}: the copy has {have} {}s, the next to copy is number {}",
                        kind.as_str(),
                        part + 1
                    ),
                });
            }
            c.execute(
                OP,
                "INSERT INTO audit_records (run, kind, body) VALUES (?1, ?2, ?3)",
                &values![audit_seq(c, run)?, kind.as_str(), body],
            )?;
        }
        Item::Acceptance { row } => {
            let seq = next_seq(c, OP, "gate_acceptances")?;
            c.execute(
                OP,
                &format!(
                    "INSERT INTO gate_acceptances (seq, {}) VALUES ({})",
                    list(ACCEPTANCE_COLUMNS),
                    slots(ACCEPTANCE_COLUMNS.len() + 1)
                ),
                &keyed(seq, row),
            )?;
        }
        Item::RunChunks {
            run,
            fingerprint,
            chunks,
            body,
        } => {
            if !c.has_table("run_chunks")? {
                c.create_run_chunks(OP)?;
            }
            let known = c.one(
                OP,
                "SELECT count(*) FROM run_chunks WHERE fingerprint = ?1 AND body IS NOT NULL",
                &values![fingerprint],
                |r| r.int(0),
            )? > 0;
            let (encoding, body) = match (known, body) {
                (true, _) => (None, None),
                (false, Some((e, b))) => (Some(e.clone()), Some(b.clone())),
                (false, None) => {
                    return Err(c.corrupt(
                        run,
                        "chunk snapshot",
                        format!("no stored snapshot has its fingerprint {fingerprint}"),
                    ))
                }
            };
            let seq = next_seq(c, OP, "run_chunks")?;
            c.execute(
                OP,
                "INSERT INTO run_chunks (seq, run, fingerprint, chunks, encoding, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                &values![seq, run, fingerprint, *chunks, encoding, body],
            )?;
        }
    }
    append(c, &stored.item, SealOrigin::Upgrade, stored.seal.as_ref()).map(drop)
}
