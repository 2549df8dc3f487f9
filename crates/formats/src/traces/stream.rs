//! Streaming a JSON trace export record by record, with a bound on each record.
//!
//! A file is a sequence of top-level JSON values: one document, or JSON Lines. Each value
//! yields records:
//! - an array: each element;
//! - an object with a `data` array (an API page: Langfuse, Phoenix): each element of `data`
//!   (the page's other keys are skipped);
//! - an OTLP request (`resourceSpans`, or `resource_spans`): each span of each
//!   `scopeSpans` (or the older `instrumentationLibrarySpans`) of each resource;
//! - any other object: itself.
//!
//! Only one record is held at a time, and a record may not exceed [`MAX_RECORD_BYTES`] of
//! the file: a longer one stops the reading at its line, before it is read whole. Objects
//! that repeat a key are refused, as everywhere in veredicto.

use crate::error::FormatError;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::{BufRead, Read};
use std::path::Path;

/// The largest record (a span, a trace, an observation, a score) a trace file may hold:
/// 8 MiB. A span with a hundred retrieved passages is a few hundred kilobytes.
pub const MAX_RECORD_BYTES: u64 = 8 << 20;

/// Where a record starts in its file (1-based line and column, in bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

/// What kind of container a record came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A top-level object, an element of a top-level array or of a `data` array.
    Plain,
    /// A span of an OTLP request.
    OtlpSpan,
}

#[derive(Default)]
struct Counter {
    offset: Cell<u64>,
    line: Cell<usize>,
    column: Cell<usize>,
    /// A byte other than JSON whitespace was read since the last complete top-level value.
    content: Cell<bool>,
    /// Reading past this offset fails (the current record is too long).
    limit: Cell<Option<u64>>,
    exceeded: Cell<Option<Location>>,
    record_start: Cell<Option<Location>>,
}

impl Counter {
    fn here(&self) -> Location {
        Location {
            line: self.line.get(),
            column: self.column.get().max(1),
        }
    }

    /// The record starting now may read at most [`MAX_RECORD_BYTES`].
    fn open_record(&self) {
        // The deserializer has already taken the record's first byte.
        let start = self.offset.get().saturating_sub(1);
        self.limit.set(Some(start + MAX_RECORD_BYTES));
        self.record_start.set(Some(self.here()));
    }

    fn close_record(&self) {
        self.limit.set(None);
        self.record_start.set(None);
    }
}

struct Counting<'c, R> {
    inner: R,
    counter: &'c Counter,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let c = self.counter;
        if let Some(limit) = c.limit.get() {
            if c.offset.get() >= limit {
                c.exceeded.set(c.record_start.get());
                return Err(std::io::Error::other("record too long"));
            }
            let room = (limit - c.offset.get()).min(buf.len() as u64) as usize;
            return self.count(buf, room);
        }
        self.count(buf, buf.len())
    }
}

impl<R: Read> Counting<'_, R> {
    fn count(&mut self, buf: &mut [u8], room: usize) -> std::io::Result<usize> {
        let n = self.inner.read(&mut buf[..room])?;
        let c = self.counter;
        for &b in &buf[..n] {
            if b == b'\n' {
                c.line.set(c.line.get() + 1);
                c.column.set(0);
            } else {
                c.column.set(c.column.get() + 1);
            }
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                c.content.set(true);
            }
        }
        c.offset.set(c.offset.get() + n as u64);
        Ok(n)
    }
}

type Sink<'s> = dyn FnMut(Origin, Value, Location) -> Result<(), FormatError> + 's;

struct Ctx<'c, 's> {
    counter: &'c Counter,
    sink: RefCell<&'c mut Sink<'s>>,
    failure: RefCell<Option<FormatError>>,
}

impl Ctx<'_, '_> {
    fn emit<E: de::Error>(&self, origin: Origin, value: Value, at: Location) -> Result<(), E> {
        let result = (self.sink.borrow_mut())(origin, value, at);
        result.map_err(|e| {
            *self.failure.borrow_mut() = Some(e);
            E::custom("stopped")
        })
    }
}

/// Reads `path` and hands each record to `sink`, in file order. Errors: the file cannot be
/// read, it is not JSON (its line and column), a record is longer than
/// [`MAX_RECORD_BYTES`] (its starting line), or `sink` failed.
pub fn for_each_record(
    path: &Path,
    mut sink: impl FnMut(Origin, Value, Location) -> Result<(), FormatError>,
) -> Result<(), FormatError> {
    let file = std::fs::File::open(path).map_err(|e| FormatError::io(path, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let counter = Counter::default();
    counter.line.set(1);
    {
        let head = reader.fill_buf().map_err(|e| FormatError::io(path, e))?;
        if head.starts_with(b"\xef\xbb\xbf") {
            reader.consume(3);
        }
    }
    let counting = Counting {
        inner: reader,
        counter: &counter,
    };
    let sink: &mut Sink<'_> = &mut sink;
    let ctx = Ctx {
        counter: &counter,
        sink: RefCell::new(sink),
        failure: RefCell::new(None),
    };
    let mut de = serde_json::Deserializer::from_reader(counting);
    loop {
        counter.content.set(false);
        match Top(&ctx).deserialize(&mut de) {
            Ok(()) => {}
            Err(e) => {
                if let Some(f) = ctx.failure.borrow_mut().take() {
                    return Err(f);
                }
                if let Some(at) = counter.exceeded.get() {
                    return Err(FormatError::invalid(
                        path,
                        at.line,
                        "-",
                        format!(
                            "the record starting at column {} is longer than {} MiB ({MAX_RECORD_BYTES} bytes): not a trace record",
                            at.column,
                            MAX_RECORD_BYTES >> 20
                        ),
                    ));
                }
                if e.is_eof() && !counter.content.get() {
                    return Ok(());
                }
                if e.is_io() {
                    return Err(FormatError::io(path, std::io::Error::other(e.to_string())));
                }
                let message = if e.is_eof() {
                    format!("the file ends inside a JSON value: {e}")
                } else {
                    format!("malformed JSON: {e}")
                };
                return Err(FormatError::invalid(path, e.line(), "-", message));
            }
        }
    }
}

/// A top-level value.
struct Top<'a, 'c, 's>(&'a Ctx<'c, 's>);

impl<'de> DeserializeSeed<'de> for Top<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

fn not_a_record<E: de::Error>(what: &str) -> E {
    E::custom(format!(
        "expected a JSON object or array of objects at the top level, found {what}"
    ))
}

impl<'de> Visitor<'de> for Top<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object or an array of objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        records(self.0, seq, Origin::Plain)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let ctx = self.0;
        let at = ctx.counter.here();
        ctx.counter.open_record();
        let mut object = Map::new();
        let mut container = false;
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key `{}` in an object",
                    veredicto_core::redact::short(&key)
                )));
            }
            match key.as_str() {
                "data" => {
                    ctx.counter.close_record();
                    if let Some(v) = map.next_value_seed(Records(ctx, Origin::Plain))? {
                        object.insert(key, v);
                    } else {
                        container = true;
                    }
                }
                "resourceSpans" | "resource_spans" => {
                    ctx.counter.close_record();
                    map.next_value_seed(Each(ctx, Level::Resource))?;
                    container = true;
                }
                _ => {
                    if ctx.counter.limit.get().is_none() {
                        ctx.counter.open_record();
                    }
                    let v = map.next_value_seed(crate::json::StrictValue)?;
                    object.insert(key, v);
                }
            }
        }
        ctx.counter.close_record();
        if container {
            return Ok(());
        }
        ctx.emit(Origin::Plain, Value::Object(object), at)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(not_a_record("a boolean"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(not_a_record("a number"))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(not_a_record("a number"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(not_a_record("a number"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(not_a_record("a string"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(not_a_record("null"))
    }
}

/// Hands each element of a sequence to the sink as one bounded record.
fn records<'de, A: SeqAccess<'de>>(
    ctx: &Ctx<'_, '_>,
    mut seq: A,
    origin: Origin,
) -> Result<(), A::Error> {
    while let Some((value, at)) = seq.next_element_seed(Bounded(ctx))? {
        ctx.emit(origin, value, at)?;
    }
    Ok(())
}

/// One record: its value, read within the bound, and where it starts.
struct Bounded<'a, 'c, 's>(&'a Ctx<'c, 's>);

impl<'de> DeserializeSeed<'de> for Bounded<'_, '_, '_> {
    type Value = (Value, Location);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(Value, Location), D::Error> {
        let at = self.0.counter.here();
        self.0.counter.open_record();
        let v = crate::json::StrictValue.deserialize(d);
        self.0.counter.close_record();
        Ok((v?, at))
    }
}

/// `data`: its elements are records when it is an array; any other value is returned whole
/// (it belongs to the object holding it, which is then a record).
struct Records<'a, 'c, 's>(&'a Ctx<'c, 's>, Origin);

impl<'de> DeserializeSeed<'de> for Records<'_, '_, '_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Records<'_, '_, '_> {
    type Value = Option<Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Value>, A::Error> {
        records(self.0, seq, self.1).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Value>, A::Error> {
        self.0.counter.open_record();
        let v = crate::json::StrictValue.deserialize(de::value::MapAccessDeserializer::new(map));
        Ok(Some(v?))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Option<Value>, E> {
        Ok(Some(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Option<Value>, E> {
        Ok(Some(
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<Option<Value>, E> {
        Ok(Some(Value::String(v.to_owned())))
    }
    fn visit_unit<E>(self) -> Result<Option<Value>, E> {
        Ok(Some(Value::Null))
    }
}

/// The levels of an OTLP request.
#[derive(Clone, Copy)]
enum Level {
    /// `resourceSpans`: an array of resources.
    Resource,
    /// `scopeSpans`: an array of scopes.
    Scope,
}

/// An array at one OTLP level: each element's spans reach the sink; other keys are skipped.
struct Each<'a, 'c, 's>(&'a Ctx<'c, 's>, Level);

impl<'de> DeserializeSeed<'de> for Each<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Each<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of OTLP objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Group(self.0, self.1))?.is_some() {}
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// One resource (or scope) of an OTLP request.
struct Group<'a, 'c, 's>(&'a Ctx<'c, 's>, Level);

impl<'de> DeserializeSeed<'de> for Group<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Group<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an OTLP object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match (self.1, key.as_str()) {
                (Level::Resource, "scopeSpans" | "scope_spans" | "instrumentationLibrarySpans") => {
                    map.next_value_seed(Each(self.0, Level::Scope))?
                }
                (Level::Scope, "spans") => map.next_value_seed(Spans(self.0))?,
                _ => {
                    // `resource`, `scope`, `schemaUrl`: skipped without being held, within
                    // the bound of one record.
                    self.0.counter.open_record();
                    map.next_value::<IgnoredAny>()?;
                    self.0.counter.close_record();
                }
            }
        }
        Ok(())
    }
}

struct Spans<'a, 'c, 's>(&'a Ctx<'c, 's>);

impl<'de> DeserializeSeed<'de> for Spans<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Spans<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of OTLP spans")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        records(self.0, seq, Origin::OtlpSpan)
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &str) -> Result<Vec<(Origin, Value, Location)>, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(&p, text).unwrap();
        let mut out = Vec::new();
        for_each_record(&p, |o, v, at| {
            out.push((o, v, at));
            Ok(())
        })
        .map_err(|e| e.to_string().replace(&p.display().to_string(), "t.json"))?;
        Ok(out)
    }

    #[test]
    fn records_come_from_lines_arrays_pages_and_otlp_requests() {
        let text = "\u{feff}{\"a\":1}\n[{\"b\":2},{\"c\":3}]\n{\"meta\":{\"page\":1},\"data\":[{\"d\":4}]}\n{\"data\":{\"x\":1},\"id\":\"r\"}\n{\"resourceSpans\":[{\"resource\":{\"attributes\":[]},\"scopeSpans\":[{\"scope\":{\"name\":\"s\"},\"spans\":[{\"spanId\":\"01\"},\n  {\"spanId\":\"02\"}]}]}]}\n";
        let r = collect(text).unwrap();
        let keys: Vec<String> = r
            .iter()
            .map(|(_, v, _)| {
                v.as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("+")
            })
            .collect();
        assert_eq!(keys, ["a", "b", "c", "d", "data+id", "spanId", "spanId"]);
        assert_eq!(r[5].0, Origin::OtlpSpan);
        assert_eq!(r[0].2, Location { line: 1, column: 1 });
        assert_eq!(
            r[2].2,
            Location {
                line: 2,
                column: 10
            }
        );
        assert_eq!(r[6].2, Location { line: 6, column: 3 });
        assert!(collect("  \n").unwrap().is_empty());
    }

    #[test]
    fn bad_json_names_its_line_and_a_long_record_is_refused_before_it_is_read() {
        let e = collect("{\"a\":1}\n{\"b\":}\n").unwrap_err();
        assert!(e.starts_with("t.json:2: field `-`: malformed JSON"), "{e}");
        let e = collect("{\"a\":1}\n{\"b\":[1,2").unwrap_err();
        assert!(
            e.starts_with("t.json:2: field `-`: the file ends inside"),
            "{e}"
        );
        let e = collect("{\"a\":1,\"a\":2}").unwrap_err();
        assert!(e.contains("duplicate key `a`"), "{e}");
        let e = collect("3").unwrap_err();
        assert!(e.contains("found a number"), "{e}");
        let big = format!(
            "{{\"ok\":1}}\n[{{\"x\":\"{}\"}}]",
            "y".repeat(MAX_RECORD_BYTES as usize)
        );
        let e = collect(&big).unwrap_err();
        assert!(
            e.starts_with(
                "t.json:2: field `-`: the record starting at column 2 is longer than 8 MiB"
            ),
            "{e}"
        );
        // Many records, each under the bound, make a file of any size.
        let line = format!("{{\"x\":\"{}\"}}\n", "y".repeat(1 << 20));
        assert_eq!(collect(&line.repeat(10)).unwrap().len(), 10);
    }
}
