//! Search engines with a vector API: OpenSearch and Elasticsearch (`_search` with kNN) and
//! Qdrant (points search). Each can also rank exactly, for `--exactness-check`.
//!
//! - `opensearch+http(s)://HOST:9200/INDEX?field=F[&space=cosinesimil|l2|innerproduct]`:
//!   `{"size": N, "query": {"knn": {F: {"vector": [...], "k": N}}}}`; exact: a
//!   `script_score` query with the k-NN plugin's `knn_score` script.
//! - `elasticsearch+http(s)://HOST:9200/INDEX?field=F[&num_candidates=C][&similarity=cosine|dot_product|l2_norm]`:
//!   `{"knn": {"field": F, "query_vector": [...], "k": N, "num_candidates": C}, "size": N}`;
//!   exact: `script_score` with `cosineSimilarity` / `dotProduct` / `l2norm`.
//! - `qdrant+http(s)://HOST:6333/COLLECTION[?vector=NAME][&id_payload=FIELD][&hnsw_ef=N]`:
//!   `POST /collections/COLLECTION/points/search` with `{"vector": ..., "limit": N}`; exact:
//!   `"params": {"exact": true}`. The chunk ID is the point ID, or the payload field
//!   `id_payload`.
//!
//! After the search, the exam asks which unretrieved expected chunks the engine holds at all
//! (an `ids` query, Qdrant's points API: see [`crate::Retriever::holds`]).
//!
//! OpenSearch / Elasticsearch: the chunk ID is the document's `_id`, or `_source.F` with
//! `id_field=F`. Credentials go in headers (`--header-env Authorization=VAR`,
//! `--header-env api-key=VAR` for Qdrant), never in the URI.
//!
//! No such server can be installed where veredicto is built: these adapters are tested
//! against local fakes that answer as the documented APIs do.

use serde_json::{json, Value};
use veredicto_core::redact;

use crate::net::Net;
use crate::{Hit, Options, Ranking, Request, RetrieveError, Retriever, Vectors};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    OpenSearch,
    Elasticsearch,
    Qdrant,
}

/// An OpenSearch / Elasticsearch index or a Qdrant collection.
pub struct EngineRetriever {
    engine: Engine,
    endpoint: String,
    shown: String,
    name: String,
    field: Option<String>,
    id_field: Option<String>,
    space: String,
    num_candidates: Option<u64>,
    hnsw_ef: Option<u64>,
    net: Net,
}

fn plain(what: &str, v: &str) -> Result<String, String> {
    if !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        Ok(v.to_owned())
    } else {
        Err(format!(
            "`{what}` `{}` must be letters, digits, `_`, `-` or `.`",
            redact::short(v)
        ))
    }
}

impl EngineRetriever {
    /// Parses `opensearch+…`, `elasticsearch+…` or `qdrant+…`.
    pub fn new(uri: &str, options: &Options) -> Result<EngineRetriever, RetrieveError> {
        let shown = redact::url(uri);
        let bad = |reason: String| RetrieveError::Uri {
            uri: shown.clone(),
            reason,
        };
        let (prefix, url) = uri
            .split_once('+')
            .ok_or_else(|| bad("expected ENGINE+http(s)://…".into()))?;
        let engine = match prefix.to_ascii_lowercase().as_str() {
            "opensearch" => Engine::OpenSearch,
            "elasticsearch" => Engine::Elasticsearch,
            "qdrant" => Engine::Qdrant,
            other => return Err(bad(format!("unknown engine `{}`", redact::short(other)))),
        };
        let lower = url.to_ascii_lowercase();
        if !lower.starts_with("http://") && !lower.starts_with("https://") {
            return Err(bad(
                "expected http:// or https:// after the engine name".into()
            ));
        }
        let scheme_end = url.find("://").map_or(0, |i| i + 3);
        let (before_query, query) = url.split_once('?').unwrap_or((url, ""));
        let path_start = before_query[scheme_end..]
            .find('/')
            .map(|i| i + scheme_end)
            .ok_or_else(|| bad("no index or collection in the path".into()))?;
        let base = &before_query[..path_start];
        let name = plain(
            "index or collection",
            before_query[path_start + 1..].trim_end_matches('/'),
        )
        .map_err(bad)?;
        let (mut field, mut id_field, mut space) = (None, None, None);
        let (mut num_candidates, mut hnsw_ef) = (None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| bad(format!("`{k}={}` is not a whole number", redact::short(v))))
            };
            match (engine, k) {
                (Engine::Qdrant, "vector")
                | (Engine::OpenSearch | Engine::Elasticsearch, "field") => {
                    field = Some(plain(k, v).map_err(bad)?)
                }
                (Engine::Qdrant, "id_payload")
                | (Engine::OpenSearch | Engine::Elasticsearch, "id_field") => {
                    id_field = Some(plain(k, v).map_err(bad)?)
                }
                (Engine::OpenSearch, "space") => match v {
                    "cosinesimil" | "l2" | "innerproduct" => space = Some(v.to_owned()),
                    _ => return Err(bad("`space` must be cosinesimil, l2 or innerproduct".into())),
                },
                (Engine::Elasticsearch, "similarity") => match v {
                    "cosine" | "dot_product" | "l2_norm" => space = Some(v.to_owned()),
                    _ => {
                        return Err(bad(
                            "`similarity` must be cosine, dot_product or l2_norm".into()
                        ))
                    }
                },
                (Engine::Elasticsearch, "num_candidates") => num_candidates = Some(number(v)?),
                (Engine::Qdrant, "hnsw_ef") => hnsw_ef = Some(number(v)?),
                _ => return Err(bad(format!("unknown parameter `{}`", redact::short(k)))),
            }
        }
        if engine != Engine::Qdrant && field.is_none() {
            return Err(bad(
                "missing `field=` (the knn_vector / dense_vector field)".into(),
            ));
        }
        let endpoint = match engine {
            Engine::Qdrant => format!("{base}/collections/{name}/points/search"),
            _ => format!("{base}/{name}/_search"),
        };
        let space = space.unwrap_or_else(|| {
            match engine {
                Engine::OpenSearch => "cosinesimil",
                _ => "cosine",
            }
            .to_owned()
        });
        Ok(EngineRetriever {
            engine,
            shown: redact::url(uri),
            endpoint,
            name,
            field,
            id_field,
            space,
            num_candidates,
            hnsw_ef,
            net: Net::new(options).map_err(|reason| RetrieveError::Setup {
                uri: redact::url(uri),
                reason,
            })?,
        })
    }

    /// The request body for one case.
    fn body(&self, vector: &[f32], k: usize, exact: bool, filters: &[(String, Value)]) -> Value {
        let field = self.field.clone().unwrap_or_default();
        // Equality filters: Qdrant `must` / `match`, OpenSearch / Elasticsearch `term`.
        let terms: Vec<Value> = filters
            .iter()
            .map(|(k, v)| json!({"term": {k.as_str(): v}}))
            .collect();
        let scored_query = if terms.is_empty() {
            json!({"match_all": {}})
        } else {
            json!({"bool": {"filter": terms}})
        };
        let mut body = match self.engine {
            Engine::Qdrant => {
                let v = match &self.field {
                    Some(name) => json!({"name": name, "vector": vector}),
                    None => json!(vector),
                };
                let mut body = json!({"vector": v, "limit": k});
                body["with_payload"] = match &self.id_field {
                    Some(f) => json!([f]),
                    None => json!(false),
                };
                let mut params = serde_json::Map::new();
                if exact {
                    params.insert("exact".into(), json!(true));
                } else if let Some(ef) = self.hnsw_ef {
                    params.insert("hnsw_ef".into(), json!(ef));
                }
                if !params.is_empty() {
                    body["params"] = Value::Object(params);
                }
                if !filters.is_empty() {
                    let must: Vec<Value> = filters
                        .iter()
                        .map(|(k, v)| json!({"key": k, "match": {"value": v}}))
                        .collect();
                    body["filter"] = json!({ "must": must });
                }
                body
            }
            Engine::OpenSearch if exact => json!({
                "size": k,
                "query": {"script_score": {
                    "query": scored_query,
                    "script": {"source": "knn_score", "lang": "knn", "params": {
                        "field": field, "query_value": vector, "space_type": self.space
                    }}
                }}
            }),
            Engine::OpenSearch => {
                let mut knn = json!({"vector": vector, "k": k});
                if !terms.is_empty() {
                    knn["filter"] = json!({"bool": {"filter": terms}});
                }
                json!({"size": k, "query": {"knn": {field: knn}}})
            }
            Engine::Elasticsearch if exact => {
                // `field` is checked to be a plain name: it cannot break out of the quotes.
                let source = match self.space.as_str() {
                    "dot_product" => {
                        format!("dotProduct(params.query_vector, '{field}') + 1000000.0")
                    }
                    "l2_norm" => format!("1 / (1 + l2norm(params.query_vector, '{field}'))"),
                    _ => format!("cosineSimilarity(params.query_vector, '{field}') + 1.0"),
                };
                json!({
                    "size": k,
                    "query": {"script_score": {
                        "query": scored_query,
                        "script": {"source": source, "params": {"query_vector": vector}}
                    }}
                })
            }
            Engine::Elasticsearch => json!({
                "size": k,
                "knn": {
                    "field": field, "query_vector": vector, "k": k,
                    "num_candidates": self.num_candidates.unwrap_or(k.max(100) as u64).max(k as u64)
                }
            }),
        };
        if self.engine == Engine::Elasticsearch && !exact && !terms.is_empty() {
            body["knn"]["filter"] = json!(terms);
        }
        body.and_source(self.engine, self.id_field.as_deref())
    }

    fn read(&self, answer: &Value) -> Result<Vec<Hit>, String> {
        let (list, id_at, score_at): (&str, String, &str) = match self.engine {
            Engine::Qdrant => (
                "/result",
                self.id_field
                    .as_ref()
                    .map_or("/id".to_owned(), |f| format!("/payload/{f}")),
                "/score",
            ),
            _ => (
                "/hits/hits",
                self.id_field
                    .as_ref()
                    .map_or("/_id".to_owned(), |f| format!("/_source/{f}")),
                "/_score",
            ),
        };
        let items = answer
            .pointer(list)
            .and_then(Value::as_array)
            .ok_or_else(|| {
                format!(
                    "the answer has no `{list}` list: {}",
                    redact::short(&redact::secrets_in_text(&answer.to_string()))
                )
            })?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let id = match item.pointer(&id_at) {
                    Some(Value::String(s)) => s.clone(),
                    // Qdrant point IDs may be unsigned integers.
                    Some(Value::Number(n)) if self.engine == Engine::Qdrant => n.to_string(),
                    other => {
                        return Err(format!(
                            "result {}: `{id_at}` is not a string: {}",
                            i + 1,
                            other.map_or("absent".to_owned(), |v| redact::short(&v.to_string()))
                        ))
                    }
                };
                Ok(Hit {
                    id,
                    score: item.pointer(score_at).and_then(Value::as_f64),
                    span: None,
                })
            })
            .collect()
    }
}

trait AndSource {
    fn and_source(self, engine: Engine, id_field: Option<&str>) -> Value;
}

impl AndSource for Value {
    /// OpenSearch / Elasticsearch: fetch only the ID field from `_source`, or nothing.
    fn and_source(mut self, engine: Engine, id_field: Option<&str>) -> Value {
        if engine != Engine::Qdrant {
            self["_source"] = match id_field {
                Some(f) => json!([f]),
                None => json!(false),
            };
        }
        self
    }
}

impl Retriever for EngineRetriever {
    fn describe(&self) -> String {
        self.shown.clone()
    }

    fn kind(&self) -> &'static str {
        match self.engine {
            Engine::OpenSearch => "opensearch",
            Engine::Elasticsearch => "elasticsearch",
            Engine::Qdrant => "qdrant",
        }
    }

    fn vectors(&self) -> Vectors {
        Vectors::Required
    }

    fn exact_search(&self) -> bool {
        true
    }

    fn holds(&self, ids: &[&str]) -> Result<Option<crate::Holding>, RetrieveError> {
        holds(self, ids).map(Some)
    }

    /// Qdrant returns its points' vectors (`qdrant_vectors`); OpenSearch and
    /// Elasticsearch cannot say (their `_source` may exclude the vector field).
    fn stored_vectors(
        &self,
        ids: &[&str],
    ) -> Result<Option<Vec<crate::StoredVector>>, RetrieveError> {
        match self.engine {
            Engine::Qdrant => qdrant_vectors(self, ids).map(Some),
            _ => Ok(None),
        }
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        let vector = request.vector.ok_or_else(|| RetrieveError::NoVector {
            case: request.case_id.to_owned(),
        })?;
        let filters = match request.filters {
            Some(f) => crate::filter_equalities(f).map_err(|reason| RetrieveError::Setup {
                uri: self.shown.clone(),
                reason: format!("case `{}`: {reason}", request.case_id),
            })?,
            None => Vec::new(),
        };
        let body = self.body(vector, request.depth, request.exact, &filters);
        let answer = self.net.post(&self.endpoint, &self.shown, &body)?;
        let mut hits = self.read(&answer).map_err(|reason| RetrieveError::Setup {
            uri: self.shown.clone(),
            reason: format!(
                "{} `{}`, case `{}`: {reason}",
                self.kind(),
                self.name,
                request.case_id
            ),
        })?;
        hits.truncate(request.depth);
        Ok(Ranking {
            hits,
            known: Default::default(),
        })
    }
}

/// Whether `id` can be a Qdrant point ID: an unsigned integer or a UUID.
fn qdrant_point_id(id: &str) -> Option<Value> {
    if let Ok(n) = id.parse::<u64>() {
        return Some(json!(n));
    }
    let hex = id.replace('-', "");
    let dashes_ok = id.len() == 32
        || (id.len() == 36 && [8, 13, 18, 23].iter().all(|&i| id.as_bytes()[i] == b'-'));
    (hex.len() == 32 && dashes_ok && hex.chars().all(|c| c.is_ascii_hexdigit())).then(|| json!(id))
}

/// A Qdrant point ID as the engine writes it back: an integer's decimal text, a UUID in
/// lower case with its dashes.
fn qdrant_point_key(id: &Value) -> Option<String> {
    match id {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => {
            let hex: String = s
                .chars()
                .filter(|c| *c != '-')
                .collect::<String>()
                .to_ascii_lowercase();
            (hex.len() == 32).then(|| {
                format!(
                    "{}-{}-{}-{}-{}",
                    &hex[..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..]
                )
            })
        }
        _ => None,
    }
}

/// The stored vectors of the Qdrant points named by `ids`, in `ids` order, those the
/// collection holds: `POST /collections/C/points` with `"with_vector": true` (or the named
/// vector, `[NAME]`), or `POST /collections/C/points/scroll` with a `match any` filter on
/// `id_payload`; [`crate::HOLDS_BATCH`] IDs a request. A point's `vector` is a list, or an
/// object of named vectors (the URI's `vector=NAME` is taken from it).
fn qdrant_vectors(
    r: &EngineRetriever,
    ids: &[&str],
) -> Result<Vec<crate::StoredVector>, RetrieveError> {
    let bad = |reason: String| RetrieveError::Setup {
        uri: r.shown.clone(),
        reason: format!("qdrant `{}`, reading stored vectors: {reason}", r.name),
    };
    let with_vector = match &r.field {
        Some(name) => json!([name]),
        None => json!(true),
    };
    let vector_of = |p: &Value| -> Result<Option<Vec<f32>>, RetrieveError> {
        let v =
            match (p.get("vector"), &r.field) {
                (Some(Value::Object(named)), Some(name)) => named.get(name),
                (Some(Value::Object(named)), None) if named.len() == 1 => named.values().next(),
                (Some(Value::Object(_)), None) => return Err(bad(
                    "the points have several named vectors: name one with `vector=NAME` in the URI"
                        .into(),
                )),
                (v, _) => v,
            };
        Ok(v.and_then(Value::as_array).map(|xs| {
            xs.iter()
                .filter_map(Value::as_f64)
                .map(|x| x as f32)
                .collect()
        }))
    };
    let points = r.endpoint.trim_end_matches("/search");
    let mut found = std::collections::BTreeMap::new();
    for batch in ids.chunks(crate::HOLDS_BATCH) {
        match r.id_field.as_deref() {
            None => {
                // Requested ID as Qdrant writes it back → the ID asked.
                let mut asked = std::collections::BTreeMap::new();
                for id in batch {
                    if let Some(point) = qdrant_point_id(id) {
                        if let Some(key) = qdrant_point_key(&point) {
                            asked.insert(key, (*id, point));
                        }
                    }
                }
                if asked.is_empty() {
                    continue;
                }
                let body = json!({
                    "ids": asked.values().map(|(_, p)| p.clone()).collect::<Vec<_>>(),
                    "with_payload": false,
                    "with_vector": with_vector,
                });
                let answer = r.net.post(points, &r.shown, &body)?;
                let list = answer
                    .get("result")
                    .and_then(Value::as_array)
                    .ok_or_else(|| {
                        bad(format!(
                            "the answer has no `/result` list: {}",
                            redact::short(&answer.to_string())
                        ))
                    })?;
                for p in list {
                    let Some((id, _)) = p
                        .get("id")
                        .and_then(qdrant_point_key)
                        .and_then(|k| asked.get(&k))
                    else {
                        continue;
                    };
                    if let Some(v) = vector_of(p)? {
                        found.insert((*id).to_owned(), v);
                    }
                }
            }
            Some(field) => {
                let body = json!({
                    "filter": {"must": [{"key": field, "match": {"any": batch}}]},
                    "limit": batch.len(),
                    "with_payload": [field],
                    "with_vector": with_vector,
                });
                let answer = r.net.post(&format!("{points}/scroll"), &r.shown, &body)?;
                let list = answer
                    .pointer("/result/points")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("the answer has no `/result/points` list".into()))?;
                for p in list {
                    let id = match p.pointer(&format!("/payload/{field}")) {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Number(n)) => n.to_string(),
                        _ => continue,
                    };
                    if batch.contains(&id.as_str()) {
                        if let Some(v) = vector_of(p)? {
                            found.insert(id, v);
                        }
                    }
                }
            }
        }
    }
    Ok(ids
        .iter()
        .filter_map(|id| found.remove(*id).map(|v| ((*id).to_owned(), v)))
        .collect())
}

/// Which of `ids` the engine holds, [`crate::HOLDS_BATCH`] per request: OpenSearch /
/// Elasticsearch by an `ids` query on `_id` (a `terms` query on `id_field`, which must then
/// be a keyword field) through the same `_search` endpoint; Qdrant by retrieving the points
/// (`POST /collections/C/points`), or by scrolling with a `match any` filter on
/// `id_payload`. A chunk ID that cannot be a Qdrant point ID is not held.
fn holds(r: &EngineRetriever, ids: &[&str]) -> Result<crate::Holding, RetrieveError> {
    let mut present = std::collections::BTreeSet::new();
    let bad = |reason: String| RetrieveError::Setup {
        uri: r.shown.clone(),
        reason: format!(
            "{} `{}`, asking which expected chunks it holds: {reason}",
            r.kind(),
            r.name
        ),
    };
    let points = r.endpoint.trim_end_matches("/search");
    for batch in ids.chunks(crate::HOLDS_BATCH) {
        let found: Vec<String> = match (r.engine, r.id_field.as_deref()) {
            (Engine::Qdrant, None) => {
                let asked: Vec<Value> = batch.iter().filter_map(|id| qdrant_point_id(id)).collect();
                if asked.is_empty() {
                    continue;
                }
                let body = json!({"ids": asked, "with_payload": false, "with_vector": false});
                let answer = r.net.post(points, &r.shown, &body)?;
                r.read(&answer)
                    .map_err(bad)?
                    .into_iter()
                    .map(|h| h.id)
                    .collect()
            }
            (Engine::Qdrant, Some(field)) => {
                let body = json!({
                    "filter": {"must": [{"key": field, "match": {"any": batch}}]},
                    "limit": batch.len(),
                    "with_payload": [field],
                    "with_vector": false
                });
                let answer = r.net.post(&format!("{points}/scroll"), &r.shown, &body)?;
                let list = answer
                    .pointer("/result/points")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("the answer has no `/result/points` list".into()))?;
                list.iter()
                    .filter_map(|p| match p.pointer(&format!("/payload/{field}")) {
                        Some(Value::String(s)) => Some(s.clone()),
                        Some(Value::Number(n)) => Some(n.to_string()),
                        _ => None,
                    })
                    .collect()
            }
            (_, None) => {
                let body = json!({"size": batch.len(), "query": {"ids": {"values": batch}}, "_source": false});
                let answer = r.net.post(&r.endpoint, &r.shown, &body)?;
                r.read(&answer)
                    .map_err(bad)?
                    .into_iter()
                    .map(|h| h.id)
                    .collect()
            }
            (_, Some(field)) => {
                let body = json!({"size": batch.len(), "query": {"terms": {field: batch}}, "_source": [field]});
                let answer = r.net.post(&r.endpoint, &r.shown, &body)?;
                r.read(&answer)
                    .map_err(bad)?
                    .into_iter()
                    .map(|h| h.id)
                    .collect()
            }
        };
        present.extend(found.into_iter().filter(|id| batch.contains(&id.as_str())));
    }
    let what = match r.engine {
        Engine::Qdrant => "collection",
        _ => "index",
    };
    Ok(crate::Holding {
        collection: format!("{what} `{}`", r.name),
        present,
    })
}
