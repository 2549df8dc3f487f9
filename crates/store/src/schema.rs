//! The database schema (documented in `docs/history.md`): version 1 below, then each later
//! version's tables.
//!
//! - `runs`: one row per recorded run. `seq` (the rowid) is the internal key, in recording
//!   order; `id` is the public, sortable run ID. Provenance, the configuration's filterable
//!   fields, the verdict and the summary numbers are columns; `config` and `latency` are JSON.
//! - `reports`: the full exam report of each run (JSON, the wire format of
//!   `docs/exam-json.md`), kept apart so that listing runs never reads it.
//! - `cases`: one row per case per run (STYLE item 7): every exam metric, verdict and reasons.
//! - `case_measures`: the policy's extra measures, `(run, case, measure, value)`.
//! - `expected_chunks`: rank and score of every expected chunk of every case.
//! - `sealed`: one row per run, written last in the recording transaction; once it exists
//!   no row can be added to that run.
//!
//! Append-only is structural: triggers abort any UPDATE or DELETE, any INSERT that would
//! replace an existing row (`INSERT OR REPLACE`), any row added to a run other than the one
//! being recorded (the newest, before its seal), and a run whose ID would not sort last.

/// `PRAGMA application_id`: marks the file as a veredicto history ("VRDC").
pub(crate) const APPLICATION_ID: i64 = 0x5652_4443;

/// `PRAGMA user_version` of the schema below: 1 (exam runs), 2 (adds the grounding audit
/// tables), 3 (adds the ingestion gate's written acceptances and the chunks each run read),
/// 4 (adds the seals, `chain`). An older file is upgraded in place, in one transaction, when
/// opened for writing.
pub(crate) const SCHEMA_VERSION: i64 = 4;

/// Tables, indices and append-only triggers of version 1.
pub(crate) const SCHEMA_V1: &str = r#"
CREATE TABLE runs (
    seq                    INTEGER PRIMARY KEY,
    id                     TEXT    NOT NULL UNIQUE,
    created_at             TEXT    NOT NULL,
    created_ms             INTEGER NOT NULL,
    label                  TEXT,
    golden_fingerprint     TEXT    NOT NULL,
    policy_fingerprint     TEXT    NOT NULL,
    corpus_fingerprint     TEXT,
    retriever              TEXT    NOT NULL,
    top_k                  INTEGER NOT NULL,
    embedding_model        TEXT,
    model_hash             TEXT,
    config                 TEXT    NOT NULL,
    tool_version           TEXT    NOT NULL,
    git_revision           TEXT,
    verdict                TEXT    NOT NULL CHECK (verdict IN ('accept', 'stop')),
    reasons                TEXT    NOT NULL,
    cases                  INTEGER NOT NULL,
    gold_cases             INTEGER NOT NULL,
    failing                INTEGER NOT NULL,
    failing_gold           INTEGER NOT NULL,
    mean_quality           REAL    NOT NULL,
    mean_recall            REAL    NOT NULL,
    mrr                    REAL    NOT NULL,
    mean_precision         REAL    NOT NULL,
    mean_ndcg              REAL    NOT NULL,
    mean_average_precision REAL    NOT NULL,
    hit_rate               REAL    NOT NULL,
    over_noise             INTEGER NOT NULL,
    latency                TEXT    NOT NULL
);
CREATE INDEX runs_by_time   ON runs (created_ms);
CREATE INDEX runs_by_golden ON runs (golden_fingerprint, seq);
CREATE INDEX runs_by_label  ON runs (label, seq);
CREATE INDEX runs_accepted  ON runs (golden_fingerprint, seq) WHERE verdict = 'accept';

CREATE TABLE reports (
    run      INTEGER PRIMARY KEY REFERENCES runs (seq),
    encoding TEXT    NOT NULL,
    body     BLOB    NOT NULL
);

CREATE TABLE cases (
    run               INTEGER NOT NULL REFERENCES runs (seq),
    ordinal           INTEGER NOT NULL,
    case_id           TEXT    NOT NULL,
    gold              INTEGER NOT NULL,
    domain            TEXT,
    tags              TEXT    NOT NULL,
    top_k             INTEGER NOT NULL,
    retrieved         INTEGER NOT NULL,
    expected          INTEGER NOT NULL,
    passed            INTEGER NOT NULL,
    reasons           TEXT    NOT NULL,
    documented        INTEGER NOT NULL,
    recall            REAL    NOT NULL,
    quality           REAL    NOT NULL,
    precision         REAL    NOT NULL,
    reciprocal_rank   REAL    NOT NULL,
    ndcg              REAL    NOT NULL,
    average_precision REAL    NOT NULL,
    noise             INTEGER,
    max_noise         INTEGER NOT NULL,
    PRIMARY KEY (run, ordinal)
) WITHOUT ROWID;

CREATE TABLE case_measures (
    run     INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    measure TEXT    NOT NULL,
    value   REAL    NOT NULL,
    PRIMARY KEY (run, ordinal, measure),
    FOREIGN KEY (run, ordinal) REFERENCES cases (run, ordinal)
) WITHOUT ROWID;

CREATE TABLE expected_chunks (
    run      INTEGER NOT NULL,
    ordinal  INTEGER NOT NULL,
    position INTEGER NOT NULL,
    chunk_id TEXT    NOT NULL,
    rank     INTEGER,
    score    REAL,
    gold     INTEGER NOT NULL,
    in_top_k INTEGER NOT NULL,
    PRIMARY KEY (run, ordinal, position),
    FOREIGN KEY (run, ordinal) REFERENCES cases (run, ordinal)
) WITHOUT ROWID;

CREATE TABLE sealed (
    run INTEGER PRIMARY KEY REFERENCES runs (seq)
);
"#;

/// Version 2: grounding audit runs (SPEC §7).
///
/// - `audit_runs`: one row per recorded set of answers to frozen cases: the case file's
///   exact bytes (and SHA-256), counts, and `replay_of`, the run it replays.
/// - `audit_records`: reviews and model suggestions of a run, one JSON record a row, in
///   the order they were appended. Unlike exam runs, records may be added to any run at
///   any time (a review comes after the answers); they are never changed or removed.
pub(crate) const SCHEMA_V2_AUDIT: &str = r#"
CREATE TABLE audit_runs (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    created_at   TEXT    NOT NULL,
    created_ms   INTEGER NOT NULL,
    label        TEXT,
    replay_of    TEXT    REFERENCES audit_runs (id),
    cases_name   TEXT    NOT NULL,
    cases_sha256 TEXT    NOT NULL,
    cases_body   BLOB    NOT NULL,
    notes        BLOB,
    counts       TEXT    NOT NULL,
    tool_version TEXT    NOT NULL,
    git_revision TEXT
);
CREATE TABLE audit_records (
    seq  INTEGER PRIMARY KEY,
    run  INTEGER NOT NULL REFERENCES audit_runs (seq),
    kind TEXT    NOT NULL CHECK (kind IN ('review', 'suggestion')),
    body TEXT    NOT NULL
);
CREATE INDEX audit_records_by_run ON audit_records (run, kind, seq);
"#;

/// Version 3: written acceptances of an ingestion batch's rejected lines (`veredicto gate
/// accept`), one row each, append-only: never changed or removed.
pub(crate) const SCHEMA_V3_ACCEPTANCES: &str = r#"
CREATE TABLE gate_acceptances (
    seq               INTEGER PRIMARY KEY,
    id                TEXT    NOT NULL UNIQUE,
    created_at        TEXT    NOT NULL,
    created_ms        INTEGER NOT NULL,
    index_name        TEXT    NOT NULL,
    batch             TEXT    NOT NULL,
    batch_fingerprint TEXT    NOT NULL,
    reason            TEXT    NOT NULL CHECK (trim(reason) <> ''),
    rejected          INTEGER NOT NULL,
    rejections        TEXT    NOT NULL,
    who               TEXT,
    tool_version      TEXT    NOT NULL
);
CREATE INDEX gate_acceptances_by_batch ON gate_acceptances (batch_fingerprint, seq);
"#;

/// Version 4: the seals (`seal.rs`), one row per sealed item, in chain order.
pub(crate) const SCHEMA_V4_CHAIN: &str = r#"
CREATE TABLE chain (
    seq     INTEGER PRIMARY KEY,
    kind    TEXT    NOT NULL CHECK (kind IN ('run', 'audit_run', 'review', 'suggestion',
                                             'gate_acceptance', 'run_chunks')),
    item    TEXT    NOT NULL,
    part    INTEGER NOT NULL,
    origin  TEXT    NOT NULL CHECK (origin IN ('recorded', 'upgrade')),
    content TEXT    NOT NULL,
    digest  TEXT    NOT NULL,
    UNIQUE (kind, item, part)
);
"#;

/// Append-only triggers of the seals: never changed or removed, appended in order.
pub(crate) fn chain_triggers() -> String {
    guard(
        "chain",
        "EXISTS (SELECT 1 FROM chain WHERE seq = NEW.seq \
         OR (kind = NEW.kind AND item = NEW.item AND part = NEW.part)) \
         OR NEW.seq <= (SELECT max(seq) FROM chain)",
    )
}

/// Append-only triggers of the runs' chunk snapshots (`run_chunks`, version 3): one row
/// per run, never changed or removed.
pub(crate) fn run_chunks_triggers() -> String {
    guard(
        "run_chunks",
        "EXISTS (SELECT 1 FROM run_chunks WHERE seq = NEW.seq OR run = NEW.run)",
    )
}

/// Append-only triggers of the acceptances table.
pub(crate) fn acceptance_triggers() -> String {
    guard(
        "gate_acceptances",
        "EXISTS (SELECT 1 FROM gate_acceptances WHERE seq = NEW.seq OR id = NEW.id) \
         OR NEW.id <= (SELECT max(id) FROM gate_acceptances)",
    )
}

/// Append-only triggers of the audit tables.
pub(crate) fn audit_triggers() -> String {
    let mut sql = String::new();
    for (table, refused) in [
        (
            "audit_runs",
            "EXISTS (SELECT 1 FROM audit_runs WHERE seq = NEW.seq OR id = NEW.id) \
             OR NEW.id <= (SELECT max(id) FROM audit_runs)",
        ),
        (
            "audit_records",
            "EXISTS (SELECT 1 FROM audit_records WHERE seq = NEW.seq)",
        ),
    ] {
        sql.push_str(&guard(table, refused));
    }
    sql
}

fn guard(table: &str, refused: &str) -> String {
    format!(
        "CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} BEGIN
             SELECT RAISE(ABORT, 'veredicto history is append-only: {table} rows cannot be updated');
         END;
         CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table} BEGIN
             SELECT RAISE(ABORT, 'veredicto history is append-only: {table} rows cannot be deleted');
         END;
         CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table} WHEN {refused} BEGIN
             SELECT RAISE(ABORT, 'veredicto history is append-only: {table} rows cannot be replaced or added to a recorded run');
         END;
"
    )
}

/// The tables the append-only triggers guard, each with the condition under which an INSERT
/// would replace an existing row (`INSERT OR REPLACE` deletes before it inserts), and
/// whether the table holds rows of a run (which may only be added while that run is being
/// recorded: to the newest run, before its seal).
const GUARDED: [(&str, &str, bool); 6] = [
    (
        "runs",
        "EXISTS (SELECT 1 FROM runs WHERE seq = NEW.seq OR id = NEW.id)",
        false,
    ),
    (
        "reports",
        "EXISTS (SELECT 1 FROM reports WHERE run = NEW.run)",
        true,
    ),
    (
        "cases",
        "EXISTS (SELECT 1 FROM cases WHERE run = NEW.run AND ordinal = NEW.ordinal)",
        true,
    ),
    (
        "case_measures",
        "EXISTS (SELECT 1 FROM case_measures \
         WHERE run = NEW.run AND ordinal = NEW.ordinal AND measure = NEW.measure)",
        true,
    ),
    (
        "expected_chunks",
        "EXISTS (SELECT 1 FROM expected_chunks \
         WHERE run = NEW.run AND ordinal = NEW.ordinal AND position = NEW.position)",
        true,
    ),
    (
        "sealed",
        "EXISTS (SELECT 1 FROM sealed WHERE run = NEW.run)",
        true,
    ),
];

/// A row of a run may be added only to the newest run, and only before its seal.
const RECORDING_ONLY: &str = "NEW.run IS NOT (SELECT max(seq) FROM runs) \
     OR EXISTS (SELECT 1 FROM sealed WHERE run = NEW.run)";

/// A new run must sort after every recorded one.
const RUNS_IN_ORDER: &str = "NEW.id <= (SELECT max(id) FROM runs)";

/// The append-only triggers, as SQL.
pub(crate) fn triggers() -> String {
    let mut sql = String::new();
    for (table, replaces, of_a_run) in GUARDED {
        let refused = if of_a_run {
            format!("{replaces} OR {RECORDING_ONLY}")
        } else {
            format!("{replaces} OR {RUNS_IN_ORDER}")
        };
        sql.push_str(&guard(table, &refused));
    }
    sql
}
