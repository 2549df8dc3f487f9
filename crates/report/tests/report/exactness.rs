//! The exactness check (`--exactness-check`) in the human, Markdown and JSON reports.

use std::collections::BTreeMap;
use veredicto_core::case::Case;
use veredicto_core::exam::{evaluate, AnnLoss, Exactness, ExamInput};
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};
use veredicto_report::{render, Format};

#[test]
fn the_exactness_line_is_in_every_text_format() {
    let case = Case {
        id: "q1".into(),
        query: "q".into(),
        expected: vec!["c1".into()],
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: Some(3),
        domain: None,
        tags: vec![],
        gold: false,
        query_vector: None,
        filters: None,
    };
    let mut run = Run::default();
    run.queries.insert(
        "q1".into(),
        vec![Retrieved {
            id: "x".into(),
            score: Some(0.5),
        }],
    );
    let policy = Policy::default();
    let notes = BTreeMap::new();
    let mut report = evaluate(ExamInput {
        cases: std::slice::from_ref(&case),
        run: &run,
        corpus: None,
        policy: &policy,
        notes: &notes,
        as_of: None,
    });
    let plain = render(&report, Format::Json, false);
    assert!(!plain.contains("exactness"), "absent unless checked");
    report.exactness = Some(Exactness {
        cases: 1,
        ann_recall_at_k: 0.5,
        failing_lost_by_ann: 1,
        failing_under_exact_too: 0,
        failing_missing_chunks: 0,
        served_plan: None,
        lost: vec![AnnLoss {
            case: "q1".into(),
            chunk: "c1".into(),
            exact_rank: 2,
            served_rank: None,
        }],
    });
    let line = "exactness check: ANN recall@K against exact search 0.500 over 1 cases · 1 failing cases lost expected chunks to the ANN index · 0 fail under exact search too";
    assert!(render(&report, Format::Human, false).contains(line));
    assert!(render(&report, Format::Markdown, false).contains(line));
    let json: serde_json::Value =
        serde_json::from_str(&render(&report, Format::Json, false)).unwrap();
    assert_eq!(
        json["exactness"]["lost"][0]["served_rank"],
        serde_json::Value::Null
    );
    assert_eq!(json["exactness"]["ann_recall_at_k"], 0.5);
}
