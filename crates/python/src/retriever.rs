//! A Python callable as a [`Retriever`]: `(query: str, k: int) -> list` of results, each an
//! `(id, score)` pair, an ID, a dict (`id`, `score`), or an object with `.metadata["id"]`
//! and an optional score (LangChain's `Document`, LlamaIndex's `NodeWithScore`); an async
//! callable's coroutine is run to completion. The exam calls it from its worker threads,
//! each taking the GIL for the call.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use veredicto_retrieve::{Hit, Ranking, Request, RetrieveError, Retriever, Vectors};

pub struct PyRetriever {
    callable: Py<PyAny>,
    name: String,
}

impl PyRetriever {
    pub fn new(py: Python<'_>, callable: Py<PyAny>) -> PyRetriever {
        let bound = callable.bind(py);
        let name = bound
            .getattr("__qualname__")
            .or_else(|_| bound.get_type().getattr("__qualname__"))
            .and_then(|n| n.extract::<String>())
            .unwrap_or_else(|_| "callable".to_owned());
        PyRetriever {
            callable,
            name: format!("python:{name}"),
        }
    }

    fn call(&self, py: Python<'_>, request: &Request<'_>) -> PyResult<Ranking> {
        let mut out = self.callable.call1(py, (request.query, request.depth))?;
        let inspect = py.import("inspect")?;
        if inspect.call_method1("isawaitable", (&out,))?.is_truthy()? {
            out = py
                .import("asyncio")?
                .call_method1("run", (ensure_coroutine(py, out)?,))?
                .unbind();
        }
        let mut hits = Vec::new();
        for item in out.bind(py).try_iter()? {
            let item = item?;
            hits.push(hit(&item)?);
            if hits.len() >= request.depth {
                break;
            }
        }
        Ok(Ranking {
            hits,
            ..Ranking::default()
        })
    }
}

/// `asyncio.run` takes a coroutine: an awaitable that is not one is wrapped.
fn ensure_coroutine(py: Python<'_>, awaitable: Py<PyAny>) -> PyResult<Py<PyAny>> {
    let inspect = py.import("inspect")?;
    if inspect
        .call_method1("iscoroutine", (&awaitable,))?
        .is_truthy()?
    {
        return Ok(awaitable);
    }
    let wrap = py.import("veredicto._adapt")?.getattr("as_coroutine")?;
    Ok(wrap.call1((awaitable,))?.unbind())
}

fn id_of(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    // Integer IDs are read as text, written exactly.
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(v.str()?.to_cow()?.into_owned());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "a result's ID must be a str (or an int), not {}",
        v.get_type().name()?
    )))
}

fn score_of(v: Option<Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
    match v {
        Some(v) if !v.is_none() => Ok(Some(v.extract::<f64>()?)),
        _ => Ok(None),
    }
}

/// One result as a hit: `(id, score)`, `id`, `{"id", "score"}`, or an object with
/// `.metadata["id"]` (else `.id`, `.node_id`) and `.score` (else `.metadata["score"]`).
fn hit(item: &Bound<'_, PyAny>) -> PyResult<Hit> {
    if let Ok(t) = item.cast::<PyTuple>() {
        let id = id_of(&t.get_item(0)?)?;
        let score = score_of(t.get_item(1).ok())?;
        return Ok(Hit { id, score });
    }
    if item.cast::<PyString>().is_ok() || item.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(Hit {
            id: id_of(item)?,
            score: None,
        });
    }
    if let Ok(d) = item.cast::<PyDict>() {
        let id = match d.get_item("id")? {
            Some(v) => id_of(&v)?,
            None => {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "a result dict needs an `id`",
                ))
            }
        };
        return Ok(Hit {
            id,
            score: score_of(d.get_item("score")?)?,
        });
    }
    // LangChain Document, LlamaIndex NodeWithScore and look-alikes.
    let metadata = item
        .getattr("metadata")
        .ok()
        .and_then(|m| m.cast_into::<PyDict>().ok());
    let mut id = None;
    if let Some(m) = &metadata {
        if let Some(v) = m.get_item("id")? {
            id = Some(id_of(&v)?);
        }
    }
    for attr in ["id", "node_id"] {
        if id.is_some() {
            break;
        }
        if let Ok(v) = item.getattr(attr) {
            if !v.is_none() {
                id = Some(id_of(&v)?);
            }
        }
    }
    let Some(id) = id else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "cannot read a chunk ID from a {} result: return (id, score) pairs, dicts with `id`, or objects with metadata[\"id\"]",
            item.get_type().name()?
        )));
    };
    let mut score = score_of(item.getattr("score").ok())?;
    if score.is_none() {
        if let Some(m) = &metadata {
            score = score_of(m.get_item("score")?)?;
        }
    }
    Ok(Hit { id, score })
}

impl Retriever for PyRetriever {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn kind(&self) -> &'static str {
        "python"
    }

    fn vectors(&self) -> Vectors {
        Vectors::Never
    }

    // The trait's error type, as every retriever returns it.
    #[allow(clippy::result_large_err)]
    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        Python::attach(|py| {
            self.call(py, request).map_err(|e| {
                let reason = e.to_string();
                // A result the binding cannot read breaks the contract for every case; an
                // exception raised by the callable fails this case only.
                if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py)
                    && reason.contains("result")
                {
                    RetrieveError::Setup {
                        uri: self.name.clone(),
                        reason,
                    }
                } else {
                    RetrieveError::Case {
                        uri: self.name.clone(),
                        reason,
                    }
                }
            })
        })
    }
}
