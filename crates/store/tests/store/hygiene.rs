//! Input/output hygiene of the history: reading commands work where nothing can be written,
//! and error messages say each thing once.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use veredicto_store::synthetic::{meta, Synthetic};
use veredicto_store::{History, RunFilter, StoreError};

const CHILD: &str = "VEREDICTO_TEST_READ_ONLY_HISTORY";

fn read_everything(path: &Path) {
    let h = History::open_read_only(path).expect("opens read-only");
    let runs = h.list(&RunFilter::default()).expect("lists");
    assert_eq!(runs.len(), 2);
    let latest = h.get("latest").expect("reads the latest run");
    assert_eq!(latest.meta.id, runs[0].id);
    // A history opened read-only refuses to write.
    let report = Synthetic {
        cases: 5,
        seed: 9,
        skill: 0.9,
        golden_version: 1,
    }
    .report();
    assert!(h
        .record(&meta(&report, "2025-11-15T00:00:00Z", None), &report)
        .is_err());
}

/// `runs list`, `compare` and `report` only read: a history in a folder (and file) nobody
/// may write must open. Today's store opened it read-write and switched the journal, which
/// needs to create files beside it.
#[test]
fn history_in_a_read_only_folder_opens_for_reading() {
    if let Ok(path) = std::env::var(CHILD) {
        read_everything(Path::new(&path));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("ro");
    let path = folder.join("history.db");
    {
        let h = History::open(&path).unwrap();
        for (i, seed) in [1u64, 2].iter().enumerate() {
            let report = Synthetic {
                cases: 20,
                seed: *seed,
                skill: 0.9,
                golden_version: 1,
            }
            .report();
            h.record(
                &meta(&report, &format!("2025-11-1{i}T10:00:00Z"), None),
                &report,
            )
            .unwrap();
        }
    }
    let before: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        before.len(),
        1,
        "only the database after the writer closed: {before:?}"
    );
    let bytes = std::fs::read(&path).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Permissions do not bind a privileged user (root in a container): find out by trying.
    let probe = folder.join("probe");
    let privileged = std::fs::write(&probe, "x").is_ok();
    let _ = std::fs::remove_file(&probe);
    if privileged {
        // Read as `nobody` in a child of this test binary.
        let status = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "history_in_a_read_only_folder_opens_for_reading",
                "--nocapture",
            ])
            .env(CHILD, &path)
            .status();
        match status {
            Ok(s) => assert!(s.success(), "the read-only child failed"),
            Err(e) => eprintln!("skipped the unprivileged read: setpriv: {e}"),
        }
    } else {
        read_everything(&path);
    }
    let after: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after);
    assert_eq!(bytes, std::fs::read(&path).unwrap());
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every message of an error's chain, joined as `anyhow` prints `{:#}`.
fn chain(e: &dyn std::error::Error) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push(s.to_string());
        cur = s.source();
    }
    out
}

/// I/O and SQLite errors were shown in the message *and* chained as the source, so the CLI
/// printed `…: unable to open database file: unable to open database file`.
#[test]
fn io_and_sqlite_errors_are_not_printed_twice() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let errors: Vec<StoreError> = vec![
        History::open(&blocker.join("sub/history.db")).unwrap_err(),
        History::open(dir.path()).unwrap_err(),
    ];
    for e in &errors {
        let parts = chain(e);
        for (i, later) in parts.iter().enumerate().skip(1) {
            assert!(
                !parts[..i]
                    .iter()
                    .any(|earlier| earlier.contains(later.as_str())),
                "repeated in {parts:?}"
            );
        }
    }
}
