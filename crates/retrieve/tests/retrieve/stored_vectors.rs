//! `Retriever::stored_vectors` (the stored-vector check of `--check-vectors`): Qdrant against
//! a fake answering as Qdrant's documented points API does (`POST /collections/C/points`
//! with `with_vector`, `POST …/points/scroll` with a payload filter; point IDs written back
//! as integers or lower-case UUIDs, named vectors as an object), and pgvector against the
//! real PostgreSQL of `scripts/postgres.sh` (VEREDICTO_TEST_POSTGRES).

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::sync::Arc;
use veredicto_retrieve::{open, Options};

/// Qdrant's answer to `POST /collections/C/points` (its API reference's example shape:
/// `result` is a list of records `{id, payload, vector}`, then `status` and `time`).
fn points_answer(records: Vec<Value>) -> String {
    json!({"result": records, "status": "ok", "time": 0.000_21}).to_string()
}

#[test]
fn qdrant_returns_point_vectors_by_id_in_the_order_asked() {
    let server = serve(Arc::new(|seen: &Seen| {
        assert_eq!(seen.path, "/collections/kb/points");
        Some((
            200,
            // The engine answers in its own order, UUIDs in lower case with dashes, and
            // leaves out the points it does not hold.
            points_answer(vec![
                json!({"id": "5c56c793-69f3-4fbf-87e6-c4bf54c28c26", "payload": null, "vector": [0.0, 1.0]}),
                json!({"id": 17, "payload": null, "vector": [1.0, 0.0]}),
            ]),
        ))
    }));
    let r = open(&format!("qdrant+{}/kb", server.url), &Options::default()).unwrap();
    let got = r
        .stored_vectors(&[
            "17",
            "99",
            "5C56C79369F34FBF87E6C4BF54C28C26",
            "not-a-point",
        ])
        .unwrap()
        .expect("Qdrant returns vectors");
    assert_eq!(
        got,
        vec![
            ("17".to_owned(), vec![1.0, 0.0]),
            (
                "5C56C79369F34FBF87E6C4BF54C28C26".to_owned(),
                vec![0.0, 1.0]
            ),
        ]
    );
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let body = &seen[0].body;
    assert_eq!(body["with_vector"], json!(true));
    assert_eq!(body["with_payload"], json!(false));
    // An ID that can be no point is not asked for.
    let asked = body["ids"].as_array().unwrap();
    assert_eq!(asked.len(), 3);
    assert!(asked.contains(&json!(17)) && asked.contains(&json!(99)));
}

#[test]
fn qdrant_named_vectors_and_payload_ids_through_scroll() {
    let server = serve(Arc::new(|seen: &Seen| {
        assert_eq!(seen.path, "/collections/kb/points/scroll");
        assert_eq!(seen.body["with_vector"], json!(["dense"]));
        assert_eq!(seen.body["filter"]["must"][0]["key"], "chunk_id");
        assert_eq!(
            seen.body["filter"]["must"][0]["match"]["any"],
            json!(["c1", "c2"])
        );
        Some((
            200,
            json!({"result": {"points": [
                {"id": 2, "payload": {"chunk_id": "c2"}, "vector": {"dense": [0.5, 0.5, 0.0]}},
                {"id": 1, "payload": {"chunk_id": "c1"}, "vector": {"dense": [0.0, 0.0, 1.0]}}
            ], "next_page_offset": null}, "status": "ok", "time": 0.0003})
            .to_string(),
        ))
    }));
    let r = open(
        &format!("qdrant+{}/kb?vector=dense&id_payload=chunk_id", server.url),
        &Options::default(),
    )
    .unwrap();
    let got = r.stored_vectors(&["c1", "c2"]).unwrap().unwrap();
    assert_eq!(
        got,
        vec![
            ("c1".to_owned(), vec![0.0, 0.0, 1.0]),
            ("c2".to_owned(), vec![0.5, 0.5, 0.0])
        ]
    );
}

#[test]
fn qdrant_several_named_vectors_without_a_name_is_an_error() {
    let server = serve(Arc::new(|_: &Seen| {
        Some((
            200,
            points_answer(vec![
                json!({"id": 1, "vector": {"dense": [1.0], "title": [0.0]}}),
            ]),
        ))
    }));
    let r = open(&format!("qdrant+{}/kb", server.url), &Options::default()).unwrap();
    let e = r.stored_vectors(&["1"]).unwrap_err().to_string();
    assert!(e.contains("several named vectors"), "{e}");
    assert!(e.contains("vector=NAME"), "{e}");
}

#[test]
fn opensearch_cannot_return_stored_vectors() {
    let r = open(
        "opensearch+http://127.0.0.1:9/chunks?field=embedding",
        &Options::default(),
    )
    .unwrap();
    assert!(r.stored_vectors(&["a"]).unwrap().is_none());
}

#[test]
fn pgvector_returns_the_vector_column_by_id() {
    let Ok(url) = std::env::var("VEREDICTO_TEST_POSTGRES") else {
        println!("skipped: VEREDICTO_TEST_POSTGRES is not set (scripts/postgres.sh start)");
        return;
    };
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute(
            "CREATE EXTENSION IF NOT EXISTS vector;
             DROP TABLE IF EXISTS stored_vec_t;
             CREATE TABLE stored_vec_t (chunk_id text PRIMARY KEY, embedding vector(3), tenant text);
             INSERT INTO stored_vec_t VALUES ('a', '[1,0,0]', 'x'), ('b', '[0,0.25,-1.5]', 'x'), ('c', '[0,1,0]', 'y');",
        )
        .unwrap();
    let r = open(
        &format!("{url}?table=stored_vec_t&id=chunk_id&vector=embedding"),
        &Options::default(),
    )
    .unwrap();
    let got = r.stored_vectors(&["b", "zz", "a"]).unwrap().unwrap();
    assert_eq!(
        got,
        vec![
            ("b".to_owned(), vec![0.0, 0.25, -1.5]),
            ("a".to_owned(), vec![1.0, 0.0, 0.0])
        ]
    );
    // The URI's `where` holds here too: a row outside it is not the table's.
    let r = open(
        &format!(
            "{url}?table=stored_vec_t&id=chunk_id&vector=embedding&where=tenant%20%3D%20%27y%27"
        ),
        &Options::default(),
    )
    .unwrap();
    let got = r.stored_vectors(&["a", "c"]).unwrap().unwrap();
    assert_eq!(got, vec![("c".to_owned(), vec![0.0, 1.0, 0.0])]);
    client.batch_execute("DROP TABLE stored_vec_t").unwrap();
}
