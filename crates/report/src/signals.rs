//! Renderers for `veredicto signals`: the candidate golden cases as JSONL to review, and
//! the counts and triage for people (human) or programs (JSON).

use serde::Serialize;
use veredicto_core::signals::SignalsReport;

/// One JSON line per candidate, in the golden-set format (`id`, `query`, `expected`,
/// `tags`) plus `candidate: true`, `gold: false` and the supporting events.
pub fn candidates_jsonl(report: &SignalsReport) -> String {
    let mut s = String::new();
    for c in &report.candidates {
        s.push_str(&serde_json::to_string(c).unwrap_or_default());
        s.push('\n');
    }
    s
}

/// The counts and the triage as pretty JSON (the candidates are in the JSONL file).
pub fn json(report: &SignalsReport, candidates_file: Option<&str>) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        candidates_file: Option<&'a str>,
        counts: &'a veredicto_core::signals::Counts,
        candidates: Vec<Brief<'a>>,
        triage: &'a [veredicto_core::signals::Triage],
    }
    #[derive(Serialize)]
    struct Brief<'a> {
        id: &'a str,
        query: &'a str,
        expected: &'a [String],
        tags: &'a [String],
        events: usize,
    }
    let out = Out {
        candidates_file,
        counts: &report.counts,
        candidates: report
            .candidates
            .iter()
            .map(|c| Brief {
                id: &c.id,
                query: &c.query,
                expected: &c.expected,
                tags: &c.tags,
                events: c.support.events,
            })
            .collect(),
        triage: &report.triage,
    };
    let mut s = serde_json::to_string_pretty(&out).unwrap_or_default();
    s.push('\n');
    s
}

/// The counts, the candidates and the triage for a terminal.
pub fn human(report: &SignalsReport, candidates_file: Option<&str>) -> String {
    let c = &report.counts;
    let mut s = String::new();
    let events: Vec<String> = c.events.iter().map(|(k, v)| format!("{k} {v}")).collect();
    s.push_str(&format!(
        "events: {} ({})\ninteractions: {} in {} conversations; {} distinct queries in {} groups ({} merged by embedding)\n",
        c.events.values().sum::<usize>(),
        events.join(", "),
        c.interactions,
        c.conversations,
        c.distinct_queries,
        c.query_groups,
        c.merged_by_embedding
    ));
    s.push_str(&format!(
        "candidates: {} ({} failed-query, {} aggregation); {} groups already in the golden set, {} without evidence{}\n",
        c.candidates,
        c.failed_query_candidates,
        c.aggregation_candidates,
        c.covered_by_golden,
        c.without_evidence,
        if c.unresolved_copies > 0 {
            format!(", {} copied texts matched no chunk", c.unresolved_copies)
        } else {
            String::new()
        }
    ));
    if let Some(f) = candidates_file {
        s.push_str(&format!(
            "written to {f} (candidates: review before adding them to the golden set)\n"
        ));
    }
    for cand in &report.candidates {
        s.push_str(&format!(
            "  {}  {:>3} events  {}  -> {}{}\n",
            cand.id,
            cand.support.events,
            trunc(&cand.query, 60),
            cand.expected.join(", "),
            if cand.tags.len() > 1 {
                format!("  [{}]", cand.tags[1..].join(", "))
            } else {
                String::new()
            }
        ));
    }
    let t: Vec<String> = c.triage.iter().map(|(k, v)| format!("{k} {v}")).collect();
    s.push_str(&format!(
        "failed interactions: {}{}\n",
        c.failed_interactions,
        if t.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.join(", "))
        }
    ));
    for tr in &report.triage {
        let seen: Vec<String> = tr
            .retrieved_expected
            .iter()
            .map(|(id, r)| format!("{id}@{r}"))
            .collect();
        s.push_str(&format!(
            "  {:<18} {}  {}  ({}){}\n",
            tr.verdict,
            tr.at,
            trunc(&tr.query, 50),
            tr.why_failed.join("+"),
            if seen.is_empty() {
                String::new()
            } else {
                format!("  retrieved: {}", seen.join(", "))
            }
        ));
    }
    s
}

/// `text` on one line, cut to `max` characters with an ellipsis.
fn trunc(text: &str, max: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut s: String = one_line.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// What `signals import` did, for people: `events` read from `log`, `added` to `signals`,
/// `present` already there.
pub fn import_human(
    log: &str,
    signals: &str,
    events: usize,
    added: usize,
    present: usize,
) -> String {
    format!(
        "{events} events read from {log}: {added} added to {signals}, {present} already there\n"
    )
}

/// What `signals import` did, as pretty JSON.
pub fn import_json(
    log: &str,
    signals: &str,
    events: usize,
    added: usize,
    present: usize,
) -> String {
    let mut s = serde_json::to_string_pretty(&serde_json::json!({
        "log": log,
        "signals": signals,
        "events": events,
        "added": added,
        "already_present": present,
    }))
    .unwrap_or_default();
    s.push('\n');
    s
}

/// One reason something in the traces could not be mapped, for [`traces_human`] and
/// [`traces_json`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct UnmappedLine<'a> {
    /// The reason's code (`no_query`, `not_feedback`, …).
    pub reason: &'a str,
    /// How many.
    pub count: usize,
    /// The first places it was read.
    pub examples: &'a [String],
}

/// What an import of traces read and did, for the renderers.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TracesImport<'a> {
    /// The trace format (`openinference`, `otlp-json`, `langfuse`).
    pub format: &'a str,
    /// The files read.
    pub files: Vec<String>,
    /// The signals file.
    pub signals: &'a str,
    /// Records read (spans, annotations; traces, observations, scores).
    pub records: usize,
    /// Distinct traces.
    pub traces: usize,
    /// Traces that became interactions.
    pub interactions: usize,
    /// Thumbs read from feedback.
    pub feedback: usize,
    /// Events made.
    pub events: usize,
    /// Events appended.
    pub added: usize,
    /// Events already in the signals file.
    pub already_present: usize,
    /// What could not be mapped, by reason.
    pub unmapped: Vec<UnmappedLine<'a>>,
    /// The annotation and score names read as user feedback.
    pub feedback_names: Vec<String>,
}

/// What a reason means, in words.
fn unmapped_words(reason: &str, feedback_names: &[String]) -> String {
    match reason {
        "unknown_record" => "records that are neither a span nor an annotation (nor a Langfuse trace, observation or score)".to_owned(),
        "no_trace_id" => "spans or observations without a trace ID".to_owned(),
        "bad_time" => "times that are neither RFC 3339 nor a number of seconds since 1970".to_owned(),
        "no_time" => "traces without any time".to_owned(),
        "no_query" => "traces without a question (no input on the root span, nor on a retriever span)".to_owned(),
        "retrieved_without_ids" => "retrieved lists in which a document has no ID (the list is left out; the interaction is kept)".to_owned(),
        "not_feedback" => format!(
            "annotations or scores that are not user feedback (read as feedback: {}; name others with --feedback-name)",
            feedback_names.join(", ")
        ),
        "feedback_value" => "user feedback whose value is neither up nor down".to_owned(),
        "feedback_without_trace" => "user feedback on a trace or span that the files do not hold".to_owned(),
        other => other.to_owned(),
    }
}

/// What `signals import --format TRACES` did, for people.
pub fn traces_human(t: &TracesImport<'_>) -> String {
    let esc = veredicto_core::redact::escape_control;
    let mut out = format!(
        "{} records read from {} ({}): {} traces, {} interactions, {} thumbs from feedback; {} events: {} added to {}, {} already there\n",
        t.records,
        esc(&t.files.join(", ")),
        t.format,
        t.traces,
        t.interactions,
        t.feedback,
        t.events,
        t.added,
        esc(t.signals),
        t.already_present
    );
    let total: usize = t.unmapped.iter().map(|u| u.count).sum();
    if total == 0 {
        out.push_str("not mapped: nothing\n");
        return out;
    }
    let by: Vec<String> = t
        .unmapped
        .iter()
        .map(|u| format!("{} {}", u.reason, u.count))
        .collect();
    out.push_str(&format!("not mapped: {total} ({})\n", by.join(", ")));
    for u in &t.unmapped {
        out.push_str(&format!(
            "  {:<24} {:>6}  {}\n",
            u.reason,
            u.count,
            unmapped_words(u.reason, &t.feedback_names)
        ));
        for e in u.examples {
            out.push_str(&format!("      {}\n", esc(e)));
        }
    }
    out
}

/// What `signals import --format TRACES` did, as pretty JSON.
pub fn traces_json(t: &TracesImport<'_>) -> String {
    let mut s = serde_json::to_string_pretty(t).unwrap_or_default();
    s.push('\n');
    s
}
