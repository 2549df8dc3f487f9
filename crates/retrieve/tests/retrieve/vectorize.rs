//! The Cloudflare Vectorize retriever against a local fake. Vectorize is a hosted service
//! with no server to install (no registry package ships one), so the fake answers as
//! Cloudflare's REST API (Vectorize v2) is documented to: the index lookup
//! (`GET …/indexes/INDEX`: `config.dimensions`, `config.metric`), the query
//! (`POST …/query`: `result.count`, `result.matches[].id/score`) and `get_by_ids`
//! (`result`: the vectors found), each in Cloudflare's envelope
//! (`{"result": …, "success": true, "errors": [], "messages": []}`); an error is a 4xx
//! with `success: false` and `errors: [{"code", "message"}]`. The shapes follow the
//! published API schema (the same as in Cloudflare's Python SDK's types).

#![allow(clippy::result_large_err)]

use crate::common;
use crate::worded::examine;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::diagnosis::DiagnosisFinding;
use veredicto_core::policy::Policy;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options, Request, RetrieveError};

const INDEX: &str = "/client/v4/accounts/acc123/vectorize/v2/indexes/kb";

fn collection() -> Vec<(String, Vec<f64>)> {
    (0..30)
        .map(|i| {
            let a = i as f64 * 0.2;
            (format!("doc-{i}"), vec![a.cos(), a.sin(), 0.1 * i as f64])
        })
        .collect()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (n(a) * n(b))
}

fn envelope(result: Value) -> String {
    json!({"result": result, "success": true, "errors": [], "messages": []}).to_string()
}

fn refusal(status: u16, code: u64, message: &str) -> Option<(u16, String)> {
    Some((
        status,
        json!({"result": null, "success": false, "errors": [{"code": code, "message": message}], "messages": []})
            .to_string(),
    ))
}

/// The fake: an index of `metric` over [`collection`].
fn fake(metric: &'static str) -> Server {
    serve(Arc::new(move |seen: &Seen| {
        assert_eq!(
            seen.headers.get("authorization").map(String::as_str),
            Some("Bearer test-token"),
            "{seen:?}"
        );
        let path = seen.path.as_str();
        if path == INDEX {
            return Some((
                200,
                envelope(json!({
                    "config": {"dimensions": 3, "metric": metric},
                    "created_on": "2025-01-01T00:00:00.000000Z",
                    "description": "the knowledge base",
                    "modified_on": "2025-01-01T00:00:00.000000Z",
                    "name": "kb"
                })),
            ));
        }
        if path == format!("{INDEX}/get_by_ids") {
            let ids = seen.body["ids"].as_array().unwrap();
            assert!(ids.len() <= 20);
            let found: Vec<Value> = collection()
                .into_iter()
                .filter(|(id, _)| ids.contains(&json!(id)))
                .map(|(id, v)| json!({"id": id, "values": v, "metadata": {}, "namespace": null}))
                .collect();
            return Some((200, envelope(json!(found))));
        }
        assert_eq!(path, format!("{INDEX}/query"));
        let b = &seen.body;
        assert_eq!(b["returnValues"], json!(false));
        assert_eq!(b["returnMetadata"], json!("none"));
        let top_k = b["topK"].as_u64().unwrap() as usize;
        if top_k > 100 {
            return refusal(400, 40033, "topK must be between 1 and 100");
        }
        let query: Vec<f64> = b["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        if query.len() != 3 {
            return refusal(400, 40006, "query vector dimension mismatch");
        }
        let domain = b.pointer("/filter/domain").cloned();
        let mut all: Vec<(String, f64)> = collection()
            .into_iter()
            .filter(|(id, _)| {
                let i: usize = id[4..].parse().unwrap();
                domain
                    .as_ref()
                    .is_none_or(|d| d == &json!(if i.is_multiple_of(2) { "even" } else { "odd" }))
            })
            .map(|(id, v)| {
                let score = match metric {
                    "euclidean" => v
                        .iter()
                        .zip(&query)
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum::<f64>()
                        .sqrt(),
                    _ => cosine(&v, &query),
                };
                (id, score)
            })
            .collect();
        // Closest first: a similarity descending, a distance ascending.
        all.sort_by(|a, b| match metric {
            "euclidean" => a.1.total_cmp(&b.1),
            _ => b.1.total_cmp(&a.1),
        });
        let matches: Vec<Value> = all
            .into_iter()
            .take(top_k)
            .map(|(id, score)| json!({"id": id, "score": score}))
            .collect();
        Some((
            200,
            envelope(json!({"count": matches.len(), "matches": matches})),
        ))
    }))
}

fn cases() -> Vec<Case> {
    (0..6)
        .map(|i| {
            let a = i as f32 * 0.8 + 0.05;
            let q = vec![a.cos(), a.sin(), 0.4 * i as f32];
            let qf: Vec<f64> = q.iter().map(|x| f64::from(*x)).collect();
            let mut best: Vec<(String, f64)> = collection()
                .into_iter()
                .map(|(id, v)| (id, cosine(&v, &qf)))
                .collect();
            best.sort_by(|a, b| b.1.total_cmp(&a.1));
            case(&format!("c{i}"), &format!("q{i}"), &[&best[0].0], Some(q))
        })
        .collect()
}

fn options() -> Options {
    Options {
        headers: vec![("Authorization".into(), "Bearer test-token".into())],
        ..Options::default()
    }
}

fn exam(uri: &str, cases: &[Case], depth: usize, exact: bool) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, &options())?;
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
            depth,
            exactness_check: exact,
            ..Settings::default()
        },
    )
}

fn uri(server: &Server) -> String {
    format!("vectorize+{}{INDEX}", server.url)
}

#[test]
fn vectorize_query_and_get_by_ids_as_documented() {
    let server = fake("cosine");
    let mut cases = cases();
    cases[2].expected.push("doc-404".into());
    let e = exam(&uri(&server), &cases, 5, false).unwrap();
    assert!(e.report.cases[0].passed, "{:?}", e.report.cases[0]);
    let list = &e.retrieval.run.queries["c0"];
    assert_eq!(list.len(), 5);
    assert!(list[0].score.unwrap() > list[1].score.unwrap());
    // The expected chunk the index lacks is named as such, from get_by_ids.
    let c2 = &e.report.cases[2];
    assert!(
        c2.diagnosis.iter().any(|f| f.chunk.as_deref() == Some("doc-404")
            && matches!(&f.detail, Some(DiagnosisFinding::NotInCollection { collection }) if collection == "index `kb`")),
        "{:?}",
        c2.diagnosis
    );
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen[0].path, INDEX, "the index is looked up first, once");
    assert_eq!(seen.iter().filter(|s| s.path == INDEX).count(), 1);
    let q = seen.iter().find(|s| s.path.ends_with("/query")).unwrap();
    assert_eq!(q.body["topK"], json!(5));
    assert!(q.body.get("filter").is_none());
    assert_eq!(e.report.run.name, uri(&server));
}

#[test]
fn vectorize_euclidean_distances_become_scores_higher_is_better() {
    let server = fake("euclidean");
    let e = exam(&uri(&server), &cases(), 5, false).unwrap();
    let list = &e.retrieval.run.queries["c1"];
    assert!(list[0].score.unwrap() <= 0.0);
    assert!(list[0].score.unwrap() >= list[1].score.unwrap(), "{list:?}");
}

#[test]
fn vectorize_filters_depth_limit_and_refusals() {
    let server = fake("cosine");
    let r = open(&uri(&server), &options()).unwrap();
    let search = |filters: Value, depth: usize, vector: &[f32]| {
        r.search(&Request {
            case_id: "q",
            query: "q",
            vector: Some(vector),
            depth,
            expected: &[],
            exact: false,
            filters: filters.as_object(),
        })
    };
    let even = search(json!({"domain": "even"}), 10, &[1.0, 0.0, 0.0]).unwrap();
    assert!(even
        .hits
        .iter()
        .all(|h| h.id[4..].parse::<usize>().unwrap().is_multiple_of(2)));
    assert_eq!(
        server.seen.lock().unwrap().last().unwrap().body["filter"],
        json!({"domain": "even"})
    );
    let e = search(json!({"labels": ["faq"]}), 10, &[1.0, 0.0, 0.0])
        .err()
        .unwrap();
    assert!(e.to_string().contains("no equivalent on Vectorize"), "{e}");
    let e = search(json!({}), 101, &[1.0, 0.0, 0.0]).err().unwrap();
    assert!(e.to_string().contains("at most 100 results"), "{e}");
    // Cloudflare's refusal (a 4xx in its envelope) stops the exam with its message.
    let e = search(json!({}), 5, &[1.0, 0.0]).err().unwrap();
    assert!(matches!(e, RetrieveError::Setup { .. }), "{e:?}");
    assert!(e.to_string().contains("HTTP 400"), "{e}");
    assert!(e.to_string().contains("dimension mismatch"), "{e}");
    let e = r.prepare(Some(4)).err().unwrap();
    assert!(
        e.to_string()
            .contains("vectorize index `kb`: its vectors have dimension 3, the embedder's have 4"),
        "{e}"
    );
    let e = exam(&uri(&server), &cases(), 5, true).err().unwrap();
    assert!(e.to_string().contains("--exactness-check"), "{e}");
}

#[test]
fn vectorize_success_false_and_missing_index_are_errors_with_cloudflares_message() {
    let server = serve(Arc::new(|seen: &Seen| {
        if seen.path.ends_with("/vectorize/v2/indexes/gone") {
            return refusal(404, 3000, "vectorize.index.not_found");
        }
        Some((
            200,
            json!({"result": null, "success": false, "errors": [{"code": 1001, "message": "Authentication error"}], "messages": []})
                .to_string(),
        ))
    }));
    let gone = format!(
        "vectorize+{}/client/v4/accounts/acc123/vectorize/v2/indexes/gone",
        server.url
    );
    let e = exam(&gone, &cases(), 5, false).err().unwrap();
    assert!(
        e.to_string()
            .contains("vectorize index `gone`: no such index in this account (HTTP 404"),
        "{e}"
    );
    let e = exam(&uri(&server), &cases(), 5, false).err().unwrap();
    assert!(
        e.to_string()
            .contains("looking the index up: error 1001: Authentication error"),
        "{e}"
    );
}
