//! The evidence keys of the policy file are read and checked like the others.

use std::path::Path;
use veredicto_formats::policy::parse_policy;

#[test]
fn relevance_level_and_evidence_coverage_are_policy_keys() {
    let p = parse_policy(
        Path::new("policy.toml"),
        "relevance_level = 2\nevidence_coverage = 0.8\n",
    )
    .unwrap();
    assert_eq!(p.relevance_level, 2);
    assert_eq!(p.evidence_coverage, 0.8);
    let d = parse_policy(Path::new("policy.toml"), "top_k = 10\n").unwrap();
    assert_eq!((d.relevance_level, d.evidence_coverage), (1, 1.0));
    let err = parse_policy(Path::new("policy.toml"), "evidence_coverage = 0\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("evidence_coverage"), "{err}");
}
