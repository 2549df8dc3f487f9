//! TLS to a real PostgreSQL with `ssl=on` and a certificate authority made for the test
//! run (`scripts/postgres.sh start --tls DIR`): the server's certificate names `localhost`
//! only, `other-ca.crt` is an authority that signed nothing here.

use std::path::PathBuf;
use std::time::Duration;

use veredicto_net::{PgConnectError, PgEnv, PgTarget};

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: start the servers with scripts/test.sh, or by hand: \
             `export VEREDICTO_TEST_POSTGRES=$(scripts/postgres.sh start)`, then \
             `export VEREDICTO_TEST_POSTGRES_TLS_DIR=/tmp/pg-tls VEREDICTO_TEST_POSTGRES_TLS=$(VEREDICTO_PG_STATE=/tmp/pg-tls/state scripts/postgres.sh start --tls /tmp/pg-tls)`"
        )
    })
}

/// The folder with ca.crt, other-ca.crt, server.crt and server.key.
pub fn tls_dir() -> PathBuf {
    PathBuf::from(var("VEREDICTO_TEST_POSTGRES_TLS_DIR"))
}

/// The TLS server's port.
fn port() -> u16 {
    let url = var("VEREDICTO_TEST_POSTGRES_TLS");
    url.rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in VEREDICTO_TEST_POSTGRES_TLS={url}"))
}

/// An environment without ~/.postgresql/root.crt or ~/.pgpass.
fn env() -> (tempfile::TempDir, PgEnv) {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = PgEnv::empty().with("HOME", dir.path().to_string_lossy());
    (dir, env)
}

/// Connects to `text` and says whether the session is encrypted.
fn connect(text: &str) -> Result<bool, PgConnectError> {
    let (_home, env) = env();
    let target = PgTarget::parse(text, &env).expect("a valid target");
    let mut client = target.connect(target.config(Duration::from_secs(10)))?;
    let row = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .expect("pg_stat_ssl");
    Ok(row.get(0))
}

fn ca(name: &str) -> String {
    tls_dir().join(name).display().to_string()
}

#[test]
fn verify_full_accepts_the_host_name_in_the_certificate() {
    let url = format!(
        "postgres://veredicto@localhost:{}/veredicto?sslmode=verify-full&sslrootcert={}",
        port(),
        ca("ca.crt")
    );
    assert!(connect(&url).expect("connects"), "encrypted");
}

#[test]
fn verify_full_refuses_a_host_name_the_certificate_does_not_name() {
    // The certificate is for `localhost`; 127.0.0.1 is the same server under another name.
    let url = format!(
        "postgres://veredicto@127.0.0.1:{}/veredicto?sslmode=verify-full&sslrootcert={}",
        port(),
        ca("ca.crt")
    );
    let err = connect(&url).expect_err("wrong name");
    let msg = err.to_string();
    assert!(
        msg.contains("not valid for the host name") && msg.contains("127.0.0.1"),
        "{msg}"
    );
    assert!(err.server_answered(), "not worth retrying: {msg}");
}

#[test]
fn verify_ca_accepts_the_right_authority_under_any_host_name() {
    let url = format!(
        "host=127.0.0.1 port={} user=veredicto dbname=veredicto sslmode=verify-ca sslrootcert={}",
        port(),
        ca("ca.crt")
    );
    assert!(connect(&url).expect("connects"), "encrypted");
}

#[test]
fn a_wrong_authority_is_refused_with_a_clear_message() {
    for mode in ["verify-ca", "verify-full"] {
        let url = format!(
            "postgres://veredicto@localhost:{}/veredicto?sslmode={mode}&sslrootcert={}",
            port(),
            ca("other-ca.crt")
        );
        let msg = connect(&url).expect_err("wrong CA").to_string();
        assert!(
            msg.contains("not signed by a trusted root certificate")
                && msg.contains(&format!("sslmode={mode}")),
            "{msg}"
        );
    }
}

#[test]
fn require_encrypts_without_checking_the_certificate() {
    // No root certificate anywhere: libpq's `require` checks nothing and still encrypts.
    let url = format!(
        "postgres://veredicto@127.0.0.1:{}/veredicto?sslmode=require",
        port()
    );
    assert!(connect(&url).expect("connects"), "encrypted");
    // With a root certificate given, `require` checks the chain (as libpq does).
    let url = format!("{url}&sslrootcert={}", ca("other-ca.crt"));
    assert!(connect(&url).is_err(), "the chain was checked");
}

#[test]
fn require_refuses_a_server_without_tls() {
    let plain = var("VEREDICTO_TEST_POSTGRES");
    let sep = if plain.contains('?') { '&' } else { '?' };
    let err = connect(&format!("{plain}{sep}sslmode=require")).expect_err("no TLS there");
    let msg = err.to_string();
    assert!(
        msg.contains("does not accept TLS") && msg.contains("sslmode=require"),
        "{msg}"
    );
    // `prefer`, the default, falls back to plain there.
    assert!(!connect(&plain).expect("prefer connects"), "plain");
}

#[test]
fn disable_connects_without_tls_and_prefer_uses_tls_when_offered() {
    let base = format!("postgres://veredicto@127.0.0.1:{}/veredicto", port());
    assert!(
        !connect(&format!("{base}?sslmode=disable")).expect("plain"),
        "plain"
    );
    assert!(
        connect(&base).expect("prefer"),
        "prefer takes TLS when offered"
    );
}

#[test]
fn allow_tries_plain_then_tls_when_the_server_wants_tls() {
    // pg_hba.conf refuses plain connections for this role.
    let base = format!(
        "postgres://veredicto_tls_only@127.0.0.1:{}/veredicto",
        port()
    );
    let msg = connect(&format!("{base}?sslmode=disable"))
        .expect_err("plain refused")
        .to_string();
    assert!(msg.contains("no encryption"), "{msg}");
    assert!(
        connect(&format!("{base}?sslmode=allow")).expect("allow"),
        "encrypted"
    );
}

#[test]
fn sslmode_and_the_root_certificate_come_from_the_environment_too() {
    let (_home, env) = env();
    let env = env
        .with("PGSSLMODE", "verify-full")
        .with("PGSSLROOTCERT", ca("ca.crt"));
    let target = PgTarget::parse(
        &format!("postgres://veredicto@localhost:{}/veredicto", port()),
        &env,
    )
    .expect("parses");
    let mut client = target
        .connect(target.config(Duration::from_secs(10)))
        .expect("connects");
    let ssl: bool = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .expect("query")
        .get(0);
    assert!(ssl);
}
