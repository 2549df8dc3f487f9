//! What differs between two runs besides their results: the golden set (cases added,
//! removed, changed), the effective policy (key by key), K, and the retrieval configuration.
//! A comparison goes ahead on what the two runs share and says exactly what differed.

use super::cases::expected_set;
use crate::exam::CaseResult;
use crate::history::RecordedRun;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// One setting (a policy key path such as `domains.viajes.noise_ceiling`, or a
/// [`RunConfig`](crate::history::RunConfig) field) with its value in each run; `null` where
/// a run does not have it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingChange {
    pub key: String,
    pub base: Value,
    pub new: Value,
}

/// A case present in both runs under the same ID whose definition differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseChange {
    pub id: String,
    /// What differs, in this order: `query`, `expected`, `expected_order`, `top_k`,
    /// `domain`, `tags`, `gold`.
    pub fields: Vec<String>,
    /// Expected chunk IDs only the new run's case lists.
    pub expected_added: Vec<String>,
    /// Expected chunk IDs only the base run's case lists.
    pub expected_removed: Vec<String>,
    /// Whether the case is still compared: yes unless its query or expected set changed.
    pub compared: bool,
}

/// How the two golden sets differ. Cases are matched by ID; a case is *shared* (compared)
/// when its query text and its set of expected chunk IDs are the same in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldenDiff {
    /// The golden-set fingerprints differ.
    pub changed: bool,
    pub base_fingerprint: String,
    pub new_fingerprint: String,
    pub base_cases: usize,
    pub new_cases: usize,
    /// Cases compared.
    pub shared: usize,
    /// Case IDs only in the new run, in its order.
    pub added: Vec<String>,
    /// Case IDs only in the base run, in its order.
    pub removed: Vec<String>,
    /// Cases whose definition changed, in the new run's order.
    pub changed_cases: Vec<CaseChange>,
}

/// How the effective policies differ (the reports' own copies, key by key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyDiff {
    /// The policy fingerprints differ.
    pub changed: bool,
    pub base_fingerprint: String,
    pub new_fingerprint: String,
    /// Differing keys, sorted by key path.
    pub changes: Vec<SettingChange>,
}

/// A shared case whose effective K differs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseK {
    pub id: String,
    pub base: u32,
    pub new: u32,
    /// The smaller K, at which both sides are recomputed.
    pub compared_at: u32,
}

/// K differed: the policy's default K and/or some shared cases' effective K.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KChange {
    /// The policies' default K.
    pub base: u32,
    pub new: u32,
    /// Shared cases compared at a common, smaller K (metrics recomputed from the expected
    /// chunks' ranks; noise not compared for them).
    pub cases: Vec<CaseK>,
}

/// Everything that differed between the runs' settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compatibility {
    /// True when golden set, policy, K and retrieval configuration are all the same: the
    /// runs differ only in their results (and corpus).
    pub comparable: bool,
    pub golden: GoldenDiff,
    pub policy: PolicyDiff,
    pub k: Option<KChange>,
    /// Differing [`RunConfig`](crate::history::RunConfig) fields, sorted.
    pub config: Vec<SettingChange>,
    /// The corpus/index fingerprints differ (informational: that is usually the point).
    pub corpus_changed: bool,
    /// One sentence per difference, for people, worded by the report layer
    /// (`veredicto_report::findings`) from `golden`, `policy`, `k` and `config` when it
    /// renders (empty here).
    #[serde(default)]
    pub differences: Vec<String>,
}

impl GoldenDiff {
    /// Whether the golden sets differ: fingerprint, cases added or removed, or a shared case
    /// changed.
    pub fn differs(&self) -> bool {
        self.changed
            || !self.added.is_empty()
            || !self.removed.is_empty()
            || !self.changed_cases.is_empty()
    }
}

/// First occurrence of each case ID.
pub(crate) fn index(cases: &[CaseResult]) -> HashMap<&str, &CaseResult> {
    let mut map = HashMap::new();
    for c in cases {
        map.entry(c.id.as_str()).or_insert(c);
    }
    map
}

/// Whether two reports' cases under one ID are the same question with the same answer key.
pub(crate) fn same_case(a: &CaseResult, b: &CaseResult) -> bool {
    a.query == b.query && expected_set(a) == expected_set(b)
}

/// Flattens JSON objects into dotted key paths; arrays and scalars are leaves, empty
/// objects vanish.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned(), v.clone());
        }
    }
}

/// Key-by-key differences of two serialisable values.
pub(crate) fn diff_settings<T: Serialize>(base: &T, new: &T) -> Vec<SettingChange> {
    let mut a = BTreeMap::new();
    let mut b = BTreeMap::new();
    flatten(
        "",
        &serde_json::to_value(base).unwrap_or(Value::Null),
        &mut a,
    );
    flatten(
        "",
        &serde_json::to_value(new).unwrap_or(Value::Null),
        &mut b,
    );
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let x = a.get(k).cloned().unwrap_or(Value::Null);
            let y = b.get(k).cloned().unwrap_or(Value::Null);
            (x != y).then(|| SettingChange {
                key: k.clone(),
                base: x,
                new: y,
            })
        })
        .collect()
}

fn case_change(b: &CaseResult, n: &CaseResult) -> Option<CaseChange> {
    let mut fields = Vec::new();
    if b.query != n.query {
        fields.push("query");
    }
    let (bs, ns) = (expected_set(b), expected_set(n));
    if bs != ns {
        fields.push("expected");
    } else {
        let order = |c: &CaseResult| -> Vec<String> {
            super::cases::distinct(&c.expected)
                .map(|e| e.id.clone())
                .collect()
        };
        if order(b) != order(n) {
            fields.push("expected_order");
        }
    }
    if b.top_k != n.top_k {
        fields.push("top_k");
    }
    if b.domain != n.domain {
        fields.push("domain");
    }
    if b.tags != n.tags {
        fields.push("tags");
    }
    if b.gold != n.gold {
        fields.push("gold");
    }
    if fields.is_empty() {
        return None;
    }
    Some(CaseChange {
        id: n.id.clone(),
        fields: fields.into_iter().map(str::to_owned).collect(),
        expected_added: ns.difference(&bs).map(|s| (*s).to_owned()).collect(),
        expected_removed: bs.difference(&ns).map(|s| (*s).to_owned()).collect(),
        compared: same_case(b, n),
    })
}

/// The compatibility of two runs and the shared case pairs (in the new run's order).
pub(crate) fn compatibility<'a>(
    base: &'a RecordedRun,
    new: &'a RecordedRun,
) -> (Compatibility, Vec<(&'a CaseResult, &'a CaseResult)>) {
    let bidx = index(&base.report.cases);
    let nidx = index(&new.report.cases);
    let mut shared = Vec::new();
    let mut added = Vec::new();
    let mut changed_cases = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for n in &new.report.cases {
        if !seen.insert(n.id.as_str()) {
            continue;
        }
        match bidx.get(n.id.as_str()) {
            None => added.push(n.id.clone()),
            Some(b) => {
                if let Some(ch) = case_change(b, n) {
                    changed_cases.push(ch);
                }
                if same_case(b, n) {
                    shared.push((*b, n));
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    let removed: Vec<String> = base
        .report
        .cases
        .iter()
        .filter(|b| seen.insert(b.id.as_str()) && !nidx.contains_key(b.id.as_str()))
        .map(|b| b.id.clone())
        .collect();

    let golden = GoldenDiff {
        changed: base.meta.golden_fingerprint != new.meta.golden_fingerprint,
        base_fingerprint: base.meta.golden_fingerprint.clone(),
        new_fingerprint: new.meta.golden_fingerprint.clone(),
        base_cases: base.report.cases.len(),
        new_cases: new.report.cases.len(),
        shared: shared.len(),
        added,
        removed,
        changed_cases,
    };
    let policy = PolicyDiff {
        changed: base.meta.policy_fingerprint != new.meta.policy_fingerprint,
        base_fingerprint: base.meta.policy_fingerprint.clone(),
        new_fingerprint: new.meta.policy_fingerprint.clone(),
        changes: diff_settings(&base.report.policy, &new.report.policy),
    };
    let case_ks: Vec<CaseK> = shared
        .iter()
        .filter(|(b, n)| b.top_k != n.top_k)
        .map(|(b, n)| CaseK {
            id: n.id.clone(),
            base: b.top_k,
            new: n.top_k,
            compared_at: b.top_k.min(n.top_k),
        })
        .collect();
    let (bk, nk) = (base.report.policy.top_k, new.report.policy.top_k);
    let k = (bk != nk || !case_ks.is_empty()).then_some(KChange {
        base: bk,
        new: nk,
        cases: case_ks,
    });
    let config = diff_settings(&base.meta.config, &new.meta.config);
    let corpus_changed = base.meta.corpus_fingerprint != new.meta.corpus_fingerprint;

    let golden_differs = golden.differs();
    let comparable = !golden_differs
        && !policy.changed
        && policy.changes.is_empty()
        && k.is_none()
        && config.is_empty();
    (
        Compatibility {
            comparable,
            golden,
            policy,
            k,
            config,
            corpus_changed,
            differences: Vec::new(),
        },
        shared,
    )
}
