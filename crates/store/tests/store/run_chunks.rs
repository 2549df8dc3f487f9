//! The chunks each recorded run read (`run_chunks`), against both backends (a real SQLite
//! file and a real PostgreSQL database): a snapshot reads back as recorded; a run on an
//! unchanged corpus stores no second body (0 bytes) and still reads back; the table is
//! append-only; `check` counts and verifies the lists and names a damaged one; migration
//! carries them both ways; a version-3 file made before the table existed gets it on the
//! first write. Each `fn name(backend)` becomes `name::sqlite` and `name::postgres`.

use crate::common;
use common::{Backend, Fixture};
use veredicto_core::case::Chunk;
use veredicto_core::snapshot::ChunkSnapshot;
use veredicto_store::synthetic::{meta, Synthetic};
use veredicto_store::{migrate, History};

fn chunks(n: usize, changed: Option<usize>) -> Vec<Chunk> {
    (0..n)
        .map(|i| Chunk {
            id: format!("c{i:04}"),
            text: Some(if Some(i) == changed {
                format!("chunk {i}, revised")
            } else {
                format!("chunk {i}")
            }),
            domain: Some(["legal", "hr"][i % 2].into()),
            ingest_batch: Some(format!("b{}", i / 10)),
            ..Chunk::default()
        })
        .collect()
}

fn run(h: &History, at: &str, seed: u64) -> String {
    let report = Synthetic {
        cases: 6,
        seed,
        skill: 0.9,
        golden_version: 1,
    }
    .report();
    h.record(&meta(&report, at, None), &report)
        .expect("records")
}

fn snapshots_read_back_and_are_stored_once(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let (r1, r2, r3, r4) = (
        run(&h, "2026-11-30T08:00:00Z", 1),
        run(&h, "2026-11-30T09:00:00Z", 2),
        run(&h, "2026-11-30T10:00:00Z", 3),
        run(&h, "2026-11-30T11:00:00Z", 4),
    );
    let a = ChunkSnapshot::of(&chunks(40, None));
    let changed = ChunkSnapshot::of(&chunks(40, Some(7)));
    let first = h.record_run_chunks(&r1, &a).expect("records");
    assert!(first > 0, "the first snapshot is stored");
    assert_eq!(
        h.record_run_chunks(&r2, &a).expect("records"),
        0,
        "an unchanged corpus stores no second body"
    );
    assert!(h.record_run_chunks(&r3, &changed).expect("records") > 0);
    assert!(
        h.record_run_chunks(&r2, &changed).is_err(),
        "one list per run"
    );
    assert_eq!(h.run_chunks(&r1).expect("reads"), Some(a.clone()));
    assert_eq!(h.run_chunks(&r2).expect("reads"), Some(a.clone()));
    assert_eq!(h.run_chunks(&r3).expect("reads"), Some(changed.clone()));
    assert_eq!(h.run_chunks(&r4).expect("reads"), None, "not kept");
    assert_eq!(
        h.runs_with_chunks().expect("lists"),
        [r1.clone(), r2.clone(), r3.clone()]
    );
    let check = h.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    assert_eq!((check.run_chunks, check.chunk_snapshots), (3, 2));
    drop(h);

    // Append-only in the database.
    let mut conn = fx.raw();
    if b == Backend::Sqlite {
        conn.exec("PRAGMA recursive_triggers = OFF;")
            .expect("configures");
    }
    let mut attempts = vec![
        "UPDATE run_chunks SET fingerprint = 'sha256:00'",
        "UPDATE run_chunks SET body = NULL, encoding = NULL",
        "DELETE FROM run_chunks",
    ];
    match b {
        Backend::Sqlite => {
            attempts.push("INSERT OR REPLACE INTO run_chunks SELECT * FROM run_chunks")
        }
        Backend::Postgres => attempts.push("TRUNCATE run_chunks"),
    }
    for sql in attempts {
        let err = conn.exec(sql).expect_err(sql);
        assert!(err.contains("append-only"), "{sql}: {err}");
    }
    let h = fx.open();
    assert_eq!(h.run_chunks(&r2).expect("reads"), Some(a));
}

both_backends!(snapshots_read_back_and_are_stored_once);

/// A damaged body (edited with the triggers dropped) is named by `check` and refused when
/// read.
#[test]
fn a_damaged_snapshot_is_found_by_check() {
    let fx = Fixture::new(Backend::Sqlite);
    let h = fx.open();
    let r1 = run(&h, "2026-11-30T08:00:00Z", 1);
    let r2 = run(&h, "2026-11-30T09:00:00Z", 2);
    let s = ChunkSnapshot::of(&chunks(30, None));
    h.record_run_chunks(&r1, &s).expect("records");
    h.record_run_chunks(&r2, &s).expect("records");
    drop(h);
    let mut raw = fx.raw();
    raw.exec(
        "DROP TRIGGER run_chunks_no_update;
         UPDATE run_chunks SET body = X'789c030000000001' WHERE body IS NOT NULL;",
    )
    .expect("damages");
    drop(raw);
    let h = fx.open();
    let check = h.check().expect("checks");
    assert!(!check.is_ok());
    assert_eq!(check.unreadable_run_chunks, [r1.clone(), r2.clone()]);
    let err = h.run_chunks(&r2).expect_err("refused").to_string();
    assert!(err.contains("chunk snapshot"), "{err}");
}

/// Runs with their chunk lists migrated from SQLite to PostgreSQL and back keep every list
/// (shared bodies too); a second migration copies none.
#[test]
fn snapshots_migrate_both_ways() {
    let file = Fixture::new(Backend::Sqlite);
    let pg = Fixture::new(Backend::Postgres);
    let back = Fixture::new(Backend::Sqlite);
    let h = file.open();
    let r1 = run(&h, "2026-11-30T08:00:00Z", 1);
    let r2 = run(&h, "2026-11-30T09:00:00Z", 2);
    let r3 = run(&h, "2026-11-30T10:00:00Z", 3);
    let a = ChunkSnapshot::of(&chunks(25, None));
    let c = ChunkSnapshot::of(&chunks(26, Some(3)));
    h.record_run_chunks(&r1, &a).expect("records");
    h.record_run_chunks(&r2, &a).expect("records");
    h.record_run_chunks(&r3, &c).expect("records");
    let (to_pg, to_back) = (pg.open(), back.open());
    let r = migrate(&h, &to_pg, |_, _| {}).expect("to PostgreSQL");
    assert_eq!((r.run_chunks, r.run_chunks_copied), (3, 3));
    assert_eq!(
        migrate(&h, &to_pg, |_, _| {})
            .expect("again")
            .run_chunks_copied,
        0
    );
    migrate(&to_pg, &to_back, |_, _| {}).expect("back to a file");
    for target in [&to_pg, &to_back] {
        assert_eq!(target.run_chunks(&r1).expect("reads"), Some(a.clone()));
        assert_eq!(target.run_chunks(&r2).expect("reads"), Some(a.clone()));
        assert_eq!(target.run_chunks(&r3).expect("reads"), Some(c.clone()));
        let check = target.check().expect("checks");
        assert!(check.is_ok(), "{check:?}");
        assert_eq!((check.run_chunks, check.chunk_snapshots), (3, 2));
    }
}

/// A version-3 file written before the table existed (gate acceptances only) reads as
/// having no lists, and gets the table, append-only, on the first list recorded.
#[test]
fn a_version_3_file_without_the_table_gets_it_on_first_write() {
    let fx = Fixture::new(Backend::Sqlite);
    let h = fx.open();
    let r1 = run(&h, "2026-11-30T08:00:00Z", 1);
    drop(h);
    fx.raw()
        .exec(
            "DROP TRIGGER run_chunks_no_update; DROP TRIGGER run_chunks_no_delete;
             DROP TRIGGER run_chunks_no_replace; DROP TABLE run_chunks;",
        )
        .expect("takes the table away");
    let h = fx.open();
    assert_eq!(h.run_chunks(&r1).expect("reads"), None);
    assert!(h.check().expect("checks").is_ok());
    let s = ChunkSnapshot::of(&chunks(5, None));
    h.record_run_chunks(&r1, &s)
        .expect("creates the table and records");
    assert_eq!(h.run_chunks(&r1).expect("reads"), Some(s));
    drop(h);
    let err = fx
        .raw()
        .exec("DELETE FROM run_chunks")
        .expect_err("append-only");
    assert!(err.contains("append-only"), "{err}");
}

/// The same on PostgreSQL: a version-3 database made before the table existed reads as
/// having no lists, `check` is sound, and the first list recorded creates the table with its
/// append-only triggers.
#[test]
fn a_version_3_database_without_the_table_gets_it_on_first_write() {
    let fx = Fixture::new(Backend::Postgres);
    let h = fx.open();
    let r1 = run(&h, "2026-11-30T08:00:00Z", 1);
    drop(h);
    fx.raw()
        .exec("DROP TABLE run_chunks;")
        .expect("takes the table away");
    let h = fx.open();
    assert_eq!(h.run_chunks(&r1).expect("reads"), None);
    let check = h.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    let s = ChunkSnapshot::of(&chunks(5, None));
    h.record_run_chunks(&r1, &s)
        .expect("creates the table and records");
    assert_eq!(h.run_chunks(&r1).expect("reads"), Some(s));
    assert!(h.check().expect("checks").is_ok());
    drop(h);
    let err = fx
        .raw()
        .exec("DELETE FROM run_chunks")
        .expect_err("append-only");
    assert!(err.contains("append-only"), "{err}");
}
