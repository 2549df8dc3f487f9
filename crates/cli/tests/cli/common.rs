//! Helpers shared by the CLI tests (included with `mod common;`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (two levels above this crate).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The test data that comes with the repository (`tests/data/`: real public datasets with
/// their licences and SHA-256 list), or `$VEREDICTO_TEST_DATA`.
pub fn test_data() -> PathBuf {
    match std::env::var_os("VEREDICTO_TEST_DATA") {
        Some(p) => PathBuf::from(p),
        None => workspace().join("tests/data"),
    }
}

pub fn example(name: &str) -> PathBuf {
    workspace().join("examples/rack").join(name)
}

/// Runs the binary in a fresh working directory (so the default history,
/// `.veredicto/history.db`, lands in a temporary folder).
pub fn veredicto(args: &[&str]) -> Output {
    let cwd = tempfile::tempdir().expect("tempdir");
    veredicto_in(cwd.path(), args)
}

/// Runs the binary in `dir`.
pub fn veredicto_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run veredicto")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes `content` to `dir/name` and returns the path as a string.
pub fn write(dir: &Path, name: &str, content: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, content).expect("write fixture");
    p.to_string_lossy().into_owned()
}
