//! The PostgreSQL backend of the run history: one database shared by a team, with the same
//! tables, guarantees and run IDs as the SQLite file (`docs/history.md`).
//!
//! - **Atomic**: a run is one transaction; a client killed at any moment leaves the server
//!   to roll it back, so a run is there whole or not at all.
//! - **Append-only**: triggers refuse UPDATE, DELETE and TRUNCATE on every table and rows
//!   added to a recorded run; a role may also be granted only SELECT and INSERT.
//! - **Ordered**: writers take a transaction-scoped advisory lock, which queues writers
//!   and never blocks readers; the ID is chosen under that lock, after the
//!   newest, so IDs sort in recording order as in the file.
//! - **Versioned**: `veredicto_schema` holds the schema version; an older schema is upgraded
//!   in place, in one transaction, under an advisory lock; a newer one is refused.
//! - **Bounded**: connecting times out after 5 s and is tried 3 times within 20 s; every
//!   statement after 60 s, a lock wait after 30 s.

use crate::backend::{Backend, Col, Conn, Lock, Row, Value};
use crate::{seal, StoreError};
use postgres::types::{ToSql, Type};
use postgres::{Client, GenericClient, Statement, Transaction};
use std::cell::{RefCell, RefMut};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Schema version of a PostgreSQL history (the same numbering as the file's).
pub(crate) const PG_SCHEMA_VERSION: i32 = 4;

/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Connection attempts before giving up.
const CONNECT_ATTEMPTS: u32 = 3;
/// Total time for all attempts.
const CONNECT_DEADLINE: Duration = Duration::from_secs(20);

/// Key of the advisory lock under which the schema is created or upgraded ("VRDC").
const SCHEMA_LOCK: i64 = 0x5652_4443;
/// Key of the advisory lock writers of exam runs queue on (held to the end of the
/// transaction; readers never take it). An advisory lock needs no privilege, so a role
/// granted only SELECT and INSERT can record.
const RUNS_LOCK: i64 = SCHEMA_LOCK + 1;
/// The same for audit runs.
const AUDIT_RUNS_LOCK: i64 = SCHEMA_LOCK + 2;
/// The same for gate acceptances.
const ACCEPTANCES_LOCK: i64 = SCHEMA_LOCK + 3;

/// The schema, one step per version: step `n` takes a version-`n` database to `n + 1`.
const STEPS: [&str; 4] = [
    SCHEMA_V1,
    SCHEMA_V2_AUDIT,
    SCHEMA_V3_ACCEPTANCES,
    SCHEMA_V4_CHAIN,
];

const SCHEMA_V1: &str = r#"
CREATE TABLE veredicto_schema (
    application text    NOT NULL CHECK (application = 'veredicto-history'),
    version     integer NOT NULL
);
INSERT INTO veredicto_schema VALUES ('veredicto-history', 0);

CREATE FUNCTION veredicto_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'veredicto history is append-only: % rows cannot be %',
        TG_TABLE_NAME, lower(TG_OP) || 'd';
END $$;

-- Checked once per statement over the rows it added (a run's cases arrive in one
-- statement), after them: an error still undoes the statement.
CREATE FUNCTION veredicto_recording_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The newest run exists, so this also keeps rows from pointing at no run (a foreign
    -- key checked once per statement rather than once per row). A second seal of a run is
    -- refused by the primary key of `sealed`.
    IF EXISTS (SELECT 1 FROM added a
               WHERE a.run IS DISTINCT FROM (SELECT max(seq) FROM runs)
                  OR (TG_TABLE_NAME <> 'sealed'
                      AND EXISTS (SELECT 1 FROM sealed s WHERE s.run = a.run))) THEN
        RAISE EXCEPTION 'veredicto history is append-only: % rows cannot be added to a recorded run',
            TG_TABLE_NAME;
    END IF;
    -- Measures and expected chunks belong to a case of the run.
    -- (Nested: the query is planned only for the tables that have `ordinal`.)
    IF TG_TABLE_NAME IN ('case_measures', 'expected_chunks') THEN
        IF EXISTS (SELECT 1 FROM added a
                   WHERE NOT EXISTS (SELECT 1 FROM cases c
                                     WHERE c.run = a.run AND c.ordinal = a.ordinal)) THEN
            RAISE EXCEPTION 'veredicto history: % rows must belong to a recorded case',
                TG_TABLE_NAME;
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION veredicto_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id <= (SELECT max(id) FROM runs) THEN
        RAISE EXCEPTION 'veredicto history is append-only: a new run must sort after every recorded one';
    END IF;
    RETURN NEW;
END $$;

CREATE TABLE runs (
    seq                    bigint PRIMARY KEY,
    id                     text COLLATE "C" NOT NULL UNIQUE,
    created_at             text   NOT NULL,
    created_ms             bigint NOT NULL,
    label                  text COLLATE "C",
    golden_fingerprint     text COLLATE "C" NOT NULL,
    policy_fingerprint     text COLLATE "C" NOT NULL,
    corpus_fingerprint     text,
    retriever              text   NOT NULL,
    top_k                  bigint NOT NULL,
    embedding_model        text,
    model_hash             text,
    config                 text   NOT NULL,
    tool_version           text   NOT NULL,
    git_revision           text,
    verdict                text   NOT NULL CHECK (verdict IN ('accept', 'stop')),
    reasons                text   NOT NULL,
    cases                  bigint NOT NULL,
    gold_cases             bigint NOT NULL,
    failing                bigint NOT NULL,
    failing_gold           bigint NOT NULL,
    mean_quality           double precision NOT NULL,
    mean_recall            double precision NOT NULL,
    mrr                    double precision NOT NULL,
    mean_precision         double precision NOT NULL,
    mean_ndcg              double precision NOT NULL,
    mean_average_precision double precision NOT NULL,
    hit_rate               double precision NOT NULL,
    over_noise             bigint NOT NULL,
    latency                text   NOT NULL
);
CREATE INDEX runs_by_time   ON runs (created_ms);
CREATE INDEX runs_by_golden ON runs (golden_fingerprint, seq);
CREATE INDEX runs_by_label  ON runs (label, seq);
CREATE INDEX runs_accepted  ON runs (golden_fingerprint, seq) WHERE verdict = 'accept';

CREATE TABLE reports (
    run      bigint PRIMARY KEY,
    encoding text   NOT NULL,
    body     bytea  NOT NULL
);

CREATE TABLE cases (
    run               bigint NOT NULL,
    ordinal           bigint NOT NULL,
    case_id           text   NOT NULL,
    gold              bigint NOT NULL,
    domain            text COLLATE "C",
    tags              text   NOT NULL,
    top_k             bigint NOT NULL,
    retrieved         bigint NOT NULL,
    expected          bigint NOT NULL,
    passed            bigint NOT NULL,
    reasons           text   NOT NULL,
    documented        bigint NOT NULL,
    recall            double precision NOT NULL,
    quality           double precision NOT NULL,
    "precision"       double precision NOT NULL,
    reciprocal_rank   double precision NOT NULL,
    ndcg              double precision NOT NULL,
    average_precision double precision NOT NULL,
    noise             bigint,
    max_noise         bigint NOT NULL,
    PRIMARY KEY (run, ordinal)
);

CREATE TABLE case_measures (
    run     bigint NOT NULL,
    ordinal bigint NOT NULL,
    measure text COLLATE "C" NOT NULL,
    value   double precision NOT NULL,
    PRIMARY KEY (run, ordinal, measure)
);

CREATE TABLE expected_chunks (
    run      bigint NOT NULL,
    ordinal  bigint NOT NULL,
    position bigint NOT NULL,
    chunk_id text   NOT NULL,
    rank     bigint,
    score    double precision,
    gold     bigint NOT NULL,
    in_top_k bigint NOT NULL,
    PRIMARY KEY (run, ordinal, position)
);

-- The rows of a run refer to it (and measures and chunks to their case) as foreign keys
-- would, but checked once per statement by `veredicto_recording_only`: per-row foreign-key
-- checks made recording a 200-case run several times slower.
CREATE TABLE sealed (
    run bigint PRIMARY KEY
);

CREATE TRIGGER veredicto_runs_in_order BEFORE INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION veredicto_in_order();
"#;

const SCHEMA_V2_AUDIT: &str = r#"
CREATE FUNCTION veredicto_audit_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id <= (SELECT max(id) FROM audit_runs) THEN
        RAISE EXCEPTION 'veredicto history is append-only: a new audit run must sort after every recorded one';
    END IF;
    RETURN NEW;
END $$;

CREATE TABLE audit_runs (
    seq          bigint PRIMARY KEY,
    id           text COLLATE "C" NOT NULL UNIQUE,
    created_at   text   NOT NULL,
    created_ms   bigint NOT NULL,
    label        text,
    replay_of    text COLLATE "C" REFERENCES audit_runs (id),
    cases_name   text COLLATE "C" NOT NULL,
    cases_sha256 text COLLATE "C" NOT NULL,
    cases_body   bytea  NOT NULL,
    notes        bytea,
    counts       text   NOT NULL,
    tool_version text   NOT NULL,
    git_revision text
);
CREATE TABLE audit_records (
    seq  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run  bigint NOT NULL REFERENCES audit_runs (seq),
    kind text   NOT NULL CHECK (kind IN ('review', 'suggestion')),
    body text   NOT NULL
);
CREATE INDEX audit_records_by_run ON audit_records (run, kind, seq);

CREATE TRIGGER veredicto_audit_runs_in_order BEFORE INSERT ON audit_runs
    FOR EACH ROW EXECUTE FUNCTION veredicto_audit_in_order();
"#;

/// Version 3: the ingestion gate's written acceptances, append-only like the rest.
const SCHEMA_V3_ACCEPTANCES: &str = r#"
CREATE FUNCTION veredicto_acceptances_in_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id <= (SELECT max(id) FROM gate_acceptances) THEN
        RAISE EXCEPTION 'veredicto history is append-only: a new gate acceptance must sort after every recorded one';
    END IF;
    RETURN NEW;
END $$;

CREATE TABLE gate_acceptances (
    seq               bigint PRIMARY KEY,
    id                text COLLATE "C" NOT NULL UNIQUE,
    created_at        text   NOT NULL,
    created_ms        bigint NOT NULL,
    index_name        text   NOT NULL,
    batch             text   NOT NULL,
    batch_fingerprint text COLLATE "C" NOT NULL,
    reason            text   NOT NULL CHECK (btrim(reason) <> ''),
    rejected          bigint NOT NULL,
    rejections        text   NOT NULL,
    who               text,
    tool_version      text   NOT NULL
);
CREATE INDEX gate_acceptances_by_batch ON gate_acceptances (batch_fingerprint, seq);

CREATE TRIGGER veredicto_gate_acceptances_in_order BEFORE INSERT ON gate_acceptances
    FOR EACH ROW EXECUTE FUNCTION veredicto_acceptances_in_order();
"#;

/// Version 4: the seals (`seal.rs`), one row per sealed item, in chain order.
const SCHEMA_V4_CHAIN: &str = r#"
CREATE TABLE chain (
    seq     bigint PRIMARY KEY,
    kind    text COLLATE "C" NOT NULL CHECK (kind IN ('run', 'audit_run', 'review',
                                                      'suggestion', 'gate_acceptance',
                                                      'run_chunks')),
    item    text COLLATE "C" NOT NULL,
    part    bigint NOT NULL,
    origin  text   NOT NULL CHECK (origin IN ('recorded', 'upgrade')),
    content text   NOT NULL,
    digest  text   NOT NULL,
    UNIQUE (kind, item, part)
);
"#;

/// Also version 3: the chunks each run read (see `run_chunks.rs`); a version-3 database
/// made before this table existed gets it on the first write of a snapshot.
const RUN_CHUNKS_TABLE: &str = r#"
CREATE TABLE run_chunks (
    seq         bigint PRIMARY KEY,
    run         text COLLATE "C" NOT NULL UNIQUE REFERENCES runs (id),
    fingerprint text COLLATE "C" NOT NULL,
    chunks      bigint NOT NULL,
    encoding    text,
    body        bytea,
    CHECK ((encoding IS NULL) = (body IS NULL))
);
CREATE INDEX run_chunks_by_fingerprint ON run_chunks (fingerprint, seq);
"#;

/// The same for chunk snapshots.
const RUN_CHUNKS_LOCK: i64 = SCHEMA_LOCK + 4;
/// The lock every writer takes last, to append its seals: the chain has one order.
const CHAIN_LOCK: i64 = SCHEMA_LOCK + 5;

/// Tables of each schema version's step, for the append-only triggers.
const TABLES: [&[&str]; 4] = [
    &[
        "runs",
        "reports",
        "cases",
        "case_measures",
        "expected_chunks",
        "sealed",
    ],
    &["audit_runs", "audit_records"],
    &["gate_acceptances"],
    &["chain"],
];

/// Tables whose rows belong to an exam run (added only while it is recorded).
const OF_A_RUN: [&str; 5] = [
    "reports",
    "cases",
    "case_measures",
    "expected_chunks",
    "sealed",
];

/// The append-only triggers of `tables`.
fn guards(tables: &[&str]) -> String {
    let mut sql = String::new();
    for t in tables {
        sql.push_str(&format!(
            "CREATE TRIGGER veredicto_{t}_no_change BEFORE UPDATE OR DELETE ON {t}
                 FOR EACH ROW EXECUTE FUNCTION veredicto_refuse();
             CREATE TRIGGER veredicto_{t}_no_truncate BEFORE TRUNCATE ON {t}
                 FOR EACH STATEMENT EXECUTE FUNCTION veredicto_refuse();\n"
        ));
        if OF_A_RUN.contains(t) {
            sql.push_str(&format!(
                "CREATE TRIGGER veredicto_{t}_recording_only AFTER INSERT ON {t}
                     REFERENCING NEW TABLE AS added
                     FOR EACH STATEMENT EXECUTE FUNCTION veredicto_recording_only();\n"
            ));
        }
    }
    sql
}

/// Triggers a version-4 history has: two per table, one more per table of a run, and the
/// three ordering triggers; `check` adds the two of `run_chunks` when the table is there (a
/// version-3 database made before it existed gets it on its first chunk list).
const EXPECTED_TRIGGERS: i64 = 2 * 10 + 5 + 3;

/// A run history in a PostgreSQL database: one connection (`Send`, not `Sync`), and the
/// statements it prepared, by SQL text.
pub struct PgHistory {
    client: RefCell<Client>,
    statements: RefCell<HashMap<String, Statement>>,
    location: PathBuf,
}

impl std::fmt::Debug for PgHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgHistory")
            .field("location", &self.location)
            .finish()
    }
}

/// Prepared statements kept per connection before the cache is emptied.
const STATEMENT_CACHE: usize = 128;

impl PgHistory {
    /// Connects to the database `url` names (`postgres://user@host:port/db`), creating or
    /// upgrading the schema when needed. The password comes from the URL, `PGPASSWORD`, or
    /// the password file (`PGPASSFILE`, else `~/.pgpass`); it is never stored or printed.
    pub fn connect(url: &str) -> Result<PgHistory, StoreError> {
        let (client, location) = connect_client(url)?;
        let history = PgHistory {
            client: RefCell::new(client),
            statements: RefCell::new(HashMap::new()),
            location,
        };
        history.ensure_schema()?;
        Ok(history)
    }

    /// The URL without credentials.
    pub fn path(&self) -> &Path {
        &self.location
    }

    fn pg(&self, operation: &'static str) -> impl Fn(postgres::Error) -> StoreError + '_ {
        move |source| {
            if source.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
                return StoreError::Locked {
                    path: self.location.clone(),
                    operation,
                    waited_ms: 30_000,
                };
            }
            StoreError::Postgres {
                path: self.location.clone(),
                operation,
                source,
            }
        }
    }

    /// The connection, outside a write transaction.
    fn client(&self, op: &'static str) -> Result<RefMut<'_, Client>, StoreError> {
        self.client
            .try_borrow_mut()
            .map_err(|_| self.misuse(op, "the connection is in a write transaction"))
    }

    fn misuse(&self, op: &'static str, message: &str) -> StoreError {
        StoreError::BadValue {
            path: self.location.clone(),
            operation: op,
            message: message.to_owned(),
        }
    }

    /// The schema version, `None` for a database without a history; refuses a database
    /// holding other tables of the same names.
    fn schema_version(
        &self,
        c: &mut impl postgres::GenericClient,
    ) -> Result<Option<i32>, StoreError> {
        const OP: &str = "reading the schema version";
        let row = c
            .query_one(
                // Read from the catalog tables with the statement's snapshot (not the
                // catalog cache), so that a schema another process just committed is seen.
                "SELECT count(*) FILTER (WHERE table_name = 'veredicto_schema') > 0,
                        count(*) FILTER (WHERE table_name = 'runs') > 0
                 FROM information_schema.tables
                 WHERE table_schema = current_schema()
                   AND table_name IN ('veredicto_schema', 'runs')",
                &[],
            )
            .map_err(self.pg(OP))?;
        let (has_schema, has_runs): (bool, bool) = (row.get(0), row.get(1));
        if !has_schema {
            if has_runs {
                return Err(StoreError::NotAHistory {
                    path: self.location.clone(),
                    application_id: 0,
                    user_version: 0,
                });
            }
            return Ok(None);
        }
        let v: i32 = c
            .query_one("SELECT version FROM veredicto_schema", &[])
            .map_err(self.pg(OP))?
            .get(0);
        Ok(Some(v))
    }

    fn ensure_schema(&self) -> Result<(), StoreError> {
        const OP: &str = "creating the schema";
        let mut client = self.client(OP)?;
        if self.schema_version(&mut *client)? == Some(PG_SCHEMA_VERSION) {
            return Ok(());
        }
        let mut tx = client.transaction().map_err(self.pg(OP))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .map_err(self.pg(OP))?;
        let found = self.schema_version(&mut tx)?;
        let from = match found {
            Some(v) if v > PG_SCHEMA_VERSION => {
                return Err(StoreError::NewerSchema {
                    path: self.location.clone(),
                    found: i64::from(v),
                    supported: i64::from(PG_SCHEMA_VERSION),
                })
            }
            Some(v) => usize::try_from(v).unwrap_or(0),
            None => 0,
        };
        for step in from..STEPS.len() {
            tx.batch_execute(STEPS[step])
                .and_then(|()| tx.batch_execute(&guards(TABLES[step])))
                .map_err(self.pg(OP))?;
        }
        let has_run_chunks: bool = tx
            .query_one("SELECT to_regclass('run_chunks') IS NOT NULL", &[])
            .map_err(self.pg(OP))?
            .get(0);
        if !has_run_chunks {
            tx.batch_execute(RUN_CHUNKS_TABLE)
                .and_then(|()| tx.batch_execute(&guards(&["run_chunks"])))
                .map_err(self.pg(OP))?;
        }
        let conn = PgTx {
            tx: RefCell::new(tx),
            history: self,
        };
        if from > 0 && from < 4 {
            // An older history: seal what is there, in the upgrade's transaction.
            seal::seal_at_upgrade(&conn)?;
        }
        let mut tx = conn.tx.into_inner();
        tx.execute(
            "UPDATE veredicto_schema SET version = $1",
            &[&PG_SCHEMA_VERSION],
        )
        .map_err(self.pg(OP))?;
        tx.commit().map_err(self.pg(OP))
    }

    /// The statement for `sql` (shared SQL, `?n` placeholders), prepared once per connection.
    fn statement(
        &self,
        c: &mut impl GenericClient,
        op: &'static str,
        sql: &str,
    ) -> Result<Statement, StoreError> {
        if let Some(st) = self.statements.borrow().get(sql) {
            return Ok(st.clone());
        }
        let st = c.prepare(&dollars(sql)).map_err(self.pg(op))?;
        let mut cache = self.statements.borrow_mut();
        if cache.len() >= STATEMENT_CACHE {
            cache.clear();
        }
        cache.insert(sql.to_owned(), st.clone());
        Ok(st)
    }

    fn query_on(
        &self,
        c: &mut impl GenericClient,
        op: &'static str,
        sql: &str,
        params: &[Value],
    ) -> Result<Vec<Row>, StoreError> {
        let st = self.statement(c, op, sql)?;
        let bound = bind_all(&st, params).map_err(|m| self.misuse(op, &m))?;
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| &**b).collect();
        c.query(&st, &refs)
            .map_err(self.pg(op))?
            .iter()
            .map(|r| row_of(r).map_err(|m| self.misuse(op, &m)))
            .collect()
    }

    fn execute_on(
        &self,
        c: &mut impl GenericClient,
        op: &'static str,
        sql: &str,
        params: &[Value],
    ) -> Result<(), StoreError> {
        let st = self.statement(c, op, sql)?;
        let bound = bind_all(&st, params).map_err(|m| self.misuse(op, &m))?;
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| &**b).collect();
        c.execute(&st, &refs).map(drop).map_err(self.pg(op))
    }

    /// One statement over the rows' columns as typed arrays, unnested in order.
    fn insert_on(
        &self,
        c: &mut impl GenericClient,
        op: &'static str,
        table: &str,
        columns: &[(&str, Col)],
        rows: &[Vec<Value>],
    ) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = columns.iter().map(|(c, _)| *c).collect();
        let arrays: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, (_, col))| {
                let ty = match col {
                    Col::Int => "bigint",
                    Col::Real => "float8",
                    Col::Text => "text",
                };
                format!("?{}::{ty}[]", i + 1)
            })
            .collect();
        let sql = format!(
            "INSERT INTO {table} ({names}) SELECT {names} FROM unnest({arrays})
                 WITH ORDINALITY AS u ({names}, veredicto_ordinal) ORDER BY veredicto_ordinal",
            names = names.join(", "),
            arrays = arrays.join(", ")
        );
        let mut bound: Vec<Box<dyn ToSql + Sync>> = Vec::with_capacity(columns.len());
        for (i, (name, col)) in columns.iter().enumerate() {
            let cell = |r: &Vec<Value>| r.get(i).cloned().unwrap_or(Value::Null);
            let wrong = |v: &Value| self.misuse(op, &format!("{table}.{name}: {v:?}"));
            bound.push(match col {
                Col::Int => Box::new(
                    rows.iter()
                        .map(|r| match cell(r) {
                            Value::Null => Ok(None),
                            Value::Int(v) => Ok(Some(v)),
                            other => Err(wrong(&other)),
                        })
                        .collect::<Result<Vec<Option<i64>>, _>>()?,
                ),
                Col::Real => Box::new(
                    rows.iter()
                        .map(|r| match cell(r) {
                            Value::Null => Ok(None),
                            Value::Real(v) => Ok(Some(v)),
                            other => Err(wrong(&other)),
                        })
                        .collect::<Result<Vec<Option<f64>>, _>>()?,
                ),
                Col::Text => Box::new(
                    rows.iter()
                        .map(|r| match cell(r) {
                            Value::Null => Ok(None),
                            Value::Text(v) => Ok(Some(v)),
                            other => Err(wrong(&other)),
                        })
                        .collect::<Result<Vec<Option<String>>, _>>()?,
                ),
            });
        }
        let st = self.statement(c, op, &sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = bound.iter().map(|b| &**b).collect();
        c.execute(&st, &refs).map(drop).map_err(self.pg(op))
    }

    fn lock_on(
        &self,
        c: &mut impl GenericClient,
        op: &'static str,
        lock: Lock,
    ) -> Result<(), StoreError> {
        let key = match lock {
            Lock::Runs => RUNS_LOCK,
            Lock::AuditRuns => AUDIT_RUNS_LOCK,
            Lock::Acceptances => ACCEPTANCES_LOCK,
            Lock::RunChunks => RUN_CHUNKS_LOCK,
            Lock::Chain => CHAIN_LOCK,
            // Records of one audit run are appended one writer at a time, so they keep
            // their order.
            Lock::AuditRecords(seq) => {
                return c
                    .execute(
                        "SELECT pg_advisory_xact_lock($1, $2)",
                        &[&(SCHEMA_LOCK as i32), &(seq as i32)],
                    )
                    .map(drop)
                    .map_err(self.pg(op));
            }
        };
        c.execute("SELECT pg_advisory_xact_lock($1)", &[&key])
            .map(drop)
            .map_err(self.pg(op))
    }

    fn has_table_on(&self, c: &mut impl GenericClient, table: &str) -> Result<bool, StoreError> {
        let rows = self.query_on(
            c,
            "reading the schema",
            "SELECT to_regclass(CAST(?1 AS TEXT)) IS NOT NULL",
            &[Value::from(table)],
        )?;
        Ok(rows.first().map(|r| r.0.first() == Some(&Value::Int(1))) == Some(true))
    }

    fn create_run_chunks_on(
        &self,
        c: &mut impl GenericClient,
        op: &'static str,
    ) -> Result<(), StoreError> {
        c.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .map_err(self.pg(op))?;
        c.batch_execute(RUN_CHUNKS_TABLE)
            .and_then(|()| c.batch_execute(&guards(&["run_chunks"])))
            .map_err(self.pg(op))
    }
}

/// An open write transaction of a [`PgHistory`].
struct PgTx<'h, 'c> {
    tx: RefCell<Transaction<'c>>,
    history: &'h PgHistory,
}

/// Implements [`Conn`] by running each statement on the client `$client` yields.
macro_rules! pg_conn {
    ($ty:ty, $this:ident => $history:expr, $client:expr) => {
        impl Conn for $ty {
            fn location(&self) -> &Path {
                let $this = self;
                &$history.location
            }
            fn query(
                &self,
                op: &'static str,
                sql: &str,
                params: &[Value],
            ) -> Result<Vec<Row>, StoreError> {
                let $this = self;
                $history.query_on(&mut *$client(op)?, op, sql, params)
            }
            fn execute(
                &self,
                op: &'static str,
                sql: &str,
                params: &[Value],
            ) -> Result<(), StoreError> {
                let $this = self;
                $history.execute_on(&mut *$client(op)?, op, sql, params)
            }
            fn insert_rows(
                &self,
                op: &'static str,
                table: &str,
                columns: &[(&str, Col)],
                rows: &[Vec<Value>],
            ) -> Result<(), StoreError> {
                let $this = self;
                $history.insert_on(&mut *$client(op)?, op, table, columns, rows)
            }
            fn has_table(&self, table: &str) -> Result<bool, StoreError> {
                let $this = self;
                $history.has_table_on(&mut *$client("reading the schema")?, table)
            }
            fn lock(&self, op: &'static str, lock: Lock) -> Result<(), StoreError> {
                let $this = self;
                $history.lock_on(&mut *$client(op)?, op, lock)
            }
            fn create_run_chunks(&self, op: &'static str) -> Result<(), StoreError> {
                let $this = self;
                $history.create_run_chunks_on(&mut *$client(op)?, op)
            }
        }
    };
}

pg_conn!(PgHistory, h => h, |op| h.client(op));
pg_conn!(PgTx<'_, '_>, t => t.history, |_op| Ok::<_, StoreError>(t.tx.borrow_mut()));

impl Backend for PgHistory {
    /// Always `postgresql` (for symmetry with the file's journal mode).
    fn journal_mode(&self) -> &str {
        "postgresql"
    }

    fn write<T>(
        &self,
        op: &'static str,
        lock: Lock,
        f: impl FnOnce(&dyn Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut client = self.client(op)?;
        let tx = client.transaction().map_err(self.pg(op))?;
        let conn = PgTx {
            tx: RefCell::new(tx),
            history: self,
        };
        // Writers queue here; readers are not blocked.
        conn.lock(op, lock)?;
        let out = f(&conn)?;
        conn.tx.into_inner().commit().map_err(self.pg(op))?;
        Ok(out)
    }

    /// The append-only triggers are all there and enabled.
    fn check_database(&self) -> Result<(Vec<String>, usize), StoreError> {
        const OP: &str = "checking the history";
        let row = self
            .client(OP)?
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE t.tgenabled = 'D')
                 FROM pg_trigger t JOIN pg_class k ON k.oid = t.tgrelid
                 WHERE NOT t.tgisinternal AND t.tgname LIKE 'veredicto\\_%'
                   AND k.oid IN ('runs'::regclass, 'reports'::regclass, 'cases'::regclass,
                       'case_measures'::regclass, 'expected_chunks'::regclass,
                       'sealed'::regclass, 'audit_runs'::regclass,
                       'audit_records'::regclass, 'gate_acceptances'::regclass,
                       'chain'::regclass, to_regclass('run_chunks'))",
                &[],
            )
            .map_err(self.pg(OP))?;
        let (triggers, disabled): (i64, i64) = (row.get(0), row.get(1));
        let mut integrity = Vec::new();
        let expected = EXPECTED_TRIGGERS + if self.has_table("run_chunks")? { 2 } else { 0 };
        if triggers != expected {
            integrity.push(format!(
                "append-only triggers: {triggers} of {expected} present"
            ));
        }
        if disabled > 0 {
            integrity.push(format!("append-only triggers: {disabled} disabled"));
        }
        if integrity.is_empty() {
            integrity.push("ok".to_owned());
        }
        Ok((integrity, 0))
    }
}

/// Shared SQL's `?n` placeholders as PostgreSQL's `$n` (the shared SQL holds no other `?`).
fn dollars(sql: &str) -> String {
    sql.replace('?', "$")
}

/// Each value as the type the server inferred for its parameter.
fn bind_all(st: &Statement, params: &[Value]) -> Result<Vec<Box<dyn ToSql + Sync>>, String> {
    if st.params().len() != params.len() {
        return Err(format!(
            "{} parameters given, the statement has {}",
            params.len(),
            st.params().len()
        ));
    }
    st.params()
        .iter()
        .zip(params)
        .map(|(ty, v)| bind(v, ty))
        .collect()
}

fn bind(v: &Value, ty: &Type) -> Result<Box<dyn ToSql + Sync>, String> {
    let wrong = || format!("{v:?} for a parameter of type {ty}");
    Ok(match (v, ty) {
        (Value::Null, &Type::INT8) => Box::new(None::<i64>),
        (Value::Null, &Type::INT4) => Box::new(None::<i32>),
        (Value::Null, &Type::FLOAT8) => Box::new(None::<f64>),
        (Value::Null, &Type::BYTEA) => Box::new(None::<Vec<u8>>),
        (Value::Null, _) => Box::new(None::<String>),
        (Value::Int(i), &Type::INT8) => Box::new(*i),
        (Value::Int(i), &Type::INT4) => Box::new(i32::try_from(*i).map_err(|_| wrong())?),
        (Value::Real(r), &Type::FLOAT8) => Box::new(*r),
        (Value::Text(s), _) => Box::new(s.clone()),
        (Value::Blob(b), &Type::BYTEA) => Box::new(b.clone()),
        _ => return Err(wrong()),
    })
}

/// A row's columns as values, by their PostgreSQL types.
fn row_of(r: &postgres::Row) -> Result<Row, String> {
    let mut out = Vec::with_capacity(r.len());
    for (i, col) in r.columns().iter().enumerate() {
        let e = |e: postgres::Error| format!("column {}: {e}", col.name());
        let v = match *col.type_() {
            Type::INT8 => r.try_get::<_, Option<i64>>(i).map_err(e)?.map(Value::Int),
            Type::INT4 => r
                .try_get::<_, Option<i32>>(i)
                .map_err(e)?
                .map(|v| Value::Int(v.into())),
            Type::BOOL => r
                .try_get::<_, Option<bool>>(i)
                .map_err(e)?
                .map(|v| Value::Int(v.into())),
            Type::FLOAT8 => r.try_get::<_, Option<f64>>(i).map_err(e)?.map(Value::Real),
            Type::BYTEA => r
                .try_get::<_, Option<Vec<u8>>>(i)
                .map_err(e)?
                .map(Value::Blob),
            _ => r
                .try_get::<_, Option<String>>(i)
                .map_err(e)?
                .map(Value::Text),
        };
        out.push(v.unwrap_or(Value::Null));
    }
    Ok(Row(out))
}

/// Opens the connection `url` names, for the history at the returned location (the URL
/// without credentials), by libpq's rules (`veredicto_net::pg`): URL or key=value form;
/// the user from the target, `PGUSER` or the OS user; the password from the target,
/// `PGPASSWORD` or the password file; TLS as `sslmode` says (libpq's default `prefer`);
/// bounded attempts. This is the whole of how the history connects.
fn connect_client(url: &str) -> Result<(Client, PathBuf), StoreError> {
    let location = PathBuf::from(veredicto_core::redact::url(url));
    let target = veredicto_net::PgTarget::parse(url, &veredicto_net::PgEnv::from_process())
        .map_err(|e| StoreError::BadUrl {
            path: location.clone(),
            message: e.to_string(),
        })?;
    let host = target.host_port();
    let database = target.dbname().to_owned();
    let connect_error = |attempts: u32, message: String| StoreError::Connect {
        path: location.clone(),
        host: host.clone(),
        database: database.clone(),
        attempts,
        message,
    };
    let connector = target.connector().map_err(|e| StoreError::BadUrl {
        path: location.clone(),
        message: e.to_string(),
    })?;
    let mut config = target.config(CONNECT_TIMEOUT);
    let timeout = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(CONNECT_TIMEOUT);
    let bounds = "-c statement_timeout=60000 -c lock_timeout=30000 -c idle_in_transaction_session_timeout=60000";
    let options = match config.get_options() {
        Some(given) => format!("{given} {bounds}"),
        None => bounds.to_owned(),
    };
    config.keepalives(true).options(&options);
    let started = Instant::now();
    let mut attempts = 0;
    let client = loop {
        attempts += 1;
        match connector.connect(config.clone()) {
            Ok(c) => break c,
            Err(e) => {
                // A server that answered (wrong password, no such database, a certificate
                // refused) will answer the same again: retry only when it could not be
                // reached.
                let retry = !e.server_answered()
                    && attempts < CONNECT_ATTEMPTS
                    && started.elapsed() + timeout < CONNECT_DEADLINE;
                if !retry {
                    return Err(connect_error(attempts, e.to_string()));
                }
                std::thread::sleep(Duration::from_millis(250 * u64::from(attempts)));
            }
        }
    };
    Ok((client, location))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_as_postgresql_numbers_them() {
        assert_eq!(
            dollars("WHERE a = ?1 AND b >= ?2 AND c < ?3 OR d = ?1"),
            "WHERE a = $1 AND b >= $2 AND c < $3 OR d = $1"
        );
    }
}
