//! The run history's contract, against both backends (a real SQLite file and a real
//! PostgreSQL database): round trip, append-only, IDs, filters, baselines, trends, errors,
//! and threads recording at once. Each `fn name(backend)` becomes `name::sqlite` and
//! `name::postgres`.

use crate::common;
use common::{Backend, Fixture, V};

use rusqlite::Connection;
use veredicto_core::exam::{ExamReport, Verdict};
use veredicto_core::history::RunMeta;
use veredicto_store::synthetic::{meta, Synthetic};
use veredicto_store::{
    AuditCounts, AuditRecordKind, AuditRunMeta, GateAcceptance, History, Metric, RunFilter,
    SealKind, SealOrigin, SealProblem, StoreError, TrendQuery,
};

fn exam(cases: usize, seed: u64, skill: f64, golden_version: u32) -> ExamReport {
    Synthetic {
        cases,
        seed,
        skill,
        golden_version,
    }
    .report()
}

fn record(h: &History, report: &ExamReport, created_at: &str, label: Option<&str>) -> String {
    h.record(&meta(report, created_at, label), report)
        .expect("records")
}

fn value<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("serialises")
}

fn a_recorded_run_reads_back_identical(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    if b == Backend::Sqlite {
        assert_eq!(h.journal_mode(), "wal");
    }
    let report = exam(200, 3, 0.9, 1);
    assert_eq!(
        report.verdict,
        Verdict::Stop,
        "the fixture should fail some cases"
    );
    assert!(report.cases.iter().any(|c| !c.diagnosis.is_empty()));
    let m = meta(
        &report,
        "2025-11-14T10:30:00.250+01:00",
        Some("rack-2025.11"),
    );
    let id = h.record(&m, &report).expect("records");
    assert_eq!(id.len(), 26);
    // The ID carries created_at (09:30:00.250Z).
    assert_eq!(
        veredicto_store::id::timestamp_ms(&id),
        Some(1_763_112_600_250)
    );

    let back = h.get(&id).expect("gets");
    let mut expected_meta = m.clone();
    expected_meta.id = id.clone();
    assert_eq!(back.meta, expected_meta);
    assert_eq!(value(&back.report), value(&report));
    // The same bytes as the wire format prints.
    assert_eq!(
        serde_json::to_string(&back.report).expect("json"),
        serde_json::to_string(&report).expect("json")
    );

    // Reopened from another connection, by prefix (any case), and as `latest`.
    drop(h);
    let h = History::open_spec_existing(&fx.spec).expect("reopens");
    for query in [&id[..8], &id.to_lowercase(), "latest", "LATEST"] {
        assert_eq!(h.get(query).expect("gets").meta.id, id, "{query}");
    }
    assert_eq!(h.meta(&id).expect("meta"), expected_meta);
    let s = h.summary(&id).expect("summary");
    assert_eq!(s.cases, 200);
    assert_eq!(s.failing, report.summary.failing);
    assert_eq!(s.mean_quality, report.summary.mean_quality);
    assert_eq!(s.mrr, report.summary.mrr);
    assert_eq!(s.verdict, Verdict::Stop);
    assert_eq!(s.reasons, report.reasons);
    assert_eq!(s.label.as_deref(), Some("rack-2025.11"));
    assert_eq!(s.top_k, 10);
    let check = h.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(check.runs, 1);
}

fn per_case_rows_hold_every_case_measure_and_expected_chunk(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let report = exam(50, 4, 0.8, 1);
    let id = record(&h, &report, "2025-11-14T09:30:00Z", None);
    drop(h);

    let mut conn = fx.raw();
    let seq = conn.query(&format!("SELECT seq FROM runs WHERE id = '{id}'"))[0][0].int();
    let rows = conn.query(&format!(
        "SELECT case_id, passed, recall, quality, reciprocal_rank, noise, domain, reasons
         FROM cases WHERE run = {seq} ORDER BY ordinal"
    ));
    let text = |v: &V| match v {
        V::Text(t) => Some(t.clone()),
        _ => None,
    };
    assert_eq!(rows.len(), report.cases.len());
    for (row, c) in rows.iter().zip(&report.cases) {
        assert_eq!(text(&row[0]).as_deref(), Some(c.id.as_str()));
        assert_eq!(row[1], V::Int(i64::from(c.passed)));
        assert_eq!(row[2], V::Real(c.recall));
        assert_eq!(row[3], V::Real(c.quality));
        assert_eq!(row[4], V::Real(c.reciprocal_rank));
        assert_eq!(row[5], c.noise.map_or(V::Null, |n| V::Int(n.into())));
        assert_eq!(text(&row[6]), c.domain);
        assert_eq!(
            text(&row[7]),
            Some(serde_json::to_string(&c.reasons).expect("json"))
        );
    }
    let measures = conn.query(&format!(
        "SELECT count(*) FROM case_measures WHERE run = {seq}"
    ))[0][0]
        .int();
    assert_eq!(measures as usize, report.cases.len() * 2);
    let ndcg5 = conn.query(&format!(
        "SELECT value FROM case_measures WHERE run = {seq} AND ordinal = 3 AND measure = 'nDCG@5'"
    ));
    assert_eq!(ndcg5[0][0], V::Real(report.cases[3].measures["nDCG@5"]));
    let chunks: Vec<(String, Option<usize>, Option<f64>, bool)> = conn
        .query(&format!(
            "SELECT chunk_id, rank, score, in_top_k FROM expected_chunks
             WHERE run = {seq} ORDER BY ordinal, position"
        ))
        .into_iter()
        .map(|r| {
            (
                text(&r[0]).expect("chunk id"),
                match r[1] {
                    V::Int(i) => Some(i as usize),
                    _ => None,
                },
                match r[2] {
                    V::Real(x) => Some(x),
                    _ => None,
                },
                r[3] == V::Int(1),
            )
        })
        .collect();
    let want: Vec<(String, Option<usize>, Option<f64>, bool)> = report
        .cases
        .iter()
        .flat_map(|c| &c.expected)
        .map(|e| (e.id.clone(), e.rank, e.score, e.in_top_k))
        .collect();
    assert_eq!(chunks, want);
    assert!(
        want.iter().any(|c| c.1.is_none()),
        "the fixture has a missing chunk"
    );
    assert!(want.iter().any(|c| c.1 > Some(10)), "and one beyond K");
}

/// Every way of changing a recorded run through SQL is refused by the database itself.
fn the_history_is_append_only(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let report = exam(20, 5, 0.9, 1);
    let m = meta(&report, "2025-11-14T09:30:00Z", Some("v1"));
    let first = h.record(&m, &report).expect("records");
    // A replay is a new run with a new ID.
    let second = h.record(&m, &report).expect("records again");
    assert_ne!(first, second);
    assert_eq!(h.count().expect("counts"), 2);
    drop(h);

    // A plain connection, as another tool (the sqlite3 shell, psql) would open it; for
    // SQLite with recursive triggers and foreign keys off.
    let mut conn = fx.raw();
    if b == Backend::Sqlite {
        conn.exec("PRAGMA foreign_keys = OFF; PRAGMA recursive_triggers = OFF;")
            .expect("configures");
    }
    let sqlite_attempts = [
        "UPDATE runs SET label = 'edited'",
        "UPDATE runs SET verdict = 'accept'",
        "DELETE FROM runs",
        "DELETE FROM runs WHERE seq = 2",
        "UPDATE cases SET passed = 1",
        "DELETE FROM cases WHERE run = 1",
        "UPDATE case_measures SET value = 1",
        "DELETE FROM case_measures",
        "UPDATE expected_chunks SET rank = 1",
        "DELETE FROM expected_chunks",
        "UPDATE reports SET body = x'00'",
        "DELETE FROM reports",
        "DELETE FROM sealed",
        "INSERT OR REPLACE INTO runs SELECT * FROM runs WHERE seq = 1",
        "INSERT OR REPLACE INTO cases SELECT * FROM cases WHERE run = 1 AND ordinal = 0",
        "INSERT OR REPLACE INTO reports SELECT * FROM reports WHERE run = 1",
        "REPLACE INTO expected_chunks SELECT * FROM expected_chunks WHERE run = 1 LIMIT 1",
        // Adding a case to a recorded run.
        "INSERT INTO cases SELECT run, 9999, case_id, gold, domain, tags, top_k, retrieved,
             expected, passed, reasons, documented, recall, quality, precision, reciprocal_rank,
             ndcg, average_precision, noise, max_noise FROM cases WHERE run = 1 AND ordinal = 0",
        "INSERT INTO case_measures VALUES (1, 0, 'P@3', 0.5)",
        // A run whose ID would not sort last.
        "INSERT INTO runs (id, created_at, created_ms, golden_fingerprint, policy_fingerprint,
             retriever, top_k, config, tool_version, verdict, reasons, cases, gold_cases,
             failing, failing_gold, mean_quality, mean_recall, mrr, mean_precision, mean_ndcg,
             mean_average_precision, hit_rate, over_noise, latency)
         VALUES ('00000000000000000000000000', '', 0, '', '', '', 10, '{}', '', 'stop', '[]',
             0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '{}')",
        "INSERT INTO cases (run, ordinal, case_id, gold, tags, top_k, retrieved, expected,
             passed, reasons, documented, recall, quality, precision, reciprocal_rank, ndcg,
             average_precision, max_noise)
         VALUES (2, 500, 'x', 0, '[]', 10, 0, 0, 0, '[]', 0, 0, 0, 0, 0, 0, 0, 3)",
        // Rows of a run that does not exist (refused even where foreign keys are off).
        "INSERT INTO cases (run, ordinal, case_id, gold, tags, top_k, retrieved, expected,
             passed, reasons, documented, recall, quality, precision, reciprocal_rank, ndcg,
             average_precision, max_noise)
         VALUES (3, 0, 'x', 0, '[]', 10, 0, 0, 0, '[]', 0, 0, 0, 0, 0, 0, 0, 3)",
        "INSERT INTO sealed VALUES (3)",
    ];
    let postgres_attempts = [
        "UPDATE runs SET label = 'edited'",
        "UPDATE runs SET verdict = 'accept'",
        "DELETE FROM runs",
        "DELETE FROM runs WHERE seq = 2",
        "TRUNCATE runs CASCADE",
        "TRUNCATE sealed",
        "UPDATE cases SET passed = 1",
        "DELETE FROM cases WHERE run = 1",
        "UPDATE case_measures SET value = 1",
        "DELETE FROM case_measures",
        "TRUNCATE case_measures",
        "UPDATE expected_chunks SET rank = 1",
        "DELETE FROM expected_chunks",
        "UPDATE reports SET body = '\\x00'",
        "DELETE FROM reports",
        "DELETE FROM sealed",
        // An upsert is an update.
        "INSERT INTO runs SELECT * FROM runs WHERE seq = 1
         ON CONFLICT (seq) DO UPDATE SET label = 'edited'",
        "INSERT INTO reports SELECT * FROM reports WHERE run = 1
         ON CONFLICT (run) DO UPDATE SET body = EXCLUDED.body",
        // Adding a case to a recorded run.
        "INSERT INTO cases SELECT run, 9999, case_id, gold, domain, tags, top_k, retrieved,
             expected, passed, reasons, documented, recall, quality, \"precision\",
             reciprocal_rank, ndcg, average_precision, noise, max_noise
         FROM cases WHERE run = 1 AND ordinal = 0",
        "INSERT INTO case_measures VALUES (1, 0, 'P@3', 0.5)",
        // A run whose ID would not sort last.
        "INSERT INTO runs (seq, id, created_at, created_ms, golden_fingerprint,
             policy_fingerprint, retriever, top_k, config, tool_version, verdict, reasons,
             cases, gold_cases, failing, failing_gold, mean_quality, mean_recall, mrr,
             mean_precision, mean_ndcg, mean_average_precision, hit_rate, over_noise, latency)
         VALUES (3, '00000000000000000000000000', '', 0, '', '', '', 10, '{}', '', 'stop',
             '[]', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '{}')",
        "INSERT INTO cases (run, ordinal, case_id, gold, tags, top_k, retrieved, expected,
             passed, reasons, documented, recall, quality, \"precision\", reciprocal_rank,
             ndcg, average_precision, max_noise)
         VALUES (2, 500, 'x', 0, '[]', 10, 0, 0, 0, '[]', 0, 0, 0, 0, 0, 0, 0, 3)",
        "INSERT INTO cases (run, ordinal, case_id, gold, tags, top_k, retrieved, expected,
             passed, reasons, documented, recall, quality, \"precision\", reciprocal_rank,
             ndcg, average_precision, max_noise)
         VALUES (3, 0, 'x', 0, '[]', 10, 0, 0, 0, '[]', 0, 0, 0, 0, 0, 0, 0, 3)",
        "INSERT INTO sealed VALUES (3)",
    ];
    let attempts: &[&str] = match b {
        Backend::Sqlite => &sqlite_attempts,
        Backend::Postgres => &postgres_attempts,
    };
    for sql in attempts {
        let err = conn
            .exec(sql)
            .expect_err(&format!("should be refused: {sql}"));
        // On PostgreSQL, rows of a run that does not exist meet the foreign key first.
        let refused = err.contains("append-only")
            || (b == Backend::Postgres && err.contains("violates foreign key"));
        assert!(refused, "{sql}: {err}");
    }
    drop(conn);

    let h = fx.open();
    let check = h.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(value(&h.get(&first).expect("gets").report), value(&report));
    assert_eq!(
        h.summary(&first).expect("summary").label.as_deref(),
        Some("v1")
    );
}

fn ids_are_unique_and_sorted_in_recording_order(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let report = exam(5, 1, 1.0, 1);
    // Same millisecond over and over, then a clock that goes back.
    let mut times = vec!["2025-11-14T09:30:00.000Z"; 30];
    times.extend([
        "2025-11-13T09:30:00Z",
        "2025-11-14T09:31:00Z",
        "2020-01-01T00:00:00Z",
    ]);
    let ids: Vec<String> = times.iter().map(|t| record(&h, &report, t, None)).collect();
    for pair in ids.windows(2) {
        assert!(pair[0] < pair[1], "{} !< {}", pair[0], pair[1]);
    }
    let listed: Vec<String> = h
        .list(&RunFilter::default())
        .expect("lists")
        .into_iter()
        .map(|s| s.id)
        .collect();
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(listed, newest_first);
    // Same millisecond: the IDs share the timestamp and differ in the random part.
    assert_eq!(ids[0][..10], ids[29][..10]);
    assert_eq!(
        veredicto_store::id::timestamp_ms(&ids[31]),
        Some(1_763_112_660_000)
    );
}

fn prefixes_resolve_or_say_why_not(b: Backend) {
    let fx = Fixture::new(b);
    let path = fx.location();
    let h = fx.open();
    assert!(matches!(
        h.get("latest"),
        Err(StoreError::RunNotFound { .. })
    ));
    let report = exam(5, 1, 1.0, 1);
    let a = record(&h, &report, "2025-11-14T09:30:00Z", None);
    let b = record(&h, &report, "2025-11-14T09:30:00Z", None);
    // Both share the 10-character timestamp: a short prefix is ambiguous.
    match h.get(&a[..6]) {
        Err(StoreError::AmbiguousPrefix { candidates, .. }) => {
            assert_eq!(candidates, vec![b.clone(), a.clone()]);
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
    let unique = (11..=26).find(|&n| a[..n] != b[..n]).expect("IDs differ");
    assert_eq!(h.resolve(&a[..unique]).expect("resolves"), a);
    let err = h.get("7ZZZZZZZZZ").expect_err("no such run");
    assert!(matches!(err, StoreError::RunNotFound { .. }));
    assert!(err.to_string().contains(&path), "{err}");
    for bad in ["", "run-1", "01U", "ZZZZZZZZZZZZZZZZZZZZZZZZZZZ"] {
        assert!(
            matches!(h.get(bad), Err(StoreError::BadRunRef { .. })),
            "{bad:?}"
        );
    }
}

/// Golden set 1 runs: A accept, B stop, D stop; golden set 2: C accept.
fn filters_and_baselines(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let g1_ok = exam(40, 1, 1.0, 1);
    let g1_bad = exam(40, 2, 0.7, 1);
    let g2_ok = exam(40, 3, 1.0, 2);
    assert_eq!(g1_ok.verdict, Verdict::Accept);
    assert_eq!(g1_bad.verdict, Verdict::Stop);
    assert_eq!(g2_ok.verdict, Verdict::Accept);
    assert_ne!(g1_ok.golden_fingerprint, g2_ok.golden_fingerprint);
    let a = record(&h, &g1_ok, "2025-11-10T08:00:00Z", Some("idx-1"));
    let b = record(&h, &g1_bad, "2025-11-11T08:00:00Z", Some("idx-2"));
    let c = record(&h, &g2_ok, "2025-11-12T08:00:00Z", Some("idx-2"));
    let d = record(&h, &g1_bad, "2025-11-13T23:59:59.999Z", Some("idx-3"));

    let ids = |f: RunFilter| -> Vec<String> {
        h.list(&f)
            .expect("lists")
            .into_iter()
            .map(|s| s.id)
            .collect()
    };
    assert_eq!(
        ids(RunFilter::default()),
        [d.as_str(), c.as_str(), b.as_str(), a.as_str()]
    );
    let g1 = g1_ok.golden_fingerprint.clone();
    let g1_hex = veredicto_store::short_fingerprint(&g1).to_owned();
    assert_eq!(g1_hex.len(), 12);
    for golden in [
        g1.clone(),
        g1_hex.clone(),
        format!("sha256:{}", &g1_hex[..4]),
    ] {
        assert_eq!(
            ids(RunFilter {
                golden_fingerprint: Some(golden.clone()),
                ..RunFilter::default()
            }),
            [d.as_str(), b.as_str(), a.as_str()],
            "{golden}"
        );
    }
    assert_eq!(
        ids(RunFilter {
            label: Some("idx-2".into()),
            ..RunFilter::default()
        }),
        [c.as_str(), b.as_str()]
    );
    assert_eq!(
        ids(RunFilter {
            verdict: Some(Verdict::Accept),
            ..RunFilter::default()
        }),
        [c.as_str(), a.as_str()]
    );
    // Dates are whole UTC days; times are instants, both inclusive.
    assert_eq!(
        ids(RunFilter {
            since: Some("2025-11-11".into()),
            until: Some("2025-11-13".into()),
            ..RunFilter::default()
        }),
        [d.as_str(), c.as_str(), b.as_str()]
    );
    assert_eq!(
        ids(RunFilter {
            since: Some("2025-11-11T09:00:00+01:00".into()),
            until: Some("2025-11-13T23:59:59.998Z".into()),
            ..RunFilter::default()
        }),
        [c.as_str(), b.as_str()]
    );
    assert_eq!(
        ids(RunFilter {
            before: Some(c.clone()),
            limit: Some(1),
            ..RunFilter::default()
        }),
        [b.as_str()]
    );
    assert!(matches!(
        h.list(&RunFilter {
            since: Some("last week".into()),
            ..RunFilter::default()
        }),
        Err(StoreError::BadTime { field: "since", .. })
    ));

    let latest = |f: RunFilter| h.latest(&f).expect("latest").map(|s| s.id);
    assert_eq!(latest(RunFilter::default()), Some(d.clone()));
    assert_eq!(
        latest(RunFilter {
            golden_fingerprint: Some(g2_ok.golden_fingerprint.clone()),
            ..RunFilter::default()
        }),
        Some(c.clone())
    );

    let meta_d = h.meta(&d).expect("meta");
    let prev = |m: &RunMeta| h.previous_compatible(m).expect("previous").map(|s| s.id);
    assert_eq!(prev(&meta_d), Some(b.clone()));
    assert_eq!(prev(&h.meta(&b).expect("meta")), Some(a.clone()));
    assert_eq!(prev(&h.meta(&a).expect("meta")), None);
    assert_eq!(prev(&h.meta(&c).expect("meta")), None);
    // A run not recorded (no ID) compares with the newest compatible one.
    let unrecorded = meta(&g1_ok, "2025-11-14T08:00:00Z", None);
    assert_eq!(prev(&unrecorded), Some(d.clone()));
    // Same golden set, another policy: not compatible.
    let mut other_policy = g1_ok.clone();
    other_policy.policy_fingerprint = "sha256:other".into();
    let e = record(&h, &other_policy, "2025-11-14T09:00:00Z", None);
    assert_eq!(prev(&h.meta(&e).expect("meta")), None);

    let accepted = |before: Option<&str>, golden: Option<&str>| {
        h.last_accepted(before, golden)
            .expect("last accepted")
            .map(|s| s.id)
    };
    assert_eq!(accepted(None, None), Some(e.clone()));
    assert_eq!(accepted(Some(&e), None), Some(c.clone()));
    assert_eq!(accepted(Some(&d), Some(&g1)), Some(a.clone()));
    assert_eq!(accepted(Some(&d), Some(&g1_hex)), Some(a.clone()));
    assert_eq!(accepted(Some(&a), Some(&g1)), None);
    assert_eq!(accepted(Some("latest"), Some(&g1)), Some(a.clone()));
}

fn trends_average_the_stored_case_rows(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let reports: Vec<ExamReport> = [1.0, 0.95, 0.9, 0.8, 0.7]
        .iter()
        .enumerate()
        .map(|(i, &skill)| exam(60, i as u64, skill, 1))
        .collect();
    let ids: Vec<String> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| record(&h, r, &format!("2025-11-1{i}T08:00:00Z"), None))
        .collect();
    let other_golden = exam(60, 9, 1.0, 2);
    record(&h, &other_golden, "2025-11-16T08:00:00Z", None);

    let query = |metric: &str, domain: Option<&str>, case_id: Option<&str>| TrendQuery {
        metric: metric.parse().expect("metric"),
        runs: RunFilter {
            golden_fingerprint: Some(reports[0].golden_fingerprint.clone()),
            limit: Some(3),
            ..RunFilter::default()
        },
        domain: domain.map(str::to_owned),
        case_id: case_id.map(str::to_owned),
    };
    let mean = |xs: Vec<f64>| xs.iter().sum::<f64>() / xs.len() as f64;
    let last3 = &reports[2..];

    let recall = h.trend(&query("recall", None, None)).expect("trend");
    assert_eq!(
        recall.iter().map(|p| p.run_id.clone()).collect::<Vec<_>>(),
        ids[2..],
        "the last 3 runs, oldest first"
    );
    for (p, r) in recall.iter().zip(last3) {
        assert_eq!(p.cases, 60);
        assert!((p.mean.expect("mean") - r.summary.mean_recall).abs() < 1e-12);
    }
    assert!(recall[0].mean > recall[2].mean, "the fixture declines");

    let mrr = h.trend(&query("mrr", Some("fiscal"), None)).expect("trend");
    for (p, r) in mrr.iter().zip(last3) {
        let want: Vec<f64> = r
            .cases
            .iter()
            .filter(|c| c.domain.as_deref() == Some("fiscal"))
            .map(|c| c.reciprocal_rank)
            .collect();
        assert_eq!(p.cases, want.len());
        assert!((p.mean.expect("mean") - mean(want)).abs() < 1e-12);
    }

    let ndcg5 = h
        .trend(&query("ndcg_cut.5", Some("laboral"), None))
        .expect("trend");
    for (p, r) in ndcg5.iter().zip(last3) {
        let want: Vec<f64> = r
            .cases
            .iter()
            .filter(|c| c.domain.as_deref() == Some("laboral"))
            .map(|c| c.measures["nDCG@5"])
            .collect();
        assert_eq!(p.cases, want.len());
        assert!((p.mean.expect("mean") - mean(want)).abs() < 1e-12);
    }

    let noise = h.trend(&query("noise", None, None)).expect("trend");
    for (p, r) in noise.iter().zip(last3) {
        let want: Vec<f64> = r
            .cases
            .iter()
            .filter_map(|c| c.noise.map(f64::from))
            .collect();
        assert_eq!(p.cases, want.len());
        assert!((p.mean.expect("mean") - mean(want)).abs() < 1e-12);
    }

    let pass = h
        .trend(&query("pass_rate", None, Some("case-0007")))
        .expect("trend");
    for (p, r) in pass.iter().zip(last3) {
        assert_eq!(p.cases, 1);
        assert_eq!(p.mean, Some(if r.cases[7].passed { 1.0 } else { 0.0 }));
    }

    // A measure the policy did not compute, or a domain with no case: no value.
    for q in [
        query("P@3", None, None),
        query("recall", Some("astronomía"), None),
    ] {
        let points = h.trend(&q).expect("trend");
        assert_eq!(points.len(), 3);
        assert!(points.iter().all(|p| p.cases == 0 && p.mean.is_none()));
    }
    assert!("velocity".parse::<Metric>().is_err());
}

fn bad_runs_are_refused_and_nothing_is_written(b: Backend) {
    let fx = Fixture::new(b);
    let path = fx.location();
    let h = fx.open();
    let report = exam(10, 1, 1.0, 1);
    let good = meta(&report, "2025-11-14T09:30:00Z", None);

    let mut with_id = good.clone();
    with_id.id = "01JCX0000000000000000000000".into();
    assert!(matches!(
        h.record(&with_id, &report),
        Err(StoreError::IdGiven { .. })
    ));
    let mut bad_time = good.clone();
    bad_time.created_at = "14/11/2025".into();
    assert!(matches!(
        h.record(&bad_time, &report),
        Err(StoreError::BadTime {
            field: "created_at",
            ..
        })
    ));
    let mut other_golden = good.clone();
    other_golden.golden_fingerprint = "sha256:beef".into();
    assert!(matches!(
        h.record(&other_golden, &report),
        Err(StoreError::Inconsistent {
            field: "golden_fingerprint",
            ..
        })
    ));
    let mut nan_latency = good.clone();
    if let Some(stage) = nan_latency.latency.values_mut().next() {
        stage.p95_ms = f64::NAN;
    }
    assert!(matches!(
        h.record(&nan_latency, &report),
        Err(StoreError::Unstorable {
            what: "latency",
            ..
        })
    ));
    let mut nan_report = report.clone();
    nan_report.cases[0].recall = f64::NAN;
    let err = h
        .record(
            &meta(&nan_report, "2025-11-14T09:30:00Z", None),
            &nan_report,
        )
        .expect_err("NaN cannot be stored");
    assert!(
        matches!(err, StoreError::Unstorable { what: "report", .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with(&path), "{err}");
    assert_eq!(h.count().expect("counts"), 0);
    h.record(&good, &report).expect("the good one records");
    assert_eq!(h.count().expect("counts"), 1);
}

#[test]
fn foreign_and_newer_files_are_refused_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");

    let missing = dir.path().join("nope/history.db");
    assert!(matches!(
        History::open_existing(&missing),
        Err(StoreError::Missing { .. })
    ));
    assert!(!missing.exists());

    let foreign = dir.path().join("other.db");
    Connection::open(&foreign)
        .and_then(|c| c.execute_batch("CREATE TABLE t (x); PRAGMA user_version = 7;"))
        .expect("makes a foreign database");
    let err = History::open(&foreign).expect_err("not a history");
    assert!(
        matches!(
            err,
            StoreError::NotAHistory {
                user_version: 7,
                ..
            }
        ),
        "{err}"
    );
    let plain = dir.path().join("plain.db");
    Connection::open(&plain)
        .and_then(|c| c.execute_batch("CREATE TABLE t (x);"))
        .expect("makes a foreign database");
    assert!(matches!(
        History::open(&plain),
        Err(StoreError::NotAHistory { .. })
    ));
    // Still not WAL: the file was left alone.
    let mode: String = Connection::open(&plain)
        .and_then(|c| c.query_row("PRAGMA journal_mode", [], |r| r.get(0)))
        .expect("reads");
    assert_eq!(mode, "delete");

    let newer = dir.path().join("newer.db");
    drop(History::open(&newer).expect("creates"));
    Connection::open(&newer)
        .and_then(|c| c.execute_batch("PRAGMA user_version = 5;"))
        .expect("bumps the version");
    let err = History::open(&newer).expect_err("newer schema");
    assert!(
        matches!(
            err,
            StoreError::NewerSchema {
                found: 5,
                supported: 4,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade veredicto"), "{err}");
}

/// Threads with their own connections record at the same moment, on a history that does not
/// exist yet (so they also race to create the schema).
fn concurrent_writers_all_succeed_with_distinct_ids(b: Backend) {
    const WRITERS: usize = 4;
    const RUNS: usize = 8;
    let fx = Fixture::new(b);
    let spec = fx.spec.as_str();
    let report = exam(200, 1, 0.95, 1);
    let barrier = std::sync::Barrier::new(WRITERS);
    let ids: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (report, barrier): (&ExamReport, _) = (&report, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let h = History::open_spec(spec).expect("opens");
                    (0..RUNS)
                        .map(|i| {
                            let label = format!("writer-{w}-{i}");
                            record(&h, report, "2025-11-14T09:30:00.000Z", Some(&label))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("writer thread"))
            .collect()
    });
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), WRITERS * RUNS);
    let h = fx.open();
    let check = h.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    assert_eq!(check.runs, WRITERS * RUNS);
}

/// `check` is what the crash test relies on: it must see a run with missing rows. The only
/// way to make one is to remove the guards by hand.
fn check_finds_runs_with_missing_rows(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let report = exam(20, 5, 0.9, 1);
    let first = record(&h, &report, "2025-11-14T09:30:00Z", None);
    let second = record(&h, &report, "2025-11-14T09:31:00Z", None);
    let third = record(&h, &report, "2025-11-14T09:32:00Z", None);
    assert!(h.check().expect("checks").is_ok());
    drop(h);
    let deletes = "DELETE FROM case_measures WHERE run = 1 AND ordinal = 19;
         DELETE FROM expected_chunks WHERE run = 1 AND ordinal = 19;
         DELETE FROM cases WHERE run = 1 AND ordinal = 19;
         DELETE FROM expected_chunks WHERE run = 2 AND ordinal = 0;
         DELETE FROM sealed WHERE run = 3;";
    let tables = ["cases", "case_measures", "expected_chunks", "sealed"];
    let tamper = match b {
        Backend::Sqlite => tables
            .iter()
            .map(|t| format!("DROP TRIGGER {t}_no_delete;"))
            .chain([deletes.to_owned()])
            .collect::<String>(),
        // Switched off and on again, so that only the missing rows remain to be found.
        Backend::Postgres => {
            let switch = |how: &str| {
                tables
                    .iter()
                    .map(|t| format!("ALTER TABLE {t} {how} TRIGGER USER;"))
                    .collect::<String>()
            };
            format!("{}{deletes}{}", switch("DISABLE"), switch("ENABLE"))
        }
    };
    fx.raw().exec(&tamper).expect("tampers");
    let check = fx.open().check().expect("checks");
    assert!(!check.is_ok());
    assert_eq!(check.integrity, ["ok"], "the database itself is sound");
    assert_eq!(check.incomplete_runs, [first, second, third]);
}

/// The attack: a run's verdict and its case rows rewritten with the append-only
/// guards switched off and on again (anyone who owns the database can). `check` said `ok`;
/// every run is now sealed with a digest of what was recorded, chained to the previous
/// run's, and `check` recomputes the chain and names the rewritten run.
fn check_finds_a_run_rewritten_with_the_guards_off(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let stop = exam(20, 2, 0.7, 1);
    assert_eq!(stop.verdict, Verdict::Stop);
    let first = record(&h, &exam(20, 1, 1.0, 1), "2025-11-14T09:30:00Z", None);
    let second = record(&h, &stop, "2025-11-14T09:31:00Z", None);
    let third = record(&h, &exam(20, 3, 1.0, 1), "2025-11-14T09:32:00Z", None);
    assert!(h.check().expect("checks").is_ok());
    drop(h);
    let rewrite = "UPDATE runs SET verdict = 'accept', reasons = '[]', failing = 0,
             failing_gold = 0 WHERE seq = 2;
         UPDATE cases SET passed = 1, reasons = '[]' WHERE run = 2;";
    let mut raw = fx.raw();
    match b {
        Backend::Sqlite => {
            // Drop the guards, rewrite, and put the very same guards back.
            let guards: Vec<String> = raw
                .query(
                    "SELECT sql FROM sqlite_master WHERE type = 'trigger'
                     AND name IN ('runs_no_update', 'cases_no_update') ORDER BY name",
                )
                .into_iter()
                .map(|r| match &r[0] {
                    V::Text(sql) => sql.clone(),
                    other => panic!("trigger SQL: {other:?}"),
                })
                .collect();
            assert_eq!(guards.len(), 2);
            raw.exec(&format!(
                "DROP TRIGGER runs_no_update; DROP TRIGGER cases_no_update; {rewrite} {};",
                guards.join(";\n")
            ))
            .expect("tampers");
        }
        Backend::Postgres => raw
            .exec(&format!(
                "ALTER TABLE runs DISABLE TRIGGER ALL; ALTER TABLE cases DISABLE TRIGGER ALL;
                 {rewrite}
                 ALTER TABLE runs ENABLE TRIGGER ALL; ALTER TABLE cases ENABLE TRIGGER ALL;"
            ))
            .expect("tampers"),
    }
    drop(raw);
    let h = fx.open();
    assert_eq!(
        h.summary(&second).expect("summary").verdict,
        Verdict::Accept,
        "the rewrite took"
    );
    let check = h.check().expect("checks");
    assert_eq!(check.integrity, ["ok"], "the guards are all back");
    assert!(check.incomplete_runs.is_empty(), "{check:?}");
    assert!(!check.is_ok(), "the rewritten run must be found: {check:?}");
    let broken = check.seals.first_break.as_ref().expect("a broken seal");
    assert_eq!(
        (
            broken.kind,
            broken.id.as_str(),
            broken.problem,
            broken.position
        ),
        (SealKind::Run, second.as_str(), SealProblem::Content, 2),
        "{check:?}"
    );
    assert_eq!(broken.item, format!("run {second}"));
    assert_eq!(check.seals.broken, 1, "only that run: {check:?}");
    assert!(check.seals.unsealed.is_empty());
    assert_eq!((check.seals.seals, check.seals.sealed_at_upgrade), (3, 0));
    let seals = h.seals().expect("seals");
    assert_eq!(
        seals.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        [first.as_str(), second.as_str(), third.as_str()]
    );
    assert!(seals.iter().all(|s| s.origin == SealOrigin::Recorded));
}

/// Removing or rewriting a seal itself shows as a broken link: the seal after a removed one
/// does not follow from the one before it, and the removed seal's run is unsealed.
fn check_finds_a_removed_or_rewritten_seal(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let report = exam(10, 1, 1.0, 1);
    let ids: Vec<String> = (0..4)
        .map(|i| record(&h, &report, &format!("2025-11-14T09:3{i}:00Z"), None))
        .collect();
    assert!(h.check().expect("checks").is_ok());
    drop(h);
    let off = |sql: &str| match b {
        Backend::Sqlite => {
            format!("DROP TRIGGER chain_no_update; DROP TRIGGER chain_no_delete; {sql}")
        }
        Backend::Postgres => format!(
            "ALTER TABLE chain DISABLE TRIGGER ALL; {sql} ALTER TABLE chain ENABLE TRIGGER ALL;"
        ),
    };
    fx.raw()
        .exec(&off("DELETE FROM chain WHERE seq = 2;
             UPDATE chain SET content = 'sha256:00' WHERE seq = 4;"))
        .expect("tampers");
    let check = fx.open().check().expect("checks");
    assert!(!check.is_ok());
    let broken = check.seals.first_break.expect("a broken link");
    assert_eq!(
        (broken.problem, broken.position, broken.id.as_str()),
        (SealProblem::Link, 3, ids[2].as_str()),
        "the seal after the removed one"
    );
    assert_eq!(check.seals.broken, 2, "and the rewritten one");
    assert_eq!(check.seals.unsealed, [format!("run {}", ids[1])]);
}

/// Audit runs, their reviews, gate acceptances and chunk lists are sealed like exam runs: a
/// review rewritten with the guards off is named, so is an acceptance's reason.
fn check_finds_a_rewritten_review_or_acceptance(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let report = exam(10, 1, 1.0, 1);
    let run = record(&h, &report, "2025-11-14T09:30:00Z", None);
    let audit = h
        .record_audit_run(
            &AuditRunMeta {
                id: String::new(),
                created_at: "2026-11-30T10:00:00Z".into(),
                label: None,
                replay_of: None,
                cases_name: "q.yaml".into(),
                cases_sha256: String::new(),
                counts: AuditCounts::default(),
                tool_version: "0.1.0".into(),
                git_revision: None,
            },
            b"schema: x\n",
            None,
            &[(
                AuditRecordKind::Review,
                "{\"verdict\":\"supported\"}".into(),
            )],
        )
        .expect("records an audit run");
    h.append_audit_records(
        &audit,
        &[
            (
                AuditRecordKind::Review,
                "{\"verdict\":\"unsupported\"}".into(),
            ),
            (
                AuditRecordKind::Suggestion,
                "{\"verdict\":\"supported\"}".into(),
            ),
        ],
    )
    .expect("appends");
    let accepted = h
        .record_acceptance(&GateAcceptance {
            id: String::new(),
            created_at: "2026-11-30T09:00:00Z".into(),
            index: "kb".into(),
            batch: "b".into(),
            batch_fingerprint: "sha256:00".into(),
            reason: "known gaps".into(),
            rejected: 0,
            rejections: Vec::new(),
            who: None,
            tool_version: "0.1.0".into(),
        })
        .expect("accepts");
    let check = h.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    let kinds: Vec<(SealKind, usize)> = h
        .seals()
        .expect("seals")
        .iter()
        .map(|s| (s.kind, s.part))
        .collect();
    assert_eq!(
        kinds,
        [
            (SealKind::Run, 0),
            (SealKind::AuditRun, 0),
            (SealKind::Review, 0),
            (SealKind::Review, 1),
            (SealKind::Suggestion, 0),
            (SealKind::GateAcceptance, 0),
        ]
    );
    drop(h);
    let (review, acceptance) = (
        "UPDATE audit_records SET body = '{\"verdict\":\"supported\"}'
         WHERE body = '{\"verdict\":\"unsupported\"}';",
        "UPDATE gate_acceptances SET reason = 'all fine';",
    );
    let tamper = |sql: &str, tables: &[&str]| {
        let sql = match b {
            Backend::Sqlite => {
                let drops: String = tables
                    .iter()
                    .map(|t| format!("DROP TRIGGER {t}_no_update;"))
                    .collect();
                format!("{drops}{sql}")
            }
            Backend::Postgres => {
                let switch = |how: &str| -> String {
                    tables
                        .iter()
                        .map(|t| format!("ALTER TABLE {t} {how} TRIGGER ALL;"))
                        .collect()
                };
                format!("{}{sql}{}", switch("DISABLE"), switch("ENABLE"))
            }
        };
        fx.raw().exec(&sql).expect("tampers");
    };
    tamper(review, &["audit_records"]);
    let check = fx.open().check().expect("checks");
    let broken = check.seals.first_break.expect("the review");
    assert_eq!(
        (broken.kind, broken.id.as_str(), broken.part, broken.problem),
        (SealKind::Review, audit.as_str(), 1, SealProblem::Content)
    );
    assert_eq!(broken.item, format!("review 2 of audit run {audit}"));
    assert!(
        check.altered_audit_runs.is_empty(),
        "the case file is untouched"
    );
    tamper(acceptance, &["gate_acceptances"]);
    let check = fx.open().check().expect("checks");
    assert_eq!(check.seals.broken, 2);
    assert!(
        check.unreadable_acceptances.is_empty(),
        "it still reads back"
    );
    let _ = (run, accepted);
}

/// A history written before seals existed (schema version 3) is upgraded in place when
/// opened for writing, and every item already there is sealed in the upgrade's transaction,
/// marked as sealed at upgrade time (a change made before then cannot be detected); items
/// written afterwards are sealed when written. Read-only, the old file is left as it is and
/// reported as not sealed yet.
fn a_version_3_history_is_sealed_when_upgraded(b: Backend) {
    let fx = Fixture::new(b);
    let h = fx.open();
    let report = exam(10, 1, 1.0, 1);
    let old: Vec<String> = (0..3)
        .map(|i| record(&h, &report, &format!("2025-11-14T09:3{i}:00Z"), None))
        .collect();
    drop(h);
    // Back to version 3, exactly: without the seals' table and triggers.
    match b {
        Backend::Sqlite => fx.raw().exec(
            "DROP TRIGGER chain_no_update; DROP TRIGGER chain_no_delete;
             DROP TRIGGER chain_no_replace; DROP TABLE chain; PRAGMA user_version = 3;",
        ),
        Backend::Postgres => fx
            .raw()
            .exec("DROP TABLE chain; UPDATE veredicto_schema SET version = 3;"),
    }
    .expect("downgrades");
    if b == Backend::Sqlite {
        let ro = History::open_read_only(std::path::Path::new(&fx.spec)).expect("read-only");
        let check = ro.check().expect("checks");
        assert!(!check.seals.sealed && check.is_ok(), "{check:?}");
        assert!(ro.seals().expect("seals").is_empty());
    }
    let h = fx.open();
    let check = h.check().expect("checks");
    assert!(check.is_ok(), "{check:?}");
    assert!(check.seals.sealed);
    assert_eq!(
        (
            check.seals.seals,
            check.seals.sealed_at_upgrade,
            check.seals.runs_sealed_at_upgrade
        ),
        (3, 3, 3)
    );
    let new = record(&h, &report, "2025-11-14T09:40:00Z", None);
    let seals = h.seals().expect("seals");
    let origins: Vec<(&str, SealOrigin)> =
        seals.iter().map(|s| (s.id.as_str(), s.origin)).collect();
    assert_eq!(
        origins,
        [
            (old[0].as_str(), SealOrigin::Upgrade),
            (old[1].as_str(), SealOrigin::Upgrade),
            (old[2].as_str(), SealOrigin::Upgrade),
            (new.as_str(), SealOrigin::Recorded),
        ]
    );
    drop(h);
    // Opening again does not upgrade or seal twice; a change after the upgrade is found.
    let rewrite = "UPDATE runs SET label = 'edited' WHERE seq = 1;";
    fx.raw()
        .exec(&match b {
            Backend::Sqlite => format!("DROP TRIGGER runs_no_update; {rewrite}"),
            Backend::Postgres => format!(
                "ALTER TABLE runs DISABLE TRIGGER ALL; {rewrite} ALTER TABLE runs ENABLE TRIGGER ALL;"
            ),
        })
        .expect("tampers");
    let check = fx.open().check().expect("checks");
    assert_eq!(check.seals.seals, 4);
    let broken = check.seals.first_break.expect("the changed run");
    assert_eq!(
        (broken.id.as_str(), broken.problem),
        (old[0].as_str(), SealProblem::Content)
    );
}

both_backends!(
    a_recorded_run_reads_back_identical,
    per_case_rows_hold_every_case_measure_and_expected_chunk,
    the_history_is_append_only,
    ids_are_unique_and_sorted_in_recording_order,
    prefixes_resolve_or_say_why_not,
    filters_and_baselines,
    trends_average_the_stored_case_rows,
    bad_runs_are_refused_and_nothing_is_written,
    concurrent_writers_all_succeed_with_distinct_ids,
    check_finds_runs_with_missing_rows,
    check_finds_a_run_rewritten_with_the_guards_off,
    check_finds_a_removed_or_rewritten_seal,
    check_finds_a_rewritten_review_or_acceptance,
    a_version_3_history_is_sealed_when_upgraded,
);
