//! An HTTP search service (`http://…`, `https://…`) and the JSON contract it shares with
//! `cmd:` retrievers.
//!
//! Request, one per case (POST, `Content-Type: application/json`):
//! `{"query": "...", "k": N, "query_vector": [...], "filters": {...}}` — `query_vector`
//! only when the case has one or an embedder is given, `filters` only when the case
//! declares filters (sent as declared).
//! Response: `{"results": [{"id": "...", "score": 0.83}, ...]}` in rank order, `score`
//! optional. Other shapes are read with JSON pointers ([`crate::Options`]): the list, and
//! the ID and the score inside each element.

use serde_json::{json, Value};
use veredicto_core::redact;

use crate::net::Net;
use crate::{Hit, Options, Ranking, Request, RetrieveError, Retriever, Vectors};

/// An HTTP search service.
pub struct HttpRetriever {
    url: String,
    shown: String,
    net: Net,
    shape: Shape,
}

/// Where the results are in an answer.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    results: String,
    id: String,
    score: String,
}

impl Shape {
    pub(crate) fn new(options: &Options) -> Result<Shape, String> {
        for (name, p) in [
            ("--results-pointer", &options.results_pointer),
            ("--id-pointer", &options.id_pointer),
            ("--score-pointer", &options.score_pointer),
        ] {
            if !p.is_empty() && !p.starts_with('/') {
                return Err(format!(
                    "{name} `{}` is not a JSON pointer (it must be empty or start with `/`)",
                    redact::short(p)
                ));
            }
        }
        Ok(Shape {
            results: options.results_pointer.clone(),
            id: options.id_pointer.clone(),
            score: options.score_pointer.clone(),
        })
    }

    /// The hits in an answer, or why the answer breaks the contract.
    pub(crate) fn read(&self, answer: &Value) -> Result<Vec<Hit>, String> {
        let list = answer
            .pointer(&self.results)
            .ok_or_else(|| {
                format!(
                    "the answer has no result list at `{}`: {}",
                    self.results,
                    redact::short(&redact::secrets_in_text(&answer.to_string()))
                )
            })?
            .as_array()
            .ok_or_else(|| format!("`{}` in the answer is not a list", self.results))?;
        let mut hits = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let id = match item.pointer(&self.id) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => {
                    return Err(format!(
                        "result {}: `{}` is not a string: {}",
                        i + 1,
                        self.id,
                        redact::short(&other.to_string())
                    ))
                }
                None => return Err(format!("result {}: no `{}`", i + 1, self.id)),
            };
            let score = match item.pointer(&self.score) {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => n.as_f64(),
                Some(other) => {
                    return Err(format!(
                        "result {} (`{}`): `{}` is not a number: {}",
                        i + 1,
                        redact::short(&id),
                        self.score,
                        redact::short(&other.to_string())
                    ))
                }
            };
            hits.push(Hit { id, score });
        }
        Ok(hits)
    }
}

/// The request body of the contract.
pub(crate) fn request_body(request: &Request<'_>) -> Value {
    let mut body = json!({"query": request.query, "k": request.depth});
    if let Some(v) = request.vector {
        body["query_vector"] = json!(v);
    }
    if let Some(f) = request.filters {
        body["filters"] = Value::Object(f.clone());
    }
    body
}

impl HttpRetriever {
    /// A retriever POSTing to `url`.
    pub fn new(url: &str, options: &Options) -> Result<HttpRetriever, RetrieveError> {
        let shown = redact::url(url);
        let shape = Shape::new(options).map_err(|reason| RetrieveError::Uri {
            uri: shown.clone(),
            reason,
        })?;
        Ok(HttpRetriever {
            url: url.to_owned(),
            shown,
            net: Net::new(options),
            shape,
        })
    }
}

impl Retriever for HttpRetriever {
    fn describe(&self) -> String {
        self.shown.clone()
    }

    fn kind(&self) -> &'static str {
        "http"
    }

    fn vectors(&self) -> Vectors {
        Vectors::Optional
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        let answer = self
            .net
            .post(&self.url, &self.shown, &request_body(request))?;
        let mut hits = self
            .shape
            .read(&answer)
            .map_err(|reason| RetrieveError::Setup {
                uri: self.shown.clone(),
                reason: format!("case `{}`: {reason}", request.case_id),
            })?;
        hits.truncate(request.depth);
        Ok(Ranking {
            hits,
            known: Default::default(),
        })
    }
}
