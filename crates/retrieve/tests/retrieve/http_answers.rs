//! HTTP retrievers against real local servers: request-body templates (the request bodies
//! asserted), numeric IDs, redirects, connections closed mid-answer, the answer size cap.

#![allow(clippy::result_large_err)]

use crate::common;
use crate::worded::examine;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::policy::Policy;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::template::BodyTemplate;
use veredicto_retrieve::{open, Options, RetrieveError};

fn run_exam(uri: &str, options: &Options, cases: &[Case]) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, options)?;
    let policy = Policy::default();
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
            depth: 8,
            concurrency: 1,
            ..Settings::default()
        },
    )
}

fn template(text: &str) -> Option<BodyTemplate> {
    Some(BodyTemplate::parse(text, "body.json").unwrap())
}

/// Elasticsearch's `_search` answer shape: `hits.hits[]._id` / `_score`.
fn es_answer(ids: &[&str]) -> String {
    let hits: Vec<Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| json!({"_index": "chunks", "_id": id, "_score": 10.0 - i as f64}))
        .collect();
    json!({"took": 3, "timed_out": false, "hits": {"total": {"value": ids.len(), "relation": "eq"}, "max_score": 10.0, "hits": hits}}).to_string()
}

fn es_options(body: &str) -> Options {
    Options {
        body_template: template(body),
        results_pointer: "/hits/hits".into(),
        id_pointer: "/_id".into(),
        score_pointer: "/_score".into(),
        ..Options::default()
    }
}

#[test]
fn an_elasticsearch_bm25_search_through_a_body_template() {
    let server = serve(Arc::new(|seen: &Seen| {
        let q = seen.body["query"]["match"]["text"].as_str().unwrap_or("");
        let ids = [format!("{q}-a"), format!("{q}-b")];
        Some((200, es_answer(&[&ids[0], &ids[1]])))
    }));
    let hostile = "permisos \"retribuidos\" \\ {{k}} }, \"size\": 1";
    let cases = vec![
        case("c1", "vacaciones", &["vacaciones-b"], None),
        case("c2", hostile, &[&format!("{hostile}-a")], None),
    ];
    let options =
        es_options(r#"{"size": {{k}}, "query": {"match": {"text": {{query}}}}, "_source": false}"#);
    let e = run_exam(&format!("{}/chunks/_search", server.url), &options, &cases).unwrap();
    assert_eq!(e.report.cases[0].expected[0].rank, Some(2));
    assert_eq!(e.report.cases[1].expected[0].rank, Some(1));
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen[0].path, "/chunks/_search");
    assert_eq!(
        seen[0].body,
        json!({"size": 8, "query": {"match": {"text": "vacaciones"}}, "_source": false})
    );
    // The query is one JSON string, whatever it holds: nothing is injected.
    assert_eq!(
        seen[1].body,
        json!({"size": 8, "query": {"match": {"text": hostile}}, "_source": false})
    );
}

#[test]
fn a_hybrid_template_sends_the_vector_and_the_filters_as_term_queries() {
    let server = serve(Arc::new(|_: &Seen| Some((200, es_answer(&["x"])))));
    let mut c = case("c1", "q", &["x"], Some(vec![0.5, -0.25]));
    c.filters = serde_json::from_str(r#"{"domain": "laboral", "labels": ["VIGENTE"]}"#).unwrap();
    let options = es_options(
        r#"{
  "size": {{k}},
  "query": {"bool": {"must": {"match": {"text": {{query}}}}, "filter": {{filter_terms}}}},
  "knn": {"field": "embedding", "query_vector": {{query_vector}}, "k": {{k}}, "num_candidates": 100, "filter": {{filter_terms}}},
  "_source": false,
  "ext": {"declared": {{filters}}}
}"#,
    );
    run_exam(&server.url, &options, &[c]).unwrap();
    let seen = server.seen.lock().unwrap();
    let terms = json!([{"term": {"domain": "laboral"}}, {"term": {"labels": "VIGENTE"}}]);
    assert_eq!(
        seen[0].body,
        json!({
            "size": 8,
            "query": {"bool": {"must": {"match": {"text": "q"}}, "filter": terms}},
            "knn": {"field": "embedding", "query_vector": [0.5, -0.25], "k": 8, "num_candidates": 100, "filter": terms},
            "_source": false,
            "ext": {"declared": {"domain": "laboral", "labels": ["VIGENTE"]}}
        })
    );
}

#[test]
fn a_template_with_the_vector_makes_the_retriever_need_vectors() {
    let options = Options {
        body_template: template(r#"{"v": {{query_vector}}}"#),
        ..Options::default()
    };
    let r = open("http://127.0.0.1:9/search", &options).unwrap();
    assert_eq!(r.vectors(), veredicto_retrieve::Vectors::Required);
    assert!(
        !r.embedding_based(),
        "a hybrid service is not diagnosed as an embedding"
    );
    let options = Options {
        body_template: template(r#"{"q": {{query}}}"#),
        ..Options::default()
    };
    let r = open("http://127.0.0.1:9/search", &options).unwrap();
    assert_eq!(r.vectors(), veredicto_retrieve::Vectors::Never);
    // A template is for HTTP retrievers only.
    let err = open("cmd:sh x.sh", &options).err().unwrap();
    assert!(
        err.to_string().contains("--body-template applies to http"),
        "{err}"
    );
}

#[test]
fn numeric_ids_are_an_error_suggesting_id_as_text_and_read_exactly_with_it() {
    let server = serve(Arc::new(|_: &Seen| {
        Some((
            200,
            r#"{"results": [{"id": 18446744073709551615, "score": 2}, {"id": 7, "score": 1}]}"#
                .into(),
        ))
    }));
    let cases = vec![case("c", "q", &["7"], None)];
    let err = run_exam(&server.url, &Options::default(), &cases)
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("result 1: `/id` is not a string: 18446744073709551615"),
        "{text}"
    );
    assert!(text.contains("--id-as-text"), "{text}");
    let options = Options {
        id_as_text: true,
        ..Options::default()
    };
    let e = run_exam(&server.url, &options, &cases).unwrap();
    let run = &e.retrieval.run.queries["c"];
    assert_eq!(run[0].id, "18446744073709551615");
    assert_eq!(e.report.cases[0].expected[0].rank, Some(2));
}

/// A server that answers every connection with `respond(request body)`'s raw bytes, then
/// closes the connection.
fn raw_server(respond: fn(&Value) -> Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body).unwrap();
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let _ = stream.write_all(&respond(&body));
                let _ = stream.flush();
            });
        }
    });
    url
}

#[test]
fn a_redirect_is_reported_as_not_followed_with_its_location() {
    let url = raw_server(|_| {
        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: https://search.internal/v2/search?token=s3cret\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
    });
    let err = run_exam(&url, &Options::default(), &[case("c", "q", &["x"], None)])
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(matches!(err, RetrieveError::Setup { .. }), "{text}");
    assert!(
        text.contains("HTTP 307: redirects are not followed (Location: https://search.internal/v2/search?token=[redacted])"),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
}

#[test]
fn a_connection_closed_mid_answer_is_said_so_and_fails_that_case() {
    // The answer to `q1` announces 5,000 bytes and the connection closes after 39.
    let url = raw_server(|body| {
        if body["query"] == "q1" {
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"results\": [{\"id\": \"q1-0\"}, {\"id\": \"q1".to_vec()
        } else {
            let text = results(&["q0-0"]);
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}", text.len()).into_bytes()
        }
    });
    let options = Options {
        backoff: Duration::from_millis(5),
        ..Options::default()
    };
    let cases = vec![
        case("c0", "q0", &["q0-0"], None),
        case("c1", "q1", &["q1-0"], None),
        case("c2", "q2", &["q0-0"], None),
        // A fourth case keeps one failure within the default limit (25% of the cases).
        case("c3", "q3", &["q0-0"], None),
    ];
    let e = run_exam(&url, &options, &cases).unwrap();
    let c1 = &e.report.cases[1];
    assert_eq!(c1.reasons[0].as_str(), "no_results");
    let finding = &c1.diagnosis[0].finding;
    assert!(
        finding.contains("connection closed while reading the answer, after 39 bytes"),
        "{finding}"
    );
    assert!(finding.contains("3 attempts"), "retried: {finding}");
    assert_eq!(e.report.cases[0].expected[0].rank, Some(1));
}

#[test]
fn a_chunked_answer_cut_mid_way_is_a_connection_closed_too() {
    let url = raw_server(|_| {
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"results\": [{\"i\r\n".to_vec()
    });
    let options = Options {
        backoff: Duration::from_millis(5),
        retries: 0,
        ..Options::default()
    };
    let cases = vec![case("c0", "q0", &["x"], None)];
    let text = match run_exam(&url, &options, &cases) {
        Ok(e) => e.report.cases[0].diagnosis[0].finding.clone(),
        Err(e) => e.to_string(),
    };
    assert!(
        text.contains("connection closed while reading the answer"),
        "{text}"
    );
}

#[test]
fn an_answer_larger_than_the_cap_is_refused_naming_the_cap() {
    let server = serve(Arc::new(|_: &Seen| {
        let ids: Vec<String> = (0..2000).map(|i| format!("chunk-{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        Some((200, results(&refs)))
    }));
    let options = Options {
        max_answer_bytes: 16 << 10,
        ..Options::default()
    };
    let err = run_exam(&server.url, &options, &[case("c", "q", &["x"], None)])
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("the answer is larger than 16 KiB (raise --max-answer-bytes)"),
        "{text}"
    );
    assert!(text.len() < 600, "the quote is cut: {text}");
}

#[test]
fn a_huge_answer_keeps_only_depth_results() {
    // 50,000 results; depth 8: the ranking holds 8.
    let ids: Vec<String> = (0..50_000).map(|i| format!("chunk-{i}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let answer = results(&refs);
    let server = serve(Arc::new(move |_: &Seen| Some((200, answer.clone()))));
    let e = run_exam(
        &server.url,
        &Options::default(),
        &[case("c", "q", &["chunk-3"], None)],
    )
    .unwrap();
    assert_eq!(e.retrieval.run.queries["c"].len(), 8);
    assert_eq!(e.report.cases[0].expected[0].rank, Some(4));
}

/// One rule for every HTTP client: 429 (too many requests) is retried like a 5xx, honouring
/// `Retry-After`; before, a live retriever stopped the exam at the first 429.
#[test]
fn too_many_requests_is_retried_after_the_servers_wait() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SEEN: AtomicUsize = AtomicUsize::new(0);
    let url = raw_server(|_| {
        if SEEN.fetch_add(1, Ordering::SeqCst) == 0 {
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec()
        } else {
            let text = results(&["x"]);
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}", text.len()).into_bytes()
        }
    });
    let started = std::time::Instant::now();
    let e = run_exam(&url, &Options::default(), &[case("c", "q", &["x"], None)])
        .expect("the second attempt answers");
    assert_eq!(e.report.cases[0].expected[0].rank, Some(1));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited as told"
    );
}

/// `--ca-file` reaches the HTTP client: a file that cannot be read is refused when the
/// retriever is made, naming the file.
#[test]
fn an_unreadable_ca_file_is_refused_naming_it() {
    let options = Options {
        ca_file: Some("/nonexistent/corp-root.pem".into()),
        ..Options::default()
    };
    let err = open("https://search.internal/v1/search", &options)
        .err()
        .expect("refused");
    assert!(
        matches!(err, RetrieveError::Setup { .. })
            && err.to_string().contains("/nonexistent/corp-root.pem"),
        "{err}"
    );
}
