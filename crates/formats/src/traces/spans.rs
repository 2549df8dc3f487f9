//! OpenInference spans, from OpenInference JSON records or OTLP JSON, and Phoenix
//! annotations.
//!
//! Attribute names follow the OpenInference semantic conventions: `openinference.span.kind`
//! (`CHAIN`, `RETRIEVER`, `RERANKER`, `LLM`, ...), `input.value`, `output.value`,
//! `session.id`, `retrieval.documents.N.document.id` (and `.score`, `.content`),
//! `reranker.query`, `reranker.output_documents.N.document.id`.

use super::stream::Origin;
use super::{clean_id, flatten, id_of, query_of, time_ms, Acc, Place, Retrieved, Unmapped};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a span says, whichever spelling it came in.
struct Span {
    trace_id: Option<String>,
    span_id: Option<String>,
    parent: Option<String>,
    start: Value,
    kind: Option<String>,
    attrs: BTreeMap<String, Value>,
}

fn first<'v>(flat: &'v BTreeMap<String, Value>, names: &[&str]) -> Option<&'v Value> {
    names.iter().find_map(|n| flat.get(*n))
}

fn text<'v>(flat: &'v BTreeMap<String, Value>, names: &[&str]) -> Option<&'v str> {
    first(flat, names)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

pub(super) fn record(acc: &mut Acc<'_>, origin: Origin, value: Value, at: Place<'_>) {
    let span = match origin {
        Origin::OtlpSpan => otlp_span(&value),
        Origin::Plain => {
            let flat = flatten(&value);
            if flat.contains_key("annotator_kind") || flat.keys().any(|k| k.starts_with("result."))
            {
                return annotation(acc, &flat, &at);
            }
            match json_span(flat) {
                Some(s) => s,
                None => {
                    return acc.skip(Unmapped::UnknownRecord, || {
                        format!("{} (neither a span nor an annotation)", at.show())
                    })
                }
            }
        }
    };
    add_span(acc, span, &at);
}

/// A span of the OpenTelemetry SDKs' JSON (`context.trace_id`, `parent_id`, `start_time`,
/// flat `attributes`) or of Phoenix's span export (`context.*`, `span_kind`, nested
/// `attributes`, or `attributes.*` columns).
fn json_span(flat: BTreeMap<String, Value>) -> Option<Span> {
    let trace_id = id_of(first(
        &flat,
        &["context.trace_id", "trace_id", "traceId", "context.traceId"],
    ))
    .map(|s| clean_id(&s));
    let span_id = id_of(first(
        &flat,
        &["context.span_id", "span_id", "spanId", "context.spanId"],
    ))
    .map(|s| clean_id(&s));
    if span_id.is_none() && trace_id.is_none() {
        return None;
    }
    let parent = id_of(first(
        &flat,
        &["parent_id", "parent_span_id", "parentSpanId"],
    ))
    .map(|s| clean_id(&s));
    let start = first(
        &flat,
        &[
            "start_time",
            "startTime",
            "start_time_unix_nano",
            "startTimeUnixNano",
        ],
    )
    .cloned()
    .unwrap_or(Value::Null);
    let top_kind = text(&flat, &["span_kind"]).map(str::to_owned);
    let attrs: BTreeMap<String, Value> = flat
        .into_iter()
        .filter_map(|(k, v)| k.strip_prefix("attributes.").map(|a| (a.to_owned(), v)))
        .collect();
    let kind = text(&attrs, &["openinference.span.kind"])
        .map(str::to_owned)
        .or(top_kind);
    Some(Span {
        trace_id,
        span_id,
        parent,
        start,
        kind,
        attrs,
    })
}

/// A span of an OTLP JSON request: hex `traceId`, `spanId`, `parentSpanId`,
/// `startTimeUnixNano` as a string, `attributes` as key/value pairs with typed values.
fn otlp_span(v: &Value) -> Span {
    let get = |names: &[&str]| names.iter().find_map(|n| v.get(*n));
    let id = |names: &[&str]| id_of(get(names)).map(|s| clean_id(&s));
    let mut attrs = BTreeMap::new();
    if let Some(Value::Array(list)) = get(&["attributes"]) {
        for kv in list {
            if let (Some(k), Some(x)) = (kv.get("key").and_then(Value::as_str), kv.get("value")) {
                any_value(&mut attrs, k.to_owned(), x);
            }
        }
    }
    let kind = text(&attrs, &["openinference.span.kind"]).map(str::to_owned);
    Span {
        trace_id: id(&["traceId", "trace_id"]),
        span_id: id(&["spanId", "span_id"]),
        parent: id(&["parentSpanId", "parent_span_id"]),
        start: get(&["startTimeUnixNano", "start_time_unix_nano"])
            .cloned()
            .unwrap_or(Value::Null),
        kind,
        attrs,
    }
}

/// An OTLP `AnyValue` into flat attributes: arrays as `key.N`, key/value lists as
/// `key.sub`.
fn any_value(out: &mut BTreeMap<String, Value>, key: String, v: &Value) {
    let Some(o) = v.as_object() else {
        return;
    };
    let field = |names: &[&str]| names.iter().find_map(|n| o.get(*n));
    if let Some(s) = field(&["stringValue", "string_value"]) {
        out.entry(key).or_insert_with(|| s.clone());
    } else if let Some(b) = field(&["boolValue", "bool_value"]) {
        out.entry(key).or_insert_with(|| b.clone());
    } else if let Some(i) = field(&["intValue", "int_value"]) {
        let n = match i {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| i.clone()),
            other => other.clone(),
        };
        out.entry(key).or_insert(n);
    } else if let Some(d) = field(&["doubleValue", "double_value"]) {
        out.entry(key).or_insert_with(|| d.clone());
    } else if let Some(b) = field(&["bytesValue", "bytes_value"]) {
        out.entry(key).or_insert_with(|| b.clone());
    } else if let Some(a) = field(&["arrayValue", "array_value"]) {
        if let Some(Value::Array(values)) = a.get("values") {
            for (i, x) in values.iter().enumerate() {
                any_value(out, format!("{key}.{i}"), x);
            }
        }
    } else if let Some(l) = field(&["kvlistValue", "kvlist_value"]) {
        if let Some(Value::Array(values)) = l.get("values") {
            for kv in values {
                if let (Some(k), Some(x)) = (kv.get("key").and_then(Value::as_str), kv.get("value"))
                {
                    any_value(out, format!("{key}.{k}"), x);
                }
            }
        }
    }
}

/// The documents under `prefix` (`retrieval.documents`): their IDs by position, or where
/// one has none.
fn documents(attrs: &BTreeMap<String, Value>, prefix: &str, at: &Place<'_>) -> Retrieved {
    let mut by_position: BTreeMap<usize, Option<String>> = BTreeMap::new();
    let dotted = format!("{prefix}.");
    for (k, v) in attrs.range(dotted.clone()..) {
        let Some(rest) = k.strip_prefix(&dotted) else {
            break;
        };
        let Some((n, field)) = rest.split_once('.') else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else {
            continue;
        };
        let slot = by_position.entry(n).or_default();
        if field == "document.id" {
            *slot = id_of(Some(v));
        }
    }
    let mut ids = Vec::with_capacity(by_position.len());
    for (n, id) in by_position {
        match id {
            Some(id) => ids.push(id),
            None => {
                return Err(format!(
                    "{} (`{prefix}.{n}` has no `document.id`)",
                    at.show()
                ))
            }
        }
    }
    Ok(ids)
}

fn add_span(acc: &mut Acc<'_>, s: Span, at: &Place<'_>) {
    let Some(trace_id) = s.trace_id.clone() else {
        return acc.skip(Unmapped::NoTraceId, || format!("{} (a span)", at.show()));
    };
    let start = match time_ms(Some(&s.start)) {
        Ok(t) => t,
        Err(()) => {
            acc.skip(Unmapped::BadTime, || {
                format!(
                    "{} (start `{}`)",
                    at.show(),
                    veredicto_core::redact::short(&s.start.to_string())
                )
            });
            None
        }
    };
    let kind = s.kind.as_deref().map(str::to_ascii_uppercase);
    let root = s.parent.is_none();
    let input = s.attrs.get("input.value").and_then(query_of);
    let session = text(&s.attrs, &["session.id"]).map(str::to_owned);
    let list = match kind.as_deref() {
        Some("RETRIEVER") => Some(documents(&s.attrs, "retrieval.documents", at)),
        Some("RERANKER") => Some(documents(&s.attrs, "reranker.output_documents", at)),
        _ => None,
    };
    let rerank_query = s.attrs.get("reranker.query").and_then(query_of);
    let t = acc.trace(&trace_id, at);
    if let Some(ms) = start {
        t.start_ms = Some(t.start_ms.map_or(ms, |old| old.min(ms)));
    }
    if t.session.is_none() {
        t.session = session;
    }
    if root {
        if let Some(q) = input.clone() {
            t.root_query = Some(q);
        }
    }
    let when = start.unwrap_or(i64::MAX);
    match (kind.as_deref(), list) {
        (Some("RETRIEVER"), Some(list)) => {
            if let Some(q) = input {
                if t.retriever_query.as_ref().is_none_or(|(w, _)| when < *w) {
                    t.retriever_query = Some((when, q));
                }
            }
            if t.retrieved.as_ref().is_none_or(|(w, _)| when < *w) {
                t.retrieved = Some((when, list));
            }
        }
        (Some("RERANKER"), Some(list)) => {
            if let Some(q) = rerank_query.or(input) {
                if t.retriever_query.is_none() {
                    t.retriever_query = Some((when, q));
                }
            }
            if t.reranked.as_ref().is_none_or(|(w, _)| when >= *w) {
                t.reranked = Some((when, list));
            }
        }
        _ => {}
    }
    if let Some(span_id) = &s.span_id {
        acc.note_span(span_id, &trace_id);
    }
}

/// A Phoenix annotation: `name`, `annotator_kind`, `result` (`label`, `score`), on a span
/// (`span_id`) or a trace (`trace_id`).
fn annotation(acc: &mut Acc<'_>, flat: &BTreeMap<String, Value>, at: &Place<'_>) {
    let name = text(flat, &["name", "annotation_name"]);
    let label = first(flat, &["result.label", "label"]);
    let score = first(flat, &["result.score", "score"]);
    let trace =
        id_of(first(flat, &["trace_id", "context.trace_id", "traceId"])).map(|s| clean_id(&s));
    let span = id_of(first(flat, &["span_id", "context.span_id", "spanId"])).map(|s| clean_id(&s));
    let time = time_ms(first(flat, &["created_at", "updated_at", "timestamp"])).unwrap_or(None);
    acc.feedback(name, label, score, trace, span, time, at);
}

#[cfg(test)]
pub(super) fn otlp_attributes_for_test(v: &Value) -> BTreeMap<String, Value> {
    otlp_span(v).attrs
}
