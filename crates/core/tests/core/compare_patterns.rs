//! Cross-run diagnosis (SPEC §4, seed 000): each pattern triggers on a crafted history and
//! stays silent on a healthy one; noise calibration on a crafted run.

use crate::compare_support as support;
use support::{case, ranked, record, run_of, sane_chunk, Scenario};
use veredicto_core::case::Corpus;
use veredicto_core::compare::{
    calibrate_noise, DiagnoseOptions, Pattern, PatternFinding, RunsDiagnosis,
};
use veredicto_core::exam::Verdict;
use veredicto_core::history::RecordedRun;
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

const DOMAINS: [&str; 3] = ["fiscal", "laboral", "viajes"];

fn ids() -> Vec<String> {
    DOMAINS
        .iter()
        .flat_map(|d| (0..4).map(move |i| format!("{d}{i}")))
        .collect()
}

fn expected(id: &str) -> Vec<String> {
    (0..3).map(|j| format!("{id}_e{j}")).collect()
}

/// Twelve cases, four per domain. Case 0 of each domain is numeric (tagged in fiscal and
/// laboral; in viajes its first expected chunk is a pipe table in the corpus), case 1 is
/// gold. Every expected chunk is in the corpus, sane, from batch `2025-09-01-inicial`.
fn scenario() -> Scenario {
    let mut cases = Vec::new();
    let mut chunks = Vec::new();
    for d in DOMAINS {
        for i in 0..4 {
            let id = format!("{d}{i}");
            let e = expected(&id);
            let er: Vec<&str> = e.iter().map(String::as_str).collect();
            let tags: &[&str] = if i == 0 && d != "viajes" {
                &["numeric"]
            } else {
                &[]
            };
            cases.push(case(&id, &er, Some(d), tags, i == 1, 10));
            for x in &e {
                chunks.push(sane_chunk(x, d, "2025-09-01-inicial"));
            }
        }
    }
    if let Some(t) = chunks.iter_mut().find(|c| c.id == "viajes0_e0") {
        t.text = Some("| perfil | dieta |\n|---|---|\n| A | 53,34 |\n| B | 26,67 |".into());
    }
    for d in DOMAINS {
        for n in 1..=3 {
            chunks.push(sane_chunk(
                &format!("{d}_new_{n}"),
                d,
                &format!("2025-11-14-{d}"),
            ));
        }
    }
    let mut sc = Scenario::new(cases);
    sc.corpus = Some(Corpus::new(chunks));
    sc
}

/// Ranks 1, 7, 8 of 20, noise 2: passes.
fn healthy(id: &str) -> Vec<Retrieved> {
    let e = expected(id);
    ranked(id, 20, &[(&e[0], 1), (&e[1], 7), (&e[2], 8)], 10, Some(2))
}

/// Ranks 1, 7, 14 (recall 2/3): fails recall; `above` sit at ranks 2, 3, …
fn failing(id: &str, above: &[&str]) -> Vec<Retrieved> {
    let e = expected(id);
    let mut placed: Vec<(&str, usize)> = vec![(&e[0], 1), (&e[1], 7), (&e[2], 14)];
    placed.extend(above.iter().enumerate().map(|(i, a)| (*a, i + 2)));
    ranked(id, 20, &placed, 10, None)
}

/// Ranks 1, 2, 3 with falling scores: recall 1, noise 7 > 3.
fn noisy(id: &str) -> Vec<Retrieved> {
    let e = expected(id);
    ranked(id, 20, &[(&e[0], 1), (&e[1], 2), (&e[2], 3)], 10, None)
}

/// Ranks 1, 2, 7 with noise `n` (≤ 3: passes).
fn with_noise(id: &str, n: usize) -> Vec<Retrieved> {
    let e = expected(id);
    ranked(id, 20, &[(&e[0], 1), (&e[1], 2), (&e[2], 7)], 10, Some(n))
}

fn run(overrides: Vec<(&str, Vec<Retrieved>)>) -> Run {
    run_of(
        ids()
            .into_iter()
            .map(|id| {
                let list = overrides
                    .iter()
                    .find(|(o, _)| *o == id)
                    .map(|(_, l)| l.clone())
                    .unwrap_or_else(|| healthy(&id));
                (id, list)
            })
            .collect(),
    )
}

fn rec(i: usize, sc: &Scenario, run: &Run) -> RecordedRun {
    record(
        &format!("r{i:02}"),
        &format!("2025-10-{:02}T10:00:00Z", i + 1),
        sc,
        run,
    )
}

/// `n` healthy runs.
/// `n` healthy runs. Their corpus held only the initial batch then: the `2025-11-14-*`
/// chunks enter with the newest run.
fn healthy_history(sc: &Scenario, n: usize) -> Vec<RecordedRun> {
    (0..n)
        .map(|i| {
            let mut r = rec(i, sc, &run(vec![]));
            r.report.batches.retain(|b| b.name == "2025-09-01-inicial");
            r
        })
        .collect()
}

fn find(d: &RunsDiagnosis, p: Pattern) -> Option<&PatternFinding> {
    d.findings.iter().find(|f| f.pattern == p)
}

fn patterns(d: &RunsDiagnosis) -> Vec<Pattern> {
    d.findings.iter().map(|f| f.pattern).collect()
}

#[test]
fn a_healthy_history_has_no_finding() {
    let sc = scenario();
    let mut runs = healthy_history(&sc, 7);
    // Small harmless movement in one run: a rank changes inside the top-K.
    let e = expected("fiscal2");
    runs.push(rec(
        7,
        &sc,
        &run(vec![(
            "fiscal2",
            ranked(
                "fiscal2",
                20,
                &[(&e[0], 1), (&e[1], 7), (&e[2], 9)],
                10,
                Some(1),
            ),
        )]),
    ));
    runs.push(rec(8, &sc, &run(vec![])));
    assert!(runs.iter().all(|r| r.report.verdict == Verdict::Accept));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
    assert_eq!(d.last_accepted.as_deref(), Some("r07"));
    assert_eq!(d.trends.len(), 3);
    assert!(d.trends.iter().all(|t| !t.significant));
    assert!(d.notes.is_empty(), "{:?}", d.notes);
    // Without a corpus, too.
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    assert!(d.findings.is_empty(), "{:#?}", d.findings);
}

#[test]
fn a_whole_domain_failing() {
    let sc = scenario();
    let mut runs = healthy_history(&sc, 3);
    let viajes = |i| {
        rec(
            i,
            &sc,
            &run((0..4)
                .map(|k| {
                    (
                        ["viajes0", "viajes1", "viajes2", "viajes3"][k],
                        failing(&format!("viajes{k}"), &[]),
                    )
                })
                .collect()),
        )
    };
    runs.push(viajes(3));
    runs.push(viajes(4));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    let f = find(&d, Pattern::DomainFailing).expect("domain pattern");
    assert_eq!(f.domain.as_deref(), Some("viajes"));
    assert_eq!(f.cases, vec!["viajes0", "viajes1", "viajes2", "viajes3"]);
    assert_eq!(f.runs, 2, "seen in the last two runs");
    assert!(f.saw.starts_with("4 of 4 cases of domain `viajes` fail recall (100%), against 0 of 8 cases elsewhere (0%)"), "{}", f.saw);
    assert!(f
        .cause
        .contains("ingestion or classification of domain `viajes`"));
    assert!(
        (f.evidence["fisher_p"] - 1.0 / 495.0).abs() < 1e-12,
        "1 / C(12, 4)"
    );
    assert!(find(&d, Pattern::NumericFailing).is_none());
    assert!(find(&d, Pattern::GoldFailing).is_none());
    // Two failing domains: neither is "a domain failing while the others pass".
    let mut both: Vec<(&str, Vec<Retrieved>)> = Vec::new();
    for k in [
        "viajes0", "viajes1", "viajes2", "viajes3", "fiscal0", "fiscal1", "fiscal2", "fiscal3",
    ] {
        both.push((k, failing(k, &[])));
    }
    runs.push(rec(5, &sc, &run(both)));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert!(find(&d, Pattern::DomainFailing).is_none());
}

#[test]
fn only_numeric_cases_failing() {
    let sc = scenario();
    let mut runs = healthy_history(&sc, 3);
    // viajes0 is numeric only through its table chunk in the corpus.
    runs.push(rec(
        3,
        &sc,
        &run(vec![
            ("fiscal0", failing("fiscal0", &[])),
            ("laboral0", failing("laboral0", &[])),
            ("viajes0", failing("viajes0", &[])),
        ]),
    ));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    let f = find(&d, Pattern::NumericFailing).expect("numeric pattern");
    assert_eq!(f.cases, vec!["fiscal0", "laboral0", "viajes0"]);
    assert!(f
        .cause
        .contains("chunking of tables or missing descriptions"));
    assert!(
        f.saw
            .starts_with("3 of the 3 cases failing recall are numeric/table (100%)"),
        "{}",
        f.saw
    );
    assert!(find(&d, Pattern::DomainFailing).is_none());
    assert!(find(&d, Pattern::GoldFailing).is_none());
    // Without the corpus viajes0 is not known to be a table case, and 2 of 3 is below 80%.
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    assert!(find(&d, Pattern::NumericFailing).is_none());
}

#[test]
fn only_gold_cases_failing() {
    let sc = scenario();
    let mut runs = healthy_history(&sc, 3);
    runs.push(rec(
        3,
        &sc,
        &run(vec![
            ("fiscal1", failing("fiscal1", &[])),
            ("laboral1", failing("laboral1", &[])),
            ("viajes1", failing("viajes1", &[])),
        ]),
    ));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    let f = find(&d, Pattern::GoldFailing).expect("gold pattern");
    assert_eq!(f.cases, vec!["fiscal1", "laboral1", "viajes1"]);
    assert!(f.cause.contains("`SINTESIS_CURADA` label"), "{}", f.cause);
    assert!(find(&d, Pattern::NumericFailing).is_none());
    // One gold failure is not a pattern (fewer than 2 failing).
    let mut runs = healthy_history(&sc, 3);
    runs.push(rec(
        3,
        &sc,
        &run(vec![("fiscal1", failing("fiscal1", &[]))]),
    ));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert!(find(&d, Pattern::GoldFailing).is_none());
}

/// With a declared boost, the only-gold-failing pattern points at the boost's calibration.
#[test]
fn only_gold_cases_failing_under_a_declared_boost_points_at_the_boost() {
    let sc = scenario();
    let mut runs = healthy_history(&sc, 3);
    let mut last = rec(
        3,
        &sc,
        &run(vec![
            ("fiscal1", failing("fiscal1", &[])),
            ("laboral1", failing("laboral1", &[])),
        ]),
    );
    last.report.policy.boost = Some(veredicto_core::boost::BoostPolicy {
        rules: vec![veredicto_core::boost::BoostRule {
            label: Some("SINTESIS_CURADA".into()),
            factor: Some(1.1),
            ..Default::default()
        }],
    });
    runs.push(last);
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    let f = find(&d, Pattern::GoldFailing).expect("gold pattern");
    assert!(f.cause.contains("calibrate the boost"), "{}", f.cause);
    assert!(f.cause.contains("1 rule"), "{}", f.cause);
}

#[test]
fn regression_by_the_latest_ingestion_in_another_domain() {
    let sc = scenario();
    let mut runs = healthy_history(&sc, 3);
    // New fiscal chunks bury a laboral case's chunk; laboral itself received nothing.
    runs.push(rec(
        3,
        &sc,
        &run(vec![(
            "laboral2",
            failing("laboral2", &["fiscal_new_1", "fiscal_new_2"]),
        )]),
    ));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert_eq!(d.last_accepted.as_deref(), Some("r02"));
    let f = find(&d, Pattern::IngestionRegression).expect("regression pattern");
    assert_eq!(f.cases, vec!["laboral2"]);
    type Row<'a> = (
        &'a str,
        &'a str,
        usize,
        Option<&'a str>,
        Option<&'a str>,
        Option<bool>,
    );
    let entered: Vec<Row> = f
        .entered
        .iter()
        .map(|e| {
            (
                e.case.as_str(),
                e.id.as_str(),
                e.rank,
                e.ingest_batch.as_deref(),
                e.domain.as_deref(),
                e.entered_since,
            )
        })
        .collect();
    assert_eq!(
        entered,
        vec![
            (
                "laboral2",
                "fiscal_new_1",
                2,
                Some("2025-11-14-fiscal"),
                Some("fiscal"),
                Some(true)
            ),
            (
                "laboral2",
                "fiscal_new_2",
                3,
                Some("2025-11-14-fiscal"),
                Some("fiscal"),
                Some(true)
            ),
        ]
    );
    assert!(f.saw.contains("passed in the last accepted run r02 (2025-10-03T10:00:00Z) and fail now with no new chunk in their domain: laboral2"), "{}", f.saw);
    assert!(
        f.saw.contains(
            "2 chunk(s) of batch `2025-11-14-fiscal`: fiscal_new_1 (rank 2) above laboral2_e2 in laboral2, fiscal_new_2 (rank 3) above laboral2_e2 in laboral2"
        ),
        "{}",
        f.saw
    );
    assert!(f.cause.starts_with("regression by the latest ingestion"));
    assert!(find(&d, Pattern::DomainIngestionRegression).is_none());
    // A case that already failed in the last accepted run is not a regression.
    let mut runs2 = healthy_history(&sc, 2);
    let mut with_failure = rec(2, &sc, &run(vec![("laboral2", failing("laboral2", &[]))]));
    with_failure.report.verdict = Verdict::Accept; // tolerated, say
    runs2.push(with_failure);
    runs2.push(rec(
        3,
        &sc,
        &run(vec![("laboral2", failing("laboral2", &["fiscal_new_1"]))]),
    ));
    let d = diagnose_runs(&runs2, sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert!(find(&d, Pattern::IngestionRegression).is_none());
    // No accepted run before the newest: not checked, and said so.
    let d = diagnose_runs(&runs[3..], sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert!(find(&d, Pattern::IngestionRegression).is_none());
    assert!(d.notes.iter().any(|n| n.contains("no accepted run")));
}

#[test]
fn regression_after_an_ingestion_into_the_cases_own_domain() {
    // The Friday story: the new travel procedure buries the old travel table.
    let sc = scenario();
    let mut runs = healthy_history(&sc, 3);
    runs.push(rec(
        3,
        &sc,
        &run(vec![(
            "viajes2",
            failing("viajes2", &["viajes_new_1", "viajes_new_2", "viajes_new_3"]),
        )]),
    ));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    let f = find(&d, Pattern::DomainIngestionRegression).expect("domain regression");
    assert_eq!(f.domain.as_deref(), Some("viajes"));
    assert_eq!(f.cases, vec!["viajes2"]);
    assert_eq!(f.entered.len(), 3);
    assert!(
        f.saw
            .contains("new chunks entered that domain (viajes_new_1, viajes_new_2, viajes_new_3)"),
        "{}",
        f.saw
    );
    assert!(find(&d, Pattern::IngestionRegression).is_none());
    // Without a corpus the domain cannot be checked: listed as an ingestion regression,
    // with the batches the exam's diagnosis recorded.
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    let f = find(&d, Pattern::IngestionRegression).expect("regression pattern");
    assert_eq!(f.entered.len(), 3);
    assert!(f
        .entered
        .iter()
        .all(|e| e.entered_since == Some(true) && e.domain.is_none()));
    assert!(d.notes.iter().any(|n| n.contains("without a corpus")));
}

#[test]
fn a_new_batch_is_told_by_the_batch_records_not_by_its_name() {
    // A batch named without a date (`viernes`), recorded by the index with its time.
    let sc = scenario();
    let mut chunks: Vec<_> = sc.corpus.as_ref().unwrap().iter().cloned().collect();
    for c in chunks
        .iter_mut()
        .filter(|c| c.id.starts_with("viajes_new_"))
    {
        c.ingest_batch = Some("viernes".into());
    }
    let times = std::collections::BTreeMap::from([
        (
            "2025-09-01-inicial".to_owned(),
            "2025-09-01T08:00:00Z".to_owned(),
        ),
        ("viernes".to_owned(), "2025-11-14T17:20:00Z".to_owned()),
    ]);
    let sc = Scenario {
        corpus: Some(Corpus::new(chunks).with_batch_times(times)),
        ..sc
    };
    let newest = |sc: &Scenario| {
        rec(
            3,
            sc,
            &run(vec![(
                "viajes2",
                failing("viajes2", &["viajes_new_1", "viajes_new_2"]),
            )]),
        )
    };
    // 1. The accepted run's own batch list: `viernes` is not in it, so it is new, whatever
    //    the clock said when it was ingested.
    let mut runs = healthy_history(&sc, 3);
    runs.push(newest(&sc));
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    let f = find(&d, Pattern::IngestionRegression).expect("regression pattern");
    assert!(f.entered.iter().all(|e| e.entered_since == Some(true)
        && e.ingest_batch.as_deref() == Some("viernes")
        && e.ingested_at.as_deref() == Some("2025-11-14T17:20:00Z")));
    assert!(
        f.saw.contains("2 chunk(s) of batch `viernes` ingested 2025-11-14 17:20: viajes_new_1 (rank 2) above viajes2_e2 in viajes2"),
        "{}",
        f.saw
    );
    // 2. Runs recorded without a batch list: the batch's recorded time against the
    //    accepted run's time (2025-10-03) decides.
    let mut runs = healthy_history(&sc, 3);
    for r in &mut runs {
        r.report.batches.clear();
    }
    runs.push(newest(&sc));
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    let f = find(&d, Pattern::IngestionRegression).expect("regression pattern");
    assert_eq!(f.entered.len(), 2);
    assert!(f.entered.iter().all(|e| e.entered_since == Some(true)));
    // 3. A batch the accepted run already read is old, even with a later-looking name.
    let mut runs = healthy_history(&sc, 3);
    for r in &mut runs {
        r.report.batches.push(veredicto_core::exam::CorpusBatch {
            name: "viernes".into(),
            ingested_at: None,
            chunks: 3,
        });
    }
    runs.push(newest(&sc));
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    let f = find(&d, Pattern::IngestionRegression).expect("regression pattern");
    // Only the outrankers of unknown batch are left.
    assert!(
        f.entered.iter().all(|e| e.ingest_batch.is_none()),
        "{:?}",
        f.entered
    );
    assert!(!f.saw.contains("viernes"), "{}", f.saw);
}

#[test]
fn a_slow_generalised_decline() {
    let sc = scenario();
    // Run i has i cases with one expected chunk buried: mean recall falls by 1/36 per run.
    let order = [
        "fiscal3", "laboral3", "viajes3", "fiscal2", "laboral2", "viajes2", "laboral1",
    ];
    let runs: Vec<RecordedRun> = (0..8)
        .map(|i| {
            rec(
                i,
                &sc,
                &run(order[..i]
                    .iter()
                    .map(|id| (*id, failing(id, &[])))
                    .collect()),
            )
        })
        .collect();
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    let f = find(&d, Pattern::SlowDecline).expect("slow decline");
    assert_eq!(f.runs, 8);
    assert_eq!(f.cases.len(), 7);
    assert!(f.cause.contains("stale"));
    let recall = d.trends.iter().find(|t| t.metric == "mean_recall").unwrap();
    assert!(recall.significant);
    assert!((recall.slope + 1.0 / 36.0).abs() < 1e-12);
    assert_eq!(recall.p_value, 1.0 / 40320.0);
    assert_eq!(recall.p_adjusted, 2.0 / 40320.0);
    assert_eq!(recall.moving_cases, 7);
    assert!(
        f.saw.contains("mean_recall 1.0000 → 0.8056 over 8 runs"),
        "{}",
        f.saw
    );
    // The same total drop in one step is not a slow decline.
    let mut step: Vec<RecordedRun> = (0..7).map(|i| rec(i, &sc, &run(vec![]))).collect();
    step.push(rec(
        7,
        &sc,
        &run(order.iter().map(|id| (*id, failing(id, &[]))).collect()),
    ));
    let d = diagnose_runs(&step, sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert!(
        find(&d, Pattern::SlowDecline).is_none(),
        "{:#?}",
        d.findings
    );
    assert!(
        find(&d, Pattern::IngestionRegression).is_some(),
        "a step is a regression"
    );
    // Too few runs: no trend, and said so.
    let d = diagnose_runs(&runs[..4], sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert!(d.trends.is_empty());
    assert!(d
        .notes
        .iter()
        .any(|n| n.contains("trends need at least 5 runs")));
}

#[test]
fn recall_green_but_noise_high() {
    let sc = scenario();
    let mut runs = healthy_history(&sc, 3);
    runs.push(rec(
        3,
        &sc,
        &run(vec![
            ("fiscal2", noisy("fiscal2")),
            ("laboral3", noisy("laboral3")),
        ]),
    ));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    let f = find(&d, Pattern::NoiseHigh).expect("noise pattern");
    assert_eq!(f.cases, vec!["fiscal2", "laboral3"]);
    assert!(f.saw.starts_with("2 of 12 cases that pass recall exceed the noise ceiling (17%): fiscal2 (noise 7 > 3 of K 10)"), "{}", f.saw);
    assert!(f
        .cause
        .contains("generic descriptions, mixed chunks or loose facets"));
    // Failing on noise alone is not a regression by ingestion (nothing was buried).
    assert!(find(&d, Pattern::IngestionRegression).is_none());
    assert!(find(&d, Pattern::DomainIngestionRegression).is_none());
    // A single noisy case is below the pattern's threshold.
    let mut runs = healthy_history(&sc, 3);
    runs.push(rec(3, &sc, &run(vec![("fiscal2", noisy("fiscal2"))])));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert!(find(&d, Pattern::NoiseHigh).is_none());
}

#[test]
fn mean_noise_rising_under_the_ceiling() {
    let sc = scenario();
    // Every case passes; run i has i cases whose noise went from 2 to 3.
    let ids = ids();
    let runs: Vec<RecordedRun> = (0..8)
        .map(|i| {
            rec(
                i,
                &sc,
                &run(ids[..i]
                    .iter()
                    .map(|id| (id.as_str(), with_noise(id, 3)))
                    .collect()),
            )
        })
        .collect();
    assert!(runs.iter().all(|r| r.report.verdict == Verdict::Accept));
    let d = diagnose_runs(&runs, sc.corpus.as_ref(), &DiagnoseOptions::default());
    assert_eq!(patterns(&d), vec![Pattern::NoiseHigh]);
    let f = &d.findings[0];
    assert!(f.saw.starts_with("mean noise rising"), "{}", f.saw);
    assert_eq!(f.runs, 8);
}

#[test]
fn empty_histories_do_not_panic() {
    let d = diagnose_runs(&[], None, &DiagnoseOptions::default());
    assert!(d.findings.is_empty() && d.run.is_none());
    let empty = Scenario::new(vec![]);
    let runs: Vec<RecordedRun> = (0..6).map(|i| rec(i, &empty, &run_of(vec![]))).collect();
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    assert!(d.findings.is_empty());
    assert!(d
        .noise
        .as_ref()
        .unwrap()
        .overall
        .suggested_ceiling
        .is_none());
    let silly = DiagnoseOptions {
        trend_window: 0,
        min_trend_runs: 0,
        permutations: 0,
        alpha: f64::NAN,
        ..DiagnoseOptions::default()
    };
    let sc = scenario();
    let d = diagnose_runs(&healthy_history(&sc, 3), None, &silly);
    assert!(d.findings.is_empty());
}

#[test]
fn noise_calibration_from_the_healthy_cases() {
    let sc = scenario();
    // Noise of the twelve cases (all recall 1 except viajes3): the seed's "distribución de
    // ruido de las queries sanas".
    let noise = [0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 5];
    let ids = ids();
    let mut overrides: Vec<(&str, Vec<Retrieved>)> = ids[..11]
        .iter()
        .zip(noise)
        .map(|(id, n)| {
            let e = expected(id);
            (
                id.as_str(),
                ranked(id, 20, &[(&e[0], 1), (&e[1], 2), (&e[2], 3)], 10, Some(n)),
            )
        })
        .collect();
    overrides.push(("viajes3", failing("viajes3", &[])));
    let r = rec(0, &sc, &run(overrides));
    let cal = calibrate_noise(&r.report);
    let o = &cal.overall;
    assert_eq!(o.healthy_cases, 11);
    assert_eq!(o.k, Some(10));
    assert_eq!(
        o.distribution
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect::<Vec<_>>(),
        vec![(0, 1), (1, 2), (2, 4), (3, 3), (5, 1)]
    );
    assert_eq!((o.p50, o.p90, o.max), (Some(2), Some(3), Some(5)));
    assert_eq!(o.p90_fraction, Some(0.3));
    // (p90 + 1 result) / K = 0.4, already a multiple of 0.05.
    assert_eq!(o.suggested_ceiling, Some(0.4));
    assert_eq!(o.suggested_max_noise, Some(4));
    assert_eq!((o.over_current, o.over_suggested), (1, 1));
    assert!(!o.reliable);
    assert_eq!(cal.current_ceiling, 0.3);
    let viajes = &cal.domains["viajes"];
    // viajes0..2 have noise 3, 3, 5 (the last case fails recall and is not healthy).
    assert_eq!(viajes.healthy_cases, 3);
    assert_eq!((viajes.p90, viajes.max), (Some(5), Some(5)));
    assert_eq!(viajes.suggested_ceiling, Some(0.6));
}

/// The FAQ of the issue: 30 cases, each expecting one chunk `faq{i}`, examined live (no
/// corpus, no batches). Case i retrieves its chunk first, then the next FAQ chunks, which
/// other cases expect.
fn faq_scenario() -> Scenario {
    let cases = (0..30)
        .map(|i| {
            let e = format!("faq{i}");
            case(&format!("q{i}"), &[&e], None, &[], false, 3)
        })
        .collect();
    let mut sc = Scenario::new(cases);
    sc.policy.noise_ceiling = 1.0;
    sc
}

/// Case i's list: its own chunk first unless `deleted`, then the next FAQ chunks.
fn faq_run(deleted: &[usize]) -> Run {
    run_of(
        (0..30)
            .map(|i| {
                let ids: Vec<String> = (0..6)
                    .map(|j| format!("faq{}", (i + j) % 30))
                    .filter(|id| !deleted.iter().any(|d| *id == format!("faq{d}")))
                    .collect();
                let list = ids
                    .into_iter()
                    .enumerate()
                    .map(|(r, id)| Retrieved {
                        id,
                        score: Some(0.9 - r as f64 / 100.0),
                    })
                    .collect();
                (format!("q{i}"), list)
            })
            .collect(),
    )
}

#[test]
fn deleted_rows_are_not_read_as_an_ingestion_that_entered() {
    let sc = faq_scenario();
    let deleted: Vec<usize> = (0..10).map(|i| i * 3).collect();
    let accepted = record("r1", "2025-11-01T10:00:00Z", &sc, &faq_run(&[]));
    assert_eq!(accepted.report.verdict, Verdict::Accept);
    let newest = record("r2", "2025-11-14T10:00:00Z", &sc, &faq_run(&deleted));

    // 1. A retriever that cannot say which chunks it holds (HTTP): every chunk above the
    //    lost ones was retrieved by the accepted run, so none "entered".
    let runs = vec![accepted.clone(), newest.clone()];
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    let text = veredicto_report::comparison::diagnosis_human(&d);
    let f = find(&d, Pattern::IngestionRegression).expect("the regressed cases are listed");
    assert_eq!(f.cases.len(), 10);
    assert_eq!(f.entered.len(), 30, "three chunks above each lost one");
    assert!(f
        .entered
        .iter()
        .all(|e| e.entered_since == Some(false) && e.in_accepted_run.is_some()));
    assert!(
        !text.contains("entered since the last accepted run and outranks"),
        "{text}"
    );
    assert!(
        !text.contains("regression by the latest ingestion"),
        "{text}"
    );
    assert!(
        text.contains("faq1 (batch unknown) outranks faq0 of q0 at rank 1 now; it was already there: the accepted run retrieved it at rank 1 for q1"),
        "{text}"
    );
    assert!(
        f.cause.starts_with("no chunk is known to have entered since the last accepted run r1 (2025-11-01T10:00:00Z) (30 of the chunks above the expected ones were already retrieved by that run): before blaming an ingestion"),
        "{}",
        f.cause
    );

    // 2. A retriever that says which chunks it holds (pgvector): the lost chunks are not in
    //    the table; nothing entered, nothing buried them.
    let mut gone = newest.clone();
    for c in &mut gone.report.cases {
        let e = c.expected[0].id.clone();
        if c.expected[0].rank.is_none() {
            c.diagnosis = vec![veredicto_core::diagnosis::Finding::new(
                veredicto_core::diagnosis::Check::Corpus,
                Some(e),
                veredicto_core::diagnosis::DiagnosisFinding::NotInCollection {
                    collection: "table `faq`".into(),
                },
            )];
        }
    }
    let runs = vec![accepted.clone(), gone.clone()];
    let d = diagnose_runs(&runs, None, &DiagnoseOptions::default());
    assert!(
        find(&d, Pattern::IngestionRegression).is_none(),
        "{:?}",
        d.findings
    );
    let f = find(&d, Pattern::ChunksMissing).expect("missing chunks");
    assert_eq!(f.cases.len(), 10);
    let text = veredicto_report::comparison::diagnosis_human(&d);
    assert!(!text.contains("entered since"), "{text}");
    assert!(
        text.contains("[chunks_missing] 10 case(s) passed in the last accepted run r1 (2025-11-01T10:00:00Z) and fail now because the table `faq` no longer holds 10 of their expected chunks: q0, q3, q6"),
        "{text}"
    );
    assert!(
        text.contains("likely cause: expected chunks left the table `faq` since"),
        "{text}"
    );
    // The comparison says the same chunk by chunk.
    let c = veredicto_core::compare::compare(
        &accepted,
        &gone,
        &veredicto_core::compare::CompareOptions::default(),
    );
    let lines = veredicto_report::comparison::human(&c);
    assert!(
        lines.contains(
            "q0: faq0 fell from 1 to beyond the list: it is no longer in the table `faq`"
        ),
        "{lines}"
    );

    // 3. With the accepted run's chunk list: a chunk absent from it entered since.
    let mut newcomer = newest.clone();
    for c in &mut newcomer.report.cases {
        for o in c
            .diagnosis
            .iter_mut()
            .flat_map(|f| f.outranked_by.iter_mut())
        {
            if o.id == "faq1" {
                o.id = "faq_new".into();
            }
        }
    }
    let chunks: Vec<veredicto_core::case::Chunk> = (0..30)
        .map(|i| veredicto_core::case::Chunk {
            id: format!("faq{i}"),
            ..Default::default()
        })
        .collect();
    let snapshot = veredicto_core::snapshot::ChunkSnapshot::of(chunks.iter());
    let runs = vec![accepted, newcomer];
    let d = veredicto_report::findings::worded_runs(
        &veredicto_core::compare::diagnose_runs_with_chunks(
            &runs,
            None,
            Some(&snapshot),
            &DiagnoseOptions::default(),
        ),
    );
    let f = find(&d, Pattern::IngestionRegression).expect("regression");
    // A case with a known newcomer lists only that; the others what the accepted run saw.
    assert_eq!(
        f.entered
            .iter()
            .filter(|e| e.case == "q0")
            .map(|e| (e.id.as_str(), e.entered_since))
            .collect::<Vec<_>>(),
        vec![("faq_new", Some(true))],
        "known newcomers only"
    );
    assert!(f
        .entered
        .iter()
        .all(|e| (e.id == "faq_new") == (e.entered_since == Some(true))));
    let text = veredicto_report::comparison::diagnosis_human(&d);
    assert!(
        text.contains("faq_new (batch unknown) entered since the last accepted run and outranks faq0 of q0 at rank 1"),
        "{text}"
    );
}
