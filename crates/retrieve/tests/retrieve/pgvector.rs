//! pgvector against a real PostgreSQL 16 with pgvector 0.6.2, started by
//! `scripts/postgres.sh start` (its URL in VEREDICTO_TEST_POSTGRES).
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stdout)]
#![allow(clippy::result_large_err)]

use crate::worded::examine;
use std::collections::BTreeMap;
use std::path::Path;
use veredicto_app::exam::{Examined, Inputs};
use veredicto_core::case::Case;
use veredicto_core::policy::Policy;
use veredicto_index::*;
use veredicto_retrieve::pass::Settings;
use veredicto_retrieve::{open, Options, RetrieveError};

const DIM: usize = 24;

fn pg_url() -> String {
    std::env::var("VEREDICTO_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "VEREDICTO_TEST_POSTGRES is not set: start the test server with \
             `export VEREDICTO_TEST_POSTGRES=$(scripts/postgres.sh start)` (stop it with \
             `scripts/postgres.sh stop`)"
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
        ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vector(&mut self) -> Vec<f32> {
        (0..DIM).map(|_| self.next()).collect()
    }
}

fn items(n: usize, seed: u64) -> Vec<(String, Vec<f32>)> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| (format!("chunk-{i:05}"), rng.vector()))
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// Cases with precomputed query vectors; each expects the exact neighbours at ranks
/// `picks` (1-based) by brute force.
fn cases(items: &[(String, Vec<f32>)], n: usize, seed: u64, picks: &[usize]) -> Vec<Case> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let q = rng.vector();
            let mut order: Vec<(f64, &str)> = items
                .iter()
                .map(|(id, v)| (cosine(&q, v), id.as_str()))
                .collect();
            order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            Case {
                id: format!("case-{i:03}"),
                query: format!("query {i}"),
                expected: picks.iter().map(|&r| order[r - 1].1.to_owned()).collect(),
                grades: Default::default(),
                evidence: Vec::new(),
                top_k: Some(3),
                domain: None,
                tags: vec![],
                gold: false,
                query_vector: Some(q),
                filters: None,
            }
        })
        .collect()
}

fn load_table(table: &str, items: &[(String, Vec<f32>)]) -> postgres::Client {
    let mut client = postgres::Client::connect(&pg_url(), postgres::NoTls).expect("connect");
    client
        .batch_execute(&format!(
            "CREATE EXTENSION IF NOT EXISTS vector; DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (chunk_id text PRIMARY KEY, embedding vector({DIM}), domain text)"
        ))
        .unwrap();
    let mut tx = client.transaction().unwrap();
    let stmt = tx
        .prepare(&format!(
            "INSERT INTO {table} VALUES ($1, $2::text::vector, 'd')"
        ))
        .unwrap();
    for (id, v) in items {
        let text = format!(
            "[{}]",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        tx.execute(&stmt, &[id, &text]).unwrap();
    }
    tx.commit().unwrap();
    client
}

fn build_index(dir: &Path, items: &[(String, Vec<f32>)]) {
    let corpus: Vec<ChunkInput> = items
        .iter()
        .map(|(id, _)| ChunkInput::new(id.clone(), format!("text of {id}")))
        .collect();
    let settings = IngestSettings {
        model: ModelFingerprint {
            value: serde_json::json!({"name": "seeded-random"}),
            hash: format!("sha256:{}", "ab".repeat(32)),
        },
        dimension: DIM,
        field: EmbeddedField::Representation,
        full_rebuild: false,
    };
    let plan = Plan::new(None, corpus, settings).unwrap();
    let by_id: BTreeMap<&str, &Vec<f32>> = items.iter().map(|(i, v)| (i.as_str(), v)).collect();
    let vectors: Vec<Vec<f32>> = plan
        .to_embed()
        .iter()
        .map(|(id, _)| by_id[id].clone())
        .collect();
    let batch = BatchInfo {
        name: "b1".into(),
        time: "2025-01-01T00:00:00Z".into(),
        corpus_hash: format!("sha256:{}", "cd".repeat(32)),
    };
    plan.apply(&vectors, &batch, dir).unwrap();
}

fn exam(uri: &str, cases: &[Case], settings: &Settings<'_>) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, &Options::default())?;
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

fn table_uri(table: &str, extra: &str) -> String {
    format!(
        "{}?table={table}&id=chunk_id&vector=embedding&metric=cosine{extra}",
        pg_url()
    )
}

#[test]
fn pgvector_gives_the_same_per_case_ranks_as_the_own_index() {
    let data = items(3000, 7);
    load_table("agree_t", &data);
    let dir = tempfile::tempdir().unwrap();
    build_index(&dir.path().join("idx"), &data);
    let cases = cases(&data, 60, 99, &[1, 4, 40, 250]);
    let settings = Settings {
        depth: 100,
        ..Settings::default()
    };
    let pg = exam(&table_uri("agree_t", ""), &cases, &settings).unwrap();
    let own = exam(
        &format!("index:{}", dir.path().join("idx").display()),
        &cases,
        &settings,
    )
    .unwrap();
    let (mut compared, mut same) = (0, 0);
    for (a, b) in pg.report.cases.iter().zip(&own.report.cases) {
        for (x, y) in a.expected.iter().zip(&b.expected) {
            compared += 1;
            // Within depth both know the rank; beyond it pgvector says "not within depth".
            let own_rank = y.rank.filter(|&r| r <= 100);
            if x.rank == own_rank {
                same += 1;
            }
        }
        assert_eq!(
            pg.retrieval.run.queries[&a.id]
                .iter()
                .map(|r| &r.id)
                .collect::<Vec<_>>(),
            own.retrieval.run.queries[&b.id]
                .iter()
                .map(|r| &r.id)
                .collect::<Vec<_>>(),
            "case {}",
            a.id
        );
    }
    println!(
        "pgvector vs own index: {same} of {compared} expected-chunk ranks identical over {} cases",
        cases.len()
    );
    assert_eq!(same, compared);
    // Rank 250 is beyond depth 100: "not within depth", never rank 0.
    let c = &pg.report.cases[0];
    assert_eq!(c.expected[3].rank, None);
    assert!(
        c.diagnosis
            .iter()
            .any(|f| f.finding.starts_with("not within depth 100")),
        "{:?}",
        c.diagnosis
    );
    // The retriever is recorded without credentials and with its kind.
    let r = open(&table_uri("agree_t", ""), &Options::default()).unwrap();
    assert_eq!(r.kind(), "pgvector");
}

#[test]
fn an_hnsw_index_with_low_ef_search_is_blamed_by_the_exactness_check() {
    let data = items(4000, 11);
    let mut client = load_table("ann_t", &data);
    client
        .batch_execute(
            "CREATE INDEX ann_t_hnsw ON ann_t USING hnsw (embedding vector_cosine_ops) \
             WITH (m = 4, ef_construction = 8); ANALYZE ann_t",
        )
        .unwrap();
    let cases = cases(&data, 40, 5, &[1, 2, 3]);
    let settings = Settings {
        depth: 10,
        exactness_check: true,
        ..Settings::default()
    };
    let e = exam(&table_uri("ann_t", "&ef_search=10"), &cases, &settings).unwrap();
    let x = e.report.exactness.as_ref().expect("exactness");
    println!(
        "HNSW m=4 ef_construction=8 ef_search=10: ANN recall@3 vs exact {:.3}; {} failing cases lost chunks to the ANN index, {} fail under exact search too",
        x.ann_recall_at_k, x.failing_lost_by_ann, x.failing_under_exact_too
    );
    assert_eq!(x.cases, 40);
    assert!(x.ann_recall_at_k < 1.0, "{x:?}");
    assert!(x.failing_lost_by_ann > 0, "{x:?}");
    // Every expected chunk is in the exact top 3: nothing fails under exact search.
    assert_eq!(x.failing_under_exact_too, 0);
    let loss = &x.lost[0];
    let case = e.report.cases.iter().find(|c| c.id == loss.case).unwrap();
    let want = format!(
        "lost by the ANN index: exact rank {}, served rank {}",
        loss.exact_rank,
        loss.served_rank.map_or("—".to_owned(), |r| r.to_string())
    );
    assert!(
        case.diagnosis.iter().any(|f| f.finding == want),
        "{:?}",
        case.diagnosis
    );
    // Without the index the same exam has nothing to blame on it.
    client.batch_execute("DROP INDEX ann_t_hnsw").unwrap();
    let e = exam(&table_uri("ann_t", ""), &cases, &settings).unwrap();
    let x = e.report.exactness.unwrap();
    assert_eq!((x.ann_recall_at_k, x.failing_lost_by_ann), (1.0, 0));
    assert!(e.report.cases.iter().all(|c| c.passed));
}

#[test]
fn a_missing_table_column_or_dimension_is_named() {
    let data = items(20, 3);
    load_table("shape_t", &data);
    let cases = cases(&data, 2, 1, &[1]);
    let s = Settings::default();
    let err = |uri: String, cases: &[Case]| exam(&uri, cases, &s).err().expect("error").to_string();
    let e = err(
        format!("{}?table=nope_t&id=chunk_id&vector=embedding", pg_url()),
        &cases,
    );
    assert!(e.contains("table `nope_t` does not exist"), "{e}");
    let e = err(
        format!("{}?table=shape_t&id=nope&vector=embedding", pg_url()),
        &cases,
    );
    assert!(
        e.contains("column `nope` (id=) does not exist in table `shape_t`"),
        "{e}"
    );
    let e = err(
        format!("{}?table=shape_t&id=chunk_id&vector=domain", pg_url()),
        &cases,
    );
    assert!(e.contains("not a pgvector `vector`"), "{e}");
    let mut short = cases.clone();
    short[0].query_vector = Some(vec![0.5; 3]);
    let e = err(table_uri("shape_t", ""), &short);
    assert!(
        e.contains(&format!("dimension 3, the retriever has {DIM}")),
        "{e}"
    );
    let e = err(
        format!(
            "{}?table=shape_t;drop&id=chunk_id&vector=embedding",
            pg_url()
        ),
        &cases,
    );
    assert!(e.contains("not a plain identifier"), "{e}");
}

#[test]
fn where_filters_and_credentials_never_show() {
    let data = items(50, 4);
    load_table("where_t", &data);
    let cases = cases(&data, 3, 2, &[1]);
    let uri = table_uri("where_t", "&where=domain%20%3D%20%27other%27");
    let e = exam(&uri, &cases, &Settings::default()).unwrap();
    // Nothing matches the filter: every case fails with no results.
    assert!(e.report.cases.iter().all(|c| c.retrieved == 0));
    let with_password = pg_url().replacen("://veredicto@", "://veredicto:hunter2@", 1);
    let r = open(
        &format!("{with_password}?table=where_t&id=chunk_id&vector=embedding"),
        &Options::default(),
    )
    .unwrap();
    assert!(!r.describe().contains("hunter2"), "{}", r.describe());
}

#[test]
fn a_statement_timeout_is_retried_with_backoff_then_fails_the_case() {
    let data = items(20, 6);
    load_table("slow_t", &data);
    let cases = cases(&data, 2, 3, &[1]);
    // The user's own `where` makes every statement outlast the 150 ms timeout.
    let uri = table_uri("slow_t", "&where=pg_sleep(0.4)%20IS%20NOT%20NULL");
    let options = Options {
        timeout: std::time::Duration::from_millis(150),
        retries: 2,
        backoff: std::time::Duration::from_millis(20),
        ..Options::default()
    };
    let retriever = open(&uri, &options).unwrap();
    retriever.prepare(Some(data[0].1.len())).unwrap();
    let started = std::time::Instant::now();
    let err = retriever
        .search(&veredicto_retrieve::Request {
            case_id: &cases[0].id,
            query: &cases[0].query,
            vector: cases[0].query_vector.as_deref(),
            depth: 5,
            expected: &[],
            exact: false,
            filters: None,
        })
        .unwrap_err()
        .to_string();
    assert!(err.contains("3 attempts"), "{err}");
    assert!(err.contains("statement timeout"), "{err}");
    // Three attempts of ~150 ms and two short waits, not three full sleeps of 400 ms.
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn case_filters_are_bound_equalities_on_mapped_columns() {
    let data = items(60, 11);
    let mut client = load_table("filt_t", &data);
    client
        .batch_execute(
            "ALTER TABLE filt_t ADD COLUMN tags text[]; \
             UPDATE filt_t SET domain = 'other', tags = ARRAY['A','B'] WHERE chunk_id < 'chunk-00020'",
        )
        .unwrap();
    let other: Vec<String> = (0..20).map(|i| format!("chunk-{i:05}")).collect();
    let filtered = |json: serde_json::Value| -> Vec<Case> {
        cases(&data, 4, 3, &[1])
            .into_iter()
            .map(|c| Case {
                filters: json.as_object().cloned(),
                ..c
            })
            .collect()
    };
    let mapped = table_uri("filt_t", "&filter.domain=domain&filter.labels=tags");
    for filters in [
        serde_json::json!({"domain": "other"}),
        serde_json::json!({"labels": ["A", "B"]}),
        serde_json::json!({"label": "A", "domain": "other"}),
    ] {
        for exact in [false, true] {
            let e = exam(
                &mapped,
                &filtered(filters.clone()),
                &Settings {
                    exactness_check: exact,
                    ..Settings::default()
                },
            )
            .unwrap();
            for (case, list) in &e.retrieval.run.queries {
                assert_eq!(list.len(), 20, "{case} {filters}");
                assert!(list.iter().all(|r| other.contains(&r.id)), "{filters}");
            }
        }
    }
    // The value is a parameter: quotes in it are data, not SQL.
    let e = exam(
        &mapped,
        &filtered(serde_json::json!({"domain": "x' OR '1'='1"})),
        &Settings::default(),
    )
    .unwrap();
    assert!(e.report.cases.iter().all(|c| c.retrieved == 0));
    // A key without a column, and a validity window, are refused with the case.
    let e = exam(
        &table_uri("filt_t", ""),
        &filtered(serde_json::json!({"domain": "other"})),
        &Settings::default(),
    )
    .err()
    .unwrap();
    assert!(
        e.to_string()
            .contains("filter `domain` has no column here: add `&filter.domain=COLUMN`"),
        "{e}"
    );
    let e = exam(
        &mapped,
        &filtered(serde_json::json!({"valid_at": "2025-01-01"})),
        &Settings::default(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("valid_at"), "{e}");
    // A column mapping must be a plain identifier.
    let e = open(
        &table_uri("filt_t", "&filter.domain=a;b"),
        &Options::default(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("not a plain identifier"), "{e}");
}

#[test]
fn a_table_with_repeated_ids_counts_each_chunk_once() {
    // Three chunks of one document stored under the document's ID: the table repeats it.
    let data = items(20, 8);
    let mut client = load_table("dup_t", &data);
    client
        .batch_execute(
            "ALTER TABLE dup_t DROP CONSTRAINT dup_t_pkey; \
             INSERT INTO dup_t SELECT chunk_id, embedding, domain FROM dup_t; \
             INSERT INTO dup_t SELECT chunk_id, embedding, domain FROM dup_t LIMIT 5",
        )
        .unwrap();
    let cases = cases(&data, 4, 12, &[1, 2, 3]);
    let e = exam(&table_uri("dup_t", ""), &cases, &Settings::default()).unwrap();
    for c in &e.report.cases {
        // Before: each copy counted as a hit (recall 1 with only the first expected chunk's copies).
        let ranks: Vec<Option<usize>> = c.expected.iter().map(|x| x.rank).collect();
        assert_eq!(ranks, [Some(1), Some(2), Some(3)], "{}", c.id);
        let ids = &e.retrieval.run.queries[&c.id];
        let distinct: std::collections::BTreeSet<&str> =
            ids.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(distinct.len(), ids.len(), "each chunk once");
        assert!(c.duplicates_removed.as_ref().unwrap().count >= 3, "{c:?}");
    }
    assert!(e.report.summary.duplicates_removed >= 12);
}

#[test]
fn every_statement_cancelled_is_an_error_not_a_verdict() {
    let data = items(20, 6);
    load_table("cancel_t", &data);
    let cases = cases(&data, 3, 3, &[1]);
    // Every statement outlasts the 150 ms statement_timeout.
    let uri = table_uri("cancel_t", "&where=pg_sleep(0.4)%20IS%20NOT%20NULL");
    let retriever = open(
        &uri,
        &Options {
            timeout: std::time::Duration::from_millis(150),
            retries: 0,
            ..Options::default()
        },
    )
    .unwrap();
    let policy = Policy::default();
    let notes = BTreeMap::new();
    let err = examine(
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
    .err()
    .expect("an error, not a STOP");
    let text = err.to_string();
    assert!(
        matches!(
            err,
            RetrieveError::RetrieverFailed {
                failed: 3,
                cases: 3,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("table=cancel_t"), "{text}");
    assert!(text.contains("failed for every case (3 of 3)"), "{text}");
    assert!(
        text.contains(
            "Last failure, case `case-002`: canceling statement due to statement timeout"
        ),
        "{text}"
    );
}

fn exam_with_corpus(
    uri: &str,
    cases: &[Case],
    corpus: Option<&veredicto_core::case::Corpus>,
    settings: &Settings<'_>,
) -> Result<Examined, RetrieveError> {
    let retriever = open(uri, &Options::default())?;
    let policy = Policy::default();
    let notes = BTreeMap::new();
    examine(
        retriever.as_ref(),
        None,
        &Inputs {
            cases,
            corpus,
            policy: &policy,
            notes: &notes,
            as_of: None,
        },
        settings,
    )
}

/// The findings of `case` about `chunk`, as (check, sentence).
fn findings_about(e: &Examined, case: &str, chunk: &str) -> Vec<(String, String)> {
    let c = e.report.cases.iter().find(|c| c.id == case).unwrap();
    c.diagnosis
        .iter()
        .filter(|f| f.chunk.as_deref() == Some(chunk))
        .map(|f| {
            (
                serde_json::to_value(f.check)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
                f.finding.clone(),
            )
        })
        .collect()
}

#[test]
fn deleted_rows_are_named_missing_from_the_table_not_blamed_on_the_embedding() {
    let data = items(400, 21);
    let mut client = load_table("del_t", &data);
    client
        .batch_execute(
            "CREATE INDEX del_t_hnsw ON del_t USING hnsw (embedding vector_cosine_ops); ANALYZE del_t",
        )
        .unwrap();
    let cases = cases(&data, 12, 8, &[1, 2]);
    // The first chunk expected by the first six cases is deleted.
    let deleted: Vec<String> = cases[..6].iter().map(|c| c.expected[0].clone()).collect();
    client
        .execute("DELETE FROM del_t WHERE chunk_id = ANY($1)", &[&deleted])
        .unwrap();
    // A corpus file as the team keeps it: every chunk, text only, no representation.
    let corpus = veredicto_core::case::Corpus::new(
        data.iter()
            .map(|(id, _)| veredicto_core::case::Chunk {
                text: Some(format!(
                    "The policy text of {id}, complete and well formed."
                )),
                id: id.clone(),
                ..Default::default()
            })
            .collect::<Vec<_>>(),
    );
    let settings = Settings {
        depth: 100,
        exactness_check: true,
        ..Settings::default()
    };
    for corpus in [None, Some(&corpus)] {
        let e = exam_with_corpus(&table_uri("del_t", ""), &cases, corpus, &settings).unwrap();
        for (case, chunk) in cases[..6].iter().zip(&deleted) {
            let c = e.report.cases.iter().find(|c| c.id == case.id).unwrap();
            assert!(!c.passed);
            // First, and the only finding about that chunk: not in the table.
            assert_eq!(c.diagnosis[0].chunk.as_deref(), Some(chunk.as_str()));
            assert_eq!(
                findings_about(&e, &case.id, chunk),
                vec![(
                    "corpus".to_owned(),
                    "expected chunk not in the table `del_t`: asked by ID, the retriever does not hold it (deleted, never loaded, or stored under another ID), so nothing else can be blamed".to_owned()
                )],
                "corpus given: {}",
                corpus.is_some()
            );
            let v = serde_json::to_value(&c.diagnosis[0]).unwrap();
            assert_eq!(v["kind"], "not_in_collection");
            assert_eq!(v["collection"], "table `del_t`");
            // The exactness check does not blame embedding, chunking or labels either.
            let texts: Vec<&str> = c.diagnosis.iter().map(|f| f.finding.as_str()).collect();
            assert!(
                texts.contains(&"misses expected chunks under exact search too because 1 of them is not in the table `del_t`: neither the ANN index nor the embedding"),
                "{texts:?}"
            );
            assert!(
                !texts
                    .iter()
                    .any(|t| t.contains("embedding, chunking or labels")
                        || t.contains("no representation")
                        || t.starts_with("not within depth")),
                "{texts:?}"
            );
        }
        let x = e.report.exactness.as_ref().unwrap();
        assert_eq!(
            (x.failing_missing_chunks, x.failing_under_exact_too),
            (6, 0),
            "{x:?}"
        );
        // The cases whose rows are all there have nothing about a missing chunk.
        for c in &e.report.cases[6..] {
            assert!(
                !c.diagnosis
                    .iter()
                    .any(|f| f.finding.starts_with("expected chunk not in the table")),
                "{:?}",
                c.diagnosis
            );
        }
    }
    // The retriever asked once for every unretrieved expected chunk: deleted or beyond the
    // depth. A row beyond the depth is held, so it keeps its "not within depth".
    let r = open(&table_uri("del_t", ""), &Options::default()).unwrap();
    let asked: Vec<&str> = vec![deleted[0].as_str(), cases[7].expected[0].as_str(), "nope"];
    let h = r.holds(&asked).unwrap().unwrap();
    assert_eq!(h.collection, "table `del_t`");
    assert_eq!(
        h.present.into_iter().collect::<Vec<_>>(),
        vec![cases[7].expected[0].clone()]
    );
}

#[test]
fn fewer_results_than_asked_are_a_warning_with_the_cause() {
    let data = items(3000, 31);
    let mut client = load_table("short_t", &data);
    client
        .batch_execute(
            "CREATE INDEX short_t_hnsw ON short_t USING hnsw (embedding vector_cosine_ops); ANALYZE short_t",
        )
        .unwrap();
    let cases = cases(&data, 8, 4, &[1]);
    let settings = Settings {
        depth: 100,
        ..Settings::default()
    };
    let short = |e: &Examined| {
        e.report.warnings.iter().find_map(|w| match w {
            veredicto_core::exam::ExamWarning::ShortResults { cases, cause } => {
                Some((cases.clone(), cause.clone()))
            }
            _ => None,
        })
    };
    // ef_search 10: at most 10 results for a depth of 100.
    let e = exam(&table_uri("short_t", "&ef_search=10"), &cases, &settings).unwrap();
    let (list, cause) = short(&e).expect("a short-results warning");
    assert_eq!(list.len(), 8);
    assert!(
        list.iter().all(|c| c.asked == 100 && c.returned <= 10),
        "{list:?}"
    );
    assert_eq!(
        cause,
        Some(veredicto_core::exam::ShortCause::HnswEfSearch {
            index: "short_t_hnsw".into(),
            ef_search: 10,
            asked: 100,
            version: "0.6.2".into(),
            iterative_scan: false,
        })
    );
    let json = serde_json::to_value(&e.report).unwrap();
    let w = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "short_results")
        .unwrap();
    assert_eq!(w["cause"]["kind"], "hnsw_ef_search");
    assert_eq!(w["cases"][0]["asked"], 100);
    assert_eq!(w["cases"][0]["case"], "case-000");
    let text = veredicto_report::render(&e.report, veredicto_report::Format::Human, false);
    assert!(
        text.contains("warning: the retriever returned fewer results than asked in 8 of 8 cases: case-000 (")
            && text.contains("hnsw.ef_search = 10 candidates, fewer than the 100 asked: add `&ef_search=100` (or more) to the retriever URI; pgvector 0.6.2 has no iterative index scans"),
        "{text}"
    );
    // The default ef_search (40) caps it too; 100 answers in full.
    let e = exam(&table_uri("short_t", ""), &cases, &settings).unwrap();
    let (list, cause) = short(&e).expect("a short-results warning");
    assert!(list.iter().all(|c| c.returned <= 40), "{list:?}");
    assert!(matches!(
        cause,
        Some(veredicto_core::exam::ShortCause::HnswEfSearch { ef_search: 40, .. })
    ));
    let e = exam(&table_uri("short_t", "&ef_search=200"), &cases, &settings).unwrap();
    assert_eq!(short(&e), None, "{:?}", e.report.warnings);
    // A table smaller than the depth: short answers are all there is, and it says so.
    load_table("tiny_t", &data[..30]);
    let e = exam(&table_uri("tiny_t", ""), &cases, &settings).unwrap();
    let (list, cause) = short(&e).expect("a short-results warning");
    assert!(list.iter().all(|c| c.returned == 30));
    assert_eq!(
        cause,
        Some(veredicto_core::exam::ShortCause::FewerRows {
            rows: 30,
            asked: 100
        })
    );
}

#[test]
fn the_served_query_of_a_small_table_is_already_exact() {
    let data = items(60, 41);
    let mut client = load_table("plan_t", &data);
    client
        .batch_execute(
            "CREATE INDEX plan_t_hnsw ON plan_t USING hnsw (embedding vector_cosine_ops); ANALYZE plan_t",
        )
        .unwrap();
    let cases = cases(&data, 5, 6, &[1]);
    let settings = Settings {
        depth: 10,
        exactness_check: true,
        ..Settings::default()
    };
    let e = exam(&table_uri("plan_t", ""), &cases, &settings).unwrap();
    let x = e.report.exactness.as_ref().unwrap();
    // 60 rows: the planner prefers a sequential scan and a sort to the HNSW index.
    assert_eq!(
        x.served_plan,
        Some(veredicto_core::exam::ServedPlan {
            ann_index: None,
            method: None
        })
    );
    let text = veredicto_report::render(&e.report, veredicto_report::Format::Human, false);
    assert!(
        text.contains("exactness check: the served query is already exact (its plan scans no ANN index: a sequential scan and a sort)"),
        "{text}"
    );
    assert!(
        !text.contains("ANN recall@K against exact search 1.000"),
        "{text}"
    );
    // A larger table: the plan scans the HNSW index, and the line names it.
    let big = items(4000, 42);
    let mut client = load_table("plan_big_t", &big);
    client
        .batch_execute(
            "CREATE INDEX plan_big_t_hnsw ON plan_big_t USING hnsw (embedding vector_cosine_ops) WITH (m = 4, ef_construction = 8); ANALYZE plan_big_t",
        )
        .unwrap();
    let cases = self::cases(&big, 5, 6, &[1]);
    let e = exam(&table_uri("plan_big_t", ""), &cases, &settings).unwrap();
    let x = e.report.exactness.as_ref().unwrap();
    assert_eq!(
        x.served_plan.as_ref().unwrap().ann_index.as_deref(),
        Some("plan_big_t_hnsw")
    );
    assert_eq!(
        x.served_plan.as_ref().unwrap().method.as_deref(),
        Some("hnsw")
    );
    let text = veredicto_report::render(&e.report, veredicto_report::Format::Human, false);
    assert!(
        text.contains("(the served query scans the hnsw index `plan_big_t_hnsw`)"),
        "{text}"
    );
}

#[test]
fn the_exact_query_stays_exact_when_the_database_turns_sequential_scans_off() {
    let data = items(2000, 51);
    // A database whose DBA turned sequential scans off (the HNSW index would serve the
    // exact query then, and the exactness check would compare the index with itself).
    let mut admin = postgres::Client::connect(&pg_url(), postgres::NoTls).unwrap();
    admin
        .batch_execute("DROP DATABASE IF EXISTS noseq_db")
        .unwrap();
    admin.batch_execute("CREATE DATABASE noseq_db").unwrap();
    admin
        .batch_execute("ALTER DATABASE noseq_db SET enable_seqscan = off")
        .unwrap();
    let (base, _) = pg_url()
        .rsplit_once('/')
        .map(|(b, d)| (b.to_owned(), d.to_owned()))
        .unwrap();
    let url = format!("{base}/noseq_db");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!(
            "CREATE EXTENSION IF NOT EXISTS vector; \
             CREATE TABLE noseq_t (chunk_id text PRIMARY KEY, embedding vector({DIM})); \
             CREATE INDEX noseq_t_hnsw ON noseq_t USING hnsw (embedding vector_cosine_ops) WITH (m = 4, ef_construction = 8)"
        ))
        .unwrap();
    for (id, v) in &data {
        let text = format!(
            "[{}]",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        client
            .execute(
                "INSERT INTO noseq_t VALUES ($1, $2::text::vector)",
                &[id, &text],
            )
            .unwrap();
    }
    client.batch_execute("ANALYZE noseq_t").unwrap();
    let uri = format!("{url}?table=noseq_t&id=chunk_id&vector=embedding&metric=cosine");
    let pg = veredicto_retrieve::pgvector::PgVector::new(&uri, &Options::default()).unwrap();
    let cases = cases(&data, 10, 9, &[1, 2, 3]);
    let request = |exact: bool| veredicto_retrieve::Request {
        case_id: &cases[0].id,
        query: &cases[0].query,
        vector: cases[0].query_vector.as_deref(),
        depth: 10,
        expected: &[],
        exact,
        filters: None,
    };
    let served = pg.explain(&request(false), false).unwrap().unwrap();
    let exact = pg.explain(&request(true), true).unwrap().unwrap();
    assert_eq!(
        veredicto_retrieve::pgvector::ann_index_of_plan(&served).as_deref(),
        Some("noseq_t_hnsw"),
        "{served}"
    );
    assert_eq!(
        veredicto_retrieve::pgvector::ann_index_of_plan(&exact),
        None,
        "{exact}"
    );
    assert!(exact.to_string().contains("Seq Scan"), "{exact}");
    // And the exact answers are brute force's, case by case.
    let settings = Settings {
        depth: 10,
        exactness_check: true,
        ..Settings::default()
    };
    let e = exam(&uri, &cases, &settings).unwrap();
    let x = e.retrieval.exact.as_ref().unwrap();
    for c in &cases {
        let q = c.query_vector.as_ref().unwrap();
        let mut order: Vec<(f64, &str)> = data
            .iter()
            .map(|(id, v)| (cosine(q, v), id.as_str()))
            .collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        let want: Vec<&str> = order.iter().take(10).map(|(_, id)| *id).collect();
        let got: Vec<&str> = x.queries[&c.id].iter().map(|r| r.id.as_str()).collect();
        assert_eq!(got, want, "case {}", c.id);
    }
    drop(client);
    admin
        .batch_execute("DROP DATABASE noseq_db WITH (FORCE)")
        .unwrap();
}

/// The example of docs/retrievers.md: 20,000 rows with an HNSW index (pgvector's defaults,
/// m = 16, ef_construction = 64), 50 cases expecting their exact top 3, K = 10, depth 100,
/// examined at ef_search 10, 40 (the default) and 100. Prints what the exam says.
#[test]
fn ef_search_10_40_100_on_20k_rows() {
    let data = items(20_000, 61);
    let mut client = load_table("ef20k_t", &data);
    client
        .batch_execute(
            "CREATE INDEX ef20k_t_hnsw ON ef20k_t USING hnsw (embedding vector_cosine_ops); ANALYZE ef20k_t",
        )
        .unwrap();
    let cases: Vec<Case> = cases(&data, 50, 62, &[1, 2, 3])
        .into_iter()
        .map(|c| Case {
            top_k: Some(10),
            ..c
        })
        .collect();
    let settings = Settings {
        depth: 100,
        exactness_check: true,
        ..Settings::default()
    };
    let mut seen = Vec::new();
    for ef in [10, 40, 100] {
        let e = exam(
            &table_uri("ef20k_t", &format!("&ef_search={ef}")),
            &cases,
            &settings,
        )
        .unwrap();
        let r = &e.report;
        let returned: Vec<usize> = r.cases.iter().map(|c| c.retrieved).collect();
        let x = r.exactness.as_ref().unwrap();
        let recall_failing = r
            .cases
            .iter()
            .filter(|c| {
                c.reasons
                    .contains(&veredicto_core::exam::CaseReason::Recall)
            })
            .count();
        println!(
            "ef_search={ef}: results per case {}..{} (asked 100) · mean recall@10 {:.3} · {recall_failing} of 50 cases fail recall · ANN recall@10 vs exact {:.3}",
            returned.iter().min().unwrap(),
            returned.iter().max().unwrap(),
            r.summary.mean_recall,
            x.ann_recall_at_k
        );
        for w in veredicto_report::explain::warning_lines(r) {
            if w.contains("fewer results") {
                println!("  {w}");
            }
        }
        seen.push((
            ef,
            *returned.iter().max().unwrap(),
            r.warnings
                .iter()
                .any(|w| matches!(w, veredicto_core::exam::ExamWarning::ShortResults { .. })),
        ));
    }
    assert!(seen[0].1 <= 10 && seen[0].2, "{seen:?}");
    assert!(seen[1].1 <= 40 && seen[1].2, "{seen:?}");
    assert_eq!(seen[2].1, 100, "{seen:?}");
}

/// pgvector connects by the same libpq rules and TLS as the history: before, any `sslmode`
/// but `disable`/`prefer` was an unknown parameter and connections were plain only.
#[test]
fn pgvector_connects_over_tls_with_the_certificate_and_host_name_checked() {
    let tls = std::env::var("VEREDICTO_TEST_POSTGRES_TLS")
        .expect("VEREDICTO_TEST_POSTGRES_TLS is not set: scripts/test.sh starts the TLS server");
    let dir = std::env::var("VEREDICTO_TEST_POSTGRES_TLS_DIR")
        .expect("VEREDICTO_TEST_POSTGRES_TLS_DIR is not set");
    let uri = |host: &str| {
        format!(
            "{}?sslmode=verify-full&sslrootcert={dir}/ca.crt&table=absent_t&id=chunk_id&vector=embedding",
            tls.replace("localhost", host)
        )
    };
    // Connected and asked the server: the table is not there (the TLS server has no
    // pgvector tables), which proves the encrypted session was open.
    let r = open(&uri("localhost"), &Options::default()).expect("opens");
    let err = r.prepare(Some(DIM)).expect_err("no such table");
    assert!(
        err.to_string().contains("`absent_t` does not exist"),
        "{err}"
    );
    // The certificate names `localhost`, not 127.0.0.1.
    let r = open(&uri("127.0.0.1"), &Options::default()).expect("opens");
    let err = r.prepare(Some(DIM)).expect_err("wrong host name");
    assert!(
        err.to_string().contains("cannot connect")
            && err.to_string().contains("not valid for the host name"),
        "{err}"
    );
    // The plain test server offers no TLS: `require` is refused.
    let r = open(
        &table_uri("absent_t", "&sslmode=require"),
        &Options::default(),
    )
    .expect("opens");
    let err = r.prepare(Some(DIM)).expect_err("no TLS there");
    assert!(err.to_string().contains("does not accept TLS"), "{err}");
}

#[test]
fn span_columns_resolve_evidence_without_a_corpus() {
    let data = items(30, 11);
    let mut client = load_table("spans_t", &data);
    // Each row a chunk of one document: chunk i holds characters 100 i .. 100 (i + 1).
    client
        .batch_execute(
            "ALTER TABLE spans_t ADD COLUMN doc text, ADD COLUMN s int, ADD COLUMN e int; \
             UPDATE spans_t SET doc = 'DOC', s = 100 * substr(chunk_id, 7)::int, \
             e = 100 * substr(chunk_id, 7)::int + 100",
        )
        .unwrap();
    // Each case's evidence: the span of its nearest neighbour's row, cut to 10 characters.
    let mut cases = cases(&data, 4, 5, &[1]);
    for c in &mut cases {
        let n: usize = c.expected[0]["chunk-".len()..].parse().unwrap();
        c.expected.clear();
        c.evidence = vec![veredicto_core::evidence::EvidenceItem {
            doc_id: "DOC".into(),
            start: 100 * n + 20,
            end: 100 * n + 30,
            grade: 1,
            quote: None,
        }];
    }
    let s = Settings::default();
    let e = exam(&table_uri("spans_t", "&doc=doc&start=s&end=e"), &cases, &s).unwrap();
    for c in &e.report.cases {
        assert_eq!(c.evidence[0].rank, Some(1), "{c:?}");
        assert_eq!(c.evidence[0].chunks.len(), 1);
    }
    // Without the span columns nothing says where the rows sit: no evidence is retrieved.
    let e = exam(&table_uri("spans_t", ""), &cases, &s).unwrap();
    assert!(e.report.cases.iter().all(|c| c.evidence[0].rank.is_none()));
    // The three together, existing columns, and whole spans.
    let err = |uri: String| exam(&uri, &cases, &s).err().expect("error").to_string();
    let m = err(table_uri("spans_t", "&doc=doc&start=s"));
    assert!(m.contains("give all three or none"), "{m}");
    let m = err(table_uri("spans_t", "&doc=doc&start=s&end=nope"));
    assert!(
        m.contains("column `nope` (end=) does not exist in table `spans_t`"),
        "{m}"
    );
    client.batch_execute("UPDATE spans_t SET e = NULL").unwrap();
    let m = err(table_uri("spans_t", "&doc=doc&start=s&end=e"));
    assert!(m.contains("NULL in part"), "{m}");
}
