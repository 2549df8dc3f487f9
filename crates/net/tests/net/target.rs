//! The PostgreSQL target parser: libpq's forms, defaults and password rules.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use veredicto_net::pg::{PasswordSource, PgHost, RootCert};
use veredicto_net::{PgEnv, PgTarget, SslMode};

/// An environment with a home folder of its own (no ~/.pgpass, no ~/.postgresql).
fn home() -> (tempfile::TempDir, PgEnv) {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = PgEnv::empty().with("HOME", dir.path().to_string_lossy());
    (dir, env)
}

fn pgpass(dir: &tempfile::TempDir, text: &str, mode: u32) -> PathBuf {
    let path = dir.path().join(".pgpass");
    std::fs::write(&path, text).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

#[test]
fn a_url_gives_every_part_and_its_parameters_override() {
    let (_d, env) = home();
    let t = PgTarget::parse(
        "postgresql://ann:p%40ss:w@db.example:6432/team%20a?sslmode=verify-full&sslrootcert=/etc/ca.pem&connect_timeout=1&application_name=ci",
        &env,
    )
    .expect("parses");
    assert_eq!(t.hosts(), [PgHost::Tcp("db.example".into())]);
    assert_eq!(t.ports(), [6432]);
    assert_eq!(t.user(), "ann");
    assert_eq!(t.dbname(), "team a");
    assert_eq!(t.password_source(), &PasswordSource::Target);
    assert_eq!(t.sslmode(), SslMode::VerifyFull);
    assert_eq!(t.sslrootcert(), Some(&RootCert::File("/etc/ca.pem".into())));
    // libpq waits at least 2 s.
    assert_eq!(t.connect_timeout(), Some(Duration::from_secs(2)));
    let config = t.config(Duration::from_secs(9));
    assert_eq!(config.get_password(), Some(&b"p@ss:w"[..]));
    assert_eq!(config.get_application_name(), Some("ci"));

    let t =
        PgTarget::parse("postgres://ann@h/db?host=other&port=7000&dbname=x", &env).expect("parses");
    assert_eq!(t.host_port(), "other:7000");
    assert_eq!(t.dbname(), "x");
}

#[test]
fn ipv6_unix_sockets_and_several_hosts() {
    let (_d, env) = home();
    let t = PgTarget::parse("postgres://u@[::1]:5433/db", &env).expect("v6");
    assert_eq!(t.hosts(), [PgHost::Tcp("::1".into())]);
    assert_eq!(t.host_port(), "[::1]:5433");
    let t = PgTarget::parse("postgres://u@%2Fvar%2Frun%2Fpostgresql/db", &env).expect("socket");
    assert_eq!(t.hosts(), [PgHost::Unix("/var/run/postgresql".into())]);
    let t = PgTarget::parse("postgres://u@a:1,b:2/db", &env).expect("two hosts");
    assert_eq!(t.hosts().len(), 2);
    assert_eq!(t.ports(), [1, 2]);
    assert_eq!(t.describe(), "postgres://u@a:1,b:2/db");
    let err = PgTarget::parse("host=a,b,c port=1,2 user=u", &env).expect_err("ports");
    assert!(err.to_string().contains("2 ports for 3 hosts"), "{err}");
}

#[test]
fn key_value_pairs_with_quotes_and_escapes() {
    let (_d, env) = home();
    let t = PgTarget::parse(
        r"host=db.example port = 5433 dbname='my db' user=ann password='it\'s secret' sslmode=require",
        &env,
    )
    .expect("parses");
    assert_eq!(t.host_port(), "db.example:5433");
    assert_eq!(t.dbname(), "my db");
    assert_eq!(t.sslmode(), SslMode::Require);
    let config = t.config(Duration::from_secs(5));
    assert_eq!(config.get_password(), Some(&b"it's secret"[..]));
    let err = PgTarget::parse("host=x dbname='open", &env).expect_err("unterminated");
    assert!(err.to_string().contains("unterminated"), "{err}");
    let err = PgTarget::parse("host=x colour=blue user=u", &env).expect_err("unknown key");
    assert!(
        err.to_string().contains("unknown parameter `colour`"),
        "{err}"
    );
}

#[test]
fn defaults_come_from_the_environment_as_libpq_reads_it() {
    let (_d, env) = home();
    let env = env
        .with("PGHOST", "pg.internal")
        .with("PGPORT", "6543")
        .with("PGDATABASE", "warehouse")
        .with("PGUSER", "svc")
        .with("USER", "os-user")
        .with("PGSSLMODE", "verify-ca")
        .with("PGSSLROOTCERT", "/etc/pg/root.pem")
        .with("PGCONNECT_TIMEOUT", "7");
    let t = PgTarget::parse("postgres://", &env).expect("all defaults");
    assert_eq!(t.host_port(), "pg.internal:6543");
    assert_eq!(t.user(), "svc");
    assert_eq!(t.dbname(), "warehouse");
    assert_eq!(t.sslmode(), SslMode::VerifyCa);
    assert_eq!(
        t.sslrootcert(),
        Some(&RootCert::File("/etc/pg/root.pem".into()))
    );
    assert_eq!(t.connect_timeout(), Some(Duration::from_secs(7)));
    // The target wins over the environment.
    let t = PgTarget::parse("postgres://ann@h:1/db?sslmode=disable", &env).expect("parses");
    assert_eq!(
        (t.user(), t.dbname(), t.sslmode()),
        ("ann", "db", SslMode::Disable)
    );

    // No PGUSER: the operating-system user, and the database is named after the user.
    let (_d, env) = home();
    let t = PgTarget::parse("postgres://h", &env.clone().with("USER", "os-user")).expect("USER");
    assert_eq!((t.user(), t.dbname()), ("os-user", "os-user"));
    assert_eq!(t.host_port(), "h:5432");
    assert_eq!(t.sslmode(), SslMode::Prefer);
    let err = PgTarget::parse("postgres://h/db", &env).expect_err("no user at all");
    assert!(err.to_string().contains("no user name"), "{err}");
}

#[test]
fn the_password_comes_from_the_target_then_pgpassword_then_the_password_file() {
    let (dir, env) = home();
    pgpass(
        &dir,
        "# team database\nother:*:*:*:nope\ndb.example:5432:team:ann:from\\:file\n*:*:*:ann:fallback\n",
        0o600,
    );
    let file = dir.path().join(".pgpass");
    let t = PgTarget::parse("postgres://ann@db.example/team", &env).expect("parses");
    assert_eq!(t.password_source(), &PasswordSource::PassFile(file.clone()));
    assert_eq!(
        t.config(Duration::from_secs(1)).get_password(),
        Some(&b"from:file"[..])
    );
    // `*` matches any other database.
    let t = PgTarget::parse("postgres://ann@db.example/elsewhere", &env).expect("parses");
    assert_eq!(
        t.config(Duration::from_secs(1)).get_password(),
        Some(&b"fallback"[..])
    );
    // PGPASSWORD wins over the file, the target over both.
    let with_env = env.clone().with("PGPASSWORD", "from-env");
    let t = PgTarget::parse("postgres://ann@db.example/team", &with_env).expect("parses");
    assert_eq!(t.password_source(), &PasswordSource::Environment);
    let t = PgTarget::parse("postgres://ann:inline@db.example/team", &with_env).expect("parses");
    assert_eq!(t.password_source(), &PasswordSource::Target);
    // PGPASSFILE and passfile= name another file.
    let other = dir.path().join("team.pass");
    std::fs::write(&other, "*:*:*:*:elsewhere\n").expect("write");
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let t = PgTarget::parse(
        "postgres://bob@h/db",
        &env.clone().with("PGPASSFILE", other.to_string_lossy()),
    )
    .expect("parses");
    assert_eq!(
        t.password_source(),
        &PasswordSource::PassFile(other.clone())
    );
    let t = PgTarget::parse(
        &format!("host=h user=bob passfile={}", other.display()),
        &env,
    )
    .expect("parses");
    assert_eq!(t.password_source(), &PasswordSource::PassFile(other));
}

#[test]
fn a_password_file_others_may_read_is_ignored_as_libpq_does() {
    let (dir, env) = home();
    pgpass(&dir, "*:*:*:*:s3cret\n", 0o644);
    let t = PgTarget::parse("postgres://ann@h/db", &env).expect("parses");
    assert_eq!(t.password_source(), &PasswordSource::None);
    let why = t.passfile_ignored().expect("a reason");
    assert!(
        why.contains("group or world access") && why.contains("chmod 0600"),
        "{why}"
    );
    pgpass(&dir, "*:*:*:*:s3cret\n", 0o600);
    let t = PgTarget::parse("postgres://ann@h/db", &env).expect("parses");
    assert!(matches!(t.password_source(), PasswordSource::PassFile(_)));
}

#[test]
fn the_password_is_never_shown() {
    let (dir, env) = home();
    pgpass(&dir, "*:*:*:*:file-s3cret\n", 0o600);
    for text in [
        "postgres://ann:url-s3cret@db.example:5433/team",
        "host=db.example port=5433 dbname=team user=ann password=url-s3cret",
        "postgres://ann@db.example:5433/team",
    ] {
        let t = PgTarget::parse(text, &env).expect("parses");
        assert_eq!(t.describe(), "postgres://ann:***@db.example:5433/team");
        assert_eq!(t.to_string(), t.describe());
        let debug = format!("{t:?} {:?}", t.connector().expect("connector"));
        assert!(!debug.contains("s3cret"), "{debug}");
    }
    let (_d, bare) = home();
    let t = PgTarget::parse("postgres://ann@db.example/team", &bare).expect("parses");
    assert_eq!(t.describe(), "postgres://ann@db.example:5432/team");
    let env = bare.with("PGPASSWORD", "env-s3cret");
    assert!(!format!("{env:?}").contains("s3cret"));
    for bad in [
        "postgres://ann:url-s3cret@h:99999999/db",
        "postgres://ann:url-s3cret@h/db?sslmode=sometimes",
        "postgres://ann:url-s3cret@h/db?sslcert=/c.pem",
    ] {
        let err = PgTarget::parse(bad, &env).expect_err("bad");
        assert!(!err.to_string().contains("s3cret"), "{err}");
    }
}

#[test]
fn bad_targets_say_what_is_wrong() {
    let (_d, env) = home();
    let env = env.with("USER", "u");
    for (text, want) in [
        (
            "postgres://h/db?sslmode=sometimes",
            "expected disable, allow, prefer, require, verify-ca or verify-full",
        ),
        (
            "postgres://h:0/db",
            "port `0` is not a number from 1 to 65535",
        ),
        (
            "postgres://h/db?sslcert=/c.pem",
            "client certificates are not supported",
        ),
        (
            "postgres://h/db?sslrootcert=system&sslmode=require",
            "sslrootcert=system needs sslmode=verify-full",
        ),
        (
            "postgres://h/db?connect_timeout=soon",
            "connect_timeout `soon`",
        ),
        ("postgres://h/db?table=t", "unknown parameter `table`"),
        ("mysql-ish", "expected postgres://"),
    ] {
        let err = PgTarget::parse(text, &env).expect_err(text);
        assert!(err.to_string().contains(want), "{text}: {err}");
    }
    let err = PgTarget::parse("postgres://h/db?sslmode=verify-full", &env)
        .expect("parses")
        .connector()
        .expect_err("no root certificate");
    assert!(
        err.to_string()
            .contains("needs the server's root certificate")
            && err.to_string().contains("root.crt does not exist"),
        "{err}"
    );
}

#[test]
fn parameters_that_are_not_libpqs_are_handed_back_as_written() {
    let (_d, env) = home();
    let (t, extras) = PgTarget::parse_with_extras(
        "postgres://ann@h:5/db?table=items&sslmode=require&where=a+%3D+1",
        &env,
    )
    .expect("parses");
    assert_eq!(t.sslmode(), SslMode::Require);
    assert_eq!(
        extras,
        [
            ("table".to_owned(), "items".to_owned()),
            ("where".to_owned(), "a+%3D+1".to_owned())
        ]
    );
}

#[test]
fn password_file_lines_follow_libpqs_escapes() {
    use veredicto_net::pg::lookup_pgpass;
    let text = "# comment\ndb\\:host:5432:*:ann:p\\:w\\\\d:more\n";
    assert_eq!(
        lookup_pgpass(text, "db:host", "5432", "any", "ann").as_deref(),
        Some(r"p:w\d:more")
    );
    assert_eq!(lookup_pgpass(text, "db", "5432", "any", "ann"), None);
    assert_eq!(
        lookup_pgpass("h:1:d:u\n", "h", "1", "d", "u"),
        None,
        "four fields: no line"
    );
}
