//! Input and output hygiene of the grounding audit: deep YAML, repeated JSON keys, huge
//! values in errors, HTML in Markdown sheets, file names with a backslash, one policy file.

use std::path::Path;
use veredicto_grounding::*;

fn example() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/grounding/p7.yaml"
    ))
    .unwrap()
}

/// 160,000 nested `[` took 49 s to refuse; now the nesting is capped before parsing, with
/// the file and the line.
#[test]
fn deeply_nested_yaml_is_refused_at_its_line() {
    for deep in [
        format!(
            "schema: veredicto-grounding/1\ncases: {}{}\n",
            "[".repeat(160_000),
            "]".repeat(160_000)
        ),
        format!(
            "schema: veredicto-grounding/1\ncases:\n  {}x\n",
            "- ".repeat(200)
        ),
        format!(
            "schema: veredicto-grounding/1\ncases: {}\n",
            "{a: ".repeat(150) + &"}".repeat(150)
        ),
    ] {
        let e = parse_cases(Path::new("deep.yaml"), &deep)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("deep.yaml: line "),
            "{}",
            &e[..e.len().min(300)]
        );
        assert!(
            e.contains("nested more than 128 levels"),
            "{}",
            &e[..e.len().min(300)]
        );
    }
    // Ordinary files, block scalars and quoted brackets are not affected.
    parse_cases(Path::new("p7.yaml"), &example()).unwrap();
    let text = example().replacen(
        "schema: veredicto-grounding/1",
        &format!("# {}\nschema: veredicto-grounding/1", "[".repeat(300)),
        1,
    );
    parse_cases(Path::new("p7.yaml"), &text).unwrap();
}

/// A case file in JSON with a key given twice kept the last value without a word.
#[test]
fn duplicate_keys_in_a_json_case_file_are_refused() {
    let v: serde_json::Value = serde_norway::from_str(&example()).unwrap();
    let json = serde_json::to_string_pretty(&v).unwrap();
    parse_cases(Path::new("p7.json"), &json).unwrap();
    let dup = json.replacen("\"schema\": ", "\"schema\": \"x\",\n  \"schema\": ", 1);
    let e = parse_cases(Path::new("p7.json"), &dup)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("p7.json: line 3"), "{e}");
    assert!(e.contains("duplicate key `schema`"), "{e}");
}

/// A 10 MB scalar of the wrong type was echoed whole.
#[test]
fn huge_values_in_errors_are_cut() {
    let big = "x".repeat(1_000_000);
    let text = format!("schema: veredicto-grounding/1\ncases: {big}\u{1b}[2J\n");
    let e = parse_cases(Path::new("big.yaml"), &text)
        .unwrap_err()
        .to_string();
    assert!(e.len() < 1000, "{} bytes", e.len());
    assert!(!e.contains('\u{1b}'));
    let text = example().replacen(
        "schema: veredicto-grounding/1",
        &format!("schema: {big}"),
        1,
    );
    let e = parse_cases(Path::new("big.yaml"), &text)
        .unwrap_err()
        .to_string();
    assert!(e.len() < 1000, "{} bytes", e.len());
    let json = format!("{{\"schema\": \"veredicto-grounding/1\", \"cases\": \"{big}\"}}");
    let e = parse_cases(Path::new("big.json"), &json)
        .unwrap_err()
        .to_string();
    assert!(e.len() < 1000, "{} bytes", e.len());
    assert!(e.contains("characters cut"), "{e}");
}

/// `<img src=…>` in a claim went raw into the Markdown sheet pasted in PR comments.
#[test]
fn markdown_sheet_escapes_html_from_the_data() {
    let text = example();
    let set = parse_cases(Path::new("p7.yaml"), &text).unwrap();
    let mut rows = build_sheet(&set, &[], &[]);
    rows[0].claim_text =
        "<img src=https://tracker.example/x.png> [click](javascript:alert(1)) | \u{1b}[31m".into();
    let md = to_markdown(&rows);
    assert!(!md.contains("<img"), "{md}");
    assert!(
        md.contains("&lt;img src=https://tracker.example/x.png&gt;"),
        "{md}"
    );
    assert!(!md.contains("[click](javascript"), "{md}");
    assert!(!md.contains('\u{1b}'));
    assert_eq!(md.lines().count(), 2 + rows.len(), "one line per row");
}

/// A case file named `a\b.yaml` was packaged as `cases/a\b.yaml` but read back from a folder
/// package as `cases/a/b.yaml`, so `audit verify` said the package was altered.
#[test]
fn folder_package_with_a_backslash_in_a_file_name_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Files::new();
    files.insert("cases/a\\b.yaml".into(), example().into_bytes());
    files.insert("sheet.csv".into(), b"x\n".to_vec());
    let sealed = seal(files, "test", Vec::new());
    let out = dir.path().join("pkg");
    write_dir(&out, &sealed).unwrap();
    let read = read_package(&out).unwrap();
    assert!(read.contains_key("cases/a\\b.yaml"), "{:?}", read.keys());
    assert_eq!(verify_files(&read), Vec::<String>::new());
}

/// One policy file serves the exam and the audit: exam keys beside `[grounding]`.
#[test]
fn the_audit_reads_a_policy_file_with_exam_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(
        &path,
        "top_k = 5\nrecall_floor = 0.8\n\n[domains.viajes]\ntop_k = 3\n\n[grounding]\nmin_support = 0.9\n",
    )
    .unwrap();
    assert_eq!(load_policy(&path).unwrap().min_support, Some(0.9));
}
