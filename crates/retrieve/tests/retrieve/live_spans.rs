//! Live retrievers that say where their chunks sit: the `doc_id`, `start` and `end` of each
//! HTTP or `cmd:` result resolve evidence spans without any corpus.

use crate::common;
use crate::worded::examine;
use common::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::evidence::EvidenceItem;
use veredicto_core::policy::Policy;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options, RetrieveError};

/// A case whose evidence is characters 10..30 of document `D1`.
fn evidence_case(id: &str, query: &str) -> Case {
    Case {
        expected: Vec::new(),
        evidence: vec![EvidenceItem {
            doc_id: "D1".into(),
            start: 10,
            end: 30,
            grade: 1,
            quote: None,
        }],
        ..case(id, query, &[], None)
    }
}

#[allow(clippy::result_large_err)]
fn run_exam(uri: &str, cases: &[Case]) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, &Options::default())?;
    let policy = Policy::default();
    let notes = BTreeMap::new();
    examine(
        retriever.as_ref(),
        None,
        &Inputs {
            cases,
            corpus: None,
            policy: &policy,
            notes: &notes,
            as_of: None,
        },
        &Settings::default(),
    )
}

/// Results: `a` holds 0..15 of D1, `b` sits in another document, `c` holds 15..40 of D1:
/// the evidence 10..30 is covered at rank 3, by `a` and `c` together.
const SPLIT: &str = r#"[
    {"id": "a", "doc_id": "D1", "start": 0, "end": 15},
    {"id": "b", "doc_id": "D2", "start": 0, "end": 50},
    {"id": "c", "doc_id": "D1", "start": 15, "end": 40}]"#;

#[test]
fn a_command_retriever_gives_spans_and_the_evidence_is_judged_without_a_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers.json");
    std::fs::write(
        &answers,
        format!(r#"{{"split": {SPLIT}, "plain": ["x", "y"]}}"#),
    )
    .unwrap();
    let uri = format!(
        "cmd:{} {}",
        env!("CARGO_BIN_EXE_example-retriever"),
        answers.display()
    );
    let cases = vec![evidence_case("c0", "split"), evidence_case("c1", "plain")];
    let e = run_exam(&uri, &cases).unwrap();
    let item = &e.report.cases[0].evidence[0];
    assert_eq!(item.rank, Some(3), "{item:?}");
    assert!((item.covered - 1.0).abs() < 1e-12);
    let holding: Vec<(&str, Option<usize>)> = item
        .chunks
        .iter()
        .map(|c| (c.id.as_str(), c.rank))
        .collect();
    assert_eq!(holding, [("a", Some(1)), ("c", Some(3))]);
    assert!(e.report.cases[0].passed, "{:?}", e.report.cases[0]);
    // The spans are the run's, kept by chunk ID for the exam.
    assert_eq!(e.retrieval.run.spans["c"].start, 15);
    // Chunks without spans hold no evidence: nothing says where they sit.
    let plain = &e.report.cases[1].evidence[0];
    assert_eq!(plain.rank, None);
    assert!(plain.chunks.is_empty());
    assert!(!e.report.cases[1].passed);
}

#[test]
fn an_http_retriever_gives_spans_and_the_evidence_is_judged_without_a_corpus() {
    let server = serve(Arc::new(|_: &Seen| {
        Some((200, format!(r#"{{"results": {SPLIT}}}"#)))
    }));
    let e = run_exam(&server.url, &[evidence_case("c0", "q")]).unwrap();
    let item = &e.report.cases[0].evidence[0];
    assert_eq!(item.rank, Some(3), "{item:?}");
    assert!(e.report.cases[0].passed);
}

#[test]
fn a_partial_or_malformed_span_in_an_answer_is_a_clear_error() {
    for (result, want) in [
        (
            r#"{"id": "a", "doc_id": "D1", "start": 0}"#,
            "result 1 (`a`): gives `doc_id`, `start` without `end`",
        ),
        (
            r#"{"id": "a", "doc_id": 7, "start": 0, "end": 3}"#,
            "`doc_id` is not a non-empty string: 7",
        ),
        (
            r#"{"id": "a", "doc_id": "D1", "start": -1, "end": 3}"#,
            "`start` is not a whole number of characters: -1",
        ),
        (
            r#"{"id": "a", "doc_id": "D1", "start": 9, "end": 3}"#,
            "`start` 9 is after `end` 3",
        ),
    ] {
        let body = format!(r#"{{"results": [{result}]}}"#);
        let server = serve(Arc::new(move |_: &Seen| Some((200, body.clone()))));
        let err = run_exam(&server.url, &[evidence_case("c0", "q")])
            .err()
            .expect("an error");
        let text = err.to_string();
        assert!(matches!(err, RetrieveError::Setup { .. }), "{text}");
        assert!(text.contains(want), "{text}");
    }
    // All three null is no span at all.
    let server = serve(Arc::new(|_: &Seen| {
        Some((
            200,
            r#"{"results": [{"id": "a", "doc_id": null, "start": null, "end": null}]}"#.into(),
        ))
    }));
    let e = run_exam(&server.url, &[evidence_case("c0", "q")]).unwrap();
    assert!(e.retrieval.run.spans.is_empty());
}
