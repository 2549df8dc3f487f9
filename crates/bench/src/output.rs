//! trec_eval-format output (`measure <ws> qid <ws> value`) and the agreement check.

use std::collections::BTreeMap;

/// The measures every peer is asked for, as trec_eval's `-m` arguments.
pub const MEASURE_ARGS: [&str; 5] = ["map", "P.10", "recall.10", "ndcg_cut.10", "recip_rank"];

/// The same measures as trec_eval names them in its output (and pytrec_eval in its dicts).
pub const MEASURES: [&str; 5] = ["map", "P_10", "recall_10", "ndcg_cut_10", "recip_rank"];

/// The `all` lines of trec_eval-format output: measure -> value. Lines that are not
/// `measure qid number` (e.g. `runid ... name`) are skipped.
pub fn all_means(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(measure), Some(qid), Some(value), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if qid != "all" {
            continue;
        }
        if let Ok(v) = value.parse::<f64>() {
            out.insert(measure.to_string(), v);
        }
    }
    out
}

/// The result of comparing one peer's means with the reference's.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Agreement {
    /// Measures present in both with |a - b| <= tolerance.
    pub agreeing: Vec<String>,
    /// (measure, reference value, peer value) for those further apart.
    pub differing: Vec<(String, f64, f64)>,
    /// Measures of [`MEASURES`] missing from either side.
    pub missing: Vec<String>,
    pub max_abs_diff: f64,
}

impl Agreement {
    pub fn ok(&self) -> bool {
        self.differing.is_empty() && self.missing.is_empty()
    }
}

/// Compares `peer` with `reference` on [`MEASURES`].
pub fn compare(
    reference: &BTreeMap<String, f64>,
    peer: &BTreeMap<String, f64>,
    tolerance: f64,
) -> Agreement {
    let mut a = Agreement {
        agreeing: vec![],
        differing: vec![],
        missing: vec![],
        max_abs_diff: 0.0,
    };
    for m in MEASURES {
        match (reference.get(m), peer.get(m)) {
            (Some(&r), Some(&p)) => {
                let d = (r - p).abs();
                a.max_abs_diff = a.max_abs_diff.max(d);
                if d <= tolerance {
                    a.agreeing.push(m.to_string());
                } else {
                    a.differing.push((m.to_string(), r, p));
                }
            }
            _ => a.missing.push(m.to_string()),
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREC_EVAL: &str =
        "map                   \tall\t0.1880\nP_10                  \tall\t0.0400\n\
        runid                 \tall\tveredicto-bench\nmap                   \t1002\t0.5000\n";

    #[test]
    fn keeps_only_numeric_all_lines() {
        let m = all_means(TREC_EVAL);
        assert_eq!(m.len(), 2);
        assert_eq!(m["map"], 0.188);
        assert_eq!(m["P_10"], 0.04);
    }

    #[test]
    fn compare_within_tolerance() {
        let r = all_means("map all 0.1880\nP_10 all 0.0400\nrecall_10 all 0.3\nndcg_cut_10 all 0.2\nrecip_rank all 0.19\n");
        let mut p = r.clone();
        p.insert("map".into(), 0.18804);
        assert!(compare(&r, &p, 1e-4).ok());
        p.insert("map".into(), 0.1885);
        let a = compare(&r, &p, 1e-4);
        assert!(!a.ok());
        assert_eq!(a.differing.len(), 1);
        p.remove("P_10");
        assert_eq!(compare(&r, &p, 1e-4).missing, vec!["P_10".to_string()]);
    }
}
