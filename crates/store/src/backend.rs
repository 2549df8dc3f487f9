//! The seam under the store's logic: what a database must offer so that the history's rules
//! (run IDs, what is written in which transaction, what a read returns, what `check` looks
//! at) are written once, in `store.rs`, `audit.rs`, `acceptance.rs` and `run_chunks.rs`.
//!
//! A backend holds only its SQL dialect, its connection and transactions, and the mapping of
//! its rows to [`Value`]s: the SQLite file (`sqlite.rs`) and PostgreSQL (`pg.rs`). Shared SQL
//! is written once with numbered placeholders (`?1`, `?2`, …), which SQLite reads as they are
//! and PostgreSQL as `$1`, `$2`, …; a parameter tested for NULL is written `CAST(?n AS TEXT)`
//! so that PostgreSQL knows its type. Integers are 8 bytes, reals 8-byte IEEE, booleans
//! integers 0 and 1, in both.

use crate::StoreError;
use std::path::Path;

/// A value bound to a statement or read from a row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::Real(_) => "a real",
            Value::Text(_) => "text",
            Value::Blob(_) => "a blob",
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(i64::from(v))
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(i64::from(v))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Text(v.clone())
    }
}

impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Value {
        Value::Blob(v.to_vec())
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Blob(v)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// `[Value; N]` from anything convertible, for statement parameters.
macro_rules! values {
    ($($v:expr),* $(,)?) => {
        [$($crate::backend::Value::from($v)),*]
    };
}
pub(crate) use values;

/// What a column of a batch insert holds (PostgreSQL sends each column as one typed array).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Col {
    Int,
    Real,
    Text,
}

/// A row read from the database.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row(pub(crate) Vec<Value>);

/// A column whose value is not of the type the store wrote there.
#[derive(Debug)]
pub(crate) struct BadValue(String);

impl BadValue {
    pub(crate) fn new(message: String) -> BadValue {
        BadValue(message)
    }
}

impl Row {
    fn at(&self, i: usize) -> &Value {
        self.0.get(i).unwrap_or(&Value::Null)
    }

    fn bad(&self, i: usize, wanted: &str) -> BadValue {
        BadValue(format!(
            "column {} holds {}, not {wanted}",
            i + 1,
            self.at(i).kind()
        ))
    }

    pub(crate) fn int(&self, i: usize) -> Result<i64, BadValue> {
        self.opt_int(i)?.ok_or_else(|| self.bad(i, "an integer"))
    }

    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>, BadValue> {
        match self.at(i) {
            Value::Null => Ok(None),
            Value::Int(v) => Ok(Some(*v)),
            _ => Err(self.bad(i, "an integer")),
        }
    }

    /// A count or size: a negative value reads as 0.
    pub(crate) fn count(&self, i: usize) -> Result<usize, BadValue> {
        Ok(usize::try_from(self.int(i)?).unwrap_or(0))
    }

    pub(crate) fn real(&self, i: usize) -> Result<f64, BadValue> {
        self.opt_real(i)?.ok_or_else(|| self.bad(i, "a real"))
    }

    /// A real, or an integer read as one (an integer column averaged in a trend).
    pub(crate) fn opt_real(&self, i: usize) -> Result<Option<f64>, BadValue> {
        match self.at(i) {
            Value::Null => Ok(None),
            Value::Real(v) => Ok(Some(*v)),
            #[allow(clippy::cast_precision_loss)]
            Value::Int(v) => Ok(Some(*v as f64)),
            _ => Err(self.bad(i, "a real")),
        }
    }

    pub(crate) fn text(&self, i: usize) -> Result<String, BadValue> {
        self.opt_text(i)?.ok_or_else(|| self.bad(i, "text"))
    }

    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, BadValue> {
        match self.at(i) {
            Value::Null => Ok(None),
            Value::Text(v) => Ok(Some(v.clone())),
            _ => Err(self.bad(i, "text")),
        }
    }

    pub(crate) fn blob(&self, i: usize) -> Result<Vec<u8>, BadValue> {
        self.opt_blob(i)?.ok_or_else(|| self.bad(i, "a blob"))
    }

    pub(crate) fn opt_blob(&self, i: usize) -> Result<Option<Vec<u8>>, BadValue> {
        match self.at(i) {
            Value::Null => Ok(None),
            Value::Blob(v) => Ok(Some(v.clone())),
            _ => Err(self.bad(i, "a blob")),
        }
    }
}

/// An advisory lock a writer takes (PostgreSQL; a SQLite write transaction already excludes
/// every other writer). Held to the end of the transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    /// Writers of exam runs.
    Runs,
    /// Writers of audit runs.
    AuditRuns,
    /// Writers of the records of one audit run (its `seq`), so that they keep their order.
    AuditRecords(i64),
    /// Writers of gate acceptances.
    Acceptances,
    /// Writers of the runs' chunk lists.
    RunChunks,
    /// Writers of seals: every writer, last, so that the chain has one order.
    Chain,
}

/// A connection, or an open write transaction: statements in the shared SQL.
pub(crate) trait Conn {
    /// The history, for messages: a file path or the URL without credentials.
    fn location(&self) -> &Path;
    /// The rows of a query, every column mapped to a [`Value`].
    fn query(&self, op: &'static str, sql: &str, params: &[Value]) -> Result<Vec<Row>, StoreError>;
    /// Runs a statement that returns no rows.
    fn execute(&self, op: &'static str, sql: &str, params: &[Value]) -> Result<(), StoreError>;
    /// Inserts `rows` into `table`, in order: SQLite one prepared statement per row,
    /// PostgreSQL one statement over typed arrays (its append-only guard runs once per
    /// statement).
    fn insert_rows(
        &self,
        op: &'static str,
        table: &str,
        columns: &[(&str, Col)],
        rows: &[Vec<Value>],
    ) -> Result<(), StoreError>;
    /// Whether the history has this table (an older schema opened read-only may lack one).
    fn has_table(&self, table: &str) -> Result<bool, StoreError>;
    /// Takes an advisory lock for the rest of the transaction (PostgreSQL).
    fn lock(&self, op: &'static str, lock: Lock) -> Result<(), StoreError>;
    /// Creates the `run_chunks` table and its guards, in the open transaction: a version-3
    /// history written before the table existed gets it on its first chunk list.
    fn create_run_chunks(&self, op: &'static str) -> Result<(), StoreError>;
}

/// A history database: reads through [`Conn`], writes in one transaction each.
pub(crate) trait Backend: Conn + Send {
    /// `wal` or SQLite's fallback journal for a file; `postgresql` for a server.
    fn journal_mode(&self) -> &str;
    /// Runs `f` in one write transaction holding `lock`: all of it is written, or (when `f`
    /// or the commit fails) none of it.
    fn write<T>(
        &self,
        op: &'static str,
        lock: Lock,
        f: impl FnOnce(&dyn Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError>;
    /// The database's own soundness, for `check`: `(findings, foreign-key violations)`,
    /// findings `["ok"]` when sound (SQLite's `integrity_check`; PostgreSQL: the append-only
    /// triggers present and enabled).
    fn check_database(&self) -> Result<(Vec<String>, usize), StoreError>;
}

/// Reading rows into values, on any [`Conn`].
pub(crate) trait ConnExt: Conn {
    /// Each row mapped by `f`; a column of the wrong type is a [`StoreError::BadValue`].
    fn rows<T>(
        &self,
        op: &'static str,
        sql: &str,
        params: &[Value],
        f: impl Fn(&Row) -> Result<T, BadValue>,
    ) -> Result<Vec<T>, StoreError> {
        self.query(op, sql, params)?
            .iter()
            .map(|r| f(r).map_err(|e| self.bad_value(op, e)))
            .collect()
    }

    /// The first row mapped by `f`, if any.
    fn first<T>(
        &self,
        op: &'static str,
        sql: &str,
        params: &[Value],
        f: impl Fn(&Row) -> Result<T, BadValue>,
    ) -> Result<Option<T>, StoreError> {
        Ok(self.rows(op, sql, params, f)?.into_iter().next())
    }

    /// The one value of a query that always returns a row (`count(*)`, `max(…)`).
    fn one<T>(
        &self,
        op: &'static str,
        sql: &str,
        params: &[Value],
        f: impl Fn(&Row) -> Result<T, BadValue>,
    ) -> Result<T, StoreError> {
        self.first(op, sql, params, f)?
            .ok_or_else(|| self.bad_value(op, BadValue("the query returned no row".into())))
    }

    fn bad_value(&self, op: &'static str, e: BadValue) -> StoreError {
        StoreError::BadValue {
            path: self.location().to_owned(),
            operation: op,
            message: e.0,
        }
    }

    fn corrupt(&self, run: &str, what: &'static str, message: String) -> StoreError {
        StoreError::Corrupt {
            path: self.location().to_owned(),
            run: run.to_owned(),
            what,
            message,
        }
    }
}

impl<C: Conn + ?Sized> ConnExt for C {}
