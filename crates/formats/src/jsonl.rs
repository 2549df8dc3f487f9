//! JSON Lines reading with errors that name file, line and field.

use crate::error::{FormatError, Result};
use crate::text;
use serde_json::{Map, Value};
use std::path::Path;

/// One object line of a JSONL file.
pub struct ObjectLine<'p> {
    pub path: &'p Path,
    pub line: usize,
    pub object: Map<String, Value>,
}

/// Reads every non-blank line of a JSONL file as a JSON object.
pub fn read_objects(path: &Path) -> Result<Vec<ObjectLine<'_>>> {
    let text = text::read_to_string(path)?;
    let mut out = Vec::new();
    for (line, raw) in text::lines(&text) {
        if raw.trim().is_empty() {
            continue;
        }
        let value: Value = crate::json::value_from_str(raw)
            .map_err(|e| FormatError::invalid(path, line, "-", format!("malformed JSON: {e}")))?;
        match value {
            Value::Object(object) => out.push(ObjectLine { path, line, object }),
            other => {
                return Err(FormatError::invalid(
                    path,
                    line,
                    "-",
                    format!("expected a JSON object, found {}", kind(&other)),
                ))
            }
        }
    }
    Ok(out)
}

/// A short name for a JSON value's type, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl ObjectLine<'_> {
    pub fn error(&self, field: &str, message: impl Into<String>) -> FormatError {
        FormatError::invalid(self.path, self.line, field, message)
    }

    /// A required, non-empty string field. Numbers are accepted and written in decimal
    /// (BEIR and TREC IDs are often numeric).
    pub fn req_id(&self, field: &str) -> Result<String> {
        match self.opt_id(field)? {
            Some(s) => Ok(s),
            None => Err(self.error(field, "missing")),
        }
    }

    /// An optional string-or-integer ID field; empty strings are an error.
    pub fn opt_id(&self, field: &str) -> Result<Option<String>> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Err(self.error(field, "empty")),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Ok(Some(n.to_string())),
            Some(other) => {
                Err(self.error(field, format!("expected a string, found {}", kind(other))))
            }
        }
    }

    /// An optional free-text field (may be empty; empty counts as absent).
    pub fn opt_text(&self, field: &str) -> Result<Option<String>> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => {
                Err(self.error(field, format!("expected a string, found {}", kind(other))))
            }
        }
    }

    /// An optional calendar date `YYYY-MM-DD` (checked against the calendar: `2025-02-30`
    /// and `2025-13-45` are errors naming the field); empty counts as absent.
    pub fn opt_date(&self, field: &str) -> Result<Option<String>> {
        let value = self.opt_text(field)?;
        if let Some(v) = &value {
            veredicto_core::time::check_date(v).map_err(|e| self.error(field, e.to_string()))?;
        }
        Ok(value)
    }

    /// An optional list of strings.
    pub fn str_list(&self, field: &str) -> Result<Vec<String>> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                    Value::Number(n) if n.is_u64() || n.is_i64() => Ok(n.to_string()),
                    Value::String(_) => Err(self.error(&format!("{field}[{i}]"), "empty")),
                    other => Err(self.error(
                        &format!("{field}[{i}]"),
                        format!("expected a string, found {}", kind(other)),
                    )),
                })
                .collect(),
            Some(other) => Err(self.error(
                field,
                format!("expected an array of strings, found {}", kind(other)),
            )),
        }
    }

    /// An optional vector of finite numbers (`"vector": [0.1, ...]`), non-empty.
    pub fn opt_vector(&self, field: &str) -> Result<Option<Vec<f32>>> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => {
                if items.is_empty() {
                    return Err(self.error(field, "empty vector"));
                }
                let mut v = Vec::with_capacity(items.len());
                for (i, x) in items.iter().enumerate() {
                    match x.as_f64() {
                        Some(f) if f.is_finite() && (f as f32).is_finite() => v.push(f as f32),
                        _ => {
                            return Err(self.error(
                                &format!("{field}[{i}]"),
                                format!("expected a finite number, found {x}"),
                            ))
                        }
                    }
                }
                Ok(Some(v))
            }
            Some(other) => Err(self.error(
                field,
                format!("expected an array of numbers, found {}", kind(other)),
            )),
        }
    }

    /// An optional boolean.
    pub fn opt_bool(&self, field: &str) -> Result<Option<bool>> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.error(
                field,
                format!("expected true or false, found {}", kind(other)),
            )),
        }
    }

    /// An optional positive integer (>= 1).
    pub fn opt_positive(&self, field: &str) -> Result<Option<u32>> {
        match self.object.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(v) if v >= 1 && v <= i64::from(u32::MAX) => Ok(Some(v as u32)),
                Some(v) => Err(self.error(field, format!("must be a positive integer, got {v}"))),
                None => Err(self.error(field, format!("must be a positive integer, got {n}"))),
            },
            Some(other) => Err(self.error(
                field,
                format!("expected a positive integer, found {}", kind(other)),
            )),
        }
    }
}

/// Tracks IDs already seen, to reject duplicates with the line of the first occurrence.
#[derive(Default)]
pub struct SeenIds {
    seen: std::collections::HashMap<String, usize>,
}

impl SeenIds {
    pub fn check(
        &mut self,
        line: &ObjectLine<'_>,
        field: &str,
        id: &str,
        what: &str,
    ) -> Result<()> {
        if let Some(first) = self.seen.insert(id.to_owned(), line.line) {
            return Err(line.error(
                field,
                format!("duplicate {what} ID `{id}` (first on line {first})"),
            ));
        }
        Ok(())
    }
}
