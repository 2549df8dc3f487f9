//! Exact search against a naive full scan: top-k (rows, score bits, tie order), ranks,
//! filters, and independence from the thread count.

use crate::common;
use common::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use veredicto_index::*;

fn domain_of(i: usize) -> ChunkMeta {
    ChunkMeta {
        domain: Some(["laboral", "fiscal", "civil"][i % 3].to_string()),
        labels: if i.is_multiple_of(4) {
            vec!["SINTESIS_CURADA".into()]
        } else {
            Vec::new()
        },
        facets: BTreeMap::from([(
            "tipo".to_string(),
            serde_json::json!(["tabla", "texto"][i % 2]),
        )]),
        valid_from: i.is_multiple_of(5).then(|| "2024-01-01".to_string()),
        valid_to: i.is_multiple_of(7).then(|| "2024-06-30".to_string()),
    }
}

/// Vectors with small integer components, so that many rows coincide after normalisation
/// (exact ties), plus exact duplicates.
fn vectors_strategy() -> impl Strategy<Value = (usize, Vec<Vec<f32>>)> {
    (1usize..6, 0usize..120).prop_flat_map(|(dim, n)| {
        (
            Just(dim),
            proptest::collection::vec(
                proptest::collection::vec(-2i8..=2, dim).prop_map(|v| {
                    let mut v: Vec<f32> = v.into_iter().map(f32::from).collect();
                    if v.iter().all(|x| *x == 0.0) {
                        v[0] = 1.0;
                    }
                    v
                }),
                n,
            ),
        )
    })
}

fn filters() -> Vec<Option<Filter>> {
    vec![
        None,
        Some(Filter::Domain("laboral".into())),
        Some(Filter::all([
            Filter::Label("SINTESIS_CURADA".into()),
            Filter::Facet {
                key: "tipo".into(),
                value: "tabla".into(),
            },
        ])),
        Some(Filter::ValidAt("2024-03-01".into())),
        Some(Filter::Domain("nowhere".into())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn top_k_and_ranks_equal_a_naive_scan(
        (dim, vecs) in vectors_strategy(),
        queries in proptest::collection::vec(proptest::collection::vec(-2i8..=2, 1..6), 1..20),
        k in 0usize..15,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let items: Vec<(String, Vec<f32>)> = vecs
            .iter()
            .enumerate()
            // IDs in an order that differs from the corpus order.
            .map(|(i, v)| (format!("c{:03}", (i * 37) % 1000), v.clone()))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        let items: Vec<_> = items.into_iter().filter(|(id, _)| seen.insert(id.clone())).collect();
        let dir = tmp.path().join("idx");
        let index = if items.is_empty() {
            let plan = Plan::new(None, Vec::new(), settings(dim, 1)).unwrap();
            plan.apply::<Vec<f32>>(&[], &batch("b", "t"), &dir).unwrap()
        } else {
            build(&dir, &items, domain_of)
        };
        let queries: Vec<Vec<f32>> = queries
            .into_iter()
            .map(|q| {
                let mut v: Vec<f32> = (0..dim).map(|i| f32::from(*q.get(i).unwrap_or(&1))).collect();
                if v.iter().all(|x| *x == 0.0) { v[0] = -1.0; }
                v
            })
            .collect();
        let ids: Vec<String> = index
            .chunks()
            .map(|c| c.id().to_string())
            .step_by(3)
            .chain(["absent".to_string()])
            .collect();
        for filter in filters() {
            let batch_queries: Vec<Query<'_>> = queries
                .iter()
                .map(|q| Query { vector: q, k, filter: filter.as_ref(), rank_ids: &ids })
                .collect();
            let results = index.search_batch(&batch_queries).unwrap();
            for (q, result) in queries.iter().zip(&results) {
                let reference = naive(&index, q, filter.as_ref());
                let want: Vec<(usize, u32)> =
                    reference.iter().take(k).map(|h| (h.row, h.score.to_bits())).collect();
                let got: Vec<(usize, u32)> =
                    result.hits.iter().map(|h| (h.row, h.score.to_bits())).collect();
                prop_assert_eq!(got, want);
                for (id, rank) in ids.iter().zip(&result.ranks) {
                    let expected = match index.row_of(id) {
                        None => Rank::NotInIndex,
                        Some(row) => match reference.iter().position(|h| h.row == row) {
                            Some(p) => Rank::Ranked { rank: p + 1, score: reference[p].score },
                            None => Rank::FilteredOut {
                                score: dot(index.vector(row), &normalize(q).unwrap()),
                            },
                        },
                    };
                    prop_assert_eq!(rank, &expected);
                    // The single-query API agrees.
                    prop_assert_eq!(index.rank_of(q, id, filter.as_ref()).unwrap(), expected);
                }
            }
            // One query at a time gives the same bits as the batch.
            let single = index.search(&queries[0], k, filter.as_ref()).unwrap();
            prop_assert_eq!(&single, &results[0].hits);
        }
    }
}

/// Enough rows for several parallel tasks and cache blocks, many exact ties, and a query
/// count that uses both panel widths (21 queries: a panel of 16, then one of 8 with
/// padding): results equal the naive scan and do not depend on the thread count.
#[test]
fn large_batch_matches_naive_with_one_and_two_threads() {
    let dim = 7;
    let n = 9_001;
    let mut seed = 1u64;
    let mut rnd = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % 5) as f32 - 2.0
    };
    let items: Vec<(String, Vec<f32>)> = (0..n)
        .map(|i| {
            let mut v: Vec<f32> = (0..dim).map(|_| rnd()).collect();
            if v.iter().all(|x| *x == 0.0) {
                v[1] = 2.0;
            }
            (format!("doc-{i:05}"), v)
        })
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let index = build(&tmp.path().join("idx"), &items, domain_of);
    let queries: Vec<Vec<f32>> = (0..21)
        .map(|_| {
            let mut v: Vec<f32> = (0..dim).map(|_| rnd()).collect();
            v[0] += 0.5;
            v
        })
        .collect();
    let ids: Vec<String> = ["doc-00000", "doc-04500", "doc-09000", "nope"]
        .map(String::from)
        .to_vec();
    let filter = Filter::Domain("fiscal".into());
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let qs: Vec<Query<'_>> = queries
                .iter()
                .enumerate()
                .map(|(i, q)| Query {
                    vector: q,
                    k: [10, 1, 100][i % 3],
                    filter: (i % 2 == 1).then_some(&filter),
                    rank_ids: &ids,
                })
                .collect();
            index.search_batch(&qs).unwrap()
        })
    };
    let one = run(1);
    let two = run(2);
    assert_eq!(one, two);
    for (i, (q, result)) in queries.iter().zip(&one).enumerate() {
        let f = (i % 2 == 1).then_some(&filter);
        let reference = naive(&index, q, f);
        let k = [10, 1, 100][i % 3];
        assert_eq!(result.hits, reference[..k].to_vec(), "query {i}");
        // Ties exist in the reference and are ordered by row.
        for (id, rank) in ids.iter().zip(&result.ranks) {
            if let Some(r) = rank.rank() {
                let row = index.row_of(id).unwrap();
                assert_eq!(reference[r - 1].row, row, "query {i} id {id}");
            }
        }
    }
    let ties = naive(&index, &queries[0], None)
        .windows(2)
        .filter(|w| w[0].score == w[1].score)
        .count();
    assert!(
        ties > 100,
        "the data should have many exact ties, got {ties}"
    );
}

#[test]
fn position_fifteen_is_reported_exactly() {
    // 20 chunks on a circle: chunk i is at angle i * 5 degrees, the query at angle 0, so
    // chunk i ranks i + 1.
    let items: Vec<(String, Vec<f32>)> = (0..20)
        .map(|i| {
            let a = (i as f32 * 5.0).to_radians();
            (format!("p{i:02}"), vec![a.cos(), a.sin()])
        })
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let index = build(&tmp.path().join("idx"), &items, |_| ChunkMeta::default());
    let rank = index.rank_of(&[1.0, 0.0], "p14", None).unwrap();
    assert_eq!(rank.rank(), Some(15));
    assert!((rank.score().unwrap() - (70f32).to_radians().cos()).abs() < 1e-6);
    let top = index.search(&[1.0, 0.0], 10, None).unwrap();
    assert_eq!(top.len(), 10);
    assert_eq!(index.chunk(top[0].row).id(), "p00");
    assert_eq!(
        index.rank_of(&[1.0, 0.0], "missing", None).unwrap(),
        Rank::NotInIndex
    );
}

#[test]
fn bad_queries_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let index = build(
        &tmp.path().join("idx"),
        &[("a".to_string(), vec![1.0, 0.0, 0.0])],
        |_| ChunkMeta::default(),
    );
    let e = index.search(&[1.0, 0.0], 1, None).unwrap_err();
    assert!(
        matches!(
            e,
            IndexError::DimensionMismatch {
                expected: 3,
                got: 2,
                ..
            }
        ),
        "{e}"
    );
    let e = index.search(&[0.0, 0.0, 0.0], 1, None).unwrap_err();
    assert!(matches!(e, IndexError::InvalidVector { .. }), "{e}");
    let e = index.search(&[f32::NAN, 0.0, 1.0], 1, None).unwrap_err();
    assert!(e.to_string().contains("query 0"), "{e}");
}

#[test]
fn filters_parse_and_match() {
    let f: Filter = "domain=laboral".parse().unwrap();
    assert_eq!(f, Filter::Domain("laboral".into()));
    let all = Filter::parse_all([
        "domain=laboral",
        "label=GOLD",
        "tipo=tabla",
        "valid_at=2025-01-31",
    ])
    .unwrap();
    assert_eq!(
        all.to_string(),
        "domain=laboral & label=GOLD & facet.tipo=tabla & valid_at=2025-01-31"
    );
    assert!("nokey".parse::<Filter>().is_err());
    assert!("valid_at=31/01/2025".parse::<Filter>().is_err());
    let meta = ChunkMeta {
        domain: Some("laboral".into()),
        labels: vec!["GOLD".into()],
        facets: BTreeMap::from([("tipo".to_string(), serde_json::json!("tabla"))]),
        valid_from: Some("2025-01-01".into()),
        valid_to: Some("2025-01-31T23:59:59Z".into()),
    };
    assert!(all.matches(&meta));
    assert!(!Filter::ValidAt("2025-02-01".into()).matches(&meta));
    assert!(!Filter::ValidAt("2024-12-31".into()).matches(&meta));
    let json = Filter::from_json(&serde_json::json!({
        "domain": "laboral", "labels": ["GOLD"], "facets": {"tipo": "tabla"}, "year": 2025
    }))
    .unwrap();
    assert!(!json.matches(&meta)); // no facet `year`
    let mut meta2 = meta.clone();
    meta2.facets.insert("year".into(), serde_json::json!(2025));
    assert!(json.matches(&meta2));
    assert!(Filter::from_json(&serde_json::json!(["x"])).is_err());
}
