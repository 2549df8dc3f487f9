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

fn with(extra: &str) -> Result<CaseSet, GroundingError> {
    let t = BASE
        .replace("CIT", "\"1\"")
        .replace("FACT", "G")
        .replace("VERDICT", "supported")
        .replace("REASON", "ok")
        .replace("    answers:\n", &format!("{extra}    answers:\n"));
    parse_cases(Path::new("cases.yaml"), &t)
}

#[test]
fn absences_name_known_sources_and_say_what_is_lacking() {
    with(
        "    unanswerable:\n      - \"duración\"\n      - { id: U9, text: plazo, sources: [D] }\n",
    )
    .expect("valid");
    let i = issues(
        with("    unanswerable:\n      - { id: U1, text: \" \", sources: [X] }\n").unwrap_err(),
    );
    let paths: Vec<&str> = i.iter().map(|x| x.yaml_path.as_str()).collect();
    assert_eq!(
        paths,
        vec![
            "cases[0].unanswerable[0].text",
            "cases[0].unanswerable[0].sources[0]"
        ]
    );
    assert!(i[1].message.contains("unknown source id `X`"));
    let i =
        issues(with("    unanswerable:\n      - a\n      - { id: U1, text: b }\n").unwrap_err());
    assert!(
        i[0].message.contains("duplicate absence id `U1`"),
        "{:?}",
        i
    );
    let e = with("    unanswerable:\n      - { txt: b }\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`unanswerable` entry"), "{e}");
}

#[test]
fn facts_are_found_in_known_passages() {
    let t = BASE
        .replace("CIT", "\"1\"")
        .replace("FACT", "G")
        .replace("VERDICT", "supported")
        .replace("REASON", "ok");
    let ok = t.replace(
        "{ id: G, text: g }",
        "{ id: G, text: g, found_in: [\"D#p\", D] }",
    );
    parse_cases(Path::new("cases.yaml"), &ok).expect("valid");
    let bad = t.replace(
        "{ id: G, text: g }",
        "{ id: G, text: g, found_in: [\"D#q\"] }",
    );
    let i = issues(parse_cases(Path::new("cases.yaml"), &bad).unwrap_err());
    assert_eq!(i[0].yaml_path, "cases[0].required_facts[0].found_in[0]");
    assert_eq!(i[0].line, Some(13));
}

#[test]
fn the_replay_configuration_is_validated() {
    let good = format!(
        "    configuration:\n      model: m-1\n      locale: es-ES\n      passage_hashes:\n        \"D#p\": \"{}\"\n",
        passage_hash("t")
    );
    let set = with(&good).expect("valid");
    assert_eq!(
        set.cases[0]
            .configuration
            .as_ref()
            .unwrap()
            .model
            .as_deref(),
        Some("m-1")
    );
    let i = issues(
        with("    configuration:\n      model: \" \"\n      locale: \"es_ES!\"\n      passage_hashes:\n        \"D#x\": sha256:00\n        \"D#p\": sha256:00\n").unwrap_err(),
    );
    let got: Vec<(&str, &str)> = i
        .iter()
        .map(|x| (x.yaml_path.as_str(), x.field.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("cases[0].configuration.model", "model"),
            ("cases[0].configuration.locale", "locale"),
            ("cases[0].configuration.passage_hashes", "passage_hashes"),
            ("cases[0].configuration.passage_hashes", "passage_hashes"),
        ]
    );
    // Keys in order: `D#p` (bad hash), then `D#x` (no such passage).
    assert!(i[2].message.contains("64 lowercase hex"), "{:?}", i);
    assert!(i[3].message.contains("`D#x` is not a `SOURCE#PASSAGE`"));
    // A hash that does not match the recorded text.
    let other = format!(
        "    configuration:\n      passage_hashes:\n        \"D#p\": \"{}\"\n",
        passage_hash("otro")
    );
    let i = issues(with(&other).unwrap_err());
    assert!(i[0].message.contains("but the case records"), "{:?}", i);
    let e = with("    configuration:\n      modelo: x\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("modelo"), "{e}");
}
