//! Invariants of the grounding measures and the policy file.

use proptest::prelude::*;
use veredicto_grounding::*;

fn verdict(i: u8) -> Option<Support> {
    match i % 5 {
        0 => None,
        1 => Some(Support::Supported),
        2 => Some(Support::PartiallySupported),
        3 => Some(Support::Unsupported),
        _ => Some(Support::NotEvaluable),
    }
}

fn case_with(claims: &[(bool, u8, u8)], g: usize) -> Case {
    let claims = claims
        .iter()
        .enumerate()
        .map(|(i, (cited, v, fact))| Claim {
            id: format!("C{i}"),
            text: "c".into(),
            citations: if *cited { vec!["1".into()] } else { vec![] },
            facts: if g > 0 {
                vec![format!("G{}", *fact as usize % g)]
            } else {
                vec![]
            },
            association: None,
            support: verdict(*v).map(|verdict| SupportVerdict {
                verdict,
                reason: "r".into(),
            }),
            diagnosis: None,
            reviewer: None,
            time: None,
            pending: None,
        })
        .collect();
    Case {
        id: "Q".into(),
        query: "q".into(),
        snapshot: "s".into(),
        sources: vec![Source {
            id: "D".into(),
            version: "v".into(),
            uri: None,
            anchor: None,
            passages: vec![],
        }],
        valid_sources: vec![],
        retrieval: vec![],
        required_facts: (0..g)
            .map(|i| Fact {
                id: format!("G{i}"),
                text: "g".into(),
                found_in: vec![],
            })
            .collect(),
        unanswerable: vec![],
        configuration: None,
        answers: vec![Answer {
            id: "A".into(),
            text: "a".into(),
            citations: vec![Citation {
                id: "1".into(),
                source: "D".into(),
                passage: None,
            }],
            claims,
        }],
        notes: None,
    }
}

proptest! {
    #[test]
    fn measures_are_bounded_and_ordered(claims in prop::collection::vec((any::<bool>(), any::<u8>(), any::<u8>()), 0..12), g in 0usize..5) {
        let case = case_with(&claims, g);
        let a = &case.answers[0];
        let m = answer_metrics(&case, a, &|id| a.claims.iter().find(|c| c.id == id).and_then(|c| effective_support(c, &[])));
        prop_assert_eq!(m.abstention, claims.is_empty());
        if claims.is_empty() {
            prop_assert_eq!(m.support, None);
            prop_assert_eq!(m.citation_presence, None);
            prop_assert_eq!(m.coverage, if g > 0 { Some(0.0) } else { None });
        } else {
            let (p, s) = (m.citation_presence.unwrap_or(-1.0), m.support.unwrap_or(-1.0));
            prop_assert!((0.0..=1.0).contains(&p) && (0.0..=1.0).contains(&s));
            prop_assert!(s <= p, "support {} > presence {}", s, p);
        }
        if let Some(u) = m.coverage {
            prop_assert!((0.0..=1.0).contains(&u));
            prop_assert!(m.facts_covered <= m.supported.min(g));
        }
        // The case validates (the generator only builds valid references).
        let set = CaseSet { schema: SCHEMA_VERSION.into(), cases: vec![case.clone()] };
        prop_assert!(validate(&set, "").is_empty());
    }
}

#[test]
fn policy_reads_the_grounding_table_and_rejects_bad_values() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("policy.toml");
    std::fs::write(
        &p,
        "[exam]\nk = 5\n[grounding]\nmin_support = 0.5\nmin_coverage = 0.4\n",
    )
    .expect("w");
    let pol = load_policy(&p).expect("policy");
    assert_eq!(pol.min_support, Some(0.5));
    std::fs::write(&p, "[grounding]\nmin_support = 50\n").expect("w");
    assert!(load_policy(&p)
        .unwrap_err()
        .to_string()
        .contains("min_support = 50"));
    std::fs::write(&p, "[grounding]\nmin_suport = 0.5\n").expect("w");
    assert!(load_policy(&p)
        .unwrap_err()
        .to_string()
        .contains("min_suport"));
    std::fs::write(&p, "[grounding]\nmin_document_recall = 0.5\n").expect("w");
    assert!(load_policy(&p)
        .unwrap_err()
        .to_string()
        .contains("recall_k"));
    // Abstention: support undefined (not checked), coverage 0 (checked).
    let case = case_with(&[], 2);
    let a = &case.answers[0];
    let m = answer_metrics(&case, a, &|_| None);
    let v = violations(&pol_of(0.9, 0.1), &m, None);
    assert_eq!(v, vec!["coverage 0.0% < 10.0%"]);
}

fn pol_of(support: f64, coverage: f64) -> GroundingPolicy {
    GroundingPolicy {
        min_support: Some(support),
        min_coverage: Some(coverage),
        ..GroundingPolicy::default()
    }
}
