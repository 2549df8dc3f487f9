//! What only the PostgreSQL backend has to show, against a real server
//! (`VEREDICTO_TEST_POSTGRES`; these tests fail without it): the same runs recorded into both
//! backends give the same IDs' worth of identical output, a history migrates both ways
//! (resumable, verified), audit runs, schema versions, and connection failures.

mod common;

use common::{admin, server, unique_name, with_database, Backend, Fixture};
use veredicto_core::exam::ExamReport;
use veredicto_store::synthetic::{meta, Synthetic};
use veredicto_store::{
    migrate, AuditCounts, AuditRecordKind, AuditRunMeta, History, Metric, RunFilter, SealKind,
    SealOrigin, StoreError, TrendQuery,
};

fn exam(cases: usize, seed: u64, skill: f64, golden_version: u32) -> ExamReport {
    Synthetic {
        cases,
        seed,
        skill,
        golden_version,
    }
    .report()
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serialises")
}

fn audit_meta(name: &str) -> AuditRunMeta {
    AuditRunMeta {
        id: String::new(),
        created_at: "2026-11-30T10:00:00Z".into(),
        label: Some("a".into()),
        replay_of: None,
        cases_name: name.into(),
        cases_sha256: String::new(),
        counts: AuditCounts {
            cases: 1,
            answers: 2,
            claims: 3,
            abstentions: 0,
            snapshots: vec!["S1".into()],
        },
        tool_version: "0.1.0".into(),
        git_revision: None,
    }
}

/// Every read of a history, as JSON, in a fixed order.
fn everything(h: &History) -> Vec<String> {
    let mut out = Vec::new();
    let all = h.list(&RunFilter::default()).expect("lists");
    out.push(json(&all));
    for s in &all {
        out.push(json(&h.get(&s.id).expect("gets")));
        out.push(json(&h.summary(&s.id).expect("summary")));
        out.push(json(
            &h.previous_compatible(&h.meta(&s.id).expect("meta"))
                .expect("prev"),
        ));
        out.push(json(&h.last_accepted(Some(&s.id), None).expect("accepted")));
    }
    for metric in [
        "recall",
        "mrr",
        "noise",
        "pass_rate",
        "ndcg_cut.5",
        "quality",
    ] {
        let q = TrendQuery {
            metric: metric.parse::<Metric>().expect("metric"),
            runs: RunFilter::default(),
            domain: None,
            case_id: None,
        };
        out.push(json(&h.trend(&q).expect("trend")));
        let q = TrendQuery {
            domain: Some("fiscal".into()),
            ..q
        };
        out.push(json(&h.trend(&q).expect("trend")));
    }
    out.push(json(
        &h.list(&RunFilter {
            label: Some("v2".into()),
            since: Some("2025-11-11".into()),
            ..RunFilter::default()
        })
        .expect("lists"),
    ));
    for a in h.audit_runs(None).expect("audit runs") {
        let run = h.audit_run(&a.meta.id).expect("audit run");
        out.push(json(&a));
        out.push(json(&run.meta));
        out.push(format!("{:?} {:?}", run.cases, run.notes));
        for kind in [AuditRecordKind::Review, AuditRecordKind::Suggestion] {
            out.push(json(&h.audit_records(&a.meta.id, kind).expect("records")));
        }
    }
    out.push(json(&h.check().expect("checks")));
    out
}

fn fill(h: &History) {
    for i in 0..6u64 {
        let report = exam(80, i, 1.0 - 0.06 * i as f64, 1 + (i % 2) as u32);
        let label = format!("v{}", i % 3);
        let m = meta(&report, &format!("2025-11-1{i}T08:00:00Z"), Some(&label));
        h.record(&m, &report).expect("records");
    }
    let first = h
        .record_audit_run(
            &audit_meta("q.yaml"),
            b"schema: x\n",
            Some(b"notes"),
            &[(AuditRecordKind::Review, "{\"a\":1}".into())],
        )
        .expect("records an audit run");
    let mut m = audit_meta("q.yaml");
    m.replay_of = Some(first);
    let second = h
        .record_audit_run(&m, b"schema: y\n", None, &[])
        .expect("replay");
    h.append_audit_records(
        &second,
        &[
            (AuditRecordKind::Review, "r1".into()),
            (AuditRecordKind::Suggestion, "s1".into()),
        ],
    )
    .expect("appends");
}

/// A history migrated from SQLite to PostgreSQL and back reads the same, byte for byte, in
/// every output; a second migration copies nothing; an interrupted one resumes.
#[test]
fn migrating_both_ways_keeps_every_output_identical() {
    let file = Fixture::new(Backend::Sqlite);
    let pg = Fixture::new(Backend::Postgres);
    let back = Fixture::new(Backend::Sqlite);
    let src = file.open();
    fill(&src);
    let want = everything(&src);

    let dst = pg.open();
    let r = migrate(&src, &dst, |_, _| {}).expect("migrates");
    assert_eq!((r.runs, r.copied, r.skipped, r.audit_copied), (6, 6, 0, 2));
    assert_eq!(everything(&dst), want, "PostgreSQL reads as the file");

    // Again: nothing to copy; then new runs and a review in the source: only those.
    let again = migrate(&src, &dst, |_, _| {}).expect("migrates again");
    assert_eq!((again.copied, again.skipped, again.audit_copied), (0, 6, 0));
    assert_eq!(again.digest, r.digest);
    let report = exam(80, 9, 0.9, 1);
    src.record(&meta(&report, "2025-11-20T08:00:00Z", None), &report)
        .expect("records");
    let latest = src.resolve_audit("latest").expect("latest");
    src.append_audit_records(&latest, &[(AuditRecordKind::Review, "r2".into())])
        .expect("appends");
    let resumed = migrate(&src, &dst, |_, _| {}).expect("resumes");
    assert_eq!((resumed.copied, resumed.skipped), (1, 6));
    assert_eq!(resumed.audit_records_appended, 1);
    assert_eq!(everything(&dst), everything(&src));

    // And back into a new file.
    let file2 = back.open();
    migrate(&dst, &file2, |_, _| {}).expect("migrates back");
    assert_eq!(everything(&file2), everything(&src));

    // A target with a run of its own that sorts after the source's is refused, untouched.
    let other = Fixture::new(Backend::Postgres);
    let o = other.open();
    let report = exam(10, 1, 1.0, 1);
    o.record(&meta(&report, "2030-01-01T00:00:00Z", None), &report)
        .expect("records");
    let err = migrate(&src, &o, |_, _| {}).expect_err("out of order");
    assert!(matches!(err, StoreError::Migrate { .. }), "{err}");
    assert_eq!(o.count().expect("counts"), 1);
}

/// `history migrate` carries every seal: the copy seals each item with the source's content
/// and origin (sealed at upgrade time stays so), and its chain verifies. A run changed in
/// the source after it was sealed is not copied, and a source whose chain does not verify is
/// refused before anything is copied.
#[test]
fn migration_carries_seals_and_refuses_a_changed_source() {
    let file = Fixture::new(Backend::Sqlite);
    fill(&file.open());
    // As a history written before seals existed: sealed when reopened, at upgrade time.
    file.raw()
        .exec(
            "DROP TRIGGER chain_no_update; DROP TRIGGER chain_no_delete;
             DROP TRIGGER chain_no_replace; DROP TABLE chain; PRAGMA user_version = 3;",
        )
        .expect("downgrades");
    let src = file.open();
    let report = exam(80, 7, 0.9, 1);
    let last = src
        .record(&meta(&report, "2025-11-20T08:00:00Z", None), &report)
        .expect("records");
    let key = |h: &History| -> Vec<(SealKind, String, usize, SealOrigin, String)> {
        let mut k: Vec<_> = h
            .seals()
            .expect("seals")
            .into_iter()
            .map(|s| (s.kind, s.id, s.part, s.origin, s.content))
            .collect();
        k.sort();
        k
    };
    let want = key(&src);
    assert_eq!(want.len(), 12, "7 runs, 2 audit runs, 3 records");
    assert_eq!(
        want.iter().filter(|k| k.3 == SealOrigin::Upgrade).count(),
        11
    );

    let pg = Fixture::new(Backend::Postgres);
    let dst = pg.open();
    let r = migrate(&src, &dst, |_, _| {}).expect("migrates");
    assert_eq!(r.seals, 12);
    assert_eq!(key(&dst), want, "every seal, with its content and origin");
    assert_eq!(
        r.head,
        dst.seals().expect("seals").last().map(|s| s.digest.clone())
    );
    let check = dst.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(
        (
            check.seals.sealed_at_upgrade,
            check.seals.runs_sealed_at_upgrade
        ),
        (11, 6)
    );
    // And back into a file: the same seals again.
    let back = Fixture::new(Backend::Sqlite);
    migrate(&dst, &back.open(), |_, _| {}).expect("migrates back");
    assert_eq!(key(&back.open()), want);

    // The newest run changed in the source with its guard dropped: refused, not copied.
    file.raw()
        .exec("DROP TRIGGER runs_no_update; UPDATE runs SET label = 'edited' WHERE seq = 7;")
        .expect("tampers");
    let fresh = Fixture::new(Backend::Postgres);
    let d2 = fresh.open();
    let err = migrate(&src, &d2, |_, _| {}).expect_err("a changed run");
    assert!(matches!(err, StoreError::Migrate { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("run {last}")) && msg.contains("history check"),
        "{msg}"
    );
    assert_eq!(d2.count().expect("counts"), 6, "the runs before it only");
    assert!(d2.check().expect("checks").is_ok());

    // A seal removed from the source: refused before anything is copied.
    file.raw()
        .exec("DROP TRIGGER chain_no_delete; DELETE FROM chain WHERE seq = 3;")
        .expect("tampers");
    let empty = Fixture::new(Backend::Postgres);
    let d3 = empty.open();
    let err = migrate(&src, &d3, |_, _| {}).expect_err("a broken chain");
    assert!(err.to_string().contains("do not verify"), "{err}");
    assert_eq!(d3.count().expect("counts"), 0);
}

/// The same runs recorded into both backends give the same outputs, apart from the IDs
/// (drawn at random) which are replaced by their order.
#[test]
fn the_same_runs_recorded_into_both_backends_read_the_same() {
    let (a, b) = (
        Fixture::new(Backend::Sqlite),
        Fixture::new(Backend::Postgres),
    );
    let (ha, hb) = (a.open(), b.open());
    fill(&ha);
    fill(&hb);
    let rename = |h: &History, text: Vec<String>| -> Vec<String> {
        let mut ids: Vec<String> = h
            .list(&RunFilter::default())
            .expect("lists")
            .into_iter()
            .map(|s| s.id)
            .chain(
                h.audit_runs(None)
                    .expect("lists")
                    .into_iter()
                    .map(|s| s.meta.id),
            )
            .collect();
        ids.sort();
        text.into_iter()
            .map(|mut t| {
                for (i, id) in ids.iter().enumerate() {
                    t = t.replace(id, &format!("RUN{i:02}"));
                }
                t
            })
            .collect()
    };
    assert_eq!(rename(&ha, everything(&ha)), rename(&hb, everything(&hb)));
}

#[test]
fn audit_runs_are_append_only_on_postgres() {
    let fx = Fixture::new(Backend::Postgres);
    let h = fx.open();
    fill(&h);
    let mut raw = fx.raw();
    for sql in [
        "UPDATE audit_runs SET label = 'x'",
        "DELETE FROM audit_runs",
        "UPDATE audit_records SET body = 'x'",
        "DELETE FROM audit_records",
        "TRUNCATE audit_records",
    ] {
        let err = raw.exec(sql).expect_err(sql);
        assert!(err.contains("append-only"), "{sql}: {err}");
    }
    // A changed case file is found by `check` (with the guard switched off by hand).
    raw.exec(
        "ALTER TABLE audit_runs DISABLE TRIGGER USER;
         UPDATE audit_runs SET cases_body = 'changed' WHERE seq = 1;
         ALTER TABLE audit_runs ENABLE TRIGGER USER;",
    )
    .expect("tampers");
    let check = h.check().expect("checks");
    assert_eq!(check.audit_runs, 2);
    assert_eq!(check.altered_audit_runs.len(), 1);
    assert!(!check.is_ok());
    // A guard left switched off is reported too.
    raw.exec("ALTER TABLE runs DISABLE TRIGGER USER")
        .expect("disables");
    let check = h.check().expect("checks");
    assert_ne!(check.integrity, ["ok"]);
}

#[test]
fn foreign_newer_and_older_schemas() {
    // A database with a `runs` table of another program: refused, untouched.
    let foreign = Fixture::new(Backend::Postgres);
    foreign
        .raw()
        .exec("CREATE TABLE runs (x int)")
        .expect("creates");
    let err = History::open_spec(&foreign.spec).expect_err("not a history");
    assert!(matches!(err, StoreError::NotAHistory { .. }), "{err}");

    // A newer schema: refused.
    let newer = Fixture::new(Backend::Postgres);
    drop(newer.open());
    newer
        .raw()
        .exec("UPDATE veredicto_schema SET version = 5")
        .expect("bumps");
    let err = History::open_spec(&newer.spec).expect_err("newer");
    assert!(
        matches!(
            err,
            StoreError::NewerSchema {
                found: 5,
                supported: 4,
                ..
            }
        ),
        "{err}"
    );

    // A version-1 history (exam runs only) is upgraded in place and keeps its runs.
    let old = Fixture::new(Backend::Postgres);
    let h = old.open();
    let report = exam(20, 1, 1.0, 1);
    let id = h
        .record(&meta(&report, "2025-11-14T09:30:00Z", None), &report)
        .expect("records");
    drop(h);
    old.raw()
        .exec(
            "DROP TABLE chain; DROP TABLE run_chunks; DROP TABLE gate_acceptances;
             DROP FUNCTION veredicto_acceptances_in_order();
             DROP TABLE audit_records; DROP TABLE audit_runs;
             DROP FUNCTION veredicto_audit_in_order();
             UPDATE veredicto_schema SET version = 1;",
        )
        .expect("downgrades");
    let h = old.open();
    assert_eq!(h.get(&id).expect("gets").report.cases.len(), 20);
    h.record_audit_run(&audit_meta("a.json"), b"{}", None, &[])
        .expect("the audit tables are there");
    assert!(h.check().expect("checks").is_ok());
    h.record_acceptance(&veredicto_store::GateAcceptance {
        id: String::new(),
        created_at: "2026-11-30T09:00:00Z".into(),
        index: "kb".into(),
        batch: "b".into(),
        batch_fingerprint: "sha256:00".into(),
        reason: "known gaps".into(),
        rejected: 0,
        rejections: Vec::new(),
        who: None,
        tool_version: "0.1.0".into(),
    })
    .expect("the acceptances table is there");
    let v = old.raw().query("SELECT version FROM veredicto_schema");
    assert_eq!(v[0][0].int(), 4);
}

#[test]
fn connection_failures_name_host_and_database_without_the_password() {
    // Nothing listens on port 1.
    let url = "postgres://ann:s3cret@127.0.0.1:1/teamdb";
    let started = std::time::Instant::now();
    let err = History::open_spec(url).expect_err("no server");
    let msg = err.to_string();
    assert!(
        matches!(err, StoreError::Connect { attempts: 3, .. }),
        "{msg}"
    );
    assert!(
        msg.contains("127.0.0.1:1") && msg.contains("teamdb"),
        "{msg}"
    );
    assert!(!msg.contains("s3cret") && !msg.contains("ann:"), "{msg}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));

    // A server that answers: a database that does not exist is not retried.
    let missing = with_database(&server(), &unique_name("absent"));
    let err = History::open_spec(&missing).expect_err("no such database");
    assert!(
        matches!(err, StoreError::Connect { attempts: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("does not exist"), "{err}");

    let err = History::open_spec("postgres://127.0.0.1:99999999/x").expect_err("bad port");
    assert!(matches!(err, StoreError::BadUrl { .. }), "{err}");
    let err = History::open_spec(&format!("{}?sslmode=bogus", server())).expect_err("sslmode");
    assert!(matches!(err, StoreError::BadUrl { .. }), "{err}");
    assert!(err.to_string().contains("verify-full"), "{err}");
}

/// The history over TLS (a server with `ssl=on` and a CA of the test run's): before, any
/// `sslmode` that needs TLS was refused ("this veredicto connects without TLS").
#[test]
fn the_history_records_over_tls_with_the_certificate_and_host_name_checked() {
    let tls = std::env::var("VEREDICTO_TEST_POSTGRES_TLS")
        .expect("VEREDICTO_TEST_POSTGRES_TLS is not set: scripts/test.sh starts the TLS server");
    let dir = std::env::var("VEREDICTO_TEST_POSTGRES_TLS_DIR")
        .expect("VEREDICTO_TEST_POSTGRES_TLS_DIR is not set");
    let db = unique_name("tls");
    let mut plain = tls.replace("localhost", "127.0.0.1");
    plain.push_str("?sslmode=disable");
    let mut c = postgres::Client::connect(&plain, postgres::NoTls).expect("admin connection");
    c.batch_execute(&format!("CREATE DATABASE {db}"))
        .expect("creates");
    let url = format!(
        "{}?sslmode=verify-full&sslrootcert={dir}/ca.crt",
        with_database(&tls, &db)
    );
    let h = History::open_spec(&url).expect("opens over TLS");
    let report = exam(20, 7, 0.9, 1);
    let id = h
        .record(&meta(&report, "2025-11-10T08:00:00Z", None), &report)
        .expect("records");
    assert_eq!(h.get(&id).expect("reads").report.cases.len(), 20);
    drop(h);
    let wrong = url.replace("localhost", "127.0.0.1");
    let err = History::open_spec(&wrong).expect_err("the certificate names localhost only");
    assert!(
        matches!(err, StoreError::Connect { attempts: 1, .. })
            && err.to_string().contains("not valid for the host name"),
        "{err}"
    );
    // The plain test server offers no TLS: `require` is refused, not downgraded.
    let err = History::open_spec(&format!("{}?sslmode=require", server())).expect_err("no TLS");
    assert!(err.to_string().contains("does not accept TLS"), "{err}");
}

/// A role granted only SELECT and INSERT records and reads, and cannot change anything even
/// with the triggers gone.
#[test]
fn an_insert_only_role_records_and_reads() {
    let fx = Fixture::new(Backend::Postgres);
    drop(fx.open());
    let role = unique_name("writer");
    let db = fx.spec.rsplit('/').next().expect("db name").to_owned();
    admin(&format!("CREATE ROLE {role} LOGIN"));
    fx.raw()
        .exec(&format!(
            "GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA public TO {role};
             GRANT CONNECT ON DATABASE {db} TO {role};"
        ))
        .expect("grants");
    let url = fx.spec.replacen("veredicto@", &format!("{role}@"), 1);
    let h = History::open_spec(&url).expect("opens as the writer");
    let report = exam(30, 2, 0.9, 1);
    let id = h
        .record(&meta(&report, "2025-11-14T09:30:00Z", None), &report)
        .expect("records");
    assert_eq!(h.get(&id).expect("gets").report.cases.len(), 30);
    drop(h);
    let mut raw =
        common::Raw::Postgres(postgres::Client::connect(&url, postgres::NoTls).expect("connects"));
    let err = raw
        .exec("DROP TRIGGER veredicto_runs_no_change ON runs")
        .expect_err("not owner");
    assert!(err.contains("owner"), "{err}");
    drop(raw);
    drop(fx);
    admin(&format!("DROP ROLE IF EXISTS {role}"));
}

/// What foreign keys would refuse, the statement-level guard refuses: a measure of a case
/// that was never recorded, even in the run being recorded.
#[test]
fn rows_must_belong_to_a_recorded_case() {
    let fx = Fixture::new(Backend::Postgres);
    let h = fx.open();
    let report = exam(5, 1, 1.0, 1);
    h.record(&meta(&report, "2025-11-14T09:30:00Z", None), &report)
        .expect("records");
    let mut raw = fx.raw();
    let err = raw
        .exec(
            "BEGIN;
             INSERT INTO runs SELECT 2, '7ZZZZZZZZZZZZZZZZZZZZZZZZZ', created_at, created_ms,
                 label, golden_fingerprint, policy_fingerprint, corpus_fingerprint, retriever,
                 top_k, embedding_model, model_hash, config, tool_version, git_revision,
                 verdict, reasons, cases, gold_cases, failing, failing_gold, mean_quality,
                 mean_recall, mrr, mean_precision, mean_ndcg, mean_average_precision,
                 hit_rate, over_noise, latency FROM runs WHERE seq = 1;
             INSERT INTO case_measures VALUES (2, 99, 'P@3', 0.5);
             COMMIT;",
        )
        .expect_err("no such case");
    assert!(err.contains("must belong to a recorded case"), "{err}");
    raw.exec("ROLLBACK").ok();
    assert_eq!(h.count().expect("counts"), 1);
    assert!(h.check().expect("checks").is_ok());
}
