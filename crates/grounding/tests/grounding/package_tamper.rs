//! Altered packages are never "verified", reading a package cannot hang or exhaust memory, and
//! writing a package never leaves its target. Each test is named after what broke.

use std::io::Write;
use std::path::Path;
use std::time::Duration;
use veredicto_grounding::*;

fn inputs_package(
    cases_name: &str,
    run: Option<serde_json::Value>,
) -> Result<Files, GroundingError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grounding/q017.yaml");
    let (set, bytes) = load_cases(&path).expect("valid");
    let reviews = b"{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"support\":\"partially_supported\",\"reason\":\"scope\",\"reviewer\":\"r2\",\"time\":\"t\"}\n";
    let recs = read_reviews_from(reviews);
    build_package(&PackageInputs {
        cases_name,
        cases_bytes: &bytes,
        set: &set,
        reviews_bytes: Some(reviews),
        reviews: &recs,
        relevance: &[],
        citation_marks: &[],
        relevance_suggestions: &[],
        suggestions_bytes: None,
        suggestions: &[],
        run,
        notes: None,
        tool_version: "0.1.0",
        created: None,
        comparison: None,
    })
}

fn read_reviews_from(b: &[u8]) -> Vec<ReviewRecord> {
    parse_review_log(Path::new("reviews.jsonl"), b)
        .expect("log")
        .records
}

fn package() -> Files {
    inputs_package("q017.yaml", None).expect("package")
}

/// A tar.gz built entry by entry: (name, type, body) with an optional link target.
fn tar_of(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut t = tar::Builder::new(gz);
    for (name, ty, body, link) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*ty);
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_path(name).expect("path");
        if let Some(l) = link {
            h.set_link_name(l).expect("link");
        }
        h.set_cksum();
        t.append(&h, *body).expect("append");
    }
    t.into_inner().expect("tar").finish().expect("gz")
}

fn regular(files: &Files) -> Vec<(&str, tar::EntryType, &[u8], Option<&str>)> {
    files
        .iter()
        .map(|(p, b)| (p.as_str(), tar::EntryType::Regular, b.as_slice(), None))
        .collect()
}

fn verify_tgz(bytes: &[u8]) -> Verification {
    verify_package_bytes(Path::new("p.tar.gz"), bytes, &ReadLimits::default()).expect("readable")
}

#[test]
fn a_clean_hand_built_archive_verifies() {
    let files = package();
    let v = verify_tgz(&tar_of(&regular(&files)));
    assert!(v.verified(), "{:?}", v.differences);
    assert!(!v.checked.is_empty() && !v.not_checked.is_empty());
}

#[test]
fn tampered_duplicate_member_before_the_original_is_not_verified() {
    let files = package();
    let mut entries = vec![(
        "sheet.csv",
        tar::EntryType::Regular,
        b"tampered".as_slice(),
        None,
    )];
    entries.extend(regular(&files));
    let tgz = tar_of(&entries);
    let v = verify_tgz(&tgz);
    assert!(!v.verified());
    assert!(
        v.differences.iter().any(|d| d.contains("more than once")),
        "{:?}",
        v.differences
    );
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("p.tar.gz");
    std::fs::write(&p, &tgz).expect("write");
    assert!(read_package(&p).is_err());
}

#[test]
fn symlink_hardlink_fifo_and_device_members_are_not_verified() {
    let files = package();
    for (ty, link) in [
        (tar::EntryType::Symlink, Some("/etc/passwd")),
        (tar::EntryType::Link, Some("sheet.csv")),
        (tar::EntryType::Fifo, None),
        (tar::EntryType::Char, None),
        (tar::EntryType::Block, None),
        (tar::EntryType::Directory, None),
    ] {
        let mut entries = regular(&files);
        entries.push(("evil", ty, b"".as_slice(), link));
        let v = verify_tgz(&tar_of(&entries));
        assert!(!v.verified(), "{ty:?}");
        assert!(
            v.differences
                .iter()
                .any(|d| d.contains("evil") && d.contains("only regular files")),
            "{ty:?}: {:?}",
            v.differences
        );
    }
}

#[test]
fn data_after_the_end_of_archive_marker_is_not_verified() {
    let files = package();
    // The tar stream, then junk inside the same gzip stream.
    let mut t = tar::Builder::new(Vec::new());
    for (p, b) in &files {
        let mut h = tar::Header::new_gnu();
        h.set_size(b.len() as u64);
        h.set_mode(0o644);
        t.append_data(&mut h, p, b.as_slice()).expect("append");
    }
    let mut raw = t.into_inner().expect("tar");
    raw.extend_from_slice(b"hidden payload after the end");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).expect("gz");
    let v = verify_tgz(&gz.finish().expect("gz"));
    assert!(!v.verified());
    assert!(
        v.differences.iter().any(|d| d.contains("end-of-archive")),
        "{:?}",
        v.differences
    );
}

#[test]
fn data_after_the_gzip_stream_is_not_verified() {
    let files = package();
    for tail in [b"x".to_vec(), tar_gz(&files).expect("second member")] {
        let mut tgz = tar_gz(&files).expect("tar");
        tgz.extend_from_slice(&tail);
        let v = verify_tgz(&tgz);
        assert!(!v.verified());
        assert!(
            v.differences.iter().any(|d| d.contains("gzip stream")),
            "{:?}",
            v.differences
        );
    }
}

#[test]
fn manifest_rehashed_by_an_attacker_is_caught_by_the_recorded_run() {
    let run = serde_json::json!({"id": "01ARUN", "cases_sha256": "x"});
    let files = inputs_package("q017.yaml", Some(run)).expect("package");
    let m: Manifest = serde_json::from_slice(&files[MANIFEST]).expect("manifest");
    let bound = m.run.clone().expect("run in the manifest");
    assert_eq!(bound.id, "01ARUN");
    assert_eq!(bound.cases, "cases/q017.yaml");
    assert_eq!(bound.cases_sha256, sha256_hex(&files["cases/q017.yaml"]));
    let history_reviews: Vec<String> = String::from_utf8(files["reviews.jsonl"].clone())
        .expect("utf-8")
        .lines()
        .map(String::from)
        .collect();

    // The attacker changes the review log and re-seals: the manifest alone cannot tell.
    let mut forged = files.clone();
    forged.insert(
        "reviews.jsonl".into(),
        b"{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"support\":\"supported\",\"reason\":\"ok\",\"reviewer\":\"r2\",\"time\":\"t\"}\n".to_vec(),
    );
    let forged = seal_run(forged, "0.1.0", m.missing.clone(), m.run.clone());
    assert!(verify_files(&forged).is_empty());
    let dir = tempfile::tempdir().expect("tmp");
    let check = |files: &Files, name: &str, reviews: &[String], cases_sha: &str| {
        let p = dir.path().join(name);
        write_dir(&p, files).expect("write");
        let mut v = verify_package(&p, &ReadLimits::default()).expect("read");
        assert!(v.not_checked.iter().any(|n| n.contains("--history")));
        check_recorded_run(
            &mut v,
            Some(RecordedRun {
                id: "01ARUN",
                cases_sha256: cases_sha,
                reviews,
                suggestions: &[],
            }),
            "h.db",
        );
        v
    };
    let sha = bound.cases_sha256.as_str();
    let v = check(&files, "good", &history_reviews, sha);
    assert!(v.verified(), "{:?}", v.differences);
    assert!(
        v.checked.iter().any(|c| c.contains("first 1 of 1")),
        "{:?}",
        v.checked
    );
    // Reviews appended to the run after packaging are fine.
    let mut more = history_reviews.clone();
    more.push("{\"later\":1}".into());
    assert!(check(&files, "later", &more, sha).verified());
    let v = check(&forged, "forged", &history_reviews, sha);
    assert!(!v.verified());
    assert!(
        v.differences.iter().any(|d| d.contains("reviews.jsonl")),
        "{:?}",
        v.differences
    );
    // Another case file under the same run ID.
    let v = check(&files, "other", &history_reviews, &"0".repeat(64));
    assert!(v.differences.iter().any(|d| d.contains("case file")));
    // A run that the history does not hold.
    let p = dir.path().join("good");
    let mut v = verify_package(&p, &ReadLimits::default()).expect("read");
    check_recorded_run(&mut v, None, "h.db");
    assert!(!v.verified());
}

#[test]
fn manifest_run_binding_must_match_the_packaged_case_file() {
    let run = serde_json::json!({"id": "01ARUN"});
    let files = inputs_package("q017.yaml", Some(run)).expect("package");
    let m: Manifest = serde_json::from_slice(&files[MANIFEST]).expect("manifest");
    let mut r = m.run.clone().expect("run");
    r.cases_sha256 = "0".repeat(64);
    let mut f = files.clone();
    f.remove(MANIFEST);
    let resealed = seal_run(f, "0.1.0", m.missing.clone(), Some(r));
    assert!(verify_files(&resealed)
        .iter()
        .any(|d| d.contains("case file")));
}

/// Runs `f` on another thread; fails when it does not finish within 20 s (a hang).
fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("reading the package did not finish within 20 s")
}

#[cfg(unix)]
#[test]
fn fifo_in_a_folder_package_is_not_opened() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("pkg");
    write_dir(&p, &package()).expect("write");
    let fifo = p.join("pipe");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(st.success());
    let v = within_20s(move || verify_package(&p, &ReadLimits::default()).expect("read"));
    assert!(!v.verified());
    assert!(
        v.differences.iter().any(|d| d.contains("pipe is a FIFO")),
        "{:?}",
        v.differences
    );
}

#[cfg(unix)]
#[test]
fn symlinks_in_a_folder_package_are_not_followed() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("pkg");
    let files = package();
    write_dir(&p, &files).expect("write");
    // The same bytes, but through a link to a file outside the package.
    let outside = dir.path().join("sheet-outside.csv");
    std::fs::write(&outside, &files["sheet.csv"]).expect("write");
    std::fs::remove_file(p.join("sheet.csv")).expect("rm");
    std::os::unix::fs::symlink(&outside, p.join("sheet.csv")).expect("symlink");
    std::os::unix::fs::symlink("/dev/zero", p.join("zero")).expect("symlink");
    let v = within_20s(move || verify_package(&p, &ReadLimits::default()).expect("read"));
    assert!(!v.verified());
    for name in ["sheet.csv", "zero"] {
        assert!(
            v.differences
                .iter()
                .any(|d| d.contains(&format!("{name} is a symbolic link"))),
            "{:?}",
            v.differences
        );
    }
}

#[test]
fn gzip_bomb_stops_at_the_size_limits() {
    let mut files = package();
    files.insert("bomb".into(), vec![0u8; 8 << 20]);
    let tgz = tar_gz(&files).expect("tar");
    assert!(tgz.len() < 64 << 10, "{}", tgz.len());
    let small = ReadLimits {
        max_member_bytes: 1 << 20,
        ..ReadLimits::default()
    };
    let e = verify_package_bytes(Path::new("b.tar.gz"), &tgz, &small).expect_err("member cap");
    assert!(e.to_string().contains("--max-member-bytes"), "{e}");
    let small = ReadLimits {
        max_total_bytes: 2 << 20,
        ..ReadLimits::default()
    };
    let e = verify_package_bytes(Path::new("b.tar.gz"), &tgz, &small).expect_err("total cap");
    assert!(e.to_string().contains("--max-total-bytes"), "{e}");
    let small = ReadLimits {
        max_members: 3,
        ..ReadLimits::default()
    };
    let e = verify_package_bytes(Path::new("b.tar.gz"), &tgz, &small).expect_err("count cap");
    assert!(e.to_string().contains("--max-members"), "{e}");
    // Within the limits it is read (and the extra file reported).
    let v =
        verify_package_bytes(Path::new("b.tar.gz"), &tgz, &ReadLimits::default()).expect("read");
    assert!(v.differences.iter().any(|d| d.contains("extra file: bomb")));
}

#[test]
fn package_out_never_writes_outside_the_target() {
    let dir = tempfile::tempdir().expect("tmp");
    // A case file name from a history cannot choose where files go.
    for name in [
        "../../outside.yaml",
        "/abs.yaml",
        "a\\..\\..\\b.yaml",
        "..",
        "x/../../y.yaml",
    ] {
        assert!(inputs_package(name, None).is_err(), "{name}");
    }
    let target = dir.path().join("out").join("pkg");
    for bad in [
        "cases/../../outside.yaml",
        "../outside.yaml",
        "/tmp/abs-outside.yaml",
        "cases\\..\\..\\outside.yaml",
        "cases//x",
        "./x",
    ] {
        let mut files = package();
        files.insert(bad.into(), b"x".to_vec());
        let e = write_dir(&target, &files).expect_err(bad);
        assert!(e.to_string().contains("refusing"), "{e}");
        assert!(tar_gz(&files).is_err(), "{bad}");
    }
    assert!(!dir.path().join("outside.yaml").exists());
    assert!(!dir.path().join("out").join("outside.yaml").exists());
    assert!(!target.exists());
}

#[cfg(unix)]
#[test]
fn package_out_refuses_a_symlinked_target() {
    let dir = tempfile::tempdir().expect("tmp");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let link = dir.path().join("pkg");
    std::os::unix::fs::symlink(&elsewhere, &link).expect("symlink");
    let e = write_dir(&link, &package()).expect_err("symlink target");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_dir(&elsewhere).expect("dir").count(), 0);
}

/// A raw header block (GNU magic) with a valid checksum.
fn raw_header(name: &[u8], size: u64, ty: u8) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    h[100..107].copy_from_slice(b"0000644");
    h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    h[156] = ty;
    h[257..265].copy_from_slice(b"ustar  \0");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    h
}

#[test]
fn huge_gnu_long_name_is_refused_before_it_is_read() {
    // A 16 MiB "long name" (a tar reader that holds it in memory is a memory bomb).
    let mut raw = raw_header(b"././@LongLink", 16 << 20, b'L').to_vec();
    raw.extend(std::iter::repeat_n(b'a', 16 << 20));
    raw.extend_from_slice(&raw_header(b"x", 0, b'0'));
    raw.extend_from_slice(&[0u8; 1024]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).expect("gz");
    let tgz = gz.finish().expect("gz");
    let e = verify_package_bytes(Path::new("l.tar.gz"), &tgz, &ReadLimits::default())
        .expect_err("refused");
    assert!(e.to_string().contains("extended header"), "{e}");
}

#[test]
fn long_member_names_round_trip_through_gnu_and_pax_archives() {
    let long = format!("{}.yaml", "c".repeat(150));
    let files = inputs_package(&long, None).expect("package");
    let v = verify_tgz(&tar_gz(&files).expect("tar"));
    assert!(v.verified(), "{:?}", v.differences);
    assert!(v.members.contains_key(&format!("cases/{long}")));
    // The same members written by the system tar in POSIX (PAX) format.
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("pkg");
    write_dir(&d, &files).expect("write");
    let tgz = dir.path().join("p.tar.gz");
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    let st = std::process::Command::new("tar")
        .args(["--format=posix", "-czf"])
        .arg(&tgz)
        .arg("-C")
        .arg(&d)
        .args(&names)
        .status()
        .expect("tar");
    assert!(st.success());
    let v = verify_package(&tgz, &ReadLimits::default()).expect("read");
    assert!(v.verified(), "{:?}", v.differences);
}

#[test]
fn a_pax_path_record_cannot_smuggle_a_second_copy() {
    let files = package();
    // A PAX header renaming the next member to `sheet.csv`, placed before the original.
    let rec = b"18 path=sheet.csv\n";
    let mut raw = raw_header(b"PaxHeaders/x", rec.len() as u64, b'x').to_vec();
    raw.extend_from_slice(rec);
    raw.resize(raw.len().div_ceil(512) * 512, 0);
    raw.extend_from_slice(&raw_header(b"innocent", 8, b'0'));
    raw.extend_from_slice(b"tampered");
    raw.resize(raw.len().div_ceil(512) * 512, 0);
    let mut t = tar::Builder::new(Vec::new());
    for (p, b) in &files {
        let mut h = tar::Header::new_gnu();
        h.set_size(b.len() as u64);
        h.set_mode(0o644);
        t.append_data(&mut h, p, b.as_slice()).expect("append");
    }
    raw.extend_from_slice(&t.into_inner().expect("tar"));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).expect("gz");
    let v = verify_tgz(&gz.finish().expect("gz"));
    assert!(!v.verified());
    assert!(
        v.differences
            .iter()
            .any(|d| d.contains("sheet.csv appears more than once")),
        "{:?}",
        v.differences
    );
}
