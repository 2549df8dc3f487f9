//! Interaction logs (JSONL, one event per line) for `veredicto signals`.
//!
//! Fields, by their canonical names: `conversation_id` (required), `time` (required, RFC
//! 3339), `query` (required), `retrieved` (chunk IDs in the order the model received them),
//! `answer_id`, `event` (required: `answer`, `click_citation`, `copy`, `reformulate`,
//! `thumbs`), `chunk` (required by `click_citation`; `copy` needs `chunk` or `text`), `text`,
//! `value` (`thumbs`: `up` or `down`). Other fields are ignored.
//!
//! A [`FieldMap`] reads logs whose fields have other names (`conversation_id=session`,
//! `retrieved=context.ids`: a dotted name reaches into nested objects) and whose events have
//! other names (`click=click_citation`: the log's name, then the event it means). Errors
//! name the file, the line and the field as the file spells it.

use crate::error::Result;
use crate::jsonl;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use veredicto_core::signals::{Event, EventKind, LocatedEvent, Thumb};

/// The canonical field names.
pub const FIELDS: &[&str] = &[
    "conversation_id",
    "time",
    "query",
    "retrieved",
    "answer_id",
    "event",
    "chunk",
    "text",
    "value",
];

/// Canonical field → the name in the log (dotted for nested objects), and the log's event
/// names → canonical events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldMap(BTreeMap<String, String>, BTreeMap<String, EventKind>);

impl FieldMap {
    /// Parses `canonical=theirs` pairs (`--map conversation_id=session`).
    pub fn parse<'a>(
        pairs: impl IntoIterator<Item = &'a str>,
    ) -> std::result::Result<Self, String> {
        let mut map = BTreeMap::new();
        for p in pairs {
            let (ours, theirs) = p.split_once('=').ok_or_else(|| {
                format!(
                    "--map `{}`: expected FIELD=NAME",
                    veredicto_core::redact::short(p)
                )
            })?;
            let (ours, theirs) = (ours.trim(), theirs.trim());
            if !FIELDS.contains(&ours) {
                return Err(format!(
                    "--map: unknown field `{}` (known: {})",
                    veredicto_core::redact::short(ours),
                    FIELDS.join(", ")
                ));
            }
            if theirs.is_empty() {
                return Err(format!("--map {ours}=: the name is empty"));
            }
            if map.insert(ours.to_owned(), theirs.to_owned()).is_some() {
                return Err(format!("--map: `{ours}` is mapped twice"));
            }
        }
        Ok(FieldMap(map, BTreeMap::new()))
    }

    /// Adds event-name mappings, `THEIRS=EVENT` (`--map-event click=click_citation`): the
    /// log's event name, then the canonical event it stands for. Several names may map to
    /// one event; the canonical names keep their meaning.
    pub fn with_events<'a>(
        mut self,
        pairs: impl IntoIterator<Item = &'a str>,
    ) -> std::result::Result<Self, String> {
        for p in pairs {
            let (theirs, ours) = p.split_once('=').ok_or_else(|| {
                format!(
                    "--map-event `{}`: expected THEIRS=EVENT (e.g. click=click_citation)",
                    veredicto_core::redact::short(p)
                )
            })?;
            let (theirs, ours) = (theirs.trim(), ours.trim());
            if theirs.is_empty() {
                return Err(format!("--map-event ={ours}: the log's name is empty"));
            }
            let Some(kind) = EventKind::parse(ours) else {
                let reversed = EventKind::parse(theirs).is_some();
                return Err(format!(
                    "--map-event {}={}: unknown event `{}` (known: {}){}",
                    veredicto_core::redact::short(theirs),
                    veredicto_core::redact::short(ours),
                    veredicto_core::redact::short(ours),
                    EventKind::NAMES.join(", "),
                    if reversed {
                        format!(
                            "; the log's name comes first: --map-event {}={}",
                            veredicto_core::redact::short(ours),
                            theirs
                        )
                    } else {
                        String::new()
                    }
                ));
            };
            if EventKind::parse(theirs).is_some_and(|k| k != kind) {
                return Err(format!(
                    "--map-event {theirs}={ours}: `{theirs}` is already an event of its own"
                ));
            }
            if self.1.insert(theirs.to_owned(), kind).is_some() {
                return Err(format!(
                    "--map-event: `{}` is mapped twice",
                    veredicto_core::redact::short(theirs)
                ));
            }
        }
        Ok(self)
    }

    /// The event a log's event name stands for: a mapped name, else a canonical one.
    pub fn event(&self, theirs: &str) -> Option<EventKind> {
        self.1
            .get(theirs)
            .copied()
            .or_else(|| EventKind::parse(theirs))
    }

    /// The event names a log may use: the canonical ones, then the mapped ones.
    fn event_names(&self) -> String {
        let mut names: Vec<String> = EventKind::NAMES.iter().map(|s| (*s).to_owned()).collect();
        names.extend(
            self.1
                .iter()
                .map(|(theirs, kind)| format!("{theirs} (= {})", kind.as_str())),
        );
        names.join(", ")
    }

    /// The log's name for a canonical field.
    pub fn name<'a>(&'a self, canonical: &'a str) -> &'a str {
        self.0.get(canonical).map_or(canonical, String::as_str)
    }
}

fn lookup<'v>(object: &'v Map<String, Value>, name: &str) -> Option<&'v Value> {
    if let Some(v) = object.get(name) {
        return Some(v);
    }
    let mut parts = name.split('.');
    let mut cur = object.get(parts.next()?)?;
    for p in parts {
        cur = cur.as_object()?.get(p)?;
    }
    Some(cur)
}

/// Reads and validates every line of a log; the first bad line is the error.
pub fn read_events(path: &Path, map: &FieldMap) -> Result<Vec<LocatedEvent>> {
    let mut out = Vec::new();
    for line in jsonl::read_objects(path)? {
        out.push(parse_event(&line, map)?);
    }
    Ok(out)
}

fn parse_event(line: &jsonl::ObjectLine<'_>, map: &FieldMap) -> Result<LocatedEvent> {
    // Resolve the mapped names into a flat object so that ObjectLine's typed readers (and
    // their messages) apply; the messages name the field as the log spells it.
    let mut flat = Map::new();
    for f in FIELDS {
        if let Some(v) = lookup(&line.object, map.name(f)) {
            flat.insert(map.name(f).to_owned(), v.clone());
        }
    }
    let l = jsonl::ObjectLine {
        path: line.path,
        line: line.line,
        object: flat,
    };
    let name = |f: &'static str| map.name(f).to_owned();
    let conversation_id = l.req_id(&name("conversation_id"))?;
    let time = l
        .opt_text(&name("time"))?
        .ok_or_else(|| l.error(&name("time"), "missing"))?;
    let time_ms = veredicto_core::time::check_timestamp(&time)
        .map_err(|e| l.error(&name("time"), e.to_string()))?;
    let query = l
        .opt_text(&name("query"))?
        .ok_or_else(|| l.error(&name("query"), "missing or empty"))?;
    let retrieved = l.str_list(&name("retrieved"))?;
    let answer_id = l.opt_id(&name("answer_id"))?;
    let event_name = l
        .opt_text(&name("event"))?
        .ok_or_else(|| l.error(&name("event"), "missing"))?;
    let event = map.event(event_name.trim()).ok_or_else(|| {
        l.error(
            &name("event"),
            format!(
                "unknown event `{}` (known: {}; map other names with --map-event THEIRS=EVENT)",
                veredicto_core::redact::short(&event_name),
                map.event_names()
            ),
        )
    })?;
    let chunk = l.opt_id(&name("chunk"))?;
    let text = l.opt_text(&name("text"))?;
    let value = match l.opt_text(&name("value"))?.as_deref() {
        None => None,
        Some("up") => Some(Thumb::Up),
        Some("down") => Some(Thumb::Down),
        Some(other) => {
            return Err(l.error(
                &name("value"),
                format!(
                    "expected `up` or `down`, found `{}`",
                    veredicto_core::redact::short(other)
                ),
            ))
        }
    };
    match event {
        EventKind::ClickCitation if chunk.is_none() => {
            return Err(l.error(&name("chunk"), "missing: a click_citation names its chunk"))
        }
        EventKind::Copy if chunk.is_none() && text.is_none() => {
            return Err(l.error(
                &name("chunk"),
                "missing: a copy names its chunk or gives its text",
            ))
        }
        EventKind::Thumbs if value.is_none() => {
            return Err(l.error(&name("value"), "missing: thumbs is `up` or `down`"))
        }
        _ => {}
    }
    Ok(LocatedEvent {
        event: Event {
            conversation_id,
            time,
            query,
            retrieved,
            answer_id,
            event,
            chunk,
            text,
            value,
        },
        at: format!("{}:{}", line.path.display(), line.line),
        time_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::FormatError;

    fn read(text: &str, map: &FieldMap) -> Result<Vec<LocatedEvent>> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl");
        std::fs::write(&p, text).unwrap();
        read_events(&p, map).map_err(|e| match e {
            FormatError::Invalid {
                line,
                field,
                message,
                ..
            } => FormatError::invalid(Path::new("log.jsonl"), line, field, message),
            other => other,
        })
    }

    #[test]
    fn canonical_events_are_read() {
        let log = r#"{"conversation_id":"c1","time":"2025-11-20T10:00:00Z","query":"q","retrieved":["a","b"],"event":"click_citation","chunk":"b"}
{"conversation_id":"c1","time":"2025-11-20T10:01:00Z","query":"q2","event":"thumbs","value":"down"}
"#;
        let ev = read(log, &FieldMap::default()).unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].event.chunk.as_deref(), Some("b"));
        assert_eq!(ev[1].event.value, Some(Thumb::Down));
        assert!(ev[0].at.ends_with("log.jsonl:1"));
    }

    #[test]
    fn mapped_and_nested_names_are_read_and_named_in_errors() {
        let map = FieldMap::parse(["conversation_id=session", "retrieved=ctx.ids", "event=type"])
            .unwrap();
        let log = r#"{"session":"s","time":"2025-11-20T10:00:00Z","query":"q","ctx":{"ids":["a"]},"type":"answer"}
{"session":"s","time":"2025-11-20T10:00:00Z","query":"q","ctx":{"ids":["a"]},"type":"clic"}
"#;
        let err = read(log, &map).unwrap_err().to_string();
        assert!(
            err.starts_with("log.jsonl:2: field `type`: unknown event `clic`"),
            "{err}"
        );
        let ok = read(log.lines().next().unwrap(), &map).unwrap();
        assert_eq!(ok[0].event.retrieved, vec!["a"]);
        assert!(FieldMap::parse(["conversation=session"]).is_err());
        assert!(FieldMap::parse(["query"]).is_err());
    }

    #[test]
    fn event_names_are_mapped_and_unknown_ones_named_with_file_line_and_field() {
        let map = FieldMap::parse(["event=type"])
            .unwrap()
            .with_events(["click=click_citation", "cite=click_citation", "vote=thumbs"])
            .unwrap();
        let log = r#"{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"q","type":"click","chunk":"a"}
{"conversation_id":"c","time":"2025-11-20T10:00:01Z","query":"q","type":"cite","chunk":"b"}
{"conversation_id":"c","time":"2025-11-20T10:00:02Z","query":"q","type":"vote","value":"up"}
{"conversation_id":"c","time":"2025-11-20T10:00:03Z","query":"q","type":"click_citation","chunk":"c"}
"#;
        let ev = read(log, &map).unwrap();
        let kinds: Vec<EventKind> = ev.iter().map(|e| e.event.event).collect();
        assert_eq!(
            kinds,
            [
                EventKind::ClickCitation,
                EventKind::ClickCitation,
                EventKind::Thumbs,
                EventKind::ClickCitation
            ]
        );
        // A mapped event keeps its event's requirements (a click names its chunk).
        let bad = r#"{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"q","type":"answer"}
{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"q","type":"tap"}
"#;
        let err = read(bad, &map).unwrap_err().to_string();
        assert!(
            err.starts_with("log.jsonl:2: field `type`: unknown event `tap`"),
            "{err}"
        );
        assert!(err.contains("click (= click_citation)"), "{err}");
        assert!(err.contains("--map-event"), "{err}");
        let no_chunk =
            r#"{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"q","type":"cite"}"#;
        let err = read(no_chunk, &map).unwrap_err().to_string();
        assert!(err.starts_with("log.jsonl:1: field `chunk`"), "{err}");
        // Bad mappings.
        let e = |p: &str| FieldMap::default().with_events([p]).unwrap_err();
        assert!(e("click").contains("expected THEIRS=EVENT"));
        assert!(e("click=clik").contains("unknown event `clik`"));
        assert!(e("click_citation=click").contains("--map-event click=click_citation"));
        assert!(e("=thumbs").contains("empty"));
        assert!(e("copy=thumbs").contains("already an event"));
        assert!(FieldMap::default()
            .with_events(["a=copy", "a=thumbs"])
            .unwrap_err()
            .contains("mapped twice"));
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let base =
            r#"{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"q","event":"answer"}"#;
        let cases = [
            (
                r#"{"time":"2025-11-20T10:00:00Z","query":"q","event":"answer"}"#,
                "conversation_id",
                "missing",
            ),
            (
                r#"{"conversation_id":"c","time":"yesterday","query":"q","event":"answer"}"#,
                "time",
                "RFC 3339",
            ),
            (
                r#"{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"","event":"answer"}"#,
                "query",
                "missing",
            ),
            (
                r#"{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"q","event":"click_citation"}"#,
                "chunk",
                "missing",
            ),
            (
                r#"{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"q","event":"thumbs","value":"sideways"}"#,
                "value",
                "up",
            ),
            (
                r#"{"conversation_id":"c","time":"2025-11-20T10:00:00Z","query":"q","event":"answer","retrieved":"a"}"#,
                "retrieved",
                "array",
            ),
        ];
        for (bad, field, words) in cases {
            let err = read(&format!("{base}\n{bad}\n"), &FieldMap::default())
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("log.jsonl:2: field `{field}`")),
                "{err}"
            );
            assert!(err.contains(words), "{err}");
        }
    }
}
