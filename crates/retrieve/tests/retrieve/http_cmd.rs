//! HTTP and `cmd:` retrievers against real servers and a real program.

#![allow(clippy::result_large_err)]

use crate::common;
use crate::worded::examine;
use common::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::policy::Policy;
use veredicto_core::retrieval::{DuplicateRule, FailureLimit};
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options, RetrieveError};

fn run_exam(
    uri: &str,
    options: &Options,
    cases: &[Case],
    settings: &Settings<'_>,
) -> Result<Examined, RetrieveError> {
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
        settings,
    )
}

fn answers() -> Arc<Handler> {
    Arc::new(|seen: &Seen| {
        let q = seen.body["query"].as_str().unwrap_or("");
        let ids: Vec<String> = (0..10).map(|i| format!("{q}-{i}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let k = seen.body["k"].as_u64().unwrap() as usize;
        Some((200, results(&refs[..k.min(10)])))
    })
}

fn golden(n: usize) -> Vec<Case> {
    (0..n)
        .map(|i| {
            let q = format!("q{i}");
            // Expected: rank 1 for even cases, rank 5 (beyond K = 3) for odd ones.
            let rank = if i % 2 == 0 { 0 } else { 4 };
            case(&format!("c{i}"), &q, &[&format!("{q}-{rank}")], None)
        })
        .collect()
}

#[test]
fn http_contract_ranks_and_deterministic_output_at_any_concurrency() {
    let server = serve(answers());
    let cases = golden(12);
    let json = |concurrency| {
        let settings = Settings {
            depth: 8,
            concurrency,
            ..Settings::default()
        };
        let e = run_exam(&server.url, &Options::default(), &cases, &settings).unwrap();
        serde_json::to_string(&e.report).unwrap()
    };
    let one = json(1);
    assert_eq!(one, json(4), "same report at concurrency 1 and 4");
    let report: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(report["cases"][0]["expected"][0]["rank"], 1);
    assert_eq!(report["cases"][1]["expected"][0]["rank"], 5);
    assert_eq!(report["cases"][1]["retrieved"], 8);
    // The diagnosis speaks of the retriever, not the embedding.
    assert_eq!(report["cases"][1]["diagnosis"][0]["check"], "retriever");
    // The request body is the documented contract, names exactly.
    let seen = server.seen.lock().unwrap();
    let body = &seen[0].body;
    let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["query", "k"], "{body}");
    assert_eq!(body["k"], 8);
}

#[test]
fn http_sends_query_vectors_and_headers_from_the_environment_and_never_describes_credentials() {
    let server = serve(answers());
    let port_url = server.url.replace("http://", "http://user:s3cret@") + "/search?api_key=k3y&x=1";
    let mut cases = golden(1);
    cases[0].query_vector = Some(vec![0.5, 0.25]);
    let options = Options {
        headers: vec![("X-Api-Key".into(), "from-env".into())],
        ..Options::default()
    };
    let retriever = open(&port_url, &options).unwrap();
    let shown = retriever.describe();
    assert!(
        !shown.contains("s3cret") && !shown.contains("k3y"),
        "{shown}"
    );
    assert!(shown.contains("x=1"), "{shown}");
    let e = run_exam(&port_url, &options, &cases, &Settings::default()).unwrap();
    assert_eq!(e.report.run.name, shown);
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen[0].body["query_vector"], serde_json::json!([0.5, 0.25]));
    assert_eq!(seen[0].headers["x-api-key"], "from-env");
    assert_eq!(seen[0].path, "/search?api_key=k3y&x=1");
}

#[test]
fn http_other_response_shapes_through_json_pointers() {
    let server = serve(Arc::new(|_: &Seen| {
        Some((
            200,
            r#"{"hits": {"hits": [{"_id": "a", "fields": {"s": 2.5}}, {"_id": "b"}]}}"#.into(),
        ))
    }));
    let options = Options {
        results_pointer: "/hits/hits".into(),
        id_pointer: "/_id".into(),
        score_pointer: "/fields/s".into(),
        ..Options::default()
    };
    let cases = vec![case("c", "q", &["b"], None)];
    let e = run_exam(&server.url, &options, &cases, &Settings::default()).unwrap();
    let run = &e.retrieval.run.queries["c"];
    assert_eq!(run[0].id, "a");
    assert_eq!(run[0].score, Some(2.5));
    assert_eq!(run[1].score, None);
    assert_eq!(e.report.cases[0].expected[0].rank, Some(2));
}

#[test]
fn http_contract_violations_are_clear_errors() {
    for (body, want) in [
        (r#"{"hits": []}"#, "no result list at `/results`"),
        (
            r#"{"results": [{"id": 42}]}"#,
            "result 1: `/id` is not a string: 42",
        ),
        (
            r#"{"results": [{"id": "a", "score": "high"}]}"#,
            "`/score` is not a number",
        ),
        ("not json", "the answer is not JSON"),
    ] {
        let server = serve(Arc::new(move |_: &Seen| Some((200, body.to_owned()))));
        let err = run_exam(
            &server.url,
            &Options::default(),
            &golden(2),
            &Settings::default(),
        )
        .err()
        .expect("an error");
        let text = err.to_string();
        assert!(matches!(err, RetrieveError::Setup { .. }), "{text}");
        assert!(text.contains(want), "{text}");
        assert!(text.contains(&server.url), "names the URL: {text}");
    }
}

#[test]
fn http_retries_5xx_then_succeeds() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let server = serve(Arc::new(move |_: &Seen| {
        if c.fetch_add(1, Ordering::SeqCst) < 2 {
            Some((503, "busy".into()))
        } else {
            Some((200, results(&["x"])))
        }
    }));
    let options = Options {
        backoff: Duration::from_millis(10),
        ..Options::default()
    };
    let e = run_exam(
        &server.url,
        &options,
        &[case("c", "q", &["x"], None)],
        &Settings::default(),
    )
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(e.report.cases[0].passed);
}

#[test]
fn an_unresponsive_server_fails_fast_naming_url_and_time() {
    let server = serve(Arc::new(|_: &Seen| None));
    let options = Options {
        timeout: Duration::from_millis(300),
        backoff: Duration::from_millis(10),
        ..Options::default()
    };
    let t = Instant::now();
    let err = run_exam(&server.url, &options, &golden(40), &Settings::default())
        .err()
        .expect("an error");
    let took = t.elapsed();
    let text = err.to_string();
    assert!(took < Duration::from_secs(5), "took {took:?}: {text}");
    assert!(text.contains(&server.url), "{text}");
    assert!(text.contains("never answered"), "{text}");
    assert!(text.contains("3 attempts"), "{text}");
}

#[test]
fn the_total_deadline_bounds_the_exam() {
    let server = serve(Arc::new(|_: &Seen| {
        std::thread::sleep(Duration::from_millis(150));
        Some((200, results(&["x"])))
    }));
    let options = Options {
        deadline: Duration::from_millis(400),
        ..Options::default()
    };
    let settings = Settings {
        concurrency: 1,
        ..Settings::default()
    };
    let err = run_exam(&server.url, &options, &golden(20), &settings)
        .err()
        .expect("an error");
    assert!(err.to_string().contains("total deadline"), "{err}");
}

#[test]
fn one_failing_case_is_a_no_results_case_with_the_error_in_its_diagnosis() {
    let server = serve(Arc::new(|seen: &Seen| {
        if seen.body["query"] == "q1" {
            Some((500, "index shard down".into()))
        } else {
            Some((200, results(&["q0-0", "q2-0"])))
        }
    }));
    let options = Options {
        backoff: Duration::from_millis(5),
        ..Options::default()
    };
    let settings = Settings {
        concurrency: 1,
        ..Settings::default()
    };
    // One case of four: within the default limit of a quarter of the cases.
    let e = run_exam(&server.url, &options, &golden(4), &settings).unwrap();
    assert_eq!(e.report.summary.retriever_failures, 1);
    let c1 = &e.report.cases[1];
    assert!(!c1.passed);
    assert_eq!(c1.reasons[0].as_str(), "no_results");
    assert_eq!(
        c1.diagnosis[0].check,
        veredicto_core::diagnosis::Check::Retriever
    );
    assert!(
        c1.diagnosis[0]
            .finding
            .contains("HTTP 500: index shard down"),
        "{:?}",
        c1.diagnosis
    );
    assert!(e.retrieval.failures.contains_key("c1"));
    assert_eq!(e.report.cases[0].expected[0].rank, Some(1));
}

#[test]
fn an_expected_chunk_beyond_depth_is_not_within_depth_never_rank_zero() {
    let server = serve(answers());
    let cases = vec![case("c", "q", &["q-9"], None)];
    let settings = Settings {
        depth: 5,
        ..Settings::default()
    };
    let e = run_exam(&server.url, &Options::default(), &cases, &settings).unwrap();
    let c = &e.report.cases[0];
    assert_eq!(c.expected[0].rank, None);
    assert!(
        c.diagnosis
            .iter()
            .any(|f| f.finding.starts_with("not within depth 5")),
        "{:?}",
        c.diagnosis
    );
}

#[test]
fn unknown_scheme_is_a_clear_error() {
    let err = open("ftp://user:pw@host/x", &Options::default())
        .err()
        .unwrap();
    let text = err.to_string();
    assert!(text.contains("unknown scheme `ftp`"), "{text}");
    assert!(!text.contains("pw"), "{text}");
}

#[test]
fn a_command_retriever_answers_one_line_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers.json");
    std::fs::write(
        &answers,
        r#"{"q0": ["a", "b", "c"], "q1": ["d", "e", "f", "g"]}"#,
    )
    .unwrap();
    let uri = format!(
        "cmd:{} {}",
        env!("CARGO_BIN_EXE_example-retriever"),
        answers.display()
    );
    let cases = vec![
        case("c0", "q0", &["b"], None),
        case("c1", "q1", &["g"], None),
        case("c2", "unknown", &["z"], None),
    ];
    let e = run_exam(&uri, &Options::default(), &cases, &Settings::default()).unwrap();
    assert_eq!(e.report.cases[0].expected[0].rank, Some(2));
    assert_eq!(e.report.cases[1].expected[0].rank, Some(4));
    assert!(!e.report.cases[2].passed);
    assert_eq!(e.report.cases[2].reasons[0].as_str(), "no_results");
}

#[test]
fn a_command_that_dies_is_a_clear_error() {
    let e = run_exam(
        "cmd:false",
        &Options::default(),
        &golden(2),
        &Settings::default(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("cmd:false"), "{e}");
}

/// A case expecting three chunks, answered by a service that returns the first of them ten
/// times: the issue's reproduction.
fn repeated_first() -> (Server, Vec<Case>) {
    let server = serve(Arc::new(|_: &Seen| Some((200, results(&["c1"; 10])))));
    let mut c = case("q1", "alpha", &["c1", "c2", "c3"], None);
    c.top_k = Some(10);
    (server, vec![c])
}

#[test]
fn a_chunk_returned_ten_times_counts_once_and_is_reported() {
    let (server, cases) = repeated_first();
    let e = run_exam(
        &server.url,
        &Options::default(),
        &cases,
        &Settings::default(),
    )
    .unwrap();
    let c = &e.report.cases[0];
    // Before: every copy counted as a hit, recall 100%, P@10 1.000, nDCG 1.000, a pass.
    assert!((c.recall - 1.0 / 3.0).abs() < 1e-12, "recall {}", c.recall);
    assert!((c.precision - 0.1).abs() < 1e-12, "P@10 {}", c.precision);
    assert!(!c.passed);
    assert_eq!(c.retrieved, 1);
    let d = c.duplicates_removed.as_ref().expect("duplicates reported");
    assert_eq!((d.count, d.ids.as_slice()), (9, &["c1".to_owned()][..]));
    assert_eq!(e.report.summary.duplicates_removed, 9);
    assert_eq!(e.report.summary.cases_with_duplicates, 1);
    // The kept list names each chunk once, ranks contiguous.
    let kept: Vec<&str> = e.retrieval.run.queries["q1"]
        .iter()
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(kept, ["c1"]);
    let json = serde_json::to_value(&e.report).unwrap();
    assert_eq!(
        json["cases"][0]["duplicates_removed"],
        serde_json::json!({"count": 9, "ids": ["c1"]})
    );
}

#[test]
fn duplicates_refuse_stops_naming_the_case_and_the_chunk() {
    let (server, cases) = repeated_first();
    let settings = Settings {
        duplicates: DuplicateRule::Refuse,
        ..Settings::default()
    };
    let err = run_exam(&server.url, &Options::default(), &cases, &settings)
        .err()
        .expect("an error");
    let text = err.to_string();
    assert!(matches!(err, RetrieveError::Duplicate { .. }), "{text}");
    assert!(text.starts_with(&server.url), "{text}");
    assert!(
        text.contains("case `q1`: chunk `c1` is returned twice (ranks 1 and 2)"),
        "{text}"
    );
    assert!(text.contains("Several chunks of one document"), "{text}");
}

#[test]
fn a_command_retriever_follows_the_same_duplicate_rule() {
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers.json");
    std::fs::write(&answers, r#"{"q0": ["a", "b", "a", "c", "b"]}"#).unwrap();
    let uri = format!(
        "cmd:{} {}",
        env!("CARGO_BIN_EXE_example-retriever"),
        answers.display()
    );
    let cases = vec![case("c0", "q0", &["a", "c"], None)];
    let e = run_exam(&uri, &Options::default(), &cases, &Settings::default()).unwrap();
    let c = &e.report.cases[0];
    assert_eq!(
        c.expected[1].rank,
        Some(3),
        "c after the removed `a` is rank 3"
    );
    assert_eq!(c.duplicates_removed.as_ref().unwrap().count, 2);
    assert_eq!(c.duplicates_removed.as_ref().unwrap().ids, ["a", "b"]);
}

#[test]
fn a_server_failing_every_case_is_an_error_naming_it_and_the_last_failure() {
    let server = serve(Arc::new(|_: &Seen| Some((500, "index shard down".into()))));
    let options = Options {
        backoff: Duration::from_millis(5),
        ..Options::default()
    };
    let err = run_exam(&server.url, &options, &golden(5), &Settings::default())
        .err()
        .expect("an error, not a verdict");
    let text = err.to_string();
    assert!(
        matches!(
            err,
            RetrieveError::RetrieverFailed {
                failed: 5,
                cases: 5,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.starts_with(&server.url), "{text}");
    assert!(text.contains("failed for every case (5 of 5)"), "{text}");
    assert!(text.contains("records nothing"), "{text}");
    assert!(
        text.contains("Last failure, case `c4`: HTTP 500: index shard down (3 attempts"),
        "{text}"
    );
}

#[test]
fn more_failures_than_the_limit_is_an_error_and_fewer_are_failing_cases() {
    // Cases q0 and q2 fail (two of five).
    let server = serve(Arc::new(|seen: &Seen| {
        if seen.body["query"] == "q0" || seen.body["query"] == "q2" {
            Some((503, "busy".into()))
        } else {
            Some((200, results(&["q1-0", "q3-0", "q4-0"])))
        }
    }));
    let options = Options {
        backoff: Duration::from_millis(5),
        retries: 0,
        ..Options::default()
    };
    let with = |limit: FailureLimit| {
        let settings = Settings {
            max_retriever_failures: limit,
            ..Settings::default()
        };
        run_exam(&server.url, &options, &golden(5), &settings)
    };
    // The default, a quarter of 5 cases, allows one: two is an error.
    let err = with(FailureLimit::default()).err().expect("an error");
    let text = err.to_string();
    assert!(
        text.contains("failed for 2 of 5 cases, more than --max-retriever-failures 25% allows"),
        "{text}"
    );
    assert!(text.contains("case `c2`: HTTP 503: busy"), "{text}");
    // Allowed: the two cases fail as retriever failures, the exam goes on.
    let e = with(FailureLimit::Count(2)).unwrap();
    assert_eq!(e.report.summary.retriever_failures, 2);
    assert_eq!(e.retrieval.failures.len(), 2);
    assert!(with(FailureLimit::Share(0.4)).is_ok());
    assert!(with(FailureLimit::Count(1)).is_err());
}
