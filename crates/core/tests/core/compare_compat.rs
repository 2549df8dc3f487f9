//! `compare`: compatibility (what differed, and comparing only what is shared), per-case
//! deltas, rank movement, displacement and the regression flag, on real exam reports.

use crate::compare_support as support;
use serde_json::json;
use support::{case, ranked, record, run_of, sane_chunk, Scenario, Sim};
use veredicto_core::case::{Chunk, Corpus};
use veredicto_core::compare::rng::Rng;
use veredicto_core::compare::{
    CaseMetrics, CaseStatus, CompareOptions, Method, RankChange, RegressionReason, SettingChange,
};
use veredicto_core::history::RecordedRun;
use veredicto_core::policy::{DomainPolicy, Policy};

/// The comparison with its sentences worded by the report layer, as the CLI writes it.
fn compare(
    base: &RecordedRun,
    new: &RecordedRun,
    opts: &CompareOptions<'_>,
) -> veredicto_core::compare::Comparison {
    veredicto_report::findings::worded_comparison(&veredicto_core::compare::compare(
        base, new, opts,
    ))
}

/// Three expected chunks at ranks 1, 7 and 8 of 20 (noise 2): a healthy case.
fn healthy(id: &str) -> (String, Vec<veredicto_core::run::Retrieved>) {
    let e: Vec<String> = (0..3).map(|j| format!("{id}_e{j}")).collect();
    (
        id.to_owned(),
        ranked(id, 20, &[(&e[0], 1), (&e[1], 7), (&e[2], 8)], 10, Some(2)),
    )
}

fn three(id: &str) -> Vec<String> {
    (0..3).map(|j| format!("{id}_e{j}")).collect()
}

fn std_case(id: &str) -> veredicto_core::case::Case {
    let e = three(id);
    let e: Vec<&str> = e.iter().map(String::as_str).collect();
    case(id, &e, None, &[], false, 10)
}

#[test]
fn golden_set_changes_are_listed_and_only_shared_cases_compared() {
    let base_sc = Scenario::new(vec![
        std_case("a"),
        std_case("b"),
        std_case("c"),
        std_case("d"),
        std_case("f"),
    ]);
    let mut new_cases = vec![
        std_case("a"),
        std_case("c"),
        std_case("d"),
        std_case("e"),
        std_case("f"),
    ];
    new_cases[1].query = "a reworded question".into();
    new_cases[2].expected = vec!["d_e0".into(), "d_e1".into(), "x".into()];
    new_cases[4].tags = vec!["numeric".into()];
    let new_sc = Scenario::new(new_cases);
    let lists = |ids: &[&str]| run_of(ids.iter().map(|i| healthy(i)).collect());
    let base = record(
        "r1",
        "2025-11-01T10:00:00Z",
        &base_sc,
        &lists(&["a", "b", "c", "d", "f"]),
    );
    let new = record(
        "r2",
        "2025-11-14T10:00:00Z",
        &new_sc,
        &lists(&["a", "c", "d", "e", "f"]),
    );
    let c = compare(&base, &new, &CompareOptions::default());
    let g = &c.compatibility.golden;
    assert!(g.changed);
    assert_eq!(g.added, vec!["e"]);
    assert_eq!(g.removed, vec!["b"]);
    let changed: Vec<(&str, Vec<&str>, bool)> = g
        .changed_cases
        .iter()
        .map(|ch| {
            (
                ch.id.as_str(),
                ch.fields.iter().map(String::as_str).collect(),
                ch.compared,
            )
        })
        .collect();
    assert_eq!(
        changed,
        vec![
            ("c", vec!["query"], false),
            ("d", vec!["expected"], false),
            ("f", vec!["tags"], true),
        ]
    );
    assert_eq!(g.changed_cases[1].expected_added, vec!["x"]);
    assert_eq!(g.changed_cases[1].expected_removed, vec!["d_e2"]);
    assert_eq!(g.shared, 2);
    assert_eq!(c.shared_cases, 2);
    assert_eq!(
        c.cases.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
        vec!["a", "f"]
    );
    assert!(c.tests.iter().all(|t| t.cases == 2));
    assert!(!c.compatibility.comparable);
    assert!(c.compatibility.policy.changes.is_empty());
    assert!(c.compatibility.k.is_none());
    assert!(c.compatibility.config.is_empty());
    assert_eq!(c.compatibility.differences.len(), 1);
    let s = &c.compatibility.differences[0];
    assert!(s.starts_with("golden set changed:"), "{s}");
    for needle in [
        "added (e)",
        "removed (b)",
        "case c changed: query",
        "case d changed: expected (+x) (-d_e2), not compared",
        "case f changed: tags",
        "2 shared case(s)",
    ] {
        assert!(s.contains(needle), "missing `{needle}` in {s}");
    }
}

#[test]
fn policy_changes_are_listed_key_by_key_and_quality_is_put_on_one_floor() {
    // Ten expected chunks, nine in the top-10: recall 0.9 in both runs.
    let e: Vec<String> = (0..10).map(|j| format!("e{j}")).collect();
    let er: Vec<&str> = e.iter().map(String::as_str).collect();
    let mut base_sc = Scenario::new(vec![case("q", &er, None, &[], false, 10)]);
    let placed: Vec<(&str, usize)> = er
        .iter()
        .take(9)
        .enumerate()
        .map(|(i, id)| (*id, i + 1))
        .collect();
    let run = run_of(vec![("q".into(), ranked("q", 20, &placed, 10, None))]);
    let base = record("r1", "2025-11-01", &base_sc, &run);
    base_sc.policy.recall_floor = 0.8;
    base_sc.policy.domains.insert(
        "viajes".into(),
        DomainPolicy {
            noise_ceiling: Some(0.4),
            ..DomainPolicy::default()
        },
    );
    let new = record("r2", "2025-11-14", &base_sc, &run);
    assert_eq!(base.report.cases[0].quality, 0.0);
    assert_eq!(new.report.cases[0].quality, 50.0);
    let c = compare(&base, &new, &CompareOptions::default());
    let p = &c.compatibility.policy;
    assert!(p.changed);
    assert_eq!(
        p.changes,
        vec![
            SettingChange {
                key: "domains.viajes.noise_ceiling".into(),
                base: json!(null),
                new: json!(0.4)
            },
            SettingChange {
                key: "recall_floor".into(),
                base: json!(0.9),
                new: json!(0.8)
            },
        ]
    );
    assert!(!c.compatibility.golden.changed);
    assert!(!c.compatibility.comparable);
    assert_eq!(
        c.compatibility.differences,
        vec!["policy changed: domains.viajes.noise_ceiling null → 0.4; recall_floor 0.9 → 0.8"]
    );
    // Same retrieval: once both sides are on the new floor, nothing changed.
    let d = &c.cases[0];
    assert!(d.recomputed);
    assert_eq!(
        (d.quality.base, d.quality.new, d.quality.delta),
        (50.0, 50.0, 0.0)
    );
    assert!(c
        .tests
        .iter()
        .all(|t| t.mean_difference == 0.0 && t.p_value == 1.0));
    assert!(!c.regression);
}

#[test]
fn k_changes_are_compared_at_the_smaller_k() {
    let e = three("q");
    let er: Vec<&str> = e.iter().map(String::as_str).collect();
    let mut base_sc = Scenario::new(vec![case("q", &er, None, &[], false, 10), std_case("h")]);
    let mut new_sc = base_sc.clone();
    new_sc.cases[0].top_k = Some(20);
    new_sc.policy.top_k = 20;
    base_sc.policy.top_k = 10;
    // q: ranks 1, 2 and 15 in both runs. At K = 20 the new run has recall 1; at K = 10, 2/3.
    let lists = run_of(vec![
        (
            "q".into(),
            ranked("q", 20, &[(&e[0], 1), (&e[1], 2), (&e[2], 15)], 10, None),
        ),
        healthy("h"),
    ]);
    let base = record("r1", "2025-11-01", &base_sc, &lists);
    let new = record("r2", "2025-11-14", &new_sc, &lists);
    assert_eq!(new.report.cases[0].recall, 1.0);
    let c = compare(&base, &new, &CompareOptions::default());
    let k = c.compatibility.k.as_ref().expect("K changed");
    assert_eq!((k.base, k.new), (10, 20));
    assert_eq!(k.cases.len(), 1);
    assert_eq!(
        (
            k.cases[0].id.as_str(),
            k.cases[0].base,
            k.cases[0].new,
            k.cases[0].compared_at
        ),
        ("q", 10, 20, 10)
    );
    // The case definition changed only in top_k: still compared.
    assert_eq!(
        c.compatibility.golden.changed_cases[0].fields,
        vec!["top_k"]
    );
    assert!(c.compatibility.golden.changed_cases[0].compared);
    assert_eq!(c.shared_cases, 2);
    let q = &c.cases[0];
    assert_eq!(q.k, 10);
    assert!(q.recomputed);
    assert_eq!((q.recall.base, q.recall.new), (2.0 / 3.0, 2.0 / 3.0));
    assert_eq!(q.noise.base, None, "noise is not recomputed at another K");
    assert!(q.expected[2].base_in_top_k == q.expected[2].new_in_top_k);
    assert!(c.tests.iter().all(|t| t.mean_difference == 0.0));
    assert!(c
        .compatibility
        .differences
        .iter()
        .any(|s| s.starts_with("K changed: default 10 → 20; 1 shared case(s)")));
    assert!(c
        .compatibility
        .config
        .iter()
        .any(|s| s.key == "top_k" && s.base == json!(10) && s.new == json!(20)));
}

#[test]
fn config_changes_are_listed_by_field() {
    let sc = Scenario::new(vec![std_case("a")]);
    let run = run_of(vec![healthy("a")]);
    let mut base = record("r1", "2025-11-01", &sc, &run);
    let mut new = record("r2", "2025-11-14", &sc, &run);
    base.meta.config.embedding_model = Some("e5-small".into());
    new.meta.config.embedding_model = Some("bge-m3".into());
    new.meta.config.rerank = Some("bge-reranker".into());
    new.meta.corpus_fingerprint = Some("sha256:abc".into());
    let c = compare(&base, &new, &CompareOptions::default());
    let keys: Vec<&str> = c
        .compatibility
        .config
        .iter()
        .map(|s| s.key.as_str())
        .collect();
    assert_eq!(keys, vec!["embedding_model", "rerank"]);
    assert_eq!(c.compatibility.config[0].base, json!("e5-small"));
    assert!(c.compatibility.corpus_changed);
    assert!(!c.compatibility.comparable);
    assert_eq!(
        c.compatibility.differences,
        vec![
            r#"query embedder changed: embedding_model "e5-small" → "bge-m3": the runs embed their queries with different models, so their scores and ranks are not comparable case by case"#,
            r#"config changed: rerank null → "bge-reranker""#
        ]
    );
}

#[test]
fn identical_runs_are_comparable_and_unchanged() {
    let sc = Scenario::new(vec![std_case("a"), std_case("b")]);
    let run = run_of(vec![healthy("a"), healthy("b")]);
    let base = record("r1", "2025-11-01", &sc, &run);
    let new = record("r2", "2025-11-14", &sc, &run);
    let c = compare(&base, &new, &CompareOptions::default());
    assert!(c.compatibility.comparable);
    assert!(c.compatibility.differences.is_empty());
    assert!(!c.regression);
    for t in &c.tests {
        assert_eq!(
            (t.p_value, t.p_adjusted, t.method),
            (1.0, 1.0, Method::Degenerate)
        );
        assert_eq!((t.ci_low, t.ci_high), (Some(0.0), Some(0.0)));
        assert!(!t.significant);
    }
    assert!(c.cases.iter().all(|d| d.status == CaseStatus::StillPassing));
}

#[test]
fn recomputed_metrics_at_the_runs_own_k_reproduce_the_exam() {
    // Oracle: metrics rebuilt from the expected chunks' ranks equal the exam's values.
    let mut rng = Rng::new(9);
    for (m, k, len) in [(3, 10, 20), (10, 20, 40), (1, 5, 12), (6, 10, 30)] {
        let sim = Sim::new(40, m, k, len);
        let p: Vec<f64> = (0..40).map(|_| rng.unit_f64()).collect();
        let r = sim.record("x", &sim.draw(&p, &mut rng));
        for c in &r.report.cases {
            let again = CaseMetrics::at_k(c, c.top_k, c.recall_floor);
            let rec = CaseMetrics::recorded(c);
            assert_eq!(again.recall, rec.recall);
            assert_eq!(again.quality, rec.quality);
            assert_eq!(again.precision, rec.precision);
            assert!((again.reciprocal_rank - rec.reciprocal_rank).abs() < 1e-12);
            assert!(
                (again.ndcg - rec.ndcg).abs() < 1e-12,
                "{} {}",
                again.ndcg,
                rec.ndcg
            );
            assert!((again.average_precision - rec.average_precision).abs() < 1e-12);
            assert_eq!(again.noise, rec.noise);
        }
    }
}

fn gold_chunk(id: &str, domain: &str) -> Chunk {
    let mut c = sane_chunk(id, domain, "2025-09-01-inicial");
    c.labels = vec!["SINTESIS_CURADA".into()];
    c
}

#[test]
fn newly_failing_gold_case_is_a_regression_and_displacement_is_explained() {
    // The Friday story: new travel chunks bury the old table of a gold case.
    let mut chunks = vec![
        gold_chunk("gold_v", "viajes"),
        sane_chunk("tabla_v", "viajes", "2025-09-01-inicial"),
        sane_chunk("p_e0", "laboral", "2025-09-01-inicial"),
        sane_chunk("p_e1", "laboral", "2025-09-01-inicial"),
    ];
    for i in 1..=5 {
        chunks.push(sane_chunk(
            &format!("nuevo_{i}"),
            "viajes",
            "2025-11-14-viajes",
        ));
    }
    let mut sc = Scenario::new(vec![
        case(
            "q-viaje",
            &["gold_v", "tabla_v"],
            Some("viajes"),
            &["numeric"],
            false,
            10,
        ),
        case("p", &["p_e0", "p_e1"], Some("laboral"), &[], false, 10),
    ]);
    sc.corpus = Some(Corpus::new(chunks));
    let base_run = run_of(vec![
        (
            "q-viaje".into(),
            ranked("q-viaje", 20, &[("gold_v", 1), ("tabla_v", 2)], 10, Some(0)),
        ),
        // p fails in the base run (one expected chunk at rank 12) and passes in the new one.
        (
            "p".into(),
            ranked("p", 20, &[("p_e0", 1), ("p_e1", 12)], 10, None),
        ),
    ]);
    let mut buried: Vec<(&str, usize)> = vec![("gold_v", 1), ("tabla_v", 14)];
    let names: Vec<String> = (1..=5).map(|i| format!("nuevo_{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        buried.push((n, i + 2));
    }
    let new_run = run_of(vec![
        ("q-viaje".into(), ranked("q-viaje", 20, &buried, 10, None)),
        (
            "p".into(),
            ranked("p", 20, &[("p_e0", 1), ("p_e1", 8)], 10, Some(1)),
        ),
    ]);
    let base = record("r1", "2025-11-07T09:00:00Z", &sc, &base_run);
    let new = record("r2", "2025-11-14T17:40:00Z", &sc, &new_run);
    assert!(base.report.cases[0].passed && base.report.cases[0].gold);
    let c = compare(&base, &new, &CompareOptions::default());
    assert_eq!(c.newly_failing, vec!["q-viaje"]);
    assert_eq!(c.newly_passing, vec!["p"]);
    assert_eq!(c.displaced, vec!["q-viaje"]);
    assert!(c.regression);
    assert_eq!(
        c.regression_reasons,
        vec![RegressionReason::NewlyFailingGold {
            case: "q-viaje".into()
        }]
    );
    let q = &c.cases[0];
    assert_eq!(q.status, CaseStatus::NewlyFailing);
    assert_eq!(
        (q.recall.base, q.recall.new, q.recall.delta),
        (1.0, 0.5, -0.5)
    );
    assert_eq!((q.quality.base, q.quality.new), (100.0, 0.0));
    let t = &q.expected[1];
    assert_eq!(
        (t.base_rank, t.new_rank, t.delta, t.change),
        (Some(2), Some(14), Some(12), RankChange::Worsened)
    );
    assert!(t.base_in_top_k && !t.new_in_top_k);
    let d = &q.displaced[0];
    assert_eq!(d.chunk, "tabla_v");
    assert_eq!((d.above_before, d.above_now), (Some(0), Some(12)));
    let by: Vec<(&str, usize, Option<&str>, Option<bool>)> =
        d.by.iter()
            .map(|x| {
                (
                    x.id.as_str(),
                    x.rank,
                    x.ingest_batch.as_deref(),
                    x.newly_above,
                )
            })
            .collect();
    // The exam lists up to 10 outranking chunks: the five new ones, then fillers.
    assert_eq!(
        by[..5],
        (1..=5)
            .map(|i| (
                names[i - 1].as_str(),
                i + 1,
                Some("2025-11-14-viajes"),
                Some(true)
            ))
            .collect::<Vec<_>>()
    );
    assert_eq!(by.len(), 10);
    assert!(by[5..].iter().all(|x| x.2.is_none()));
    let p = &c.cases[1];
    assert_eq!(p.status, CaseStatus::NewlyPassing);
    assert_eq!(p.expected[1].change, RankChange::Improved);
}

#[test]
fn displacers_take_their_batch_from_the_corpus_when_the_report_lacks_it() {
    // The exam ran without a corpus; the comparison is given one.
    let sc = Scenario::new(vec![case("q", &["a", "b"], None, &[], false, 10)]);
    let base = record(
        "r1",
        "2025-11-07",
        &sc,
        &run_of(vec![(
            "q".into(),
            ranked("q", 20, &[("a", 1), ("b", 2)], 10, Some(0)),
        )]),
    );
    let new = record(
        "r2",
        "2025-11-14",
        &sc,
        &run_of(vec![(
            "q".into(),
            ranked("q", 20, &[("a", 1), ("b", 11), ("n1", 2)], 10, None),
        )]),
    );
    let corpus = Corpus::new([sane_chunk("n1", "fiscal", "2025-11-14-fiscal")]);
    let c = compare(
        &base,
        &new,
        &CompareOptions {
            corpus: Some(&corpus),
            ..CompareOptions::default()
        },
    );
    let by = &c.cases[0].displaced[0].by;
    assert_eq!(by[0].id, "n1");
    assert_eq!(by[0].ingest_batch.as_deref(), Some("2025-11-14-fiscal"));
    assert_eq!(by[1].ingest_batch, None, "fillers are not in the corpus");
}

#[test]
fn every_kind_of_rank_change() {
    let ids = ["e1", "e2", "e3", "e4", "e5", "e6"];
    let sc = Scenario::new(vec![case("r", &ids, None, &[], false, 10)]);
    let base = record(
        "r1",
        "d",
        &sc,
        &run_of(vec![(
            "r".into(),
            ranked(
                "r",
                20,
                &[("e1", 1), ("e2", 5), ("e3", 2), ("e5", 12)],
                10,
                None,
            ),
        )]),
    );
    let new = record(
        "r2",
        "d",
        &sc,
        &run_of(vec![(
            "r".into(),
            ranked(
                "r",
                20,
                &[("e1", 1), ("e2", 3), ("e3", 4), ("e4", 7)],
                10,
                None,
            ),
        )]),
    );
    let c = compare(&base, &new, &CompareOptions::default());
    let changes: Vec<RankChange> = c.cases[0].expected.iter().map(|e| e.change).collect();
    assert_eq!(
        changes,
        vec![
            RankChange::Same,
            RankChange::Improved,
            RankChange::Worsened,
            RankChange::Appeared,
            RankChange::Disappeared,
            RankChange::Absent
        ]
    );
    assert!(c.cases[0].displaced.is_empty(), "nothing left the top-K");
}

#[test]
fn empty_and_disjoint_runs_do_not_panic() {
    let empty = Scenario::new(vec![]);
    let e1 = record("r1", "", &empty, &run_of(vec![]));
    let e2 = record("r2", "", &empty, &run_of(vec![]));
    let c = compare(&e1, &e2, &CompareOptions::default());
    assert_eq!(c.shared_cases, 0);
    assert!(!c.regression);
    for t in &c.tests {
        assert_eq!((t.cases, t.p_value, t.ci_low), (0, 1.0, None));
    }
    // Nothing shared at all.
    let sc = Scenario::new(vec![std_case("a")]);
    let one = record("r3", "", &sc, &run_of(vec![healthy("a")]));
    let c = compare(&e1, &one, &CompareOptions::default());
    assert_eq!(c.compatibility.golden.added, vec!["a"]);
    assert_eq!(c.shared_cases, 0);
    let c = compare(
        &one,
        &e1,
        &CompareOptions {
            permutations: 0,
            bootstrap: 0,
            alpha: f64::NAN,
            ..CompareOptions::default()
        },
    );
    assert_eq!(c.compatibility.golden.removed, vec!["a"]);
    // A run with no results for its case.
    let nothing = record("r4", "", &sc, &run_of(vec![]));
    let c = compare(&one, &nothing, &CompareOptions::default());
    assert_eq!(c.newly_failing, vec!["a"]);
    assert_eq!(c.cases[0].expected[0].change, RankChange::Disappeared);
    let json = serde_json::to_string(&c).unwrap();
    let back: veredicto_core::compare::Comparison = serde_json::from_str(&json).unwrap();
    assert_eq!(back, c);
}

#[test]
fn policy_defaults_round_trip() {
    // A policy written with its defaults fingerprints like the built-in one: no change.
    let a = Policy::default();
    let b: Policy = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
    assert_eq!(a.fingerprint(), b.fingerprint());
}

/// A case given by evidence spans, examined on two chunkings of one document (chunk IDs
/// differ between the runs): each item is compared by its span, with its rank in each run.
#[test]
fn evidence_items_are_compared_by_span_across_chunkings() {
    use veredicto_core::evidence::EvidenceItem;
    use veredicto_core::run::Retrieved;
    let chunking = |prefix: &str, size: usize| {
        Corpus::new((0..100 / size).map(|i| Chunk {
            id: format!("{prefix}{i}"),
            doc_id: Some("doc".into()),
            start: Some(i * size),
            end: Some(i * size + size),
            ..Default::default()
        }))
    };
    let mut case = case("q", &[], None, &[], false, 3);
    case.expected = Vec::new();
    case.evidence = [(20, 30), (60, 70)]
        .iter()
        .map(|&(start, end)| EvidenceItem {
            doc_id: "doc".into(),
            start,
            end,
            grade: 1,
            quote: None,
        })
        .collect();
    let list = |ids: &[&str]| {
        ids.iter()
            .enumerate()
            .map(|(r, id)| Retrieved {
                id: (*id).into(),
                score: Some(1.0 - r as f64 / 100.0),
            })
            .collect::<Vec<_>>()
    };
    let mut base_sc = Scenario::new(vec![case.clone()]);
    base_sc.corpus = Some(chunking("big", 20));
    // Chunks of 20: the items sit in big1 and big3.
    let base = record(
        "r1",
        "2025-11-01T10:00:00Z",
        &base_sc,
        &run_of(vec![("q".into(), list(&["big1", "big3", "big0"]))]),
    );
    let mut new_sc = Scenario::new(vec![case]);
    new_sc.corpus = Some(chunking("small", 10));
    // Chunks of 10: the first item stays at rank 1, the second falls to rank 5.
    let new = record(
        "r2",
        "2025-11-14T10:00:00Z",
        &new_sc,
        &run_of(vec![(
            "q".into(),
            list(&["small2", "small0", "small1", "small3", "small6"]),
        )]),
    );
    let c = compare(&base, &new, &CompareOptions::default());
    let d = &c.cases[0];
    assert!(d.expected.is_empty());
    let got: Vec<(&str, Option<usize>, Option<usize>, RankChange)> = d
        .evidence
        .iter()
        .map(|e| (e.id.as_str(), e.base_rank, e.new_rank, e.change))
        .collect();
    assert_eq!(
        got,
        [
            ("doc[20..30]", Some(1), Some(1), RankChange::Same),
            ("doc[60..70]", Some(2), Some(5), RankChange::Worsened),
        ]
    );
    assert!(d.evidence[1].base_in_top_k && !d.evidence[1].new_in_top_k);
    let json = serde_json::to_value(d).unwrap();
    assert_eq!(json["evidence"][1]["id"], "doc[60..70]");
    let text = veredicto_report::comparison::human(&c);
    assert!(text.contains("doc[60..70] 2→5"), "{text}");
}
