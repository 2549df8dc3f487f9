//! Property tests of the exam against a naive re-implementation of its definitions
//! (docs/exam-json.md), on random runs with tied scores.

use proptest::prelude::*;
use std::collections::BTreeMap;
use veredicto_core::case::Case;
use veredicto_core::exam::{evaluate, ExamInput};
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};

/// A random case: expected IDs drawn from a pool of 30, a ranking of up to 25 distinct
/// IDs from the same pool with scores on a coarse grid (many ties), and K in 1..=15.
fn arb_case() -> impl Strategy<Value = (Vec<usize>, Vec<(usize, u8)>, u32)> {
    (
        proptest::sample::subsequence((0..30).collect::<Vec<_>>(), 1..6),
        proptest::sample::subsequence((0..30).collect::<Vec<_>>(), 0..25)
            .prop_shuffle()
            .prop_flat_map(|ids| {
                let n = ids.len();
                (Just(ids), proptest::collection::vec(0u8..6, n))
            })
            .prop_map(|(ids, scores)| ids.into_iter().zip(scores).collect::<Vec<_>>()),
        1u32..=15,
    )
}

fn build(expected: &[usize], ranking: &[(usize, u8)], k: u32) -> (Case, Run) {
    let case = Case {
        id: "q".into(),
        query: "q".into(),
        expected: expected.iter().map(|i| format!("d{i}")).collect(),
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: Some(k),
        domain: None,
        tags: vec![],
        gold: false,
        query_vector: None,
        filters: None,
    };
    // The run lists results in the given order; sort by score descending so scores agree
    // with ranks (ties keep the given order).
    let mut ranked = ranking.to_vec();
    ranked.sort_by_key(|b| std::cmp::Reverse(b.1));
    let mut run = Run::default();
    run.queries.insert(
        "q".into(),
        ranked
            .iter()
            .map(|(i, s)| Retrieved {
                id: format!("d{i}"),
                score: Some(f64::from(*s) / 5.0),
            })
            .collect(),
    );
    (case, run)
}

proptest! {
    #[test]
    fn agrees_with_naive_definitions((expected, ranking, k) in arb_case()) {
        let (case, run) = build(&expected, &ranking, k);
        let policy = Policy::default();
        let notes = BTreeMap::new();
        let r = evaluate(ExamInput { cases: std::slice::from_ref(&case), run: &run, corpus: None, policy: &policy, notes: &notes, as_of: None });
        let c = &r.cases[0];
        let results = run.results("q");
        let top = &results[..results.len().min(k as usize)];
        let is_exp = |id: &str| case.expected.iter().any(|e| e == id);
        let hits = top.iter().filter(|x| is_exp(&x.id)).count();
        let n = case.expected.len();

        prop_assert_eq!(c.recall, hits as f64 / n as f64);
        prop_assert_eq!(c.precision, hits as f64 / f64::from(k));
        let rr = top.iter().position(|x| is_exp(&x.id)).map_or(0.0, |p| 1.0 / (p + 1) as f64);
        prop_assert_eq!(c.reciprocal_rank, rr);
        // AP@K: sum of precision at each relevant rank within K, over the number expected.
        let mut found = 0usize;
        let mut ap = 0.0;
        for (i, x) in top.iter().enumerate() {
            if is_exp(&x.id) { found += 1; ap += found as f64 / (i + 1) as f64; }
        }
        prop_assert!((c.average_precision - ap / n as f64).abs() < 1e-12);
        // nDCG@K with binary gains.
        let dcg: f64 = top.iter().enumerate().filter(|(_, x)| is_exp(&x.id)).map(|(i, _)| 1.0 / ((i + 2) as f64).log2()).sum();
        let idcg: f64 = (0..n.min(k as usize)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
        prop_assert!((c.ndcg - dcg / idcg).abs() < 1e-12, "ndcg {} vs {}", c.ndcg, dcg / idcg);
        prop_assert!((0.0..=1.0).contains(&c.ndcg));
        // Quality Score.
        if c.recall < 0.9 { prop_assert_eq!(c.quality, 0.0); } else { prop_assert!(c.quality >= 0.0 && c.quality <= 100.0); }
        // Noise.
        let worst = top.iter().filter(|x| is_exp(&x.id)).filter_map(|x| x.score).reduce(f64::min);
        match worst {
            None => prop_assert_eq!(c.noise, None),
            Some(t) => {
                prop_assert_eq!(c.noise_threshold, Some(t));
                prop_assert_eq!(c.noise, Some(top.iter().filter(|x| x.score.unwrap() < t).count() as u32));
            }
        }
        // Ranks of expected chunks, also beyond K.
        for e in &c.expected {
            let pos = results.iter().position(|x| x.id == e.id).map(|p| p + 1);
            prop_assert_eq!(e.rank, pos);
            prop_assert_eq!(e.in_top_k, pos.is_some_and(|p| p <= k as usize));
        }
        // Pass/fail follows the reasons.
        prop_assert_eq!(c.passed, c.reasons.is_empty());
    }

    #[test]
    fn report_serialises_identically((expected, ranking, k) in arb_case()) {
        let (case, run) = build(&expected, &ranking, k);
        let policy = Policy::default();
        let notes = BTreeMap::new();
        let input = ExamInput { cases: std::slice::from_ref(&case), run: &run, corpus: None, policy: &policy, notes: &notes, as_of: None };
        let a = serde_json::to_string(&evaluate(input)).unwrap();
        let b = serde_json::to_string(&evaluate(input)).unwrap();
        prop_assert_eq!(a, b);
    }
}
