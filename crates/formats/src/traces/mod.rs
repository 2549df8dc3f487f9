//! Exported traces as signals: OpenInference spans (Phoenix, the OpenTelemetry SDKs' JSON),
//! OTLP JSON requests, and Langfuse's traces, observations and scores, read into the
//! interaction events of the signals model.
//!
//! What is taken from a trace (the rules that turn it into events are in
//! [`veredicto_core::traces`]):
//! - the **question**: the root span's (Langfuse: the trace's) input — its text, or, when it
//!   is JSON, its first field among [`QUERY_FIELDS`] or the last `user` message of a
//!   `messages` list; without one, the first retriever span's input;
//! - the **retrieved chunks**: the document IDs of the trace's last reranker span, else of
//!   its first retriever span, in their order (a list in which a document has no ID is
//!   dropped whole, and counted);
//! - the **session** (`session.id`; Langfuse `sessionId`), and the trace's start;
//! - **user feedback**: Phoenix span or trace annotations and Langfuse scores whose name is
//!   one of [`ReadSettings::feedback_names`], read as thumbs up or down (see [`thumb_of`]).
//!
//! Whatever carries signal but cannot be mapped is counted by reason in the
//! [`TraceReport`], with the first places it was read. Memory follows the number of traces
//! (and, for annotations that name a span, of spans), not the file's size: records are
//! streamed one at a time ([`stream`]).

mod langfuse;
mod spans;
pub mod stream;

use crate::error::Result;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use stream::Location;
use veredicto_core::signals::Thumb;
use veredicto_core::traces::{TraceEvent, TraceFeedback, TraceInteraction, TraceSettings};

/// The trace formats `signals import --format` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// OpenInference spans, one JSON object a line (or a JSON array, or a `data` page):
    /// the OpenTelemetry SDKs' span JSON, Phoenix's span export; annotation records too.
    OpenInference,
    /// OTLP JSON (`ExportTraceServiceRequest`: one document, or one a line as the
    /// collector's file exporter writes it), spans read by the OpenInference conventions.
    OtlpJson,
    /// Langfuse's public API objects: traces (with their observations and scores nested, or
    /// not), observations, scores; as a `data` page, an array, or one a line.
    Langfuse,
}

impl TraceFormat {
    pub const NAMES: &'static [&'static str] = &["openinference", "otlp-json", "langfuse"];

    pub fn parse(name: &str) -> Option<TraceFormat> {
        Some(match name {
            "openinference" => TraceFormat::OpenInference,
            "otlp-json" => TraceFormat::OtlpJson,
            "langfuse" => TraceFormat::Langfuse,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::OpenInference => "openinference",
            TraceFormat::OtlpJson => "otlp-json",
            TraceFormat::Langfuse => "langfuse",
        }
    }
}

/// The input fields that hold the question when a span's input is a JSON object.
pub const QUERY_FIELDS: &[&str] = &[
    "query",
    "question",
    "input",
    "user_input",
    "message",
    "prompt",
    "text",
    "content",
];

/// The feedback names read as thumbs by default (compared without case, `-`, `_` and spaces
/// alike).
pub const DEFAULT_FEEDBACK_NAMES: &[&str] = &["feedback", "user feedback", "thumbs"];

/// Tunables of [`read_traces`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSettings {
    /// Annotation and score names that are user feedback.
    pub feedback_names: Vec<String>,
    pub events: TraceSettings,
}

impl Default for ReadSettings {
    fn default() -> Self {
        ReadSettings {
            feedback_names: DEFAULT_FEEDBACK_NAMES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            events: TraceSettings::default(),
        }
    }
}

/// Why something read could not become a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unmapped {
    /// A record that is neither a span nor an annotation (Langfuse: a trace, an observation
    /// or a score).
    UnknownRecord,
    /// A span or observation without a trace ID.
    NoTraceId,
    /// A time that is not RFC 3339 nor a number of (milli-, micro-, nano)seconds.
    BadTime,
    /// A trace with no time at all.
    NoTime,
    /// A trace from which no question could be read.
    NoQuery,
    /// A retriever or reranker whose documents (or one of them) carry no ID: its list is
    /// left out.
    RetrievedWithoutIds,
    /// An annotation or score that is not user feedback (an evaluation, a label).
    NotFeedback,
    /// User feedback whose value is neither up nor down.
    FeedbackValue,
    /// User feedback on a trace (or span) that none of the files holds, or on a session.
    FeedbackWithoutTrace,
}

impl Unmapped {
    pub fn as_str(self) -> &'static str {
        match self {
            Unmapped::UnknownRecord => "unknown_record",
            Unmapped::NoTraceId => "no_trace_id",
            Unmapped::BadTime => "bad_time",
            Unmapped::NoTime => "no_time",
            Unmapped::NoQuery => "no_query",
            Unmapped::RetrievedWithoutIds => "retrieved_without_ids",
            Unmapped::NotFeedback => "not_feedback",
            Unmapped::FeedbackValue => "feedback_value",
            Unmapped::FeedbackWithoutTrace => "feedback_without_trace",
        }
    }
}

/// How many examples of each reason a report keeps.
pub const EXAMPLES: usize = 3;

/// One reason in a [`TraceReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnmappedCount {
    pub reason: Unmapped,
    pub count: usize,
    /// The first places (`file:line:column`, and what was there).
    pub examples: Vec<String>,
}

/// What [`read_traces`] read and what it could not map.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TraceReport {
    /// Records read (spans, annotations; Langfuse traces, observations, scores).
    pub records: usize,
    /// Distinct traces seen.
    pub traces: usize,
    /// Traces that became interactions.
    pub interactions: usize,
    /// Thumbs read from feedback.
    pub feedback: usize,
    /// Events made.
    pub events: usize,
    pub unmapped: Vec<UnmappedCount>,
}

/// Reads trace files of one format and makes the signals' events from them. Errors: a file
/// that cannot be read, is not JSON, or holds a record longer than
/// [`stream::MAX_RECORD_BYTES`] (with its file and line). Everything else that cannot be
/// mapped is counted in the report.
pub fn read_traces(
    paths: &[PathBuf],
    format: TraceFormat,
    settings: &ReadSettings,
) -> Result<(Vec<TraceEvent>, TraceReport)> {
    let mut acc = Acc::new(settings);
    for path in paths {
        stream::for_each_record(path, |origin, value, at| {
            acc.report.records += 1;
            let at = Place { path, at };
            match format {
                TraceFormat::OpenInference | TraceFormat::OtlpJson => {
                    spans::record(&mut acc, origin, value, at)
                }
                TraceFormat::Langfuse => {
                    langfuse::record(&mut acc, value, at);
                }
            }
            Ok(())
        })?;
    }
    Ok(acc.finish())
}

/// Where a record was read.
#[derive(Clone, Copy)]
pub(crate) struct Place<'p> {
    path: &'p Path,
    at: Location,
}

impl Place<'_> {
    fn show(&self) -> String {
        format!(
            "{}:{}:{}",
            self.path.display(),
            self.at.line,
            self.at.column
        )
    }
}

/// A retrieved list: the IDs, or where a document without one was.
type Retrieved = std::result::Result<Vec<String>, String>;

#[derive(Default)]
struct TraceAcc {
    at: String,
    session: Option<String>,
    start_ms: Option<i64>,
    root_query: Option<String>,
    /// (start, input) of the earliest retriever with an input.
    retriever_query: Option<(i64, String)>,
    /// (start, list) of the earliest retriever.
    retrieved: Option<(i64, Retrieved)>,
    /// (start, list) of the latest reranker.
    reranked: Option<(i64, Retrieved)>,
    feedback: Vec<TraceFeedback>,
}

/// Feedback waiting for the end of the files (its trace may come later).
struct PendingFeedback {
    trace: Option<String>,
    span: Option<String>,
    feedback: TraceFeedback,
    at: String,
}

pub(crate) struct Acc<'s> {
    settings: &'s ReadSettings,
    feedback_names: Vec<String>,
    index: HashMap<String, usize>,
    traces: Vec<TraceAcc>,
    /// A span ID's trace, for annotations that name a span.
    span_trace: HashMap<u64, u32>,
    pending: Vec<PendingFeedback>,
    unmapped: BTreeMap<Unmapped, UnmappedCount>,
    report: TraceReport,
}

/// Span IDs are held as a 64-bit digest: 16 hexadecimal digits are the ID itself; another
/// spelling is hashed (deterministically).
fn span_key(id: &str) -> u64 {
    let id = id.strip_prefix("0x").unwrap_or(id);
    if id.len() == 16 {
        if let Ok(v) = u64::from_str_radix(id, 16) {
            return v;
        }
    }
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

/// Trace and span IDs as written (`0x` prefixes of the OpenTelemetry SDKs' JSON removed).
fn clean_id(id: &str) -> String {
    id.strip_prefix("0x").unwrap_or(id).to_owned()
}

fn norm_name(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .map(|c| if c == '-' || c == '_' { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl<'s> Acc<'s> {
    fn new(settings: &'s ReadSettings) -> Self {
        Acc {
            settings,
            feedback_names: settings
                .feedback_names
                .iter()
                .map(|n| norm_name(n))
                .collect(),
            index: HashMap::new(),
            traces: Vec::new(),
            span_trace: HashMap::new(),
            pending: Vec::new(),
            unmapped: BTreeMap::new(),
            report: TraceReport::default(),
        }
    }

    fn skip(&mut self, reason: Unmapped, example: impl FnOnce() -> String) {
        let entry = self.unmapped.entry(reason).or_insert(UnmappedCount {
            reason,
            count: 0,
            examples: Vec::new(),
        });
        entry.count += 1;
        if entry.examples.len() < EXAMPLES {
            entry
                .examples
                .push(veredicto_core::redact::message(&example()));
        }
    }

    fn trace(&mut self, id: &str, at: &Place<'_>) -> &mut TraceAcc {
        let i = match self.index.get(id) {
            Some(&i) => i,
            None => {
                self.traces.push(TraceAcc {
                    at: at.show(),
                    ..TraceAcc::default()
                });
                self.index.insert(id.to_owned(), self.traces.len() - 1);
                self.traces.len() - 1
            }
        };
        &mut self.traces[i]
    }

    fn note_span(&mut self, span_id: &str, trace_id: &str) {
        if let Some(&i) = self.index.get(trace_id) {
            self.span_trace.insert(span_key(span_id), i as u32);
        }
    }

    fn is_feedback(&self, name: &str) -> bool {
        self.feedback_names.contains(&norm_name(name))
    }

    /// A feedback record: its name, its value (label and score), its trace or span.
    #[allow(clippy::too_many_arguments)]
    fn feedback(
        &mut self,
        name: Option<&str>,
        label: Option<&Value>,
        score: Option<&Value>,
        trace: Option<String>,
        span: Option<String>,
        time_ms: Option<i64>,
        at: &Place<'_>,
    ) {
        let name = name.unwrap_or("");
        if !self.is_feedback(name) {
            self.skip(Unmapped::NotFeedback, || {
                format!("{} (`{}`)", at.show(), veredicto_core::redact::short(name))
            });
            return;
        }
        let Some(thumb) = thumb_of(label, score) else {
            self.skip(Unmapped::FeedbackValue, || {
                let shown = label
                    .or(score)
                    .map_or("nothing".to_owned(), |v| v.to_string());
                format!(
                    "{} (`{}` = {})",
                    at.show(),
                    veredicto_core::redact::short(name),
                    veredicto_core::redact::short(&shown)
                )
            });
            return;
        };
        if trace.is_none() && span.is_none() {
            self.skip(Unmapped::FeedbackWithoutTrace, || {
                format!("{} (names no trace)", at.show())
            });
            return;
        }
        self.pending.push(PendingFeedback {
            trace,
            span,
            feedback: TraceFeedback { time_ms, thumb },
            at: at.show(),
        });
    }

    fn finish(mut self) -> (Vec<TraceEvent>, TraceReport) {
        for p in std::mem::take(&mut self.pending) {
            let target = match (&p.trace, &p.span) {
                (Some(t), _) if self.index.contains_key(t) => self.index.get(t).copied(),
                (_, Some(s)) => self.span_trace.get(&span_key(s)).map(|&i| i as usize),
                _ => None,
            };
            match target {
                Some(i) => {
                    self.traces[i].feedback.push(p.feedback);
                    self.report.feedback += 1;
                }
                None => self.skip(Unmapped::FeedbackWithoutTrace, || {
                    format!(
                        "{} ({} `{}`)",
                        p.at,
                        if p.trace.is_some() { "trace" } else { "span" },
                        veredicto_core::redact::short(
                            p.trace.as_ref().or(p.span.as_ref()).map_or("", |s| s)
                        )
                    )
                }),
            }
        }
        self.report.traces = self.traces.len();
        let mut ids: Vec<(String, usize)> = self.index.drain().collect();
        ids.sort();
        let mut interactions = Vec::new();
        let traces = std::mem::take(&mut self.traces);
        let mut traces: Vec<Option<TraceAcc>> = traces.into_iter().map(Some).collect();
        for (id, i) in ids {
            let t = traces[i].take().unwrap_or_default();
            let Some(start_ms) = t.start_ms else {
                self.skip(Unmapped::NoTime, || format!("{} (trace `{id}`)", t.at));
                continue;
            };
            let query = t
                .root_query
                .clone()
                .or_else(|| t.retriever_query.clone().map(|(_, q)| q));
            let Some(query) = query else {
                self.skip(Unmapped::NoQuery, || format!("{} (trace `{id}`)", t.at));
                continue;
            };
            let list = t.reranked.or(t.retrieved).map(|(_, l)| l);
            let retrieved = match list {
                None => Vec::new(),
                Some(Ok(ids)) => ids,
                Some(Err(place)) => {
                    self.skip(Unmapped::RetrievedWithoutIds, || place);
                    Vec::new()
                }
            };
            interactions.push(TraceInteraction {
                trace_id: id,
                session: t.session,
                start_ms,
                query,
                retrieved,
                feedback: t.feedback,
                at: t.at,
            });
        }
        let (events, out_of_range) =
            veredicto_core::traces::interaction_events(interactions, &self.settings.events);
        for t in out_of_range {
            self.skip(Unmapped::BadTime, || {
                format!(
                    "{} (trace `{}`: a start outside the years 0000-9999)",
                    t.at, t.trace_id
                )
            });
        }
        self.report.events = events.len();
        let mut seen = std::collections::HashSet::new();
        for e in &events {
            if let Some(a) = &e.event.answer_id {
                seen.insert(a.as_str());
            }
        }
        self.report.interactions = seen.len();
        self.report.unmapped = self.unmapped.into_values().collect();
        (events, self.report)
    }
}

/// A feedback value as a thumb: a label (`up`, `thumbs up`, `👍`, `positive`, `good`,
/// `like`, `yes`, `true`, `correct` — or their opposites `down`, `thumbs down`, `👎`,
/// `negative`, `bad`, `dislike`, `no`, `false`, `incorrect`; without case, `-` and `_`
/// alike), else a score: 1 or `true` is up, 0, -1 or `false` is down. Anything else is no
/// thumb.
pub fn thumb_of(label: Option<&Value>, score: Option<&Value>) -> Option<Thumb> {
    let from_text = |s: &str| -> Option<Thumb> {
        let n = norm_name(s).replace(' ', "");
        match n.as_str() {
            "up" | "thumbsup" | "thumbup" | "👍" | "positive" | "good" | "like" | "liked"
            | "yes" | "true" | "correct" | "helpful" | "1" => Some(Thumb::Up),
            "down" | "thumbsdown" | "thumbdown" | "👎" | "negative" | "bad" | "dislike"
            | "disliked" | "no" | "false" | "incorrect" | "unhelpful" | "0" | "-1" => {
                Some(Thumb::Down)
            }
            _ => None,
        }
    };
    let from_value = |v: &Value| -> Option<Thumb> {
        match v {
            Value::String(s) => from_text(s),
            Value::Bool(true) => Some(Thumb::Up),
            Value::Bool(false) => Some(Thumb::Down),
            Value::Number(n) => match n.as_f64() {
                Some(1.0) => Some(Thumb::Up),
                Some(0.0) | Some(-1.0) => Some(Thumb::Down),
                _ => None,
            },
            _ => None,
        }
    };
    match label {
        Some(l) if !l.is_null() => from_value(l),
        _ => score.and_then(from_value),
    }
}

/// A time: RFC 3339 text, or a number (or a string of digits) of seconds, milliseconds,
/// microseconds or nanoseconds since 1970, told apart by size (nanoseconds from 10^17,
/// microseconds from 10^14, milliseconds from 10^11). `Err` for a value that is none of
/// these; `Ok(None)` for no value.
pub(crate) fn time_ms(v: Option<&Value>) -> std::result::Result<Option<i64>, ()> {
    let by_size = |x: f64| -> std::result::Result<Option<i64>, ()> {
        if !x.is_finite() || x < 0.0 {
            return Err(());
        }
        let ms = if x >= 1e17 {
            x / 1e6
        } else if x >= 1e14 {
            x / 1e3
        } else if x >= 1e11 {
            x
        } else {
            x * 1e3
        };
        Ok(Some(ms.floor() as i64))
    };
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => by_size(n.as_f64().ok_or(())?),
        Some(Value::String(s)) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            // Digit strings (OTLP's int64 times): exact integer arithmetic.
            let x: u128 = s.parse().map_err(|_| ())?;
            let ms = if x >= 100_000_000_000_000_000 {
                x / 1_000_000
            } else if x >= 100_000_000_000_000 {
                x / 1000
            } else if x >= 100_000_000_000 {
                x
            } else {
                x * 1000
            };
            i64::try_from(ms).map(Some).map_err(|_| ())
        }
        Some(Value::String(s)) => veredicto_core::time::parse_timestamp_ms(s.trim())
            .map(Some)
            .ok_or(()),
        Some(_) => Err(()),
    }
}

/// The question in an input value: text as it is (JSON text is read as JSON), an object's
/// first [`QUERY_FIELDS`] field, or the last `user` message of a chat (`messages`, or a list
/// of `{role, content}`).
pub fn query_of(v: &Value) -> Option<String> {
    query_at(v, 0)
}

fn query_at(v: &Value, depth: usize) -> Option<String> {
    if depth > 4 {
        return None;
    }
    match v {
        Value::String(s) => {
            let t = s.trim();
            if t.is_empty() {
                return None;
            }
            if depth == 0 && (t.starts_with('{') || t.starts_with('[')) {
                if let Ok(parsed) = crate::json::value_from_str(t) {
                    return query_at(&parsed, depth + 1);
                }
            }
            Some(t.to_owned())
        }
        Value::Object(o) => {
            if let Some(m) = o.get("messages") {
                if let Some(q) = last_user_message(m, depth) {
                    return Some(q);
                }
            }
            QUERY_FIELDS
                .iter()
                .filter_map(|f| o.get(*f))
                .find_map(|f| query_at(f, depth + 1))
        }
        Value::Array(_) => last_user_message(v, depth),
        _ => None,
    }
}

fn last_user_message(v: &Value, depth: usize) -> Option<String> {
    let items = v.as_array()?;
    items.iter().rev().find_map(|m| {
        let o = m.as_object()?;
        let role = o.get("role").and_then(Value::as_str)?;
        if !role.eq_ignore_ascii_case("user") && !role.eq_ignore_ascii_case("human") {
            return None;
        }
        match o.get("content")? {
            Value::Array(parts) => {
                let text: Vec<&str> = parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect();
                (!text.is_empty()).then(|| text.join(" ").trim().to_owned())
            }
            c => query_at(c, depth + 1),
        }
    })
}

/// A JSON value flattened to dotted keys (`retrieval.documents.0.document.id`): object keys
/// and array positions joined by `.`; nulls are left out. Keys already dotted stay as they
/// are, so OpenInference's flat attributes and Phoenix's nested ones read alike.
pub fn flatten(v: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    flatten_into(&mut out, String::new(), v);
    out
}

fn flatten_into(out: &mut BTreeMap<String, Value>, prefix: String, v: &Value) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_owned()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Null => {}
        Value::Object(o) => {
            for (k, x) in o {
                flatten_into(out, join(k), x);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten_into(out, join(&i.to_string()), x);
            }
        }
        scalar => {
            out.entry(prefix).or_insert_with(|| scalar.clone());
        }
    }
}

/// An ID value: a non-empty string, or an integer.
fn id_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
