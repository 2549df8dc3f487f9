//! OpenSearch, Elasticsearch and Qdrant adapters against local fakes. No such server can be
//! installed here: each fake answers as the engine's documented API does (response shapes
//! from the documentation's examples), and the tests assert the request bodies veredicto
//! sends. The fakes rank a small collection by cosine similarity; their "approximate" answer
//! drops the best match of every third query, as a weak ANN index would.

#![allow(clippy::result_large_err)]

use crate::common;
use crate::worded::examine;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::policy::Policy;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options, RetrieveError};

fn collection() -> Vec<(String, Vec<f32>)> {
    (0..30)
        .map(|i| {
            let a = i as f32 * 0.2;
            (format!("doc-{i}"), vec![a.cos(), a.sin(), 0.1 * i as f32])
        })
        .collect()
}

fn ranked(query: &[f64], drop_best: bool) -> Vec<(String, f64)> {
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let mut all: Vec<(String, f64)> = collection()
        .into_iter()
        .map(|(id, v)| {
            let v: Vec<f64> = v.iter().map(|x| f64::from(*x)).collect();
            let dot: f64 = v.iter().zip(query).map(|(a, b)| a * b).sum();
            (id, dot / (norm(&v) * norm(query)))
        })
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    if drop_best {
        all.remove(0);
    }
    all
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn cases() -> Vec<Case> {
    (0..9)
        .map(|i| {
            let a = i as f32 * 0.6 + 0.05;
            let q = vec![a.cos(), a.sin(), 0.3 * i as f32];
            let qf: Vec<f64> = q.iter().map(|x| f64::from(*x)).collect();
            let best = ranked(&qf, false)[0].0.clone();
            case(&format!("c{i}"), &format!("q{i}"), &[&best], Some(q))
        })
        .collect()
}

/// Whether the fake's approximate search drops this query's best match.
fn weak(query: &[f64]) -> bool {
    ((query[2] / 0.3).round() as i64) % 3 == 0
}

fn exam(uri: &str, exact: bool) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, &Options::default())?;
    // The fakes' scores spread widely: leave the noise rule out of these tests.
    let policy = Policy {
        noise_ceiling: 1.0,
        ..Policy::default()
    };
    let notes = BTreeMap::new();
    let cases = cases();
    examine(
        retriever.as_ref(),
        None,
        &Inputs {
            cases: &cases,
            corpus: None,
            policy: &policy,
            notes: &notes,
            as_of: None,
        },
        &Settings {
            depth: 5,
            exactness_check: exact,
            ..Settings::default()
        },
    )
}

/// The answer to the exam's question "which of these IDs do you hold?", as each engine's
/// documented API gives it: an `ids` query (OpenSearch / Elasticsearch), the points API or a
/// scroll with a `match any` filter (Qdrant). `None` for any other request.
fn holds_answer(seen: &Seen) -> Option<(u16, String)> {
    let ids: Vec<String> = collection().into_iter().map(|(id, _)| id).collect();
    let b = &seen.body;
    let asked = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
            .collect()
    };
    if let Some(values) = b.pointer("/query/ids/values") {
        let hits: Vec<Value> = asked(values)
            .into_iter()
            .filter(|id| ids.contains(id))
            .map(|id| json!({"_index": "chunks", "_id": id, "_score": 1.0}))
            .collect();
        return Some((200, json!({"hits": {"hits": hits}}).to_string()));
    }
    if seen.path.ends_with("/points/scroll") {
        let any = &b["filter"]["must"][0]["match"]["any"];
        let points: Vec<Value> = asked(any)
            .into_iter()
            .filter(|id| ids.contains(id))
            .map(|id| {
                let n: u64 = id.trim_start_matches("doc-").parse().unwrap();
                json!({"id": n, "payload": {"chunk_id": id}})
            })
            .collect();
        return Some((
            200,
            json!({"result": {"points": points, "next_page_offset": null}, "status": "ok"})
                .to_string(),
        ));
    }
    None
}

fn opensearch_fake() -> Server {
    serve(Arc::new(|seen: &Seen| {
        if let Some(answer) = holds_answer(seen) {
            return Some(answer);
        }
        assert_eq!(seen.path, "/chunks/_search");
        let b = &seen.body;
        let size = b["size"].as_u64().unwrap() as usize;
        assert_eq!(b["_source"], json!(false));
        let (query, exact) = if let Some(knn) = b.pointer("/query/knn/embedding") {
            assert_eq!(knn["k"], b["size"]);
            (floats(&knn["vector"]), false)
        } else {
            let s = &b["query"]["script_score"];
            assert_eq!(s["query"], json!({"match_all": {}}));
            assert_eq!(s["script"]["source"], "knn_score");
            assert_eq!(s["script"]["lang"], "knn");
            assert_eq!(s["script"]["params"]["field"], "embedding");
            assert_eq!(s["script"]["params"]["space_type"], "cosinesimil");
            (floats(&s["script"]["params"]["query_value"]), true)
        };
        let hits: Vec<Value> = ranked(&query, !exact && weak(&query))
            .into_iter()
            .take(size)
            .map(|(id, s)| json!({"_index": "chunks", "_id": id, "_score": (1.0 + s) / 2.0}))
            .collect();
        Some((
            200,
            json!({
                "took": 3, "timed_out": false,
                "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
                "hits": {"total": {"value": hits.len(), "relation": "eq"},
                         "max_score": hits.first().map(|h| h["_score"].clone()), "hits": hits}
            })
            .to_string(),
        ))
    }))
}

#[test]
fn opensearch_knn_and_exact_script_score() {
    let server = opensearch_fake();
    let uri = format!("opensearch+{}/chunks?field=embedding", server.url);
    let e = exam(&uri, true).unwrap();
    let x = e.report.exactness.as_ref().unwrap();
    // Cases 0, 3 and 6 lose their best match in the approximate search.
    assert_eq!(x.failing_lost_by_ann, 3, "{x:?}");
    assert_eq!(x.failing_under_exact_too, 0);
    assert_eq!(x.lost[0].case, "c0");
    assert_eq!(x.lost[0].exact_rank, 1);
    assert_eq!(x.lost[0].served_rank, None);
    let c0 = &e.report.cases[0];
    assert_eq!(
        c0.diagnosis[0].finding,
        "lost by the ANN index: exact rank 1, served rank —"
    );
    assert!(e.report.cases[1].passed);
    assert_eq!(e.report.run.name, uri);
}

#[test]
fn elasticsearch_knn_and_exact_script_score() {
    let server = serve(Arc::new(|seen: &Seen| {
        if let Some(answer) = holds_answer(seen) {
            return Some(answer);
        }
        assert_eq!(seen.path, "/chunks/_search");
        let b = &seen.body;
        let size = b["size"].as_u64().unwrap() as usize;
        let (query, exact) = match b.get("knn") {
            Some(knn) => {
                assert_eq!(knn["field"], "emb");
                assert_eq!(knn["k"], b["size"]);
                assert_eq!(knn["num_candidates"], 50);
                (floats(&knn["query_vector"]), false)
            }
            None => {
                let script = &b["query"]["script_score"]["script"];
                assert_eq!(
                    script["source"],
                    "cosineSimilarity(params.query_vector, 'emb') + 1.0"
                );
                (floats(&script["params"]["query_vector"]), true)
            }
        };
        let hits: Vec<Value> = ranked(&query, !exact && weak(&query))
            .into_iter()
            .take(size)
            .map(|(id, s)| json!({"_index": "chunks", "_id": id, "_score": (1.0 + s) / 2.0}))
            .collect();
        Some((
            200,
            json!({"took": 1, "timed_out": false, "hits": {"hits": hits}}).to_string(),
        ))
    }));
    let uri = format!(
        "elasticsearch+{}/chunks?field=emb&num_candidates=50",
        server.url
    );
    let e = exam(&uri, true).unwrap();
    assert_eq!(e.report.exactness.unwrap().failing_lost_by_ann, 3);
}

#[test]
fn qdrant_points_search_exact_and_payload_ids() {
    let server = serve(Arc::new(|seen: &Seen| {
        if let Some(answer) = holds_answer(seen) {
            return Some(answer);
        }
        assert_eq!(seen.path, "/collections/kb/points/search");
        let b = &seen.body;
        let limit = b["limit"].as_u64().unwrap() as usize;
        assert_eq!(b["vector"]["name"], "dense");
        assert_eq!(b["with_payload"], json!(["chunk_id"]));
        let exact = b.pointer("/params/exact") == Some(&json!(true));
        if !exact {
            assert_eq!(b["params"]["hnsw_ef"], 32);
        }
        let query = floats(&b["vector"]["vector"]);
        let result: Vec<Value> = ranked(&query, !exact && weak(&query))
            .into_iter()
            .take(limit)
            .map(|(id, s)| {
                let n: u64 = id.trim_start_matches("doc-").parse().unwrap();
                json!({"id": n, "version": 0, "score": s, "payload": {"chunk_id": id}})
            })
            .collect();
        Some((
            200,
            json!({"result": result, "status": "ok", "time": 0.0002}).to_string(),
        ))
    }));
    let uri = format!(
        "qdrant+{}/kb?vector=dense&id_payload=chunk_id&hnsw_ef=32",
        server.url
    );
    let e = exam(&uri, true).unwrap();
    let x = e.report.exactness.unwrap();
    assert_eq!((x.failing_lost_by_ann, x.failing_under_exact_too), (3, 0));
    assert!(x.ann_recall_at_k < 1.0);
}

#[test]
fn qdrant_numeric_point_ids_and_bad_answers() {
    let server = serve(Arc::new(|seen: &Seen| {
        assert_eq!(seen.body["with_payload"], json!(false));
        assert!(seen.body.get("params").is_none());
        Some((
            200,
            json!({"result": [{"id": 7, "version": 1, "score": 0.5}], "status": "ok"}).to_string(),
        ))
    }));
    let r = open(&format!("qdrant+{}/kb", server.url), &Options::default()).unwrap();
    let ranking = r
        .search(&veredicto_retrieve::Request {
            case_id: "c",
            query: "q",
            vector: Some(&[1.0, 0.0]),
            depth: 3,
            expected: &[],
            exact: false,
            filters: None,
        })
        .unwrap();
    assert_eq!(ranking.hits[0].id, "7");
    let bad = serve(Arc::new(|_: &Seen| {
        Some((200, r#"{"status": "ok"}"#.into()))
    }));
    let e = exam(&format!("qdrant+{}/kb", bad.url), false)
        .err()
        .unwrap();
    assert!(e.to_string().contains("no `/result` list"), "{e}");
    let e = open("opensearch+http://h:9200/idx", &Options::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("missing `field=`"), "{e}");
    let e = open("qdrant+http://h:6333/kb?vector=a'b", &Options::default())
        .err()
        .unwrap();
    assert!(e.to_string().contains("must be letters"), "{e}");
}

/// One search with `filters` against a fake that records the body and answers `answer`.
fn filtered_body(scheme_uri: &str, answer: Value, exact: bool) -> Value {
    let seen_body = Arc::new(std::sync::Mutex::new(Value::Null));
    let keep = seen_body.clone();
    let server = serve(Arc::new(move |seen: &Seen| {
        *keep.lock().unwrap() = seen.body.clone();
        Some((200, answer.to_string()))
    }));
    let uri = scheme_uri.replace("URL", &server.url);
    let r = open(&uri, &Options::default()).unwrap();
    let filters = json!({"domain": "laboral", "labels": ["A", "B"], "facets": {"tipo": "tabla"}, "year": 2024});
    r.search(&veredicto_retrieve::Request {
        case_id: "c",
        query: "q",
        vector: Some(&[1.0, 0.0]),
        depth: 3,
        expected: &[],
        exact,
        filters: filters.as_object(),
    })
    .unwrap();
    let body = seen_body.lock().unwrap().clone();
    body
}

#[test]
fn case_filters_become_each_engines_documented_filter() {
    let terms = json!([
        {"term": {"domain": "laboral"}},
        {"term": {"labels": "A"}},
        {"term": {"labels": "B"}},
        {"term": {"tipo": "tabla"}},
        {"term": {"year": 2024}}
    ]);
    let os_answer = json!({"hits": {"hits": [{"_id": "d1", "_score": 0.5}]}});
    // OpenSearch: `filter` inside the knn query (efficient filtering), and the exact
    // script_score scores only the filtered documents.
    let knn = filtered_body("opensearch+URL/idx?field=emb", os_answer.clone(), false);
    assert_eq!(
        knn["query"]["knn"]["emb"]["filter"],
        json!({"bool": {"filter": terms}})
    );
    let exact = filtered_body("opensearch+URL/idx?field=emb", os_answer.clone(), true);
    assert_eq!(
        exact["query"]["script_score"]["query"],
        json!({"bool": {"filter": terms}})
    );
    // Elasticsearch: `knn.filter`, a list of queries.
    let knn = filtered_body("elasticsearch+URL/idx?field=emb", os_answer.clone(), false);
    assert_eq!(knn["knn"]["filter"], terms);
    let exact = filtered_body("elasticsearch+URL/idx?field=emb", os_answer, true);
    assert_eq!(
        exact["query"]["script_score"]["query"],
        json!({"bool": {"filter": terms}})
    );
    // Qdrant: `filter.must` of `match` conditions on payload keys.
    let q_answer = json!({"result": [{"id": "d1", "version": 1, "score": 0.5}], "status": "ok"});
    let body = filtered_body("qdrant+URL/kb", q_answer, false);
    assert_eq!(
        body["filter"],
        json!({"must": [
            {"key": "domain", "match": {"value": "laboral"}},
            {"key": "labels", "match": {"value": "A"}},
            {"key": "labels", "match": {"value": "B"}},
            {"key": "tipo", "match": {"value": "tabla"}},
            {"key": "year", "match": {"value": 2024}}
        ]})
    );
}

#[test]
fn a_validity_filter_is_refused_by_the_engines_with_the_case() {
    let server = serve(Arc::new(|_: &Seen| panic!("nothing may be sent")));
    let r = open(&format!("qdrant+{}/kb", server.url), &Options::default()).unwrap();
    let filters = json!({"valid_at": "2025-01-01"});
    let e = r
        .search(&veredicto_retrieve::Request {
            case_id: "c7",
            query: "q",
            vector: Some(&[1.0, 0.0]),
            depth: 3,
            expected: &[],
            exact: false,
            filters: filters.as_object(),
        })
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(
        text.contains("case `c7`") && text.contains("valid_at"),
        "{text}"
    );
}

/// Several documents of one source mapped to one chunk ID (`_source.chunk_id`, a Qdrant
/// payload field): the engines answer one ID several times, and the exam counts it once.
#[test]
fn engines_answering_one_id_several_times_follow_the_duplicate_rule() {
    let repeated = ["d1", "d1", "d2", "d1", "d3"];
    let os = serve(Arc::new(move |_: &Seen| {
        let hits: Vec<Value> = repeated
            .iter()
            .enumerate()
            .map(|(i, id)| {
                json!({"_index": "chunks", "_id": format!("part-{i}"), "_score": 1.0 - i as f64 / 10.0,
                       "_source": {"chunk_id": id}})
            })
            .collect();
        Some((200, json!({"hits": {"hits": hits}}).to_string()))
    }));
    let qd = serve(Arc::new(move |_: &Seen| {
        let result: Vec<Value> = repeated
            .iter()
            .enumerate()
            .map(|(i, id)| json!({"id": i, "version": 0, "score": 1.0 - i as f64 / 10.0, "payload": {"chunk_id": id}}))
            .collect();
        Some((200, json!({"result": result, "status": "ok"}).to_string()))
    }));
    for uri in [
        format!(
            "opensearch+{}/chunks?field=embedding&id_field=chunk_id",
            os.url
        ),
        format!("qdrant+{}/kb?id_payload=chunk_id", qd.url),
    ] {
        let retriever = open(&uri, &Options::default()).unwrap();
        let policy = Policy::default();
        let notes = BTreeMap::new();
        let cases = vec![case(
            "c",
            "q",
            &["d1", "d2", "d3"],
            Some(vec![1.0, 0.0, 0.0]),
        )];
        let e = examine(
            retriever.as_ref(),
            None,
            &Inputs {
                cases: &cases,
                corpus: None,
                policy: &policy,
                notes: &notes,
                as_of: None,
            },
            &Settings::default(),
        )
        .unwrap();
        let c = &e.report.cases[0];
        let ranks: Vec<Option<usize>> = c.expected.iter().map(|x| x.rank).collect();
        assert_eq!(ranks, [Some(1), Some(2), Some(3)], "{uri}");
        assert_eq!(c.retrieved, 3, "{uri}");
        let d = c.duplicates_removed.as_ref().unwrap();
        assert_eq!(
            (d.count, d.ids.as_slice()),
            (2, &["d1".to_owned()][..]),
            "{uri}"
        );
    }
}

/// The cases of [`cases`], the first one also expecting a chunk the engine does not hold.
fn cases_with_a_deleted_chunk(deleted: &str) -> Vec<Case> {
    let mut cs = cases();
    cs[1].expected.push(deleted.to_owned());
    cs
}

fn exam_cases(uri: &str, cases: &[Case]) -> Examined {
    let retriever = open(uri, &Options::default()).unwrap();
    let policy = Policy {
        noise_ceiling: 1.0,
        ..Policy::default()
    };
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
        &Settings {
            depth: 5,
            ..Settings::default()
        },
    )
    .unwrap()
}

#[test]
fn expected_chunks_the_engine_does_not_hold_are_named_missing() {
    // OpenSearch by `_id`: an `ids` query through `_search`.
    let server = opensearch_fake();
    let uri = format!("opensearch+{}/chunks?field=embedding", server.url);
    let e = exam_cases(&uri, &cases_with_a_deleted_chunk("doc-gone"));
    let c1 = &e.report.cases[1];
    assert_eq!(c1.diagnosis[0].chunk.as_deref(), Some("doc-gone"));
    assert!(
        c1.diagnosis[0]
            .finding
            .starts_with("expected chunk not in the index `chunks`: asked by ID"),
        "{:?}",
        c1.diagnosis
    );
    let asked: Vec<Value> = server
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|s| s.body.pointer("/query/ids/values").cloned())
        .collect();
    // Asked once, for every expected chunk no case retrieved (cases 0, 3 and 6 lose their
    // best match to the weak approximate search: those are held).
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].as_array().unwrap().contains(&json!("doc-gone")));
    // A lost chunk the index holds keeps its "not within depth".
    let c0 = &e.report.cases[0];
    assert!(
        c0.diagnosis[0].finding.starts_with("not within depth 5"),
        "{:?}",
        c0.diagnosis
    );

    // Qdrant with IDs in a payload field: a scroll with a `match any` filter.
    let server = serve(Arc::new(|seen: &Seen| {
        if let Some(answer) = holds_answer(seen) {
            return Some(answer);
        }
        let query = floats(&seen.body["vector"]);
        let result: Vec<Value> = ranked(&query, false)
            .into_iter()
            .take(5)
            .map(|(id, s)| json!({"id": 1, "score": s, "payload": {"chunk_id": id}}))
            .collect();
        Some((200, json!({"result": result, "status": "ok"}).to_string()))
    }));
    let e = exam_cases(
        &format!("qdrant+{}/kb?id_payload=chunk_id", server.url),
        &cases_with_a_deleted_chunk("doc-gone"),
    );
    assert!(
        e.report.cases[1].diagnosis[0]
            .finding
            .starts_with("expected chunk not in the collection `kb`"),
        "{:?}",
        e.report.cases[1].diagnosis
    );
    let scroll = server
        .seen
        .lock()
        .unwrap()
        .iter()
        .find(|s| s.path == "/collections/kb/points/scroll")
        .map(|s| s.body.clone())
        .expect("a scroll");
    assert_eq!(scroll["filter"]["must"][0]["key"], "chunk_id");
    assert_eq!(scroll["with_vector"], json!(false));

    // Qdrant with point IDs: the points API; an ID that cannot be a point is not held.
    let server = serve(Arc::new(|seen: &Seen| {
        if seen.path == "/collections/kb/points" {
            assert_eq!(seen.body["ids"], json!([12]));
            return Some((200, json!({"result": [], "status": "ok"}).to_string()));
        }
        Some((
            200,
            json!({"result": [{"id": 11, "score": 0.9}], "status": "ok"}).to_string(),
        ))
    }));
    let mut cs = cases();
    cs.truncate(1);
    cs[0].expected = vec!["11".into(), "12".into(), "doc-x".into()];
    let e = exam_cases(&format!("qdrant+{}/kb", server.url), &cs);
    let missing: Vec<&str> = e.report.cases[0]
        .diagnosis
        .iter()
        .filter(|f| {
            f.finding
                .starts_with("expected chunk not in the collection `kb`")
        })
        .filter_map(|f| f.chunk.as_deref())
        .collect();
    assert_eq!(missing, vec!["12", "doc-x"]);
}
