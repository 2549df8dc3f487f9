//! `audit check`: every answer's grounding measures, the policy gate and the totals, computed
//! once; renderers (`veredicto_report::audit`) only format the result.

use crate::absence::{absences, fact_coverage, AbsenceEntry, FactCoverage};
use crate::citation_mark::{citation_precision, CitationMarkRecord, CitationPrecision};
use crate::metrics::{answer_metrics, document_recall_at, AnswerMetrics};
use crate::model::CaseSet;
use crate::policy::{violations, GroundingPolicy};
use crate::relevance::{relevance_reviews, Relevance, RelevanceRecord};
use crate::review::ReviewRecord;
use crate::sheet::effective_support;
use serde::Serialize;

/// Largest default recall cut-off: with no `k` given, recall is measured at 1..=min(retrieved, 10).
pub const DEFAULT_MAX_K: usize = 10;

/// What `check` measures against.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckOptions {
    /// The `[grounding]` thresholds (default: none, so every answer passes).
    pub policy: GroundingPolicy,
    /// Cut-offs for document recall and fact coverage; empty = 1..=retrieved, at most
    /// [`DEFAULT_MAX_K`], per case.
    pub k: Vec<usize>,
}

/// Counts over all answers (sums, never averaged scores).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CheckTotals {
    pub answers: usize,
    pub abstentions: usize,
    pub claims: usize,
    pub with_citation: usize,
    pub supported: usize,
    pub unreviewed: usize,
    pub absences: usize,
    /// Answers with an answer-relevance verdict in force, and how many of each.
    pub relevance_judged: usize,
    pub addresses: usize,
    pub partly: usize,
    pub off_topic: usize,
    /// The citation marks in force over every answer (citation precision).
    pub citations: CitationPrecision,
}

/// An answer's relevance verdict in force (its first relevance review) and how many later
/// reviews are annexes to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelevanceInForce {
    pub verdict: Relevance,
    pub reason: String,
    pub reviewer: String,
    pub time: String,
    pub annexes: usize,
}

/// One answer's measures and what it missed of the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerCheck {
    pub metrics: AnswerMetrics,
    /// Does the answer address what was asked (`None`: not judged)?
    pub relevance: Option<RelevanceInForce>,
    /// The marks in force of its claims' citations (`None`: no citation marked).
    pub citation_precision: Option<CitationPrecision>,
    /// Policy thresholds missed (empty = passes).
    pub violations: Vec<String>,
}

/// One case: its retrieval measures, absences and answers.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseCheck {
    pub id: String,
    pub snapshot: String,
    pub query: String,
    /// Whether the case names valid sources (document recall is shown only then).
    pub has_valid_sources: bool,
    /// Document recall at each cut-off (`None`: undefined).
    pub document_recall: Vec<(usize, Option<f64>)>,
    /// Which required facts the retrieved list holds at each cut-off (empty when the case
    /// locates none).
    pub fact_coverage: Vec<FactCoverage>,
    /// The case's absences: (ID, what the sources lack).
    pub absences: Vec<(String, String)>,
    pub answers: Vec<AnswerCheck>,
}

/// The outcome of `check`: per case, totals, every absence, and the gate.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    pub cases: Vec<CaseCheck>,
    pub totals: CheckTotals,
    /// Every declared absence, in file order.
    pub absences: Vec<AbsenceEntry>,
    /// False when any answer missed a policy threshold.
    pub pass: bool,
}

/// The recall cut-offs of one case: `k` as given, else 1..=min(retrieved, 10).
pub fn cutoffs(k: &[usize], retrieved: usize) -> Vec<usize> {
    if k.is_empty() {
        (1..=retrieved.min(DEFAULT_MAX_K)).collect()
    } else {
        k.to_vec()
    }
}

/// Measures every answer of `set` (support verdicts: the case file's, else the first review
/// in `reviews`) and applies the policy; no answer-relevance verdicts (see
/// [`check_with_relevance`]).
pub fn check(set: &CaseSet, reviews: &[ReviewRecord], opts: &CheckOptions) -> CheckOutcome {
    check_with_relevance(set, reviews, &[], opts)
}

/// What an off-topic answer misses, whatever the thresholds: an answer that answers another
/// question is not a good answer, however well its claims are supported.
pub fn off_topic_violation(r: &RelevanceInForce) -> String {
    format!(
        "off topic: the answer does not address what was asked ({}: {})",
        r.reviewer, r.reason
    )
}

/// [`check`] with the answer-relevance reviews: each answer's verdict in force is reported
/// beside its measures and counted in the totals; an `off_topic` answer misses the gate.
pub fn check_with_relevance(
    set: &CaseSet,
    reviews: &[ReviewRecord],
    relevance: &[RelevanceRecord],
    opts: &CheckOptions,
) -> CheckOutcome {
    check_with_marks(set, reviews, relevance, &[], opts)
}

/// [`check_with_relevance`] with the citation marks: each answer's citation precision (its
/// claims' citations marked necessary or redundant / marked) beside its support, and in the
/// totals. Reported, not gated.
pub fn check_with_marks(
    set: &CaseSet,
    reviews: &[ReviewRecord],
    relevance: &[RelevanceRecord],
    marks: &[CitationMarkRecord],
    opts: &CheckOptions,
) -> CheckOutcome {
    let mut totals = CheckTotals::default();
    let mut pass = true;
    let mut cases = Vec::new();
    for case in &set.cases {
        let ks = cutoffs(&opts.k, case.retrieval.len());
        let document_recall = ks
            .iter()
            .map(|&k| (k, document_recall_at(case, k)))
            .collect();
        let policy_recall = opts
            .policy
            .recall_k
            .and_then(|k| document_recall_at(case, k));
        let mut answers = Vec::new();
        for ans in &case.answers {
            let m = answer_metrics(case, ans, &|id| {
                ans.claims
                    .iter()
                    .find(|c| c.id == id)
                    .and_then(|c| effective_support(c, reviews))
            });
            totals.answers += 1;
            totals.abstentions += usize::from(m.abstention);
            totals.claims += m.claims;
            totals.with_citation += m.with_citation;
            totals.supported += m.supported;
            totals.unreviewed += m.unreviewed;
            let mut v = violations(&opts.policy, &m, policy_recall);
            let mine = relevance_reviews(&case.id, &ans.id, relevance);
            let rel = mine.first().map(|r| RelevanceInForce {
                verdict: r.relevance,
                reason: r.reason.clone(),
                reviewer: r.reviewer.clone(),
                time: r.time.clone(),
                annexes: mine.len() - 1,
            });
            if let Some(r) = &rel {
                totals.relevance_judged += 1;
                match r.verdict {
                    Relevance::Addresses => totals.addresses += 1,
                    Relevance::Partly => totals.partly += 1,
                    Relevance::OffTopic => {
                        totals.off_topic += 1;
                        v.push(off_topic_violation(r));
                    }
                }
            }
            let cp = citation_precision(&ans.claims, marks);
            totals.citations.merge(&cp);
            pass &= v.is_empty();
            answers.push(AnswerCheck {
                metrics: m,
                relevance: rel,
                citation_precision: (cp.marked > 0).then_some(cp),
                violations: v,
            });
        }
        cases.push(CaseCheck {
            id: case.id.clone(),
            snapshot: case.snapshot.clone(),
            query: case.query.clone(),
            has_valid_sources: !case.valid_sources.is_empty(),
            document_recall,
            fact_coverage: fact_coverage(case, &ks),
            absences: case
                .absences()
                .into_iter()
                .map(|(id, a)| (id, a.text.clone()))
                .collect(),
            answers,
        });
    }
    let absences = absences(set);
    totals.absences = absences.len();
    CheckOutcome {
        cases,
        totals,
        absences,
        pass,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_cases;
    use std::path::Path;

    const CASES: &str = r#"
schema: veredicto-grounding/1
cases:
  - id: c1
    query: what does it cost?
    snapshot: s1
    sources:
      - { id: DA, version: v1, passages: [{ id: p1, text: "The price is 10 euros." }] }
      - { id: DB, version: v1, passages: [{ id: p1, text: "Something else." }] }
    valid_sources: [DA]
    retrieval:
      - { position: 1, source: DB, passage: p1 }
      - { position: 2, source: DA, passage: p1 }
    required_facts: [{ id: F1, text: "the price is 10", found_in: ["DA#p1"] }]
    unanswerable: ["when the price changes"]
    answers:
      - id: a1
        text: "It costs 10 euros [DA]."
        citations: [{ id: DA, source: DA, passage: p1 }]
        claims:
          - id: c1a1k1
            text: "It costs 10 euros."
            citations: [DA]
            facts: [F1]
            support: { verdict: supported, reason: "the passage states it" }
      - id: a2
        text: "It costs 12 euros. It is cheap [DB]."
        citations: [{ id: DB, source: DB, passage: p1 }]
        claims:
          - { id: c1a2k1, text: "It costs 12 euros." }
          - { id: c1a2k2, text: "It is cheap.", citations: [DB] }
      - id: a3
        text: "The sources do not say."
"#;

    fn set() -> CaseSet {
        parse_cases(Path::new("cases.yaml"), CASES).expect("valid cases")
    }

    #[test]
    fn totals_sum_every_answer() {
        let out = check(&set(), &[], &CheckOptions::default());
        assert_eq!(
            out.totals,
            CheckTotals {
                answers: 3,
                abstentions: 1,
                claims: 3,
                with_citation: 2,
                supported: 1,
                unreviewed: 2,
                absences: 1,
                ..Default::default()
            }
        );
        assert!(out.pass, "no policy: every answer passes");
        assert_eq!(out.absences.len(), 1);
        assert_eq!(
            out.cases[0].absences,
            vec![("U1".to_string(), "when the price changes".to_string())]
        );
    }

    #[test]
    fn default_cutoffs_run_to_the_retrieved_count_at_most_ten() {
        let out = check(&set(), &[], &CheckOptions::default());
        let ks: Vec<usize> = out.cases[0].document_recall.iter().map(|x| x.0).collect();
        assert_eq!(ks, vec![1, 2]);
        assert_eq!(out.cases[0].document_recall[0].1, Some(0.0));
        assert_eq!(out.cases[0].document_recall[1].1, Some(1.0));
        assert_eq!(cutoffs(&[], 25), (1..=10).collect::<Vec<_>>());
        assert_eq!(cutoffs(&[3, 1], 25), vec![3, 1]);
        assert_eq!(cutoffs(&[], 0), Vec::<usize>::new());
    }

    #[test]
    fn gate_fails_when_any_answer_misses_a_threshold() {
        let opts = CheckOptions {
            policy: GroundingPolicy {
                min_support: Some(0.9),
                ..Default::default()
            },
            k: vec![1],
        };
        let out = check(&set(), &[], &opts);
        assert!(!out.pass);
        let v: Vec<&Vec<String>> = out.cases[0].answers.iter().map(|a| &a.violations).collect();
        assert!(v[0].is_empty(), "a1 is fully supported");
        assert_eq!(v[1], &vec!["support 0.0% < 90.0%".to_string()]);
        assert!(v[2].is_empty(), "support is undefined on an abstention");
    }

    #[test]
    fn gate_checks_document_recall_at_the_policy_k() {
        let policy = GroundingPolicy {
            min_document_recall: Some(1.0),
            recall_k: Some(1),
            ..Default::default()
        };
        let out = check(
            &set(),
            &[],
            &CheckOptions {
                policy: policy.clone(),
                k: vec![],
            },
        );
        assert!(!out.pass);
        assert_eq!(
            out.cases[0].answers[0].violations,
            vec!["document recall@1 0.0% < 100.0%".to_string()]
        );
        let at2 = GroundingPolicy {
            recall_k: Some(2),
            ..policy
        };
        let out = check(
            &set(),
            &[],
            &CheckOptions {
                policy: at2,
                k: vec![],
            },
        );
        assert!(out.pass);
    }

    #[test]
    fn an_off_topic_answer_misses_the_gate_however_well_supported() {
        let rel = |answer: &str, v: Relevance, who: &str| {
            crate::relevance::new_relevance_review(
                &set(),
                None,
                answer,
                v,
                "answers another question",
                who,
                "2025-01-01T00:00:00Z",
            )
            .unwrap()
        };
        let records = vec![
            rel("a1", Relevance::OffTopic, "ana"),
            rel("a2", Relevance::Partly, "ana"),
            rel("a1", Relevance::Addresses, "bea"),
        ];
        let out = check_with_relevance(&set(), &[], &records, &CheckOptions::default());
        assert!(!out.pass, "a1 is fully supported but off topic");
        let a1 = &out.cases[0].answers[0];
        assert_eq!(a1.metrics.support, Some(1.0));
        let r = a1.relevance.as_ref().unwrap();
        assert_eq!(
            (r.verdict, r.annexes),
            (Relevance::OffTopic, 1),
            "first review in force"
        );
        assert_eq!(
            a1.violations,
            vec!["off topic: the answer does not address what was asked (ana: answers another question)".to_string()]
        );
        assert!(
            out.cases[0].answers[1].violations.is_empty(),
            "partly is reported, not a miss"
        );
        assert!(out.cases[0].answers[2].relevance.is_none());
        let t = &out.totals;
        assert_eq!(
            (t.relevance_judged, t.addresses, t.partly, t.off_topic),
            (2, 0, 1, 1)
        );
    }

    #[test]
    fn citation_precision_is_per_answer_and_in_the_totals() {
        let mark = |claim: &str, cit: &str, m: crate::citation_mark::CitationMark| {
            crate::citation_mark::new_citation_mark(&set(), claim, cit, m, "r", "ana", "t").unwrap()
        };
        use crate::citation_mark::CitationMark::*;
        let marks = vec![
            mark("c1a1k1", "DA", Necessary),
            mark("c1a2k2", "DB", Irrelevant),
            mark("c1a1k1", "DA", Irrelevant),
        ];
        let out = check_with_marks(&set(), &[], &[], &marks, &CheckOptions::default());
        let a = &out.cases[0].answers;
        let p1 = a[0].citation_precision.unwrap();
        assert_eq!(
            (p1.marked, p1.value()),
            (1, Some(1.0)),
            "the first mark is in force"
        );
        let p2 = a[1].citation_precision.unwrap();
        assert_eq!((p2.marked, p2.irrelevant, p2.value()), (1, 1, Some(0.0)));
        assert!(a[2].citation_precision.is_none(), "nothing marked");
        let t = out.totals.citations;
        assert_eq!(
            (t.marked, t.necessary, t.irrelevant, t.value()),
            (2, 1, 1, Some(0.5))
        );
        assert!(out.pass, "citation precision is reported, not gated");
        let plain = check(&set(), &[], &CheckOptions::default());
        assert_eq!(plain.totals.citations, CitationPrecision::default());
    }

    #[test]
    fn reviews_give_the_verdict_of_claims_without_one() {
        let reviews = vec![crate::review::new_review(
            &set(),
            "c1a2k2",
            crate::model::Support::Supported,
            "the passage says it",
            "ana",
            "2025-01-01T00:00:00Z",
            None,
        )
        .unwrap()];
        let out = check(&set(), &reviews, &CheckOptions::default());
        assert_eq!(out.totals.supported, 2);
        assert_eq!(out.totals.unreviewed, 1);
    }
}
