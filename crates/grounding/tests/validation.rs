//! Every validation error names file, path, field and (when found) line.

use std::path::Path;
use veredicto_grounding::*;

const BASE: &str = r#"schema: veredicto-grounding/1
cases:
  - id: Q
    query: q
    snapshot: s
    sources:
      - id: D
        version: v
        passages:
          - id: p
            text: t
    required_facts:
      - { id: G, text: g }
    answers:
      - id: A
        text: a
        citations:
          - { id: "1", source: D, passage: p }
        claims:
          - id: C1
            text: c
            citations: [CIT]
            facts: [FACT]
            support: { verdict: VERDICT, reason: "REASON" }
"#;

fn run(cit: &str, fact: &str, verdict: &str, reason: &str) -> Result<CaseSet, GroundingError> {
    let t = BASE
        .replace("CIT", cit)
        .replace("FACT", fact)
        .replace("VERDICT", verdict)
        .replace("REASON", reason);
    parse_cases(Path::new("cases.yaml"), &t)
}

fn issues(e: GroundingError) -> Vec<Issue> {
    match e {
        GroundingError::Invalid { path, issues } => {
            assert_eq!(path, Path::new("cases.yaml"));
            issues
        }
        other => panic!("expected Invalid, got {other}"),
    }
}

#[test]
fn the_base_is_valid() {
    run("\"1\"", "G", "supported", "ok").expect("valid");
}

#[test]
fn unknown_citation_id() {
    let i = issues(run("\"9\"", "G", "supported", "ok").unwrap_err());
    assert_eq!(i.len(), 1);
    assert_eq!(i[0].yaml_path, "cases[0].answers[0].claims[0].citations[0]");
    assert_eq!(i[0].field, "citations");
    assert_eq!(i[0].line, Some(22));
    assert!(i[0].message.contains("unknown citation id `9`"));
}

#[test]
fn claim_mapped_to_missing_fact() {
    let i = issues(run("\"1\"", "G9", "supported", "ok").unwrap_err());
    assert_eq!(i[0].yaml_path, "cases[0].answers[0].claims[0].facts[0]");
    assert_eq!(i[0].line, Some(23));
    assert!(i[0].message.contains("missing required fact `G9`"));
}

#[test]
fn verdict_outside_the_four_is_a_parse_error_with_line() {
    let e = run("\"1\"", "G", "mostly_true", "ok").unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("cases.yaml: "), "{msg}");
    assert!(msg.contains("mostly_true"), "{msg}");
    assert!(msg.contains("line 24"), "{msg}");
}

#[test]
fn not_evaluable_without_reason() {
    let i = issues(run("\"1\"", "G", "not_evaluable", " ").unwrap_err());
    assert_eq!(
        i[0].yaml_path,
        "cases[0].answers[0].claims[0].support.reason"
    );
    assert!(i[0].message.contains("must say what is missing"));
}

#[test]
fn passage_hash_must_match_text() {
    let t = BASE
        .replace("CIT", "\"1\"")
        .replace("FACT", "G")
        .replace("VERDICT", "supported")
        .replace("REASON", "ok")
        .replace("text: t\n", "text: t\n            hash: sha256:00\n");
    let i = issues(parse_cases(Path::new("cases.yaml"), &t).unwrap_err());
    assert_eq!(i[0].field, "hash");
    assert!(i[0].message.contains(&passage_hash("t")));
}

#[test]
fn association_must_agree_with_attached_citations() {
    let t = BASE
        .replace(
            "citations: [CIT]",
            "citations: []\n            association: { verdict: attached, reason: r }",
        )
        .replace("FACT", "G")
        .replace("VERDICT", "supported")
        .replace("REASON", "ok");
    let i = issues(parse_cases(Path::new("cases.yaml"), &t).unwrap_err());
    assert_eq!(
        i[0].yaml_path,
        "cases[0].answers[0].claims[0].association.verdict"
    );
}

#[test]
fn unknown_field_is_rejected() {
    let t = BASE.replace("snapshot: s", "snapshot: s\n    snapshoot: x");
    let msg = parse_cases(Path::new("cases.yaml"), &t)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("snapshoot"), "{msg}");
}
