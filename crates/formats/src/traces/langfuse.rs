//! Langfuse's public API objects (camelCase, as `GET /api/public/traces`, `/traces/{id}`,
//! `/observations` and `/v2/scores` return them).
//!
//! - A **trace**: `id`, `timestamp`, `sessionId`, `input`, and optionally its
//!   `observations` and `scores` nested as objects (ID strings are skipped).
//! - An **observation**: `traceId`, `type` (`SPAN`, `GENERATION`, `EVENT`, `RETRIEVER`, ...),
//!   `name`, `startTime`, `input`, `output`. A retriever is a `RETRIEVER` observation, or a
//!   `SPAN` whose name contains `retriev`; its documents are its `output` (a list, or the
//!   list under `documents`, `docs`, `results`, `chunks`, `context` or `sources`), each
//!   document's ID its first of [`DOCUMENT_ID_FIELDS`].
//! - A **score**: `traceId` (`observationId`), `name`, `value`, `stringValue`,
//!   `dataType`, `timestamp`.

use super::{flatten, id_of, query_of, time_ms, Acc, Place, Retrieved, Unmapped};
use serde_json::Value;

/// Where a retrieved document's ID is looked for, in order.
pub const DOCUMENT_ID_FIELDS: &[&str] = &[
    "id",
    "document_id",
    "doc_id",
    "chunk_id",
    "document.id",
    "metadata.id",
    "metadata.chunk_id",
    "metadata.document_id",
    "metadata.doc_id",
];

const LIST_FIELDS: &[&str] = &[
    "documents",
    "docs",
    "results",
    "chunks",
    "context",
    "sources",
];

pub(super) fn record(acc: &mut Acc<'_>, value: Value, at: Place<'_>) {
    let Value::Object(o) = &value else {
        return acc.skip(Unmapped::UnknownRecord, || {
            format!("{} (not an object)", at.show())
        });
    };
    let has = |k: &str| o.get(k).is_some_and(|v| !v.is_null());
    if o.contains_key("traceId") && (has("type") || has("startTime")) {
        observation(acc, &value, None, &at);
    } else if has("name") && (o.contains_key("value") || has("stringValue") || has("dataType")) {
        score(acc, &value, None, &at);
    } else if has("id")
        && !o.contains_key("traceId")
        && (has("timestamp") || has("sessionId") || has("input") || has("observations"))
    {
        trace(acc, &value, &at);
    } else {
        acc.skip(Unmapped::UnknownRecord, || {
            format!(
                "{} (neither a trace, an observation nor a score)",
                at.show()
            )
        });
    }
}

fn trace(acc: &mut Acc<'_>, v: &Value, at: &Place<'_>) {
    let Some(id) = id_of(v.get("id")) else {
        return acc.skip(Unmapped::NoTraceId, || format!("{} (a trace)", at.show()));
    };
    let start = match time_ms(v.get("timestamp")) {
        Ok(t) => t,
        Err(()) => {
            acc.skip(Unmapped::BadTime, || {
                format!("{} (trace `timestamp`)", at.show())
            });
            None
        }
    };
    let query = v.get("input").and_then(query_of);
    let session = id_of(v.get("sessionId"));
    let t = acc.trace(&id, at);
    if let Some(ms) = start {
        t.start_ms = Some(t.start_ms.map_or(ms, |old| old.min(ms)));
    }
    if session.is_some() {
        t.session = session;
    }
    if query.is_some() {
        t.root_query = query;
    }
    if let Some(Value::Array(list)) = v.get("observations") {
        for o in list.iter().filter(|o| o.is_object()) {
            observation(acc, o, Some(&id), at);
        }
    }
    if let Some(Value::Array(list)) = v.get("scores") {
        for s in list.iter().filter(|s| s.is_object()) {
            score(acc, s, Some(&id), at);
        }
    }
}

fn is_retriever(v: &Value) -> bool {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    kind.eq_ignore_ascii_case("retriever")
        || (kind.eq_ignore_ascii_case("span")
            && v.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| n.to_lowercase().contains("retriev")))
}

fn documents(output: Option<&Value>, at: &Place<'_>) -> Retrieved {
    let list = match output {
        Some(Value::Array(a)) => Some(a),
        Some(Value::Object(o)) => LIST_FIELDS
            .iter()
            .find_map(|f| o.get(*f).and_then(Value::as_array)),
        _ => None,
    };
    let Some(list) = list else {
        return Err(format!(
            "{} (a retriever's output holds no list of documents)",
            at.show()
        ));
    };
    let mut ids = Vec::with_capacity(list.len());
    for (i, d) in list.iter().enumerate() {
        let flat = flatten(d);
        match DOCUMENT_ID_FIELDS.iter().find_map(|f| id_of(flat.get(*f))) {
            Some(id) => ids.push(id),
            None => {
                return Err(format!(
                    "{} (document {i} of a retriever's output has no ID)",
                    at.show()
                ))
            }
        }
    }
    Ok(ids)
}

fn observation(acc: &mut Acc<'_>, v: &Value, parent_trace: Option<&str>, at: &Place<'_>) {
    let Some(trace_id) = id_of(v.get("traceId")).or_else(|| parent_trace.map(str::to_owned)) else {
        return acc.skip(Unmapped::NoTraceId, || {
            format!("{} (an observation)", at.show())
        });
    };
    let start = match time_ms(v.get("startTime")) {
        Ok(t) => t,
        Err(()) => {
            acc.skip(Unmapped::BadTime, || {
                format!("{} (observation `startTime`)", at.show())
            });
            None
        }
    };
    let retriever = is_retriever(v);
    let list = retriever.then(|| documents(v.get("output"), at));
    let input = if retriever {
        v.get("input").and_then(query_of)
    } else {
        None
    };
    let t = acc.trace(&trace_id, at);
    if let Some(ms) = start {
        t.start_ms = Some(t.start_ms.map_or(ms, |old| old.min(ms)));
    }
    let when = start.unwrap_or(i64::MAX);
    if let Some(list) = list {
        if let Some(q) = input {
            if t.retriever_query.as_ref().is_none_or(|(w, _)| when < *w) {
                t.retriever_query = Some((when, q));
            }
        }
        if t.retrieved.as_ref().is_none_or(|(w, _)| when < *w) {
            t.retrieved = Some((when, list));
        }
    }
}

fn score(acc: &mut Acc<'_>, v: &Value, parent_trace: Option<&str>, at: &Place<'_>) {
    let name = v.get("name").and_then(Value::as_str);
    let label = v.get("stringValue").filter(|s| !s.is_null());
    let trace = id_of(v.get("traceId")).or_else(|| parent_trace.map(str::to_owned));
    let time = time_ms(v.get("timestamp")).unwrap_or(None);
    acc.feedback(name, label, v.get("value"), trace, None, time, at);
}
