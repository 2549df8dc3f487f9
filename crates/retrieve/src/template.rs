//! The request body of an HTTP retriever written by the user (`--body-template FILE`): JSON
//! with placeholders, so that a search service with its own request format (Elasticsearch
//! or OpenSearch `_search`, Vespa, Solr, Azure AI Search) is examined without a wrapper.
//!
//! | placeholder | becomes |
//! |---|---|
//! | `{{query}}` | the query, as a JSON string |
//! | `{{k}}` | the number of results asked (the exam's depth) |
//! | `{{query_vector}}` | the query vector, as a JSON array of numbers |
//! | `{{filters}}` | the case's `filters` object as declared (`{}` when it has none) |
//! | `{{filter_terms}}` | the filters as Elasticsearch/OpenSearch `term` queries: `[{"term": {"domain": "laboral"}}, …]` (`[]` when none) |
//!
//! Outside a JSON string a placeholder is replaced by the JSON value. Inside a string
//! (`"q": "title:{{query}}"`) `{{query}}` and `{{k}}` are replaced by their characters,
//! JSON-escaped, so the string stays one valid string whatever the query holds; the vector
//! and the filters cannot be put inside a string. The template is checked when the
//! retriever is opened: an unknown placeholder, or a template that is not JSON once filled,
//! is an error naming the file and the line.

use serde_json::{json, Value};
use veredicto_core::redact;

use crate::Request;

/// A value a placeholder stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Query,
    K,
    QueryVector,
    Filters,
    FilterTerms,
}

const NAMES: [(&str, Slot); 5] = [
    ("query", Slot::Query),
    ("k", Slot::K),
    ("query_vector", Slot::QueryVector),
    ("filters", Slot::Filters),
    ("filter_terms", Slot::FilterTerms),
];

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    /// A placeholder; `in_string` when it stands inside a JSON string literal.
    Slot {
        slot: Slot,
        in_string: bool,
    },
}

/// A parsed `--body-template`.
#[derive(Debug, Clone)]
pub struct BodyTemplate {
    parts: Vec<Part>,
}

/// The values a template is filled with.
struct Fill<'a> {
    query: &'a str,
    k: usize,
    vector: Option<&'a [f32]>,
    filters: Option<&'a serde_json::Map<String, Value>>,
}

impl BodyTemplate {
    /// Parses a template's text; `source` (the file) names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<BodyTemplate, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut parts = Vec::new();
        let mut literal = String::new();
        let (mut in_string, mut escaped) = (false, false);
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if rest.starts_with("{{") {
                let line = text[..text.len() - rest.len()].matches('\n').count() + 1;
                let end = rest
                    .find("}}")
                    .ok_or_else(|| format!("{source}:{line}: `{{{{` without its closing `}}}}`"))?;
                let name = rest[2..end].trim();
                let slot = NAMES
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, s)| *s)
                    .ok_or_else(|| {
                        format!(
                            "{source}:{line}: unknown placeholder `{{{{{}}}}}`; the placeholders are {{{{query}}}}, {{{{k}}}}, {{{{query_vector}}}}, {{{{filters}}}} and {{{{filter_terms}}}}",
                            redact::short(name)
                        )
                    })?;
                if in_string && !matches!(slot, Slot::Query | Slot::K) {
                    return Err(format!(
                        "{source}:{line}: `{{{{{name}}}}}` is inside a JSON string; it stands for a JSON value: write it without quotes"
                    ));
                }
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Slot { slot, in_string });
                rest = &rest[end + 2..];
                escaped = false;
                continue;
            }
            if in_string {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
            } else if c == '"' {
                in_string = true;
            }
            literal.push(c);
            rest = &rest[c.len_utf8()..];
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        let template = BodyTemplate { parts };
        // Filled with sample values, it must be JSON (the real values cannot break it: they
        // are JSON values, or escaped characters inside a string).
        let sample = template.fill(&Fill {
            query: "q \"x\"",
            k: 10,
            vector: Some(&[0.5]),
            filters: None,
        })?;
        serde_json::from_str::<Value>(&sample).map_err(|e| {
            format!(
                "{source}: not JSON once its placeholders are filled (near line {}: {})",
                e.line(),
                redact::message(&e.to_string())
            )
        })?;
        Ok(template)
    }

    /// Whether the template sends the query vector (then the retriever needs one per case).
    pub fn uses_vector(&self) -> bool {
        self.parts.iter().any(|p| {
            matches!(
                p,
                Part::Slot {
                    slot: Slot::QueryVector,
                    ..
                }
            )
        })
    }

    /// The body for one request, or why this case cannot be sent.
    pub(crate) fn render(&self, request: &Request<'_>) -> Result<Vec<u8>, String> {
        if self.uses_vector() && request.vector.is_none() {
            return Err("the body template sends `{{query_vector}}` and this case has no query vector (give --model or --embedder, or a `query_vector` in the case)".to_owned());
        }
        self.fill(&Fill {
            query: request.query,
            k: request.depth,
            vector: request.vector,
            filters: request.filters,
        })
        .map(String::into_bytes)
    }

    fn fill(&self, values: &Fill<'_>) -> Result<String, String> {
        let mut out = String::new();
        for part in &self.parts {
            let (slot, in_string) = match part {
                Part::Text(t) => {
                    out.push_str(t);
                    continue;
                }
                Part::Slot { slot, in_string } => (*slot, *in_string),
            };
            let value = match slot {
                Slot::Query => json!(values.query),
                Slot::K => json!(values.k),
                Slot::QueryVector => json!(values.vector.unwrap_or(&[])),
                Slot::Filters => Value::Object(values.filters.cloned().unwrap_or_default()),
                Slot::FilterTerms => {
                    let equalities = match values.filters {
                        Some(f) => crate::filter_equalities(f)?,
                        None => Vec::new(),
                    };
                    Value::Array(
                        equalities
                            .into_iter()
                            .map(|(k, v)| json!({"term": {k: v}}))
                            .collect(),
                    )
                }
            };
            let text = value.to_string();
            match (in_string, &value) {
                // Inside a string: the characters of the JSON string, without its quotes.
                (true, Value::String(_)) => out.push_str(&text[1..text.len() - 1]),
                _ => out.push_str(&text),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(query: &'a str, vector: Option<&'a [f32]>) -> Request<'a> {
        Request {
            case_id: "c1",
            query,
            vector,
            depth: 7,
            expected: &[],
            exact: false,
            filters: None,
        }
    }

    fn render(template: &str, query: &str) -> Value {
        let t = BodyTemplate::parse(template, "t.json").unwrap();
        let body = t.render(&request(query, Some(&[0.25, -1.0]))).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    #[test]
    fn placeholders_become_json_values_escaped_whatever_the_query_holds() {
        let hostile = "a\"}, \"size\": 10000, \"x\": {\"\\\n\u{1}é";
        let body = render(
            r#"{"size": {{k}}, "query": {"match": {"text": {{ query }}}}, "v": {{query_vector}}, "f": {{filters}}, "t": {{filter_terms}}}"#,
            hostile,
        );
        assert_eq!(body["query"]["match"]["text"], hostile);
        assert_eq!(body["size"], 7);
        assert_eq!(body["v"], json!([0.25, -1.0]));
        assert_eq!(body["f"], json!({}));
        assert_eq!(body["t"], json!([]));
        assert_eq!(body.as_object().unwrap().len(), 5, "{body}");
    }

    #[test]
    fn inside_a_string_the_query_is_its_escaped_characters() {
        let hostile = "x\" OR \"1\"=\"1 \\";
        let body = render(r#"{"q": "title:({{query}}) k={{k}}"}"#, hostile);
        assert_eq!(body["q"], format!("title:({hostile}) k=7"));
        // A quote escaped inside a string does not end it.
        let body = render(r#"{"a": "say \"{{query}}\"", "b": {{query}}}"#, "hi");
        assert_eq!(body["a"], "say \"hi\"");
        assert_eq!(body["b"], "hi");
    }

    #[test]
    fn filters_are_sent_as_declared_and_as_term_queries() {
        let t = BodyTemplate::parse(r#"{"f": {{filters}}, "t": {{filter_terms}}}"#, "t").unwrap();
        let filters: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"domain": "laboral", "labels": ["A", "B"]}"#).unwrap();
        let mut r = request("q", None);
        r.filters = Some(&filters);
        let body: Value = serde_json::from_slice(&t.render(&r).unwrap()).unwrap();
        assert_eq!(body["f"], Value::Object(filters.clone()));
        assert_eq!(
            body["t"],
            json!([{"term": {"domain": "laboral"}}, {"term": {"labels": "A"}}, {"term": {"labels": "B"}}])
        );
        let dated: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"valid_at": "2025-01-01"}"#).unwrap();
        r.filters = Some(&dated);
        assert!(t.render(&r).unwrap_err().contains("valid_at"));
    }

    #[test]
    fn a_bad_template_is_an_error_naming_the_file_and_line() {
        for (text, want) in [
            (
                "{\n\"q\": {{qeury}}}",
                "t.json:2: unknown placeholder `{{qeury}}`",
            ),
            (
                "{\"q\": {{query}",
                "t.json:1: `{{` without its closing `}}`",
            ),
            (
                "{\"v\": \"{{query_vector}}\"}",
                "t.json:1: `{{query_vector}}` is inside a JSON string",
            ),
            (
                "{\"q\": {{query}},}",
                "t.json: not JSON once its placeholders are filled (near line 1",
            ),
        ] {
            let e = BodyTemplate::parse(text, "t.json").unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn a_template_with_the_vector_needs_one() {
        let t = BodyTemplate::parse(r#"{"v": {{query_vector}}}"#, "t").unwrap();
        assert!(t.uses_vector());
        assert!(t
            .render(&request("q", None))
            .unwrap_err()
            .contains("no query vector"));
        let t = BodyTemplate::parse(r#"{"q": {{query}}}"#, "t").unwrap();
        assert!(!t.uses_vector());
    }
}
