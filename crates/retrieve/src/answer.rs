//! Reading an HTTP or command answer without holding it whole: the JSON is parsed as it
//! streams in, and only what the exam uses is kept — the first `depth` results (their ID
//! and score, found with the configured JSON pointers) and, for a command, the `id` the
//! answer echoes. Results beyond the depth are skipped unread; so are the fields no pointer
//! names. Memory per answer in flight is then the kept results plus the parser's buffers,
//! whatever the size of the answer; the bytes read are capped ([`Capped`]).

use std::io::{self, Read};

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use veredicto_core::redact;

use crate::{Hit, Options};

/// A JSON pointer's reference tokens (`~1` is `/`, `~0` is `~`): `""` is the whole value.
fn tokens(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer[1..]
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The array index a pointer token names, as JSON pointers read it (decimal, no sign, no
/// leading zero).
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

/// The value at `path` inside `value`.
fn resolve<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, t| match v {
        Value::Object(map) => map.get(t),
        Value::Array(items) => index(t).and_then(|i| items.get(i)),
        _ => None,
    })
}

/// Where the results are in an answer, and how the IDs are read.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    results: String,
    id: String,
    score: String,
    results_path: Vec<String>,
    item_paths: Vec<Vec<String>>,
    id_as_text: bool,
}

/// What an answer holds that the exam uses.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The first `depth` results, in the answer's order.
    pub hits: Vec<Hit>,
}

/// Why an answer could not be read.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Reading the bytes failed (the connection, the pipe, the size cap).
    Io(io::Error),
    /// The bytes are not one JSON value (a syntax error, or the text ends early).
    Json(serde_json::Error),
    /// Valid JSON that breaks the contract: what is wrong, worded for a message.
    Contract(String),
    /// Valid JSON without the result list: what is wrong (the message then quotes the
    /// answer's start).
    NoList(String),
    /// The answer's top-level `id` (what it holds, if anything) is not the one expected.
    OutOfStep(Option<Value>),
}

impl Failure {
    /// The same failure, its reason prefixed with `context` (`case `c1``).
    pub(crate) fn within(self, context: &str) -> Failure {
        match self {
            Failure::Contract(r) => Failure::Contract(format!("{context}: {r}")),
            Failure::NoList(r) => Failure::NoList(format!("{context}: {r}")),
            other => other,
        }
    }
}

/// Values kept per result: its ID, its score, and its span's `doc_id`, `start`, `end`.
const ITEM_SLOTS: usize = 5;

/// The members of a result that say where its chunk sits in its document.
const SPAN_MEMBERS: [&str; 3] = ["doc_id", "start", "end"];

/// What the parse found at the result list's pointer.
#[derive(Debug, Default)]
struct List {
    /// Something was at the pointer.
    found: bool,
    /// It was not a list: what it was.
    not_a_list: Option<&'static str>,
    /// The kept results: the values at the item pointers ([`ITEM_SLOTS`]).
    items: Vec<[Option<Value>; ITEM_SLOTS]>,
}

/// What the parse keeps, by slot: `slots[i]` for the i-th kept pointer, and the list.
struct Found {
    slots: Vec<Option<Value>>,
    list: List,
}

/// What to do with the value a path leads to.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// Keep it whole in slot `i` (a scalar, in practice: an ID, a score, an echoed id).
    Keep(usize),
    /// Read it as the result list.
    List,
}

/// One value to parse, with the paths (relative to it) that lead to something kept.
struct Route<'p, 'f> {
    paths: Vec<(&'p [String], Target)>,
    found: &'f mut Found,
    /// For the list: the item paths and how many items to keep.
    items: &'p [Vec<String>],
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Route<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.paths.is_empty() {
            IgnoredAny::deserialize(d)?;
            return Ok(());
        }
        if self
            .paths
            .iter()
            .any(|(p, t)| p.is_empty() && matches!(t, Target::List))
        {
            // The constructor keeps every other path out of the list's value.
            return d.deserialize_any(ListVisitor {
                list: &mut self.found.list,
                items: self.items,
                depth: self.depth,
            });
        }
        if self.paths.iter().any(|(p, _)| p.is_empty()) {
            // A value kept whole: the paths inside it are read from the kept value.
            let value = Value::deserialize(d)?;
            for (path, target) in &self.paths {
                if let Target::Keep(slot) = target {
                    self.found.slots[*slot] = resolve(&value, path).cloned();
                }
            }
            return Ok(());
        }
        d.deserialize_any(RouteVisitor(self))
    }
}

struct RouteVisitor<'p, 'f>(Route<'p, 'f>);

impl<'p> RouteVisitor<'p, '_> {
    /// The paths that continue into the member named `token`, without it.
    fn under(&self, token: &str) -> Vec<(&'p [String], Target)> {
        self.0
            .paths
            .iter()
            .filter(|(p, _)| p.first().is_some_and(|t| t == token))
            .map(|(p, t)| (&p[1..], *t))
            .collect()
    }
}

macro_rules! scalar {
    ($($name:ident: $ty:ty),*) => {$(
        fn $name<E: de::Error>(self, _: $ty) -> Result<(), E> {
            Ok(())
        }
    )*};
}

impl<'de> Visitor<'de> for RouteVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    scalar!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            let paths = self.under(&key);
            map.next_value_seed(Route {
                paths,
                found: &mut *self.0.found,
                items: self.0.items,
                depth: self.0.depth,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            let paths: Vec<_> = self
                .0
                .paths
                .iter()
                .filter(|(p, _)| p.first().and_then(|t| index(t)) == Some(i))
                .map(|(p, t)| (&p[1..], *t))
                .collect();
            let route = Route {
                paths,
                found: &mut *self.0.found,
                items: self.0.items,
                depth: self.0.depth,
            };
            if seq.next_element_seed(route)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
}

struct ListVisitor<'p, 'f> {
    list: &'f mut List,
    items: &'p [Vec<String>],
    depth: usize,
}

impl ListVisitor<'_, '_> {
    fn other<E: de::Error>(self, what: &'static str) -> Result<(), E> {
        *self.list = List {
            found: true,
            not_a_list: Some(what),
            items: Vec::new(),
        };
        Ok(())
    }
}

impl<'de> Visitor<'de> for ListVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.other("a boolean")
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.other("a number")
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.other("a number")
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.other("a number")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.other("a string")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.other("null")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        self.other("an object")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        // A list given twice (a repeated key) is read as a parser keeping the last would.
        *self.list = List {
            found: true,
            ..List::default()
        };
        let paths: Vec<(&[String], Target)> = self
            .items
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_slice(), Target::Keep(i)))
            .collect();
        loop {
            if self.list.items.len() < self.depth {
                let mut item = Found {
                    slots: vec![None; ITEM_SLOTS],
                    list: List::default(),
                };
                let route = Route {
                    paths: paths.clone(),
                    found: &mut item,
                    items: &[],
                    depth: 0,
                };
                if seq.next_element_seed(route)?.is_none() {
                    return Ok(());
                }
                self.list
                    .items
                    .push(std::array::from_fn(|i| item.slots[i].take()));
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
    }
}

impl Shape {
    /// The shape the options' pointers describe (`--results-pointer`, `--id-pointer`,
    /// `--score-pointer`, `--id-as-text`).
    pub(crate) fn new(options: &Options) -> Result<Shape, String> {
        for (name, p) in [
            ("--results-pointer", &options.results_pointer),
            ("--id-pointer", &options.id_pointer),
            ("--score-pointer", &options.score_pointer),
        ] {
            if !p.is_empty() && !p.starts_with('/') {
                return Err(format!(
                    "{name} `{}` is not a JSON pointer (it must be empty or start with `/`)",
                    redact::short(p)
                ));
            }
        }
        Ok(Shape {
            results: options.results_pointer.clone(),
            id: options.id_pointer.clone(),
            score: options.score_pointer.clone(),
            results_path: tokens(&options.results_pointer),
            item_paths: [tokens(&options.id_pointer), tokens(&options.score_pointer)]
                .into_iter()
                .chain(SPAN_MEMBERS.iter().map(|m| vec![(*m).to_owned()]))
                .collect(),
            id_as_text: options.id_as_text,
        })
    }

    /// The same shape, checked for answers whose top-level `id` echoes their request's (a
    /// command's): the result list then cannot be the whole answer nor inside `id`.
    pub(crate) fn echoing(self) -> Result<Shape, String> {
        if self.results_path.first().is_none_or(|t| t == "id") {
            return Err(format!(
                "--results-pointer `{}` cannot be used with a command: its answers are objects whose `id` echoes the request's, with the result list beside it",
                redact::short(&self.results)
            ));
        }
        Ok(self)
    }

    /// Parses one answer from `reader` (to its end) and keeps its first `depth` results.
    /// With `echo`, the answer's top-level `id` must be that value (checked before the
    /// results: an answer to another request is refused whatever it holds).
    pub(crate) fn read<R: Read>(
        &self,
        reader: R,
        depth: usize,
        echo: Option<&Value>,
    ) -> Result<Answer, Failure> {
        let id_path = vec!["id".to_owned()];
        let mut paths = vec![(self.results_path.as_slice(), Target::List)];
        if echo.is_some() {
            paths.push((id_path.as_slice(), Target::Keep(0)));
        }
        let mut found = Found {
            slots: vec![None],
            list: List::default(),
        };
        let mut de = serde_json::Deserializer::from_reader(reader);
        let parsed = Route {
            paths,
            found: &mut found,
            items: &self.item_paths,
            depth,
        }
        .deserialize(&mut de)
        .and_then(|()| de.end());
        if let Err(e) = parsed {
            return Err(match e.classify() {
                serde_json::error::Category::Io => Failure::Io(e.into()),
                _ => Failure::Json(e),
            });
        }
        if let Some(want) = echo {
            let got = found.slots[0].take();
            if got.as_ref() != Some(want) {
                return Err(Failure::OutOfStep(got));
            }
        }
        let list = found.list;
        if !list.found {
            return Err(Failure::NoList(format!(
                "the answer has no result list at `{}`",
                self.results
            )));
        }
        if let Some(what) = list.not_a_list {
            return Err(Failure::NoList(format!(
                "`{}` in the answer is not a list (it is {what})",
                self.results
            )));
        }
        let mut hits = Vec::with_capacity(list.items.len());
        for (i, [id, score, doc, start, end]) in list.items.into_iter().enumerate() {
            let id = self.read_id(i + 1, id)?;
            let span = read_span(i + 1, &id, doc, start, end)?;
            let score = match score {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => n.as_f64(),
                Some(other) => {
                    return Err(Failure::Contract(format!(
                        "result {} (`{}`): `{}` is not a number: {}",
                        i + 1,
                        redact::short(&id),
                        self.score,
                        redact::short(&other.to_string())
                    )))
                }
            };
            hits.push(Hit { id, score, span });
        }
        Ok(Answer { hits })
    }

    /// Result number `n`'s ID: a string, or with `--id-as-text` an integer written exactly.
    fn read_id(&self, n: usize, id: Option<Value>) -> Result<String, Failure> {
        let bad = |what: String| Err(Failure::Contract(format!("result {n}: {what}")));
        match id {
            Some(Value::String(s)) => Ok(s),
            Some(Value::Number(num)) if self.id_as_text => {
                if num.is_i64() || num.is_u64() {
                    Ok(num.to_string())
                } else {
                    bad(format!(
                        "`{}` is {num}: with --id-as-text a numeric ID must be a whole number between -2^63 and 2^64 - 1 (it is read as text exactly)",
                        self.id
                    ))
                }
            }
            Some(Value::Number(num)) => bad(format!(
                "`{}` is not a string: {num} (numeric IDs are read as text with --id-as-text)",
                self.id
            )),
            Some(other) => bad(format!(
                "`{}` is not a string: {}",
                self.id,
                redact::short(&other.to_string())
            )),
            None => bad(format!("no `{}`", self.id)),
        }
    }
}

/// Result number `n`'s span, from its `doc_id`, `start` and `end` members: all three or
/// none (`null` is none); `doc_id` a string, `start` and `end` whole numbers of characters
/// (Unicode scalar values, end exclusive), `start` ≤ `end`.
fn read_span(
    n: usize,
    id: &str,
    doc: Option<Value>,
    start: Option<Value>,
    end: Option<Value>,
) -> Result<Option<veredicto_core::evidence::ChunkSpan>, Failure> {
    let present = |v: &Option<Value>| v.as_ref().is_some_and(|v| !v.is_null());
    let given = [present(&doc), present(&start), present(&end)];
    if given.iter().all(|g| !g) {
        return Ok(None);
    }
    let bad = |what: String| {
        Err(Failure::Contract(format!(
            "result {n} (`{}`): {what}",
            redact::short(id)
        )))
    };
    if let Some(missing) = given.iter().position(|g| !g) {
        return bad(format!(
            "gives {} without `{}`: a chunk's span is `doc_id`, `start` and `end` together",
            SPAN_MEMBERS
                .iter()
                .zip(given)
                .filter(|(_, g)| *g)
                .map(|(m, _)| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", "),
            SPAN_MEMBERS[missing]
        ));
    }
    let doc_id = match doc {
        Some(Value::String(s)) if !s.is_empty() => s,
        other => {
            return bad(format!(
                "`doc_id` is not a non-empty string: {}",
                redact::short(&other.unwrap_or_default().to_string())
            ))
        }
    };
    let offset = |name: &str, v: Option<Value>| match v.as_ref().and_then(Value::as_u64) {
        Some(u) => Ok(u as usize),
        None => Err(Failure::Contract(format!(
            "result {n} (`{}`): `{name}` is not a whole number of characters: {}",
            redact::short(id),
            redact::short(&v.unwrap_or_default().to_string())
        ))),
    };
    let (start, end) = (offset("start", start)?, offset("end", end)?);
    if start > end {
        return bad(format!("`start` {start} is after `end` {end}"));
    }
    Ok(Some(veredicto_core::evidence::ChunkSpan {
        doc_id,
        start,
        end,
    }))
}

/// How many bytes of an answer are kept to quote it in messages.
const QUOTED_BYTES: usize = 1024;

/// What a capped reader has read: how much, its first bytes (to quote), whether it passed
/// its limit.
#[derive(Debug)]
pub(crate) struct Tally {
    limit: u64,
    read: u64,
    head: Vec<u8>,
    /// Whether more than the limit was read.
    pub over: bool,
}

impl Tally {
    fn new(limit: u64) -> Tally {
        Tally {
            limit,
            read: 0,
            head: Vec::new(),
            over: false,
        }
    }

    /// How many bytes were read.
    pub(crate) fn bytes(&self) -> u64 {
        self.read
    }

    /// What was read, as a message may quote it ([`quote`]); past the limit, without a
    /// size (the message says the limit, and the rest was never read).
    pub(crate) fn quote(&self) -> String {
        let text = quote(&self.head, self.read);
        match (self.over, text.rfind("… (")) {
            (true, Some(cut)) => format!("{}…", &text[..cut]),
            _ => text,
        }
    }

    fn account(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.read += bytes.len() as u64;
        let room = QUOTED_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
        if self.read > self.limit {
            self.over = true;
            return Err(io::Error::other(format!("more than {} bytes", self.limit)));
        }
        Ok(())
    }
}

/// A reader that fails after `limit` bytes and keeps the first ones, for messages.
pub(crate) struct Capped<R> {
    inner: R,
    /// What was read.
    pub tally: Tally,
}

impl<R: Read> Capped<R> {
    /// The whole of `inner`, at most `limit` bytes.
    pub(crate) fn new(inner: R, limit: u64) -> Capped<R> {
        Capped {
            inner,
            tally: Tally::new(limit),
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.tally.over {
            return Err(io::Error::other("over the size limit"));
        }
        let n = self.inner.read(buf)?;
        self.tally.account(&buf[..n])?;
        Ok(n)
    }
}

/// One line of a buffered reader (up to and including its newline, never beyond: the next
/// line stays in `inner`), at most `limit` bytes.
pub(crate) struct Line<R> {
    inner: R,
    /// What was read.
    pub tally: Tally,
    ended: bool,
    /// The source ended before a newline (end of file: the program closed its output).
    pub eof: bool,
}

impl<R: io::BufRead> Line<R> {
    /// The next line of `inner`.
    pub(crate) fn new(inner: R, limit: u64) -> Line<R> {
        Line {
            inner,
            tally: Tally::new(limit),
            ended: false,
            eof: false,
        }
    }

    /// Whether the source ended before the line's first byte.
    pub(crate) fn nothing(&self) -> bool {
        self.eof && self.tally.read == 0
    }
}

impl<R: io::BufRead> Read for Line<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.tally.over {
            return Err(io::Error::other("over the size limit"));
        }
        if self.ended || buf.is_empty() {
            return Ok(0);
        }
        let available = self.inner.fill_buf()?;
        if available.is_empty() {
            self.eof = true;
            self.ended = true;
            return Ok(0);
        }
        let mut n = available.len().min(buf.len());
        if let Some(i) = available[..n].iter().position(|&b| b == b'\n') {
            n = i + 1;
            self.ended = true;
        }
        buf[..n].copy_from_slice(&available[..n]);
        self.inner.consume(n);
        self.tally.account(&buf[..n])?;
        Ok(n)
    }
}

/// `head` (the first bytes of something `total` bytes long) for a message: at most 200
/// characters, secrets redacted, control characters escaped, the total size said when cut.
pub(crate) fn quote(head: &[u8], total: u64) -> String {
    let text = String::from_utf8_lossy(head);
    let text = redact::secrets_in_text(text.trim_end_matches(['\n', '\r']));
    let whole = total <= head.len() as u64;
    if whole && text.chars().count() <= redact::EXCERPT_CHARS {
        return redact::escape_control(&text);
    }
    let cut: String = text.chars().take(redact::EXCERPT_CHARS).collect();
    format!("{}… ({total} bytes)", redact::escape_control(&cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(results: &str, id: &str, score: &str) -> Shape {
        Shape::new(&Options {
            results_pointer: results.into(),
            id_pointer: id.into(),
            score_pointer: score.into(),
            ..Options::default()
        })
        .unwrap()
    }

    fn ids(answer: &Answer) -> Vec<&str> {
        answer.hits.iter().map(|h| h.id.as_str()).collect()
    }

    #[test]
    fn nested_pointers_escapes_and_array_indices_are_followed() {
        let s = shape("/data/0/a~1b", "/doc/~0id", "/s/1");
        let text = r#"{"x": [1, {"y": 2}], "data": [{"a/b": [{"doc": {"~id": "c1"}, "s": [0, 2.5]}, {"doc": {"~id": "c2"}}]}, {"a/b": []}]}"#;
        let a = s.read(text.as_bytes(), 10, None).unwrap();
        assert_eq!(ids(&a), ["c1", "c2"]);
        assert_eq!(a.hits[0].score, Some(2.5));
        assert_eq!(a.hits[1].score, None);
    }

    #[test]
    fn only_depth_results_are_kept_and_the_rest_is_skipped_unread() {
        let s = shape("/results", "/id", "/score");
        // Results beyond the depth are not even checked.
        let text = r#"{"results": [{"id": "a", "score": 1}, {"id": "b"}, {"id": 7}, "junk"]}"#;
        let a = s.read(text.as_bytes(), 2, None).unwrap();
        assert_eq!(ids(&a), ["a", "b"]);
    }

    #[test]
    fn a_pointer_to_the_whole_item_reads_it_as_the_id() {
        let s = shape("/hits", "", "/nope");
        let a = s.read(&br#"{"hits": ["a", "b"]}"#[..], 5, None).unwrap();
        assert_eq!(ids(&a), ["a", "b"]);
        // The whole answer as the list.
        let s = shape("", "/id", "/score");
        let a = s
            .read(&br#"[{"id": "z", "score": 0.5}]"#[..], 5, None)
            .unwrap();
        assert_eq!(ids(&a), ["z"]);
    }

    #[test]
    fn a_repeated_key_is_read_as_its_last_value_like_a_json_value_would() {
        let s = shape("/results", "/id", "/score");
        let text = r#"{"results": [{"id": "old"}], "results": [{"id": "a", "id": "b"}]}"#;
        let a = s.read(text.as_bytes(), 5, None).unwrap();
        assert_eq!(ids(&a), ["b"]);
    }

    #[test]
    fn numeric_ids_need_id_as_text_and_are_written_exactly() {
        let text = r#"{"results": [{"id": 18446744073709551615}, {"id": -9223372036854775808}, {"id": 0}]}"#;
        let strict = shape("/results", "/id", "/score");
        let Err(Failure::Contract(e)) = strict.read(text.as_bytes(), 5, None) else {
            panic!("expected a contract error")
        };
        assert!(e.contains("--id-as-text"), "{e}");
        let lenient = Shape {
            id_as_text: true,
            ..strict.clone()
        };
        let a = lenient.read(text.as_bytes(), 5, None).unwrap();
        assert_eq!(
            ids(&a),
            ["18446744073709551615", "-9223372036854775808", "0"]
        );
        // A fractional or out-of-range number cannot be an exact ID.
        for bad in [
            r#"{"results": [{"id": 1.5}]}"#,
            r#"{"results": [{"id": 1e30}]}"#,
        ] {
            let Err(Failure::Contract(e)) = lenient.read(bad.as_bytes(), 5, None) else {
                panic!("expected a contract error for {bad}")
            };
            assert!(e.contains("whole number"), "{e}");
        }
    }

    #[test]
    fn the_echoed_id_is_checked_before_the_results() {
        let s = shape("/results", "/id", "/score").echoing().unwrap();
        let three = serde_json::json!(3);
        let a = s
            .read(
                &br#"{"results": [{"id": "a"}], "id": 3}"#[..],
                5,
                Some(&three),
            )
            .unwrap();
        assert_eq!(ids(&a), ["a"]);
        for (text, got) in [
            (
                r#"{"results": [{"id": "a"}], "id": 2}"#,
                Some(serde_json::json!(2)),
            ),
            (
                r#"{"results": [{"id": "a"}], "id": "3"}"#,
                Some(serde_json::json!("3")),
            ),
            (r#"{"results": [{"id": "a"}]}"#, None),
            // Out of step comes first, even when the rest breaks the contract too.
            (r#"{"hits": 1, "id": 1}"#, Some(serde_json::json!(1))),
        ] {
            match s.read(text.as_bytes(), 5, Some(&three)) {
                Err(Failure::OutOfStep(g)) => assert_eq!(g, got, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(shape("", "/id", "/score").echoing().is_err());
        assert!(shape("/id/list", "/id", "/score").echoing().is_err());
    }

    #[test]
    fn contract_and_syntax_failures_are_told_apart() {
        let s = shape("/results", "/id", "/score");
        for (text, want) in [
            (r#"{"hits": []}"#, "no result list at `/results`"),
            (r#"{"results": {"a": 1}}"#, "not a list (it is an object)"),
            (
                r#"{"results": [{"id": "a", "score": "high"}]}"#,
                "`/score` is not a number",
            ),
            (r#"{"results": [{"x": 1}]}"#, "result 1: no `/id`"),
        ] {
            match s.read(text.as_bytes(), 5, None) {
                Err(Failure::Contract(e) | Failure::NoList(e)) => assert!(e.contains(want), "{e}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        for text in [
            "not json",
            r#"{"results": [] } trailing"#,
            r#"{"results": ["#,
        ] {
            assert!(
                matches!(s.read(text.as_bytes(), 5, None), Err(Failure::Json(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn a_capped_line_stops_at_its_newline_and_at_its_limit() {
        let input = b"{\"a\": 1}\nsecond line\n";
        let mut source = io::BufReader::new(&input[..]);
        let mut first = Line::new(&mut source, 100);
        let mut text = String::new();
        first.read_to_string(&mut text).unwrap();
        assert_eq!(text, "{\"a\": 1}\n");
        let mut second = Line::new(&mut source, 5);
        let mut text = String::new();
        assert!(second.read_to_string(&mut text).is_err());
        assert!(second.tally.over);
        assert!(
            second.tally.quote().starts_with("second"),
            "{}",
            second.tally.quote()
        );
        let mut capped = Capped::new(&b"0123456789"[..], 4);
        assert!(capped.read_to_end(&mut Vec::new()).is_err());
        assert!(capped.tally.over);
        let mut third = Line::new(io::BufReader::new(&b""[..]), 5);
        assert_eq!(third.read(&mut [0; 4]).unwrap(), 0);
        assert!(third.nothing());
    }

    #[test]
    fn a_quote_is_cut_and_says_the_size_in_bytes() {
        let head = vec![b'x'; 1024];
        let q = quote(&head, 5_000_000);
        assert!(q.ends_with("… (5000000 bytes)"), "{q}");
        assert!(q.chars().count() < 230, "{q}");
        assert_eq!(quote(b"{\"a\": 1}\n", 9), "{\"a\": 1}");
    }
}
