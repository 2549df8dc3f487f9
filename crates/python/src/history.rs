//! `History`: the run history (an SQLite file or a `postgres://` URL) read from Python: the
//! runs (what `veredicto runs list` shows), one recorded run, and the comparison of a run
//! with its baseline ([`veredicto_app::history::compare_runs`], what `veredicto compare`
//! runs). Values leave as the JSON the command line writes.

use pyo3::prelude::*;
use veredicto_app::history::{compare_runs, CompareRequest};
use veredicto_app::{Baseline, HistorySpec};
use veredicto_store::RunFilter;

use crate::errors::{self, VeredictoError};

#[pyclass(module = "veredicto._native", frozen)]
pub struct NativeHistory {
    spec: String,
}

#[pymethods]
impl NativeHistory {
    #[new]
    fn new(spec: String) -> Self {
        NativeHistory { spec }
    }

    /// The recorded runs, newest first, as a JSON array (`veredicto runs list --format json`).
    #[pyo3(signature = (limit=None, label=None))]
    fn runs_json(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
        label: Option<String>,
    ) -> PyResult<String> {
        let spec = HistorySpec::chosen(self.spec.clone());
        let runs = py.detach(|| -> veredicto_app::Result<_> {
            let history = spec.open_read_only()?;
            Ok(history.list(&RunFilter {
                label,
                limit,
                ..RunFilter::default()
            })?)
        });
        let runs = errors::app(py, runs)?;
        serde_json::to_string(&runs).map_err(|e| VeredictoError::new_err(e.to_string()))
    }

    /// One recorded run (ID, unique prefix or `latest`): `veredicto runs show --format json`.
    fn show_json(&self, py: Python<'_>, run: &str) -> PyResult<String> {
        let spec = HistorySpec::chosen(self.spec.clone());
        let recorded =
            py.detach(|| -> veredicto_app::Result<_> { Ok(spec.open_read_only()?.get(run)?) });
        let recorded = errors::app(py, recorded)?;
        Ok(veredicto_report::json::run(&recorded))
    }

    /// A run compared with its baseline: `veredicto compare --format json`'s output.
    #[pyo3(signature = (run="latest", baseline="previous", corpus=None, seed=None))]
    fn compare_json(
        &self,
        py: Python<'_>,
        run: &str,
        baseline: &str,
        corpus: Option<std::path::PathBuf>,
        seed: Option<u64>,
    ) -> PyResult<String> {
        let baseline: Baseline = baseline
            .parse()
            .map_err(|e: String| VeredictoError::new_err(e))?;
        let spec = HistorySpec::chosen(self.spec.clone());
        let compared = py.detach(|| {
            compare_runs(
                &spec,
                &CompareRequest {
                    run,
                    baseline,
                    corpus: corpus.as_deref(),
                    documents: None,
                    seed: seed.unwrap_or(veredicto_core::compare::DEFAULT_SEED),
                    permutations: 10_000,
                    bootstrap: 10_000,
                    window: veredicto_app::history::DEFAULT_WINDOW,
                },
            )
        });
        let c = errors::app(py, compared)?;
        Ok(veredicto_report::json::comparison(
            &c.comparison,
            &c.diagnosis,
        ))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeHistory>()?;
    Ok(())
}
