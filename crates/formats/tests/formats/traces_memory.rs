//! One OTLP JSON document of tens of megabytes is read span by span: the reader's memory
//! stays a small fraction of the file (alone in its test binary, so that the peak resident
//! memory measured is this test's).

use std::io::Write;
use veredicto_formats::traces::{read_traces, ReadSettings, TraceFormat};

fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Regression guard: a trace export must not be held whole (OTLP JSON is often one line).
#[test]
fn a_large_otlp_document_is_read_in_bounded_memory() {
    if !std::path::Path::new("/proc/self/status").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let traces = 300usize;
    let spans_per_trace = 40usize;
    let passage = "x".repeat(300);
    write!(
        f,
        r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"spans":["#
    )
    .unwrap();
    for t in 0..traces {
        for s in 0..spans_per_trace {
            if t + s > 0 {
                f.write_all(b",").unwrap();
            }
            let parent = if s == 0 {
                String::new()
            } else {
                format!("{t:08x}00000000")
            };
            let mut attrs = vec![
                format!(
                    r#"{{"key":"openinference.span.kind","value":{{"stringValue":"{}"}}}}"#,
                    if s == 0 { "CHAIN" } else { "RETRIEVER" }
                ),
                format!(r#"{{"key":"input.value","value":{{"stringValue":"question {t}"}}}}"#),
                format!(
                    r#"{{"key":"session.id","value":{{"stringValue":"s{}"}}}}"#,
                    t / 4
                ),
            ];
            for d in 0..5 {
                attrs.push(format!(r#"{{"key":"retrieval.documents.{d}.document.id","value":{{"stringValue":"c{t}-{s}-{d}"}}}}"#));
                attrs.push(format!(r#"{{"key":"retrieval.documents.{d}.document.content","value":{{"stringValue":"{passage}"}}}}"#));
            }
            write!(
                f,
                r#"{{"traceId":"{t:032x}","spanId":"{t:08x}{s:08x}","parentSpanId":"{parent}","name":"s","kind":1,"startTimeUnixNano":"{}","attributes":[{}]}}"#,
                1_763_370_940_000_000_000u64 + (t as u64) * 30_000_000_000 + s as u64 * 1_000_000,
                attrs.join(",")
            )
            .unwrap();
        }
    }
    f.write_all(b"]}]}]}").unwrap();
    f.into_inner().unwrap().sync_all().unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 20 << 20, "{size}");
    let before = peak_kib();
    let (events, report) =
        read_traces(&[path], TraceFormat::OtlpJson, &ReadSettings::default()).unwrap();
    let grown_kib = peak_kib().saturating_sub(before);
    assert_eq!(report.traces, traces);
    assert_eq!(events.len(), traces);
    assert_eq!(
        events[0].event.retrieved,
        ["c0-1-0", "c0-1-1", "c0-1-2", "c0-1-3", "c0-1-4"]
    );
    // The document held whole as a JSON value would take several times its size.
    assert!(
        grown_kib * 1024 < size / 4,
        "peak memory grew by {grown_kib} KiB reading a {size}-byte document"
    );
    eprintln!("read a {size}-byte OTLP document; peak memory grew by {grown_kib} KiB");
}
