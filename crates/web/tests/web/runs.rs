//! The runs area's trends per configuration: runs of two golden sets recorded in a real
//! SQLite history, grouped as a comparison groups them (golden set and policy), each group
//! with its newest runs' QS, recall and verdict, drawn inline.

use std::collections::BTreeMap;
use std::path::Path;

use crate::golden::request;

fn workspace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Records the exam of `golden` over the rack run file `run` in `dir`'s history.
fn record(dir: &Path, golden: &Path, run: &str, at: &str) {
    let rack = workspace().join("examples/rack");
    let loaded = veredicto_app::golden::load(
        golden,
        Some(&rack.join("corpus.jsonl")),
        None,
        veredicto_app::Events::silent(),
    )
    .unwrap();
    let opened = veredicto_app::retriever::open(
        &format!("run:{}", rack.join(run).display()),
        &[],
        &veredicto_retrieve::Options::default(),
    )
    .unwrap();
    let history = dir.join("history.sqlite").display().to_string();
    veredicto_app::run_exam(veredicto_app::ExamRequest {
        retriever: opened.retriever.as_ref(),
        embedder: None,
        cases: &loaded.cases,
        policy: &veredicto_core::policy::Policy::default(),
        corpus: loaded.corpus,
        corpus_fingerprint: None,
        notes: &BTreeMap::new(),
        as_of: "2025-11-14",
        settings: Default::default(),
        rerank_spec: None,
        fusion: None,
        check_vectors: None,
        timings: false,
        record: Some(veredicto_app::Recording {
            history: &history,
            label: Some(run.trim_end_matches(".trec").to_owned()),
            created_at: at.into(),
            tool_version: "test".into(),
            git_revision: None,
            chunk_size: None,
            chunk_overlap: None,
            compare: None,
            fail_on_regression: false,
            seed: veredicto_core::compare::DEFAULT_SEED,
        }),
        drafts: Vec::new(),
        events: veredicto_app::Events::silent(),
    })
    .unwrap();
}

#[test]
fn the_runs_are_grouped_by_golden_set_and_policy_with_their_trend() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rack = workspace().join("examples/rack/golden.jsonl");
    let half = d.join("half.jsonl");
    let text = std::fs::read_to_string(&rack).unwrap();
    std::fs::write(
        &half,
        text.lines()
            .take(6)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .unwrap();
    std::fs::write(d.join("golden.jsonl"), &text).unwrap();
    record(d, &rack, "run-stop.trec", "2026-01-01T10:00:00Z");
    record(d, &rack, "run-accept.trec", "2026-01-02T10:00:00Z");
    record(d, &half, "run-accept.trec", "2026-01-03T10:00:00Z");
    let history =
        veredicto_app::HistorySpec::default_at(d.join("history.sqlite").display().to_string());
    let page = veredicto_app::workbench::trends(&history, 0, 10, 20, 10_000).unwrap();
    assert_eq!(page.total_groups, 2);
    assert_eq!(page.runs_read, 3);
    // The group with the newest run first; runs oldest first within a group.
    assert_eq!(page.groups[0].total, 1);
    assert_eq!(page.groups[1].total, 2);
    let labels: Vec<_> = page.groups[1]
        .runs
        .iter()
        .map(|r| r.label.clone().unwrap())
        .collect();
    assert_eq!(labels, ["run-stop", "run-accept"]);
    // One per page: the second page holds the older configuration.
    let second = veredicto_app::workbench::trends(&history, 1, 1, 20, 10_000).unwrap();
    assert_eq!(second.groups, page.groups[1..]);
    let bound = veredicto_web::bind(
        "127.0.0.1",
        0,
        veredicto_web::Config {
            golden: d.join("golden.jsonl"),
            corpus: None,
            token: None,
            identity_header: None,
            documents: None,
            signals: None,
            clock: || "2026-01-04T00:00:00Z".to_owned(),
            history,
            audit: None,
            exam: None,
        },
    )
    .unwrap();
    let addr = bound.url()["http://".len()..]
        .trim_end_matches('/')
        .to_owned();
    std::thread::spawn(move || bound.serve());
    let (st, runs) = request(&addr, "GET", "/runs", &[], "");
    assert_eq!(st, 200);
    assert!(runs.contains("href=\"/runs/trends\""), "{runs}");
    let (st, trends) = request(&addr, "GET", "/runs/trends", &[], "");
    assert_eq!(st, 200, "{trends}");
    assert!(
        trends.contains(
            "id=\"trends-count\">Configurations (golden set and policy) 1–2 / 2 · 3 runs</p>"
        ),
        "{trends}"
    );
    assert_eq!(trends.matches("<section class=\"trend\"").count(), 2);
    assert_eq!(
        trends.matches("<svg class=\"spark\"").count(),
        4,
        "{trends}"
    );
    assert!(
        trends.contains("STOP") && trends.contains("ACCEPT"),
        "{trends}"
    );
    // The strict policy stays: no external asset, no inline script.
    assert!(!trends.contains("<script"), "{trends}");
    assert!(
        trends.contains("content-security-policy: default-src 'none'"),
        "{trends}"
    );
}
