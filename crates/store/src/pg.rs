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

use crate::acceptance::{
    parse_rejections, prepare_acceptance, unreadable, GateAcceptance, COLUMNS as ACCEPTANCE_COLUMNS,
};
use crate::audit::{
    prepare_audit, sha256, AuditCounts, AuditRecordKind, AuditRun, AuditRunMeta, AuditRunSummary,
};
use crate::{
    codec, filter_sql, id, prepare, verdict_str, IntegrityReport, Metric, Prepared, RunFilter,
    RunSummary, StoreError, TrendPoint, TrendQuery,
};
use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Transaction};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use veredicto_core::exam::{ExamReport, Verdict};
use veredicto_core::history::{RecordedRun, RunMeta};
use veredicto_core::snapshot::{fingerprint_of, ChunkSnapshot};

/// Schema version of a PostgreSQL history (the same numbering as the file's).
pub(crate) const PG_SCHEMA_VERSION: i32 = 3;

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
const STEPS: [&str; 3] = [SCHEMA_V1, SCHEMA_V2_AUDIT, SCHEMA_V3_ACCEPTANCES];

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

/// Tables of each schema version's step, for the append-only triggers.
const TABLES: [&[&str]; 3] = [
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

/// Triggers a version-3 history has: two per table, one more per table of a run, and the
/// three ordering triggers; `check` adds the two of `run_chunks` when the table is there (a
/// version-3 database made before it existed gets it on its first chunk list).
const EXPECTED_TRIGGERS: i64 = 2 * 9 + 5 + 3;

/// A run history in a PostgreSQL database: one connection (`Send`, not `Sync`).
pub struct PgHistory {
    client: RefCell<Client>,
    location: PathBuf,
}

impl std::fmt::Debug for PgHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgHistory")
            .field("location", &self.location)
            .finish()
    }
}

/// Statement parameters.
type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

fn n(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn b(v: bool) -> i64 {
    i64::from(v)
}

impl PgHistory {
    /// Connects to the database `url` names (`postgres://user@host:port/db`), creating or
    /// upgrading the schema when needed. The password comes from the URL, `PGPASSWORD`, or
    /// the password file (`PGPASSFILE`, else `~/.pgpass`); it is never stored or printed.
    pub fn connect(url: &str) -> Result<PgHistory, StoreError> {
        let location = PathBuf::from(veredicto_core::redact::url(url));
        let mut config: Config = url
            .parse()
            .map_err(|e: postgres::Error| StoreError::BadUrl {
                path: location.clone(),
                message: veredicto_core::redact::secrets_in_text(&e.to_string()),
            })?;
        if config.get_ssl_mode() == postgres::config::SslMode::Require {
            return Err(StoreError::BadUrl {
                path: location,
                message: "sslmode=require: this veredicto connects without TLS; reach a remote \
                          server through an SSH tunnel or a local TLS proxy"
                    .to_owned(),
            });
        }
        if config.get_user().is_none() {
            if let Some(user) = std::env::var("PGUSER")
                .ok()
                .or_else(|| std::env::var("USER").ok())
            {
                config.user(&user);
            }
        }
        let host = describe_host(&config);
        let database = config
            .get_dbname()
            .or(config.get_user())
            .unwrap_or("postgres")
            .to_owned();
        if config.get_password().is_none() {
            if let Some(pw) = password_from_env(&config, &host, &database) {
                config.password(pw);
            }
        }
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .application_name("veredicto")
            .keepalives(true)
            .options("-c statement_timeout=60000 -c lock_timeout=30000 -c idle_in_transaction_session_timeout=60000");
        let started = Instant::now();
        let mut attempts = 0;
        let client = loop {
            attempts += 1;
            match config.connect(NoTls) {
                Ok(c) => break c,
                Err(e) => {
                    // A server that answered (wrong password, no such database) will answer
                    // the same again: retry only when it could not be reached.
                    let retry = e.as_db_error().is_none()
                        && attempts < CONNECT_ATTEMPTS
                        && started.elapsed() + CONNECT_TIMEOUT < CONNECT_DEADLINE;
                    if !retry {
                        return Err(StoreError::Connect {
                            path: location,
                            host,
                            database,
                            attempts,
                            message: connect_message(&e),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(250 * u64::from(attempts)));
                }
            }
        };
        let history = PgHistory {
            client: RefCell::new(client),
            location,
        };
        history.ensure_schema()?;
        Ok(history)
    }

    /// The URL without credentials.
    pub fn path(&self) -> &Path {
        &self.location
    }

    /// Always `postgresql` (for symmetry with the file's journal mode).
    pub fn journal_mode(&self) -> &str {
        "postgresql"
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

    fn corrupt(&self, run: &str, what: &'static str, message: String) -> StoreError {
        StoreError::Corrupt {
            path: self.location.clone(),
            run: run.to_owned(),
            what,
            message,
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
        let mut client = self.client.borrow_mut();
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
        tx.execute(
            "UPDATE veredicto_schema SET version = $1",
            &[&PG_SCHEMA_VERSION],
        )
        .map_err(self.pg(OP))?;
        tx.commit().map_err(self.pg(OP))
    }

    /// Records one run in one transaction and returns its new ID.
    pub fn record(&self, meta: &RunMeta, report: &ExamReport) -> Result<String, StoreError> {
        Ok(self
            .record_many(std::iter::once((meta, report)))?
            .into_iter()
            .next()
            .unwrap_or_default())
    }

    /// Records several runs in one transaction; their IDs in order.
    pub fn record_many<'a>(
        &self,
        runs: impl IntoIterator<Item = (&'a RunMeta, &'a ExamReport)>,
    ) -> Result<Vec<String>, StoreError> {
        const OP: &str = "recording a run";
        let prepared = runs
            .into_iter()
            .map(|(meta, report)| prepare(&self.location, meta, report))
            .collect::<Result<Vec<_>, _>>()?;
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(self.pg(OP))?;
        let mut ids = Vec::with_capacity(prepared.len());
        for p in &prepared {
            ids.push(self.insert(&mut tx, p)?);
        }
        tx.commit().map_err(self.pg(OP))?;
        Ok(ids)
    }

    /// Records a run copied from another history under its own ID.
    pub fn import(&self, run: &RecordedRun) -> Result<(), StoreError> {
        const OP: &str = "recording a run";
        let meta = RunMeta {
            id: String::new(),
            ..run.meta.clone()
        };
        let mut p = prepare(&self.location, &meta, &run.report)?;
        p.fixed_id = Some(run.meta.id.clone());
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(self.pg(OP))?;
        self.insert(&mut tx, &p)?;
        tx.commit().map_err(self.pg(OP))
    }

    fn insert(&self, tx: &mut Transaction<'_>, p: &Prepared<'_>) -> Result<String, StoreError> {
        const OP: &str = "recording a run";
        let e = self.pg(OP);
        let (meta, report) = (p.meta, p.report);
        let s = &report.summary;
        // Writers queue here; readers are not blocked.
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&RUNS_LOCK])
            .map_err(&e)?;
        let row = tx
            .query_one("SELECT coalesce(max(seq), 0) + 1, max(id) FROM runs", &[])
            .map_err(&e)?;
        let seq: i64 = row.get(0);
        let newest: Option<String> = row.get(1);
        let run_id = match &p.fixed_id {
            Some(kept) => kept.clone(),
            None => id::next(p.created_ms, p.random, newest.as_deref()),
        };
        let top_k = i64::from(meta.config.top_k);
        let verdict = verdict_str(report.verdict);
        let (cases, gold_cases, failing, failing_gold, over_noise) = (
            n(s.cases),
            n(s.gold_cases),
            n(s.failing),
            n(s.failing_gold),
            n(s.over_noise),
        );
        tx.execute(
            "INSERT INTO runs (seq, id, created_at, created_ms, label, golden_fingerprint,
                 policy_fingerprint, corpus_fingerprint, retriever, top_k, embedding_model,
                 model_hash, config, tool_version, git_revision, verdict, reasons, cases,
                 gold_cases, failing, failing_gold, mean_quality, mean_recall, mrr,
                 mean_precision, mean_ndcg, mean_average_precision, hit_rate, over_noise,
                 latency)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                 $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30)",
            &[
                &seq,
                &run_id,
                &meta.created_at,
                &p.created_ms,
                &meta.label,
                &meta.golden_fingerprint,
                &meta.policy_fingerprint,
                &meta.corpus_fingerprint,
                &meta.config.retriever,
                &top_k,
                &meta.config.embedding_model,
                &meta.config.model_hash,
                &p.config,
                &meta.tool_version,
                &meta.git_revision,
                &verdict,
                &p.reasons,
                &cases,
                &gold_cases,
                &failing,
                &failing_gold,
                &s.mean_quality,
                &s.mean_recall,
                &s.mrr,
                &s.mean_precision,
                &s.mean_ndcg,
                &s.mean_average_precision,
                &s.hit_rate,
                &over_noise,
                &p.latency,
            ],
        )
        .map_err(&e)?;
        tx.execute(
            "INSERT INTO reports (run, encoding, body) VALUES ($1, $2, $3)",
            &[&seq, &codec::ENCODING, &p.body],
        )
        .map_err(&e)?;

        // Every case, measure and expected chunk in one statement each (arrays unnested).
        let cs = &report.cases;
        let ordinal: Vec<i64> = (0..cs.len()).map(n).collect();
        let col = |f: &dyn Fn(&veredicto_core::exam::CaseResult) -> i64| -> Vec<i64> {
            cs.iter().map(f).collect()
        };
        let flt = |f: &dyn Fn(&veredicto_core::exam::CaseResult) -> f64| -> Vec<f64> {
            cs.iter().map(f).collect()
        };
        let case_id: Vec<&str> = cs.iter().map(|c| c.id.as_str()).collect();
        let gold = col(&|c| b(c.gold));
        let domain: Vec<Option<&str>> = cs.iter().map(|c| c.domain.as_deref()).collect();
        let tags: Vec<String> = cs
            .iter()
            .map(|c| crate::json_strings(c.tags.iter().map(String::as_str)))
            .collect();
        let ks = col(&|c| i64::from(c.top_k));
        let retrieved = col(&|c| n(c.retrieved));
        let expected = col(&|c| n(c.expected.len()));
        let passed = col(&|c| b(c.passed));
        let reasons: Vec<String> = cs
            .iter()
            .map(|c| crate::json_strings(c.reasons.iter().map(|r| r.as_str())))
            .collect();
        let documented = col(&|c| b(c.documented));
        let recall = flt(&|c| c.recall);
        let quality = flt(&|c| c.quality);
        let precision = flt(&|c| c.precision);
        let rr = flt(&|c| c.reciprocal_rank);
        let ndcg = flt(&|c| c.ndcg);
        let ap = flt(&|c| c.average_precision);
        let noise: Vec<Option<i64>> = cs.iter().map(|c| c.noise.map(i64::from)).collect();
        let max_noise = col(&|c| i64::from(c.max_noise));
        tx.execute(
            "INSERT INTO cases (run, ordinal, case_id, gold, domain, tags, top_k, retrieved,
                 expected, passed, reasons, documented, recall, quality, \"precision\",
                 reciprocal_rank, ndcg, average_precision, noise, max_noise)
             SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[],
                 $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[],
                 $11::text[], $12::bigint[], $13::float8[], $14::float8[], $15::float8[],
                 $16::float8[], $17::float8[], $18::float8[], $19::bigint[], $20::bigint[])",
            &[
                &seq,
                &ordinal,
                &case_id,
                &gold,
                &domain,
                &tags,
                &ks,
                &retrieved,
                &expected,
                &passed,
                &reasons,
                &documented,
                &recall,
                &quality,
                &precision,
                &rr,
                &ndcg,
                &ap,
                &noise,
                &max_noise,
            ],
        )
        .map_err(&e)?;

        let (mut m_ord, mut m_name, mut m_value) = (Vec::new(), Vec::new(), Vec::new());
        let (mut x_ord, mut x_pos, mut x_id, mut x_rank, mut x_score, mut x_gold, mut x_top) = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        for (o, c) in cs.iter().enumerate() {
            for (name, value) in &c.measures {
                m_ord.push(n(o));
                m_name.push(name.as_str());
                m_value.push(*value);
            }
            for (position, x) in c.expected.iter().enumerate() {
                x_ord.push(n(o));
                x_pos.push(n(position));
                x_id.push(x.id.as_str());
                x_rank.push(x.rank.map(n));
                x_score.push(x.score);
                x_gold.push(b(x.gold));
                x_top.push(b(x.in_top_k));
            }
        }
        if !m_ord.is_empty() {
            tx.execute(
                "INSERT INTO case_measures (run, ordinal, measure, value)
                 SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::float8[])",
                &[&seq, &m_ord, &m_name, &m_value],
            )
            .map_err(&e)?;
        }
        if !x_ord.is_empty() {
            tx.execute(
                "INSERT INTO expected_chunks (run, ordinal, position, chunk_id, rank, score,
                     gold, in_top_k)
                 SELECT $1, * FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::bigint[],
                     $6::float8[], $7::bigint[], $8::bigint[])",
                &[
                    &seq, &x_ord, &x_pos, &x_id, &x_rank, &x_score, &x_gold, &x_top,
                ],
            )
            .map_err(&e)?;
        }
        tx.execute("INSERT INTO sealed (run) VALUES ($1)", &[&seq])
            .map_err(&e)?;
        Ok(run_id)
    }

    /// Resolves `latest`, a full ID or a unique prefix to a run ID.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<String, StoreError> {
        self.resolve_in("runs", id_or_prefix)
    }

    /// Resolves `latest`, a full audit run ID or a unique prefix.
    pub fn resolve_audit(&self, id_or_prefix: &str) -> Result<String, StoreError> {
        self.resolve_in("audit_runs", id_or_prefix)
    }

    fn resolve_in(&self, table: &str, id_or_prefix: &str) -> Result<String, StoreError> {
        const OP: &str = "looking up a run";
        let query = id_or_prefix.trim();
        let not_found = || {
            if table == "runs" {
                StoreError::RunNotFound {
                    path: self.location.clone(),
                    query: query.to_owned(),
                }
            } else {
                StoreError::AuditRunNotFound {
                    path: self.location.clone(),
                    query: query.to_owned(),
                }
            }
        };
        let mut c = self.client.borrow_mut();
        if query.eq_ignore_ascii_case("latest") {
            return c
                .query_opt(
                    &format!("SELECT id FROM {table} ORDER BY seq DESC LIMIT 1"),
                    &[],
                )
                .map_err(self.pg(OP))?
                .map(|r| r.get(0))
                .ok_or_else(not_found);
        }
        let prefix = id::normalise(query).ok_or_else(|| StoreError::BadRunRef {
            path: self.location.clone(),
            query: query.to_owned(),
        })?;
        let upper = format!("{prefix:Z<width$}", width = id::ID_LEN);
        let low = format!("{prefix:0<width$}", width = id::ID_LEN);
        let found: Vec<String> = c
            .query(
                &format!(
                    "SELECT id FROM {table} WHERE id >= $1 AND id <= $2 ORDER BY id DESC LIMIT 4"
                ),
                &[&low, &upper],
            )
            .map_err(self.pg(OP))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        match found.len() {
            0 => Err(not_found()),
            1 => Ok(found.into_iter().next().unwrap_or_default()),
            _ => Err(StoreError::AmbiguousPrefix {
                path: self.location.clone(),
                prefix: query.to_owned(),
                candidates: found.into_iter().take(3).collect(),
            }),
        }
    }

    /// The whole run: metadata and exam report, exactly as recorded.
    pub fn get(&self, id_or_prefix: &str) -> Result<RecordedRun, StoreError> {
        const OP: &str = "reading a run";
        let id = self.resolve(id_or_prefix)?;
        let (seq, meta) = self.meta_of(&id)?;
        let row = self
            .client
            .borrow_mut()
            .query_one("SELECT encoding, body FROM reports WHERE run = $1", &[&seq])
            .map_err(self.pg(OP))?;
        let (encoding, body): (String, Vec<u8>) = (row.get(0), row.get(1));
        let json = codec::decompress(&encoding, &body)
            .map_err(|message| self.corrupt(&id, "report", message))?;
        let report =
            codec::parse(&json).map_err(|err| self.corrupt(&id, "report", err.to_string()))?;
        Ok(RecordedRun { meta, report })
    }

    /// A run's metadata without its report.
    pub fn meta(&self, id_or_prefix: &str) -> Result<RunMeta, StoreError> {
        let id = self.resolve(id_or_prefix)?;
        self.meta_of(&id).map(|(_, meta)| meta)
    }

    fn meta_of(&self, id: &str) -> Result<(i64, RunMeta), StoreError> {
        const OP: &str = "reading a run";
        let row = self
            .client
            .borrow_mut()
            .query_opt(
                "SELECT seq, id, created_at, label, golden_fingerprint, policy_fingerprint,
                     corpus_fingerprint, tool_version, git_revision, config, latency
                 FROM runs WHERE id = $1",
                &[&id],
            )
            .map_err(self.pg(OP))?
            .ok_or_else(|| StoreError::RunNotFound {
                path: self.location.clone(),
                query: id.to_owned(),
            })?;
        let config: String = row.get(9);
        let latency: String = row.get(10);
        let meta = RunMeta {
            id: row.get(1),
            created_at: row.get(2),
            label: row.get(3),
            golden_fingerprint: row.get(4),
            policy_fingerprint: row.get(5),
            corpus_fingerprint: row.get(6),
            config: serde_json::from_str(&config)
                .map_err(|err| self.corrupt(id, "config", err.to_string()))?,
            tool_version: row.get(7),
            git_revision: row.get(8),
            latency: serde_json::from_str(&latency)
                .map_err(|err| self.corrupt(id, "latency", err.to_string()))?,
        };
        Ok((row.get(0), meta))
    }

    /// A run's summary line.
    pub fn summary(&self, id_or_prefix: &str) -> Result<RunSummary, StoreError> {
        let id = self.resolve(id_or_prefix)?;
        let sql = format!("SELECT {} FROM runs WHERE id = $1", crate::SUMMARY_COLUMNS);
        self.summaries(&sql, &[&id])?
            .into_iter()
            .next()
            .map(|(_, s)| s)
            .ok_or(StoreError::RunNotFound {
                path: self.location.clone(),
                query: id,
            })
    }

    /// Runs matching `filter` and recorded before the raw ID `before_id`, newest first.
    pub fn select_runs(
        &self,
        filter: &RunFilter,
        before_id: Option<&str>,
    ) -> Result<Vec<RunSummary>, StoreError> {
        Ok(self
            .select(filter, before_id)?
            .into_iter()
            .map(|(_, s)| s)
            .collect())
    }

    fn select(
        &self,
        filter: &RunFilter,
        before_id: Option<&str>,
    ) -> Result<Vec<(i64, RunSummary)>, StoreError> {
        let (where_sql, values) =
            filter_sql(&self.location, filter, before_id, |r| self.resolve(r))?;
        let where_sql = numbered(&where_sql);
        let texts: Vec<Option<String>> = values
            .iter()
            .map(|v| match v {
                rusqlite::types::Value::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        let ints: Vec<Option<i64>> = values
            .iter()
            .map(|v| match v {
                rusqlite::types::Value::Integer(i) => Some(*i),
                _ => None,
            })
            .collect();
        let params: Params<'_> = texts
            .iter()
            .zip(&ints)
            .map(|(t, i)| -> &(dyn ToSql + Sync) {
                match (t, i) {
                    (Some(t), _) => t,
                    (None, Some(i)) => i,
                    (None, None) => &None::<String>,
                }
            })
            .collect();
        let limit = filter
            .limit
            .map_or_else(|| "ALL".to_owned(), |n| n.to_string());
        let sql = format!(
            "SELECT {} FROM runs {where_sql} ORDER BY seq DESC LIMIT {limit}",
            crate::SUMMARY_COLUMNS
        );
        self.summaries(&sql, &params)
    }

    fn summaries(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<(i64, RunSummary)>, StoreError> {
        const OP: &str = "listing runs";
        let rows = self
            .client
            .borrow_mut()
            .query(sql, params)
            .map_err(self.pg(OP))?;
        rows.iter().map(|r| self.summary_row(r)).collect()
    }

    fn summary_row(&self, r: &Row) -> Result<(i64, RunSummary), StoreError> {
        let id: String = r.get(1);
        let verdict: String = r.get(4);
        let reasons: String = r.get(5);
        let u = |i: usize| usize::try_from(r.get::<_, i64>(i)).unwrap_or(0);
        let s = RunSummary {
            verdict: match verdict.as_str() {
                "accept" => Verdict::Accept,
                "stop" => Verdict::Stop,
                other => return Err(self.corrupt(&id, "verdict", format!("`{other}`"))),
            },
            reasons: serde_json::from_str(&reasons)
                .map_err(|err| self.corrupt(&id, "reasons", err.to_string()))?,
            created_at: r.get(2),
            label: r.get(3),
            cases: u(6),
            gold_cases: u(7),
            failing: u(8),
            failing_gold: u(9),
            mean_quality: r.get(10),
            mean_recall: r.get(11),
            mrr: r.get(12),
            mean_ndcg: r.get(13),
            golden_fingerprint: r.get(14),
            policy_fingerprint: r.get(15),
            corpus_fingerprint: r.get(16),
            top_k: u32::try_from(r.get::<_, i64>(17)).unwrap_or(0),
            tool_version: r.get(18),
            git_revision: r.get(19),
            id,
        };
        Ok((r.get(0), s))
    }

    /// The mean of a metric over each selected run's cases, oldest run first. Means are
    /// summed as SQLite sums (Kahan-Babuska-Neumaier), so that both backends give the same
    /// numbers to the last bit.
    pub fn trend(&self, query: &TrendQuery) -> Result<Vec<TrendPoint>, StoreError> {
        const OP: &str = "computing a trend";
        let runs = self.select(&query.runs, None)?;
        let scope = "($2::text IS NULL OR c.domain = $2) AND ($3::text IS NULL OR c.case_id = $3)";
        let sql = match query.metric.column() {
            Some(col) => format!(
                "SELECT c.\"{col}\"::float8 FROM cases c
                 WHERE c.run = $1 AND c.\"{col}\" IS NOT NULL AND {scope} ORDER BY c.ordinal"
            ),
            None => format!(
                "SELECT m.value FROM case_measures m
                 JOIN cases c ON c.run = m.run AND c.ordinal = m.ordinal
                 WHERE m.run = $1 AND m.measure = $4 AND {scope} ORDER BY m.ordinal"
            ),
        };
        let measure = match &query.metric {
            Metric::Measure(name) => Some(name.clone()),
            _ => None,
        };
        let mut client = self.client.borrow_mut();
        let st = client.prepare(&sql).map_err(self.pg(OP))?;
        let mut points = Vec::with_capacity(runs.len());
        for (seq, run) in runs.into_iter().rev() {
            let mut p: Params<'_> = vec![&seq, &query.domain, &query.case_id];
            if let Some(m) = &measure {
                p.push(m);
            }
            let values: Vec<f64> = client
                .query(&st, &p)
                .map_err(self.pg(OP))?
                .iter()
                .map(|r| r.get(0))
                .collect();
            points.push(TrendPoint {
                run_id: run.id,
                created_at: run.created_at,
                label: run.label,
                cases: values.len(),
                mean: sqlite_avg(&values),
            });
        }
        Ok(points)
    }

    /// Number of runs.
    pub fn count(&self) -> Result<usize, StoreError> {
        let n: i64 = self
            .client
            .borrow_mut()
            .query_one("SELECT count(*) FROM runs", &[])
            .map_err(self.pg("counting runs"))?
            .get(0);
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Checks the database and every run: the append-only triggers are all there and
    /// enabled, and each run's rows add up (as for the file).
    pub fn check(&self) -> Result<IntegrityReport, StoreError> {
        const OP: &str = "checking the history";
        let (triggers, disabled, incomplete_runs) = {
            let mut c = self.client.borrow_mut();
            let row = c
                .query_one(
                    "SELECT count(*), count(*) FILTER (WHERE t.tgenabled = 'D')
                     FROM pg_trigger t JOIN pg_class k ON k.oid = t.tgrelid
                     WHERE NOT t.tgisinternal AND t.tgname LIKE 'veredicto\\_%'
                       AND k.oid IN ('runs'::regclass, 'reports'::regclass, 'cases'::regclass,
                           'case_measures'::regclass, 'expected_chunks'::regclass,
                           'sealed'::regclass, 'audit_runs'::regclass,
                           'audit_records'::regclass, 'gate_acceptances'::regclass,
                           to_regclass('run_chunks'))",
                    &[],
                )
                .map_err(self.pg(OP))?;
            let (triggers, disabled): (i64, i64) = (row.get(0), row.get(1));
            let incomplete: Vec<String> = c
                .query(
                    "SELECT r.id FROM runs r
                     LEFT JOIN (SELECT run, count(*) AS n, sum(expected) AS x FROM cases GROUP BY run) c
                         ON c.run = r.seq
                     LEFT JOIN (SELECT run, count(*) AS n FROM expected_chunks GROUP BY run) x
                         ON x.run = r.seq
                     WHERE coalesce(c.n, 0) != r.cases
                        OR coalesce(c.x, 0) != coalesce(x.n, 0)
                        OR NOT EXISTS (SELECT 1 FROM reports WHERE run = r.seq)
                        OR NOT EXISTS (SELECT 1 FROM sealed WHERE run = r.seq)
                     ORDER BY r.seq",
                    &[],
                )
                .map_err(self.pg(OP))?
                .iter()
                .map(|r| r.get(0))
                .collect();
            (triggers, disabled, incomplete)
        };
        let mut integrity = Vec::new();
        let expected = EXPECTED_TRIGGERS + if self.has_run_chunks()? { 2 } else { 0 };
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
        let (audit_runs, altered_audit_runs) = self.check_audit_runs()?;
        let (gate_acceptances, unreadable_acceptances) = self.check_acceptances()?;
        let (run_chunks, chunk_snapshots, unreadable_run_chunks) = self.check_run_chunks()?;
        Ok(IntegrityReport {
            runs: self.count()?,
            integrity,
            foreign_key_violations: 0,
            incomplete_runs,
            audit_runs,
            altered_audit_runs,
            gate_acceptances,
            unreadable_acceptances,
            run_chunks,
            chunk_snapshots,
            unreadable_run_chunks,
        })
    }

    // ---- the chunks each run read ----

    fn has_run_chunks(&self) -> Result<bool, StoreError> {
        let row = self
            .client
            .borrow_mut()
            .query_one("SELECT to_regclass('run_chunks') IS NOT NULL", &[])
            .map_err(self.pg("reading the runs' chunks"))?;
        Ok(row.get(0))
    }

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
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(self.pg(OP))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&RUN_CHUNKS_LOCK])
            .map_err(self.pg(OP))?;
        let exists: bool = tx
            .query_one("SELECT to_regclass('run_chunks') IS NOT NULL", &[])
            .map_err(self.pg(OP))?
            .get(0);
        if !exists {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .map_err(self.pg(OP))?;
            tx.batch_execute(RUN_CHUNKS_TABLE)
                .and_then(|()| tx.batch_execute(&guards(&["run_chunks"])))
                .map_err(self.pg(OP))?;
        }
        let row = tx
            .query_one(
                "SELECT coalesce(max(seq), 0) + 1,
                        EXISTS (SELECT 1 FROM run_chunks WHERE fingerprint = $1 AND body IS NOT NULL)
                 FROM run_chunks",
                &[&fingerprint],
            )
            .map_err(self.pg(OP))?;
        let (seq, known): (i64, bool) = (row.get(0), row.get(1));
        let body = if known {
            None
        } else {
            Some(
                crate::run_chunks::compress(&raw).map_err(|err| StoreError::Invalid {
                    path: self.location.clone(),
                    field: "run_chunks",
                    message: format!("cannot compress: {err}"),
                })?,
            )
        };
        let encoding = body.as_ref().map(|_| crate::run_chunks::ENCODING);
        tx.execute(
            "INSERT INTO run_chunks (seq, run, fingerprint, chunks, encoding, body)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &seq,
                &run,
                &fingerprint,
                &n(snapshot.chunks.len()),
                &encoding,
                &body,
            ],
        )
        .map_err(self.pg(OP))?;
        tx.commit().map_err(self.pg(OP))?;
        Ok(body.map_or(0, |b| b.len()))
    }

    /// The chunks run `run` (a full ID) read, when they were kept.
    pub fn run_chunks(&self, run: &str) -> Result<Option<ChunkSnapshot>, StoreError> {
        const OP: &str = "reading the run's chunks";
        if !self.has_run_chunks()? {
            return Ok(None);
        }
        let row = self
            .client
            .borrow_mut()
            .query_opt(
                "SELECT r.fingerprint, b.encoding, b.body FROM run_chunks r
                 LEFT JOIN LATERAL (SELECT encoding, body FROM run_chunks
                                    WHERE fingerprint = r.fingerprint AND body IS NOT NULL
                                    ORDER BY seq LIMIT 1) b ON true
                 WHERE r.run = $1",
                &[&run],
            )
            .map_err(self.pg(OP))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let fingerprint: String = row.get(0);
        let encoding: Option<String> = row.get(1);
        let body: Option<Vec<u8>> = row.get(2);
        let (Some(encoding), Some(body)) = (encoding, body) else {
            return Err(self.corrupt(
                run,
                "chunk snapshot",
                format!("no stored snapshot has its fingerprint {fingerprint}"),
            ));
        };
        crate::run_chunks::read_body(&self.location, run, &fingerprint, &encoding, &body).map(Some)
    }

    /// IDs of the runs whose chunks were kept, in recording order.
    pub fn runs_with_chunks(&self) -> Result<Vec<String>, StoreError> {
        if !self.has_run_chunks()? {
            return Ok(Vec::new());
        }
        Ok(self
            .client
            .borrow_mut()
            .query("SELECT run FROM run_chunks ORDER BY seq", &[])
            .map_err(self.pg("reading the runs' chunks"))?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    fn check_run_chunks(&self) -> Result<(usize, usize, Vec<String>), StoreError> {
        const OP: &str = "checking the runs' chunks";
        if !self.has_run_chunks()? {
            return Ok((0, 0, Vec::new()));
        }
        let rows: Vec<(String, i64)> = self
            .client
            .borrow_mut()
            .query("SELECT run, chunks FROM run_chunks ORDER BY seq", &[])
            .map_err(self.pg(OP))?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let bodies: i64 = self
            .client
            .borrow_mut()
            .query_one(
                "SELECT count(*) FROM run_chunks WHERE body IS NOT NULL",
                &[],
            )
            .map_err(self.pg(OP))?
            .get(0);
        let mut bad = Vec::new();
        for (run, count) in &rows {
            match self.run_chunks(run) {
                Ok(Some(s)) if n(s.chunks.len()) == *count => {}
                _ => bad.push(run.clone()),
            }
        }
        Ok((rows.len(), usize::try_from(bodies).unwrap_or(0), bad))
    }

    // ---- ingestion gate acceptances ----

    /// Appends an acceptance in one transaction and returns its ID (new when `a.id` is
    /// empty, else `a.id`, which must sort after every recorded acceptance).
    pub fn record_acceptance(&self, a: &GateAcceptance) -> Result<String, StoreError> {
        const OP: &str = "recording a gate acceptance";
        let (created_ms, random, rejections) = prepare_acceptance(&self.location, a)?;
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(self.pg(OP))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&ACCEPTANCES_LOCK])
            .map_err(self.pg(OP))?;
        let row = tx
            .query_one(
                "SELECT coalesce(max(seq), 0) + 1, max(id) FROM gate_acceptances",
                &[],
            )
            .map_err(self.pg(OP))?;
        let seq: i64 = row.get(0);
        let newest: Option<String> = row.get(1);
        let new_id = if a.id.is_empty() {
            id::next(created_ms, random, newest.as_deref())
        } else {
            a.id.clone()
        };
        tx.execute(
            "INSERT INTO gate_acceptances (seq, id, created_at, created_ms, index_name, batch,
                 batch_fingerprint, reason, rejected, rejections, who, tool_version)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            &[
                &seq,
                &new_id,
                &a.created_at,
                &created_ms,
                &a.index,
                &a.batch,
                &a.batch_fingerprint,
                &a.reason,
                &n(a.rejected),
                &rejections,
                &a.who,
                &a.tool_version,
            ],
        )
        .map_err(self.pg(OP))?;
        tx.commit().map_err(self.pg(OP))?;
        Ok(new_id)
    }

    /// Acceptances, oldest first; only those of one batch when `batch_fingerprint` is given.
    pub fn acceptances(
        &self,
        batch_fingerprint: Option<&str>,
    ) -> Result<Vec<GateAcceptance>, StoreError> {
        const OP: &str = "reading gate acceptances";
        let rows = self
            .client
            .borrow_mut()
            .query(
                &format!(
                    "SELECT {ACCEPTANCE_COLUMNS} FROM gate_acceptances
                     WHERE $1::text IS NULL OR batch_fingerprint = $1 ORDER BY seq"
                ),
                &[&batch_fingerprint],
            )
            .map_err(self.pg(OP))?;
        rows.iter()
            .map(|r| {
                let id: String = r.get(0);
                let rejections = parse_rejections(&self.location, &id, r.get(7))?;
                Ok(GateAcceptance {
                    id,
                    created_at: r.get(1),
                    index: r.get(2),
                    batch: r.get(3),
                    batch_fingerprint: r.get(4),
                    reason: r.get(5),
                    rejected: usize::try_from(r.get::<_, i64>(6)).unwrap_or(0),
                    rejections,
                    who: r.get(8),
                    tool_version: r.get(9),
                })
            })
            .collect()
    }

    fn check_acceptances(&self) -> Result<(usize, Vec<String>), StoreError> {
        let rows: Vec<(String, i64, String)> = self
            .client
            .borrow_mut()
            .query(
                "SELECT id, rejected, rejections FROM gate_acceptances ORDER BY seq",
                &[],
            )
            .map_err(self.pg("checking gate acceptances"))?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        Ok((rows.len(), unreadable(&self.location, &rows)))
    }

    // ---- grounding audit runs ----

    /// Records an audit run in one transaction and returns its new ID.
    pub fn record_audit_run(
        &self,
        meta: &AuditRunMeta,
        cases: &[u8],
        notes: Option<&[u8]>,
        records: &[(AuditRecordKind, String)],
    ) -> Result<String, StoreError> {
        if !meta.id.is_empty() {
            return Err(StoreError::IdGiven {
                path: self.location.clone(),
                id: meta.id.clone(),
            });
        }
        self.insert_audit_run(meta, None, cases, notes, records)
    }

    /// Records an audit run copied from another history under its own ID.
    pub fn import_audit_run(
        &self,
        run: &AuditRun,
        records: &[(AuditRecordKind, String)],
    ) -> Result<(), StoreError> {
        self.insert_audit_run(
            &run.meta,
            Some(&run.meta.id),
            &run.cases,
            run.notes.as_deref(),
            records,
        )
        .map(drop)
    }

    fn insert_audit_run(
        &self,
        meta: &AuditRunMeta,
        fixed_id: Option<&str>,
        cases: &[u8],
        notes: Option<&[u8]>,
        records: &[(AuditRecordKind, String)],
    ) -> Result<String, StoreError> {
        const OP: &str = "recording an audit run";
        let (created_ms, random, counts) = prepare_audit(&self.location, meta)?;
        let replay_of = match &meta.replay_of {
            Some(r) => Some(self.resolve_audit(r)?),
            None => None,
        };
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(self.pg(OP))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&AUDIT_RUNS_LOCK])
            .map_err(self.pg(OP))?;
        let row = tx
            .query_one(
                "SELECT coalesce(max(seq), 0) + 1, max(id) FROM audit_runs",
                &[],
            )
            .map_err(self.pg(OP))?;
        let seq: i64 = row.get(0);
        let newest: Option<String> = row.get(1);
        let run_id = match fixed_id {
            Some(kept) => kept.to_owned(),
            None => id::next(created_ms, random, newest.as_deref()),
        };
        tx.execute(
            "INSERT INTO audit_runs (seq, id, created_at, created_ms, label, replay_of,
                 cases_name, cases_sha256, cases_body, notes, counts, tool_version,
                 git_revision)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            &[
                &seq,
                &run_id,
                &meta.created_at,
                &created_ms,
                &meta.label,
                &replay_of,
                &meta.cases_name,
                &sha256(cases),
                &cases,
                &notes,
                &counts,
                &meta.tool_version,
                &meta.git_revision,
            ],
        )
        .map_err(self.pg(OP))?;
        self.insert_records(&mut tx, seq, records)?;
        tx.commit().map_err(self.pg(OP))?;
        Ok(run_id)
    }

    fn insert_records(
        &self,
        tx: &mut Transaction<'_>,
        run: i64,
        records: &[(AuditRecordKind, String)],
    ) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let kinds: Vec<&str> = records.iter().map(|(k, _)| k.as_str()).collect();
        let bodies: Vec<&str> = records.iter().map(|(_, b)| b.as_str()).collect();
        tx.execute(
            "INSERT INTO audit_records (run, kind, body)
             SELECT $1, k, b FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS r (k, b, o)
             ORDER BY o",
            &[&run, &kinds, &bodies],
        )
        .map_err(self.pg("appending to an audit run"))?;
        Ok(())
    }

    /// Appends records to a recorded audit run, all in one transaction.
    pub fn append_audit_records(
        &self,
        run: &str,
        records: &[(AuditRecordKind, String)],
    ) -> Result<(), StoreError> {
        const OP: &str = "appending to an audit run";
        let id = self.resolve_audit(run)?;
        let seq = self.audit_seq(&id)?;
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(self.pg(OP))?;
        // Records of one run are appended one writer at a time, so they keep their order.
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&(SCHEMA_LOCK as i32), &(seq as i32)],
        )
        .map_err(self.pg(OP))?;
        self.insert_records(&mut tx, seq, records)?;
        tx.commit().map_err(self.pg(OP))
    }

    fn audit_seq(&self, id: &str) -> Result<i64, StoreError> {
        self.client
            .borrow_mut()
            .query_opt("SELECT seq FROM audit_runs WHERE id = $1", &[&id])
            .map_err(self.pg("reading an audit run"))?
            .map(|r| r.get(0))
            .ok_or_else(|| StoreError::AuditRunNotFound {
                path: self.location.clone(),
                query: id.to_owned(),
            })
    }

    fn audit_meta_row(&self, r: &Row) -> Result<AuditRunMeta, StoreError> {
        let id: String = r.get(1);
        let counts: String = r.get(7);
        let counts: AuditCounts = serde_json::from_str(&counts)
            .map_err(|err| self.corrupt(&id, "audit counts", err.to_string()))?;
        Ok(AuditRunMeta {
            id,
            created_at: r.get(2),
            label: r.get(3),
            replay_of: r.get(4),
            cases_name: r.get(5),
            cases_sha256: r.get(6),
            counts,
            tool_version: r.get(8),
            git_revision: r.get(9),
        })
    }

    /// The whole audit run, its case file checked against its SHA-256.
    pub fn audit_run(&self, id_or_prefix: &str) -> Result<AuditRun, StoreError> {
        const OP: &str = "reading an audit run";
        let id = self.resolve_audit(id_or_prefix)?;
        let row = self
            .client
            .borrow_mut()
            .query_one(
                &format!(
                    "SELECT {}, cases_body, notes FROM audit_runs WHERE id = $1",
                    crate::audit::META_COLUMNS
                ),
                &[&id],
            )
            .map_err(self.pg(OP))?;
        let meta = self.audit_meta_row(&row)?;
        let cases: Vec<u8> = row.get(10);
        let notes: Option<Vec<u8>> = row.get(11);
        let actual = sha256(&cases);
        if actual != meta.cases_sha256 {
            return Err(self.corrupt(
                &id,
                "case file",
                format!("SHA-256 is {actual}, recorded {}", meta.cases_sha256),
            ));
        }
        Ok(AuditRun { meta, cases, notes })
    }

    /// The records of `kind` appended to an audit run, in order.
    pub fn audit_records(
        &self,
        id_or_prefix: &str,
        kind: AuditRecordKind,
    ) -> Result<Vec<String>, StoreError> {
        let id = self.resolve_audit(id_or_prefix)?;
        let seq = self.audit_seq(&id)?;
        Ok(self
            .client
            .borrow_mut()
            .query(
                "SELECT body FROM audit_records WHERE run = $1 AND kind = $2 ORDER BY seq",
                &[&seq, &kind.as_str()],
            )
            .map_err(self.pg("reading audit records"))?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// Audit runs, newest first (at most `limit`).
    pub fn audit_runs(&self, limit: Option<usize>) -> Result<Vec<AuditRunSummary>, StoreError> {
        const OP: &str = "listing audit runs";
        let limit = limit.map_or_else(|| "ALL".to_owned(), |n| n.to_string());
        let rows = self
            .client
            .borrow_mut()
            .query(
                &format!(
                    "SELECT {},
                         (SELECT count(*) FROM audit_records WHERE run = a.seq AND kind = 'review'),
                         (SELECT count(*) FROM audit_records WHERE run = a.seq AND kind = 'suggestion')
                     FROM audit_runs a ORDER BY seq DESC LIMIT {limit}",
                    crate::audit::META_COLUMNS
                ),
                &[],
            )
            .map_err(self.pg(OP))?;
        rows.iter()
            .map(|r| {
                Ok(AuditRunSummary {
                    meta: self.audit_meta_row(r)?,
                    reviews: usize::try_from(r.get::<_, i64>(10)).unwrap_or(0),
                    suggestions: usize::try_from(r.get::<_, i64>(11)).unwrap_or(0),
                })
            })
            .collect()
    }

    fn check_audit_runs(&self) -> Result<(usize, Vec<String>), StoreError> {
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT id, cases_sha256, cases_body FROM audit_runs ORDER BY seq",
                &[],
            )
            .map_err(self.pg("checking audit runs"))?;
        let altered = rows
            .iter()
            .filter(|r| sha256(r.get::<_, &[u8]>(2)) != r.get::<_, &str>(1))
            .map(|r| r.get(0))
            .collect();
        Ok((rows.len(), altered))
    }

    /// IDs of the audit runs recorded from a case file with these exact bytes, newest first.
    pub fn audit_runs_of(&self, cases: &[u8]) -> Result<Vec<String>, StoreError> {
        Ok(self
            .client
            .borrow_mut()
            .query(
                "SELECT id FROM audit_runs WHERE cases_sha256 = $1 ORDER BY seq DESC",
                &[&sha256(cases)],
            )
            .map_err(self.pg("reading audit runs"))?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// The run an audit run is compared with by default: the run it replays, else the
    /// newest earlier run recorded from a case file of the same name.
    pub fn previous_audit_run(&self, id_or_prefix: &str) -> Result<Option<String>, StoreError> {
        let run = self.audit_run(id_or_prefix)?;
        if let Some(r) = run.meta.replay_of {
            return Ok(Some(r));
        }
        Ok(self
            .client
            .borrow_mut()
            .query_opt(
                "SELECT id FROM audit_runs WHERE id < $1 AND cases_name = $2
                 ORDER BY seq DESC LIMIT 1",
                &[&run.meta.id, &run.meta.cases_name],
            )
            .map_err(self.pg("reading an audit run"))?
            .map(|r| r.get(0)))
    }
}

/// `?` placeholders as `$1`, `$2`, … (the conditions hold no other `?`).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut i = 0;
    for ch in sql.chars() {
        if ch == '?' {
            i += 1;
            out.push_str(&format!("${i}"));
        } else {
            out.push(ch);
        }
    }
    out
}

/// The mean SQLite's `avg()` computes: a Kahan-Babuska-Neumaier sum divided by the count;
/// `None` for no values.
fn sqlite_avg(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let (mut sum, mut err) = (0.0f64, 0.0f64);
    for &r in values {
        let t = sum + r;
        if sum.abs() > r.abs() {
            err += (sum - t) + r;
        } else {
            err += (r - t) + sum;
        }
        sum = t;
    }
    if !err.is_nan() {
        sum += err;
    }
    #[allow(clippy::cast_precision_loss)]
    Some(sum / values.len() as f64)
}

/// `host:port` (or the socket directory) the configuration connects to.
fn describe_host(config: &Config) -> String {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => format!("{h}:{port}"),
        #[cfg(unix)]
        Some(postgres::config::Host::Unix(p)) => format!("{}:{port}", p.display()),
        None => format!("localhost:{port}"),
    }
}

/// The connection error's message, on one line, without credentials.
fn connect_message(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut t = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                let more = s.to_string();
                if !t.contains(&more) {
                    t.push_str(&format!(": {more}"));
                }
                source = s.source();
            }
            t
        }
    };
    veredicto_core::redact::escape_control(&veredicto_core::redact::secrets_in_text(&text))
}

/// The password from `PGPASSWORD`, else from the password file (`PGPASSFILE`, else
/// `~/.pgpass`): lines `host:port:database:user:password`, `*` matching anything, `\:` and
/// `\\` escaped.
fn password_from_env(config: &Config, host: &str, database: &str) -> Option<String> {
    if let Ok(pw) = std::env::var("PGPASSWORD") {
        return Some(pw);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let (h, port) = host.rsplit_once(':').unwrap_or((host, "5432"));
    let user = config.get_user().unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass(line);
            let [fh, fp, fd, fu, pw] = fields.as_slice() else {
                return None;
            };
            let ok = |f: &str, v: &str| f == "*" || f == v;
            (ok(fh, h) && ok(fp, port) && ok(fd, database) && ok(fu, user)).then(|| pw.clone())
        })
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    if let Some(f) = fields.last_mut() {
                        f.push(next);
                    }
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(
            numbered("WHERE a = ? AND b >= ? AND c < ?"),
            "WHERE a = $1 AND b >= $2 AND c < $3"
        );
    }

    #[test]
    fn pgpass_lines_split_with_escapes() {
        assert_eq!(
            split_pgpass(r"db\:host:5432:*:ann:p\:w\\d"),
            ["db:host", "5432", "*", "ann", r"p:w\d"]
        );
    }

    #[test]
    fn the_mean_is_sqlites() {
        assert_eq!(sqlite_avg(&[]), None);
        assert_eq!(sqlite_avg(&[1.0, 2.0]), Some(1.5));
        // Compensated: 0.1 ten times sums to exactly 1.
        assert_eq!(sqlite_avg(&[0.1; 10]), Some(0.1));
    }
}
