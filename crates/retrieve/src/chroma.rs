//! Chroma collections through Chroma's HTTP API (v2, the server of the `chromadb` package):
//!
//! `chroma+http(s)://HOST:8000/COLLECTION[?tenant=T][&database=D]`
//!
//! - The collection is looked up by name once (`GET /api/v2/tenants/T/databases/D/collections/NAME`,
//!   defaults `default_tenant` / `default_database`): its ID, its distance (`cosine`, `l2`,
//!   `ip`) and its dimension, checked against the embedder's before any case runs.
//! - A case is `POST …/collections/ID/query` with `{"query_embeddings": [v], "n_results": N,
//!   "include": ["distances"]}` and, for a case with filters, a `where` clause: one equality
//!   per field (`{"domain": "x"}`, several joined by `$and`), a label as
//!   `{"labels": {"$contains": L}}` (Chroma's array metadata). The chunk ID is the record ID;
//!   the score is `1 − distance` for `cosine` and `ip` (the similarity), `−distance` for `l2`.
//! - Which expected chunks the collection holds: `POST …/collections/ID/get` with their IDs
//!   (nothing else included).
//!
//! Chroma has no exact mode: its query always goes through the collection's HNSW index (no
//! brute-force switch in the API), so `--exactness-check` is refused for this retriever.
//! Credentials go in headers (`--header-env x-chroma-token=VAR` or `Authorization`), never in
//! the URI.

use std::sync::OnceLock;

use serde_json::{json, Value};
use veredicto_core::redact;

use crate::net::Net;
use crate::{Hit, Options, Ranking, Request, RetrieveError, Retriever, Vectors};

/// Chroma's distance functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Space {
    Cosine,
    L2,
    Ip,
}

/// What the lookup by name says about the collection.
#[derive(Debug, Clone)]
struct Collection {
    id: String,
    space: Space,
    dimension: Option<usize>,
}

/// A Chroma collection.
pub struct ChromaRetriever {
    shown: String,
    /// `…/api/v2/tenants/T/databases/D/collections`
    collections: String,
    name: String,
    net: Net,
    found: OnceLock<Result<Collection, String>>,
}

/// Chroma's rule for tenant, database and collection names (3 to 512 of `[a-zA-Z0-9._-]`,
/// starting and ending with a letter or digit), so a name never needs escaping in a path.
fn chroma_name(what: &str, v: &str) -> Result<String, String> {
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let ok = (3..=512).contains(&v.len())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && ends(v.chars().next())
        && ends(v.chars().last());
    if ok {
        Ok(v.to_owned())
    } else {
        Err(format!(
            "{what} `{}`: Chroma names are 3 to 512 letters, digits, `_`, `-` or `.`, starting and ending with a letter or digit",
            redact::short(v)
        ))
    }
}

impl ChromaRetriever {
    /// Parses `chroma+http(s)://HOST:PORT/COLLECTION[?tenant=T][&database=D]`.
    pub fn new(uri: &str, options: &Options) -> Result<ChromaRetriever, RetrieveError> {
        let shown = redact::url(uri);
        let bad = |reason: String| RetrieveError::Uri {
            uri: shown.clone(),
            reason,
        };
        let url = uri
            .get("chroma+".len()..)
            .filter(|_| {
                uri.get(..7)
                    .is_some_and(|p| p.eq_ignore_ascii_case("chroma+"))
            })
            .ok_or_else(|| bad("expected chroma+http(s)://HOST:PORT/COLLECTION".into()))?;
        let lower = url.to_ascii_lowercase();
        if !lower.starts_with("http://") && !lower.starts_with("https://") {
            return Err(bad("expected http:// or https:// after `chroma+`".into()));
        }
        let scheme_end = url.find("://").map_or(0, |i| i + 3);
        let (before_query, query) = url.split_once('?').unwrap_or((url, ""));
        let path_start = before_query[scheme_end..]
            .find('/')
            .map(|i| i + scheme_end)
            .ok_or_else(|| bad("no collection in the path".into()))?;
        let base = &before_query[..path_start];
        let name = chroma_name(
            "collection",
            before_query[path_start + 1..].trim_end_matches('/'),
        )
        .map_err(bad)?;
        let (mut tenant, mut database) =
            ("default_tenant".to_owned(), "default_database".to_owned());
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "tenant" => tenant = chroma_name("tenant", v).map_err(bad)?,
                "database" => database = chroma_name("database", v).map_err(bad)?,
                _ => {
                    return Err(bad(format!(
                        "unknown parameter `{}` (known: tenant, database)",
                        redact::short(k)
                    )))
                }
            }
        }
        Ok(ChromaRetriever {
            collections: format!("{base}/api/v2/tenants/{tenant}/databases/{database}/collections"),
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
            reason: format!("chroma collection `{}`: {reason}", self.name),
        }
    }

    /// The collection, looked up by name on first use (one lookup per exam).
    fn collection(&self) -> Result<&Collection, RetrieveError> {
        if let Some(found) = self.found.get() {
            return found.as_ref().map_err(|r| self.setup(r.clone()));
        }
        let answer = match self
            .net
            .get(&format!("{}/{}", self.collections, self.name), &self.shown)
        {
            Ok(answer) => answer,
            // Connection failures and the server's refusals are told as they are; a 404
            // names the collection.
            Err(RetrieveError::Setup { reason, .. }) if reason.starts_with("HTTP 404") => {
                return Err(self.setup(format!(
                    "no such collection in this tenant and database ({reason})"
                )))
            }
            Err(e) => return Err(e),
        };
        let found = read_collection(&answer);
        let found = self.found.get_or_init(|| found);
        found.as_ref().map_err(|r| self.setup(r.clone()))
    }

    fn score(&self, space: Space, distance: f64) -> f64 {
        match space {
            Space::Cosine | Space::Ip => 1.0 - distance,
            Space::L2 => -distance,
        }
    }
}

fn read_collection(answer: &Value) -> Result<Collection, String> {
    let id = answer
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            format!(
                "the collection lookup has no `id`: {}",
                redact::short(&answer.to_string())
            )
        })?
        .to_owned();
    // The distance: the configuration's (Chroma 1.x), or the legacy `hnsw:space` metadata;
    // Chroma's default is l2.
    let space = answer
        .pointer("/configuration_json/hnsw/space")
        .or_else(|| answer.pointer("/configuration_json/spann/space"))
        .or_else(|| answer.pointer("/metadata/hnsw:space"))
        .and_then(Value::as_str)
        .unwrap_or("l2");
    let space = match space {
        "cosine" => Space::Cosine,
        "l2" => Space::L2,
        "ip" => Space::Ip,
        other => return Err(format!("unknown distance `{}`", redact::short(other))),
    };
    let dimension = answer
        .get("dimension")
        .and_then(Value::as_u64)
        .map(|d| d as usize);
    Ok(Collection {
        id,
        space,
        dimension,
    })
}

/// A case's filters as a Chroma `where` clause, `None` without filters.
fn where_clause(filters: &[(String, Value)]) -> Option<Value> {
    let mut terms: Vec<Value> = filters
        .iter()
        .map(|(k, v)| {
            if k == "labels" {
                json!({ k.as_str(): {"$contains": v} })
            } else {
                json!({ k.as_str(): v })
            }
        })
        .collect();
    match terms.len() {
        0 => None,
        1 => terms.pop(),
        _ => Some(json!({ "$and": terms })),
    }
}

/// The first (only) query's IDs and distances of a `query` answer.
fn read_query(answer: &Value) -> Result<Vec<(String, Option<f64>)>, String> {
    let ids = answer
        .pointer("/ids/0")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            format!(
                "the answer has no `ids` list: {}",
                redact::short(&redact::secrets_in_text(&answer.to_string()))
            )
        })?;
    let distances = answer.pointer("/distances/0").and_then(Value::as_array);
    ids.iter()
        .enumerate()
        .map(|(i, id)| match id {
            Value::String(s) => Ok((
                s.clone(),
                distances.and_then(|d| d.get(i)).and_then(Value::as_f64),
            )),
            other => Err(format!(
                "result {}: the ID is not a string: {}",
                i + 1,
                redact::short(&other.to_string())
            )),
        })
        .collect()
}

impl Retriever for ChromaRetriever {
    fn describe(&self) -> String {
        self.shown.clone()
    }

    fn kind(&self) -> &'static str {
        "chroma"
    }

    fn vectors(&self) -> Vectors {
        Vectors::Required
    }

    fn prepare(&self, dimension: Option<usize>) -> Result<(), RetrieveError> {
        let collection = self.collection()?;
        match crate::dimension_mismatch(collection.dimension, dimension, "collection") {
            Some(reason) => Err(self.setup(reason)),
            None => Ok(()),
        }
    }

    fn holds(&self, ids: &[&str]) -> Result<Option<crate::Holding>, RetrieveError> {
        let collection = self.collection()?;
        let url = format!("{}/{}/get", self.collections, collection.id);
        let mut present = std::collections::BTreeSet::new();
        for batch in ids.chunks(crate::HOLDS_BATCH) {
            let answer = self
                .net
                .post(&url, &self.shown, &json!({"ids": batch, "include": []}))?;
            let list = answer.get("ids").and_then(Value::as_array).ok_or_else(|| {
                self.setup(format!(
                    "asking which expected chunks it holds: the answer has no `ids` list: {}",
                    redact::short(&answer.to_string())
                ))
            })?;
            present.extend(
                list.iter()
                    .filter_map(Value::as_str)
                    .filter(|id| batch.contains(id))
                    .map(str::to_owned),
            );
        }
        Ok(Some(crate::Holding {
            collection: format!("collection `{}`", self.name),
            present,
        }))
    }

    fn stored_vectors(
        &self,
        ids: &[&str],
    ) -> Result<Option<Vec<crate::StoredVector>>, RetrieveError> {
        let collection = self.collection()?;
        let url = format!("{}/{}/get", self.collections, collection.id);
        let mut found = std::collections::BTreeMap::new();
        for batch in ids.chunks(crate::HOLDS_BATCH) {
            let answer = self.net.post(
                &url,
                &self.shown,
                &json!({"ids": batch, "include": ["embeddings"]}),
            )?;
            let (Some(got), Some(vectors)) = (
                answer.get("ids").and_then(Value::as_array),
                answer.get("embeddings").and_then(Value::as_array),
            ) else {
                return Err(self.setup(format!(
                    "reading stored vectors: the answer has no `ids` and `embeddings` lists: {}",
                    redact::short(&answer.to_string())
                )));
            };
            for (id, v) in got.iter().zip(vectors) {
                let (Some(id), Some(v)) = (id.as_str(), v.as_array()) else {
                    continue;
                };
                let v: Vec<f32> = v
                    .iter()
                    .filter_map(Value::as_f64)
                    .map(|x| x as f32)
                    .collect();
                found.insert(id.to_owned(), v);
            }
        }
        Ok(Some(
            ids.iter()
                .filter_map(|id| found.remove(*id).map(|v| ((*id).to_owned(), v)))
                .collect(),
        ))
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
        let collection = self.collection()?;
        let mut body = json!({
            "query_embeddings": [vector],
            "n_results": request.depth,
            "include": ["distances"],
        });
        if let Some(clause) = where_clause(&filters) {
            body["where"] = clause;
        }
        let url = format!("{}/{}/query", self.collections, collection.id);
        let answer = self.net.post(&url, &self.shown, &body)?;
        let mut hits: Vec<Hit> = read_query(&answer)
            .map_err(|reason| self.setup(format!("case `{}`: {reason}", request.case_id)))?
            .into_iter()
            .map(|(id, distance)| Hit {
                id,
                score: distance.map(|d| self.score(collection.space, d)),
                span: None,
            })
            .collect();
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
    fn several_filters_are_joined_by_and_and_labels_use_contains() {
        let f = vec![
            ("domain".to_owned(), json!("billing")),
            ("labels".to_owned(), json!("faq")),
        ];
        assert_eq!(
            where_clause(&f).unwrap(),
            json!({"$and": [{"domain": "billing"}, {"labels": {"$contains": "faq"}}]})
        );
        assert_eq!(where_clause(&f[..1]).unwrap(), json!({"domain": "billing"}));
        assert!(where_clause(&[]).is_none());
    }

    #[test]
    fn chroma_uri_names_follow_chromas_rule() {
        let o = Options::default();
        assert!(ChromaRetriever::new("chroma+http://127.0.0.1:8000/kb", &o).is_err());
        assert!(ChromaRetriever::new("chroma+http://127.0.0.1:8000/kb-1?tenant=t1", &o).is_err());
        assert!(ChromaRetriever::new("chroma+http://127.0.0.1:8000/kb-1?colour=red", &o).is_err());
        assert!(ChromaRetriever::new("chroma+ftp://127.0.0.1:8000/kb-1", &o).is_err());
        let r = ChromaRetriever::new(
            "chroma+http://127.0.0.1:8000/kb-1?tenant=acme&database=prod",
            &o,
        )
        .unwrap();
        assert_eq!(
            r.collections,
            "http://127.0.0.1:8000/api/v2/tenants/acme/databases/prod/collections"
        );
    }
}
