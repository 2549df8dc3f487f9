//! Milvus collections through Milvus' gRPC API (`milvus.proto.milvus.MilvusService`, the
//! protocol of every Milvus server and of the `milvus-lite` server; Milvus Lite has no REST
//! API):
//!
//! `milvus+http://HOST:19530/COLLECTION[?db=D][&vector=FIELD]`, or `milvus+https://…` for
//! TLS (the system's roots plus `--ca-file`, the host name checked).
//!
//! - The collection is described once (`DescribeCollection`): its primary key (`VarChar` or
//!   `Int64`) and its float-vector field (`vector=FIELD` when it has several) with its
//!   dimension, checked against the embedder's before any case runs; the field's index
//!   (`DescribeIndex`) gives the metric (`COSINE`, `IP` or `L2`).
//! - A case is `Search` with the query vector as a placeholder group, `topk` = the depth,
//!   and for a case with filters a boolean expression: one equality per field
//!   (`domain == "x"`, joined by `and`), a label as `array_contains(labels, "L")`. The chunk
//!   ID is the primary key; the score Milvus' for `COSINE` and `IP` (the similarity), minus
//!   the distance for `L2`.
//! - Which expected chunks the collection holds, and their stored vectors: `Query` with
//!   `PK in [...]`.
//!
//! Milvus has no exact mode a request can ask for (a search uses the field's index; a
//! `FLAT` index is exact, but that is the collection's choice), so `--exactness-check` is
//! refused. Values in expressions are written as Milvus' string literals (`"`, `\`, line
//! breaks and tabs escaped; other control characters refused) and field names must be
//! identifiers, so a case's filters cannot change the expression. Credentials go in
//! headers (`--header-env authorization=VAR`, gRPC metadata), never in the URI.

mod grpc;
mod proto;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::Value as Json;
use veredicto_core::redact;

use crate::{Hit, Options, Ranking, Request, RetrieveError, Retriever, Vectors};
use proto::{Answer, KeyValuePair};

const SERVICE: &str = "/milvus.proto.milvus.MilvusService/";
/// Milvus' largest `topk`.
pub const MAX_TOP_K: usize = 16_384;

/// Milvus' `DataType` values this adapter reads.
const INT64: i32 = 5;
const VARCHAR: i32 = 21;
const FLOAT_VECTOR: i32 = 101;

/// The metrics a float vector's index can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Cosine,
    Ip,
    L2,
}

/// A row asked by ID: its key, and its vector when asked for.
type Row = (String, Option<Vec<f32>>);

#[derive(Debug, Clone)]
struct Collection {
    pk: String,
    pk_int: bool,
    vector: String,
    dimension: Option<usize>,
    metric: Metric,
}

/// A Milvus collection.
pub struct MilvusRetriever {
    shown: String,
    channel: grpc::Channel,
    db: String,
    name: String,
    vector: Option<String>,
    found: OnceLock<Result<Collection, String>>,
}

/// Milvus' rule for collection, database and field names: a letter or `_` first, then
/// letters, digits and `_` (at most 255), so a name never needs quoting in an expression.
fn identifier(what: &str, v: &str) -> Result<String, String> {
    let mut chars = v.chars();
    let ok = v.len() <= 255
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(v.to_owned())
    } else {
        Err(format!(
            "{what} `{}`: Milvus names are letters, digits and `_`, starting with a letter or `_`",
            redact::short(v)
        ))
    }
}

/// A string as a Milvus expression literal.
fn literal(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                return Err(format!(
                    "the value {} holds a control character, which a Milvus expression cannot hold",
                    redact::short(&Json::String(s.to_owned()).to_string())
                ))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(out)
}

/// A JSON filter value as an expression value: a string, a number or a boolean.
fn expression_value(v: &Json) -> Result<String, String> {
    match v {
        Json::String(s) => literal(s),
        Json::Number(n) => Ok(n.to_string()),
        Json::Bool(b) => Ok(b.to_string()),
        other => Err(format!(
            "the filter value {} is neither a string, a number nor a boolean",
            redact::short(&other.to_string())
        )),
    }
}

/// A case's filters as a Milvus boolean expression (empty without filters).
fn expression(filters: &[(String, Json)]) -> Result<String, String> {
    let terms = filters
        .iter()
        .map(|(k, v)| {
            let key = identifier("filter key", k)?;
            let value = expression_value(v)?;
            Ok(if k == "labels" {
                format!("array_contains({key}, {value})")
            } else {
                format!("{key} == {value}")
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(terms.join(" and "))
}

/// A `Status` message's failure, when it is one: (code, reason). The newer `code` wins over
/// the legacy `error_code` when both are set.
fn failure(status: Option<&proto::Status>) -> Option<(i64, String)> {
    let status = status?;
    let (legacy, code) = (i64::from(status.error_code), i64::from(status.code));
    (legacy != 0 || code != 0)
        .then(|| (if code != 0 { code } else { legacy }, status.reason.clone()))
}

/// A key-value list as a map.
fn pairs(list: &[KeyValuePair]) -> BTreeMap<&str, &str> {
    list.iter()
        .map(|kv| (kv.key.as_str(), kv.value.as_str()))
        .collect()
}

/// The primary keys of an `IDs` message, as text.
fn ids(message: Option<proto::Ids>) -> Vec<String> {
    match message {
        Some(proto::Ids {
            str_id: Some(s), ..
        }) => s.data,
        Some(proto::Ids {
            int_id: Some(i), ..
        }) => i.data.into_iter().map(|i| i.to_string()).collect(),
        _ => Vec::new(),
    }
}

impl MilvusRetriever {
    /// Parses `milvus+http(s)://HOST:PORT/COLLECTION[?db=D][&vector=FIELD]`.
    pub fn new(uri: &str, options: &Options) -> Result<MilvusRetriever, RetrieveError> {
        let shown = redact::url(uri);
        let bad = |reason: String| RetrieveError::Uri {
            uri: shown.clone(),
            reason,
        };
        let lower = uri.to_ascii_lowercase();
        let (tls, rest) = if lower.starts_with("milvus+https://") {
            (true, &uri["milvus+https://".len()..])
        } else if lower.starts_with("milvus+http://") {
            (false, &uri["milvus+http://".len()..])
        } else {
            return Err(bad(
                "expected milvus+http://HOST:PORT/COLLECTION or milvus+https://HOST:PORT/COLLECTION"
                    .into(),
            ));
        };
        let (before_query, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = before_query
            .split_once('/')
            .ok_or_else(|| bad("no collection in the path".into()))?;
        if authority.contains('@') {
            return Err(bad(
                "credentials in the URI are not sent to Milvus: pass them with --header-env authorization=VAR"
                    .into(),
            ));
        }
        let authority = if authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            authority.to_owned()
        } else if authority.is_empty() {
            return Err(bad("no host".into()));
        } else {
            format!("{authority}:19530")
        };
        let name = identifier("collection", path.trim_end_matches('/')).map_err(bad)?;
        let (mut db, mut vector) = (String::new(), None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "db" => db = identifier("database", v).map_err(bad)?,
                "vector" => vector = Some(identifier("vector field", v).map_err(bad)?),
                _ => {
                    return Err(bad(format!(
                        "unknown parameter `{}` (known: db, vector)",
                        redact::short(k)
                    )))
                }
            }
        }
        Ok(MilvusRetriever {
            channel: grpc::Channel::new(&authority, tls, options).map_err(|reason| {
                RetrieveError::Setup {
                    uri: shown.clone(),
                    reason,
                }
            })?,
            shown,
            db,
            name,
            vector,
            found: OnceLock::new(),
        })
    }

    fn setup(&self, reason: String) -> RetrieveError {
        RetrieveError::Setup {
            uri: self.shown.clone(),
            reason: format!("milvus collection `{}`: {reason}", self.name),
        }
    }

    /// Calls `method` and checks the answer's `status`: the answer, or Milvus' refusal as
    /// (code, reason).
    fn call_status<Q, A>(
        &self,
        method: &str,
        request: &Q,
        _doing: &str,
    ) -> Result<Result<A, (i64, String)>, RetrieveError>
    where
        Q: prost::Message + Clone + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + Answer + 'static,
    {
        let answer: A = self
            .channel
            .call(&format!("{SERVICE}{method}"), request, &self.shown)?;
        Ok(match failure(answer.status()) {
            Some((code, reason)) => Err((code, redact::short(&redact::secrets_in_text(&reason)))),
            None => Ok(answer),
        })
    }

    /// [`MilvusRetriever::call_status`], Milvus' refusal being an error of the setup.
    fn call<Q, A>(&self, method: &str, request: &Q, doing: &str) -> Result<A, RetrieveError>
    where
        Q: prost::Message + Clone + Send + Sync + 'static,
        A: prost::Message + Default + Send + Sync + Answer + 'static,
    {
        self.call_status(method, request, doing)?
            .map_err(|(code, reason)| self.setup(format!("{doing}: Milvus error {code}: {reason}")))
    }

    /// The collection, described on first use (one description per exam).
    fn collection(&self) -> Result<&Collection, RetrieveError> {
        if let Some(found) = self.found.get() {
            return found.as_ref().map_err(|r| self.setup(r.clone()));
        }
        let found = self.describe_collection()?;
        let found = self.found.get_or_init(|| found);
        found.as_ref().map_err(|r| self.setup(r.clone()))
    }

    /// The schema's primary key and vector field, and the vector field's metric. Transport
    /// errors are returned as they are; what the answers say is the inner result.
    fn describe_collection(&self) -> Result<Result<Collection, String>, RetrieveError> {
        let request = proto::DescribeCollectionRequest {
            db_name: self.db.clone(),
            collection_name: self.name.clone(),
        };
        let answer: proto::DescribeCollectionResponse =
            self.call("DescribeCollection", &request, "describing it")?;
        let mut pk = None;
        let mut vectors = Vec::new();
        for f in answer.schema.map(|s| s.fields).unwrap_or_default() {
            if f.is_primary_key {
                pk = Some((f.name.clone(), f.data_type));
            }
            if f.data_type == FLOAT_VECTOR {
                let dim = pairs(&f.type_params)
                    .get("dim")
                    .and_then(|d| d.parse().ok());
                vectors.push((f.name, dim));
            }
        }
        let (pk, pk_int) = match pk {
            Some((name, VARCHAR)) => (name, false),
            Some((name, INT64)) => (name, true),
            Some((name, ty)) => {
                return Ok(Err(format!(
                    "its primary key `{name}` has type {ty}, neither VarChar nor Int64"
                )))
            }
            None => return Ok(Err("its schema has no primary key".to_owned())),
        };
        let names = || {
            vectors
                .iter()
                .map(|(n, _)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (vector, dimension) =
            match &self.vector {
                Some(want) => {
                    match vectors.iter().find(|(n, _)| n == want) {
                        Some(v) => v.clone(),
                        None => {
                            return Ok(Err(format!(
                        "it has no float-vector field `{want}` (its float-vector fields: {})",
                        if vectors.is_empty() { "none".to_owned() } else { names() }
                    )))
                        }
                    }
                }
                None => match vectors.as_slice() {
                    [one] => one.clone(),
                    [] => return Ok(Err("it has no float-vector field".to_owned())),
                    _ => {
                        return Ok(Err(format!(
                            "it has several float-vector fields ({}): name one with `vector=FIELD`",
                            names()
                        )))
                    }
                },
            };
        let request = proto::DescribeIndexRequest {
            db_name: self.db.clone(),
            collection_name: self.name.clone(),
            field_name: vector.clone(),
        };
        let answer: proto::DescribeIndexResponse =
            match self.call_status("DescribeIndex", &request, "describing its index")? {
                Ok(a) => a,
                Err((code, reason)) => {
                    return Ok(Err(format!(
                    "the vector field `{vector}` has no index to search (Milvus error {code}: {reason})"
                )))
                }
            };
        let metric = answer
            .index_descriptions
            .iter()
            .find(|d| d.field_name == vector)
            .and_then(|d| pairs(&d.params).get("metric_type").map(|m| m.to_string()));
        let metric = match metric {
            Some(m) => match m.to_ascii_uppercase().as_str() {
                "COSINE" => Metric::Cosine,
                "IP" => Metric::Ip,
                "L2" => Metric::L2,
                other => {
                    return Ok(Err(format!(
                        "its index on `{vector}` has the metric `{}`, not COSINE, IP or L2",
                        redact::short(other)
                    )))
                }
            },
            None => {
                return Ok(Err(format!(
                    "the vector field `{vector}` has no index to search"
                )))
            }
        };
        Ok(Ok(Collection {
            pk,
            pk_int,
            vector,
            dimension,
            metric,
        }))
    }

    /// `PK in [...]` for `ids` (an Int64 key takes only the IDs that are integers).
    fn in_expression(collection: &Collection, ids: &[&str]) -> Result<String, String> {
        let values = if collection.pk_int {
            ids.iter()
                .filter_map(|id| id.parse::<i64>().ok().map(|i| i.to_string()))
                .collect::<Vec<_>>()
        } else {
            ids.iter()
                .map(|id| literal(id))
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(format!("{} in [{}]", collection.pk, values.join(", ")))
    }

    /// The rows of `ids` the collection holds: (ID, its vector when `with_vector`).
    fn query(
        &self,
        ids: &[&str],
        with_vector: bool,
        doing: &str,
    ) -> Result<Vec<Row>, RetrieveError> {
        let collection = self.collection()?;
        let mut out = Vec::new();
        for batch in ids.chunks(crate::HOLDS_BATCH) {
            let expr = Self::in_expression(collection, batch)
                .map_err(|e| self.setup(format!("{doing}: {e}")))?;
            if expr.ends_with("[]") {
                continue;
            }
            let mut output_fields = vec![collection.pk.clone()];
            if with_vector {
                output_fields.push(collection.vector.clone());
            }
            let request = proto::QueryRequest {
                db_name: self.db.clone(),
                collection_name: self.name.clone(),
                expr,
                output_fields,
                use_default_consistency: true,
            };
            let answer: proto::QueryResults = self.call("Query", &request, doing)?;
            let rows =
                read_query(answer, collection).map_err(|e| self.setup(format!("{doing}: {e}")))?;
            out.extend(rows);
        }
        Ok(out)
    }
}

/// A `QueryResults` answer's rows: the key column and, when asked, the vector column.
fn read_query(answer: proto::QueryResults, collection: &Collection) -> Result<Vec<Row>, String> {
    let mut keys = None;
    let mut vectors = None;
    for fd in answer.fields_data {
        if fd.field_name == collection.pk {
            let scalars = fd.scalars.unwrap_or_default();
            keys = Some(if collection.pk_int {
                scalars
                    .long_data
                    .unwrap_or_default()
                    .data
                    .into_iter()
                    .map(|i| i.to_string())
                    .collect()
            } else {
                scalars.string_data.unwrap_or_default().data
            });
        } else if fd.field_name == collection.vector {
            let v = fd.vectors.unwrap_or_default();
            let dim = usize::try_from(v.dim).unwrap_or(0);
            vectors = Some((dim, v.float_vector.unwrap_or_default().data));
        }
    }
    let keys: Vec<String> = keys.unwrap_or_default();
    Ok(match vectors {
        Some((dim, data)) if dim > 0 && data.len() == dim * keys.len() => keys
            .into_iter()
            .zip(data.chunks(dim))
            .map(|(k, v)| (k, Some(v.to_vec())))
            .collect(),
        Some((dim, data)) => {
            return Err(format!(
                "{} vector values of dimension {dim} for {} rows",
                data.len(),
                keys.len()
            ))
        }
        None => keys.into_iter().map(|k| (k, None)).collect(),
    })
}

/// A `SearchResults` answer's hits for its one query.
fn read_search(answer: proto::SearchResults) -> Result<Vec<(String, f32)>, String> {
    let data = answer.results.unwrap_or_default();
    let ids = ids(data.ids);
    if data.scores.len() != ids.len() {
        return Err(format!(
            "{} IDs and {} scores",
            ids.len(),
            data.scores.len()
        ));
    }
    Ok(ids.into_iter().zip(data.scores).collect())
}

impl Retriever for MilvusRetriever {
    fn describe(&self) -> String {
        self.shown.clone()
    }

    fn kind(&self) -> &'static str {
        "milvus"
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
        let rows = self.query(ids, false, "asking which expected chunks it holds")?;
        let asked: BTreeSet<&str> = ids.iter().copied().collect();
        Ok(Some(crate::Holding {
            collection: format!("collection `{}`", self.name),
            present: rows
                .into_iter()
                .map(|(id, _)| id)
                .filter(|id| asked.contains(id.as_str()))
                .collect(),
        }))
    }

    fn stored_vectors(
        &self,
        ids: &[&str],
    ) -> Result<Option<Vec<crate::StoredVector>>, RetrieveError> {
        let mut found: BTreeMap<String, Vec<f32>> = self
            .query(ids, true, "reading stored vectors")?
            .into_iter()
            .filter_map(|(id, v)| v.map(|v| (id, v)))
            .collect();
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
        let case = |reason: String| RetrieveError::Setup {
            uri: self.shown.clone(),
            reason: format!("case `{}`: {reason}", request.case_id),
        };
        if request.depth > MAX_TOP_K {
            return Err(case(format!(
                "a Milvus search returns at most {MAX_TOP_K} results; the exam asks {} (lower --depth or the cases' K)",
                request.depth
            )));
        }
        let expr = match request.filters {
            Some(f) => expression(&crate::filter_equalities(f).map_err(&case)?).map_err(&case)?,
            None => String::new(),
        };
        let collection = self.collection()?;
        let floats: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        let group = proto::PlaceholderGroup {
            placeholders: vec![proto::PlaceholderValue {
                tag: "$0".to_owned(),
                r#type: FLOAT_VECTOR,
                values: vec![floats],
            }],
        };
        let metric = match collection.metric {
            Metric::Cosine => "COSINE",
            Metric::Ip => "IP",
            Metric::L2 => "L2",
        };
        let search = proto::SearchRequest {
            db_name: self.db.clone(),
            collection_name: self.name.clone(),
            dsl: expr,
            placeholder_group: prost::Message::encode_to_vec(&group),
            // BoolExprV1
            dsl_type: 1,
            search_params: [
                ("anns_field", collection.vector.as_str()),
                ("topk", &request.depth.to_string()),
                ("metric_type", metric),
                ("params", "{}"),
                ("round_decimal", "-1"),
            ]
            .iter()
            .map(|(k, v)| KeyValuePair::new(k, v))
            .collect(),
            nq: 1,
            use_default_consistency: true,
        };
        let answer: proto::SearchResults =
            self.call("Search", &search, &format!("case `{}`", request.case_id))?;
        let hits = read_search(answer).map_err(|e| case(format!("the search answer: {e}")))?;
        let mut hits: Vec<Hit> = hits
            .into_iter()
            .map(|(id, score)| Hit {
                id,
                score: Some(match collection.metric {
                    Metric::L2 => -f64::from(score),
                    Metric::Cosine | Metric::Ip => f64::from(score),
                }),
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
    use serde_json::json;

    #[test]
    fn filters_become_an_expression_that_values_cannot_break() {
        let f = vec![
            ("domain".to_owned(), json!("laboral")),
            ("labels".to_owned(), json!("VIGENTE")),
            ("year".to_owned(), json!(2024)),
        ];
        assert_eq!(
            expression(&f).unwrap(),
            r#"domain == "laboral" and array_contains(labels, "VIGENTE") and year == 2024"#
        );
        assert_eq!(
            expression(&[("t".to_owned(), json!("a\" or id != \"\\"))]).unwrap(),
            r#"t == "a\" or id != \"\\""#
        );
        assert!(expression(&[("t".to_owned(), json!("a\u{1}"))]).is_err());
        assert!(expression(&[("a b".to_owned(), json!("x"))]).is_err());
        assert!(expression(&[("t".to_owned(), json!(["x"]))]).is_err());
        assert_eq!(expression(&[]).unwrap(), "");
    }

    #[test]
    fn milvus_uris() {
        let o = Options::default();
        let r = MilvusRetriever::new(
            "milvus+http://127.0.0.1:19530/kb_chunks?db=prod&vector=emb",
            &o,
        )
        .unwrap();
        assert_eq!((r.db.as_str(), r.name.as_str()), ("prod", "kb_chunks"));
        assert_eq!(r.vector.as_deref(), Some("emb"));
        let tls = MilvusRetriever::new("milvus+https://h:19530/kb", &o).unwrap();
        assert_eq!(tls.name, "kb");
        assert!(MilvusRetriever::new("milvus+grpc://h:19530/kb", &o).is_err());
        assert!(MilvusRetriever::new("milvus+http://h:19530/kb-1", &o).is_err());
        assert!(MilvusRetriever::new("milvus+http://h:19530/kb?colour=red", &o).is_err());
        assert!(MilvusRetriever::new("milvus+http://u:p@h:19530/kb", &o).is_err());
        assert!(MilvusRetriever::new("milvus+http://h:19530", &o).is_err());
    }

    #[test]
    fn id_lookups_keep_to_the_key_type() {
        let c = Collection {
            pk: "id".into(),
            pk_int: true,
            vector: "v".into(),
            dimension: Some(3),
            metric: Metric::Cosine,
        };
        assert_eq!(
            MilvusRetriever::in_expression(&c, &["7", "x", "-2"]).unwrap(),
            "id in [7, -2]"
        );
        let c = Collection { pk_int: false, ..c };
        assert_eq!(
            MilvusRetriever::in_expression(&c, &["a\"b", "c"]).unwrap(),
            r#"id in ["a\"b", "c"]"#
        );
    }
}
