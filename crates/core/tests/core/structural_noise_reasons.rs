//! The first screen of the most common suite (one expected chunk per case): noise that a
//! perfect ranking of a case would also have is its own reason (`structural_noise`), for the
//! case and for the suite, and a gold case is a gold failure only for what it really failed.
//! The verdict is the method's, unchanged: the reasons only say which cases decide it.

use proptest::prelude::*;
use std::collections::BTreeMap;
use veredicto_core::case::Case;
use veredicto_core::exam::{evaluate, CaseReason, ExamInput, ExamReport, StopReason, Verdict};
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};

fn case(id: &str, expected: &[String], gold: bool) -> Case {
    Case {
        id: id.into(),
        query: format!("query {id}"),
        expected: expected.to_vec(),
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
fn ranked(len: usize, placed: &[(String, usize)]) -> Vec<Retrieved> {
    (1..=len)
        .map(|rank| Retrieved {
            id: placed
                .iter()
                .find(|(_, r)| *r == rank)
                .map(|(id, _)| id.clone())
                .unwrap_or_else(|| format!("filler_{rank}")),
            score: Some(1.0 - rank as f64 / 100.0),
        })
        .collect()
}

fn exam(
    cases: &[Case],
    run: &Run,
    policy: &Policy,
    notes: &BTreeMap<String, String>,
) -> ExamReport {
    evaluate(ExamInput {
        cases,
        run,
        corpus: None,
        policy,
        notes,
        as_of: None,
    })
}

/// 30 cases with one expected chunk each, ranked first among 10 results; the first 5 gold.
fn perfect_one_chunk_suite() -> (Vec<Case>, Run) {
    let mut cases = Vec::new();
    let mut run = Run::default();
    for i in 1..=30 {
        let id = format!("q{i:02}");
        let chunk = format!("c{i:02}");
        cases.push(case(&id, std::slice::from_ref(&chunk), i <= 5));
        run.queries.insert(id, ranked(10, &[(chunk, 1)]));
    }
    (cases, run)
}

#[test]
fn a_perfect_one_chunk_suite_stops_on_structural_noise_not_on_gold_failures() {
    let (cases, run) = perfect_one_chunk_suite();
    let r = exam(&cases, &run, &Policy::default(), &BTreeMap::new());
    // The method's rule, unchanged: every case is over the ceiling (9 > 3), so it stops.
    assert_eq!(r.verdict, Verdict::Stop);
    assert_eq!(r.summary.failing, 30);
    assert_eq!(r.summary.failing_gold, 5);
    assert_eq!(r.summary.over_noise, 30);
    // But no case failed recall, and no gold case failed anything but that arithmetic.
    for c in &r.cases {
        assert_eq!(c.reasons, vec![CaseReason::StructuralNoise], "{}", c.id);
        assert!(c.fails_on_structural_noise_only());
    }
    assert_eq!(r.reasons, vec![StopReason::StructuralNoise]);
    assert_eq!(
        (r.summary.structural_only, r.summary.structural_only_gold),
        (30, 5)
    );
    assert_eq!(
        r.summary.by_reason,
        BTreeMap::from([("structural_noise".to_owned(), 30)])
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["reasons"], serde_json::json!(["structural_noise"]));
    assert_eq!(json["cases"][0]["reasons"][0], "structural_noise");
}

#[test]
fn a_gold_case_that_misses_a_chunk_is_still_a_gold_failure() {
    let (mut cases, mut run) = perfect_one_chunk_suite();
    // q01 (gold) gets a second expected chunk, outside the top 10: recall 50%.
    cases[0].expected.push("c01_b".into());
    run.queries.insert(
        "q01".into(),
        ranked(20, &[("c01".into(), 1), ("c01_b".into(), 15)]),
    );
    let r = exam(&cases, &run, &Policy::default(), &BTreeMap::new());
    assert_eq!(
        r.cases[0].reasons,
        vec![CaseReason::Recall, CaseReason::StructuralNoise]
    );
    // Mean QS (29 × 100 + 0) / 30 = 96.7 stays above 95.
    assert_eq!(
        r.reasons,
        vec![StopReason::GoldCaseFailed, StopReason::StructuralNoise]
    );
}

#[test]
fn noise_from_chunks_that_fell_out_stays_noise() {
    // 8 expected chunks, one in the top 10: a perfect ranking would leave 2 (within 3).
    let ids: Vec<String> = "abcdefgh".chars().map(String::from).collect();
    let cases = [case("q1", &ids, false)];
    let mut run = Run::default();
    run.queries.insert(
        "q1".into(),
        ranked(30, &[("a".into(), 1), ("b".into(), 20)]),
    );
    let r = exam(&cases, &run, &Policy::default(), &BTreeMap::new());
    assert_eq!(
        r.cases[0].reasons,
        vec![CaseReason::Recall, CaseReason::Noise]
    );
    assert!(!r.reasons.contains(&StopReason::StructuralNoise));
}

#[test]
fn documented_structural_cases_within_the_tolerance_do_not_stop() {
    // 20 cases: 19 pass (3 chunks at ranks 1, 5, 8: noise 2), one non-gold case fails on
    // structural noise alone and has a note: 5% of 20 tolerates it.
    let mut cases = Vec::new();
    let mut run = Run::default();
    for i in 0..20 {
        let id = format!("q{i}");
        if i == 0 {
            cases.push(case(&id, &["one".to_owned()], false));
            run.queries.insert(id, ranked(10, &[("one".into(), 1)]));
        } else {
            let e: Vec<String> = (0..3).map(|j| format!("{id}_{j}")).collect();
            let placed: Vec<(String, usize)> = e.iter().cloned().zip([1, 5, 8]).collect();
            cases.push(case(&id, &e, false));
            run.queries.insert(id, ranked(10, &placed));
        }
    }
    let notes = BTreeMap::from([("q0".to_owned(), "one chunk only".to_owned())]);
    let r = exam(&cases, &run, &Policy::default(), &notes);
    assert_eq!(r.cases[0].reasons, vec![CaseReason::StructuralNoise]);
    assert_eq!(r.verdict, Verdict::Accept);
    assert!(r.reasons.is_empty());
    // Without the note it stops, on structural noise alone.
    let r = exam(&cases, &run, &Policy::default(), &BTreeMap::new());
    assert_eq!(r.reasons, vec![StopReason::StructuralNoise]);
}

/// What a generated case does.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// 3 expected chunks at ranks 1, 5, 8: noise 2, passes.
    Pass,
    /// 1 expected chunk at rank 1: structural noise alone.
    Structural,
    /// 3 expected at ranks 1, 8, 15: recall 2/3, noise 2.
    Recall,
    /// 8 expected, 1 in the top 10: recall and ranking noise.
    RecallAndNoise,
    /// 2 expected at ranks 1 and 15: recall 1/2 and structural noise.
    RecallAndStructural,
    /// No results.
    Empty,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Pass),
        Just(Kind::Structural),
        Just(Kind::Recall),
        Just(Kind::RecallAndNoise),
        Just(Kind::RecallAndStructural),
        Just(Kind::Empty),
    ]
}

fn build(i: usize, k: Kind, gold: bool) -> (Case, Vec<Retrieved>) {
    let id = format!("q{i}");
    let e = |n: usize| -> Vec<String> { (0..n).map(|j| format!("{id}_{j}")).collect() };
    let at = |ids: &[String], ranks: &[usize]| -> Vec<(String, usize)> {
        ids.iter().cloned().zip(ranks.iter().copied()).collect()
    };
    let (expected, list) = match k {
        Kind::Pass => {
            let x = e(3);
            let l = ranked(10, &at(&x, &[1, 5, 8]));
            (x, l)
        }
        Kind::Structural => {
            let x = e(1);
            let l = ranked(10, &at(&x, &[1]));
            (x, l)
        }
        Kind::Recall => {
            let x = e(3);
            let l = ranked(20, &at(&x, &[1, 8, 15]));
            (x, l)
        }
        Kind::RecallAndNoise => {
            let x = e(8);
            let l = ranked(30, &at(&x, &[1, 20]));
            (x, l)
        }
        Kind::RecallAndStructural => {
            let x = e(2);
            let l = ranked(20, &at(&x, &[1, 15]));
            (x, l)
        }
        Kind::Empty => (e(2), Vec::new()),
    };
    (case(&id, &expected, gold), list)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The verdict is the method's rule over every failing case, whatever the reasons say;
    /// the reasons are empty exactly when it accepts; a gold failure names a gold case that
    /// failed for something else than structural noise.
    #[test]
    fn reasons_are_empty_exactly_when_the_methods_rule_accepts(
        specs in proptest::collection::vec((kind(), any::<bool>(), any::<bool>()), 1..14),
        require_notes in any::<bool>(),
        tolerance in prop_oneof![Just(0.0), Just(0.05), Just(0.2), Just(0.5)],
        min_quality in prop_oneof![Just(0.0), Just(50.0), Just(95.0)],
    ) {
        let mut cases = Vec::new();
        let mut run = Run::default();
        let mut notes = BTreeMap::new();
        for (i, &(k, gold, noted)) in specs.iter().enumerate() {
            let (c, list) = build(i, k, gold);
            if noted {
                notes.insert(c.id.clone(), "known".to_owned());
            }
            run.queries.insert(c.id.clone(), list);
            cases.push(c);
        }
        let policy = Policy {
            require_notes,
            max_failing_fraction: tolerance,
            min_mean_quality: min_quality,
            ..Policy::default()
        };
        let r = exam(&cases, &run, &policy, &notes);
        // The rule, restated over the cases.
        let failing: Vec<_> = r.cases.iter().filter(|c| !c.passed).collect();
        let non_gold = failing.iter().filter(|c| !c.gold).count();
        let mean = r.cases.iter().map(|c| c.quality).sum::<f64>() / r.cases.len() as f64;
        let stop = mean < min_quality
            || failing.iter().any(|c| c.gold)
            || (require_notes && failing.iter().any(|c| !c.gold && !c.documented))
            || non_gold > (tolerance * r.cases.len() as f64 + 1e-9).floor() as usize;
        prop_assert_eq!(r.verdict == Verdict::Stop, stop);
        prop_assert_eq!(r.reasons.is_empty(), !stop, "{:?}", r.reasons);
        if r.reasons.contains(&StopReason::GoldCaseFailed) {
            prop_assert!(failing.iter().any(|c| c.gold && !c.fails_on_structural_noise_only()));
        }
        if r.reasons.contains(&StopReason::StructuralNoise) {
            prop_assert!(failing.iter().any(|c| c.fails_on_structural_noise_only()));
        }
        // Sole reason: the structural cases decide; without them the rule would accept.
        if r.reasons == [StopReason::StructuralNoise] {
            let rest: Vec<_> = failing.iter().filter(|c| !c.fails_on_structural_noise_only()).collect();
            let rest_non_gold = rest.iter().filter(|c| !c.gold).count();
            prop_assert!(!rest.iter().any(|c| c.gold));
            prop_assert!(!(require_notes && rest.iter().any(|c| !c.gold && !c.documented)));
            prop_assert!(rest_non_gold <= r.summary.max_failing);
            prop_assert!(mean >= min_quality);
        }
    }
}
