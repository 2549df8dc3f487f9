//! A declared boost policy (`[boost]` in the policy file): multiplicative or additive boosts
//! by label, domain or freshness, applied to the candidates of the vector search and
//! reranked by the boosted score.
//!
//! The boosted score of a candidate is `score × (product of the factors of the matching
//! rules) + (sum of the additions of the matching rules)`: the order of the rules does not
//! matter. Candidates are reranked by boosted score, highest first; ties keep the vector
//! search's order (lower vector rank first), so the result is deterministic whenever the
//! vector search is.
//!
//! The boost table is part of the exam policy and so of its fingerprint: two runs with
//! different boosts are not comparable without the comparison saying so (the policy diff
//! names the changed `boost.rules[..]` keys).

use serde::{Deserialize, Serialize};

/// The `[boost]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoostPolicy {
    /// The rules (`[[boost.rules]]`), each a matcher and an effect.
    #[serde(default)]
    pub rules: Vec<BoostRule>,
}

/// One rule: exactly one matcher (`label`, `domain`, `fresh_within_days`) and exactly one
/// effect (`factor`, multiplicative; `add`, additive).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoostRule {
    /// Matches chunks carrying this label (e.g. the gold label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Matches chunks of this domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Matches chunks whose `valid_from` is at most this many days before the exam's date
    /// (and not after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_within_days: Option<u32>,
    /// Multiplies the score (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
    /// Adds to the score (finite; may be negative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add: Option<f64>,
}

impl BoostPolicy {
    /// Checks every rule; the error names the key (`boost.rules[1].factor`).
    pub fn validate(&self) -> Result<(), crate::policy::PolicyError> {
        let err = |i: usize, leaf: &str, message: String| crate::policy::PolicyError {
            key: format!(
                "boost.rules[{i}]{}",
                if leaf.is_empty() {
                    String::new()
                } else {
                    format!(".{leaf}")
                }
            ),
            message,
        };
        for (i, r) in self.rules.iter().enumerate() {
            let matchers = [
                r.label.is_some(),
                r.domain.is_some(),
                r.fresh_within_days.is_some(),
            ]
            .iter()
            .filter(|&&m| m)
            .count();
            if matchers != 1 {
                return Err(err(
                    i,
                    "",
                    format!(
                        "needs exactly one of label, domain, fresh_within_days (found {matchers})"
                    ),
                ));
            }
            if let Some(l) = &r.label {
                if l.trim().is_empty() {
                    return Err(err(i, "label", "must not be empty".into()));
                }
            }
            if let Some(d) = &r.domain {
                if d.trim().is_empty() {
                    return Err(err(i, "domain", "must not be empty".into()));
                }
            }
            match (r.factor, r.add) {
                (Some(f), None) => {
                    if !(f.is_finite() && f > 0.0) {
                        return Err(err(
                            i,
                            "factor",
                            format!("must be a finite number above 0, got {f}"),
                        ));
                    }
                }
                (None, Some(a)) => {
                    if !a.is_finite() {
                        return Err(err(i, "add", format!("must be a finite number, got {a}")));
                    }
                }
                _ => {
                    return Err(err(
                        i,
                        "",
                        "needs exactly one of factor (multiplicative) or add (additive)".into(),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Whether rule `rule` matches a candidate; `today` is the exam's date in days
    /// ([`crate::time::parse_date_days`]); freshness never matches without it.
    fn matches(rule: &BoostRule, c: &Candidate<'_>, today: Option<i64>) -> bool {
        if let Some(l) = &rule.label {
            return c.labels.iter().any(|x| x == l);
        }
        if let Some(d) = &rule.domain {
            return c.domain == Some(d.as_str());
        }
        if let Some(days) = rule.fresh_within_days {
            let from = c.valid_from.and_then(crate::time::parse_date_days);
            return match (from, today) {
                (Some(from), Some(today)) => from <= today && today - from <= i64::from(days),
                _ => false,
            };
        }
        false
    }

    /// Reranks `candidates` (in the vector search's order, best first) by boosted score.
    pub fn apply(&self, candidates: &[Candidate<'_>], today: Option<i64>) -> Vec<Boosted> {
        let mut out: Vec<Boosted> = candidates
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let matched: Vec<usize> = self
                    .rules
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| Self::matches(r, c, today))
                    .map(|(j, _)| j)
                    .collect();
                let factor: f64 = matched
                    .iter()
                    .filter_map(|&j| self.rules[j].factor)
                    .product();
                let add: f64 = matched.iter().filter_map(|&j| self.rules[j].add).sum();
                Boosted {
                    id: c.id.to_owned(),
                    vector_rank: i + 1,
                    vector_score: c.score,
                    boosted_score: c.score * factor + add,
                    rules: matched,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.boosted_score
                .total_cmp(&a.boosted_score)
                .then(a.vector_rank.cmp(&b.vector_rank))
        });
        out
    }
}

/// A candidate of the vector search, with what the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub id: &'a str,
    /// The vector search's score (cosine).
    pub score: f64,
    pub labels: &'a [String],
    pub domain: Option<&'a str>,
    /// `YYYY-MM-DD`.
    pub valid_from: Option<&'a str>,
}

/// A candidate after the boost, in boosted order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Boosted {
    pub id: String,
    /// 1-based rank in the vector search.
    pub vector_rank: usize,
    pub vector_score: f64,
    pub boosted_score: f64,
    /// Positions of the rules that matched.
    pub rules: Vec<usize>,
}

/// Per case: which expected chunks are in the top K with and without the boost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Emergence {
    /// Expected chunks in the vector search's top K.
    pub vector_top_k: Vec<String>,
    /// Expected chunks in the boosted top K.
    pub boosted_top_k: Vec<String>,
    /// In the boosted top K only: they emerge thanks to the boost.
    pub only_with_boost: Vec<String>,
    /// In the vector top K only: the boost pushed them out.
    pub lost_by_boost: Vec<String>,
}

/// Compares the top `k` of both orders for the `expected` chunks (kept in their order).
pub fn emergence(expected: &[String], k: usize, boosted: &[Boosted]) -> Emergence {
    let vector: Vec<&str> = boosted
        .iter()
        .filter(|b| b.vector_rank <= k)
        .map(|b| b.id.as_str())
        .collect();
    let top: Vec<&str> = boosted.iter().take(k).map(|b| b.id.as_str()).collect();
    let pick = |f: &dyn Fn(&str) -> bool| -> Vec<String> {
        expected.iter().filter(|e| f(e)).cloned().collect()
    };
    Emergence {
        vector_top_k: pick(&|e| vector.contains(&e)),
        boosted_top_k: pick(&|e| top.contains(&e)),
        only_with_boost: pick(&|e| top.contains(&e) && !vector.contains(&e)),
        lost_by_boost: pick(&|e| vector.contains(&e) && !top.contains(&e)),
    }
}

/// One case under the boost: both orders' top K and what emerged thanks to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoostCase {
    pub case: String,
    /// The case's K.
    pub k: usize,
    /// The vector search's top K, best first.
    pub vector_order: Vec<String>,
    /// The top K after the boost, best first.
    pub boosted_order: Vec<String>,
    /// Expected chunks in the boosted top K only.
    pub only_with_boost: Vec<String>,
    /// Expected chunks in the vector top K only.
    pub lost_by_boost: Vec<String>,
    /// Expected chunks carrying the gold label that are in the top K only thanks to the
    /// boost.
    pub gold_only_with_boost: Vec<String>,
}

/// Applies the boost to every case of `run` (the vector search's lists, `--depth` deep):
/// returns the boosted run (scores are the boosted scores; known ranks of expected chunks
/// within the list are their boosted positions, ranks known beyond the list are kept) and
/// one [`BoostCase`] per case, in case order.
pub fn boost_run(
    policy: &BoostPolicy,
    run: &crate::run::Run,
    cases: &[crate::case::Case],
    corpus: Option<&crate::case::Corpus>,
    gold_label: &str,
    k_of: &dyn Fn(&crate::case::Case) -> usize,
    today: Option<i64>,
) -> (crate::run::Run, Vec<BoostCase>) {
    let mut out = run.clone();
    let mut report = Vec::new();
    let empty: Vec<String> = Vec::new();
    for case in cases {
        let Some(list) = run.queries.get(&case.id) else {
            continue;
        };
        let candidates: Vec<Candidate<'_>> = list
            .iter()
            .map(|r| {
                let chunk = corpus.and_then(|c| c.get(&r.id));
                Candidate {
                    id: &r.id,
                    score: r.score.unwrap_or(0.0),
                    labels: chunk.map_or(&empty[..], |c| &c.labels[..]),
                    domain: chunk.and_then(|c| c.domain.as_deref()),
                    valid_from: chunk.and_then(|c| c.valid_from.as_deref()),
                }
            })
            .collect();
        let boosted = policy.apply(&candidates, today);
        let k = k_of(case);
        let e = emergence(&case.expected, k, &boosted);
        let is_gold = |id: &str| {
            corpus
                .and_then(|c| c.get(id))
                .is_some_and(|c| c.labels.iter().any(|l| l == gold_label))
        };
        report.push(BoostCase {
            case: case.id.clone(),
            k,
            vector_order: list.iter().take(k).map(|r| r.id.clone()).collect(),
            boosted_order: boosted.iter().take(k).map(|b| b.id.clone()).collect(),
            gold_only_with_boost: e
                .only_with_boost
                .iter()
                .filter(|id| is_gold(id))
                .cloned()
                .collect(),
            only_with_boost: e.only_with_boost,
            lost_by_boost: e.lost_by_boost,
        });
        let known = out.known_ranks.entry(case.id.clone()).or_default();
        for (pos, b) in boosted.iter().enumerate() {
            if known.contains_key(&b.id) || case.expected.contains(&b.id) {
                known.insert(b.id.clone(), (pos + 1, Some(b.boosted_score)));
            }
        }
        out.queries.insert(
            case.id.clone(),
            boosted
                .into_iter()
                .map(|b| crate::run::Retrieved {
                    id: b.id,
                    score: Some(b.boosted_score),
                })
                .collect(),
        );
    }
    (out, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(label: Option<&str>, factor: Option<f64>, add: Option<f64>) -> BoostRule {
        BoostRule {
            label: label.map(str::to_owned),
            factor,
            add,
            ..Default::default()
        }
    }

    #[test]
    fn gold_label_factor_lifts_a_gold_chunk_into_the_top_k() {
        let gold = ["SINTESIS_CURADA".to_owned()];
        let none: Vec<String> = Vec::new();
        let c = |id, score, labels| Candidate {
            id,
            score,
            labels,
            domain: None,
            valid_from: None,
        };
        let cands = [
            c("a", 0.80, &none[..]),
            c("b", 0.78, &none[..]),
            c("g", 0.70, &gold[..]),
        ];
        let p = BoostPolicy {
            rules: vec![rule(Some("SINTESIS_CURADA"), Some(1.2), None)],
        };
        p.validate().unwrap();
        let out = p.apply(&cands, None);
        let ids: Vec<_> = out.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["g", "a", "b"]);
        assert_eq!(out[0].vector_rank, 3);
        assert_eq!(out[0].rules, [0]);
        let e = emergence(&["g".to_owned()], 2, &out);
        assert_eq!(e.only_with_boost, ["g"]);
        assert!(e.vector_top_k.is_empty());
    }

    #[test]
    fn ties_keep_the_vector_order_and_freshness_needs_a_date() {
        let none: Vec<String> = Vec::new();
        let cands = [
            Candidate {
                id: "z",
                score: 0.5,
                labels: &none,
                domain: Some("x"),
                valid_from: Some("2025-11-01"),
            },
            Candidate {
                id: "a",
                score: 0.4,
                labels: &none,
                domain: None,
                valid_from: Some("2020-01-01"),
            },
        ];
        let p = BoostPolicy {
            rules: vec![
                BoostRule {
                    domain: Some("nothing".into()),
                    add: Some(0.3),
                    ..Default::default()
                },
                BoostRule {
                    fresh_within_days: Some(30),
                    add: Some(-0.1),
                    ..Default::default()
                },
            ],
        };
        let today = crate::time::parse_date_days("2025-11-14");
        let out = p.apply(&cands, today);
        // z: 0.5 - 0.1 = 0.4 ties with a's 0.4: the vector order wins.
        let ids: Vec<_> = out.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["z", "a"]);
        assert_eq!(out[0].rules, [1]);
        assert!(p.apply(&cands, None)[0].rules.is_empty());
    }

    #[test]
    fn bad_rules_name_their_key() {
        let two_effects = BoostPolicy {
            rules: vec![rule(Some("G"), Some(1.1), Some(0.1))],
        };
        assert_eq!(two_effects.validate().unwrap_err().key, "boost.rules[0]");
        let bad = BoostPolicy {
            rules: vec![
                rule(Some("G"), Some(1.1), None),
                rule(Some("G"), Some(0.0), None),
            ],
        };
        assert_eq!(bad.validate().unwrap_err().key, "boost.rules[1].factor");
        let no_matcher = BoostPolicy {
            rules: vec![rule(None, Some(1.1), None)],
        };
        assert!(no_matcher
            .validate()
            .unwrap_err()
            .message
            .contains("exactly one of label"));
    }
}
