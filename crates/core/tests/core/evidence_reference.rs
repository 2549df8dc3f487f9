//! Reference test of the evidence rules (docs/policy.md, "Evidence spans"): the exam's
//! per-item rank and coverage, recall, precision and noise threshold against a brute-force
//! re-implementation that marks characters one by one, on generated documents, chunkings,
//! rankings and items.

use proptest::prelude::*;
use std::collections::BTreeMap;
use veredicto_core::case::{Case, Chunk, Corpus};
use veredicto_core::evidence::EvidenceItem;
use veredicto_core::exam::{evaluate, ExamInput};
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};

const DOCS: [&str; 2] = ["a", "b"];

/// `(doc, start, len)` chunks, a ranking (indices into them), `(doc, start, len, grade)`
/// items, K, coverage and relevance level.
type Generated = (
    Vec<(usize, usize, usize)>,
    Vec<usize>,
    Vec<(usize, usize, usize, u32)>,
    u32,
    f64,
    u32,
);

fn arb() -> impl Strategy<Value = Generated> {
    proptest::collection::vec((0usize..2, 0usize..120, 0usize..40), 1..20).prop_flat_map(|chunks| {
        let n = chunks.len();
        (
            Just(chunks),
            proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n).prop_shuffle(),
            proptest::collection::vec((0usize..2, 0usize..120, 1usize..50, 0u32..4), 1..5),
            1u32..12,
            proptest::sample::select(vec![1.0, 0.75, 0.5, 0.2]),
            1u32..3,
        )
    })
}

struct Brute {
    ranks: Vec<Option<usize>>,
    covered: Vec<f64>,
    recall: f64,
    precision: f64,
    threshold: Option<f64>,
}

fn brute(g: &Generated) -> Brute {
    let (chunks, ranking, items, k, coverage, level) = g;
    let listed = ranking.len();
    let top = listed.min(*k as usize);
    let mut ranks = Vec::new();
    let mut covered = Vec::new();
    for &(doc, start, len, _) in items {
        let mut marks = vec![false; len];
        let count = |m: &[bool]| m.iter().filter(|x| **x).count();
        let mut rank = None;
        let mut at_k = 0;
        for (r, &ci) in ranking.iter().enumerate() {
            let (cd, cs, cl) = chunks[ci];
            if cd == doc {
                for (i, m) in marks.iter_mut().enumerate() {
                    let pos = start + i;
                    if pos >= cs && pos < cs + cl {
                        *m = true;
                    }
                }
            }
            let c = count(&marks);
            if r < top {
                at_k = c;
            }
            if rank.is_none() && c as f64 + 1e-9 >= coverage * len as f64 {
                rank = Some(r + 1);
            }
        }
        ranks.push(rank);
        covered.push(at_k as f64 / len as f64);
    }
    let counted: Vec<usize> = (0..items.len()).filter(|&i| items[i].3 >= *level).collect();
    let retrieved = counted
        .iter()
        .filter(|&&i| ranks[i].is_some_and(|r| r <= top))
        .count();
    let recall = if counted.is_empty() {
        0.0
    } else {
        retrieved as f64 / counted.len() as f64
    };
    let holds = |ci: usize| {
        let (cd, cs, cl) = chunks[ci];
        counted.iter().any(|&i| {
            let (d, s, l, _) = items[i];
            d == cd && cl > 0 && cs < s + l && cs + cl > s
        })
    };
    let precision = ranking[..top].iter().filter(|&&ci| holds(ci)).count() as f64 / f64::from(*k);
    let worst = counted
        .iter()
        .filter_map(|&i| ranks[i].filter(|&r| r <= top))
        .max();
    Brute {
        ranks,
        covered,
        recall,
        precision,
        threshold: worst.map(score),
    }
}

/// Strictly falling scores, so the noise threshold is the score at the worst item's rank.
fn score(rank: usize) -> f64 {
    1.0 - rank as f64 / 100.0
}

fn exam(g: &Generated) -> veredicto_core::exam::CaseResult {
    let (chunks, ranking, items, k, coverage, level) = g;
    let corpus = Corpus::new(chunks.iter().enumerate().map(|(i, &(d, s, l))| Chunk {
        id: format!("c{i}"),
        doc_id: Some(DOCS[d].to_owned()),
        start: Some(s),
        end: Some(s + l),
        ..Default::default()
    }));
    let case = Case {
        id: "q".into(),
        query: "q".into(),
        expected: Vec::new(),
        grades: Default::default(),
        evidence: items
            .iter()
            .map(|&(d, s, l, grade)| EvidenceItem {
                doc_id: DOCS[d].to_owned(),
                start: s,
                end: s + l,
                grade,
                quote: None,
            })
            .collect(),
        top_k: Some(*k),
        domain: None,
        tags: vec![],
        gold: false,
        query_vector: None,
        filters: None,
    };
    let mut run = Run::default();
    run.queries.insert(
        "q".into(),
        ranking
            .iter()
            .enumerate()
            .map(|(r, &ci)| Retrieved {
                id: format!("c{ci}"),
                score: Some(score(r + 1)),
            })
            .collect(),
    );
    let policy = Policy {
        evidence_coverage: *coverage,
        relevance_level: *level,
        ..Policy::default()
    };
    let notes = BTreeMap::new();
    let report = evaluate(ExamInput {
        cases: std::slice::from_ref(&case),
        run: &run,
        corpus: Some(&corpus),
        policy: &policy,
        notes: &notes,
        as_of: None,
    });
    report.cases.into_iter().next().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// 2,000 generated cases: the exam agrees with the character-by-character definitions.
    #[test]
    fn evidence_rules_agree_with_a_brute_force_reference(g in arb()) {
        let want = brute(&g);
        let got = exam(&g);
        prop_assert_eq!(got.evidence.len(), g.2.len());
        for (i, item) in got.evidence.iter().enumerate() {
            prop_assert_eq!(item.rank, want.ranks[i], "rank of item {}", i);
            prop_assert!((item.covered - want.covered[i]).abs() < 1e-12, "covered of item {}: {} vs {}", i, item.covered, want.covered[i]);
            // Every chunk listed overlaps the item, and every overlapping chunk is listed.
            let (d, s, l, _) = g.2[i];
            let overlapping: Vec<String> = g.0.iter().enumerate()
                .filter(|(_, &(cd, cs, cl))| cd == d && cl > 0 && cs < s + l && cs + cl > s)
                .map(|(ci, _)| format!("c{ci}"))
                .collect();
            let mut listed: Vec<String> = item.chunks.iter().map(|h| h.id.clone()).collect();
            let mut want_ids = overlapping;
            listed.sort();
            want_ids.sort();
            prop_assert_eq!(listed, want_ids);
        }
        prop_assert!((got.recall - want.recall).abs() < 1e-12, "recall {} vs {}", got.recall, want.recall);
        prop_assert!((got.precision - want.precision).abs() < 1e-12, "precision {} vs {}", got.precision, want.precision);
        prop_assert_eq!(got.noise_threshold, want.threshold);
    }
}

/// One item per expected chunk, each item exactly its chunk's span, chunks disjoint: the
/// evidence exam gives the chunk-ID exam's figures.
#[test]
fn items_equal_to_disjoint_chunks_give_the_chunk_id_figures() {
    let chunks: Vec<Chunk> = (0..10)
        .map(|i| Chunk {
            id: format!("c{i}"),
            doc_id: Some("d".into()),
            start: Some(i * 10),
            end: Some(i * 10 + 10),
            ..Default::default()
        })
        .collect();
    let corpus = Corpus::new(chunks);
    let expected = ["c2", "c5", "c9"];
    let base = Case {
        id: "q".into(),
        query: "q".into(),
        expected: expected.iter().map(|s| s.to_string()).collect(),
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: Some(5),
        domain: None,
        tags: vec![],
        gold: false,
        query_vector: None,
        filters: None,
    };
    let by_evidence = Case {
        expected: Vec::new(),
        evidence: [2usize, 5, 9]
            .iter()
            .map(|&i| EvidenceItem {
                doc_id: "d".into(),
                start: i * 10,
                end: i * 10 + 10,
                grade: 1,
                quote: None,
            })
            .collect(),
        ..base.clone()
    };
    let mut run = Run::default();
    run.queries.insert(
        "q".into(),
        [0, 5, 3, 2, 7, 8, 9]
            .iter()
            .enumerate()
            .map(|(r, i)| Retrieved {
                id: format!("c{i}"),
                score: Some(score(r + 1)),
            })
            .collect(),
    );
    let policy = Policy::default();
    let notes = BTreeMap::new();
    let run_exam = |case: &Case| {
        evaluate(ExamInput {
            cases: std::slice::from_ref(case),
            run: &run,
            corpus: Some(&corpus),
            policy: &policy,
            notes: &notes,
            as_of: None,
        })
        .cases
        .remove(0)
    };
    let a = run_exam(&base);
    let b = run_exam(&by_evidence);
    assert_eq!(a.recall, b.recall);
    assert_eq!(a.precision, b.precision);
    assert_eq!(a.reciprocal_rank, b.reciprocal_rank);
    assert_eq!(a.ndcg, b.ndcg);
    assert_eq!(a.average_precision, b.average_precision);
    assert_eq!(a.noise, b.noise);
    assert_eq!(a.noise_threshold, b.noise_threshold);
    assert_eq!(a.passed, b.passed);
    let ranks: Vec<Option<usize>> = b.evidence.iter().map(|e| e.rank).collect();
    assert_eq!(ranks, [Some(4), Some(2), Some(7)]);
}

/// An item split between a chunk at rank 2 and one beyond the top K fails, and the chunking
/// step of the diagnosis names both chunks with their ranks.
#[test]
fn evidence_split_across_chunks_is_diagnosed_with_both_ranks() {
    let chunks: Vec<Chunk> = (0..30)
        .map(|i| Chunk {
            id: format!("c{i}"),
            doc_id: Some("d".into()),
            start: Some(i * 10),
            end: Some(i * 10 + 10),
            text: Some(format!("texto del fragmento {i} con contenido suficiente")),
            ..Default::default()
        })
        .collect();
    let corpus = Corpus::new(chunks);
    let case = Case {
        id: "q".into(),
        query: "q".into(),
        expected: Vec::new(),
        grades: Default::default(),
        evidence: vec![EvidenceItem {
            doc_id: "d".into(),
            start: 175,
            end: 185,
            grade: 1,
            quote: None,
        }],
        top_k: Some(10),
        domain: None,
        tags: vec![],
        gold: false,
        query_vector: None,
        filters: None,
    };
    // c17 at rank 2, c18 at rank 23.
    let order: Vec<usize> = (0..30)
        .filter(|&i| i != 17 && i != 18)
        .take(24)
        .collect::<Vec<_>>();
    let mut ranking: Vec<usize> = Vec::new();
    ranking.push(order[0]);
    ranking.push(17);
    ranking.extend(&order[1..21]);
    ranking.push(18);
    let mut run = Run::default();
    run.queries.insert(
        "q".into(),
        ranking
            .iter()
            .enumerate()
            .map(|(r, i)| Retrieved {
                id: format!("c{i}"),
                score: Some(score(r + 1)),
            })
            .collect(),
    );
    assert_eq!(run.rank_of("q", "c18").map(|x| x.0), Some(23));
    let policy = Policy::default();
    let notes = BTreeMap::new();
    let c = evaluate(ExamInput {
        cases: std::slice::from_ref(&case),
        run: &run,
        corpus: Some(&corpus),
        policy: &policy,
        notes: &notes,
        as_of: None,
    })
    .cases
    .remove(0);
    assert!(!c.passed);
    assert_eq!(c.evidence[0].rank, Some(23));
    assert_eq!(c.evidence[0].covered, 0.5);
    let split = c
        .diagnosis
        .iter()
        .find(|f| {
            matches!(
                f.detail,
                Some(veredicto_core::diagnosis::DiagnosisFinding::EvidenceSplit { .. })
            )
        })
        .expect("a split finding");
    let words = veredicto_report::findings::diagnosis(split.detail.as_ref().unwrap());
    assert!(
        words.contains("c17 (rank 2)") && words.contains("c18 (rank 23)"),
        "{words}"
    );
}
