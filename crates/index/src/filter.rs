//! Metadata filters (SPEC §1, §4 "labelling"): domain, label, facet equality, validity at a
//! date, and their conjunction.

use crate::chunk::{date_prefix, ChunkMeta};
use crate::error::{IndexError, Result};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// A condition on a chunk's metadata. A search with a filter ranks only the chunks it
/// matches; the others are neither returned nor counted in ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// `domain=V`: the chunk's domain is exactly `V`.
    Domain(String),
    /// `label=V`: the chunk carries label `V` (exact, case-sensitive).
    Label(String),
    /// `facet.K=V` (or `K=V` for any other key): facet `K` equals `V`. A string facet is
    /// compared as is, a number or boolean by its JSON text, an array matches when one of its
    /// elements does.
    Facet {
        /// Facet name.
        key: String,
        /// Wanted value, as text.
        value: String,
    },
    /// `valid_at=YYYY-MM-DD`: the chunk's validity window contains the date, both ends
    /// inclusive, comparing the `YYYY-MM-DD` prefixes; a missing end is open.
    ValidAt(String),
    /// Every condition holds (an empty list matches everything).
    All(Vec<Filter>),
}

impl Filter {
    /// The conjunction of `filters` (flattened; one condition stays itself).
    pub fn all(filters: impl IntoIterator<Item = Filter>) -> Filter {
        let mut list = Vec::new();
        for f in filters {
            match f {
                Filter::All(inner) => list.extend(inner),
                other => list.push(other),
            }
        }
        if list.len() == 1 {
            list.pop().unwrap_or(Filter::All(Vec::new()))
        } else {
            Filter::All(list)
        }
    }

    /// Parses several `KEY=VALUE` conditions (e.g. repeated `--filter` options) into their
    /// conjunction.
    pub fn parse_all<'a>(texts: impl IntoIterator<Item = &'a str>) -> Result<Filter> {
        let parsed = texts
            .into_iter()
            .map(str::parse)
            .collect::<Result<Vec<Filter>>>()?;
        Ok(Filter::all(parsed))
    }

    /// A filter from a JSON object such as a golden case's `filters`:
    /// `{"domain": "laboral", "labels": ["A"], "valid_at": "2025-01-01", "facets": {"tipo": "tabla"}}`.
    /// `label` or `labels` takes a string or a list (all required); any other key is a facet.
    pub fn from_json(value: &Value) -> Result<Filter> {
        let text = || value.to_string();
        let bad = |message: String| IndexError::InvalidFilter {
            text: text(),
            message,
        };
        let Some(object) = value.as_object() else {
            return Err(bad("expected a JSON object".into()));
        };
        let mut list = Vec::new();
        for (key, v) in object {
            match key.as_str() {
                "domain" => list.push(Filter::Domain(
                    scalar_text(v).ok_or_else(|| bad("`domain` must be a string".into()))?,
                )),
                "label" | "labels" => match v {
                    Value::Array(items) => {
                        for item in items {
                            list.push(Filter::Label(
                                item.as_str()
                                    .map(str::to_string)
                                    .ok_or_else(|| bad(format!("`{key}` must hold strings")))?,
                            ));
                        }
                    }
                    Value::String(s) => list.push(Filter::Label(s.clone())),
                    _ => return Err(bad(format!("`{key}` must be a string or a list"))),
                },
                "valid_at" => {
                    let date = v
                        .as_str()
                        .ok_or_else(|| bad("`valid_at` must be a string".into()))?;
                    list.push(valid_at(date, &text())?);
                }
                "facets" => {
                    let facets = v
                        .as_object()
                        .ok_or_else(|| bad("`facets` must be an object".into()))?;
                    for (k, fv) in facets {
                        list.push(Filter::Facet {
                            key: k.clone(),
                            value: scalar_text(fv)
                                .ok_or_else(|| bad(format!("facet `{k}` must be a scalar")))?,
                        });
                    }
                }
                _ => list.push(Filter::Facet {
                    key: key.clone(),
                    value: scalar_text(v)
                        .ok_or_else(|| bad(format!("`{key}` must be a scalar")))?,
                }),
            }
        }
        Ok(Filter::all(list))
    }

    /// The filter as the JSON object a golden case declares (the inverse of
    /// [`Filter::from_json`]): `domain`, `labels` (a list), `valid_at` and `facets`. Used to
    /// send `--filter` conditions to a live retriever as its request's `filters`. Two
    /// different values for the same single-valued key (two domains, two dates, one facet
    /// twice) cannot be written as one object and are refused.
    pub fn to_json(&self) -> Result<serde_json::Map<String, Value>> {
        let mut out = serde_json::Map::new();
        let mut labels: Vec<Value> = Vec::new();
        let mut facets = serde_json::Map::new();
        let conflict = |what: String| IndexError::InvalidFilter {
            text: what.clone(),
            message: format!("{what} is given twice with different values"),
        };
        let list: Vec<&Filter> = match self {
            Filter::All(list) => list.iter().collect(),
            one => vec![one],
        };
        for f in list {
            match f {
                Filter::Domain(d) | Filter::ValidAt(d) => {
                    let key = if matches!(f, Filter::Domain(_)) {
                        "domain"
                    } else {
                        "valid_at"
                    };
                    match out.get(key) {
                        Some(Value::String(old)) if old != d => {
                            return Err(conflict(format!("`{key}`")))
                        }
                        _ => {
                            out.insert(key.to_string(), Value::String(d.clone()));
                        }
                    }
                }
                Filter::Label(l) => {
                    let v = Value::String(l.clone());
                    if !labels.contains(&v) {
                        labels.push(v);
                    }
                }
                Filter::Facet { key, value } => match facets.get(key) {
                    Some(Value::String(old)) if old != value => {
                        return Err(conflict(format!("facet `{key}`")))
                    }
                    _ => {
                        facets.insert(key.clone(), Value::String(value.clone()));
                    }
                },
                Filter::All(inner) => {
                    let nested = Filter::all(inner.iter().cloned()).to_json()?;
                    for (k, v) in nested {
                        out.insert(k, v);
                    }
                }
            }
        }
        if !labels.is_empty() {
            out.insert("labels".into(), Value::Array(labels));
        }
        if !facets.is_empty() {
            out.insert("facets".into(), Value::Object(facets));
        }
        Ok(out)
    }

    /// Whether a chunk with metadata `meta` passes.
    pub fn matches(&self, meta: &ChunkMeta) -> bool {
        match self {
            Filter::Domain(d) => meta.domain.as_deref() == Some(d.as_str()),
            Filter::Label(l) => meta.labels.iter().any(|x| x == l),
            Filter::Facet { key, value } => {
                meta.facets.get(key).is_some_and(|v| facet_equals(v, value))
            }
            Filter::ValidAt(date) => {
                let d = date.as_str();
                let from_ok = meta
                    .valid_from
                    .as_deref()
                    .is_none_or(|f| date_prefix(f).is_some_and(|f| f <= d));
                let to_ok = meta
                    .valid_to
                    .as_deref()
                    .is_none_or(|t| date_prefix(t).is_some_and(|t| d <= t));
                from_ok && to_ok
            }
            Filter::All(list) => list.iter().all(|f| f.matches(meta)),
        }
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        _ => None,
    }
}

fn facet_equals(v: &Value, wanted: &str) -> bool {
    match v {
        Value::String(s) => s == wanted,
        Value::Number(n) => n.to_string() == wanted,
        Value::Bool(b) => wanted == if *b { "true" } else { "false" },
        Value::Array(items) => items.iter().any(|i| facet_equals(i, wanted)),
        Value::Null | Value::Object(_) => false,
    }
}

fn valid_at(date: &str, text: &str) -> Result<Filter> {
    // A real calendar date: `2025-99-99` has the shape but no day.
    match veredicto_core::time::check_date(date) {
        Ok(_) => Ok(Filter::ValidAt(date.to_string())),
        Err(e) => Err(IndexError::InvalidFilter {
            text: veredicto_core::redact::short(text),
            message: format!("`valid_at`: {e}"),
        }),
    }
}

impl FromStr for Filter {
    type Err = IndexError;

    /// Parses one condition: `domain=V`, `label=V`, `valid_at=YYYY-MM-DD`, `facet.K=V`, or
    /// `K=V` (a facet).
    fn from_str(text: &str) -> Result<Filter> {
        let bad = |message: &str| IndexError::InvalidFilter {
            text: text.to_string(),
            message: message.to_string(),
        };
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=VALUE"))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(bad("empty key"));
        }
        Ok(match key {
            "domain" => Filter::Domain(value.to_string()),
            "label" | "labels" => Filter::Label(value.to_string()),
            "valid_at" => valid_at(value, text)?,
            _ => {
                let key = key.strip_prefix("facet.").unwrap_or(key);
                if key.is_empty() {
                    return Err(bad("empty facet name"));
                }
                Filter::Facet {
                    key: key.to_string(),
                    value: value.to_string(),
                }
            }
        })
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Filter::Domain(v) => write!(f, "domain={v}"),
            Filter::Label(v) => write!(f, "label={v}"),
            Filter::Facet { key, value } => write!(f, "facet.{key}={value}"),
            Filter::ValidAt(d) => write!(f, "valid_at={d}"),
            Filter::All(list) => {
                for (i, x) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" & ")?;
                    }
                    write!(f, "{x}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn command_line_conditions_become_a_case_filters_object_and_back() {
        let f = Filter::parse_all([
            "domain=laboral",
            "label=A",
            "label=B",
            "facet.tipo=tabla",
            "valid_at=2025-11-14",
        ])
        .unwrap();
        let json = serde_json::Value::Object(f.to_json().unwrap());
        assert_eq!(
            json,
            serde_json::json!({"domain": "laboral", "labels": ["A", "B"],
                "facets": {"tipo": "tabla"}, "valid_at": "2025-11-14"})
        );
        assert_eq!(
            Filter::from_json(&json).unwrap().to_json().unwrap(),
            f.to_json().unwrap()
        );
        let twice = Filter::parse_all(["domain=a", "domain=b"]).unwrap();
        assert!(twice.to_json().unwrap_err().to_string().contains("domain"));
    }

    use super::*;

    /// `--filter valid_at=2025-99-99` was accepted (only the shape was checked).
    #[test]
    fn valid_at_needs_a_real_calendar_date() {
        for bad in [
            "valid_at=2025-99-99",
            "valid_at=2025-02-29",
            "valid_at=2025-1-01",
        ] {
            let e = bad.parse::<Filter>().expect_err(bad).to_string();
            assert!(e.contains("calendar date"), "{bad}: {e}");
        }
        assert_eq!(
            "valid_at=2024-02-29".parse::<Filter>().unwrap(),
            Filter::ValidAt("2024-02-29".into())
        );
    }
}
