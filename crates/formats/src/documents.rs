//! Documents files (`--documents`): the texts evidence spans and chunk offsets point into.
//!
//! JSONL, one document per line: `id` (or BEIR's `_id`; a string or an integer) and `text`
//! (a string, may be empty). Every other field is kept as given (the chunker copies them onto
//! each chunk). IDs are unique. Offsets into `text` count Unicode scalar values.

use crate::error::{FormatError, Result};
use crate::jsonl::{self, SeenIds};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use veredicto_core::evidence::text::{DocText, Locator};

/// One document.
#[derive(Debug)]
pub struct Document {
    pub id: String,
    pub text: DocText,
    /// The 1-based line it was read from.
    pub line: usize,
    /// Every field but the ID and the text, as given.
    pub fields: Map<String, Value>,
    locator: OnceLock<Locator>,
}

impl Document {
    pub fn new(id: String, text: String, line: usize, fields: Map<String, Value>) -> Document {
        Document {
            id,
            text: DocText::new(text),
            line,
            fields,
            locator: OnceLock::new(),
        }
    }

    /// The normalised text for locating quotes and chunk texts, built the first time.
    pub fn locator(&self) -> &Locator {
        self.locator
            .get_or_init(|| Locator::new(self.text.as_str()))
    }
}

/// A documents file, in file order, with lookup by ID.
#[derive(Debug)]
pub struct Documents {
    pub path: PathBuf,
    docs: Vec<Document>,
    by_id: HashMap<String, usize>,
}

impl Documents {
    /// Documents given directly (`path` names them in messages).
    pub fn new(path: &Path, docs: Vec<Document>) -> Documents {
        let by_id = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.id.clone(), i))
            .collect();
        Documents {
            path: path.to_path_buf(),
            docs,
            by_id,
        }
    }

    pub fn get(&self, id: &str) -> Option<&Document> {
        self.by_id.get(id).map(|&i| &self.docs[i])
    }

    /// In file order.
    pub fn iter(&self) -> impl Iterator<Item = &Document> {
        self.docs.iter()
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

/// Reads a documents file.
pub fn read_documents(path: &Path) -> Result<Documents> {
    let mut seen = SeenIds::default();
    let mut docs = Vec::new();
    for mut line in jsonl::read_objects(path)? {
        let id_field = if line.object.contains_key("id") || !line.object.contains_key("_id") {
            "id"
        } else {
            "_id"
        };
        let id = line.req_id(id_field)?;
        seen.check(&line, id_field, &id, "document")?;
        let text = match line.object.get("text") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => return Err(line.error("text", "missing")),
            Some(other) => {
                return Err(line.error(
                    "text",
                    format!("expected a string, found {}", jsonl::kind(other)),
                ))
            }
        };
        line.object.remove(id_field);
        line.object.remove("text");
        docs.push(Document::new(id, text, line.line, line.object));
    }
    if docs.is_empty() {
        return Err(FormatError::invalid(
            path,
            0,
            "-",
            "the documents file has no documents",
        ));
    }
    Ok(Documents::new(path, docs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_text_and_other_fields_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"A\",\"text\":\"uno dos\",\"domain\":\"laboral\"}\n\n{\"_id\":7,\"text\":\"\",\"title\":\"t\"}\n",
        )
        .unwrap();
        let d = read_documents(&p).unwrap();
        assert_eq!(d.len(), 2);
        let a = d.get("A").unwrap();
        assert_eq!(a.text.as_str(), "uno dos");
        assert_eq!(a.fields["domain"], "laboral");
        assert!(!a.fields.contains_key("id"));
        assert_eq!(d.get("7").unwrap().line, 3);
    }

    #[test]
    fn a_repeated_id_or_a_missing_text_names_the_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"A\",\"text\":\"x\"}\n{\"id\":\"A\",\"text\":\"y\"}\n",
        )
        .unwrap();
        let e = read_documents(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("d.jsonl:2: field `id`: duplicate document ID `A` (first on line 1)"),
            "{e}"
        );
        std::fs::write(&p, "{\"id\":\"A\",\"text\":3}\n").unwrap();
        let e = read_documents(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("d.jsonl:1: field `text`: expected a string, found a number"),
            "{e}"
        );
    }
}
