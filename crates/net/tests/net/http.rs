//! The HTTP client's one rule, against a scripted local server.

use std::time::{Duration, Instant};

use serde_json::json;
use veredicto_net::{Deadline, HttpClient, HttpError, HttpSettings, Proxy};

use crate::server::{Reply, Server};

fn fast() -> HttpSettings {
    HttpSettings {
        timeout: Duration::from_secs(5),
        retries: 2,
        backoff: Duration::from_millis(10),
        proxy: Proxy::Off,
        ..HttpSettings::default()
    }
}

fn client(settings: HttpSettings) -> HttpClient {
    HttpClient::new(settings).expect("client")
}

#[test]
fn timeouts_5xx_and_429_are_retried_then_the_answer_is_read() {
    let server = Server::start(3, |i, _| match i {
        0 => Reply::json(500, json!({"error": "warming up"})),
        1 => Reply::json(429, json!({"error": "slow down"})),
        _ => Reply::json(200, json!({"ok": true})),
    });
    let c = client(fast());
    let v = c.post_json(&server.url, &json!({})).expect("answers");
    assert_eq!(v, json!({"ok": true}));
    assert_eq!(server.count(), 3);
    assert!(c.has_answered());
}

#[test]
fn retry_after_is_honoured_on_429_and_503_within_the_deadline() {
    let server = Server::start(2, |i, _| match i {
        0 => Reply::json(503, json!({})).with("Retry-After", "1"),
        _ => Reply::json(200, json!({"ok": 1})),
    });
    let t = Instant::now();
    client(fast())
        .post_json(&server.url, &json!({}))
        .expect("answers");
    assert!(t.elapsed() >= Duration::from_secs(1), "{:?}", t.elapsed());

    // A Retry-After that ends past the deadline: no wait, no retry.
    let server = Server::start(2, |_, _| {
        Reply::json(429, json!({})).with("Retry-After", "60")
    });
    let t = Instant::now();
    let err = client(HttpSettings {
        deadline: Some(Deadline::after(Duration::from_secs(3))),
        ..fast()
    })
    .post_json(&server.url, &json!({}))
    .expect_err("gives up");
    assert!(
        matches!(
            err,
            HttpError::Status {
                status: 429,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(server.count(), 1);
}

#[test]
fn client_errors_refused_connections_and_redirects_are_not_retried() {
    let server = Server::start(5, |_, _| Reply::json(401, json!({"error": "bad key"})));
    let err = client(fast())
        .post_json(&server.url, &json!({}))
        .expect_err("401");
    assert!(
        matches!(
            err,
            HttpError::Status {
                status: 401,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(server.count(), 1);

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let c = client(fast());
    let err = c
        .post_json(&format!("http://127.0.0.1:{port}"), &json!({}))
        .expect_err("refused");
    assert!(
        matches!(err, HttpError::Transport { attempts: 1, .. }),
        "{err}"
    );
    assert!(!c.has_answered());

    let server = Server::start(5, |_, _| {
        Reply::json(307, json!({})).with("Location", "http://u:pw@elsewhere.example/v1?key=k")
    });
    let err = client(fast())
        .post_json(&server.url, &json!({}))
        .expect_err("redirect");
    let msg = err.to_string();
    assert!(
        matches!(err, HttpError::Redirect { status: 307, .. }),
        "{msg}"
    );
    assert!(
        msg.contains("elsewhere.example") && msg.contains("not followed"),
        "{msg}"
    );
    assert!(!msg.contains("pw") && !msg.contains("key=k"), "{msg}");
    assert_eq!(server.count(), 1);
}

#[test]
fn a_slow_server_times_out_and_the_deadline_bounds_every_attempt() {
    let server = Server::start(5, |_, _| Reply {
        delay: Duration::from_millis(1500),
        ..Reply::json(200, json!({}))
    });
    let err = client(HttpSettings {
        timeout: Duration::from_millis(200),
        retries: 1,
        ..fast()
    })
    .post_json(&server.url, &json!({}))
    .expect_err("times out");
    assert!(
        matches!(err, HttpError::Timeout { attempts: 2, .. }),
        "{err}"
    );

    let t = Instant::now();
    let err = client(HttpSettings {
        timeout: Duration::from_secs(10),
        retries: 5,
        deadline: Some(Deadline::after(Duration::from_millis(400))),
        ..fast()
    })
    .post_json(&server.url, &json!({}))
    .expect_err("deadline");
    assert!(matches!(err, HttpError::Deadline { .. }), "{err}");
    assert!(
        err.to_string().contains("total deadline of 400 ms"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[test]
fn bodies_over_the_cap_and_bodies_that_are_not_json_are_errors() {
    let server = Server::start(1, |_, _| Reply {
        body: "x".repeat(10_000),
        ..Reply::json(200, json!({}))
    });
    let err = client(HttpSettings {
        max_body: 1000,
        ..fast()
    })
    .post_json(&server.url, &json!({}))
    .expect_err("too large");
    assert!(
        matches!(err, HttpError::TooLarge { limit: 1000, .. }),
        "{err}"
    );

    let server = Server::start(1, |_, _| Reply {
        body: "<html>token=abc123</html>".into(),
        ..Reply::json(200, json!({}))
    });
    let err = client(fast())
        .post_json(&server.url, &json!({}))
        .expect_err("not JSON");
    assert!(matches!(err, HttpError::NotJson { .. }), "{err}");
    assert!(!err.to_string().contains("abc123"), "{err}");
}

#[test]
fn secrets_go_in_headers_and_never_in_messages() {
    let server = Server::start(2, |_, req| {
        // A server that echoes what it was sent.
        let auth = req.header("authorization").unwrap_or("").to_owned();
        Reply::json(403, json!({"error": format!("Authorization: {auth}")}))
    });
    let url = server.url.replace("http://", "http://ann:pa55word@");
    let err = client(fast()).post_json(&url, &json!({})).expect_err("403");
    let msg = err.to_string();
    assert!(
        !msg.contains("pa55word") && !msg.contains("YW5uOnBhNTV3b3Jk"),
        "{msg}"
    );

    let settings = HttpSettings {
        headers: vec![("Authorization".into(), "Bearer sk-live-123".into())],
        ..fast()
    };
    let c = client(settings);
    let err = c.post_json(&server.url, &json!({})).expect_err("403");
    assert!(!err.to_string().contains("sk-live-123"), "{err}");
    assert!(!format!("{c:?}").contains("sk-live-123"));
}

/// HTTPS through the same TLS stack: a server whose certificate comes from a CA of the
/// test's is refused with the system's roots and accepted with `--ca-file`.
#[test]
fn https_trusts_the_system_roots_plus_the_ca_file() {
    let dir = crate::tls_postgres::tls_dir();
    let server = Server::start_tls(
        3,
        &dir.join("server.crt"),
        &dir.join("server.key"),
        |_, _| Reply::json(200, json!({"secure": true})),
    );
    let err = client(fast())
        .post_json(&server.url, &json!({}))
        .expect_err("unknown CA");
    assert!(matches!(err, HttpError::Transport { .. }), "{err}");
    assert!(err.to_string().to_lowercase().contains("issuer"), "{err}");
    let v = client(HttpSettings {
        ca_file: Some(dir.join("ca.crt")),
        ..fast()
    })
    .post_json(&server.url, &json!({}))
    .expect("trusted through --ca-file");
    assert_eq!(v, json!({"secure": true}));

    let err = HttpClient::new(HttpSettings {
        ca_file: Some(dir.join("missing.pem")),
        ..fast()
    })
    .expect_err("missing file");
    assert!(err.to_string().contains("missing.pem"), "{err}");
}
