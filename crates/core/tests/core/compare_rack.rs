//! The bundled example (`examples/rack/`, seed 000's Friday story) through `compare` and
//! `diagnose_runs`: the accept run stands for last week's green run and the stop run for
//! Friday's, after batch `2025-11-14-viajes`. Files are read with serde_json and a minimal
//! TREC reader here, since core does not depend on the formats crate.

use crate::compare_support as support;
use std::collections::BTreeMap;
use std::path::PathBuf;
use veredicto_core::case::{Case, Chunk, Corpus};
use veredicto_core::compare::{
    calibrate_noise, CompareOptions, DiagnoseOptions, Method, Pattern, RegressionReason,
};
use veredicto_core::history::RecordedRun;
use veredicto_core::policy::{DomainPolicy, Policy};
use veredicto_core::run::{Retrieved, Run};

/// The cross-run diagnosis with its sentences worded by the report layer, as the CLI writes it.
fn diagnose_runs(
    runs: &[RecordedRun],
    corpus: Option<&Corpus>,
    opts: &DiagnoseOptions,
) -> veredicto_core::compare::RunsDiagnosis {
    veredicto_report::findings::worded_runs(&veredicto_core::compare::diagnose_runs(
        runs, corpus, opts,
    ))
}

/// The comparison with its sentences worded by the report layer, as the CLI writes it.
fn compare(
    base: &RecordedRun,
    new: &RecordedRun,
    opts: &CompareOptions<'_>,
) -> veredicto_core::compare::Comparison {
    veredicto_report::findings::worded_comparison(&veredicto_core::compare::compare(
        base, new, opts,
    ))
}

fn rack(file: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/rack")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn jsonl(file: &str) -> Vec<serde_json::Value> {
    rack(file)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

fn golden() -> Vec<Case> {
    jsonl("golden.jsonl")
        .into_iter()
        .map(|mut v| {
            v.as_object_mut()
                .unwrap()
                .entry("gold")
                .or_insert(false.into());
            serde_json::from_value(v).expect("case")
        })
        .collect()
}

fn corpus() -> Corpus {
    Corpus::new(jsonl("corpus.jsonl").into_iter().map(|mut v| {
        let o = v.as_object_mut().unwrap();
        o.entry("labels").or_insert(serde_json::json!([]));
        o.entry("facets").or_insert(serde_json::json!({}));
        serde_json::from_value::<Chunk>(v).expect("chunk")
    }))
}

/// TREC run: score descending (the example has no ties).
fn trec(file: &str) -> Run {
    let mut queries: BTreeMap<String, Vec<Retrieved>> = BTreeMap::new();
    for l in rack(file).lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = l.split_whitespace().collect();
        queries.entry(f[0].to_owned()).or_default().push(Retrieved {
            id: f[2].to_owned(),
            score: Some(f[4].parse().unwrap()),
        });
    }
    for list in queries.values_mut() {
        list.sort_by(|a, b| b.score.unwrap().total_cmp(&a.score.unwrap()));
    }
    Run {
        name: file.to_owned(),
        queries,
        ..Run::default()
    }
}

/// `policy.toml`, written out.
fn policy() -> Policy {
    let mut p = Policy {
        version: Some("rack-2025.11".into()),
        measures: vec!["nDCG@10".into(), "AP@10".into()],
        ..Policy::default()
    };
    p.domains.insert(
        "viajes".into(),
        DomainPolicy {
            noise_ceiling: Some(0.4),
            ..DomainPolicy::default()
        },
    );
    p
}

fn runs() -> (RecordedRun, RecordedRun, Corpus) {
    let mut sc = support::Scenario::new(golden());
    sc.policy = policy();
    sc.corpus = Some(corpus());
    for n in jsonl("notes.jsonl") {
        sc.notes.insert(
            n["id"].as_str().unwrap().into(),
            n["note"].as_str().unwrap().into(),
        );
    }
    let mut green = support::record(
        "r-green",
        "2025-11-07T18:00:00Z",
        &sc,
        &trec("run-accept.trec"),
    );
    // Last week's corpus did not hold Friday's batch yet (the example keeps one corpus file).
    green
        .report
        .batches
        .retain(|b| b.name != "2025-11-14-viajes");
    let friday = support::record(
        "r-friday",
        "2025-11-14T17:40:00Z",
        &sc,
        &trec("run-stop.trec"),
    );
    (green, friday, sc.corpus.unwrap())
}

#[test]
fn the_reports_are_the_documented_ones() {
    let (green, friday, _) = runs();
    assert_eq!(
        format!("{:.2}", friday.report.summary.mean_quality),
        "83.33"
    );
    assert_eq!(
        format!("{:.4}", friday.report.summary.mean_recall),
        "0.9306"
    );
    assert_eq!(green.report.summary.mean_quality, 100.0);
}

#[test]
fn friday_against_last_weeks_green_run() {
    let (green, friday, corpus) = runs();
    let c = compare(
        &green,
        &friday,
        &CompareOptions {
            corpus: Some(&corpus),
            ..CompareOptions::default()
        },
    );
    assert!(
        c.compatibility.comparable,
        "{:?}",
        c.compatibility.differences
    );
    assert_eq!(c.shared_cases, 12);
    assert_eq!(
        c.newly_failing,
        vec![
            "q-irpf-autonomos",
            "q-asuntos-propios",
            "q-viaje-internacional",
            "q-jornada-anual"
        ]
    );
    assert!(c.newly_passing.is_empty());
    assert_eq!(
        c.displaced,
        vec!["q-irpf-autonomos", "q-viaje-internacional"]
    );
    // Two gold cases fail now: a regression whatever the statistics say.
    assert!(c.regression);
    assert_eq!(
        c.regression_reasons,
        vec![
            RegressionReason::NewlyFailingGold {
                case: "q-irpf-autonomos".into()
            },
            RegressionReason::NewlyFailingGold {
                case: "q-asuntos-propios".into()
            },
        ]
    );
    // Mean recall 1 → 0.9306: only two cases moved, which no test can call more than
    // chance (exact sign-flip p = 2/4).
    let recall = &c.tests[0];
    assert_eq!((recall.method, recall.rearrangements), (Method::Exact, 4));
    assert_eq!(recall.p_value, 0.5);
    assert!(!recall.significant);
    assert_eq!(format!("{:.4}", recall.mean_difference), "-0.0694");
    // The Friday story: the old profile table went from rank 7 to 14, under the new batch.
    // The exam's diagnosis lists the first ten chunks above it (106 is the sixth).
    let v = c
        .cases
        .iter()
        .find(|d| d.id == "q-viaje-internacional")
        .unwrap();
    let d = &v.displaced[0];
    assert_eq!(
        (d.chunk.as_str(), d.base_rank, d.new_rank),
        ("silver_viajes_014", Some(7), Some(14))
    );
    assert_eq!((d.above_before, d.above_now), (Some(5), Some(12)));
    let by: Vec<(&str, usize, Option<&str>)> =
        d.by.iter()
            .map(|x| (x.id.as_str(), x.rank, x.ingest_batch.as_deref()))
            .collect();
    let new = Some("2025-11-14-viajes");
    assert_eq!(
        by,
        vec![
            ("silver_viajes_102", 2, new),
            ("silver_viajes_103", 3, new),
            ("silver_viajes_101", 4, new),
            ("silver_viajes_104", 5, new),
            ("gold_005", 6, Some("2025-09-01-inicial")),
            ("silver_viajes_106", 7, new),
            ("silver_viajes_010", 8, Some("2025-09-01-inicial")),
            ("silver_finanzas_140", 9, Some("2025-09-01-inicial")),
            ("silver_legal_050", 10, Some("2025-09-01-inicial")),
            ("silver_viajes_011", 11, Some("2025-09-01-inicial")),
        ]
    );
    // Fixing it: the reverse comparison has only improvements.
    let fixed = compare(&friday, &green, &CompareOptions::default());
    assert!(!fixed.regression);
    assert_eq!(fixed.newly_passing.len(), 4);
}

#[test]
fn the_patterns_of_friday() {
    let (green, friday, corpus) = runs();
    let d = diagnose_runs(
        &[green.clone(), friday],
        Some(&corpus),
        &DiagnoseOptions::default(),
    );
    assert_eq!(d.last_accepted.as_deref(), Some("r-green"));
    let pats: Vec<Pattern> = d.findings.iter().map(|f| f.pattern).collect();
    assert_eq!(
        pats,
        vec![
            Pattern::NumericFailing,
            Pattern::IngestionRegression,
            Pattern::DomainIngestionRegression,
            Pattern::NoiseHigh
        ]
    );
    let by = |p: Pattern| d.findings.iter().find(|f| f.pattern == p).unwrap();
    assert_eq!(
        by(Pattern::NumericFailing).cases,
        vec!["q-irpf-autonomos", "q-viaje-internacional"]
    );
    // The travel table was buried by its own domain's new batch…
    let dom = by(Pattern::DomainIngestionRegression);
    assert_eq!(dom.domain.as_deref(), Some("viajes"));
    assert_eq!(dom.cases, vec!["q-viaje-internacional"]);
    // What entered since the green run and outranks the table (gold_005, also above it, is
    // from the initial batch and is not listed).
    let entered: Vec<&str> = dom.entered.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        entered,
        vec![
            "silver_viajes_102",
            "silver_viajes_103",
            "silver_viajes_101",
            "silver_viajes_104",
            "silver_viajes_106"
        ]
    );
    assert!(dom
        .entered
        .iter()
        .all(|e| e.ingest_batch.as_deref() == Some("2025-11-14-viajes")
            && e.entered_since == Some(true)));
    // …while nothing entered `fiscal`, where the IRPF table (no description) fails.
    assert_eq!(
        by(Pattern::IngestionRegression).cases,
        vec!["q-irpf-autonomos"]
    );
    assert_eq!(
        by(Pattern::NoiseHigh).cases,
        vec!["q-asuntos-propios", "q-jornada-anual"]
    );

    // Noise calibration on the green run: every case at noise ≤ 3, p90 = 3 → 0.40.
    let cal = calibrate_noise(&green.report);
    assert_eq!(cal.overall.healthy_cases, 12);
    assert_eq!(
        (cal.overall.p50, cal.overall.p90, cal.overall.max),
        (Some(3), Some(3), Some(3))
    );
    assert_eq!(cal.overall.suggested_ceiling, Some(0.4));
}
