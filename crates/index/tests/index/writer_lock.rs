//! One writer per index: the writer lock, the refusal to drop a batch committed by another
//! writer, and the removal of temporary folders left by writers that died.

use crate::common;
use common::*;
use std::time::Duration;
use veredicto_index::*;

fn plan_for<'a>(base: Option<&'a Index>, ids: &[&str]) -> (Plan<'a>, Vec<Vec<f32>>) {
    let corpus: Vec<ChunkInput> = ids.iter().map(|id| ChunkInput::new(*id, *id)).collect();
    let vectors = (0..ids.len())
        .map(|i| vec![1.0, i as f32 + 1.0, 0.5])
        .collect();
    (
        Plan::with_vectors(base, corpus, vectors, settings(3, 1)).unwrap(),
        Vec::new(),
    )
}

#[test]
fn concurrent_ingest_does_not_lose_a_batch_committed_after_the_plan() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let (p, v) = plan_for(None, &["a"]);
    p.apply(&v, &batch("b0", "t0"), &dir).unwrap();

    // Two writers read the same version, then both write.
    let first = Index::open(&dir).unwrap();
    let second = Index::open(&dir).unwrap();
    let (p1, v1) = plan_for(Some(&first), &["a", "b"]);
    let (p2, v2) = plan_for(Some(&second), &["a", "c"]);
    p1.apply(&v1, &batch("b1", "t1"), &dir).unwrap();
    let e = p2.apply(&v2, &batch("b2", "t2"), &dir).unwrap_err();
    assert!(matches!(e, IndexError::Conflict { .. }), "{e}");
    assert!(e.to_string().contains("manifest.json"), "{e}");
    // The first writer's batch is there; nothing of the refused one.
    let now = Index::open(&dir).unwrap();
    let names: Vec<&str> = now
        .manifest()
        .batches
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(names, ["b0", "b1"]);
    assert!(now.get("b").is_some() && now.get("c").is_none());
    now.verify().unwrap();
}

#[test]
fn a_writer_holding_the_lock_keeps_others_out_until_it_is_released() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let lock = WriterLock::acquire(&dir, Duration::ZERO).unwrap();
    assert_eq!(lock.path(), tmp.path().join(".kb.lock"));
    assert_eq!(
        std::fs::read_to_string(lock.path()).unwrap(),
        std::process::id().to_string()
    );
    // The same process asking again is told who holds it, at once.
    let e = WriterLock::acquire(&dir, Duration::from_secs(5)).unwrap_err();
    assert!(matches!(e, IndexError::Locked { .. }), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("PID {}", std::process::id())),
        "{e}"
    );
    // apply under our own lock does not wait for itself.
    let (p, v) = plan_for(None, &["a"]);
    p.apply(&v, &batch("b0", "t0"), &dir).unwrap();
    drop(lock);
    let again = WriterLock::acquire(&dir, Duration::ZERO).unwrap();
    drop(again);
}

/// A PID that is certainly not running: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn temporary_folders_left_by_killed_writers_are_removed_by_the_next_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let (p, v) = plan_for(None, &["a"]);
    p.apply(&v, &batch("b0", "t0"), &dir).unwrap();
    let pid = dead_pid();
    let stale = [
        format!(".kb.tmp-{pid}-0"),
        format!(".kb.tmp-{pid}-7"),
        format!(".kb.tmp-{pid}-3.old"),
    ];
    for name in &stale {
        let d = tmp.path().join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join(files::VECTORS), vec![0u8; 4096]).unwrap();
    }
    // Not ours to touch: other names, and another index's temporaries.
    for name in [".kb.tmp-notes", ".kb2.tmp-1-1", "kb.tmp-1-1"] {
        std::fs::create_dir(tmp.path().join(name)).unwrap();
    }
    let base = Index::open(&dir).unwrap();
    let (p, v) = plan_for(Some(&base), &["a", "b"]);
    p.apply(&v, &batch("b1", "t1"), &dir).unwrap();
    for name in &stale {
        assert!(!tmp.path().join(name).exists(), "{name} was left");
    }
    for name in [".kb.tmp-notes", ".kb2.tmp-1-1", "kb.tmp-1-1"] {
        assert!(tmp.path().join(name).exists(), "{name} was removed");
    }
    Index::open(&dir).unwrap().verify().unwrap();
}

#[test]
fn an_index_moved_aside_by_a_writer_that_died_is_put_back() {
    // Without an atomic exchange, a writer moves the old index to `.kb.tmp-PID-N.old`, then
    // the new one in; killed in between, it leaves no `kb`. The next writer restores it.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let (p, v) = plan_for(None, &["a"]);
    p.apply(&v, &batch("b0", "t0"), &dir).unwrap();
    let aside = tmp.path().join(format!(".kb.tmp-{}-0.old", dead_pid()));
    std::fs::rename(&dir, &aside).unwrap();
    drop(WriterLock::acquire(&dir, Duration::ZERO).unwrap());
    assert!(!aside.exists());
    let index = Index::open(&dir).unwrap();
    assert_eq!(index.manifest().batches.len(), 1);
    index.verify().unwrap();
}
