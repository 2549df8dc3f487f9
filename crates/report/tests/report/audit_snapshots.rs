//! Snapshots of the `audit check` renderers (human, Markdown, JSON) and of the run listing on
//! a small fixed case file, read from a temporary folder and recorded in a real SQLite
//! history. Run IDs, times and temporary paths are redacted.

use std::path::Path;
use veredicto_app::audit::AuditTarget;
use veredicto_grounding::{check, CheckOptions, GroundingPolicy, Support};
use veredicto_report::audit;
use veredicto_store::{AuditRunMeta, History};

const CASES: &str = r#"
schema: veredicto-grounding/1
cases:
  - id: C1
    query: "What does the P7 cost, and when does the price change?"
    snapshot: s-2025-01
    sources:
      - { id: DA, version: v1, passages: [{ id: p1, text: "The P7 costs 10 euros." }] }
      - { id: DB, version: v1, passages: [{ id: p1, text: "The P7 is green." }] }
    valid_sources: [DA]
    retrieval:
      - { position: 1, source: DB, passage: p1 }
      - { position: 2, source: DA, passage: p1 }
    required_facts: [{ id: F1, text: "the price is 10 euros", found_in: ["DA#p1"] }]
    unanswerable: ["when the price changes"]
    answers:
      - id: A
        text: "It costs 10 euros [DA]."
        citations: [{ id: DA, source: DA, passage: p1 }]
        claims:
          - id: A-1
            text: "It costs 10 euros."
            citations: [DA]
            facts: [F1]
            support: { verdict: supported, reason: "DA p1 gives 10 euros." }
      - id: B
        text: "It costs 12 euros. It is green [DB]."
        citations: [{ id: DB, source: DB, passage: p1 }]
        claims:
          - { id: B-1, text: "It costs 12 euros." }
          - { id: B-2, text: "It is green.", citations: [DB] }
      - id: C
        text: "The sources do not say."
  - id: C2
    query: "Is the P7 | the P8 green?"
    snapshot: s-2025-01
    sources:
      - { id: DB, version: v1, passages: [{ id: p1, text: "The P7 is green." }] }
    answers:
      - id: A
        text: "The P7 is green [DB]."
        citations: [{ id: DB, source: DB, passage: p1 }]
        claims:
          - { id: C2-1, text: "The P7 is green.", citations: [DB] }
"#;

fn policy() -> GroundingPolicy {
    GroundingPolicy {
        min_support: Some(0.9),
        min_document_recall: Some(1.0),
        recall_k: Some(1),
        ..Default::default()
    }
}

/// Redacts the temporary folder, run IDs and RFC 3339 times.
fn settings(dir: &Path, run_ids: &[&str]) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(&regex_escape(&dir.display().to_string()), "[TMP]");
    for id in run_ids {
        s.add_filter(&regex_escape(id), "[RUN_ID]");
    }
    s.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "[TIME]",
    );
    s.set_prepend_module_to_snapshot(false);
    s
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$#&-~".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// The fixture in a temporary folder, with one review of B-2 beside it.
fn fixture(dir: &Path) -> AuditTarget {
    let p = dir.join("cases.yaml");
    std::fs::write(&p, CASES).unwrap();
    let t = AuditTarget::from_file(&p).unwrap();
    let r = veredicto_grounding::new_review(
        &t.set,
        "B-2",
        Support::Supported,
        "DB p1 says it is green",
        "ana",
        "2025-01-03T10:00:00Z",
        None,
    )
    .unwrap();
    t.append_reviews(&[r]).unwrap();
    AuditTarget::from_file(&p).unwrap()
}

#[test]
fn check_outputs_of_a_case_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = fixture(dir.path());
    let out = check(
        &t.set,
        &t.reviews,
        &CheckOptions {
            policy: policy(),
            k: vec![],
        },
    );
    settings(dir.path(), &[]).bind(|| {
        insta::assert_snapshot!("check_human", audit::check_human(&out));
        insta::assert_snapshot!("check_markdown", audit::check_markdown(&out, &t.origin));
        let json: serde_json::Value =
            serde_json::from_str(&audit::check_json(&out, &t.origin, None)).unwrap();
        insta::assert_json_snapshot!("check_json", json);
    });
}

/// The fixture with answer-relevance verdicts: A addresses the question, B is off topic
/// (then a second reviewer's annex), C (an abstention) partly; C2's answer is not judged.
#[test]
fn check_outputs_with_answer_relevance() {
    let dir = tempfile::tempdir().unwrap();
    let t = fixture(dir.path());
    let rel = |case: &str, answer: &str, v: veredicto_grounding::Relevance, who: &str| {
        veredicto_grounding::new_relevance_review(
            &t.set,
            Some(case),
            answer,
            v,
            "what the answer speaks of, against the question",
            who,
            "2025-01-04T10:00:00Z",
        )
        .unwrap()
    };
    use veredicto_grounding::Relevance::{Addresses, OffTopic, Partly};
    t.append_relevance(&[
        rel("C1", "A", Addresses, "ana"),
        rel("C1", "B", OffTopic, "ana"),
        rel("C1", "B", Partly, "bo"),
        rel("C1", "C", Partly, "ana"),
    ])
    .unwrap();
    let t = AuditTarget::from_file(&dir.path().join("cases.yaml")).unwrap();
    assert_eq!(t.relevance.len(), 4);
    let out = veredicto_grounding::check_with_relevance(
        &t.set,
        &t.reviews,
        &t.relevance,
        &CheckOptions {
            policy: policy(),
            k: vec![],
        },
    );
    settings(dir.path(), &[]).bind(|| {
        insta::assert_snapshot!("check_human_relevance", audit::check_human(&out));
        insta::assert_snapshot!(
            "check_markdown_relevance",
            audit::check_markdown(&out, &t.origin)
        );
        let json: serde_json::Value =
            serde_json::from_str(&audit::check_json(&out, &t.origin, None)).unwrap();
        insta::assert_json_snapshot!("check_json_relevance", json);
    });
}

/// The fixture with citation marks: A-1's DA necessary, B-2's DB irrelevant (then a second
/// reviewer's annex), C2-1's DB redundant.
#[test]
fn check_outputs_with_citation_marks() {
    let dir = tempfile::tempdir().unwrap();
    let t = fixture(dir.path());
    let mark = |claim: &str, cit: &str, m: veredicto_grounding::CitationMark, who: &str| {
        veredicto_grounding::new_citation_mark(
            &t.set,
            claim,
            cit,
            m,
            "what the passage says, against the claim",
            who,
            "2025-01-05T10:00:00Z",
        )
        .unwrap()
    };
    use veredicto_grounding::CitationMark::{Irrelevant, Necessary, Redundant};
    t.append_citation_marks(&[
        mark("A-1", "DA", Necessary, "ana"),
        mark("B-2", "DB", Irrelevant, "ana"),
        mark("B-2", "DB", Redundant, "bo"),
        mark("C2-1", "DB", Redundant, "ana"),
    ])
    .unwrap();
    let t = AuditTarget::from_file(&dir.path().join("cases.yaml")).unwrap();
    assert_eq!(t.citation_marks.len(), 4);
    let out = veredicto_grounding::check_with_marks(
        &t.set,
        &t.reviews,
        &t.relevance,
        &t.citation_marks,
        &CheckOptions {
            policy: policy(),
            k: vec![],
        },
    );
    settings(dir.path(), &[]).bind(|| {
        insta::assert_snapshot!("check_human_citations", audit::check_human(&out));
        insta::assert_snapshot!(
            "check_markdown_citations",
            audit::check_markdown(&out, &t.origin)
        );
        let json: serde_json::Value =
            serde_json::from_str(&audit::check_json(&out, &t.origin, None)).unwrap();
        insta::assert_json_snapshot!("check_json_citations", json);
    });
}

#[test]
fn check_json_of_a_recorded_run_and_the_run_listing() {
    let dir = tempfile::tempdir().unwrap();
    let file = fixture(dir.path());
    let db = dir.path().join("history.db");
    let h = History::open(&db).unwrap();
    let meta = AuditRunMeta {
        id: String::new(),
        created_at: "2025-01-04T09:30:00Z".into(),
        label: Some("first pass".into()),
        replay_of: None,
        cases_name: file.name.clone(),
        cases_sha256: String::new(),
        counts: file.counts(),
        tool_version: "test".into(),
        git_revision: None,
    };
    let id = h
        .record_audit_run(&meta, &file.bytes, None, &file.raw_records())
        .unwrap();
    let run = AuditTarget::from_run(History::open_existing(&db).unwrap(), &id).unwrap();
    let out = check(&run.set, &run.reviews, &CheckOptions::default());
    let list = h.audit_runs(None).unwrap();
    settings(dir.path(), &[&id]).bind(|| {
        let json: serde_json::Value =
            serde_json::from_str(&audit::check_json(&out, &run.origin, Some(&id))).unwrap();
        insta::assert_json_snapshot!("check_json_run", json);
        insta::assert_snapshot!("runs_human", audit::runs_human(&list, "history.db"));
    });
    assert_eq!(
        out,
        check(&file.set, &file.reviews, &CheckOptions::default())
    );
}

#[test]
fn check_json_is_byte_identical_for_the_same_input() {
    let dir = tempfile::tempdir().unwrap();
    let t = fixture(dir.path());
    let opts = CheckOptions {
        policy: policy(),
        k: vec![1, 2],
    };
    let a = audit::check_json(&check(&t.set, &t.reviews, &opts), &t.origin, None);
    let b = audit::check_json(&check(&t.set, &t.reviews, &opts), &t.origin, None);
    assert_eq!(a, b);
    assert!(a.ends_with("}\n"));
}

/// The worked example's replay and its source change: compare and impact, human and JSON.
#[test]
fn compare_and_impact_of_the_q017_example() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/grounding");
    let base = AuditTarget::from_file(&dir.join("q017.yaml")).unwrap();
    let new = AuditTarget::from_file(&dir.join("q017-replay.yaml")).unwrap();
    let c = veredicto_grounding::compare(&base.set, &base.reviews, &new.set, &new.reviews);
    let sources = veredicto_grounding::load_sources(&dir.join("q017-sources-v5.yaml")).unwrap();
    let hits = veredicto_grounding::impact(&base.set, &sources);
    let reopened = veredicto_grounding::reopened_absences(&base.set, &sources);
    let mut s = insta::Settings::clone_current();
    s.add_filter(&regex_escape(&dir.display().to_string()), "[EXAMPLES]");
    s.set_prepend_module_to_snapshot(false);
    s.bind(|| {
        insta::assert_snapshot!(
            "compare_human",
            audit::comparison_human(&c, &base.origin, &new.origin)
        );
        let json: serde_json::Value =
            serde_json::from_str(&audit::comparison_json(&c, "q017.yaml", "q017-replay.yaml"))
                .unwrap();
        insta::assert_json_snapshot!("compare_json", json);
        insta::assert_snapshot!("impact_human", audit::impact_human(&hits, &reopened));
    });
}
