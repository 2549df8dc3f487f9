//! The runs page's trends per configuration: the history's runs grouped as a comparison
//! groups them (the same golden set and the same policy: the runs `--baseline previous`
//! compares a run with), each group with its newest runs' Quality Score, recall and verdict.
//! Read from the runs' summaries only (never their reports), newest first.

use veredicto_core::history::RunSummary;

use crate::{HistorySpec, Result};

/// The runs of one configuration (golden set and policy).
#[derive(Debug, Clone, PartialEq)]
pub struct TrendGroup {
    /// The golden set's fingerprint (`sha256:…`).
    pub golden_fingerprint: String,
    /// The policy's fingerprint.
    pub policy_fingerprint: String,
    /// Its runs among those read.
    pub total: usize,
    /// Its newest runs (at most the page's `per_group`), oldest first.
    pub runs: Vec<RunSummary>,
}

/// A page of configurations, the one with the newest run first.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendsPage {
    /// How many configurations the runs read hold.
    pub total_groups: usize,
    /// The page's configurations.
    pub groups: Vec<TrendGroup>,
    /// Runs read (the newest `scan` of the history).
    pub runs_read: usize,
    /// Whether the history holds more runs than were read.
    pub more_runs: bool,
}

/// The configurations `offset..offset + limit` of the newest `scan` runs of the history, in
/// the order of their newest run (newest first; ties cannot occur: runs are ordered by
/// recording), each with its newest `per_group` runs. An absent history has none.
pub fn trends(
    spec: &HistorySpec,
    offset: usize,
    limit: usize,
    per_group: usize,
    scan: usize,
) -> Result<TrendsPage> {
    let history = match spec.open_read_only() {
        Ok(h) => h,
        Err(_) => {
            return Ok(TrendsPage {
                total_groups: 0,
                groups: Vec::new(),
                runs_read: 0,
                more_runs: false,
            })
        }
    };
    let runs = history.list(&veredicto_store::RunFilter {
        limit: Some(scan.saturating_add(1)),
        ..veredicto_store::RunFilter::default()
    })?;
    let more_runs = runs.len() > scan;
    let mut groups: Vec<TrendGroup> = Vec::new();
    let mut at: std::collections::HashMap<(String, String), usize> = Default::default();
    for r in runs.into_iter().take(scan) {
        let key = (r.golden_fingerprint.clone(), r.policy_fingerprint.clone());
        let i = *at.entry(key).or_insert_with(|| {
            groups.push(TrendGroup {
                golden_fingerprint: r.golden_fingerprint.clone(),
                policy_fingerprint: r.policy_fingerprint.clone(),
                total: 0,
                runs: Vec::new(),
            });
            groups.len() - 1
        });
        let g = &mut groups[i];
        g.total += 1;
        if g.runs.len() < per_group {
            g.runs.push(r);
        }
    }
    let runs_read = groups.iter().map(|g| g.total).sum();
    let total_groups = groups.len();
    let groups = groups
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|mut g| {
            g.runs.reverse();
            g
        })
        .collect();
    Ok(TrendsPage {
        total_groups,
        groups,
        runs_read,
        more_runs,
    })
}
