//! Honest absences ("the sources do not say") as results, fact coverage of the retrieved
//! list, and what a replay's configuration changed.

use crate::impact::SourceSet;
use crate::load::passage_hash;
use crate::model::{Case, CaseSet, Configuration, Source};
use serde::Serialize;

/// One declared absence of a case: what was asked and what the sources lack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AbsenceEntry {
    pub case: String,
    /// `U1`, … unless the case file names it.
    pub id: String,
    /// What was asked: the case's query.
    pub asked: String,
    /// What the sources lack.
    pub lacking: String,
    /// Where the missing fact would appear (`source@version`); empty = any source.
    pub sources: Vec<String>,
    /// The snapshot whose sources lack it.
    pub snapshot: String,
    /// The recorded answers bounded by it (every answer of the case).
    pub answers: Vec<String>,
}

/// Every declared absence, in file order.
pub fn absences(set: &CaseSet) -> Vec<AbsenceEntry> {
    let mut out = Vec::new();
    for case in &set.cases {
        for (id, a) in case.absences() {
            out.push(AbsenceEntry {
                case: case.id.clone(),
                id,
                asked: case.query.clone(),
                lacking: a.text.clone(),
                sources: a
                    .sources
                    .iter()
                    .map(|s| match case.sources.iter().find(|x| &x.id == s) {
                        Some(x) => format!("{}@{}", x.id, x.version),
                        None => s.clone(),
                    })
                    .collect(),
                snapshot: case.snapshot.clone(),
                answers: case.answers.iter().map(|a| a.id.clone()).collect(),
            });
        }
    }
    out
}

/// An absence that a changed source may now fill: to be answered again.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReopenedAbsence {
    pub case: String,
    pub absence: String,
    pub lacking: String,
    pub source: String,
    pub old_version: String,
    pub new_version: String,
    /// `new version`, `passages changed`, or both.
    pub change: String,
}

fn hashes(s: &Source) -> Vec<(String, Option<String>)> {
    let mut v: Vec<_> = s
        .passages
        .iter()
        .map(|p| {
            (
                p.id.clone(),
                p.hash
                    .clone()
                    .or_else(|| p.text.as_deref().map(passage_hash)),
            )
        })
        .collect();
    v.sort();
    v
}

/// Absences reopened by `new` sources: for each absence, every source it names (or, when it
/// names none, every source of the case) that is present in `new` with another version or
/// other passage texts. A removed source reopens nothing (it cannot now hold the fact).
pub fn reopened_absences(set: &CaseSet, new: &SourceSet) -> Vec<ReopenedAbsence> {
    let mut out = Vec::new();
    for case in &set.cases {
        for (id, a) in case.absences() {
            let scope: Vec<&Source> = case
                .sources
                .iter()
                .filter(|s| a.sources.is_empty() || a.sources.contains(&s.id))
                .collect();
            for old in scope {
                let Some(now) = new.sources.iter().find(|s| s.id == old.id) else {
                    continue;
                };
                let version = now.version != old.version;
                let passages = hashes(now) != hashes(old);
                let change = match (version, passages) {
                    (false, false) => continue,
                    (true, false) => "new version",
                    (false, true) => "passages changed",
                    (true, true) => "new version, passages changed",
                };
                out.push(ReopenedAbsence {
                    case: case.id.clone(),
                    absence: id.clone(),
                    lacking: a.text.clone(),
                    source: old.id.clone(),
                    old_version: old.version.clone(),
                    new_version: now.version.clone(),
                    change: change.into(),
                });
            }
        }
    }
    out
}

/// Which required facts the first `k` retrieved passages contain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactCoverage {
    pub k: usize,
    /// Facts stated in a passage among the first k (by the facts' `found_in`), in G's order.
    pub facts: Vec<String>,
    /// |G|, the denominator.
    pub required: usize,
    /// Facts of G whose location (`found_in`) the case gives; the others never count.
    pub located: usize,
    /// `facts / required`.
    pub coverage: f64,
}

/// Fact coverage of the retrieved list at each k in `ks`; empty when the case has no
/// required facts or none says where it is found.
pub fn fact_coverage(case: &Case, ks: &[usize]) -> Vec<FactCoverage> {
    let g = &case.required_facts;
    let located = g.iter().filter(|f| !f.found_in.is_empty()).count();
    if g.is_empty() || located == 0 {
        return Vec::new();
    }
    ks.iter()
        .map(|&k| {
            let top = &case.retrieval[..k.min(case.retrieval.len())];
            let facts: Vec<String> = g
                .iter()
                .filter(|f| {
                    f.found_in.iter().any(|loc| {
                        let (src, pid) = match loc.split_once('#') {
                            Some((s, p)) => (s, Some(p)),
                            None => (loc.as_str(), None),
                        };
                        top.iter().any(|r| {
                            r.source == src
                                && match (pid, r.passage.as_deref()) {
                                    (Some(p), Some(q)) => p == q,
                                    // A whole source retrieved, or a fact located by source.
                                    _ => true,
                                }
                        })
                    })
                })
                .map(|f| f.id.clone())
                .collect();
            FactCoverage {
                k,
                coverage: facts.len() as f64 / g.len() as f64,
                facts,
                required: g.len(),
                located,
            }
        })
        .collect()
}

/// What changed in the declared configuration between two recordings of a case:
/// `generation model changed: X → Y`, `prompt version set: v3`, `locale no longer declared (was es)`.
pub fn configuration_changes(
    base: Option<&Configuration>,
    new: Option<&Configuration>,
) -> Vec<String> {
    let empty = Configuration::default();
    let (b, n) = (
        base.unwrap_or(&empty).fields(),
        new.unwrap_or(&empty).fields(),
    );
    let mut labels: Vec<&String> = b.iter().chain(&n).map(|(l, _)| l).collect();
    labels.dedup();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for label in labels {
        if !seen.insert(label.clone()) {
            continue;
        }
        let get = |v: &[(String, Option<String>)]| {
            v.iter()
                .find(|(l, _)| l == label)
                .and_then(|(_, x)| x.clone())
        };
        match (get(&b), get(&n)) {
            (Some(x), Some(y)) if x != y => out.push(format!("{label} changed: {x} → {y}")),
            (None, Some(y)) => out.push(format!("{label} set: {y}")),
            (Some(x), None) => out.push(format!("{label} no longer declared (was {x})")),
            _ => {}
        }
    }
    out
}

/// Absences kept, added or dropped between two recordings of a case.
pub fn absence_changes(base: &Case, new: &Case) -> Vec<String> {
    let (b, n) = (base.absences(), new.absences());
    let mut out = Vec::new();
    for (id, a) in &b {
        if !n.iter().any(|(_, x)| x.text == a.text) {
            out.push(format!("absence {id} no longer declared: {}", a.text));
        }
    }
    for (id, a) in &n {
        if !b.iter().any(|(_, x)| x.text == a.text) {
            out.push(format!("absence {id} added: {}", a.text));
        }
    }
    out
}
