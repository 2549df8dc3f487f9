//! The worked examples of seeds 002 and 004, with their hand-checked numbers.

use std::path::{Path, PathBuf};
use veredicto_grounding::*;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/grounding")
        .join(name)
}

fn metrics(set: &CaseSet) -> Vec<AnswerMetrics> {
    let mut out = Vec::new();
    for case in &set.cases {
        for a in &case.answers {
            out.push(answer_metrics(case, a, &|id| {
                a.claims
                    .iter()
                    .find(|c| c.id == id)
                    .and_then(|c| effective_support(c, &[]))
            }));
        }
    }
    out
}

fn pct(v: Option<f64>) -> f64 {
    (v.expect("defined") * 1000.0).round() / 10.0
}

#[test]
fn seed_002_p7_answers_a_b_c() {
    let (set, _) = load_cases(&example("p7.yaml")).expect("valid");
    let m = metrics(&set);
    let got: Vec<(&str, f64, f64, f64)> = m
        .iter()
        .map(|m| {
            (
                m.answer.as_str(),
                pct(m.citation_presence),
                pct(m.support),
                pct(m.coverage),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("A", 100.0, 33.3, 33.3),
            ("B", 100.0, 100.0, 33.3),
            ("C", 100.0, 100.0, 100.0)
        ]
    );
    assert!(m.iter().all(|m| !m.abstention));
}

#[test]
fn seed_002_p7_document_recall() {
    let (set, _) = load_cases(&example("p7.yaml")).expect("valid");
    let case = &set.cases[0];
    assert_eq!(document_recall_at(case, 2), Some(0.0));
    assert_eq!(document_recall_at(case, 3), Some(0.5));
    assert_eq!(document_recall_at(case, 4), Some(1.0));
    // "At k = 3 half the documents but only a third of the three facts."
    let f = fact_coverage(case, &[2, 3, 4]);
    let got: Vec<(usize, Vec<&str>)> = f
        .iter()
        .map(|x| (x.k, x.facts.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        got,
        vec![(2, vec![]), (3, vec!["G1"]), (4, vec!["G1", "G2", "G3"])]
    );
    assert!((f[1].coverage - 1.0 / 3.0).abs() < 1e-12);
}

#[test]
fn seed_004_q017_claims_verdicts_and_reasons() {
    let (set, _) = load_cases(&example("q017.yaml")).expect("valid");
    let rows = build_sheet(&set, &[], &[]);
    let got: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r.claim_id.as_str(),
                r.association.as_str(),
                r.support.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("C-017-1", "attached", "unsupported"),
            ("C-017-2", "attached", "supported"),
            ("C-017-3", "attached", "unsupported"),
            ("C-017-4", "not_attached", "unsupported"),
            // The honest absence has its own row.
            ("U1", "", ""),
        ]
    );
    assert_eq!(rows[4].row, "absence");
    assert_eq!(rows[4].lacking, "cuánto tarda en completarse el reembolso");
    assert_eq!(rows[4].answer_id, "A-017");
    assert_eq!(rows[4].sources, vec!["D-02@refunds-v2"]);
    assert_eq!(rows[4].locations, vec!["/refunds"]);
    // Each cited passage's URL and anchor.
    assert_eq!(rows[0].locations, vec!["/returns#plazo-de-devolucion"]);
    assert_eq!(rows[2].locations, vec!["/refunds#inicio-del-reembolso"]);
    assert!(rows[0].support_reason.contains("excluye expresamente"));
    assert!(rows[2].support_reason.contains("llega al almacén"));
    assert_eq!(rows[0].sources, vec!["D-01@returns-v4#p04"]);
    assert_eq!(rows[0].positions, vec!["1"]);
    assert!(rows[0].passage_texts[0].starts_with("Los artículos comprados"));
    assert!(rows[3].citation_ids.is_empty());
    let m = &metrics(&set)[0];
    assert_eq!(
        (m.claims, m.with_citation, m.supported, m.facts_covered),
        (4, 3, 1, 1)
    );
    assert_eq!(pct(m.citation_presence), 75.0);
    assert_eq!(pct(m.support), 25.0);
    assert_eq!(pct(m.coverage), 33.3);
}

#[test]
fn abstention_has_undefined_support_and_zero_coverage() {
    let text = r#"
schema: veredicto-grounding/1
cases:
  - id: Q
    query: q
    snapshot: s
    sources: [{ id: D, version: v, passages: [{ id: p, text: t }] }]
    required_facts: [{ id: G, text: g }]
    answers: [{ id: A, text: "Las fuentes no lo indican." }]
"#;
    let set = parse_cases(Path::new("x.yaml"), text).expect("valid");
    let m = &metrics(&set)[0];
    assert!(m.abstention);
    assert_eq!(m.support, None);
    assert_eq!(m.citation_presence, None);
    assert_eq!(m.coverage, Some(0.0));
}

#[test]
fn claim_without_citation_has_support_zero_even_if_marked_supported() {
    assert!(!claim_supported(Some(Support::Supported), false));
    assert!(claim_supported(Some(Support::Supported), true));
    assert!(!claim_supported(Some(Support::PartiallySupported), true));
}

#[test]
fn bundled_schema_matches_docs() {
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grounding-schema.json"),
    )
    .expect("docs schema");
    assert_eq!(docs, CASE_SCHEMA_JSON);
    let v: serde_json::Value = serde_json::from_str(CASE_SCHEMA_JSON).expect("json");
    assert_eq!(v["properties"]["schema"]["const"], SCHEMA_VERSION);
}

#[test]
fn json_cases_load_like_yaml() {
    let (set, _) = load_cases(&example("p7.yaml")).expect("valid");
    let json = serde_json::to_string(&set).expect("ser");
    let back = parse_cases(Path::new("p7.json"), &json).expect("valid json");
    assert_eq!(back, set);
}

#[test]
fn impact_lists_only_claims_whose_cited_passage_text_changed() {
    let (set, _) = load_cases(&example("q017.yaml")).expect("valid");
    let new = load_sources(&example("q017-sources-v5.yaml")).expect("sources");
    let got = impact(&set, &new);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].claim, "C-017-3");
    assert_eq!(got[0].change, "passage text changed");
    assert_eq!(got[0].new_version.as_deref(), Some("refunds-v3"));
    // Same sources as the cases: nothing.
    let same = SourceSet {
        sources: set.cases[0].sources.clone(),
    };
    assert!(impact(&set, &same).is_empty());
    // A source removed touches both claims that cite it.
    let gone = SourceSet {
        sources: vec![set.cases[0].sources[1].clone()],
    };
    let claims: Vec<String> = impact(&set, &gone).into_iter().map(|i| i.claim).collect();
    assert_eq!(claims, vec!["C-017-1", "C-017-2"]);
}

/// SciFact dev (real data from `tests/data`; set `VEREDICTO_TEST_DATA` to point elsewhere).
#[test]
fn scifact_dev_converts_into_300_valid_cases() {
    let data = std::env::var_os("VEREDICTO_TEST_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data"));
    let dir = data.join("scifact/original");
    let set =
        scifact_cases(&dir.join("corpus.jsonl"), &dir.join("claims_dev.jsonl")).expect("convert");
    assert_eq!(set.cases.len(), 300);
    let json = serde_json::to_string(&set).expect("ser");
    let set = parse_cases(Path::new("scifact_dev.json"), &json).expect("valid cases");
    let m = metrics(&set);
    let claims: usize = m.iter().map(|m| m.claims).sum();
    let cited: usize = m.iter().map(|m| m.with_citation).sum();
    let supported: usize = m.iter().map(|m| m.supported).sum();
    let with_evidence = set
        .cases
        .iter()
        .filter(|c| !c.valid_sources.is_empty())
        .count();
    let contradicted = build_sheet(&set, &[], &[])
        .iter()
        .filter(|r| r.support_reason.starts_with("SciFact CONTRADICT"))
        .count();
    assert_eq!(
        (claims, cited, supported, with_evidence, contradicted),
        (300, 300, 124, 188, 64)
    );
    let sources: usize = set.cases.iter().map(|c| c.sources.len()).sum();
    // 340 cited ids, one listed twice: 339 (claim, abstract) pairs over 283 distinct abstracts.
    assert_eq!(sources, 339);
    let distinct: std::collections::BTreeSet<&str> = set
        .cases
        .iter()
        .flat_map(|c| c.sources.iter().map(|s| s.id.as_str()))
        .collect();
    assert_eq!(distinct.len(), 283);
}

#[test]
fn cohen_kappa_hand_checked() {
    use Support::*;
    // p_o = 3/4; marginals first {S 2, U 2}, second {S 3, U 1}: p_e = (2·3 + 2·1)/16 = 1/2;
    // κ = (3/4 − 1/2) / (1 − 1/2) = 1/2.
    let a = cohen_kappa(&[
        (Supported, Supported),
        (Supported, Supported),
        (Unsupported, Unsupported),
        (Unsupported, Supported),
    ]);
    assert_eq!(a.observed, Some(0.75));
    assert_eq!(a.expected, Some(0.5));
    assert_eq!(a.kappa, Some(0.5));
    assert_eq!(a.matrix[2][0], 1);
    assert_eq!(cohen_kappa(&[]).kappa, None);
    assert_eq!(
        cohen_kappa(&[(Supported, Supported)]).kappa,
        None,
        "p_e = 1: undefined"
    );
}

#[test]
fn html_sheet_escapes_text() {
    let (mut set, _) = load_cases(&example("q017.yaml")).expect("valid");
    set.cases[0].answers[0].claims[0].text = "<script>alert(1)</script> & co".into();
    let html = to_html(&build_sheet(&set, &[], &[]));
    assert!(!html.contains("<script>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"));
    assert!(html.contains("<td class=\"unsupported\">unsupported</td>"));
}

#[test]
fn compare_pairs_compatible_cases_and_declares_the_rest() {
    let (base, _) = load_cases(&example("q017.yaml")).expect("valid");
    let (new, _) = load_cases(&example("q017-replay.yaml")).expect("valid");
    let c = compare(&base, &[], &new, &[]);
    assert!(c.not_compared.is_empty());
    assert_eq!(c.compared.len(), 1);
    assert_eq!(
        (c.compared[0].base.supported, c.compared[0].new.supported),
        (1, 3)
    );
    assert_eq!(c.compared[0].claims_only_in_base.len(), 4);

    // Same claim IDs with a changed verdict.
    let mut changed = base.clone();
    changed.cases[0].answers[0].claims[1].support = Some(SupportVerdict {
        verdict: Support::PartiallySupported,
        reason: "scope".into(),
    });
    let c = compare(&base, &[], &changed, &[]);
    assert_eq!(
        c.compared[0].verdict_changes,
        vec!["C-017-2: supported -> partially_supported"]
    );

    // Incompatible: snapshot, query or passage text changed; cases on one side only.
    let mut other = base.clone();
    other.cases[0].snapshot = "shop-docs-v2".into();
    let c = compare(&base, &[], &other, &[]);
    assert!(c.compared.is_empty());
    assert_eq!(
        c.not_compared[0].reason,
        "snapshot differs: shop-docs-example vs shop-docs-v2"
    );
    let mut other = base.clone();
    other.cases[0].sources[1].passages[0].text = Some("otro texto".into());
    let c = compare(&base, &[], &other, &[]);
    assert_eq!(
        c.not_compared[0].reason,
        "resolved passage text differs: D-02#p07"
    );
    let mut other = base.clone();
    other.cases[0].id = "Q-018".into();
    let reasons: Vec<String> = compare(&base, &[], &other, &[])
        .not_compared
        .into_iter()
        .map(|n| format!("{} {}", n.case, n.reason))
        .collect();
    assert_eq!(
        reasons,
        vec!["Q-017 case only in base", "Q-018 case only in new"]
    );
}

#[test]
fn seed_004_q017_absence_is_a_result() {
    let (set, _) = load_cases(&example("q017.yaml")).expect("valid");
    let a = absences(&set);
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].case.as_str(), a[0].id.as_str(), a[0].lacking.as_str()),
        ("Q-017", "U1", "cuánto tarda en completarse el reembolso")
    );
    assert!(a[0].asked.starts_with("¿Puedo devolver"));
    assert_eq!(a[0].sources, vec!["D-02@refunds-v2"]);
    assert_eq!(a[0].answers, vec!["A-017"]);
    // A plain text entry still reads, as `U<n>` with any source.
    let text = std::fs::read_to_string(example("q017.yaml"))
        .unwrap()
        .replace(
            "{ id: U1, text: \"cuánto tarda en completarse el reembolso\", sources: [D-02] }",
            "\"cuánto tarda en completarse el reembolso\"",
        );
    let plain = parse_cases(Path::new("q.yaml"), &text).expect("valid");
    let a = absences(&plain);
    assert_eq!((a[0].id.as_str(), a[0].sources.len()), ("U1", 0));
}

#[test]
fn seed_004_impact_reopens_the_absence_when_refunds_changes() {
    let (set, _) = load_cases(&example("q017.yaml")).expect("valid");
    let v5 = load_sources(&example("q017-sources-v5.yaml")).expect("sources");
    let r = reopened_absences(&set, &v5);
    // D-01 changed version too, but the absence names D-02 only.
    assert_eq!(r.len(), 1);
    assert_eq!(
        (
            r[0].absence.as_str(),
            r[0].source.as_str(),
            r[0].old_version.as_str(),
            r[0].new_version.as_str(),
            r[0].change.as_str()
        ),
        (
            "U1",
            "D-02",
            "refunds-v2",
            "refunds-v3",
            "new version, passages changed"
        )
    );
    // Unchanged sources reopen nothing.
    let same = SourceSet {
        sources: set.cases[0].sources.clone(),
    };
    assert!(reopened_absences(&set, &same).is_empty());
}

#[test]
fn seed_004_replay_declares_what_changed() {
    let (base, _) = load_cases(&example("q017.yaml")).expect("valid");
    let (new, _) = load_cases(&example("q017-replay.yaml")).expect("valid");
    let c = compare(&base, &[], &new, &[]);
    let x = &c.compared[0];
    assert_eq!(
        x.configuration_changes,
        vec![
            "prompt version changed: answer-v3 → answer-v4-bounded",
            "generation model changed: example-llm-2026-05 → example-llm-2026-07",
            "application revision changed: shop-app@4f2c1a0 → shop-app@9b7e3d2",
        ]
    );
    assert_eq!(
        x.absences_base,
        vec!["U1: cuánto tarda en completarse el reembolso"]
    );
    assert_eq!(x.absences_new, x.absences_base);
    assert!(x.absence_changes.is_empty());
    // A configuration only on one side.
    let mut bare = base.clone();
    bare.cases[0].configuration = None;
    let c = compare(&bare, &[], &new, &[]);
    assert!(c.compared[0]
        .configuration_changes
        .contains(&"generation model set: example-llm-2026-07".to_string()));
}

#[test]
fn seed_002_fact_coverage_of_the_retrieved_list() {
    // Q-017: F1 and F2 are in D-01 p04 (position 1), F3 in D-02 p07 (position 2).
    let (set, _) = load_cases(&example("q017.yaml")).expect("valid");
    let f = fact_coverage(&set.cases[0], &[1, 2]);
    assert_eq!(f[0].facts, vec!["F1", "F2"]);
    assert_eq!((f[0].required, f[0].located), (3, 3));
    assert!((f[0].coverage - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(f[1].facts, vec!["F1", "F2", "F3"]);
    assert_eq!(f[1].coverage, 1.0);
    // No location given: nothing to say.
    let mut bare = set.cases[0].clone();
    for x in &mut bare.required_facts {
        x.found_in.clear();
    }
    assert!(fact_coverage(&bare, &[1, 2]).is_empty());
}

#[test]
fn seed_004_package_carries_the_configuration_and_the_absence() {
    let path = example("q017-replay.yaml");
    let (set, bytes) = load_cases(&path).expect("valid");
    let files = build_package(&PackageInputs {
        cases_name: "q017-replay.yaml",
        cases_bytes: &bytes,
        set: &set,
        reviews_bytes: None,
        reviews: &[],
        relevance: &[],
        citation_marks: &[],
        relevance_suggestions: &[],
        suggestions_bytes: None,
        suggestions: &[],
        run: None,
        notes: None,
        tool_version: "test",
        created: None,
        comparison: None,
    })
    .expect("package");
    let version: serde_json::Value = serde_json::from_slice(&files["version.json"]).unwrap();
    let conf = &version["configurations"][0];
    assert_eq!(conf["case"], "Q-017");
    assert_eq!(conf["configuration"]["model"], "example-llm-2026-07");
    assert_eq!(conf["configuration"]["locale"], "es-ES");
    assert!(conf["configuration"]["passage_hashes"]["D-02#p07"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
    let metrics: serde_json::Value = serde_json::from_slice(&files["metrics.json"]).unwrap();
    assert_eq!(metrics[0]["absences"][0]["id"], "U1");
    assert_eq!(
        metrics[0]["fact_coverage"][1]["facts"],
        serde_json::json!(["F1", "F2", "F3"])
    );
    let sheet = String::from_utf8(files["sheet.csv"].clone()).unwrap();
    assert!(
        sheet.contains("absence,U1,,cuánto tarda en completarse el reembolso"),
        "{sheet}"
    );
}
