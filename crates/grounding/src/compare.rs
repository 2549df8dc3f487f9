//! Comparing two recordings of the same frozen cases (a base and a replay). Only compatible
//! cases are compared (same case ID, snapshot, query and resolved passage texts); every case
//! or answer that could not be compared is declared with the reason.

use crate::load::passage_hash;
use crate::metrics::{answer_metrics, AnswerMetrics};
use crate::model::{Answer, Case, CaseSet};
use crate::review::ReviewRecord;
use crate::sheet::effective_support;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub compared: Vec<AnswerComparison>,
    pub not_compared: Vec<NotCompared>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotCompared {
    pub case: String,
    pub answer: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerComparison {
    pub case: String,
    pub base: AnswerMetrics,
    pub new: AnswerMetrics,
    /// Per claim ID present in both: verdicts that differ (`C-1: supported -> unsupported`).
    pub verdict_changes: Vec<String>,
    pub claims_only_in_base: Vec<String>,
    pub claims_only_in_new: Vec<String>,
    /// What the declared configuration changed (`generation model changed: X → Y`).
    pub configuration_changes: Vec<String>,
    /// Declared absences on each side ("the sources do not say").
    pub absences_base: Vec<String>,
    pub absences_new: Vec<String>,
    /// Absences added or no longer declared.
    pub absence_changes: Vec<String>,
}

fn passages(c: &Case) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = c
        .sources
        .iter()
        .flat_map(|s| {
            s.passages.iter().map(move |p| {
                let h = p
                    .hash
                    .clone()
                    .or_else(|| p.text.as_deref().map(passage_hash))
                    .unwrap_or_default();
                (s.id.clone(), p.id.clone(), h)
            })
        })
        .collect();
    v.sort();
    v
}

fn incompatibility(a: &Case, b: &Case) -> Option<String> {
    if a.snapshot != b.snapshot {
        return Some(format!(
            "snapshot differs: {} vs {}",
            a.snapshot, b.snapshot
        ));
    }
    if a.query != b.query {
        return Some("query text differs".into());
    }
    let (pa, pb) = (passages(a), passages(b));
    if pa != pb {
        let changed: Vec<String> = pa
            .iter()
            .filter(|x| !pb.contains(x))
            .chain(pb.iter().filter(|x| !pa.contains(x)))
            .map(|(s, p, _)| format!("{s}#{p}"))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        return Some(format!(
            "resolved passage text differs: {}",
            changed.join(", ")
        ));
    }
    None
}

fn metrics(case: &Case, a: &Answer, reviews: &[ReviewRecord]) -> AnswerMetrics {
    answer_metrics(case, a, &|id| {
        a.claims
            .iter()
            .find(|c| c.id == id)
            .and_then(|c| effective_support(c, reviews))
    })
}

fn verdict(a: &Answer, id: &str, reviews: &[ReviewRecord]) -> String {
    a.claims
        .iter()
        .find(|c| c.id == id)
        .and_then(|c| effective_support(c, reviews))
        .map_or("pending", |s| s.as_str())
        .to_string()
}

/// Compares `new` against `base`. Answers pair by ID; when a case holds exactly one answer on
/// each side with different IDs (a replay), those two are paired.
pub fn compare(
    base: &CaseSet,
    base_reviews: &[ReviewRecord],
    new: &CaseSet,
    new_reviews: &[ReviewRecord],
) -> Comparison {
    let mut compared = Vec::new();
    let mut not_compared = Vec::new();
    let nc = |case: &str, answer: Option<&str>, reason: &str| NotCompared {
        case: case.to_string(),
        answer: answer.map(str::to_string),
        reason: reason.to_string(),
    };
    for a in &base.cases {
        let Some(b) = new.cases.iter().find(|b| b.id == a.id) else {
            not_compared.push(nc(&a.id, None, "case only in base"));
            continue;
        };
        if let Some(r) = incompatibility(a, b) {
            not_compared.push(nc(&a.id, None, &r));
            continue;
        }
        let mut pairs: Vec<(&Answer, &Answer)> = Vec::new();
        if a.answers.len() == 1 && b.answers.len() == 1 {
            pairs.push((&a.answers[0], &b.answers[0]));
        } else {
            for x in &a.answers {
                match b.answers.iter().find(|y| y.id == x.id) {
                    Some(y) => pairs.push((x, y)),
                    None => not_compared.push(nc(&a.id, Some(&x.id), "answer only in base")),
                }
            }
            for y in &b.answers {
                if !a.answers.iter().any(|x| x.id == y.id) {
                    not_compared.push(nc(&a.id, Some(&y.id), "answer only in new"));
                }
            }
        }
        for (x, y) in pairs {
            let mut verdict_changes = Vec::new();
            let mut only_base = Vec::new();
            for c in &x.claims {
                if y.claims.iter().any(|d| d.id == c.id) {
                    let (vb, vn) = (
                        verdict(x, &c.id, base_reviews),
                        verdict(y, &c.id, new_reviews),
                    );
                    if vb != vn {
                        verdict_changes.push(format!("{}: {vb} -> {vn}", c.id));
                    }
                } else {
                    only_base.push(c.id.clone());
                }
            }
            let only_new = y
                .claims
                .iter()
                .filter(|d| !x.claims.iter().any(|c| c.id == d.id))
                .map(|d| d.id.clone())
                .collect();
            compared.push(AnswerComparison {
                case: a.id.clone(),
                base: metrics(a, x, base_reviews),
                new: metrics(b, y, new_reviews),
                verdict_changes,
                claims_only_in_base: only_base,
                claims_only_in_new: only_new,
                configuration_changes: crate::absence::configuration_changes(
                    a.configuration.as_ref(),
                    b.configuration.as_ref(),
                ),
                absences_base: a
                    .absences()
                    .iter()
                    .map(|(id, x)| format!("{id}: {}", x.text))
                    .collect(),
                absences_new: b
                    .absences()
                    .iter()
                    .map(|(id, x)| format!("{id}: {}", x.text))
                    .collect(),
                absence_changes: crate::absence::absence_changes(a, b),
            });
        }
    }
    for b in &new.cases {
        if !base.cases.iter().any(|a| a.id == b.id) {
            not_compared.push(nc(&b.id, None, "case only in new"));
        }
    }
    Comparison {
        compared,
        not_compared,
    }
}
