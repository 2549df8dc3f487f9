//! `veredicto audit`: nothing wrong, nothing lost. A full disk during `audit review` leaves the
//! review log as it was; a torn tail from a crash is reported and moved aside; packages that
//! were altered are never "verified"; `audit package --out` writes only inside its target.

use crate::common;
use common::{stderr, stdout, veredicto, veredicto_in, workspace};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn copy_example(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(workspace().join("examples/grounding").join(name), &to).expect("copy");
    to
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn review_args<'a>(cases: &'a str, reviewer: &'a str, reason: &'a str) -> Vec<&'a str> {
    vec![
        "audit",
        "review",
        cases,
        "--claim",
        "C-017-2",
        "--support",
        "partially_supported",
        "--reason",
        reason,
        "--reviewer",
        reviewer,
        "--time",
        "2026-11-30T10:00:00Z",
    ]
}

/// Runs the binary with a file-size limit of `blocks` × 1024 bytes (RLIMIT_FSIZE, as a full
/// disk: a write past the limit is cut short, the next one fails with EFBIG). SIGXFSZ is
/// ignored, as an ordinary write error is what a full disk gives.
fn veredicto_with_file_limit(blocks: u64, args: &[&str]) -> Output {
    Command::new("bash")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$@\""))
        .arg("bash")
        .arg(env!("CARGO_BIN_EXE_veredicto"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run veredicto under ulimit")
}

#[test]
fn full_disk_during_review_leaves_the_log_whole_and_usable() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let log = dir.path().join("q017.yaml.reviews.jsonl");
    // Fill the log to just under 1024 bytes with whole records.
    let mut n = 0;
    while std::fs::metadata(&log).map_or(0, |m| m.len()) < 800 {
        n += 1;
        let who = format!("r{n}");
        let o = veredicto(&review_args(s(&cases), &who, "scope"));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let before = std::fs::read(&log).expect("log");
    assert!(before.len() < 1024, "{}", before.len());
    let long_reason = "x".repeat(400);
    let o = veredicto_with_file_limit(1, &review_args(s(&cases), "full", &long_reason));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("q017.yaml.reviews.jsonl"), "{err}");
    assert!(err.contains("nothing appended"), "{err}");
    assert_eq!(std::fs::read(&log).expect("log"), before, "log changed");
    // Every audit command still works on the case file, and the next review appends.
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = veredicto(&review_args(s(&cases), "after", "scope"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let after = std::fs::read(&log).expect("log");
    assert!(after.starts_with(&before));
    assert_eq!(
        after
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        n + 1
    );
}

#[test]
fn torn_review_tail_is_reported_and_quarantined_keeping_complete_records() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let log = dir.path().join("q017.yaml.reviews.jsonl");
    for who in ["ana", "bo"] {
        let o = veredicto(&review_args(s(&cases), who, "scope"));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let whole = std::fs::read(&log).expect("log");
    // A crash mid-append: half a record, no newline, cut inside a UTF-8 character.
    let mut torn = whole.clone();
    torn.extend_from_slice(
        "{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"reason\":\"alcance ñ"
            .as_bytes(),
    );
    torn.pop();
    std::fs::write(&log, &torn).expect("write");

    let o = veredicto(&["audit", "sheet", s(&cases), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("q017.yaml.reviews.jsonl: line 3"), "{err}");
    assert!(err.contains("warning"), "{err}");
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(rows[1]["annexes"].as_array().expect("annexes").len(), 2);

    // The next review moves the torn tail aside and appends after the complete records.
    let o = veredicto(&review_args(s(&cases), "cy", "scope"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("moved to"), "{err}");
    let q = dir.path().join("q017.yaml.reviews.jsonl.torn-1");
    assert_eq!(
        std::fs::read(&q).expect("quarantine"),
        torn[whole.len()..].to_vec()
    );
    let now = std::fs::read(&log).expect("log");
    assert!(now.starts_with(&whole));
    assert_eq!(now.iter().filter(|&&b| b == b'\n').count(), 3);
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));

    // A bad line in the middle is still an error naming file and line.
    let mut mid = b"{not json}\n".to_vec();
    mid.extend_from_slice(&now);
    std::fs::write(&log, &mid).expect("write");
    let o = veredicto(&["audit", "check", s(&cases)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("q017.yaml.reviews.jsonl: line 1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn verify_with_history_catches_a_manifest_rehashed_by_an_attacker() {
    use veredicto_grounding as g;
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let hist = dir.path().join("h.db");
    let o = veredicto(&["audit", "record", s(&cases), "--history", s(&hist)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    let mut args = review_args(&id, "ana", "scope");
    args.extend(["--history", s(&hist)]);
    let o = veredicto(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let pkg = dir.path().join("pkg");
    let o = veredicto(&[
        "audit",
        "package",
        &id,
        "--out",
        s(&pkg),
        "--history",
        s(&hist),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let o = veredicto(&["audit", "verify", s(&pkg), "--history", s(&hist)]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let text = stdout(&o);
    assert!(text.contains(&format!("checked: audit run {id}")), "{text}");
    assert!(text.contains("first 1 of 1 review"), "{text}");
    // Without a history the run binding is reported as not checked.
    let o = veredicto(&["audit", "verify", s(&pkg), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["run"], serde_json::json!(id));
    assert!(v["not_checked"].to_string().contains("--history"), "{v}");

    // The attacker rewrites the verdict and re-hashes the manifest.
    let files = g::read_package(&pkg).expect("read");
    let m: g::Manifest = serde_json::from_slice(&files[g::MANIFEST]).expect("manifest");
    let mut forged = files.clone();
    let reviews = String::from_utf8(files["reviews.jsonl"].clone()).expect("utf-8");
    forged.insert(
        "reviews.jsonl".into(),
        reviews
            .replace("partially_supported", "supported")
            .into_bytes(),
    );
    let forged = g::seal_run(forged, &m.tool_version, m.missing.clone(), m.run.clone());
    let fpkg = dir.path().join("forged");
    g::write_dir(&fpkg, &forged).expect("write");
    let o = veredicto(&["audit", "verify", s(&fpkg), "--history", s(&hist)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("reviews.jsonl is not the run's review records"),
        "{}",
        stdout(&o)
    );
}

/// Regression: inside a project whose veredicto.toml names no history, the default history
/// (`.veredicto/history.db` beside the file), seen from a subfolder, was taken as one the user chose, so verifying a
/// package that names a run failed with "no history at …" instead of saying the binding was
/// not checked.
#[test]
fn verify_in_a_project_without_a_history_reports_the_run_as_not_checked() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let hist = dir.path().join("elsewhere.db");
    let o = veredicto(&["audit", "record", s(&cases), "--history", s(&hist)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    let pkg = dir.path().join("pkg");
    let o = veredicto(&[
        "audit",
        "package",
        &id,
        "--out",
        s(&pkg),
        "--history",
        s(&hist),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let project = dir.path().join("project");
    let sub = project.join("notes");
    std::fs::create_dir_all(&sub).expect("mkdir");
    std::fs::write(
        project.join("veredicto.toml"),
        "golden = \"golden.jsonl\"\n",
    )
    .expect("toml");
    let o = veredicto_in(&sub, &["audit", "verify", s(&pkg), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert!(v["not_checked"].to_string().contains("--history"), "{v}");
    // A history the project file names is the user's choice: its absence is an error.
    std::fs::write(
        project.join("veredicto.toml"),
        "golden = \"golden.jsonl\"\nhistory = \"h.db\"\n",
    )
    .expect("toml");
    let o = veredicto_in(&sub, &["audit", "verify", s(&pkg), "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("no history at"), "{}", stderr(&o));
}

#[test]
fn verify_of_a_gzip_bomb_stops_at_the_member_limit() {
    use veredicto_grounding as g;
    let dir = tempfile::tempdir().expect("tmp");
    let mut files = g::Files::new();
    files.insert("bomb".into(), vec![0u8; 4 << 20]);
    let tgz = dir.path().join("b.tar.gz");
    std::fs::write(&tgz, g::tar_gz(&files).expect("tar")).expect("write");
    let o = veredicto(&["audit", "verify", s(&tgz), "--max-member-bytes", "1048576"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("b.tar.gz") && err.contains("limit of 1048576 bytes"),
        "{err}"
    );
}

#[test]
fn verify_of_a_duplicated_member_says_not_verified() {
    use veredicto_grounding as g;
    let dir = tempfile::tempdir().expect("tmp");
    let cases = copy_example(dir.path(), "q017.yaml");
    let tgz = dir.path().join("p.tar.gz");
    let o = veredicto(&["audit", "package", s(&cases), "--out", s(&tgz)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let files = g::read_package(&tgz).expect("read");
    // The tampered copy first, then every original member.
    let gz = flate2_free_tar(&files);
    std::fs::write(&tgz, gz).expect("write");
    let o = veredicto(&["audit", "verify", s(&tgz)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("appears more than once"),
        "{}",
        stdout(&o)
    );
}

/// A tar.gz whose first member is a tampered `sheet.csv`, followed by the package, built with
/// the system `tar` and `gzip` (the test crate has no tar dependency of its own).
fn flate2_free_tar(files: &veredicto_grounding::Files) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tmp");
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::write(a.join("sheet.csv"), "tampered").expect("write");
    veredicto_grounding::write_dir(&b, files).expect("write");
    let tar = dir.path().join("p.tar");
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    let st = Command::new("tar")
        .arg("-cf")
        .arg(&tar)
        .arg("-C")
        .arg(&a)
        .arg("sheet.csv")
        .arg("-C")
        .arg(&b)
        .args(&names)
        .status()
        .expect("tar");
    assert!(st.success());
    let out = Command::new("gzip")
        .arg("-c")
        .arg(&tar)
        .output()
        .expect("gzip");
    assert!(out.status.success());
    out.stdout
}

#[test]
fn package_out_with_a_hostile_case_file_name_from_the_history_writes_nothing_outside() {
    let dir = tempfile::tempdir().expect("tmp");
    let hist = dir.path().join("h.db");
    let cases = std::fs::read(workspace().join("examples/grounding/q017.yaml")).expect("read");
    let history = veredicto_store::History::open(&hist).expect("history");
    let mut ids = Vec::new();
    for name in ["../../evil.yaml", "..\\..\\evil.yaml", "/tmp/evil-abs.yaml"] {
        let meta = veredicto_store::AuditRunMeta {
            id: String::new(),
            created_at: "2026-11-30T10:00:00Z".into(),
            label: None,
            replay_of: None,
            cases_name: name.into(),
            cases_sha256: String::new(),
            counts: veredicto_store::AuditCounts {
                cases: 1,
                answers: 1,
                claims: 4,
                abstentions: 0,
                snapshots: vec![],
            },
            tool_version: "0.1.0".into(),
            git_revision: None,
        };
        ids.push(
            history
                .record_audit_run(&meta, &cases, None, &[])
                .expect("record"),
        );
    }
    drop(history);
    let work = dir.path().join("a").join("b");
    std::fs::create_dir_all(&work).expect("mkdir");
    for id in &ids {
        for out in ["pkg", "pkg.tar.gz"] {
            let o = veredicto(&[
                "audit",
                "package",
                id,
                "--out",
                s(&work.join(out)),
                "--history",
                s(&hist),
            ]);
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(stderr(&o).contains("package member"), "{}", stderr(&o));
        }
    }
    assert!(!dir.path().join("evil.yaml").exists());
    assert!(!dir.path().join("a").join("evil.yaml").exists());
    assert!(!Path::new("/tmp/evil-abs.yaml").exists());
    assert_eq!(std::fs::read_dir(&work).expect("dir").count(), 0);
}
