//! Property tests of the measures: invariants, agreement with a naive re-implementation on
//! random runs with tied scores, and the canonical-name round trip over the registry.

use proptest::prelude::*;
use veredicto_core::measure::{registry, Family, Measure, Syntax};
use veredicto_core::trec::{sort_trec, EvalOptions, QueryQrels, ResRels, NONPOOL, UNJUDGED};

const EPS: f64 = 1e-12;

fn m(name: &str) -> Measure {
    name.parse().unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A query: judged `(doc, level)` pairs and a run of `(doc, score)` with few distinct
/// scores (so many ties). Documents are `d0..d29`; the run has no duplicates.
/// Judged `(doc, level)` pairs and a run of `(doc, score)`.
type Query = (Vec<(String, i32)>, Vec<(String, f64)>);

fn query() -> impl Strategy<Value = Query> {
    let judged = proptest::collection::btree_map(0u32..30, -1i32..4, 0..20);
    let run = proptest::collection::btree_map(0u32..30, 0u8..5, 0..25);
    (judged, run, any::<u64>()).prop_map(|(j, r, seed)| {
        let judged = j.into_iter().map(|(d, l)| (format!("d{d}"), l)).collect();
        // Shuffle the run deterministically so that file order does not give the ranking.
        let mut run: Vec<(String, f64)> = r
            .into_iter()
            .map(|(d, s)| (format!("d{d}"), f64::from(s) * 0.5))
            .collect();
        let n = run.len();
        if n > 1 {
            let mut x = seed;
            for i in (1..n).rev() {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                run.swap(i, (x >> 33) as usize % (i + 1));
            }
        }
        (judged, run)
    })
}

fn build(judged: &[(String, i32)], run: &[(String, f64)], opts: &EvalOptions) -> ResRels {
    let qq = QueryQrels::new(judged.iter().map(|(d, l)| (d.as_bytes(), *l))).unwrap();
    let mut ranked = run.to_vec();
    sort_trec(&mut ranked, |(d, s)| (*s, d.as_bytes()));
    ResRels::from_ranking(&ranked, |(d, _)| d.as_bytes(), &qq, opts).unwrap()
}

/// The naive side: rank by score descending, then docno descending, by plain comparison.
fn naive_ranking(run: &[(String, f64)]) -> Vec<String> {
    let mut r = run.to_vec();
    r.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then(b.0.cmp(&a.0)));
    r.into_iter().map(|(d, _)| d).collect()
}

fn level(judged: &[(String, i32)], d: &str) -> Option<i32> {
    judged.iter().find(|(j, _)| j == d).map(|(_, l)| *l)
}

fn relevant(judged: &[(String, i32)], d: &str) -> bool {
    level(judged, d).is_some_and(|l| l >= 1)
}

fn num_rel(judged: &[(String, i32)]) -> usize {
    judged.iter().filter(|(_, l)| *l >= 1).count()
}

fn naive_p(judged: &[(String, i32)], ranking: &[String], k: usize) -> f64 {
    ranking
        .iter()
        .take(k)
        .filter(|d| relevant(judged, d))
        .count() as f64
        / k as f64
}

fn naive_r(judged: &[(String, i32)], ranking: &[String], k: usize) -> f64 {
    let r = num_rel(judged);
    if r == 0 {
        return 0.0;
    }
    ranking
        .iter()
        .take(k)
        .filter(|d| relevant(judged, d))
        .count() as f64
        / r as f64
}

fn naive_ap(judged: &[(String, i32)], ranking: &[String], k: usize) -> f64 {
    let r = num_rel(judged);
    if r == 0 {
        return 0.0;
    }
    let mut sum = 0.0;
    for i in 0..ranking.len().min(k) {
        if relevant(judged, &ranking[i]) {
            sum += naive_p(judged, ranking, i + 1);
        }
    }
    sum / r as f64
}

fn naive_rr(judged: &[(String, i32)], ranking: &[String], k: usize) -> f64 {
    ranking
        .iter()
        .take(k)
        .position(|d| relevant(judged, d))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

fn naive_ndcg(judged: &[(String, i32)], ranking: &[String], k: usize) -> f64 {
    let gain = |l: i32| f64::from(l.max(0));
    let dcg: f64 = ranking
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, d)| gain(level(judged, d).unwrap_or(0)) / ((i + 2) as f64).log2())
        .sum();
    let mut ideal: Vec<i32> = judged.iter().map(|(_, l)| *l).filter(|&l| l > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, &l)| gain(l) / ((i + 2) as f64).log2())
        .sum();
    if idcg > 0.0 {
        dcg / idcg
    } else {
        0.0
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn engine_agrees_with_naive_on_tied_runs((judged, run) in query(), k in 1usize..12) {
        let rr = build(&judged, &run, &EvalOptions::default());
        let ranking = naive_ranking(&run);
        let n = ranking.len().max(1);
        let ku = k as u32;
        prop_assert!(close(Measure::precision_at(ku).compute(&rr), naive_p(&judged, &ranking, k)));
        prop_assert!(close(Measure::recall_at(ku).compute(&rr), naive_r(&judged, &ranking, k)));
        prop_assert!(close(Measure::average_precision_at(ku).compute(&rr), naive_ap(&judged, &ranking, k)));
        prop_assert!(close(m("AP").compute(&rr), naive_ap(&judged, &ranking, n)));
        prop_assert!(close(Measure::reciprocal_rank_at(ku).compute(&rr), naive_rr(&judged, &ranking, k)));
        prop_assert!(close(m("RR").compute(&rr), naive_rr(&judged, &ranking, n)));
        prop_assert!(close(Measure::ndcg_at(ku).compute(&rr), naive_ndcg(&judged, &ranking, k)));
        prop_assert!(close(m("nDCG").compute(&rr), naive_ndcg(&judged, &ranking, usize::MAX)));
        let r = num_rel(&judged);
        let rprec = if r == 0 || ranking.is_empty() { 0.0 } else { naive_p(&judged, &ranking, r) };
        prop_assert!(close(m("Rprec").compute(&rr), rprec));
        let success = if naive_p(&judged, &ranking, k) > 0.0 { 1.0 } else { 0.0 };
        prop_assert!(close(Measure::success_at(ku).compute(&rr), success));
        let relret = ranking.iter().filter(|d| relevant(&judged, d)).count() as f64;
        let setp = if ranking.is_empty() { 0.0 } else { relret / ranking.len() as f64 };
        prop_assert!(close(m("SetP").compute(&rr), setp));
        prop_assert!(close(m("NumRelRet").compute(&rr), relret));
        prop_assert!(close(m("NumRet").compute(&rr), ranking.len() as f64));
        prop_assert!(close(m("NumRel").compute(&rr), r as f64));
    }

    #[test]
    fn invariants((judged, run) in query(), k in 1u64..40) {
        let rr = build(&judged, &run, &EvalOptions::default());
        let at = |f: Family| Measure::at_rank(f, k).unwrap().compute(&rr);
        for v in [at(Family::NDCGCut), m("nDCG").compute(&rr), m("AP").compute(&rr),
                  at(Family::APCut), at(Family::P), at(Family::R), m("RR").compute(&rr),
                  m("Bpref").compute(&rr), m("Rprec").compute(&rr), m("infAP").compute(&rr),
                  m("RBP(p=0.9)").compute(&rr), m("SetF").compute(&rr), at(Family::RelP),
                  m("11ptAvg").compute(&rr), m("IPrec@0.5").compute(&rr), at(Family::Unjudged),
                  m("RnDCG").compute(&rr), m("nDCGRel").compute(&rr), m("binG").compute(&rr),
                  m("G").compute(&rr), m("SetRelP").compute(&rr), m("SetAP").compute(&rr),
                  m("SetR").compute(&rr), m("RBPResid(p=0.9)").compute(&rr),
                  m("RprecMult@0.5").compute(&rr), m("GMAP").compute(&rr)] {
            prop_assert!((0.0..=1.0 + EPS).contains(&v), "value {v} out of [0, 1]");
        }
        // P@k * k is the number of relevant documents in the top k.
        let found = rr.rels().iter().take(k as usize).filter(|&&l| l >= 1).count() as f64;
        prop_assert!((at(Family::P) * k as f64 - found).abs() < 1e-9);
        prop_assert!(at(Family::APCut) <= m("AP").compute(&rr) + EPS);
        prop_assert_eq!(at(Family::Success) > 0.0, found > 0.0);
        // Unjudged documents count as non-relevant.
        let unjudged = rr.rels().iter().filter(|&&l| l == NONPOOL || l == UNJUDGED).count();
        prop_assert_eq!(unjudged as u64, rr.num_nonpool() + rr.num_unjudged_in_pool());
    }

    #[test]
    fn the_ideal_ranking_scores_one(levels in proptest::collection::vec(0i32..4, 1..30), k in 1u64..40) {
        // Every judged document retrieved, best first.
        let judged: Vec<(String, i32)> = levels.iter().enumerate()
            .map(|(i, &l)| (format!("d{i}"), l)).collect();
        let run: Vec<(String, f64)> = judged.iter().map(|(d, l)| (d.clone(), f64::from(*l))).collect();
        let rr = build(&judged, &run, &EvalOptions::default());
        let any_rel = levels.iter().any(|&l| l >= 1);
        let expect = if any_rel { 1.0 } else { 0.0 };
        prop_assert!((Measure::at_rank(Family::NDCGCut, k).unwrap().compute(&rr) - expect).abs() < 1e-9);
        prop_assert!((m("nDCG").compute(&rr) - expect).abs() < 1e-9);
        prop_assert!((m("AP").compute(&rr) - expect).abs() < 1e-9);
        prop_assert!((m("RR").compute(&rr) - expect).abs() < 1e-9);
        prop_assert!((m("Rprec").compute(&rr) - expect).abs() < 1e-9);
        prop_assert!((m("Bpref").compute(&rr) - expect).abs() < 1e-9);
    }

    #[test]
    fn binary_judgements_follow_the_exam_definitions(
        rel in proptest::collection::vec(any::<bool>(), 0..30),
        extra in 0usize..5,
        k in 1u32..15,
    ) {
        let found_all = rel.iter().filter(|&&r| r).count();
        let expected = found_all + extra;
        let q = ResRels::binary(&rel, expected);
        let top = &rel[..rel.len().min(k as usize)];
        let found = top.iter().filter(|&&r| r).count() as f64;
        let recall = if expected == 0 { 0.0 } else { found / expected as f64 };
        prop_assert!(close(Measure::recall_at(k).compute(&q), recall));
        prop_assert!(close(Measure::precision_at(k).compute(&q), found / f64::from(k)));
        let rr = top.iter().position(|&r| r).map_or(0.0, |i| 1.0 / (i + 1) as f64);
        prop_assert!(close(Measure::reciprocal_rank_at(k).compute(&q), rr));
        let dcg: f64 = top.iter().enumerate().filter(|(_, &r)| r)
            .map(|(i, _)| 1.0 / ((i + 2) as f64).log2()).sum();
        let idcg: f64 = (0..expected.min(k as usize)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
        let ndcg = if idcg > 0.0 { dcg / idcg } else { 0.0 };
        prop_assert!(close(Measure::ndcg_at(k).compute(&q), ndcg));
        let mut hits = 0.0;
        let mut sum = 0.0;
        for (i, &r) in top.iter().enumerate() {
            if r { hits += 1.0; sum += hits / (i + 1) as f64; }
        }
        let ap = if expected == 0 { 0.0 } else { sum / expected as f64 };
        prop_assert!(close(Measure::average_precision_at(k).compute(&q), ap));
    }

    #[test]
    fn canonical_names_round_trip(
        k in 1u64..100_000,
        x in -1000.0f64..1000.0,
        gains in proptest::collection::btree_map(-2i64..10, -5.0f64..20.0, 0..4),
        coef in proptest::array::uniform4(-10.0f64..10.0),
        levels in proptest::collection::vec(0.0f64..1.0, 1..5),
    ) {
        let gains: Vec<(i64, f64)> = gains.into_iter().collect();
        for spec in registry() {
            let measure = match spec.params {
                Syntax::Plain => Measure::of(spec.family).unwrap(),
                Syntax::AtRank => Measure::at_rank(spec.family, k).unwrap(),
                Syntax::AtValue | Syntax::Beta2 => Measure::at_value(spec.family, x).unwrap(),
                Syntax::Gains => Measure::with_gains(spec.family, gains.clone()).unwrap(),
                // A persistence strictly inside (0, 1).
                Syntax::Rbp => Measure::rbp(spec.family, (x.abs() + 1.0) / 1002.0, gains.clone()).unwrap(),
                Syntax::Persistence => {
                    Measure::rbp(spec.family, (x.abs() + 1.0) / 1002.0, Vec::new()).unwrap()
                }
                Syntax::Utility => Measure::utility(coef).unwrap(),
                Syntax::Levels => Measure::eleven_point_average(levels.clone()).unwrap(),
            };
            let name = measure.to_string();
            let back: Measure = name.parse().map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
            prop_assert_eq!(&back, &measure, "{}", name);
            if let Some(arg) = measure.trec_arg() {
                let back: Measure = arg.parse().map_err(|e| TestCaseError::fail(format!("{arg}: {e}")))?;
                if spec.params == Syntax::AtRank || spec.params == Syntax::Plain {
                    prop_assert_eq!(&back, &measure, "{}", arg);
                }
            }
        }
    }
}

#[test]
fn every_family_has_a_default_or_cutoff_and_a_unique_canonical_form() {
    let mut seen = std::collections::HashSet::new();
    for spec in registry() {
        let measure = match spec.params {
            Syntax::AtRank => Measure::at_rank(spec.family, 10).unwrap(),
            Syntax::AtValue => Measure::at_value(spec.family, 0.5).unwrap(),
            _ => Measure::of(spec.family).unwrap(),
        };
        assert!(seen.insert(measure.to_string()), "{measure} twice");
        assert_eq!(measure.family(), spec.family);
    }
}

#[test]
fn seed_example_recall_is_two_thirds() {
    // SPEC §2.6: expected chunks at ranks 1, 3 and 15, K = 10.
    let mut rel = vec![false; 20];
    rel[0] = true;
    rel[2] = true;
    rel[14] = true;
    let q = ResRels::binary(&rel, 3);
    assert!((Measure::recall_at(10).compute(&q) - 2.0 / 3.0).abs() < EPS);
    assert!((Measure::precision_at(10).compute(&q) - 0.2).abs() < EPS);
    assert!((Measure::reciprocal_rank_at(10).compute(&q) - 1.0).abs() < EPS);
    let q = ResRels::binary(&[true, true], 2);
    assert!((Measure::recall_at(10).compute(&q) - 1.0).abs() < EPS);
    assert!((Measure::ndcg_at(10).compute(&q) - 1.0).abs() < EPS);
}
