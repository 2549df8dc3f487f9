//! Which project file a command uses: discovery does not pick up a `veredicto.toml` that
//! another user planted above the working folder (it could run a `cmd:` program as you and
//! redirect the history), says which file is in use, and warns about one anyone may write.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use crate::common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// The uid files created by this process get (the effective user).
fn my_uid(dir: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    let probe = dir.join(".uid-probe");
    std::fs::write(&probe, "").unwrap();
    let uid = std::fs::metadata(&probe).unwrap().uid();
    std::fs::remove_file(probe).unwrap();
    uid
}

/// The uid of `nobody`, a user that is neither root nor the one running the tests.
const NOBODY: u32 = 65534;

fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_veredicto"));
    c.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("VEREDICTO_CONFIG")
        .env_remove("VEREDICTO_TRUSTED_PATHS")
        .env_remove("VEREDICTO_NO_CONFIG");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run veredicto")
}

/// A shared, world-writable folder owned by `nobody` holding a planted veredicto.toml whose
/// `cmd:` retriever writes a marker file, and a subfolder of the current user's to work in.
/// Returns (shared folder, working subfolder, marker path). `None` when the tests cannot
/// give a folder to another user (not running as root).
fn planted(base: &Path) -> Option<(std::path::PathBuf, std::path::PathBuf, std::path::PathBuf)> {
    if my_uid(base) != 0 {
        eprintln!("skipped: giving a folder to another user needs root");
        return None;
    }
    let shared = base.join("shared");
    let me = shared.join("me");
    std::fs::create_dir_all(&me).unwrap();
    let marker = base.join("MARKER");
    let script = shared.join("evil.sh");
    std::fs::write(&script, format!("touch {}\n", marker.display())).unwrap();
    std::fs::copy(example("golden.jsonl"), shared.join("golden.jsonl")).unwrap();
    let toml = shared.join("veredicto.toml");
    std::fs::write(
        &toml,
        format!(
            "golden = \"golden.jsonl\"\nhistory = \"{}\"\n[source]\nretriever = \"cmd:sh {}\"\n",
            base.join("stolen.db").display(),
            script.display()
        ),
    )
    .unwrap();
    for p in [&shared, &toml, &script] {
        std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    Some((shared, me, marker))
}

/// Regression: `veredicto exam` run from a folder of one's own inside another user's
/// shared folder used the veredicto.toml planted there, ran its `cmd:` retriever as the
/// invoking user and recorded into the history it named.
#[test]
fn a_project_file_in_another_users_folder_is_not_used_and_named_in_a_warning() {
    let base = tempfile::tempdir().unwrap();
    let Some((shared, me, marker)) = planted(base.path()) else {
        return;
    };
    let o = run(&me, &["exam", "--no-record"], &[]);
    let err = stderr(&o);
    assert!(!marker.exists(), "the planted cmd: retriever ran: {err}");
    assert!(!base.path().join("stolen.db").exists(), "{err}");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("warning: ../veredicto.toml is not used"),
        "the warning names the file: {err}"
    );
    assert!(err.contains("uid 65534"), "and its owner: {err}");
    assert!(
        err.contains(&format!(
            "VEREDICTO_CONFIG={}",
            shared.join("veredicto.toml").display()
        )) && err.contains(&format!("VEREDICTO_TRUSTED_PATHS={}", shared.display())),
        "and how to trust it: {err}"
    );
    assert!(!err.contains("project file ../veredicto.toml"), "{err}");
    // The warning is not silenced by -q.
    let q = run(&me, &["-q", "exam", "--no-record"], &[]);
    assert!(stderr(&q).contains("is not used"), "{}", stderr(&q));
    assert!(!marker.exists());
}

#[test]
fn a_trusted_path_or_veredicto_config_uses_another_users_project_file() {
    let base = tempfile::tempdir().unwrap();
    let Some((shared, me, marker)) = planted(base.path()) else {
        return;
    };
    let shared_s = shared.display().to_string();
    let o = run(
        &me,
        &["exam", "--no-record"],
        &[("VEREDICTO_TRUSTED_PATHS", &shared_s)],
    );
    let err = stderr(&o);
    assert!(marker.exists(), "trusted, it is used: {err}");
    assert!(
        err.contains("project file ../veredicto.toml (trusted by VEREDICTO_TRUSTED_PATHS)"),
        "{err}"
    );
    assert!(!err.contains("is not used"), "{err}");
    std::fs::remove_file(&marker).unwrap();
    // `DIR/*` trusts the folders below DIR; `*` every folder.
    let below = format!("{}/*", base.path().display());
    for trusted in [below.as_str(), "*"] {
        run(
            &me,
            &["exam", "--no-record"],
            &[("VEREDICTO_TRUSTED_PATHS", trusted)],
        );
        assert!(marker.exists(), "{trusted}");
        std::fs::remove_file(&marker).unwrap();
    }
    // An unrelated trusted folder changes nothing.
    run(
        &me,
        &["exam", "--no-record"],
        &[("VEREDICTO_TRUSTED_PATHS", "/nonexistent")],
    );
    assert!(!marker.exists());
    let file = shared.join("veredicto.toml").display().to_string();
    let o = run(
        &me,
        &["exam", "--no-record"],
        &[("VEREDICTO_CONFIG", &file)],
    );
    assert!(marker.exists(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("project file {file} (VEREDICTO_CONFIG)")),
        "{}",
        stderr(&o)
    );
}

/// A project file of one's own in a folder of another user's: the folder decides (anyone
/// who may write it may replace the file).
#[test]
fn the_walk_stops_at_a_folder_of_another_user() {
    let base = tempfile::tempdir().unwrap();
    if my_uid(base.path()) != 0 {
        eprintln!("skipped: giving a folder to another user needs root");
        return;
    }
    let theirs = base.path().join("theirs");
    let mine = theirs.join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    // Mine, above their folder: not reached.
    write(base.path(), "veredicto.toml", "golden = \"golden.jsonl\"\n");
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    let o = run(&mine, &["-v", "runs", "list"], &[]);
    let err = stderr(&o);
    assert!(!err.contains("veredicto: project file"), "{err}");
    assert!(
        err.contains(&format!(
            "the search for veredicto.toml stopped at {}, which belongs to uid 65534",
            theirs.display()
        )),
        "-v says where the search stopped: {err}"
    );
    // A file of one's own inside their folder: not used either.
    write(&theirs, "veredicto.toml", "golden = \"golden.jsonl\"\n");
    let o = run(&mine, &["runs", "list"], &[]);
    assert!(
        stderr(&o).contains("../veredicto.toml is not used: its folder"),
        "{}",
        stderr(&o)
    );
}

/// Every command that reads the project file says which one (silenced by -q), and a
/// project file any user may write is a warning.
#[test]
fn the_project_file_in_use_is_named_and_a_world_writable_one_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["golden.jsonl", "run-accept.trec"] {
        std::fs::copy(example(f), dir.path().join(f)).unwrap();
    }
    let toml = write(
        dir.path(),
        "veredicto.toml",
        "golden = \"golden.jsonl\"\n[source]\nrun = \"run-accept.trec\"\n",
    );
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let o = run(&sub, &["models", "list"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "veredicto: project file ../veredicto.toml\n",
        "one line"
    );
    let q = run(&sub, &["-q", "models", "list"], &[]);
    assert_eq!(stderr(&q), "", "-q silences it");

    std::fs::set_permissions(&toml, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = run(&sub, &["-q", "models", "list"], &[]);
    assert!(
        stderr(&o).contains("warning: ../veredicto.toml is writable by every user of this machine"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("chmod o-w"), "{}", stderr(&o));
}
