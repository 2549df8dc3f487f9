//! `RelevanceEvaluator`: pytrec_eval's evaluator over the application's in-memory trec_eval
//! ([`veredicto_app::trec::evaluate_in_memory`]). The dicts are read while the GIL is held;
//! the evaluation runs without it, on every core.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use veredicto_app::trec::{evaluate_in_memory, Judgements, Results};
use veredicto_core::trec::plan::SlotKind;
use veredicto_core::trec::plan::{measure_names, SETS};
use veredicto_core::trec::{EvalOptions, Plan, QueryEval, Summary};

use crate::errors::{self, VeredictoError};

/// pytrec_eval's `RelevanceEvaluator`: judgements `{qid: {docid: level}}` and trec_eval
/// measures (`map`, `P.5,10`, `ndcg_cut.10`, or a set such as `official`), then
/// `evaluate({qid: {docid: score}}) -> {qid: {name: value}}` for each query both name.
#[pyclass(module = "veredicto._native", subclass)]
pub struct RelevanceEvaluator {
    judgements: Judgements,
    plan: Plan,
    opts: EvalOptions,
    names: Vec<Py<PyString>>,
}

#[pymethods]
impl RelevanceEvaluator {
    #[new]
    #[pyo3(signature = (query_relevance, measures, relevance_level = 1, judged_docs_only_flag = false))]
    fn new(
        py: Python<'_>,
        query_relevance: &Bound<'_, PyDict>,
        measures: Vec<String>,
        relevance_level: i64,
        judged_docs_only_flag: bool,
    ) -> PyResult<Self> {
        let plan =
            Plan::from_args(&measures).map_err(|e| VeredictoError::new_err(e.to_string()))?;
        let mut judgements = Judgements::new();
        for (qid, docs) in query_relevance.iter() {
            let qid: String = qid.extract()?;
            let docs = docs.cast::<PyDict>()?;
            let mut list = Vec::with_capacity(docs.len());
            for (doc, rel) in docs.iter() {
                list.push((doc.extract::<String>()?, rel.extract::<i32>()?));
            }
            judgements.insert(qid, list);
        }
        let names = plan
            .slots()
            .iter()
            .map(|s| PyString::intern(py, &s.name).unbind())
            .collect();
        Ok(RelevanceEvaluator {
            judgements,
            plan,
            opts: EvalOptions {
                relevance_level,
                judged_only: judged_docs_only_flag,
                ..EvalOptions::default()
            },
            names,
        })
    }

    /// Evaluates a run `{qid: {docid: score}}`: `{qid: {measure: value}}` for each query
    /// that has both judgements and results (as pytrec_eval: others are left out).
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        scores: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (qids, evals) = self.run(py, scores)?;
        let out = PyDict::new(py);
        for (qid, eval) in qids.into_iter().zip(evals) {
            let row = PyDict::new(py);
            for (name, v) in self.names.iter().zip(eval.values) {
                row.set_item(name.bind(py), v)?;
            }
            out.set_item(qid, row)?;
        }
        Ok(out)
    }

    /// The summary over the evaluated queries, as `veredicto trec` prints it (`all`):
    /// `{name: value}`; counts summed, `gm_*` geometric means, the rest arithmetic means.
    fn summary<'py>(
        &self,
        py: Python<'py>,
        scores: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (_, evals) = self.run(py, scores)?;
        let mut summary = Summary::new(&self.plan);
        for e in &evals {
            summary.add(e);
        }
        let values = summary.finish(&self.plan, None);
        let out = PyDict::new(py);
        for ((name, slot), v) in self.names.iter().zip(self.plan.slots()).zip(values) {
            if matches!(slot.kind, SlotKind::Value { .. }) {
                out.set_item(name.bind(py), v)?;
            }
        }
        Ok(out)
    }
}

impl RelevanceEvaluator {
    /// Reads the run (GIL held), then evaluates it without the GIL: the query IDs evaluated
    /// and their values.
    #[allow(clippy::type_complexity)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        scores: &Bound<'py, PyDict>,
    ) -> PyResult<(Vec<Bound<'py, PyAny>>, Vec<QueryEval>)> {
        let mut results: Vec<Results> = Vec::with_capacity(scores.len());
        let mut qids: Vec<Bound<'py, PyAny>> = Vec::with_capacity(scores.len());
        for (qid, docs) in scores.iter() {
            let q = qid.cast::<PyString>()?;
            let Some(query) = self.judgements.position(&q.to_cow()?) else {
                continue;
            };
            let docs = docs.cast::<PyDict>()?;
            let mut r = Results {
                query,
                ids: Vec::with_capacity(docs.len() * 8),
                ends: Vec::with_capacity(docs.len()),
                scores: Vec::with_capacity(docs.len()),
            };
            for (doc, score) in docs.iter() {
                r.ids.extend_from_slice(utf8(doc.cast::<PyString>()?)?);
                r.ends.push(r.ids.len());
                r.scores.push(score.extract::<f64>()?);
            }
            if r.ends.is_empty() {
                continue;
            }
            results.push(r);
            qids.push(qid);
        }
        let (judgements, plan, opts) = (&self.judgements, &self.plan, &self.opts);
        let evals = py
            .detach(|| evaluate_in_memory(judgements, &results, plan, opts))
            .map_err(|e| errors::to_py(py, &e))?;
        Ok((qids, evals))
    }
}

/// The UTF-8 bytes of a Python `str`, borrowed from the string: CPython keeps a string's
/// UTF-8 form (for an ASCII string, its own buffer), so no bytes object is made and freed
/// per document, as `to_cow` does under the 3.9 limited API. `PyUnicode_AsUTF8AndSize` is
/// in every CPython 3 (declared in the limited API from 3.10, with the same signature).
fn utf8<'a>(s: &'a Bound<'_, PyString>) -> PyResult<&'a [u8]> {
    extern "C" {
        fn PyUnicode_AsUTF8AndSize(
            unicode: *mut pyo3::ffi::PyObject,
            size: *mut pyo3::ffi::Py_ssize_t,
        ) -> *const std::ffi::c_char;
    }
    let mut len: pyo3::ffi::Py_ssize_t = 0;
    // SAFETY: `s` is a live `str` held with the GIL; the returned buffer belongs to the
    // string and lives as long as it, which outlives the borrow returned.
    let data = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut len) };
    if data.is_null() {
        return Err(PyErr::fetch(s.py()));
    }
    // SAFETY: CPython returns `len` bytes of UTF-8 at `data` (a string that cannot be
    // encoded, e.g. with lone surrogates, returned null above).
    Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len as usize) })
}

/// The output names one measure argument gives (`nDCG@10` -> `ndcg_cut_10`, `P.5,10` ->
/// `P_5`, `P_10`).
#[pyfunction]
fn output_names(measure: &str) -> PyResult<Vec<String>> {
    let plan = Plan::from_args(&[measure]).map_err(|e| VeredictoError::new_err(e.to_string()))?;
    Ok(plan
        .slots()
        .iter()
        .filter(|s| matches!(s.kind, SlotKind::Value { .. }))
        .map(|s| s.name.clone())
        .collect())
}

/// trec_eval's measure names (pytrec_eval's `supported_measures`).
#[pyfunction]
fn supported_measure_names() -> Vec<&'static str> {
    measure_names().collect()
}

/// trec_eval's measure sets: name -> measures (pytrec_eval's `supported_nicknames`).
#[pyfunction]
fn measure_sets() -> Vec<(&'static str, Vec<&'static str>)> {
    SETS.iter().map(|(n, ms)| (*n, ms.to_vec())).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RelevanceEvaluator>()?;
    m.add_function(wrap_pyfunction!(supported_measure_names, m)?)?;
    m.add_function(wrap_pyfunction!(measure_sets, m)?)?;
    m.add_function(wrap_pyfunction!(output_names, m)?)?;
    Ok(())
}
