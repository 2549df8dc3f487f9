//! The two backends the store's tests run against: an SQLite file in a temporary folder, and
//! a database of its own on the PostgreSQL server named by `VEREDICTO_TEST_POSTGRES`
//! (created for the test, dropped after it). Without that variable the PostgreSQL tests fail:
//! `scripts/postgres.sh` starts a server and exports it.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use veredicto_store::History;

/// Which backend a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The server URL of the PostgreSQL tests (a superuser's, for creating databases).
pub fn server() -> String {
    std::env::var("VEREDICTO_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "VEREDICTO_TEST_POSTGRES is not set: the PostgreSQL tests need a server; start one \
             with `scripts/postgres.sh` (it exports VEREDICTO_TEST_POSTGRES), or set it to \
             postgres://user@host:port/postgres"
        )
    })
}

/// `url` with its database replaced by `db`.
pub fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[after_scheme..]
        .find('/')
        .map_or(base.len(), |i| after_scheme + i);
    let mut out = format!("{}/{db}", &base[..host_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// A fresh, empty history.
pub struct Fixture {
    /// What `History::open_spec` takes: a file path or a URL.
    pub spec: String,
    pub backend: Backend,
    dir: Option<tempfile::TempDir>,
    database: Option<String>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A database name no other test (or test process) uses.
pub fn unique_name(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs SQL on the server as the test superuser, in the `postgres` database.
pub fn admin(sql: &str) {
    let mut c = postgres::Client::connect(&server(), postgres::NoTls)
        .unwrap_or_else(|e| panic!("cannot connect to VEREDICTO_TEST_POSTGRES: {e}"));
    c.batch_execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

impl Fixture {
    pub fn new(backend: Backend) -> Fixture {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("tempdir");
                let spec = dir
                    .path()
                    .join("project/.veredicto/history.db")
                    .display()
                    .to_string();
                Fixture {
                    spec,
                    backend,
                    dir: Some(dir),
                    database: None,
                }
            }
            Backend::Postgres => {
                let name = unique_name("vtest");
                admin(&format!("CREATE DATABASE {name}"));
                Fixture {
                    spec: with_database(&server(), &name),
                    backend,
                    dir: None,
                    database: Some(name),
                }
            }
        }
    }

    /// Opens (creating) the history.
    pub fn open(&self) -> History {
        History::open_spec(&self.spec).expect("opens the history")
    }

    /// How errors name the history (a URL without credentials).
    pub fn location(&self) -> String {
        veredicto_core::redact::url(&self.spec)
    }

    /// A raw connection for SQL that the library would never run.
    pub fn raw(&self) -> Raw {
        match self.backend {
            Backend::Sqlite => Raw::Sqlite(rusqlite::Connection::open(&self.spec).expect("raw")),
            Backend::Postgres => {
                Raw::Postgres(postgres::Client::connect(&self.spec, postgres::NoTls).expect("raw"))
            }
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(name) = &self.database {
            if let Ok(mut c) = postgres::Client::connect(&server(), postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            }
        }
    }
}

/// A value read by [`Raw::query`].
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl V {
    pub fn int(&self) -> i64 {
        match self {
            V::Int(i) => *i,
            other => panic!("not an integer: {other:?}"),
        }
    }
}

pub enum Raw {
    Sqlite(rusqlite::Connection),
    Postgres(postgres::Client),
}

impl Raw {
    pub fn exec(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Raw::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            Raw::Postgres(c) => c.batch_execute(sql).map_err(|e| {
                e.as_db_error()
                    .map_or_else(|| e.to_string(), |d| d.message().to_owned())
            }),
        }
    }

    /// Rows of a query without parameters, as integers, reals, text or NULL.
    pub fn query(&mut self, sql: &str) -> Vec<Vec<V>> {
        match self {
            Raw::Sqlite(c) => {
                let mut st = c.prepare(sql).expect("prepares");
                let n = st.column_count();
                st.query_map([], |r| {
                    (0..n)
                        .map(|i| {
                            Ok(match r.get::<_, rusqlite::types::Value>(i)? {
                                rusqlite::types::Value::Null => V::Null,
                                rusqlite::types::Value::Integer(x) => V::Int(x),
                                rusqlite::types::Value::Real(x) => V::Real(x),
                                rusqlite::types::Value::Text(x) => V::Text(x),
                                rusqlite::types::Value::Blob(_) => V::Null,
                            })
                        })
                        .collect()
                })
                .expect("queries")
                .collect::<Result<_, _>>()
                .expect("rows")
            }
            Raw::Postgres(c) => {
                use postgres::types::Type;
                c.query(sql, &[])
                    .expect("queries")
                    .iter()
                    .map(|r| {
                        r.columns()
                            .iter()
                            .enumerate()
                            .map(|(i, col)| match *col.type_() {
                                Type::INT8 => r.get::<_, Option<i64>>(i).map_or(V::Null, V::Int),
                                Type::INT4 => r
                                    .get::<_, Option<i32>>(i)
                                    .map_or(V::Null, |x| V::Int(x.into())),
                                Type::FLOAT8 => r.get::<_, Option<f64>>(i).map_or(V::Null, V::Real),
                                _ => r.get::<_, Option<String>>(i).map_or(V::Null, V::Text),
                            })
                            .collect()
                    })
                    .collect()
            }
        }
    }
}

/// Generates a `sqlite` and a `postgres` test for each `fn name(backend: Backend)`.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn sqlite() {
                    super::$name(super::common::Backend::Sqlite)
                }
                #[test]
                fn postgres() {
                    super::$name(super::common::Backend::Postgres)
                }
            }
        )*
    };
}
