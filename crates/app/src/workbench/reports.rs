//! A run's report and two runs side by side, kept between requests. A recorded run never
//! changes, nor do the runs before it (the history is append-only and sealed), so a run's
//! report (its baseline, the comparison, the recent runs of its trends) and a comparison of
//! two runs stay right while the corpus file and the workbench's ratings do not change: they
//! are part of the key. Computing one reads up to 21 whole runs and runs the randomisation
//! test; a second visit reads none.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::{relevant_outranking, stamp, CorpusCache, RunCache};
use crate::history::{CompareRequest, Compared, ReportRequest};
use crate::{HistorySpec, Result};

/// Values kept by key, the last `N` used.
#[derive(Debug)]
struct Kept<T> {
    entries: Mutex<VecDeque<(String, Arc<T>)>>,
    capacity: usize,
}

impl<T> Kept<T> {
    fn new(capacity: usize) -> Kept<T> {
        Kept {
            entries: Mutex::new(VecDeque::new()),
            capacity,
        }
    }

    fn get(&self, key: &str) -> Option<Arc<T>> {
        let e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        e.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    fn put(&self, key: String, value: Arc<T>) {
        let mut e = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        e.retain(|(k, _)| *k != key);
        e.push_front((key, value));
        e.truncate(self.capacity);
    }
}

/// The reports and comparisons computed before (a few of each).
#[derive(Debug)]
pub struct ReportCache {
    reports: Kept<String>,
    compared: Kept<Compared>,
}

impl Default for ReportCache {
    fn default() -> Self {
        ReportCache {
            reports: Kept::new(3),
            compared: Kept::new(4),
        }
    }
}

impl ReportCache {
    /// An empty cache.
    pub fn new() -> ReportCache {
        ReportCache::default()
    }
}

fn corpus_key(corpus: Option<&Path>) -> String {
    match corpus {
        Some(p) => format!("{}:{:?}", p.display(), stamp(p)),
        None => "-".to_owned(),
    }
}

/// The HTML report of the run `run` (ID, unique prefix, `latest`), as `veredicto report
/// --format html` renders it, with the chunks rated relevant beside `golden` that outrank
/// expected ones: computed once per run, corpus state and ratings.
pub fn run_report_html(
    spec: &HistorySpec,
    cache: &ReportCache,
    runs: &RunCache,
    corpora: &CorpusCache,
    corpus: Option<&Path>,
    golden: &Path,
    run: &str,
) -> Result<Arc<String>> {
    let current = runs.get(spec, run)?;
    let relevant = relevant_outranking(golden, &current)?;
    let key = format!(
        "{}\n{}\n{}\n{:?}",
        spec.as_str(),
        current.meta.id,
        corpus_key(corpus),
        relevant
    );
    if let Some(html) = cache.reports.get(&key) {
        return Ok(html);
    }
    let chunks = match corpus {
        Some(p) => Some(corpora.get(p)?),
        None => None,
    };
    let r = crate::history::report_run_over(
        spec,
        &ReportRequest {
            run: &current.meta.id,
            baseline: crate::Baseline::Previous,
            corpus,
            documents: None,
            window: 20,
            seed: veredicto_core::compare::DEFAULT_SEED,
        },
        chunks.as_deref(),
    )?;
    let html = Arc::new(veredicto_report::html::render_with_judgments(
        &veredicto_report::html::HtmlInput {
            current: &r.current,
            baseline_comparison: r.comparison.as_ref(),
            diagnosis: Some(&r.diagnosis),
            history: &r.history,
        },
        &relevant,
    ));
    cache.reports.put(key, html.clone());
    Ok(html)
}

/// [`crate::history::compare_runs`] of `req` (its corpus read through `corpora`): computed
/// once per pair of runs and corpus state.
pub fn compare_runs_kept(
    spec: &HistorySpec,
    cache: &ReportCache,
    runs: &RunCache,
    corpora: &CorpusCache,
    req: &CompareRequest<'_>,
) -> Result<Arc<Compared>> {
    let new = runs.get(spec, req.run)?;
    let base = req
        .baseline
        .resolve(&spec.open_read_only()?, &new.meta)?
        .unwrap_or_default();
    let key = format!(
        "{}\n{}\n{base}\n{}\n{} {} {} {}",
        spec.as_str(),
        new.meta.id,
        corpus_key(req.corpus),
        req.seed,
        req.permutations,
        req.bootstrap,
        req.window
    );
    if let Some(c) = cache.compared.get(&key) {
        return Ok(c);
    }
    let chunks = match req.corpus {
        Some(p) => Some(corpora.get(p)?),
        None => None,
    };
    let compared = Arc::new(crate::history::compare_runs_over(
        spec,
        &CompareRequest {
            run: &new.meta.id,
            ..req.clone()
        },
        chunks.as_deref(),
    )?);
    cache.compared.put(key, compared.clone());
    Ok(compared)
}
