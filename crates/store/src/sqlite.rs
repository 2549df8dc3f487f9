//! The SQLite backend of the run history: one file, opened with WAL and `synchronous =
//! FULL`, its schema created or upgraded on open (`schema.rs`). It holds only what is
//! SQLite's: opening the file, the schema, `BEGIN IMMEDIATE` transactions, `PRAGMA
//! integrity_check`, and the mapping of SQLite values; the history's logic is in `store.rs`.

use crate::backend::{Backend, Col, Conn, Lock, Row, Value};
use crate::{run_chunks, schema, seal, StoreError};
use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another process's write transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The SQLite backend of a run history: one SQLite connection (`Send`, not `Sync`). Threads
/// and processes that record at the same time each open their own.
#[derive(Debug)]
pub struct SqliteHistory {
    pub(crate) conn: Connection,
    path: PathBuf,
    journal_mode: String,
}

impl SqliteHistory {
    /// Opens the history at `path`, creating the file, its parent directories and the schema
    /// when absent. Refuses a file made by a newer veredicto or by another program.
    pub fn open(path: &Path) -> Result<SqliteHistory, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|error| StoreError::CreateDir {
                path: dir.to_owned(),
                error,
            })?;
        }
        Self::open_with(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }

    /// Opens an existing history; [`StoreError::Missing`] when there is no file (for
    /// commands that only read, so that a mistyped path is not silently created).
    pub fn open_existing(path: &Path) -> Result<SqliteHistory, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_owned(),
            });
        }
        Self::open_with(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
    }

    /// Opens an existing history for reading only (`runs list`, `compare`, `report`): works
    /// in a read-only folder or on a read-only file, changes nothing (no journal switch, no
    /// schema upgrade), and any write through it fails. [`StoreError::Missing`] when there is
    /// no file or the file holds no history yet.
    pub fn open_read_only(path: &Path) -> Result<SqliteHistory, StoreError> {
        if !path.is_file() {
            return Err(StoreError::Missing {
                path: path.to_owned(),
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        match Self::open_with(path, flags) {
            // A WAL database needs its `-shm` (and `-wal`) files; in a folder where they
            // cannot be created, read the file as immutable: nobody can be writing to it
            // through SQLite there, since a writer would need those files too.
            Err(StoreError::Sqlite { error, .. })
                if matches!(
                    error.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
                ) =>
            {
                Self::open_with(path, flags | OpenFlags::SQLITE_OPEN_URI)
            }
            other => other,
        }
    }

    /// Opens `path` with `flags`; with `SQLITE_OPEN_URI` the file is opened as
    /// `file:PATH?mode=ro&immutable=1`.
    fn open_with(path: &Path, flags: OpenFlags) -> Result<SqliteHistory, StoreError> {
        let read_only = flags.contains(OpenFlags::SQLITE_OPEN_READ_ONLY);
        let sql = |operation| {
            let path = path.to_owned();
            move |source| sqlite_error(path, operation, source)
        };
        let conn = if flags.contains(OpenFlags::SQLITE_OPEN_URI) {
            Connection::open_with_flags(immutable_uri(path), flags)
        } else {
            Connection::open_with_flags(path, flags)
        }
        .map_err(sql("opening the database"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(sql("setting the busy timeout"))?;
        // Refuse foreign files before changing anything in them.
        let (application_id, user_version, objects) =
            read_header(&conn).map_err(sql("reading the schema version"))?;
        check_header(path, application_id, user_version)?;
        if user_version == 0 && objects > 0 {
            return Err(StoreError::NotAHistory {
                path: path.to_owned(),
                application_id,
                user_version,
            });
        }
        if read_only {
            if user_version == 0 {
                return Err(StoreError::Missing {
                    path: path.to_owned(),
                });
            }
            let journal_mode: String = conn
                .pragma_query_value(None, "journal_mode", |row| row.get(0))
                .map_err(sql("reading the journal mode"))?;
            conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA query_only = ON;")
                .map_err(sql("configuring the connection"))?;
            conn.set_prepared_statement_cache_capacity(64);
            return Ok(SqliteHistory {
                conn,
                path: path.to_owned(),
                journal_mode,
            });
        }
        // Switching a new file to WAL needs an exclusive lock; when another process is
        // creating the same history at this moment SQLite can answer BUSY at once (without
        // its busy handler, to avoid a deadlock), so retry until the busy timeout.
        let started = std::time::Instant::now();
        let journal_mode: String = loop {
            match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)) {
                Err(e)
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(Duration::from_millis(15));
                }
                other => break other.map_err(sql("switching to WAL"))?,
            }
        };
        conn.execute_batch(
            "PRAGMA synchronous = FULL;
             PRAGMA foreign_keys = ON;
             PRAGMA recursive_triggers = ON;",
        )
        .map_err(sql("configuring the connection"))?;
        conn.set_prepared_statement_cache_capacity(64);
        let history = SqliteHistory {
            conn,
            path: path.to_owned(),
            journal_mode,
        };
        if user_version < schema::SCHEMA_VERSION {
            history.create_schema()?;
        }
        Ok(history)
    }

    /// Creates the schema (or upgrades an older file) in one transaction, unless another
    /// process did meanwhile.
    fn create_schema(&self) -> Result<(), StoreError> {
        const OP: &str = "creating the schema";
        let tx = self.begin(OP)?;
        let (application_id, user_version, objects) =
            read_header(&tx).map_err(|e| self.sql(OP, e))?;
        if user_version == 0 {
            if objects > 0 || application_id != 0 {
                return Err(StoreError::NotAHistory {
                    path: self.path.clone(),
                    application_id,
                    user_version,
                });
            }
            tx.execute_batch(schema::SCHEMA_V1)
                .and_then(|()| tx.execute_batch(&schema::triggers()))
                .and_then(|()| tx.execute_batch(schema::SCHEMA_V2_AUDIT))
                .and_then(|()| tx.execute_batch(&schema::audit_triggers()))
                .and_then(|()| tx.execute_batch(schema::SCHEMA_V3_ACCEPTANCES))
                .and_then(|()| tx.execute_batch(&schema::acceptance_triggers()))
                .and_then(|()| tx.execute_batch(run_chunks::SQLITE_TABLE))
                .and_then(|()| tx.execute_batch(&schema::run_chunks_triggers()))
                .and_then(|()| tx.execute_batch(schema::SCHEMA_V4_CHAIN))
                .and_then(|()| tx.execute_batch(&schema::chain_triggers()))
                .and_then(|()| {
                    tx.execute_batch(&format!(
                        "PRAGMA application_id = {}; PRAGMA user_version = {};",
                        schema::APPLICATION_ID,
                        schema::SCHEMA_VERSION
                    ))
                })
                .map_err(|e| self.sql(OP, e))?;
        } else if user_version < schema::SCHEMA_VERSION {
            // Upgrade an older history: add the tables of each later version (audit runs
            // from 2, gate acceptances and chunk lists from 3, seals from 4), then seal
            // every item already there; nothing else changes.
            let mut sql = String::new();
            if user_version < 2 {
                sql.push_str(schema::SCHEMA_V2_AUDIT);
                sql.push_str(&schema::audit_triggers());
            }
            if user_version < 3 {
                sql.push_str(schema::SCHEMA_V3_ACCEPTANCES);
                sql.push_str(&schema::acceptance_triggers());
            }
            tx.execute_batch(&sql).map_err(|e| self.sql(OP, e))?;
            if !self.has_table("run_chunks")? {
                self.create_run_chunks(OP)?;
            }
            tx.execute_batch(schema::SCHEMA_V4_CHAIN)
                .and_then(|()| tx.execute_batch(&schema::chain_triggers()))
                .map_err(|e| self.sql(OP, e))?;
            seal::seal_at_upgrade(self)?;
            tx.execute_batch(&format!(
                "PRAGMA user_version = {};",
                schema::SCHEMA_VERSION
            ))
            .map_err(|e| self.sql(OP, e))?;
        } else {
            check_header(&self.path, application_id, user_version)?;
        }
        tx.commit().map_err(|e| self.sql(OP, e))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `BEGIN IMMEDIATE`: takes the write lock up front, so that the busy timeout applies
    /// (a deferred transaction that upgrades to a writer can fail at once with BUSY).
    fn begin(&self, operation: &'static str) -> Result<rusqlite::Transaction<'_>, StoreError> {
        rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.sql(operation, e))
    }

    fn sql(&self, operation: &'static str, source: rusqlite::Error) -> StoreError {
        sqlite_error(self.path.clone(), operation, source)
    }
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Integer(*v),
            Value::Real(v) => ValueRef::Real(*v),
            Value::Text(v) => ValueRef::Text(v.as_bytes()),
            Value::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

fn value_of(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(r) => Value::Real(r),
        // Text the store did not write (not UTF-8) reads as bytes, and so as the wrong type.
        ValueRef::Text(t) => match std::str::from_utf8(t) {
            Ok(t) => Value::Text(t.to_owned()),
            Err(_) => Value::Blob(t.to_vec()),
        },
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

impl Conn for SqliteHistory {
    fn location(&self) -> &Path {
        &self.path
    }

    fn query(&self, op: &'static str, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError> {
        let run = || -> rusqlite::Result<Vec<Row>> {
            let mut st = self.conn.prepare_cached(sql)?;
            let n = st.column_count();
            let mut rows = st.query(rusqlite::params_from_iter(params))?;
            let mut out = Vec::new();
            while let Some(r) = rows.next()? {
                out.push(Row((0..n)
                    .map(|i| r.get_ref(i).map(value_of))
                    .collect::<Result<_, _>>()?));
            }
            Ok(out)
        };
        run().map_err(|e| self.sql(op, e))
    }

    fn execute(&self, op: &'static str, sql: &str, params: &[Value]) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut st| st.execute(rusqlite::params_from_iter(params)))
            .map(drop)
            .map_err(|e| self.sql(op, e))
    }

    fn insert_rows(
        &self,
        op: &'static str,
        table: &str,
        columns: &[(&str, Col)],
        rows: &[Vec<Value>],
    ) -> Result<(), StoreError> {
        let names: Vec<&str> = columns.iter().map(|(c, _)| *c).collect();
        let slots: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({})",
            names.join(", "),
            slots.join(", ")
        );
        let mut st = self
            .conn
            .prepare_cached(&sql)
            .map_err(|e| self.sql(op, e))?;
        for row in rows {
            st.execute(rusqlite::params_from_iter(row))
                .map_err(|e| self.sql(op, e))?;
        }
        Ok(())
    }

    fn has_table(&self, table: &str) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1")
            .and_then(|mut st| st.query_row([table], |r| r.get::<_, i64>(0)))
            .map(|n| n > 0)
            .map_err(|e| self.sql("reading the schema", e))
    }

    fn lock(&self, _op: &'static str, _lock: Lock) -> Result<(), StoreError> {
        // `BEGIN IMMEDIATE` holds the file's write lock already.
        Ok(())
    }

    fn create_run_chunks(&self, op: &'static str) -> Result<(), StoreError> {
        self.conn
            .execute_batch(run_chunks::SQLITE_TABLE)
            .and_then(|()| self.conn.execute_batch(&schema::run_chunks_triggers()))
            .map_err(|e| self.sql(op, e))
    }
}

impl Backend for SqliteHistory {
    fn journal_mode(&self) -> &str {
        &self.journal_mode
    }

    fn write<T>(
        &self,
        op: &'static str,
        _lock: Lock,
        f: impl FnOnce(&dyn Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let tx = self.begin(op)?;
        let out = f(self)?;
        tx.commit().map_err(|e| self.sql(op, e))?;
        Ok(out)
    }

    fn check_database(&self) -> Result<(Vec<String>, usize), StoreError> {
        const OP: &str = "checking the history";
        let integrity: Vec<String> = self
            .conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| self.sql(OP, e))?;
        let mut violations = 0;
        self.conn
            .prepare("PRAGMA foreign_key_check")
            .and_then(|mut st| {
                let mut rows = st.query([])?;
                while rows.next()?.is_some() {
                    violations += 1;
                }
                Ok(())
            })
            .map_err(|e| self.sql(OP, e))?;
        Ok((integrity, violations))
    }
}

/// `file:PATH?mode=ro&immutable=1`, with the characters that end or escape a URI path
/// (`%`, `?`, `#`) percent-encoded.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    uri
}

fn sqlite_error(path: PathBuf, operation: &'static str, source: rusqlite::Error) -> StoreError {
    if source.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) {
        return StoreError::Locked {
            path,
            operation,
            waited_ms: u64::try_from(BUSY_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
        };
    }
    StoreError::Sqlite {
        path,
        operation,
        error: source,
    }
}

/// `(application_id, user_version, schema objects)`, read in one statement so that the three
/// come from the same snapshot (another process may be creating the schema meanwhile).
fn read_header(conn: &Connection) -> rusqlite::Result<(i64, i64, i64)> {
    conn.query_row(
        "SELECT (SELECT application_id FROM pragma_application_id()),
                (SELECT user_version FROM pragma_user_version()),
                (SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%')",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

/// Accepts a new file (both 0) or a veredicto history this build understands.
fn check_header(path: &Path, application_id: i64, user_version: i64) -> Result<(), StoreError> {
    match (application_id, user_version) {
        (0, 0) => Ok(()),
        (schema::APPLICATION_ID, 1..=schema::SCHEMA_VERSION) => Ok(()),
        (schema::APPLICATION_ID, v) if v > schema::SCHEMA_VERSION => Err(StoreError::NewerSchema {
            path: path.to_owned(),
            found: v,
            supported: schema::SCHEMA_VERSION,
        }),
        _ => Err(StoreError::NotAHistory {
            path: path.to_owned(),
            application_id,
            user_version,
        }),
    }
}
