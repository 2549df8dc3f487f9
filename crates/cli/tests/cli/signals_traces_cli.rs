//! `veredicto signals import --format openinference|otlp-json|langfuse` through the binary,
//! with trace files written here from the formats' published schemas and examples (Phoenix's
//! span and annotation records, an OTLP/HTTP JSON `ExportTraceServiceRequest`, Langfuse's
//! public API objects): the same conversation told in each format gives the same events in
//! the signals file, what cannot be mapped is counted with its first places, and `signals
//! candidates` reads the result. The interaction log's `--format human|json` still works.
// A test may show figures it measured.
#![allow(clippy::print_stdout)]

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;

/// Phoenix's span records (nested attributes, `span_kind`) one a line, and annotation
/// records (`span_id`, `name`, `annotator_kind`, `result`): a question, its reformulation
/// 25 s later in the same session (reranked, then liked), a retrieval-only trace whose second
/// document has no ID, an LLM-as-judge annotation, and a record that is neither.
const PHOENIX: &str = r#"{"name":"RAG","span_kind":"CHAIN","context":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"},"parent_id":null,"start_time":"2025-11-17T09:15:40.000+00:00","end_time":"2025-11-17T09:15:42.500+00:00","status_code":"OK","attributes":{"openinference":{"span":{"kind":"CHAIN"}},"session":{"id":"s-1"},"input":{"value":"dia extra asuntos propios indefinidos"},"output":{"value":"Sí, un día."}}}
{"name":"retrieve","span_kind":"RETRIEVER","context":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"53995c3f42cd8ad8"},"parent_id":"00f067aa0ba902b7","start_time":"2025-11-17T09:15:40.100+00:00","attributes":{"openinference":{"span":{"kind":"RETRIEVER"}},"input":{"value":"dia extra asuntos propios indefinidos"},"retrieval":{"documents":[{"document":{"id":"silver_art_012","score":0.81}},{"document":{"id":"gold_003","score":0.77}},{"document":{"id":"silver_art_015","score":0.74}}]}}}
{"name":"ChatCompletion","span_kind":"LLM","context":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"1c8cbd3a6d3a6f5e"},"parent_id":"00f067aa0ba902b7","start_time":"2025-11-17T09:15:40.400+00:00","attributes":{"openinference":{"span":{"kind":"LLM"}},"llm":{"model_name":"gpt-4o-mini","output_messages":[{"message":{"role":"assistant","content":"Sí, un día."}}]}}}
{"name":"RAG","span_kind":"CHAIN","context":{"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b174"},"parent_id":null,"start_time":"2025-11-17T09:16:05.000+00:00","attributes":{"openinference":{"span":{"kind":"CHAIN"}},"session":{"id":"s-1"},"input":{"value":"{\"question\": \"¿Tengo un día adicional de asuntos propios con contrato indefinido?\"}","mime_type":"application/json"}}}
{"name":"retrieve","span_kind":"RETRIEVER","context":{"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b175"},"parent_id":"eee19b7ec3c1b174","start_time":"2025-11-17T09:16:05.100+00:00","attributes":{"openinference":{"span":{"kind":"RETRIEVER"}},"retrieval":{"documents":[{"document":{"id":"silver_acuerdo_004"}},{"document":{"id":"silver_acuerdo_006"}}]}}}
{"name":"rerank","span_kind":"RERANKER","context":{"trace_id":"5b8efff798038103d269b633813fc60c","span_id":"eee19b7ec3c1b176"},"parent_id":"eee19b7ec3c1b174","start_time":"2025-11-17T09:16:05.300+00:00","attributes":{"openinference":{"span":{"kind":"RERANKER"}},"reranker":{"output_documents":[{"document":{"id":"silver_acuerdo_006","score":3.1}},{"document":{"id":"silver_acuerdo_004","score":2.2}}]}}}
{"name":"retrieve","span_kind":"RETRIEVER","context":{"trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"},"parent_id":null,"start_time":"2025-11-17T11:00:00.000+00:00","attributes":{"openinference":{"span":{"kind":"RETRIEVER"}},"input":{"value":"retención del 7 % el primer año de actividad"},"retrieval":{"documents":[{"document":{"id":"gold_001","score":0.9}},{"document":{"score":0.5,"content":"a passage without an id"}}]}}}
{"span_id":"eee19b7ec3c1b174","name":"user_feedback","annotator_kind":"HUMAN","result":{"label":"thumbs-up","score":1}}
{"span_id":"b7ad6b7169203331","name":"hallucination","annotator_kind":"LLM","result":{"label":"factual","score":0}}
{"foo":1}
"#;

/// The same conversation as one OTLP/HTTP JSON request (hex IDs, nanosecond times as
/// strings, typed attribute values), feedback as Phoenix annotations beside it.
fn otlp() -> String {
    let attr = |k: &str, v: &str| format!(r#"{{"key":"{k}","value":{{"stringValue":"{v}"}}}}"#);
    let span = |trace: &str, id: &str, parent: &str, start: &str, attrs: Vec<String>| {
        format!(
            r#"{{"traceId":"{trace}","spanId":"{id}","parentSpanId":"{parent}","name":"s","kind":1,"startTimeUnixNano":"{start}","endTimeUnixNano":"{start}","attributes":[{}],"status":{{}}}}"#,
            attrs.join(",")
        )
    };
    let docs = |prefix: &str, ids: &[&str]| -> Vec<String> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| attr(&format!("{prefix}.{i}.document.id"), id))
            .collect()
    };
    let (a, b, c) = (
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "5b8efff798038103d269b633813fc60c",
        "0af7651916cd43dd8448eb211c80319c",
    );
    let with = |mut v: Vec<String>, more: Vec<String>| {
        v.extend(more);
        v
    };
    let spans = [
        span(
            a,
            "00f067aa0ba902b7",
            "",
            "1763370940000000000",
            vec![
                attr("openinference.span.kind", "CHAIN"),
                attr("session.id", "s-1"),
                attr("input.value", "dia extra asuntos propios indefinidos"),
            ],
        ),
        span(
            a,
            "53995c3f42cd8ad8",
            "00f067aa0ba902b7",
            "1763370940100000000",
            with(
                vec![attr("openinference.span.kind", "RETRIEVER")],
                docs(
                    "retrieval.documents",
                    &["silver_art_012", "gold_003", "silver_art_015"],
                ),
            ),
        ),
        span(
            b,
            "eee19b7ec3c1b174",
            "",
            "1763370965000000000",
            vec![
                attr("openinference.span.kind", "CHAIN"),
                attr("session.id", "s-1"),
                attr(
                    "input.value",
                    "¿Tengo un día adicional de asuntos propios con contrato indefinido?",
                ),
            ],
        ),
        span(
            b,
            "eee19b7ec3c1b176",
            "eee19b7ec3c1b174",
            "1763370965300000000",
            with(
                vec![attr("openinference.span.kind", "RERANKER")],
                docs(
                    "reranker.output_documents",
                    &["silver_acuerdo_006", "silver_acuerdo_004"],
                ),
            ),
        ),
        span(
            c,
            "b7ad6b7169203331",
            "",
            "1763377200000000000",
            with(
                vec![
                    attr("openinference.span.kind", "RETRIEVER"),
                    attr(
                        "input.value",
                        "retención del 7 % el primer año de actividad",
                    ),
                ],
                docs("retrieval.documents", &["gold_001"]),
            ),
        ),
    ];
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"rag"}}}}]}},"scopeSpans":[{{"scope":{{"name":"openinference.instrumentation.langchain"}},"spans":[{}]}}]}}]}}"#,
        spans.join(",")
    )
}

/// Langfuse's `GET /api/public/traces` page (observations and scores nested) and a scores
/// page beside it, as its API reference shows them.
const LANGFUSE_TRACES: &str = r#"{"data":[
 {"id":"4bf92f3577b34da6a3ce929d0e0e4736","timestamp":"2025-11-17T09:15:40.000Z","name":"rag","sessionId":"s-1","input":{"messages":[{"role":"system","content":"Eres un asistente."},{"role":"user","content":"dia extra asuntos propios indefinidos"}]},"output":"Sí, un día.",
  "observations":[{"id":"obs-1","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","type":"RETRIEVER","name":"vector-search","startTime":"2025-11-17T09:15:40.100Z","output":[{"id":"silver_art_012"},{"id":"gold_003"},{"id":"silver_art_015"}]}],
  "scores":[]},
 {"id":"5b8efff798038103d269b633813fc60c","timestamp":"2025-11-17T09:16:05.000Z","name":"rag","sessionId":"s-1","input":{"question":"¿Tengo un día adicional de asuntos propios con contrato indefinido?"},
  "observations":[{"id":"obs-3","traceId":"5b8efff798038103d269b633813fc60c","type":"RETRIEVER","name":"vector-search","startTime":"2025-11-17T09:16:05.100Z","output":{"documents":[{"id":"silver_acuerdo_006"},{"id":"silver_acuerdo_004"}]}}],
  "scores":[]},
 {"id":"0af7651916cd43dd8448eb211c80319c","timestamp":"2025-11-17T11:00:00.000Z","name":"search","sessionId":null,"input":"retención del 7 % el primer año de actividad",
  "observations":[{"id":"obs-9","traceId":"0af7651916cd43dd8448eb211c80319c","type":"RETRIEVER","name":"vector-search","startTime":"2025-11-17T11:00:00.100Z","output":[{"id":"gold_001"}]}],
  "scores":[{"id":"sc-9","traceId":"0af7651916cd43dd8448eb211c80319c","name":"faithfulness","value":0.4,"dataType":"NUMERIC","source":"EVAL"}]}
],"meta":{"page":1,"limit":50,"totalItems":3,"totalPages":1}}
"#;

const LANGFUSE_SCORES: &str = r#"{"data":[
 {"id":"sc-1","traceId":"5b8efff798038103d269b633813fc60c","name":"user-feedback","value":1,"dataType":"BOOLEAN","source":"API","timestamp":"2025-11-17T09:16:30.000Z"},
 {"id":"sc-2","traceId":"ffffffffffffffffffffffffffffffff","name":"user-feedback","value":0,"dataType":"NUMERIC","source":"API"}
],"meta":{"page":1,"limit":50,"totalItems":2,"totalPages":1}}
"#;

fn import(dir: &Path, format: &str, files: &[&str], extra: &[&str]) -> std::process::Output {
    let mut args = vec!["signals", "import", "--format", format];
    args.extend_from_slice(files);
    args.extend_from_slice(&["--signals", "signals.jsonl"]);
    args.extend_from_slice(extra);
    veredicto_in(dir, &args)
}

/// (answer_id, event, retrieved) of each line of the signals file.
fn events(dir: &Path) -> Vec<(String, String, Vec<String>)> {
    std::fs::read_to_string(dir.join("signals.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["answer_id"].as_str().unwrap().to_owned(),
                v["event"].as_str().unwrap().to_owned(),
                v.get("retrieved")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().map(|x| x.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

fn the_conversation() -> Vec<(String, String, Vec<String>)> {
    let ids = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    vec![
        (
            "4bf92f3577b34da6a3ce929d0e0e4736".into(),
            "answer".into(),
            ids(&["silver_art_012", "gold_003", "silver_art_015"]),
        ),
        (
            "5b8efff798038103d269b633813fc60c".into(),
            "reformulate".into(),
            ids(&["silver_acuerdo_006", "silver_acuerdo_004"]),
        ),
        (
            "5b8efff798038103d269b633813fc60c".into(),
            "thumbs".into(),
            vec![],
        ),
        (
            "0af7651916cd43dd8448eb211c80319c".into(),
            "answer".into(),
            ids(&["gold_001"]),
        ),
    ]
}

fn unmapped(v: &Value) -> Vec<(String, u64)> {
    v["unmapped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["reason"].as_str().unwrap().to_owned(),
                u["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn traces_of_each_format_become_the_same_signals() {
    let mut figures = Vec::new();

    // OpenInference (Phoenix's export).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "phoenix.jsonl", PHOENIX);
    let o = import(dir, "openinference", &["phoenix.jsonl"], &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["format"], "openinference");
    assert_eq!(
        (v["records"].as_u64(), v["traces"].as_u64()),
        (Some(10), Some(3))
    );
    assert_eq!(v["events"], 4);
    assert_eq!(v["added"], 4);
    assert_eq!(
        unmapped(&v),
        [
            ("unknown_record".to_owned(), 1),
            ("retrieved_without_ids".to_owned(), 1),
            ("not_feedback".to_owned(), 1)
        ]
    );
    let mut want = the_conversation();
    // Its retrieval-only trace lists a document without an ID: the list is left out.
    want[3].2.clear();
    assert_eq!(events(dir), want);
    figures.push(("openinference", v.clone()));
    // Importing again adds nothing.
    let o = import(dir, "openinference", &["phoenix.jsonl"], &["--json"]);
    let again: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (again["added"].as_u64(), again["already_present"].as_u64()),
        (Some(0), Some(4))
    );
    // For people: the counts, then each reason with its words and its first places.
    let o = import(dir, "openinference", &["phoenix.jsonl"], &[]);
    let human = stdout(&o).replace(&dir.display().to_string(), "[TMP]");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("signals_import_openinference_human", human));
    // The candidates read the imported traces.
    let o = veredicto_in(
        dir,
        &[
            "signals",
            "candidates",
            "--signals",
            "signals.jsonl",
            "--out",
            "candidates.jsonl",
            "--golden",
            &example("golden.jsonl").display().to_string(),
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        report["counts"]["events"].as_u64().unwrap_or(4) >= 4,
        "{report}"
    );

    // OTLP JSON, feedback as an annotation file beside it; another feedback name.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "traces.json", &otlp());
    write(
        dir,
        "annotations.jsonl",
        r#"{"span_id":"eee19b7ec3c1b174","name":"thumb","annotator_kind":"HUMAN","result":{"label":"👍"}}"#,
    );
    let o = import(
        dir,
        "otlp-json",
        &["traces.json", "annotations.jsonl"],
        &["--json", "--feedback-name", "thumb"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["unmapped"].as_array().unwrap().is_empty(), "{v}");
    assert_eq!(v["feedback"], 1);
    assert_eq!(events(dir), the_conversation());
    figures.push(("otlp-json", v));

    // Langfuse: a traces page and a scores page.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "traces.json", LANGFUSE_TRACES);
    write(dir, "scores.json", LANGFUSE_SCORES);
    let o = import(
        dir,
        "langfuse",
        &["traces.json", "scores.json"],
        &["--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        unmapped(&v),
        [
            ("not_feedback".to_owned(), 1),
            ("feedback_without_trace".to_owned(), 1)
        ]
    );
    assert_eq!(events(dir), the_conversation());
    figures.push(("langfuse", v));

    for (format, v) in figures {
        let total: u64 = unmapped(&v).iter().map(|(_, n)| n).sum();
        println!(
            "signals import --format {format}: {} records, {} traces, {} events, {} feedback, {} unmapped",
            v["records"], v["traces"], v["events"], v["feedback"], total
        );
    }
}

#[test]
fn trace_options_and_interaction_logs_stay_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(dir, "phoenix.jsonl", PHOENIX);
    // --map renames an interaction log's fields: refused for traces.
    let o = import(dir, "langfuse", &["phoenix.jsonl"], &["--map", "query=q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--map and --map-event rename"),
        "{}",
        stderr(&o)
    );
    // Several files are for traces.
    let log = example("signals-log.jsonl").display().to_string();
    let o = veredicto_in(
        dir,
        &["signals", "import", &log, &log, "--signals", "s.jsonl"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("one interaction log at a time"),
        "{}",
        stderr(&o)
    );
    // The interaction log's `--format json` of earlier versions, and `--json`, still print
    // the same JSON.
    let a = veredicto_in(
        dir,
        &[
            "signals",
            "import",
            &log,
            "--signals",
            "a.jsonl",
            "--format",
            "json",
        ],
    );
    let b = veredicto_in(
        dir,
        &["signals", "import", &log, "--signals", "b.jsonl", "--json"],
    );
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    let (a, b): (Value, Value) = (
        serde_json::from_str(&stdout(&a)).unwrap(),
        serde_json::from_str(&stdout(&b)).unwrap(),
    );
    assert_eq!(a["events"], b["events"]);
    assert_eq!(a["added"], 9);
    // A trace file that is not JSON: exit 2 naming the file and line, nothing appended.
    write(dir, "bad.jsonl", "{\"name\": \"RAG\"\nnot json\n");
    let o = import(dir, "openinference", &["bad.jsonl"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("bad.jsonl:"), "{}", stderr(&o));
    assert!(!dir.join("signals.jsonl").exists());
}
