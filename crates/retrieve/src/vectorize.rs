//! Cloudflare Vectorize indexes through Cloudflare's REST API (Vectorize v2):
//!
//! - `vectorize://ACCOUNT_ID/INDEX`: the index at `https://api.cloudflare.com/client/v4`;
//! - `vectorize+https://HOST/…/accounts/ACCOUNT_ID/vectorize/v2/indexes/INDEX`: the index's
//!   documented URL with `vectorize+` in front (another API base, a gateway, a test server).
//!
//! Credentials: `--header-env Authorization=VAR` with VAR holding `Bearer TOKEN` (an API token
//! with Vectorize read permission); never in the URI.
//!
//! - The index is looked up once (`GET …/indexes/INDEX`): its metric (`cosine`,
//!   `dot-product`, `euclidean`) and its dimension, checked against the embedder's before any
//!   case runs.
//! - A case is `POST …/indexes/INDEX/query` with `{"vector": v, "topK": N, "returnValues":
//!   false, "returnMetadata": "none"}` and, for a case with filters, `"filter": {"domain":
//!   "x", …}` (equalities, joined by AND). Vectorize answers at most 100 results (with neither
//!   values nor metadata): a deeper exam is refused before it starts. The score is
//!   Vectorize's: a similarity for `cosine` and `dot-product`; for `euclidean` (a distance)
//!   its negative, so that higher is better as everywhere else.
//! - Which expected chunks the index holds: `POST …/indexes/INDEX/get_by_ids`, 20 IDs a
//!   request.
//!
//! Vectorize has no exact mode (its query API has no brute-force switch), so
//! `--exactness-check` is refused. Its metadata filters only match properties with a
//! metadata index, and compare single values: a `labels` filter has no equivalent.
//! Answers are Cloudflare's envelope, `{"success": …, "errors": […], "result": …}`; an answer
//! with `success: false` is an error with Cloudflare's first message.

use std::sync::OnceLock;

use serde_json::{json, Value};
use veredicto_core::redact;

use crate::net::Net;
use crate::{Hit, Options, Ranking, Request, RetrieveError, Retriever, Vectors};

/// The API base of `vectorize://`.
pub const CLOUDFLARE_API: &str = "https://api.cloudflare.com/client/v4";
/// Most results one Vectorize query returns without values or metadata.
pub const MAX_TOP_K: usize = 100;
/// IDs per `get_by_ids` request.
const IDS_BATCH: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Cosine,
    DotProduct,
    Euclidean,
}

#[derive(Debug, Clone)]
struct Index {
    metric: Metric,
    dimension: Option<usize>,
}

/// A Vectorize index.
pub struct VectorizeRetriever {
    shown: String,
    /// `…/accounts/A/vectorize/v2/indexes/I`
    index_url: String,
    name: String,
    net: Net,
    found: OnceLock<Result<Index, String>>,
}

fn plain(what: &str, v: &str) -> Result<String, String> {
    if !v.is_empty()
        && v.len() <= 64
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
    {
        Ok(v.to_owned())
    } else {
        Err(format!(
            "{what} `{}` must be up to 64 letters, digits, `_` or `-`",
            redact::short(v)
        ))
    }
}

impl VectorizeRetriever {
    /// Parses `vectorize://ACCOUNT/INDEX` or `vectorize+http(s)://…/accounts/A/vectorize/v2/indexes/I`.
    pub fn new(uri: &str, options: &Options) -> Result<VectorizeRetriever, RetrieveError> {
        let shown = redact::url(uri);
        let bad = |reason: String| RetrieveError::Uri {
            uri: shown.clone(),
            reason,
        };
        let lower = uri.to_ascii_lowercase();
        if uri.contains('?') {
            return Err(bad("takes no query parameters".into()));
        }
        let (index_url, name) = if lower.starts_with("vectorize://") {
            let rest = &uri["vectorize://".len()..];
            let (account, index) = rest
                .trim_end_matches('/')
                .split_once('/')
                .ok_or_else(|| bad("expected vectorize://ACCOUNT_ID/INDEX".into()))?;
            let account = plain("account ID", account).map_err(bad)?;
            let index = plain("index", index).map_err(bad)?;
            (
                format!("{CLOUDFLARE_API}/accounts/{account}/vectorize/v2/indexes/{index}"),
                index,
            )
        } else if lower.starts_with("vectorize+http://") || lower.starts_with("vectorize+https://")
        {
            let url = uri["vectorize+".len()..].trim_end_matches('/');
            let (head, index) = url.rsplit_once("/vectorize/v2/indexes/").ok_or_else(|| {
                bad(
                    "expected the index URL, …/accounts/ACCOUNT_ID/vectorize/v2/indexes/INDEX"
                        .into(),
                )
            })?;
            let account = head
                .rsplit_once("/accounts/")
                .map(|(_, a)| a)
                .ok_or_else(|| {
                    bad("expected …/accounts/ACCOUNT_ID/vectorize/v2/indexes/INDEX".into())
                })?;
            plain("account ID", account).map_err(bad)?;
            let index = plain("index", index).map_err(bad)?;
            (url.to_owned(), index)
        } else {
            return Err(bad(
                "expected vectorize://ACCOUNT_ID/INDEX or vectorize+https://…/indexes/INDEX".into(),
            ));
        };
        Ok(VectorizeRetriever {
            index_url,
            name,
            net: Net::new(options).map_err(|reason| RetrieveError::Setup {
                uri: shown.clone(),
                reason,
            })?,
            shown,
            found: OnceLock::new(),
        })
    }

    fn setup(&self, reason: String) -> RetrieveError {
        RetrieveError::Setup {
            uri: self.shown.clone(),
            reason: format!("vectorize index `{}`: {reason}", self.name),
        }
    }

    /// Cloudflare's envelope: the `result`, or the first error's message.
    fn result<'a>(&self, answer: &'a Value, what: &str) -> Result<&'a Value, RetrieveError> {
        if answer.get("success") == Some(&Value::Bool(false)) {
            return Err(self.setup(format!("{what}: {}", first_error(answer))));
        }
        answer
            .get("result")
            .filter(|r| !r.is_null())
            .ok_or_else(|| {
                self.setup(format!(
                    "{what}: the answer has no `result`: {}",
                    redact::short(&redact::secrets_in_text(&answer.to_string()))
                ))
            })
    }

    fn index(&self) -> Result<&Index, RetrieveError> {
        if let Some(found) = self.found.get() {
            return found.as_ref().map_err(|r| self.setup(r.clone()));
        }
        let answer = match self.net.get(&self.index_url, &self.shown) {
            Ok(a) => a,
            Err(RetrieveError::Setup { reason, .. }) if reason.starts_with("HTTP 404") => {
                return Err(self.setup(format!("no such index in this account ({reason})")))
            }
            Err(e) => return Err(e),
        };
        let result = self.result(&answer, "looking the index up")?;
        let metric = match result.pointer("/config/metric").and_then(Value::as_str) {
            Some("cosine") => Ok(Metric::Cosine),
            Some("dot-product") => Ok(Metric::DotProduct),
            Some("euclidean") => Ok(Metric::Euclidean),
            Some(other) => Err(format!("unknown metric `{}`", redact::short(other))),
            None => Err(format!(
                "the index has no `config.metric`: {}",
                redact::short(&result.to_string())
            )),
        };
        let found = metric.map(|metric| Index {
            metric,
            dimension: result
                .pointer("/config/dimensions")
                .and_then(Value::as_u64)
                .map(|d| d as usize),
        });
        self.found
            .get_or_init(|| found)
            .as_ref()
            .map_err(|r| self.setup(r.clone()))
    }
}

fn first_error(answer: &Value) -> String {
    let e = answer.pointer("/errors/0");
    match (
        e.and_then(|e| e.get("code")),
        e.and_then(|e| e.get("message")).and_then(Value::as_str),
    ) {
        (Some(code), Some(message)) => format!("error {code}: {}", redact::short(message)),
        (None, Some(message)) => redact::short(message),
        _ => format!(
            "success: false without a message: {}",
            redact::short(&answer.to_string())
        ),
    }
}

/// A case's filters as a Vectorize filter: `{"field": value, …}` (implicit `$eq`, AND).
fn vectorize_filter(filters: &[(String, Value)]) -> Result<Option<Value>, String> {
    let mut map = serde_json::Map::new();
    for (k, v) in filters {
        if k == "labels" {
            return Err(
                "a `labels` filter has no equivalent on Vectorize (its metadata filters compare single values); drop it from the case or examine the own index"
                    .into(),
            );
        }
        if !matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
            return Err(format!(
                "filter `{}`: Vectorize compares strings, numbers and booleans, not {}",
                redact::short(k),
                redact::short(&v.to_string())
            ));
        }
        map.insert(k.clone(), v.clone());
    }
    Ok((!map.is_empty()).then_some(Value::Object(map)))
}

impl Retriever for VectorizeRetriever {
    fn describe(&self) -> String {
        self.shown.clone()
    }

    fn kind(&self) -> &'static str {
        "vectorize"
    }

    fn vectors(&self) -> Vectors {
        Vectors::Required
    }

    fn prepare(&self, dimension: Option<usize>) -> Result<(), RetrieveError> {
        let index = self.index()?;
        match crate::dimension_mismatch(index.dimension, dimension, "index") {
            Some(reason) => Err(self.setup(reason)),
            None => Ok(()),
        }
    }

    fn holds(&self, ids: &[&str]) -> Result<Option<crate::Holding>, RetrieveError> {
        let url = format!("{}/get_by_ids", self.index_url);
        let mut present = std::collections::BTreeSet::new();
        for batch in ids.chunks(IDS_BATCH) {
            let answer = self.net.post(&url, &self.shown, &json!({ "ids": batch }))?;
            let what = "asking which expected chunks it holds";
            let list = self
                .result(&answer, what)?
                .as_array()
                .ok_or_else(|| self.setup(format!("{what}: `result` is not a list")))?;
            present.extend(
                list.iter()
                    .filter_map(|v| v.get("id").and_then(Value::as_str))
                    .filter(|id| batch.contains(id))
                    .map(str::to_owned),
            );
        }
        Ok(Some(crate::Holding {
            collection: format!("index `{}`", self.name),
            present,
        }))
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        let vector = request.vector.ok_or_else(|| RetrieveError::NoVector {
            case: request.case_id.to_owned(),
        })?;
        if request.depth > MAX_TOP_K {
            return Err(self.setup(format!(
                "a Vectorize query returns at most {MAX_TOP_K} results; the exam asks {} (lower --depth or the cases' K)",
                request.depth
            )));
        }
        let filters = match request.filters {
            Some(f) => crate::filter_equalities(f)
                .and_then(|f| vectorize_filter(&f))
                .map_err(|reason| self.setup(format!("case `{}`: {reason}", request.case_id)))?,
            None => None,
        };
        let index = self.index()?;
        let mut body = json!({
            "vector": vector,
            "topK": request.depth,
            "returnValues": false,
            "returnMetadata": "none",
        });
        if let Some(filter) = filters {
            body["filter"] = filter;
        }
        let answer = self
            .net
            .post(&format!("{}/query", self.index_url), &self.shown, &body)?;
        let what = format!("case `{}`", request.case_id);
        let matches = self
            .result(&answer, &what)?
            .get("matches")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                self.setup(format!("{what}: the answer has no `result.matches` list"))
            })?;
        let mut hits = Vec::with_capacity(matches.len());
        for (i, m) in matches.iter().enumerate() {
            let id = m.get("id").and_then(Value::as_str).ok_or_else(|| {
                self.setup(format!(
                    "{what}: match {}: `id` is not a string: {}",
                    i + 1,
                    redact::short(&m.to_string())
                ))
            })?;
            let score = m
                .get("score")
                .and_then(Value::as_f64)
                .map(|s| match index.metric {
                    Metric::Euclidean => -s,
                    Metric::Cosine | Metric::DotProduct => s,
                });
            hits.push(Hit {
                id: id.to_owned(),
                score,
                span: None,
            });
        }
        hits.truncate(request.depth);
        Ok(Ranking {
            hits,
            known: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectorize_uris_name_the_documented_index_url() {
        let o = Options::default();
        let r = VectorizeRetriever::new("vectorize://0123abc/kb-prod", &o).unwrap();
        assert_eq!(
            r.index_url,
            "https://api.cloudflare.com/client/v4/accounts/0123abc/vectorize/v2/indexes/kb-prod"
        );
        let r = VectorizeRetriever::new(
            "vectorize+http://127.0.0.1:9/client/v4/accounts/a1/vectorize/v2/indexes/kb/",
            &o,
        )
        .unwrap();
        assert_eq!(
            r.index_url,
            "http://127.0.0.1:9/client/v4/accounts/a1/vectorize/v2/indexes/kb"
        );
        for bad in [
            "vectorize://only-account",
            "vectorize://a/b?topK=3",
            "vectorize://a/b c",
            "vectorize+http://h/indexes/kb",
            "vectorize+ftp://h/accounts/a/vectorize/v2/indexes/kb",
        ] {
            assert!(VectorizeRetriever::new(bad, &o).is_err(), "{bad}");
        }
    }

    #[test]
    fn vectorize_filters_are_equalities_and_labels_are_refused() {
        let f = vec![
            ("domain".to_owned(), json!("billing")),
            ("year".to_owned(), json!(2024)),
        ];
        assert_eq!(
            vectorize_filter(&f).unwrap().unwrap(),
            json!({"domain": "billing", "year": 2024})
        );
        let e = vectorize_filter(&[("labels".to_owned(), json!("a"))]).unwrap_err();
        assert!(e.contains("no equivalent on Vectorize"), "{e}");
        assert!(vectorize_filter(&[]).unwrap().is_none());
    }
}
