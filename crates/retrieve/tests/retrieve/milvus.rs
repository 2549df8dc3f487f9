//! The Milvus retriever against a real Milvus Lite server (the `milvus-lite` package's gRPC
//! server, started by `scripts/engines.sh start milvus`; its URL in VEREDICTO_TEST_MILVUS and
//! the Python that loads collections with its pymilvus in VEREDICTO_TEST_MILVUS_PYTHON
//! (`scripts/engines.sh python milvus`), as `scripts/test.sh` sets them). Each test makes its
//! own collection with a unique name.

#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::worded::examine;
use serde_json::{json, Value};
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::diagnosis::DiagnosisFinding;
use veredicto_core::policy::Policy;
use veredicto_index::*;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options, Request, RetrieveError};

fn milvus() -> String {
    std::env::var("VEREDICTO_TEST_MILVUS").unwrap_or_else(|_| {
        panic!(
            "VEREDICTO_TEST_MILVUS is not set: start the test server with \
             `export VEREDICTO_TEST_MILVUS=$(scripts/engines.sh start milvus)` and \
             `export VEREDICTO_TEST_MILVUS_PYTHON=$(scripts/engines.sh python milvus)` (stop it \
             with `scripts/engines.sh stop milvus`), or run scripts/test.sh"
        )
    })
}

/// A small deterministic generator (SplitMix64), uniform in [-1, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    fn vector(&mut self, dim: usize) -> Vec<f32> {
        (0..dim).map(|_| self.next()).collect()
    }
}

const DIM: usize = 8;

/// The collection: chunk `c000`…, random vectors, `domain` even/odd, labels.
fn chunks(n: usize) -> Vec<(String, Vec<f32>)> {
    let mut rng = Rng(7);
    (0..n)
        .map(|i| (format!("c{i:03}"), rng.vector(DIM)))
        .collect()
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Makes a collection holding `chunks` (metric `metric`, index type `index`, more settings
/// in `extra`) with the loader script and pymilvus; gives its name.
fn make_collection(
    metric: &str,
    index: &str,
    chunks: &[(String, Vec<f32>)],
    extra: Value,
) -> String {
    let name = format!(
        "kb_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let int_ids = extra["pk"] == "int64";
    let rows: Vec<Value> = chunks
        .iter()
        .map(|(id, v)| {
            let i: usize = id[1..].parse().unwrap();
            let domain = if i.is_multiple_of(2) { "even" } else { "odd" };
            let labels: Vec<&str> = if i.is_multiple_of(3) {
                vec!["three", "all"]
            } else {
                vec!["all"]
            };
            let id = if int_ids { json!(i) } else { json!(id) };
            json!({"id": id, "vector": v, "domain": domain, "labels": labels})
        })
        .collect();
    let mut spec = json!({
        "uri": milvus(), "name": name, "dim": DIM, "metric": metric, "index": index, "rows": rows,
    });
    if let Value::Object(extra) = extra {
        spec.as_object_mut().unwrap().extend(extra);
    }
    let python = std::env::var("VEREDICTO_TEST_MILVUS_PYTHON")
        .expect("VEREDICTO_TEST_MILVUS_PYTHON (scripts/engines.sh python milvus)");
    let mut words = python.split_whitespace();
    let loader = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/retrieve/milvus/load.py");
    let mut child = std::process::Command::new(words.next().unwrap())
        .args(words)
        .arg(loader)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(spec.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the loader failed: {out:?}");
    name
}

fn uri(name: &str) -> String {
    format!("milvus+{}/{name}", milvus())
}

fn cases(n: usize, chunks: &[(String, Vec<f32>)]) -> Vec<Case> {
    let mut rng = Rng(99);
    (0..n)
        .map(|i| {
            // Each query lies near one chunk: that chunk is expected.
            let (target, v) = &chunks[(i * 7) % chunks.len()];
            let q: Vec<f32> = v.iter().map(|x| x + 0.1 * rng.next()).collect();
            Case {
                id: format!("q{i:02}"),
                query: format!("query {i}"),
                expected: vec![target.clone()],
                top_k: Some(5),
                domain: None,
                tags: vec![],
                gold: false,
                query_vector: Some(q),
                filters: None,
                grades: Default::default(),
                evidence: Vec::new(),
            }
        })
        .collect()
}

fn exam_with(
    uri: &str,
    cases: &[Case],
    exactness_check: bool,
    options: &Options,
) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, options)?;
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
            depth: 10,
            exactness_check,
            ..Settings::default()
        },
    )
}

fn exam(uri: &str, cases: &[Case], exactness_check: bool) -> Result<Examined, RetrieveError> {
    exam_with(uri, cases, exactness_check, &Options::default())
}

/// veredicto's own index over the same chunks and vectors.
fn own_index(dir: &std::path::Path, chunks: &[(String, Vec<f32>)]) {
    let corpus: Vec<ChunkInput> = chunks
        .iter()
        .map(|(id, _)| ChunkInput::new(id.clone(), format!("text of {id}")))
        .collect();
    let settings = IngestSettings {
        model: ModelFingerprint {
            value: json!({"name": "seeded"}),
            hash: format!("sha256:{}", "ab".repeat(32)),
        },
        dimension: DIM,
        field: EmbeddedField::Representation,
        full_rebuild: false,
    };
    let plan = Plan::new(None, corpus, settings).unwrap();
    let by_id: BTreeMap<&str, &Vec<f32>> = chunks.iter().map(|(id, v)| (id.as_str(), v)).collect();
    let vectors: Vec<Vec<f32>> = plan
        .to_embed()
        .iter()
        .map(|(id, _)| by_id[&id[..]].clone())
        .collect();
    let batch = BatchInfo {
        name: "b1".into(),
        time: "2025-01-01T00:00:00Z".into(),
        corpus_hash: format!("sha256:{}", "cd".repeat(32)),
    };
    plan.apply(&vectors, &batch, dir).unwrap();
}

fn ranks(e: &Examined) -> BTreeMap<String, Vec<String>> {
    e.retrieval
        .run
        .queries
        .iter()
        .map(|(case, list)| (case.clone(), list.iter().map(|h| h.id.clone()).collect()))
        .collect()
}

fn identical_ranks(index: &str) -> (usize, Examined, Examined) {
    let chunks = chunks(400);
    let name = make_collection("COSINE", index, &chunks, json!({}));
    let cases = cases(40, &chunks);
    let served = exam(&uri(&name), &cases, false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    own_index(&dir.path().join("idx"), &chunks);
    let own = exam(
        &format!("index:{}", dir.path().join("idx").display()),
        &cases,
        false,
    )
    .unwrap();
    let (a, b) = (ranks(&served), ranks(&own));
    assert_eq!(a.len(), 40);
    let identical = a
        .iter()
        .filter(|(case, list)| b.get(*case) == Some(list))
        .count();
    (identical, served, own)
}

#[test]
fn milvus_ranks_agree_with_the_own_index_on_the_same_vectors() {
    // FLAT: Milvus' exact index; HNSW: its graph index (faiss in Milvus Lite).
    let (identical, served, own) = identical_ranks("FLAT");
    println!("milvus (FLAT): {identical} of 40 cases with identical top-10 ranks to the own index");
    assert_eq!(identical, 40);
    // Scores are cosine similarities, as the own index's.
    let case = &served.report.cases[0];
    assert!(case.passed, "{case:?}");
    let first_served = served.retrieval.run.queries["q00"][0].score.unwrap();
    let first_own = own.retrieval.run.queries["q00"][0].score.unwrap();
    assert!(
        (first_served - first_own).abs() < 1e-4,
        "{first_served} vs {first_own}"
    );
    assert_eq!(served.report.run.name, served.report.run.name.trim());
    let (identical, _, _) = identical_ranks("HNSW");
    println!("milvus (HNSW): {identical} of 40 cases with identical top-10 ranks to the own index");
    assert!(identical >= 36, "{identical} of 40");
}

#[test]
fn milvus_filters_become_an_expression() {
    let chunks = chunks(60);
    let name = make_collection("COSINE", "AUTOINDEX", &chunks, json!({}));
    let r = open(&uri(&name), &Options::default()).unwrap();
    let search = |filters: Value| {
        r.search(&Request {
            case_id: "q",
            query: "q",
            vector: Some(&chunks[4].1),
            depth: 10,
            expected: &[],
            exact: false,
            filters: filters.as_object(),
        })
    };
    let even = search(json!({"domain": "even"})).unwrap();
    assert_eq!(even.hits.len(), 10);
    assert_eq!(even.hits[0].id, "c004");
    assert!(even
        .hits
        .iter()
        .all(|h| h.id[1..].parse::<usize>().unwrap().is_multiple_of(2)));
    // A label matches an element of the `labels` array; with a domain, both must hold.
    let both = search(json!({"domain": "even", "labels": ["three"]})).unwrap();
    assert!(!both.hits.is_empty());
    assert!(
        both.hits
            .iter()
            .all(|h| h.id[1..].parse::<usize>().unwrap().is_multiple_of(6)),
        "{:?}",
        both.hits
    );
    // A value with quotes stays one string literal: nothing matches it.
    let none = search(json!({"domain": "even\" or domain != \""})).unwrap();
    assert!(none.hits.is_empty(), "{:?}", none.hits);
    let e = search(json!({"valid_at": "2025-01-01"})).err().unwrap();
    assert!(e.to_string().contains("valid_at"), "{e}");
}

#[test]
fn milvus_expected_chunk_missing_from_the_collection_is_named() {
    let chunks = chunks(30);
    let name = make_collection("COSINE", "AUTOINDEX", &chunks, json!({}));
    let mut cases = cases(3, &chunks);
    cases[1].expected = vec!["c999".to_owned()];
    let e = exam(&uri(&name), &cases, false).unwrap();
    let case = &e.report.cases[1];
    assert!(!case.passed);
    assert!(
        matches!(
            &case.diagnosis[0].detail,
            Some(DiagnosisFinding::NotInCollection { collection }) if *collection == format!("collection `{name}`")
        ),
        "{:?}",
        case.diagnosis
    );
    assert!(e.report.cases[0].passed);
}

#[test]
fn milvus_int64_keys_are_ids_as_text() {
    let chunks = chunks(30);
    let name = make_collection("IP", "AUTOINDEX", &chunks, json!({"pk": "int64"}));
    let r = open(&uri(&name), &Options::default()).unwrap();
    let ranking = r
        .search(&Request {
            case_id: "q",
            query: "q",
            vector: Some(&chunks[7].1),
            depth: 3,
            expected: &[],
            exact: false,
            filters: None,
        })
        .unwrap();
    assert_eq!(ranking.hits.len(), 3);
    assert!(ranking.hits.iter().all(|h| h.id.parse::<i64>().is_ok()));
    let held = r.holds(&["7", "999", "c7"]).unwrap().unwrap();
    assert_eq!(held.present.into_iter().collect::<Vec<_>>(), ["7"]);
}

#[test]
fn milvus_has_no_exact_mode_and_refuses_the_exactness_check() {
    let chunks = chunks(30);
    let name = make_collection("L2", "AUTOINDEX", &chunks, json!({}));
    let cases = cases(2, &chunks);
    let e = exam(&uri(&name), &cases, true).err().unwrap();
    assert!(e.to_string().contains("--exactness-check"), "{e}");
    // L2 collections: the score is minus the distance, best first.
    let served = exam(&uri(&name), &cases, false).unwrap();
    let list = &served.retrieval.run.queries["q00"];
    assert!(list[0].score.unwrap() <= 0.0);
    assert!(list[0].score >= list[1].score);
}

#[test]
fn milvus_missing_collection_wrong_dimension_and_vector_field_stop_before_any_case() {
    let e = exam(&uri("no_such_collection"), &cases(1, &chunks(5)), false)
        .err()
        .unwrap();
    let text = e.to_string();
    assert!(
        text.contains("milvus collection `no_such_collection`: describing it: Milvus error"),
        "{text}"
    );
    let chunks = chunks(10);
    let name = make_collection("COSINE", "AUTOINDEX", &chunks, json!({}));
    let r = open(&uri(&name), &Options::default()).unwrap();
    let e = r.prepare(Some(DIM + 1)).err().unwrap();
    assert!(
        e.to_string().contains(&format!(
            "its vectors have dimension {DIM}, the embedder's have {}",
            DIM + 1
        )),
        "{e}"
    );
    r.prepare(Some(DIM)).unwrap();
    // Two vector fields: one must be named.
    let two = make_collection(
        "COSINE",
        "AUTOINDEX",
        &chunks,
        json!({"extra_vector": true}),
    );
    let e = open(&uri(&two), &Options::default())
        .unwrap()
        .prepare(Some(DIM))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("several float-vector fields (`vector`, `other`)"),
        "{e}"
    );
    open(&format!("{}?vector=other", uri(&two)), &Options::default())
        .unwrap()
        .prepare(Some(DIM))
        .unwrap();
    let e = open(&format!("{}?vector=nope", uri(&two)), &Options::default())
        .unwrap()
        .prepare(Some(DIM))
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("no float-vector field `nope`"),
        "{e}"
    );
}

#[test]
fn milvus_returns_stored_vectors_for_the_model_check() {
    let chunks = chunks(20);
    let name = make_collection("COSINE", "AUTOINDEX", &chunks, json!({}));
    let r = open(&uri(&name), &Options::default()).unwrap();
    let got = r
        .stored_vectors(&["c003", "c999", "c001"])
        .unwrap()
        .unwrap();
    let ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c003", "c001"]);
    let (a, b) = (&got[0].1, &chunks[3].1);
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!(dot / (n(a) * n(b)) > 0.9999, "{a:?} vs {b:?}");
}

#[test]
fn milvus_unreachable_and_silent_servers_fail_as_every_retriever_does() {
    // Nothing listens: refused at once, not retried.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = exam(
        &format!("milvus+http://127.0.0.1:{port}/kb"),
        &cases(1, &chunks(3)),
        false,
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("cannot reach the server"), "{e}");
    // A server that accepts and never answers: three attempts of the timeout, then the exam
    // stops (it never answered).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let held = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for s in silent.incoming().take(3) {
            kept.push(s);
        }
        std::thread::sleep(Duration::from_secs(2));
    });
    let options = Options {
        timeout: Duration::from_millis(200),
        ..Options::default()
    };
    let started = std::time::Instant::now();
    let e = exam_with(
        &format!("milvus+http://{addr}/kb"),
        &cases(1, &chunks(3)),
        false,
        &options,
    )
    .err()
    .unwrap();
    let text = e.to_string();
    assert!(
        text.contains("the server never answered: no answer within 0.2 s (3 attempts over"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    drop(held);
}

/// A certificate authority, the server's certificate for `localhost` signed by it, and an
/// unrelated authority, made with openssl in `dir`.
fn make_certs(dir: &std::path::Path) {
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl (the TLS test makes its certificates with it)");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    for ca in ["ca", "other-ca"] {
        let subject = format!("/CN=veredicto test {ca}");
        let (key, crt) = (format!("{ca}.key"), format!("{ca}.crt"));
        let mut args = vec!["req", "-x509"];
        args.extend(ec);
        args.extend([
            "-days",
            "2",
            "-subj",
            &subject,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            &key,
            "-out",
            &crt,
        ]);
        openssl(&args);
    }
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend([
        "-subj",
        "/CN=localhost",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
    ]);
    openssl(&args);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
}

/// A TLS-terminating proxy on 127.0.0.1 (certificate `server.crt` of `dir`, ALPN `h2`)
/// forwarding each connection to `upstream` (`HOST:PORT`, plain gRPC); gives its port. It
/// serves until the test binary ends.
fn tls_proxy(dir: &std::path::Path, upstream: String) -> u16 {
    use std::sync::Arc;
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(dir.join("server.crt"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake here.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
    });
    port
}

#[test]
fn milvus_over_tls_trusts_the_ca_file_and_refuses_another_authority() {
    let dir = tempfile::tempdir().unwrap();
    make_certs(dir.path());
    let upstream = milvus()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let port = tls_proxy(dir.path(), upstream);
    let chunks = chunks(40);
    let name = make_collection("COSINE", "FLAT", &chunks, json!({}));
    let cases = cases(6, &chunks);
    let with_ca = |file: &str| Options {
        ca_file: Some(dir.path().join(file)),
        ..Options::default()
    };
    let tls_uri = format!("milvus+https://localhost:{port}/{name}");
    // The authority that signed the server's certificate: the same ranks as plain gRPC.
    let over_tls = exam_with(&tls_uri, &cases, false, &with_ca("ca.crt")).unwrap();
    let plain = exam(&uri(&name), &cases, false).unwrap();
    assert_eq!(ranks(&over_tls), ranks(&plain));
    assert_eq!(ranks(&over_tls).len(), 6);
    println!(
        "milvus over TLS: {} of 6 cases with the ranks of plain gRPC",
        ranks(&over_tls)
            .iter()
            .filter(|(c, l)| ranks(&plain).get(*c) == Some(l))
            .count()
    );
    // Another authority (or none: the system's roots): refused at once, on one line.
    for options in [with_ca("other-ca.crt"), Options::default()] {
        let started = std::time::Instant::now();
        let e = exam_with(&tls_uri, &cases, false, &options).err().unwrap();
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "cannot reach the server: TLS with localhost:{port}: the server's certificate is not signed by a trusted root certificate (trust its certificate authority with --ca-file)"
            )),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "retried: {text}"
        );
    }
    // The host name is checked too: the certificate names `localhost`, not 127.0.0.1.
    let e = exam_with(
        &format!("milvus+https://127.0.0.1:{port}/{name}"),
        &cases,
        false,
        &with_ca("ca.crt"),
    )
    .err()
    .unwrap();
    assert!(
        e.to_string()
            .contains("the server's certificate is not valid for the host name connected to"),
        "{e}"
    );
    // A CA file that is not one: named before anything is connected.
    std::fs::write(dir.path().join("empty.pem"), "").unwrap();
    let e = exam_with(&tls_uri, &cases, false, &with_ca("empty.pem"))
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("--ca-file: ") && e.to_string().contains("empty.pem"),
        "{e}"
    );
}
