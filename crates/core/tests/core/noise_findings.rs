//! Day-one gate findings: structural noise (K larger than the expected list can fill) told
//! apart from ranking noise, the uncalibrated-defaults flag and the gold-unknown warning.

use std::collections::BTreeMap;
use veredicto_core::case::{Case, Chunk, Corpus};
use veredicto_core::diagnosis::{suggested_top_k, Check, NoiseFinding};
use veredicto_core::exam::{evaluate, ExamInput, ExamReport, ExamWarning};
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};

fn case(id: &str, expected: &[&str], gold: bool) -> Case {
    Case {
        id: id.into(),
        query: format!("query {id}"),
        expected: expected.iter().map(|s| s.to_string()).collect(),
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: Some(10),
        domain: None,
        tags: vec![],
        gold,
        query_vector: None,
        filters: None,
    }
}

/// `placed` chunks at their 1-based ranks among `len` results, scores falling by 0.01.
fn ranked(len: usize, placed: &[(&str, usize)]) -> Vec<Retrieved> {
    (1..=len)
        .map(|rank| Retrieved {
            id: placed
                .iter()
                .find(|(_, r)| *r == rank)
                .map(|(id, _)| id.to_string())
                .unwrap_or_else(|| format!("filler_{rank}")),
            score: Some(1.0 - rank as f64 / 100.0),
        })
        .collect()
}

fn exam(cases: &[Case], run: &Run, corpus: Option<&Corpus>, policy: &Policy) -> ExamReport {
    evaluate(ExamInput {
        cases,
        run,
        corpus,
        policy,
        notes: &BTreeMap::new(),
        as_of: None,
    })
}

#[test]
fn one_expected_chunk_first_with_k_10_is_structural_noise() {
    let cases = [case("q1", &["a"], false)];
    let mut run = Run::default();
    run.queries.insert("q1".into(), ranked(10, &[("a", 1)]));
    let r = exam(&cases, &run, None, &Policy::default());
    let c = &r.cases[0];
    assert!(!c.passed);
    assert_eq!(c.noise, Some(9));
    assert_eq!(
        c.noise_finding,
        Some(NoiseFinding::Structural {
            k: 10,
            in_top_k: 10,
            expected: 1,
            ranks: vec![1],
            noise: 9,
            max_noise: 3,
            perfect_noise: 9,
            suggested_top_k: 1,
        })
    );
    let f = c
        .diagnosis
        .iter()
        .find(|f| f.check == Check::Noise)
        .unwrap();
    assert!(matches!(
        f.detail,
        Some(
            veredicto_core::diagnosis::DiagnosisFinding::StructuralNoise {
                perfect_noise: 9,
                ..
            }
        )
    ));
    let text = veredicto_report::findings::finding_sentence(f);
    assert!(text.starts_with("structural noise"), "{text}");
    assert!(!text.contains("descriptions"), "{text}");
    // JSON carries the arithmetic, tagged.
    let json = serde_json::to_value(c).unwrap();
    assert_eq!(json["noise_finding"]["kind"], "structural");
    assert_eq!(json["noise_finding"]["perfect_noise"], 9);
}

#[test]
fn noise_from_lost_chunks_keeps_the_description_diagnosis() {
    // 8 expected chunks, K = 10, ceiling 3: a perfect ranking leaves 2 (not structural);
    // only one is in the top 10, at rank 1, so 9 score below it.
    let ids = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let cases = [case("q1", &ids, false)];
    let mut run = Run::default();
    run.queries
        .insert("q1".into(), ranked(30, &[("a", 1), ("b", 20)]));
    let r = exam(&cases, &run, None, &Policy::default());
    let c = &r.cases[0];
    assert_eq!(
        c.noise_finding,
        Some(NoiseFinding::Ranking {
            k: 10,
            noise: 9,
            max_noise: 3,
            expected_in_top_k: 1,
            expected: 8,
        })
    );
    let f = c
        .diagnosis
        .iter()
        .find(|f| f.check == Check::Noise)
        .unwrap();
    let text = veredicto_report::findings::finding_sentence(f);
    assert!(text.contains("generic descriptions"), "{text}");
}

#[test]
fn a_case_within_its_ceiling_has_no_noise_finding() {
    let cases = [case("q1", &["a", "b", "c"], false)];
    let mut run = Run::default();
    run.queries
        .insert("q1".into(), ranked(10, &[("a", 1), ("b", 5), ("c", 8)]));
    let r = exam(&cases, &run, None, &Policy::default());
    assert_eq!(r.cases[0].noise, Some(2));
    assert_eq!(r.cases[0].noise_finding, None);
    assert!(r.cases[0].passed);
}

#[test]
fn suggested_top_k_is_the_largest_k_a_perfect_ranking_fills() {
    // 0.30: K − e ≤ ⌊0.3 K⌋.
    assert_eq!(suggested_top_k(1, 0.30, 10), 1);
    assert_eq!(suggested_top_k(2, 0.30, 10), 2);
    assert_eq!(suggested_top_k(3, 0.30, 10), 4);
    assert_eq!(suggested_top_k(7, 0.30, 10), 10);
    // Never above the current K.
    assert_eq!(suggested_top_k(3, 0.90, 10), 10);
    assert_eq!(suggested_top_k(1, 0.80, 10), 5);
}

#[test]
fn default_policy_is_flagged_uncalibrated() {
    let cases = [case("q1", &["a"], true)];
    let mut run = Run::default();
    run.queries.insert("q1".into(), ranked(10, &[("a", 1)]));
    let r = exam(&cases, &run, None, &Policy::default());
    assert!(!r.policy_calibrated);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["policy_calibrated"], false);
    let calibrated = Policy {
        noise_ceiling: 0.9,
        ..Policy::default()
    };
    assert!(exam(&cases, &run, None, &calibrated).policy_calibrated);
}

#[test]
fn gold_label_without_corpus_or_gold_cases_is_warned() {
    let mut run = Run::default();
    run.queries.insert("q1".into(), ranked(10, &[("a", 1)]));
    let plain = [case("q1", &["a"], false)];
    let r = exam(&plain, &run, None, &Policy::default());
    assert_eq!(
        r.warnings,
        vec![ExamWarning::GoldUnknown {
            gold_label: "SINTESIS_CURADA".into()
        }]
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["warnings"][0]["kind"], "gold_unknown");
    // A corpus tells, and so does a case declared gold.
    let corpus = Corpus::new(vec![Chunk {
        id: "a".into(),
        ..Chunk::default()
    }]);
    assert!(exam(&plain, &run, Some(&corpus), &Policy::default())
        .warnings
        .is_empty());
    let declared = [case("q1", &["a"], true)];
    assert!(exam(&declared, &run, None, &Policy::default())
        .warnings
        .is_empty());
    // Without warnings, the JSON has no `warnings` key (old outputs unchanged).
    let json = serde_json::to_value(exam(&declared, &run, None, &Policy::default())).unwrap();
    assert!(json.get("warnings").is_none());
}
