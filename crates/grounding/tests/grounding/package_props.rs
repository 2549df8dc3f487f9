//! Audit packages: any tampered byte, deleted file or added file is detected; packaging
//! twice is byte-identical.

use proptest::prelude::*;
use std::path::Path;
use veredicto_grounding::*;

fn package() -> Files {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grounding/q017.yaml");
    let (set, bytes) = load_cases(&path).expect("valid");
    let reviews = b"{\"case\":\"Q-017\",\"answer\":\"A-017\",\"claim\":\"C-017-2\",\"support\":\"partially_supported\",\"reason\":\"scope\",\"reviewer\":\"r2\",\"time\":\"t\"}\n";
    let recs = vec![ReviewRecord {
        case: "Q-017".into(),
        answer: "A-017".into(),
        claim: "C-017-2".into(),
        support: Support::PartiallySupported,
        reason: "scope".into(),
        reviewer: "r2".into(),
        time: "t".into(),
        diagnosis: None,
    }];
    build_package(&PackageInputs {
        cases_name: "q017.yaml",
        cases_bytes: &bytes,
        set: &set,
        reviews_bytes: Some(reviews),
        reviews: &recs,
        relevance: &[],
        citation_marks: &[],
        relevance_suggestions: &[],
        suggestions_bytes: None,
        suggestions: &[],
        run: None,
        notes: None,
        tool_version: "0.1.0",
        created: None,
        comparison: None,
    })
    .expect("package")
}

#[test]
fn a_fresh_package_verifies_and_lists_what_is_missing() {
    let files = package();
    assert_eq!(verify_files(&files), Vec::<String>::new());
    let m: Manifest = serde_json::from_slice(&files[MANIFEST]).expect("manifest");
    assert_eq!(m.tool_version, "0.1.0");
    let missing: Vec<&str> = m.missing.iter().map(|x| x.part.as_str()).collect();
    assert_eq!(missing, vec!["comparison.json", "notes.md"]);
    assert!(!files.contains_key("notes.md"));
    for f in [
        "cases/q017.yaml",
        "retrieval.jsonl",
        "answers.json",
        "citations.json",
        "sheet.csv",
        "sheet.json",
        "reviews.jsonl",
        "version.json",
        "schema.json",
        "metrics.json",
    ] {
        assert!(files.contains_key(f), "{f}");
    }
}

#[test]
fn packaging_twice_is_byte_identical_also_as_tar_gz() {
    let a = package();
    let b = package();
    assert_eq!(a, b);
    assert_eq!(tar_gz(&a).expect("tar"), tar_gz(&b).expect("tar"));
}

#[test]
fn tar_gz_and_directory_round_trip() {
    let files = package();
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("pkg");
    write_dir(&out, &files).expect("write");
    assert_eq!(read_package(&out).expect("read"), files);
    let tgz = dir.path().join("pkg.tar.gz");
    std::fs::write(&tgz, tar_gz(&files).expect("tar")).expect("write");
    assert_eq!(read_package(&tgz).expect("read"), files);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_tampered_byte_is_detected(file in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let mut files = package();
        let names: Vec<String> = files.keys().cloned().collect();
        let name = file.get(&names).clone();
        let bytes = files.get_mut(&name).expect("file");
        prop_assume!(!bytes.is_empty());
        let i = at.index(bytes.len());
        bytes[i] ^= flip;
        prop_assert!(!verify_files(&files).is_empty(), "tampering {} at {} undetected", name, i);
    }

    #[test]
    fn any_deleted_file_is_detected(file in any::<prop::sample::Index>()) {
        let mut files = package();
        let names: Vec<String> = files.keys().cloned().collect();
        files.remove(file.get(&names));
        prop_assert!(!verify_files(&files).is_empty());
    }

    #[test]
    fn any_added_file_is_detected(name in "[a-z]{1,8}(/[a-z]{1,8})?\\.[a-z]{1,4}", body in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut files = package();
        prop_assume!(!files.contains_key(&name));
        files.insert(name.clone(), body);
        let d = verify_files(&files);
        prop_assert!(d.iter().any(|x| x.contains(&name)), "{:?}", d);
    }

    #[test]
    fn truncating_or_appending_is_detected(file in any::<prop::sample::Index>(), extra in prop::collection::vec(any::<u8>(), 1..8)) {
        let mut files = package();
        let names: Vec<String> = files.keys().cloned().collect();
        let name = file.get(&names).clone();
        files.get_mut(&name).expect("file").extend_from_slice(&extra);
        prop_assert!(!verify_files(&files).is_empty());
    }
}
