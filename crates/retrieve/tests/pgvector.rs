//! pgvector against a real PostgreSQL 16 with pgvector 0.6.2, started by
//! `scripts/postgres.sh start` (its URL in VEREDICTO_TEST_POSTGRES).

#![allow(clippy::result_large_err)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use veredicto_core::case::Case;
use veredicto_core::policy::Policy;
use veredicto_index::*;
use veredicto_retrieve::exam::{examine, Examined, Inputs, Settings};
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
