//! Trace files written from the formats' published schemas and examples: the OpenTelemetry
//! Python SDK's span JSON with OpenInference attributes, Phoenix's span and annotation
//! records, OTLP JSON (`ExportTraceServiceRequest`), and Langfuse's API objects. The same
//! conversation is told in each format, so each must give the same events.

use super::*;
use veredicto_core::signals::EventKind;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn read(files: &[PathBuf], format: TraceFormat) -> (Vec<TraceEvent>, TraceReport) {
    read_traces(files, format, &ReadSettings::default()).unwrap()
}

/// (answer_id, event, retrieved, thumb) of each event.
fn summary(events: &[TraceEvent]) -> Vec<(String, EventKind, Vec<String>, Option<Thumb>)> {
    events
        .iter()
        .map(|e| {
            (
                e.event.answer_id.clone().unwrap(),
                e.event.event,
                e.event.retrieved.clone(),
                e.event.value,
            )
        })
        .collect()
}

fn unmapped(report: &TraceReport) -> Vec<(&'static str, usize)> {
    report
        .unmapped
        .iter()
        .map(|u| (u.reason.as_str(), u.count))
        .collect()
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The conversation every format tells: a question, its reformulation 25 s later (reranked,
/// then liked), and a retrieval-only trace without a session.
fn expected() -> Vec<(String, EventKind, Vec<String>, Option<Thumb>)> {
    let a = "4bf92f3577b34da6a3ce929d0e0e4736";
    let b = "5b8efff798038103d269b633813fc60c";
    let c = "0af7651916cd43dd8448eb211c80319c";
    vec![
        (
            a.into(),
            EventKind::Answer,
            ids(&["silver_art_012", "gold_003", "silver_art_015"]),
            None,
        ),
        (
            b.into(),
            EventKind::Reformulate,
            ids(&["silver_acuerdo_006", "silver_acuerdo_004"]),
            None,
        ),
        (b.into(), EventKind::Thumbs, vec![], Some(Thumb::Up)),
        (c.into(), EventKind::Answer, vec![], None),
    ]
}

/// The OpenTelemetry Python SDK's `ReadableSpan.to_json()` (as its console exporter prints
/// it: indented objects one after another), with OpenInference attributes.
const SDK_SPANS: &str = r#"{
    "name": "RAG",
    "context": {
        "trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736",
        "span_id": "0x00f067aa0ba902b7",
        "trace_state": "[]"
    },
    "kind": "SpanKind.INTERNAL",
    "parent_id": null,
    "start_time": "2025-11-17T09:15:40.000000Z",
    "end_time": "2025-11-17T09:15:42.500000Z",
    "status": {"status_code": "OK"},
    "attributes": {
        "openinference.span.kind": "CHAIN",
        "session.id": "s-1",
        "input.value": "dia extra asuntos propios indefinidos",
        "input.mime_type": "text/plain",
        "output.value": "Sí, un día."
    },
    "events": [],
    "links": [],
    "resource": {"attributes": {"service.name": "rag"}, "schema_url": ""}
}
{
    "name": "retrieve",
    "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x53995c3f42cd8ad8", "trace_state": "[]"},
    "kind": "SpanKind.INTERNAL",
    "parent_id": "0x00f067aa0ba902b7",
    "start_time": "2025-11-17T09:15:40.100000Z",
    "end_time": "2025-11-17T09:15:40.300000Z",
    "status": {"status_code": "OK"},
    "attributes": {
        "openinference.span.kind": "RETRIEVER",
        "session.id": "s-1",
        "input.value": "dia extra asuntos propios indefinidos",
        "retrieval.documents.0.document.id": "silver_art_012",
        "retrieval.documents.0.document.score": 0.81,
        "retrieval.documents.0.document.content": "Artículo 12. Permisos retribuidos...",
        "retrieval.documents.1.document.id": "gold_003",
        "retrieval.documents.1.document.score": 0.77,
        "retrieval.documents.2.document.id": "silver_art_015",
        "retrieval.documents.2.document.score": 0.74
    },
    "events": [],
    "links": []
}
{
    "name": "ChatCompletion",
    "context": {"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "0x1c8cbd3a6d3a6f5e", "trace_state": "[]"},
    "kind": "SpanKind.CLIENT",
    "parent_id": "0x00f067aa0ba902b7",
    "start_time": "2025-11-17T09:15:40.400000Z",
    "end_time": "2025-11-17T09:15:42.400000Z",
    "attributes": {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "dia extra asuntos propios indefinidos",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Sí, un día.",
        "output.value": "Sí, un día."
    }
}
"#;

/// Phoenix's span records (nested `attributes`, `span_kind`, no `0x`), one a line, and its
/// annotation records (`name`, `annotator_kind`, `result`).
const PHOENIX_SPANS: &str = r#"{"name":"RAG","span_kind":"CHAIN","context":{"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b174"},"parent_id":null,"start_time":"2025-11-17T09:16:05.000+00:00","end_time":"2025-11-17T09:16:07.000+00:00","status_code":"OK","attributes":{"openinference":{"span":{"kind":"CHAIN"}},"session":{"id":"s-1"},"input":{"value":"{\"question\": \"¿Tengo un día adicional de asuntos propios con contrato indefinido?\", \"chat_history\": []}","mime_type":"application/json"}}}
{"name":"retrieve","span_kind":"RETRIEVER","context":{"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b175"},"parent_id":"eee19b7ec3c1b174","start_time":"2025-11-17T09:16:05.100+00:00","attributes":{"openinference":{"span":{"kind":"RETRIEVER"}},"input":{"value":"asuntos propios contrato indefinido"},"retrieval":{"documents":[{"document":{"id":"silver_acuerdo_004","score":0.8,"content":"..."}},{"document":{"id":"silver_acuerdo_006","score":0.79}},{"document":{"id":"silver_art_015","score":0.5}}]}}}
{"name":"rerank","span_kind":"RERANKER","context":{"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b176"},"parent_id":"eee19b7ec3c1b174","start_time":"2025-11-17T09:16:05.300+00:00","attributes":{"openinference":{"span":{"kind":"RERANKER"}},"reranker":{"query":"asuntos propios contrato indefinido","top_k":2,"input_documents":[{"document":{"id":"silver_acuerdo_004"}},{"document":{"id":"silver_acuerdo_006"}},{"document":{"id":"silver_art_015"}}],"output_documents":[{"document":{"id":"silver_acuerdo_006","score":3.1}},{"document":{"id":"silver_acuerdo_004","score":2.2}}]}}}
{"name":"retrieve","span_kind":"RETRIEVER","context":{"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"},"parent_id":null,"start_time":"2025-11-17T11:00:00.000+00:00","attributes":{"openinference":{"span":{"kind":"RETRIEVER"}},"input":{"value":"retención del 7 % el primer año de actividad"},"retrieval":{"documents":[{"document":{"id":"gold_001","score":0.9}},{"document":{"score":0.5,"content":"a passage without an id"}}]}}}
{"span_id":"eee19b7ec3c1b174","name":"user_feedback","annotator_kind":"HUMAN","result":{"label":"thumbs-up","score":1,"explanation":"clear"},"metadata":{}}
{"span_id":"b7ad6b7169203331","name":"hallucination","annotator_kind":"LLM","result":{"label":"factual","score":0}}
{"span_id":"b7ad6b7169203331","name":"user feedback","annotator_kind":"HUMAN","result":{"label":"meh"}}
{"span_id":"ffffffffffffffff","name":"feedback","annotator_kind":"HUMAN","result":{"score":0}}
{"foo":1}
"#;

#[test]
fn openinference_spans_and_phoenix_annotations_become_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = write(dir.path(), "sdk.json", SDK_SPANS);
    let phoenix = write(dir.path(), "phoenix.jsonl", PHOENIX_SPANS);
    let (events, report) = read(&[sdk, phoenix.clone()], TraceFormat::OpenInference);
    assert_eq!(summary(&events), expected());
    assert_eq!(events[0].event.conversation_id, "s-1");
    assert_eq!(
        events[0].event.query,
        "dia extra asuntos propios indefinidos"
    );
    assert_eq!(events[0].event.time, "2025-11-17T09:15:40.000Z");
    assert_eq!(
        events[1].event.query,
        "¿Tengo un día adicional de asuntos propios con contrato indefinido?"
    );
    assert_eq!(
        events[3].event.conversation_id,
        "trace:0af7651916cd43dd8448eb211c80319c"
    );
    assert_eq!(
        events[3].event.query,
        "retención del 7 % el primer año de actividad"
    );
    assert_eq!(
        unmapped(&report),
        [
            ("unknown_record", 1),
            ("retrieved_without_ids", 1),
            ("not_feedback", 1),
            ("feedback_value", 1),
            ("feedback_without_trace", 1)
        ]
    );
    let examples: Vec<&str> = report
        .unmapped
        .iter()
        .map(|u| u.examples[0].as_str())
        .collect();
    let at = |line: usize| format!("{}:{line}:1", phoenix.display());
    assert_eq!(
        examples[0],
        format!("{} (neither a span nor an annotation)", at(9))
    );
    assert_eq!(
        examples[1],
        format!("{} (`retrieval.documents.1` has no `document.id`)", at(4))
    );
    assert_eq!(examples[2], format!("{} (`hallucination`)", at(6)));
    assert_eq!(
        examples[3],
        format!("{} (`user feedback` = \"meh\")", at(7))
    );
    assert_eq!(examples[4], format!("{} (span `ffffffffffffffff`)", at(8)));
    assert_eq!(
        (
            report.records,
            report.traces,
            report.interactions,
            report.feedback,
            report.events
        ),
        (12, 3, 3, 1, 4)
    );
}

/// One OTLP JSON request as the OTLP/HTTP JSON encoding writes it (hex IDs, times in
/// nanoseconds as strings, typed attribute values, `kind` as a number).
fn otlp_request() -> String {
    let attr = |k: &str, v: &str| format!(r#"{{"key":"{k}","value":{v}}}"#);
    let s = |x: &str| format!(r#"{{"stringValue":"{x}"}}"#);
    let span = |trace: &str, id: &str, parent: &str, start: &str, attrs: Vec<String>| {
        format!(
            r#"{{"traceId":"{trace}","spanId":"{id}","parentSpanId":"{parent}","name":"s","kind":1,"startTimeUnixNano":"{start}","endTimeUnixNano":"{start}","attributes":[{}],"status":{{}}}}"#,
            attrs.join(",")
        )
    };
    let a = "4bf92f3577b34da6a3ce929d0e0e4736";
    let b = "5b8efff798038103d269b633813fc60c";
    let c = "0af7651916cd43dd8448eb211c80319c";
    let doc = |i: usize, id: &str| {
        vec![
            attr(&format!("retrieval.documents.{i}.document.id"), &s(id)),
            attr(
                &format!("retrieval.documents.{i}.document.score"),
                r#"{"doubleValue":0.5}"#,
            ),
        ]
    };
    let spans_a = [
        span(
            a,
            "00f067aa0ba902b7",
            "",
            "1763370940000000000",
            vec![
                attr("openinference.span.kind", &s("CHAIN")),
                attr("session.id", &s("s-1")),
                attr("input.value", &s("dia extra asuntos propios indefinidos")),
            ],
        ),
        span(
            a,
            "53995c3f42cd8ad8",
            "00f067aa0ba902b7",
            "1763370940100000000",
            {
                let mut v = vec![attr("openinference.span.kind", &s("RETRIEVER"))];
                v.extend(doc(0, "silver_art_012"));
                v.extend(doc(1, "gold_003"));
                v.extend(doc(2, "silver_art_015"));
                v
            },
        ),
    ];
    let spans_b = [
        span(
            b,
            "eee19b7ec3c1b174",
            "",
            "1763370965000000000",
            vec![
                attr("openinference.span.kind", &s("CHAIN")),
                attr("session.id", &s("s-1")),
                attr(
                    "input.value",
                    &s(
                        r#"{\"question\": \"¿Tengo un día adicional de asuntos propios con contrato indefinido?\"}"#,
                    ),
                ),
                attr("input.mime_type", &s("application/json")),
            ],
        ),
        span(
            b,
            "eee19b7ec3c1b175",
            "eee19b7ec3c1b174",
            "1763370965100000000",
            {
                let mut v = vec![attr("openinference.span.kind", &s("RETRIEVER"))];
                v.extend(doc(0, "silver_acuerdo_004"));
                v.extend(doc(1, "silver_acuerdo_006"));
                v
            },
        ),
        span(
            b,
            "eee19b7ec3c1b176",
            "eee19b7ec3c1b174",
            "1763370965300000000",
            vec![
                attr("openinference.span.kind", &s("RERANKER")),
                attr("reranker.top_k", r#"{"intValue":"2"}"#),
                attr(
                    "reranker.output_documents.0.document.id",
                    &s("silver_acuerdo_006"),
                ),
                attr(
                    "reranker.output_documents.1.document.id",
                    &s("silver_acuerdo_004"),
                ),
            ],
        ),
    ];
    let spans_c = [span(
        c,
        "b7ad6b7169203331",
        "",
        "1763377200000000000",
        vec![
            attr("openinference.span.kind", &s("RETRIEVER")),
            attr(
                "input.value",
                &s("retención del 7 % el primer año de actividad"),
            ),
            attr(
                "tag.tags",
                r#"{"arrayValue":{"values":[{"stringValue":"x"},{"intValue":3}]}}"#,
            ),
            attr(
                "metadata",
                r#"{"kvlistValue":{"values":[{"key":"k","value":{"boolValue":true}}]}}"#,
            ),
        ],
    )];
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"rag"}}}}]}},"scopeSpans":[{{"scope":{{"name":"openinference.instrumentation.langchain","version":"0.1.0"}},"spans":[{}]}},{{"scope":{{"name":"other"}},"spans":[{}]}}]}},{{"resource":{{}},"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
        spans_a.join(","),
        spans_b.join(","),
        spans_c.join(",")
    )
}

#[test]
fn an_otlp_json_request_with_annotations_beside_it_becomes_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    // Pretty-printed as one document, like a saved export.
    let pretty =
        serde_json::to_string_pretty(&serde_json::from_str::<Value>(&otlp_request()).unwrap())
            .unwrap();
    let otlp = write(dir.path(), "traces.json", &pretty);
    let notes = write(
        dir.path(),
        "annotations.jsonl",
        r#"{"span_id":"eee19b7ec3c1b174","name":"user_feedback","annotator_kind":"HUMAN","result":{"label":"👍"}}"#,
    );
    let (events, report) = read(&[otlp.clone(), notes.clone()], TraceFormat::OtlpJson);
    assert_eq!(summary(&events), expected());
    assert_eq!(events[1].event.time, "2025-11-17T09:16:05.000Z");
    assert_eq!(
        events[1].event.query,
        "¿Tengo un día adicional de asuntos propios con contrato indefinido?"
    );
    assert!(report.unmapped.is_empty(), "{:?}", report.unmapped);
    assert_eq!((report.records, report.traces), (7, 3));
    // The collector's file exporter: one request a line; the same events.
    let lines = write(
        dir.path(),
        "traces.jsonl",
        &format!("{}\n{}\n", otlp_request(), otlp_request()),
    );
    let (again, _) = read(&[lines, notes], TraceFormat::OtlpJson);
    assert_eq!(summary(&again), expected());
}

#[test]
fn otlp_attribute_values_of_every_type_are_flattened() {
    let v: Value = serde_json::from_str(
        r#"{"traceId":"aa","spanId":"bb","attributes":[
            {"key":"s","value":{"stringValue":"x"}},
            {"key":"i","value":{"intValue":"42"}},
            {"key":"d","value":{"doubleValue":0.5}},
            {"key":"b","value":{"boolValue":false}},
            {"key":"a","value":{"arrayValue":{"values":[{"stringValue":"p"},{"intValue":7}]}}},
            {"key":"k","value":{"kvlistValue":{"values":[{"key":"x","value":{"stringValue":"y"}}]}}},
            {"key":"y","value":{"bytesValue":"AAE="}}]}"#,
    )
    .unwrap();
    let span = spans_for_test(&v);
    let got: Vec<(String, Value)> = span.into_iter().collect();
    assert_eq!(
        got,
        [
            ("a.0".into(), Value::from("p")),
            ("a.1".into(), Value::from(7)),
            ("b".into(), Value::from(false)),
            ("d".into(), Value::from(0.5)),
            ("i".into(), Value::from(42)),
            ("k.x".into(), Value::from("y")),
            ("s".into(), Value::from("x")),
            ("y".into(), Value::from("AAE=")),
        ]
    );
}

fn spans_for_test(v: &Value) -> BTreeMap<String, Value> {
    spans::otlp_attributes_for_test(v)
}

/// Langfuse's `GET /api/public/traces/{id}` objects on one API page (observations and
/// scores nested), and a `GET /api/public/v2/scores` page beside it.
const LANGFUSE_TRACES: &str = r#"{"data":[
 {"id":"4bf92f3577b34da6a3ce929d0e0e4736","timestamp":"2025-11-17T09:15:40.000Z","name":"rag","sessionId":"s-1","userId":"u-7","input":{"messages":[{"role":"system","content":"Eres un asistente."},{"role":"user","content":"dia extra asuntos propios indefinidos"}]},"output":"Sí, un día.","tags":[],"metadata":{},
  "observations":[
   {"id":"obs-1","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","type":"RETRIEVER","name":"vector-search","startTime":"2025-11-17T09:15:40.100Z","endTime":"2025-11-17T09:15:40.300Z","parentObservationId":null,"input":"dia extra asuntos propios indefinidos","output":[{"id":"silver_art_012","score":0.81},{"id":"gold_003","score":0.77},{"metadata":{"chunk_id":"silver_art_015"},"page_content":"..."}],"level":"DEFAULT"},
   {"id":"obs-2","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","type":"GENERATION","name":"answer","startTime":"2025-11-17T09:15:40.400Z","model":"gpt-4o-mini","input":[{"role":"user","content":"..."}],"output":{"role":"assistant","content":"Sí, un día."}}],
  "scores":[]},
 {"id":"5b8efff798038103d269b633813fc60c","timestamp":"2025-11-17T09:16:05.000Z","name":"rag","sessionId":"s-1","input":{"question":"¿Tengo un día adicional de asuntos propios con contrato indefinido?"},"observations":["obs-3"],"scores":["sc-1"]},
 {"id":"0af7651916cd43dd8448eb211c80319c","timestamp":"2025-11-17T11:00:00.000Z","name":"search","sessionId":null,"input":"retención del 7 % el primer año de actividad",
  "observations":[{"id":"obs-9","traceId":"0af7651916cd43dd8448eb211c80319c","type":"SPAN","name":"VectorStoreRetriever","startTime":"2025-11-17T11:00:00.100Z","output":{"documents":[{"page_content":"no id here"}]}}],
  "scores":[{"id":"sc-9","traceId":"0af7651916cd43dd8448eb211c80319c","name":"faithfulness","value":0.4,"dataType":"NUMERIC","source":"EVAL"}]}
],"meta":{"page":1,"limit":50,"totalItems":3,"totalPages":1}}
"#;

const LANGFUSE_MORE: &str = r#"{"id":"obs-3","traceId":"5b8efff798038103d269b633813fc60c","type":"RETRIEVER","name":"vector-search","startTime":"2025-11-17T09:16:05.100Z","input":{"query":"asuntos propios contrato indefinido"},"output":{"documents":[{"id":"silver_acuerdo_006"},{"id":"silver_acuerdo_004"}]}}
{"id":"sc-1","traceId":"5b8efff798038103d269b633813fc60c","observationId":null,"name":"user-feedback","value":1,"stringValue":"True","dataType":"BOOLEAN","source":"API","comment":"útil","timestamp":"2025-11-17T09:16:30.000Z"}
{"id":"sc-2","traceId":null,"sessionId":"s-1","name":"user-feedback","value":0,"dataType":"NUMERIC","source":"API","timestamp":"2025-11-17T09:20:00.000Z"}
{"id":"sc-3","traceId":"ffff","name":"user-feedback","value":0.5,"dataType":"NUMERIC","source":"API"}
"#;

#[test]
fn langfuse_traces_observations_and_scores_become_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let traces = write(dir.path(), "traces.json", LANGFUSE_TRACES);
    let more = write(dir.path(), "more.jsonl", LANGFUSE_MORE);
    let (events, report) = read(&[traces.clone(), more.clone()], TraceFormat::Langfuse);
    assert_eq!(summary(&events), expected());
    assert_eq!(
        events[0].event.query,
        "dia extra asuntos propios indefinidos"
    );
    assert_eq!(events[2].event.time, "2025-11-17T09:16:30.000Z");
    assert_eq!(
        unmapped(&report),
        [
            ("retrieved_without_ids", 1),
            ("not_feedback", 1),
            ("feedback_value", 1),
            ("feedback_without_trace", 1)
        ]
    );
    let example = |r: Unmapped| {
        report
            .unmapped
            .iter()
            .find(|u| u.reason == r)
            .unwrap()
            .examples[0]
            .clone()
    };
    assert_eq!(
        example(Unmapped::FeedbackWithoutTrace),
        format!("{}:3:1 (names no trace)", more.display())
    );
    assert_eq!(
        example(Unmapped::FeedbackValue),
        format!("{}:4:1 (`user-feedback` = 0.5)", more.display())
    );
    assert_eq!(
        example(Unmapped::RetrievedWithoutIds),
        format!(
            "{}:8:2 (document 0 of a retriever's output has no ID)",
            traces.display()
        )
    );
}

#[test]
fn the_same_traces_in_another_order_give_byte_identical_events() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<&str> = PHOENIX_SPANS.lines().collect();
    let mut reversed = lines.clone();
    reversed.reverse();
    let a = write(dir.path(), "a.jsonl", &lines.join("\n"));
    let b = write(dir.path(), "b.jsonl", &reversed.join("\n"));
    let (one, _) = read(&[a], TraceFormat::OpenInference);
    let (two, _) = read(&[b], TraceFormat::OpenInference);
    let text = |e: &[TraceEvent]| {
        e.iter()
            .map(|e| serde_json::to_string(&e.event).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(text(&one), text(&two));
}

#[test]
fn a_trace_without_a_question_or_a_time_is_counted_not_imported() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "t.jsonl",
        r#"{"context":{"trace_id":"t1","span_id":"s1"},"start_time":"2025-11-17T09:00:00Z","attributes":{"openinference.span.kind":"LLM"}}
{"context":{"trace_id":"t2","span_id":"s2"},"attributes":{"input.value":"q"}}
{"context":{"trace_id":"t3","span_id":"s3"},"start_time":"yesterday","attributes":{"input.value":"q"}}
{"context":{"span_id":"s4"},"attributes":{"input.value":"q"}}
"#,
    );
    let (events, report) = read(&[f], TraceFormat::OpenInference);
    assert!(events.is_empty());
    assert_eq!(
        unmapped(&report),
        [
            ("no_trace_id", 1),
            ("bad_time", 1),
            ("no_time", 2),
            ("no_query", 1)
        ]
    );
}

#[test]
fn feedback_values_read_as_thumbs() {
    let up = Some(Thumb::Up);
    let down = Some(Thumb::Down);
    let t = |l: Value| thumb_of(Some(&l), None);
    assert_eq!(t(Value::from("thumbs-up")), up);
    assert_eq!(t(Value::from("Thumbs_Down")), down);
    assert_eq!(t(Value::from("👎")), down);
    assert_eq!(t(Value::from("True")), up);
    assert_eq!(t(Value::from(true)), up);
    assert_eq!(t(Value::from("meh")), None);
    assert_eq!(thumb_of(None, Some(&Value::from(1))), up);
    assert_eq!(thumb_of(None, Some(&Value::from(-1))), down);
    assert_eq!(thumb_of(Some(&Value::Null), Some(&Value::from(0.0))), down);
    assert_eq!(thumb_of(None, Some(&Value::from(0.5))), None);
}

#[test]
fn times_are_read_by_their_shape_and_size() {
    let t = |v: Value| time_ms(Some(&v));
    let ms = 1_763_370_940_123;
    assert_eq!(t(Value::from("2025-11-17T09:15:40.123456Z")), Ok(Some(ms)));
    assert_eq!(
        t(Value::from("2025-11-17 09:15:40.123+00:00")),
        Ok(Some(ms))
    );
    assert_eq!(t(Value::from("1763370940123456789")), Ok(Some(ms)));
    assert_eq!(t(Value::from(1_763_370_940_123_456u64)), Ok(Some(ms)));
    assert_eq!(t(Value::from(ms)), Ok(Some(ms)));
    assert_eq!(t(Value::from(1_763_370_940)), Ok(Some(ms - 123)));
    assert_eq!(t(Value::from("soon")), Err(()));
    assert_eq!(time_ms(None), Ok(None));
}

#[test]
fn questions_are_read_from_text_json_and_chats() {
    let q = |v: Value| query_of(&v);
    assert_eq!(q(Value::from("  hola ")), Some("hola".into()));
    assert_eq!(
        q(Value::from(r#"{"question":"¿qué?"}"#)),
        Some("¿qué?".into())
    );
    assert_eq!(
        q(
            serde_json::json!({"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"c"}]}]})
        ),
        Some("c".into())
    );
    assert_eq!(
        q(serde_json::json!({"input":{"query":"deep"}})),
        Some("deep".into())
    );
    assert_eq!(q(serde_json::json!({"other":1})), None);
    assert_eq!(q(Value::from("")), None);
}
