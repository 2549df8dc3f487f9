//! Traces as signals: what the trace readers (`veredicto_formats::traces`) extract from one
//! trace becomes the interaction events of the signals model ([`crate::signals`]).
//!
//! Pure. The rules, all deterministic:
//!
//! - One trace is one **interaction**: its `answer_id` is the trace ID, its conversation the
//!   trace's session (`session.id`, Langfuse's `sessionId`), or `trace:<trace ID>` when the
//!   trace names none (then it stands alone).
//! - Its first event is an `answer` at the trace's start, carrying the question and the
//!   retrieved chunk IDs; each piece of user feedback that reads as a thumb follows as a
//!   `thumbs` event at its own time (never before the trace's start).
//! - A **reformulation**: in a conversation ordered by start time (then trace ID), an
//!   interaction that starts at most [`TraceSettings::reformulation_window_ms`] after the
//!   previous one started, when that previous one got no thumbs up, is a `reformulate`
//!   event instead of an `answer`: the previous answer failed. A follow-up on another
//!   subject within the window is read the same way; a window of `None` turns the rule off.
//! - Events are ordered by time, then conversation, then trace ID, then the order above.

use crate::signals::{Event, EventKind, Thumb};
use std::collections::BTreeMap;

/// A piece of user feedback on a trace that reads as a thumb.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceFeedback {
    /// Unix milliseconds; `None` takes the trace's start.
    pub time_ms: Option<i64>,
    pub thumb: Thumb,
}

/// What one trace says about one interaction.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceInteraction {
    pub trace_id: String,
    pub session: Option<String>,
    /// Unix milliseconds of the trace's start.
    pub start_ms: i64,
    /// The user's question.
    pub query: String,
    /// The chunk IDs the model received, in order (empty: not known).
    pub retrieved: Vec<String>,
    pub feedback: Vec<TraceFeedback>,
    /// Where the trace was first read (`file:line`).
    pub at: String,
}

/// Tunables of [`interaction_events`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSettings {
    /// A follow-up that starts at most this long after the previous interaction of its
    /// conversation started reformulates it; `None`: no reformulation is inferred.
    pub reformulation_window_ms: Option<i64>,
}

impl Default for TraceSettings {
    fn default() -> Self {
        TraceSettings {
            reformulation_window_ms: Some(DEFAULT_REFORMULATION_WINDOW_MS),
        }
    }
}

/// Two minutes: a question asked again this soon says that the answer did not serve.
pub const DEFAULT_REFORMULATION_WINDOW_MS: i64 = 120_000;

/// One event made from a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEvent {
    pub event: Event,
    pub time_ms: i64,
    /// Where its trace was first read (`file:line`).
    pub at: String,
}

/// The conversation of a trace without a session.
pub fn conversation_of(trace: &TraceInteraction) -> String {
    match &trace.session {
        Some(s) => s.clone(),
        None => format!("trace:{}", trace.trace_id),
    }
}

/// The interaction events of `traces`, by the rules of this module. A trace whose start
/// cannot be written as RFC 3339 (outside the years 0000–9999) is left out and returned in
/// the second list.
pub fn interaction_events(
    traces: Vec<TraceInteraction>,
    settings: &TraceSettings,
) -> (Vec<TraceEvent>, Vec<TraceInteraction>) {
    let mut by_conversation: BTreeMap<String, Vec<TraceInteraction>> = BTreeMap::new();
    let mut out_of_range = Vec::new();
    for t in traces {
        if crate::time::format_timestamp_ms(t.start_ms).is_none() {
            out_of_range.push(t);
            continue;
        }
        by_conversation
            .entry(conversation_of(&t))
            .or_default()
            .push(t);
    }
    // (time, conversation, trace, order within the trace)
    let mut events: Vec<((i64, String, String, usize), TraceEvent)> = Vec::new();
    for (conversation, mut list) in by_conversation {
        list.sort_by(|a, b| (a.start_ms, &a.trace_id).cmp(&(b.start_ms, &b.trace_id)));
        let mut previous: Option<(i64, bool)> = None; // (start, got a thumbs up)
        for t in list {
            let reformulates = match (previous, settings.reformulation_window_ms) {
                (Some((start, liked)), Some(window)) => !liked && t.start_ms - start <= window,
                _ => false,
            };
            let liked = t.feedback.iter().any(|f| f.thumb == Thumb::Up);
            previous = Some((t.start_ms, liked));
            let base = Event {
                conversation_id: conversation.clone(),
                time: crate::time::format_timestamp_ms(t.start_ms).unwrap_or_default(),
                query: t.query.clone(),
                retrieved: t.retrieved.clone(),
                answer_id: Some(t.trace_id.clone()),
                event: if reformulates {
                    EventKind::Reformulate
                } else {
                    EventKind::Answer
                },
                chunk: None,
                text: None,
                value: None,
            };
            let key =
                |time: i64, order: usize| (time, conversation.clone(), t.trace_id.clone(), order);
            events.push((
                key(t.start_ms, 0),
                TraceEvent {
                    event: base,
                    time_ms: t.start_ms,
                    at: t.at.clone(),
                },
            ));
            for (i, f) in t.feedback.iter().enumerate() {
                let time = f.time_ms.map_or(t.start_ms, |ms| ms.max(t.start_ms));
                let Some(text) = crate::time::format_timestamp_ms(time) else {
                    continue;
                };
                events.push((
                    key(time, i + 1),
                    TraceEvent {
                        event: Event {
                            conversation_id: conversation.clone(),
                            time: text,
                            query: t.query.clone(),
                            retrieved: Vec::new(),
                            answer_id: Some(t.trace_id.clone()),
                            event: EventKind::Thumbs,
                            chunk: None,
                            text: None,
                            value: Some(f.thumb),
                        },
                        time_ms: time,
                        at: t.at.clone(),
                    },
                ));
            }
        }
    }
    events.sort_by(|a, b| a.0.cmp(&b.0));
    (events.into_iter().map(|(_, e)| e).collect(), out_of_range)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(id: &str, session: Option<&str>, start_ms: i64) -> TraceInteraction {
        TraceInteraction {
            trace_id: id.into(),
            session: session.map(Into::into),
            start_ms,
            query: format!("q {id}"),
            retrieved: vec!["c1".into()],
            feedback: Vec::new(),
            at: format!("t.jsonl:{start_ms}"),
        }
    }

    fn kinds(events: &[TraceEvent]) -> Vec<(String, EventKind)> {
        events
            .iter()
            .map(|e| (e.event.answer_id.clone().unwrap(), e.event.event))
            .collect()
    }

    #[test]
    fn a_follow_up_within_the_window_reformulates_unless_the_answer_was_liked() {
        let mut liked = trace("t3", Some("s"), 200_000);
        liked.feedback.push(TraceFeedback {
            time_ms: Some(199_000),
            thumb: Thumb::Up,
        });
        let traces = vec![
            trace("t2", Some("s"), 60_000),
            trace("t1", Some("s"), 0),
            liked,
            trace("t4", Some("s"), 230_000),
            trace("t5", Some("s"), 400_000),
            trace("t6", None, 401_000),
        ];
        let (events, _) = interaction_events(traces, &TraceSettings::default());
        assert_eq!(
            kinds(&events),
            [
                ("t1".into(), EventKind::Answer),
                ("t2".into(), EventKind::Reformulate),
                ("t3".into(), EventKind::Answer),
                // The feedback came "before" its trace started: it is moved to the start.
                ("t3".into(), EventKind::Thumbs),
                ("t4".into(), EventKind::Answer),
                ("t5".into(), EventKind::Answer),
                ("t6".into(), EventKind::Answer),
            ]
        );
        assert_eq!(events[3].event.time, "1970-01-01T00:03:20.000Z");
        assert_eq!(events[6].event.conversation_id, "trace:t6");
        assert_eq!(events[1].event.retrieved, ["c1"]);
        let off = TraceSettings {
            reformulation_window_ms: None,
        };
        let (events, _) = interaction_events(
            vec![trace("a", Some("s"), 0), trace("b", Some("s"), 1)],
            &off,
        );
        assert!(events.iter().all(|e| e.event.event == EventKind::Answer));
    }

    #[test]
    fn events_come_in_one_order_whatever_the_order_of_the_traces() {
        let traces = vec![
            trace("b", Some("s2"), 5),
            trace("a", Some("s1"), 5),
            trace("c", Some("s1"), 5),
        ];
        let mut reversed = traces.clone();
        reversed.reverse();
        let (one, _) = interaction_events(traces, &TraceSettings::default());
        let (two, _) = interaction_events(reversed, &TraceSettings::default());
        assert_eq!(one, two);
        assert_eq!(
            kinds(&one),
            [
                ("a".into(), EventKind::Answer),
                ("c".into(), EventKind::Reformulate),
                ("b".into(), EventKind::Answer)
            ]
        );
        let (_, out) = interaction_events(
            vec![trace("far", None, 300_000_000_000_000)],
            &TraceSettings::default(),
        );
        assert_eq!(out.len(), 1);
    }
}
