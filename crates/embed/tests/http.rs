//! The HTTP clients against scripted servers on 127.0.0.1 (OpenAI embeddings, TEI and
//! Cohere/Jina rerank), including failing and slow servers.

mod common;

use std::time::{Duration, Instant};

use common::{Reply, Server};
use serde_json::{json, Value};
use veredicto_embed::{
    EmbedError, Embedder, HttpRerankConfig, HttpReranker, OpenAiConfig, OpenAiEmbedder, RerankApi,
    Reranker, TextKind,
};

/// A fake embedding: [len(text), first byte, 1.0, index-in-request].
fn fake_vector(text: &str) -> Vec<f32> {
    vec![
        text.len() as f32,
        text.bytes().next().unwrap_or(0) as f32,
        1.0,
    ]
}

/// OpenAI-style reply, items deliberately in reverse index order.
fn embeddings_reply(req: &common::Request) -> Reply {
    let inputs = req.body["input"].as_array().cloned().unwrap_or_default();
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"object": "embedding", "index": i, "embedding": fake_vector(t.as_str().unwrap_or(""))})
        })
        .collect();
    data.reverse();
    Reply::json(
        200,
        json!({"object": "list", "data": data, "model": req.body["model"]}),
    )
}

fn fast(cfg: OpenAiConfig) -> OpenAiConfig {
    OpenAiConfig {
        backoff: Duration::from_millis(10),
        timeout: Duration::from_secs(5),
        ..cfg
    }
}

#[test]
fn openai_embeddings_in_order_batched_with_key_and_prefix() {
    let server = Server::start(10, |_, req| embeddings_reply(req));
    let cfg = OpenAiConfig {
        api_key: Some("sk-test".into()),
        batch_size: 2,
        query_prefix: "query: ".into(),
        ..fast(OpenAiConfig::new(
            format!("{}/v1", server.url),
            "tiny-embed",
        ))
    };
    let e = OpenAiEmbedder::new(cfg);
    assert_eq!(e.url(), format!("{}/v1/embeddings", server.url));
    assert_eq!(e.dim(), 0, "unknown before the first request");
    let texts = ["alpha", "b", "gamma ray", "", "epsilon"];
    let v = e.embed(&texts, TextKind::Passage).unwrap();
    assert_eq!(v.len(), 5);
    for (t, got) in texts.iter().zip(&v) {
        assert_eq!(got, &fake_vector(t));
    }
    assert_eq!(e.dim(), 3);
    assert_eq!(e.fingerprint().dim, 3);
    assert_eq!(e.fingerprint().name, "tiny-embed");
    assert_eq!(server.count(), 3, "5 texts in batches of 2");
    let q = e.embed(&["alpha"], TextKind::Query).unwrap();
    assert_eq!(q[0], fake_vector("query: alpha"));
    let reqs = server.requests.lock().unwrap().clone();
    for r in &reqs {
        assert_eq!(r.path, "/v1/embeddings");
        assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(r.body["model"], "tiny-embed");
    }
    assert_eq!(reqs[0].body["input"], json!(["alpha", "b"]));
}

#[test]
fn openai_probe_learns_dimension() {
    let server = Server::start(2, |_, req| embeddings_reply(req));
    let e = OpenAiEmbedder::new(fast(OpenAiConfig::new(&server.url, "m")));
    assert_eq!(e.probe().unwrap(), 3);
    assert_eq!(e.probe().unwrap(), 3);
    assert_eq!(server.count(), 1, "probing twice sends one request");
    assert!(server.requests.lock().unwrap()[0]
        .header("authorization")
        .is_none());
}

#[test]
fn server_error_then_success_is_retried() {
    let server = Server::start(3, |i, req| {
        if i == 0 {
            Reply::json(500, json!({"error": "warming up"}))
        } else if i == 1 {
            Reply::json(429, json!({"error": "slow down"}))
        } else {
            embeddings_reply(req)
        }
    });
    let e = OpenAiEmbedder::new(fast(OpenAiConfig::new(&server.url, "m")));
    let v = e.embed(&["x"], TextKind::Passage).unwrap();
    assert_eq!(v[0], fake_vector("x"));
    assert_eq!(server.count(), 3);
}

#[test]
fn always_failing_server_gives_a_clear_error_after_retries() {
    let server = Server::start(10, |_, _| Reply::json(503, json!({"error": "overloaded"})));
    let cfg = OpenAiConfig {
        retries: 2,
        ..fast(OpenAiConfig::new(&server.url, "m"))
    };
    let err = OpenAiEmbedder::new(cfg)
        .embed(&["x"], TextKind::Passage)
        .unwrap_err();
    match &err {
        EmbedError::HttpStatus {
            url,
            status,
            attempts,
            body,
        } => {
            assert_eq!(url, &format!("{}/v1/embeddings", server.url));
            assert_eq!(*status, 503);
            assert_eq!(*attempts, 3);
            assert!(body.contains("overloaded"));
        }
        other => panic!("unexpected {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("503") && msg.contains(&server.url) && msg.contains("3 attempt"),
        "{msg}"
    );
    assert_eq!(server.count(), 3);
}

#[test]
fn client_errors_are_not_retried() {
    let server = Server::start(5, |_, _| Reply::json(401, json!({"error": "bad key"})));
    let err = OpenAiEmbedder::new(fast(OpenAiConfig::new(&server.url, "m")))
        .embed(&["x"], TextKind::Passage)
        .unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::HttpStatus {
                status: 401,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(server.count(), 1);
}

#[test]
fn slow_server_times_out_after_retries() {
    let server = Server::start(2, |_, req| {
        let mut r = embeddings_reply(req);
        r.delay = Duration::from_millis(1500);
        r
    });
    let cfg = OpenAiConfig {
        timeout: Duration::from_millis(300),
        retries: 1,
        backoff: Duration::from_millis(10),
        ..OpenAiConfig::new(&server.url, "m")
    };
    let t = Instant::now();
    let err = OpenAiEmbedder::new(cfg)
        .embed(&["x"], TextKind::Passage)
        .unwrap_err();
    assert!(
        matches!(err, EmbedError::HttpTimeout { attempts: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn unreachable_server_is_a_transport_error() {
    // Bind then drop: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = OpenAiConfig {
        retries: 1,
        ..fast(OpenAiConfig::new(format!("http://127.0.0.1:{port}"), "m"))
    };
    let err = OpenAiEmbedder::new(cfg)
        .embed(&["x"], TextKind::Passage)
        .unwrap_err();
    // One rule for every HTTP client: a refused connection is not retried (the server
    // is not there; retrying only delays the error).
    assert!(
        matches!(err, EmbedError::HttpTransport { attempts: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains(&port.to_string()));
}

#[test]
fn inconsistent_dimensions_and_bad_bodies_are_reported() {
    let server = Server::start(4, |i, req| {
        let n = req.body["input"].as_array().map_or(0, Vec::len);
        match i {
            0 => Reply::json(
                200,
                json!({"data": (0..n).map(|k| json!({"index": k, "embedding": vec![0.5; 3 + k]})).collect::<Vec<_>>()}),
            ),
            1 => Reply::json(200, json!({"unexpected": true})),
            2 => Reply::json(200, json!({"data": [{"index": 0, "embedding": "AAAA"}]})),
            _ => Reply::json(200, json!({"data": []})),
        }
    });
    let e = OpenAiEmbedder::new(fast(OpenAiConfig::new(&server.url, "m")));
    let err = e.embed(&["a", "b"], TextKind::Passage).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::DimensionMismatch {
                expected: 3,
                got: 4,
                ..
            }
        ),
        "{err}"
    );
    let err = e.embed(&["a"], TextKind::Passage).unwrap_err();
    assert!(matches!(err, EmbedError::BadResponse { .. }), "{err}");
    let err = e.embed(&["a"], TextKind::Passage).unwrap_err();
    assert!(err.to_string().contains("base64"), "{err}");
    let err = e.embed(&["a"], TextKind::Passage).unwrap_err();
    assert!(
        err.to_string().contains("0 embeddings for 1 inputs"),
        "{err}"
    );
}

#[test]
fn configured_dimension_is_enforced() {
    let server = Server::start(1, |_, req| embeddings_reply(req));
    let cfg = OpenAiConfig {
        dimensions: Some(384),
        ..fast(OpenAiConfig::new(&server.url, "m"))
    };
    let e = OpenAiEmbedder::new(cfg);
    assert_eq!(e.dim(), 384);
    let err = e.embed(&["a"], TextKind::Passage).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::DimensionMismatch {
                expected: 384,
                got: 3,
                ..
            }
        ),
        "{err}"
    );
}

// ------------------------------------------------------------------ rerank

/// Relevance = number of query words in the passage (stand-in model).
fn relevance(query: &str, passage: &str) -> f64 {
    query
        .split_whitespace()
        .filter(|w| passage.contains(w))
        .count() as f64
}

fn tei_reply(req: &common::Request) -> Reply {
    let q = req.body["query"].as_str().unwrap_or("");
    let Some(texts) = req.body["texts"].as_array() else {
        return Reply::json(422, json!({"error": "missing field `texts`"}));
    };
    let mut items: Vec<(usize, f64)> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| (i, relevance(q, t.as_str().unwrap_or(""))))
        .collect();
    items.sort_by(|a, b| b.1.total_cmp(&a.1));
    Reply::json(
        200,
        json!(items
            .iter()
            .map(|(i, s)| json!({"index": i, "score": s}))
            .collect::<Vec<_>>()),
    )
}

fn cohere_reply(req: &common::Request) -> Reply {
    let q = req.body["query"].as_str().unwrap_or("");
    let Some(docs) = req.body["documents"].as_array() else {
        return Reply::json(400, json!({"message": "documents is required"}));
    };
    let mut items: Vec<(usize, f64)> = docs
        .iter()
        .enumerate()
        .map(|(i, t)| (i, relevance(q, t.as_str().unwrap_or(""))))
        .collect();
    items.sort_by(|a, b| b.1.total_cmp(&a.1));
    Reply::json(
        200,
        json!({"id": "x", "results": items.iter().map(|(i, s)| json!({"index": i, "relevance_score": s})).collect::<Vec<_>>()}),
    )
}

const PASSAGES: &[&str] = &[
    "nothing here",
    "rack bolts",
    "the rack",
    "torque the rack bolts now",
];
const WANT: &[f32] = &[0.0, 2.0, 1.0, 3.0];

fn rerank_cfg(url: String) -> HttpRerankConfig {
    HttpRerankConfig {
        backoff: Duration::from_millis(10),
        ..HttpRerankConfig::new(url)
    }
}

#[test]
fn tei_rerank_scores_come_back_in_input_order() {
    let server = Server::start(4, |_, req| tei_reply(req));
    let cfg = HttpRerankConfig {
        api: RerankApi::Tei,
        batch_size: 3,
        ..rerank_cfg(format!("{}/rerank", server.url))
    };
    let r = HttpReranker::new(cfg);
    assert_eq!(r.score("rack bolts torque", PASSAGES).unwrap(), WANT);
    assert_eq!(server.count(), 2, "4 passages in batches of 3");
    let req = &server.requests.lock().unwrap()[0];
    assert_eq!(req.path, "/rerank");
    assert_eq!(req.body["texts"], json!(&PASSAGES[..3]));
    assert_eq!(r.fingerprint().architecture, "http");
}

#[test]
fn cohere_rerank_with_model_and_key() {
    let server = Server::start(2, |_, req| cohere_reply(req));
    let cfg = HttpRerankConfig {
        api: RerankApi::Cohere,
        model: Some("rerank-v3.5".into()),
        api_key: Some("k".into()),
        ..rerank_cfg(format!("{}/v2/rerank", server.url))
    };
    let r = HttpReranker::new(cfg);
    assert_eq!(r.score("rack bolts torque", PASSAGES).unwrap(), WANT);
    let req = &server.requests.lock().unwrap()[0];
    assert_eq!(req.body["model"], "rerank-v3.5");
    assert_eq!(req.body["top_n"], 4);
    assert_eq!(req.header("authorization"), Some("Bearer k"));
    assert_eq!(r.fingerprint().name, "rerank-v3.5");
}

#[test]
fn auto_detects_the_contract_from_the_server() {
    // A Cohere-style server: rejects the TEI body with 400, then answers `documents`.
    let server = Server::start(4, |_, req| cohere_reply(req));
    let r = HttpReranker::new(rerank_cfg(format!("{}/rerank", server.url)));
    assert_eq!(r.api(), RerankApi::Auto);
    assert_eq!(r.score("rack bolts torque", PASSAGES).unwrap(), WANT);
    assert_eq!(r.api(), RerankApi::Cohere);
    assert_eq!(server.count(), 2);
    // Settled: the next call sends the Cohere body straight away.
    assert_eq!(r.score("rack", &PASSAGES[..2]).unwrap(), vec![0.0, 1.0]);
    assert_eq!(server.count(), 3);

    // A TEI server is used as is.
    let server = Server::start(2, |_, req| tei_reply(req));
    let r = HttpReranker::new(rerank_cfg(format!("{}/rerank", server.url)));
    assert_eq!(r.score("rack bolts torque", PASSAGES).unwrap(), WANT);
    assert_eq!(r.api(), RerankApi::Tei);
    assert_eq!(server.count(), 1);
}

#[test]
fn failing_rerank_server_is_retried_then_reported() {
    let server = Server::start(3, |i, req| {
        if i == 0 {
            Reply::json(502, json!({"error": "bad gateway"}))
        } else {
            tei_reply(req)
        }
    });
    let r = HttpReranker::new(HttpRerankConfig {
        api: RerankApi::Tei,
        ..rerank_cfg(format!("{}/rerank", server.url))
    });
    assert_eq!(r.score("rack bolts torque", PASSAGES).unwrap(), WANT);

    let server = Server::start(10, |_, _| Reply::json(500, json!({"error": "boom"})));
    let r = HttpReranker::new(HttpRerankConfig {
        retries: 1,
        ..rerank_cfg(format!("{}/rerank", server.url))
    });
    let err = r.score("q", &["a"]).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::HttpStatus {
                status: 500,
                attempts: 2,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn rerank_response_missing_a_passage_is_an_error() {
    let server = Server::start(1, |_, _| {
        Reply::json(200, json!([{"index": 0, "score": 1.0}]))
    });
    let r = HttpReranker::new(HttpRerankConfig {
        api: RerankApi::Tei,
        ..rerank_cfg(format!("{}/rerank", server.url))
    });
    let err = r.score("q", &["a", "b"]).unwrap_err();
    assert!(err.to_string().contains("no score for passage 1"), "{err}");
}

/// A base URL with `user:pass@` and `?key=`: the credentials reach the server (basic auth,
/// the query string after the endpoint path) but never the URL shown, the fingerprint or an
/// error, even when the server echoes the `Authorization` header back.
#[test]
fn credentials_in_url_are_used_but_never_shown() {
    let server = Server::start(3, |i, req| {
        if i == 0 {
            embeddings_reply(req)
        } else {
            Reply::json(
                401,
                json!({"error": "denied", "echo": {"Authorization": req.header("authorization")}, "note": "Authorization: Bearer sk-echoed"}),
            )
        }
    });
    let host = server.url.trim_start_matches("http://");
    let cfg = OpenAiConfig {
        retries: 0,
        ..fast(OpenAiConfig::new(
            format!("http://alice:p%40ss@{host}/v1?key=sk-query&api-version=2"),
            "m",
        ))
    };
    let e = OpenAiEmbedder::new(cfg);
    assert_eq!(
        e.url(),
        format!("http://{host}/v1/embeddings?key=[redacted]&api-version=2")
    );
    e.embed(&["x"], TextKind::Passage).unwrap();
    let err = e.embed(&["y"], TextKind::Passage).unwrap_err().to_string();
    let reqs = server.requests.lock().unwrap().clone();
    assert_eq!(reqs[0].path, "/v1/embeddings?key=sk-query&api-version=2");
    // base64("alice:p@ss")
    assert_eq!(
        reqs[0].header("authorization"),
        Some("Basic YWxpY2U6cEBzcw==")
    );
    assert!(err.contains("401") && err.contains("denied"), "{err}");
    for secret in ["alice", "p%40ss", "sk-query", "YWxpY2U6cEBzcw", "sk-echoed"] {
        assert!(!err.contains(secret), "{secret} printed: {err}");
        assert!(!format!("{e:?}").contains(secret), "{secret} in Debug");
        assert!(!e.url().contains(secret));
    }
}

#[test]
fn chat_and_rerank_urls_with_credentials_are_redacted() {
    let server = Server::start(2, |i, req| {
        if i == 0 {
            Reply::json(
                200,
                json!({"choices": [{"message": {"content": "ok"}}], "model": "m"}),
            )
        } else {
            assert_eq!(req.header("authorization"), Some("Basic dTpw"));
            Reply::json(200, json!([{"index": 0, "score": 0.5}]))
        }
    });
    let host = server.url.trim_start_matches("http://");
    let mut cfg = veredicto_embed::ChatConfig::new(format!("http://u:p@{host}?token=t0k"), "m");
    cfg.retries = 0;
    let chat = veredicto_embed::ChatClient::new(cfg).unwrap();
    assert_eq!(
        chat.url(),
        format!("http://{host}/v1/chat/completions?token=[redacted]")
    );
    assert_eq!(chat.complete("s", "u").unwrap().content, "ok");
    assert_eq!(
        server.requests.lock().unwrap()[0].path,
        "/v1/chat/completions?token=t0k"
    );
    let r = HttpReranker::new(HttpRerankConfig {
        api: RerankApi::Tei,
        retries: 0,
        ..HttpRerankConfig::new(format!("http://u:p@{host}/rerank?api_key=k3y"))
    });
    assert_eq!(r.score("q", &["a"]).unwrap(), vec![0.5]);
    let cfg = OpenAiConfig {
        api_key: Some("sk-debug".into()),
        ..OpenAiConfig::new("http://u:p@h/v1?key=k3y", "m")
    };
    let shown = format!("{cfg:?}");
    assert!(
        !shown.contains("sk-debug") && !shown.contains("u:p") && !shown.contains("k3y"),
        "{shown}"
    );
    let shown = format!("{} {r:?}", r.fingerprint().name);
    assert!(!shown.contains("u:p") && !shown.contains("k3y"), "{shown}");
}
