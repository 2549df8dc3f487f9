//! An HTTP search service (`http://…`, `https://…`) and the JSON contract it shares with
//! `cmd:` retrievers.
//!
//! Request, one per case (POST, `Content-Type: application/json`):
//! `{"query": "...", "k": N, "query_vector": [...], "filters": {...}}` — `query_vector`
//! only when the case has one or an embedder is given, `filters` only when the case
//! declares filters (sent as declared). A service with its own request format gets the
//! body of a template instead ([`crate::template`]).
//! Response: `{"results": [{"id": "...", "score": 0.83}, ...]}` in rank order, `score`
//! optional. Other shapes are read with JSON pointers ([`crate::Options`]): the list, and
//! the ID and the score inside each element. The answer is parsed as it streams in and
//! only the first `k` results are kept.

use serde_json::{json, Value};
use veredicto_core::redact;

use crate::answer::Shape;
use crate::net::Net;
use crate::template::BodyTemplate;
use crate::{Options, Ranking, Request, RetrieveError, Retriever, Vectors};

/// An HTTP search service.
pub struct HttpRetriever {
    url: String,
    shown: String,
    net: Net,
    shape: Shape,
    template: Option<BodyTemplate>,
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
            shown: shown.clone(),
            net: Net::new(options).map_err(|reason| RetrieveError::Setup {
                uri: shown.clone(),
                reason,
            })?,
            shape,
            template: options.body_template.clone(),
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
        match &self.template {
            None => Vectors::Optional,
            Some(t) if t.uses_vector() => Vectors::Required,
            // The template sends no vector: none is computed.
            Some(_) => Vectors::Never,
        }
    }

    fn embedding_based(&self) -> bool {
        // A template may send the vector to a hybrid ranking: veredicto cannot tell.
        false
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        let setup = |reason: String| RetrieveError::Setup {
            uri: self.shown.clone(),
            reason: format!("case `{}`: {reason}", request.case_id),
        };
        let payload = match &self.template {
            Some(t) => t.render(request).map_err(setup)?,
            None => serde_json::to_vec(&request_body(request)).unwrap_or_default(),
        };
        let answer = self
            .net
            .post_reading(&self.url, &self.shown, &payload, |reader| {
                self.shape
                    .read(reader, request.depth, None)
                    .map_err(|f| f.within(&format!("case `{}`", request.case_id)))
            })?;
        Ok(Ranking {
            hits: answer.hits,
            known: Default::default(),
        })
    }
}
