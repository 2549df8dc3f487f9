//! The calibrated policy file loads back as the calibrated policy, and the exam's text
//! reports explain structural noise, the uncalibrated defaults and an unknown gold label.

use std::collections::BTreeMap;
use std::path::Path;
use veredicto_core::case::Case;
use veredicto_core::exam::calibrate::{calibrate, Settings};
use veredicto_core::exam::{evaluate, ExamInput, ExamReport};
use veredicto_core::policy::{DomainPolicy, Policy};
use veredicto_core::run::{Retrieved, Run};
use veredicto_report::calibration::{policy_toml, render_human, render_json, Verdicts};

/// Cases `q0..` with `n` expected chunks each, ranked first among 10 results.
fn report(expected_counts: &[usize], policy: &Policy) -> ExamReport {
    let mut cases = Vec::new();
    let mut run = Run::default();
    for (i, &n) in expected_counts.iter().enumerate() {
        let id = format!("q{i}");
        let expected: Vec<String> = (0..n).map(|j| format!("c{i}_{j}")).collect();
        let list = (0..10)
            .map(|r| Retrieved {
                id: if r < n {
                    expected[r].clone()
                } else {
                    format!("x{i}_{r}")
                },
                score: Some(1.0 - r as f64 / 100.0),
            })
            .collect();
        run.queries.insert(id.clone(), list);
        cases.push(Case {
            id,
            query: format!("question {i}"),
            expected,
            grades: Default::default(),
            evidence: Vec::new(),
            top_k: None,
            domain: None,
            tags: vec![],
            gold: i == 0,
            query_vector: None,
            filters: None,
        });
    }
    evaluate(ExamInput {
        cases: &cases,
        run: &run,
        corpus: None,
        policy,
        notes: &BTreeMap::new(),
        as_of: None,
    })
}

#[test]
fn written_policy_loads_back_as_the_calibrated_policy() {
    let mut policy = Policy {
        version: Some("faq \"2025\"".into()),
        measures: vec!["nDCG@10".into()],
        ..Policy::default()
    };
    policy.domains.insert(
        "viajes y \"dietas\"".into(),
        DomainPolicy {
            top_k: Some(8),
            noise_ceiling: Some(0.4),
            ..Default::default()
        },
    );
    let r = report(&[3, 3, 3, 2, 2, 1], &policy);
    let c = calibrate(&r, Settings::default()).unwrap();
    let text = policy_toml(&c, &r.golden_fingerprint);
    let loaded =
        veredicto_formats::policy::parse_policy(Path::new("calibrated.toml"), &text).unwrap();
    assert_eq!(loaded, c.policy, "{text}");
    assert_eq!(loaded.noise_ceiling, 1.0);
    assert!(
        text.contains("# 90th percentile of noise / K 0.90 + one result in 10 (0.10), rounded up to 0.05 = noise_ceiling 1.00 (was 0.30)"),
        "{text}"
    );
    assert!(text.contains("its noise_ceiling 0.40 is removed"), "{text}");
    // Same calibration, same bytes.
    assert_eq!(text, policy_toml(&c, &r.golden_fingerprint));
}

#[test]
fn terminal_text_shows_distribution_suggestions_and_verdicts() {
    let r = report(&[3, 3, 3, 3, 3, 3, 3, 3, 3, 1], &Policy::default());
    let c = calibrate(&r, Settings::default()).unwrap();
    let text = render_human(
        &c,
        Some(Verdicts {
            before: veredicto_core::exam::Verdict::Stop,
            after: veredicto_core::exam::Verdict::Accept,
        }),
        Some("policy.toml"),
    );
    assert!(text.contains("healthy cases: 10 of 10"), "{text}");
    assert!(
        text.contains("    7  ############################## 9"),
        "{text}"
    );
    assert!(
        text.contains("90th percentile of noise / K 0.70 + one result in 10 (0.10), rounded up to 0.05 = noise_ceiling 0.80 (was 0.30)"),
        "{text}"
    );
    assert!(
        text.contains(
            "  q9: K = 10, 1 expected chunk: a perfect ranking leaves 9 below, ceiling 8 → top_k 5"
        ),
        "{text}"
    );
    assert!(text.contains("STOP with the examined policy, ACCEPT with the calibrated one"));
    let json: serde_json::Value = serde_json::from_str(&render_json(&c, None)).unwrap();
    assert_eq!(json["noise_ceiling"], 0.8);
    assert_eq!(json["suggestions"][0]["suggested_top_k"], 5);
}

#[test]
fn exam_reports_explain_structural_noise_once_and_flag_the_defaults() {
    let r = report(&[1, 3, 3, 3], &Policy::default());
    let human = veredicto_report::human::render(&r, false);
    assert!(
        human.contains("    diagnosis [noise] K = 10, 1 expected chunk at rank 1: the other 9 necessarily score below it (ceiling 3); lower this case's top_k to 1, or calibrate (veredicto calibrate)"),
        "{human}"
    );
    assert!(!human.contains("generic descriptions"), "{human}");
    assert_eq!(
        human.matches("not calibrated on this suite").count(),
        1,
        "{human}"
    );
    assert!(human.contains("docs/policy.md#the-quality-score-and-the-noise-rule"));
    let md = veredicto_report::markdown::render(&r);
    assert!(md.contains("not calibrated on this suite"), "{md}");
    assert!(md.contains("K = 10, 1 expected chunk at rank 1"), "{md}");
    let junit = veredicto_report::junit::render(&r);
    assert!(
        junit.contains("K = 10, 1 expected chunk at rank 1"),
        "{junit}"
    );
    // A calibrated policy: no note.
    let calibrated = Policy {
        noise_ceiling: 0.9,
        ..Policy::default()
    };
    let human = veredicto_report::human::render(&report(&[1, 3, 3, 3], &calibrated), false);
    assert!(!human.contains("not calibrated"), "{human}");
}

#[test]
fn unknown_gold_label_is_a_warning_in_text_and_json() {
    // No corpus and no case declared gold.
    // Case q0 of `report` is declared gold: no warning.
    assert!(report(&[3, 3], &Policy::default()).warnings.is_empty());
    let mut cases = Vec::new();
    let mut run = Run::default();
    run.queries.insert(
        "q".into(),
        vec![Retrieved {
            id: "a".into(),
            score: Some(1.0),
        }],
    );
    cases.push(Case {
        id: "q".into(),
        query: "question".into(),
        expected: vec!["a".into()],
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: None,
        domain: None,
        tags: vec![],
        gold: false,
        query_vector: None,
        filters: None,
    });
    let r = evaluate(ExamInput {
        cases: &cases,
        run: &run,
        corpus: None,
        policy: &Policy::default(),
        notes: &BTreeMap::new(),
        as_of: None,
    });
    let human = veredicto_report::human::render(&r, false);
    assert!(
        human.contains(
            "warning: gold cases cannot be told: the policy's gold label `SINTESIS_CURADA`"
        ),
        "{human}"
    );
    let md = veredicto_report::markdown::render(&r);
    assert!(md.contains("gold cases cannot be told"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&veredicto_report::json::render(&r)).unwrap();
    assert_eq!(json["warnings"][0]["kind"], "gold_unknown");
    assert_eq!(json["policy_calibrated"], false);
}

#[test]
fn a_one_chunk_suite_calibration_says_the_rule_can_fail_no_case() {
    let r = report(&[1; 30], &Policy::default());
    let c = calibrate(&r, Settings::default()).unwrap();
    assert_eq!(c.noise_ceiling, 1.0);
    let says = "noise rule not informative: with one expected chunk per case the noise rule cannot tell healthy from noisy cases: list the other relevant chunks of each case to make it informative";
    let text = render_human(&c, None, None);
    assert!(text.contains(says), "{text}");
    assert!(
        text.contains("the ceiling allows 10 of 10 results below the worst expected chunk; a case that passes recall has at most 9 below it"),
        "{text}"
    );
    // The policy file carries it as comments, on top and beside the key.
    let file = policy_toml(&c, &r.golden_fingerprint);
    assert!(file.contains(&format!("# {says}\n")), "{file}");
    assert!(
        file.contains("noise_ceiling = 1.0           # calibrated, but it can fail no case of this suite (see the note above)\n"),
        "{file}"
    );
    let loaded =
        veredicto_formats::policy::parse_policy(Path::new("calibrated.toml"), &file).unwrap();
    assert_eq!(loaded, c.policy);
    // JSON: a flag, the numbers and the reason.
    let json: serde_json::Value = serde_json::from_str(&render_json(&c, None)).unwrap();
    assert_eq!(json["noise_rule_informative"], false);
    assert_eq!(
        json["noise_rule"]["uninformative"],
        "one_expected_chunk_per_case"
    );
    assert_eq!(json["noise_rule"]["cases_it_cannot_fail"], 30);
    assert!(json["noise_rule"]["reason"]
        .as_str()
        .unwrap()
        .starts_with("with one expected chunk per case"));
    // A suite the ceiling can still fail: no such note, and the key's usual comment.
    let r = report(&[3, 3, 3, 3, 3, 3, 3, 3, 3, 1], &Policy::default());
    let c = calibrate(&r, Settings::default()).unwrap();
    assert!(c.noise_rule_informative);
    let text = render_human(&c, None, None);
    assert!(!text.contains("not informative"), "{text}");
    assert!(
        text.contains("noise rule: the calibrated ceiling can fail 1 of 10 cases while their recall passes; not the other 9"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&c, None)).unwrap();
    assert_eq!(json["noise_rule_informative"], true);
    assert!(json["noise_rule"].get("reason").is_none());
}

#[test]
fn exam_reports_say_the_uncalibrated_ceiling_decides_a_perfect_one_chunk_suite() {
    let r = report(&[1; 30], &Policy::default());
    let human = veredicto_report::human::render(&r, false);
    let verdict = human.split("verdict: STOP\n").nth(1).unwrap();
    let first = verdict.lines().next().unwrap();
    assert!(
        first.starts_with("  - structural_noise: the noise ceiling is not calibrated for this suite: 30 cases (1 gold) fail on noise alone that a perfect ranking would also have (K = 10, 1 expected chunk: a perfect ranking leaves 9 results below it, ceiling 3): q0, q1,"),
        "{human}"
    );
    assert!(!human.contains("gold_case_failed"), "{human}");
    assert!(human.contains("FAIL structural_noise"), "{human}");
    let md = veredicto_report::markdown::render(&r);
    assert!(
        md.contains("the noise ceiling is not calibrated for this suite"),
        "{md}"
    );
    let junit = veredicto_report::junit::render(&r);
    assert!(
        junit.contains("structural_noise: the noise ceiling is not calibrated"),
        "{junit}"
    );
    // A calibrated policy that still leaves one case structurally over: the K is named.
    let calibrated = Policy {
        noise_ceiling: 0.8,
        ..Policy::default()
    };
    let r = report(&[1, 3, 3, 3], &calibrated);
    let human = veredicto_report::human::render(&r, false);
    let lines: Vec<&str> = human
        .split("verdict: STOP\n")
        .nth(1)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("  - structural_noise: 1 gold case fails on noise alone that a perfect ranking would also have (K = 10, 1 expected chunk: a perfect ranking leaves 9 results below it, ceiling 8): q0; their K exceeds"),
        "{lines:?}"
    );
}
