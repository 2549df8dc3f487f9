//! Written acceptances of an ingestion batch's rejected lines (`veredicto gate accept`) in
//! the run history, against both backends (a real SQLite file and a real PostgreSQL
//! database): they read back as recorded, are append-only (the library has no update or
//! delete, and the database refuses UPDATE, DELETE and replacing inserts), migrate both
//! ways, and an older SQLite file is upgraded to hold them. Each `fn name(backend)` becomes
//! `name::sqlite` and `name::postgres`.

use crate::common;
use common::{Backend, Fixture};
use veredicto_core::gate::{RejectReason, Rejection};
use veredicto_store::synthetic::{meta, Synthetic};
use veredicto_store::{migrate, GateAcceptance, History, StoreError};

fn rejection(line: usize) -> Rejection {
    Rejection {
        file: "corpus.jsonl".into(),
        line,
        id: Some(format!("c{line}")),
        reason: RejectReason::EmptyText,
        field: "text".into(),
        message: "nothing to embed".into(),
    }
}

fn acceptance(batch: &str, at: &str, lines: usize) -> GateAcceptance {
    let rejections: Vec<Rejection> = (1..=lines).map(rejection).collect();
    GateAcceptance {
        id: String::new(),
        created_at: at.into(),
        index: "kb/index".into(),
        batch: batch.into(),
        batch_fingerprint: veredicto_core::gate::batch_fingerprint(
            batch,
            "2026-11-30T08:00:00Z",
            &rejections,
        ),
        reason: "the 3 empty FAQ stubs are placeholders, filled next sprint".into(),
        rejected: lines,
        rejections,
        who: Some("Ana Ruiz".into()),
        tool_version: "0.1.0".into(),
    }
}

fn acceptances_read_back_as_recorded_and_by_batch(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let first = h
        .record_acceptance(&acceptance("nightly-1", "2026-11-30T09:00:00Z", 3))
        .expect("records");
    let second = h
        .record_acceptance(&acceptance("nightly-2", "2026-11-30T10:00:00Z", 1))
        .expect("records");
    let third = h
        .record_acceptance(&acceptance("nightly-1", "2026-11-30T11:00:00Z", 3))
        .expect("a second acceptance of the same batch is kept beside the first");
    assert!(
        first < second && second < third,
        "IDs sort in recording order"
    );
    let all = h.acceptances(None).expect("lists");
    assert_eq!(
        all.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(),
        [&first, &second, &third]
    );
    let mut expected = acceptance("nightly-1", "2026-11-30T09:00:00Z", 3);
    expected.id = first.clone();
    assert_eq!(all[0], expected);
    let of_batch = h
        .acceptances(Some(&expected.batch_fingerprint))
        .expect("by batch");
    assert_eq!(of_batch.len(), 2);
    assert_eq!(of_batch[1].id, third);
    assert!(h.acceptances(Some("sha256:00")).expect("none").is_empty());
    let check = h.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(check.gate_acceptances, 3);

    // Refused, nothing written: blank reason, counts that do not add up, a bad time.
    let mut blank = acceptance("x", "2026-11-30T12:00:00Z", 1);
    blank.reason = "   ".into();
    let err = h.record_acceptance(&blank).expect_err("blank reason");
    assert!(
        matches!(
            err,
            StoreError::Invalid {
                field: "reason",
                ..
            }
        ),
        "{err}"
    );
    let mut short = acceptance("x", "2026-11-30T12:00:00Z", 2);
    short.rejected = 5;
    assert!(h.record_acceptance(&short).is_err());
    let bad_time = acceptance("x", "yesterday", 1);
    assert!(matches!(
        h.record_acceptance(&bad_time),
        Err(StoreError::BadTime { .. })
    ));
    // An imported ID that does not sort last is refused by the database.
    let mut old = acceptance("x", "2026-11-30T12:00:00Z", 1);
    old.id = first.clone();
    assert!(h.record_acceptance(&old).is_err(), "a replaced acceptance");
    assert_eq!(h.acceptances(None).expect("lists").len(), 3);
}

fn acceptances_are_append_only(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    h.record_acceptance(&acceptance("nightly-1", "2026-11-30T09:00:00Z", 2))
        .expect("records");
    drop(h);
    let mut conn = fx.raw();
    if b == Backend::Sqlite {
        conn.exec("PRAGMA recursive_triggers = OFF;")
            .expect("configures");
    }
    let mut attempts = vec![
        "UPDATE gate_acceptances SET reason = 'edited'",
        "UPDATE gate_acceptances SET rejected = 0, rejections = '[]'",
        "DELETE FROM gate_acceptances",
    ];
    match b {
        Backend::Sqlite => attempts.extend([
            "INSERT OR REPLACE INTO gate_acceptances SELECT * FROM gate_acceptances",
            "REPLACE INTO gate_acceptances SELECT * FROM gate_acceptances",
        ]),
        Backend::Postgres => attempts.push("TRUNCATE gate_acceptances"),
    }
    for sql in attempts {
        let err = conn.exec(sql).expect_err(sql);
        assert!(err.contains("append-only"), "{sql}: {err}");
    }
    let h = fx.open();
    let all = h.acceptances(None).expect("lists");
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].reason,
        "the 3 empty FAQ stubs are placeholders, filled next sprint"
    );
    assert_eq!(all[0].rejections.len(), 2);
}

both_backends!(
    acceptances_read_back_as_recorded_and_by_batch,
    acceptances_are_append_only,
);

/// A history with runs and acceptances migrated from SQLite to PostgreSQL and back keeps
/// every acceptance (ID, fields, rejected lines); a second migration copies nothing.
#[test]
fn acceptances_migrate_both_ways() {
    let file = Fixture::new(Backend::Sqlite);
    let pg = Fixture::new(Backend::Postgres);
    let back = Fixture::new(Backend::Sqlite);
    let h = file.open();
    let report = Synthetic {
        cases: 10,
        seed: 1,
        skill: 0.9,
        golden_version: 1,
    }
    .report();
    h.record(&meta(&report, "2026-11-30T08:00:00Z", None), &report)
        .expect("records a run");
    for (i, at) in ["2026-11-30T09:00:00Z", "2026-11-30T10:00:00Z"]
        .iter()
        .enumerate()
    {
        h.record_acceptance(&acceptance(&format!("b{i}"), at, i + 1))
            .expect("records");
    }
    let (to_pg, to_back) = (pg.open(), back.open());
    let r = migrate(&h, &to_pg, |_, _| {}).expect("to PostgreSQL");
    assert_eq!((r.gate_acceptances, r.gate_acceptances_copied), (2, 2));
    let again = migrate(&h, &to_pg, |_, _| {}).expect("again");
    assert_eq!(again.gate_acceptances_copied, 0);
    // One more acceptance in the file: the next migration copies just it.
    h.record_acceptance(&acceptance("b9", "2026-11-30T11:00:00Z", 1))
        .expect("records");
    let resumed = migrate(&h, &to_pg, |_, _| {}).expect("resumes");
    assert_eq!(resumed.gate_acceptances_copied, 1);
    migrate(&to_pg, &to_back, |_, _| {}).expect("back to a file");
    let source = h.acceptances(None).expect("lists");
    assert_eq!(source.len(), 3);
    assert_eq!(to_pg.acceptances(None).expect("lists"), source);
    assert_eq!(to_back.acceptances(None).expect("lists"), source);
    assert_eq!(to_back.check().expect("checks").gate_acceptances, 3);
}

/// A version-2 file (exam and audit runs, no acceptances table), as that release wrote it:
/// read-only it lists no acceptance and is left alone; opened for writing it is upgraded in
/// place to the current version, keeps its runs, and records acceptances.
#[test]
fn a_version_2_file_is_upgraded_to_hold_acceptances() {
    let fx = Fixture::new(Backend::Sqlite);
    let h = fx.open();
    let report = Synthetic {
        cases: 12,
        seed: 2,
        skill: 0.9,
        golden_version: 1,
    }
    .report();
    let id = h
        .record(&meta(&report, "2026-11-29T08:00:00Z", None), &report)
        .expect("records");
    drop(h);
    // Take the file back to version 2, exactly: without the version-3 table and triggers.
    let mut raw = fx.raw();
    raw.exec(
        "DROP TRIGGER gate_acceptances_no_update; DROP TRIGGER gate_acceptances_no_delete;
         DROP TRIGGER gate_acceptances_no_replace; DROP TABLE gate_acceptances;
         DROP TRIGGER run_chunks_no_update; DROP TRIGGER run_chunks_no_delete;
         DROP TRIGGER run_chunks_no_replace; DROP TABLE run_chunks;
         DROP TRIGGER chain_no_update; DROP TRIGGER chain_no_delete;
         DROP TRIGGER chain_no_replace; DROP TABLE chain;
         PRAGMA user_version = 2;",
    )
    .expect("downgrades");
    drop(raw);
    let ro = History::open_read_only(std::path::Path::new(&fx.spec)).expect("opens read-only");
    assert!(ro.acceptances(None).expect("none yet").is_empty());
    assert_eq!(ro.check().expect("checks").gate_acceptances, 0);
    drop(ro);
    let version = |fx: &Fixture| -> i64 {
        rusqlite::Connection::open(&fx.spec)
            .and_then(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
            .expect("reads")
    };
    assert_eq!(version(&fx), 2, "a read-only open changes nothing");
    let h = History::open_existing(std::path::Path::new(&fx.spec)).expect("upgrades");
    assert_eq!(version(&fx), 4);
    assert_eq!(h.get(&id).expect("keeps its run").report.cases.len(), 12);
    h.record_acceptance(&acceptance("nightly", "2026-11-30T09:00:00Z", 1))
        .expect("records");
    assert!(h.check().expect("checks").is_ok());
    // The upgraded table is append-only like a new one.
    drop(h);
    let err = fx
        .raw()
        .exec("DELETE FROM gate_acceptances")
        .expect_err("append-only");
    assert!(err.contains("append-only"), "{err}");
}
