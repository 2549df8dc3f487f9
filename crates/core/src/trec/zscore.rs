//! Z-scores (trec_eval's `-Z`): each per-query value is replaced by how many standard
//! deviations it lies from a reference mean for that query and measure.
//!
//! z = (value - mean) / stddev. With stddev 0, z is 0 if the value equals the mean. A query or
//! measure the reference does not list, or a stddev of 0 with a different value, gives
//! -1000000. The summary then averages (or sums, or geometric-means) the z values like any
//! value; `num_q` still counts queries.

use super::plan::{Plan, QueryEval, SlotKind};
use std::collections::HashMap;

/// The value printed when the reference lacks a mean.
pub const MISSING_ZSCORE: f64 = -1_000_000.0;

/// Reference means and standard deviations by query and measure name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZScores {
    by_query: HashMap<String, HashMap<String, (f64, f64)>>,
}

impl ZScores {
    /// Builds from `(qid, measure name as trec_eval prints it, mean, stddev)` rows; a
    /// repeated `(qid, measure)` keeps the first row.
    pub fn new<I>(rows: I) -> ZScores
    where
        I: IntoIterator<Item = (String, String, f64, f64)>,
    {
        let mut by_query: HashMap<String, HashMap<String, (f64, f64)>> = HashMap::new();
        for (qid, meas, mean, sd) in rows {
            by_query
                .entry(qid)
                .or_default()
                .entry(meas)
                .or_insert((mean, sd));
        }
        ZScores { by_query }
    }

    /// Converts one query's values in place.
    pub fn apply(&self, plan: &Plan, qid: &str, q: &mut QueryEval) {
        let refs = self.by_query.get(qid);
        for (slot, v) in plan.slots().iter().zip(q.values.iter_mut()) {
            if !matches!(slot.kind, SlotKind::Value { .. }) {
                continue;
            }
            *v = match refs.and_then(|m| m.get(&slot.name)) {
                None => MISSING_ZSCORE,
                Some(&(mean, sd)) if sd != 0.0 => (*v - mean) / sd,
                Some(&(mean, _)) if *v == mean => 0.0,
                Some(_) => MISSING_ZSCORE,
            };
        }
    }
}
