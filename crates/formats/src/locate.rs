//! Chunks located in their documents (`--documents`).
//!
//! - A chunk that gives `start` / `end` is checked: its document must be in the documents
//!   file, the offsets inside its text (converted to characters first when `offset_unit` is
//!   `bytes` or `utf16`), and its `text` must read as those characters under the
//!   normalisation ([`veredicto_core::evidence::text`]). Each failure is an error naming the
//!   corpus file, line and field.
//! - A chunk that gives no offsets but a `doc_id` and a `text` is located by its text: when
//!   the text occurs exactly once in the document it gets that span; otherwise it stays
//!   unlocated and is listed with the reason (not found, found several times, no such
//!   document, no text). A chunk without `doc_id` is not looked for.

use crate::corpus::CorpusLine;
use crate::documents::Documents;
use crate::error::{FormatError, Result};
use serde::Serialize;
use std::path::Path;
use veredicto_core::evidence::text::same_text;
use veredicto_core::evidence::OffsetUnit;

/// Why a chunk could not be located by its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unlocated {
    /// Its `doc_id` is not in the documents file.
    NoSuchDocument,
    /// It has no `text`.
    NoText,
    /// Its text is not in its document.
    NotFound,
    /// Its text occurs several times in its document.
    Ambiguous,
}

impl Unlocated {
    pub fn as_str(self) -> &'static str {
        match self {
            Unlocated::NoSuchDocument => "no_such_document",
            Unlocated::NoText => "no_text",
            Unlocated::NotFound => "not_found",
            Unlocated::Ambiguous => "ambiguous",
        }
    }
}

/// A chunk left unlocated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnlocatedChunk {
    pub id: String,
    pub line: usize,
    pub reason: Unlocated,
    /// Times its text occurs in its document (for `ambiguous`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occurrences: Option<usize>,
}

/// What locating a corpus found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Located {
    /// Chunks whose offsets were checked against their document.
    pub by_offsets: usize,
    /// Chunks located by their text.
    pub by_text: usize,
    /// Chunks with no `doc_id` (not looked for).
    pub without_document: usize,
    /// Chunks with a `doc_id` that could not be located, in file order.
    pub unlocated: Vec<UnlocatedChunk>,
}

fn excerpt(s: &str) -> String {
    let t: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        format!("{t}…")
    } else {
        t
    }
}

/// Checks and completes the chunks' locations in `lines` (read from `path`) against
/// `documents`; see the module documentation.
pub fn locate_chunks(
    path: &Path,
    lines: &mut [CorpusLine],
    documents: &Documents,
) -> Result<Located> {
    let mut out = Located::default();
    for l in lines.iter_mut() {
        let err = |field: &str, message: String| FormatError::invalid(path, l.line, field, message);
        let Some(doc_id) = l.chunk.doc_id.clone() else {
            out.without_document += 1;
            continue;
        };
        let doc = documents.get(&doc_id);
        let offsets = match (l.chunk.start, l.chunk.end, l.offsets_in) {
            (Some(s), Some(e), _) => Some((s, e, OffsetUnit::Chars)),
            (_, _, Some(given)) => Some(given),
            _ => None,
        };
        if let Some((s, e, unit)) = offsets {
            let Some(doc) = doc else {
                return Err(err(
                    "doc_id",
                    format!("document `{doc_id}` is not in {}", documents.path.display()),
                ));
            };
            let start = doc
                .text
                .to_chars(s, unit)
                .ok_or_else(|| err("start", crate::golden::offset_problem(s, unit, doc)))?;
            let end = doc
                .text
                .to_chars(e, unit)
                .ok_or_else(|| err("end", crate::golden::offset_problem(e, unit, doc)))?;
            if let Some(text) = l.chunk.text.as_deref() {
                let slice = doc.text.slice(start, end).unwrap_or("");
                if !same_text(slice, text) {
                    return Err(err(
                        "text",
                        format!(
                            "does not read as characters {start}..{end} of document `{doc_id}` (compared after NFC normalisation, runs of white space as one space): the document says `{}`, the chunk `{}`",
                            excerpt(slice.trim()),
                            excerpt(text.trim())
                        ),
                    ));
                }
            }
            l.chunk.start = Some(start);
            l.chunk.end = Some(end);
            l.offsets_in = None;
            out.by_offsets += 1;
            continue;
        }
        let unlocated = |reason, occurrences| UnlocatedChunk {
            id: l.chunk.id.clone(),
            line: l.line,
            reason,
            occurrences,
        };
        let Some(doc) = doc else {
            out.unlocated
                .push(unlocated(Unlocated::NoSuchDocument, None));
            continue;
        };
        let Some(text) = l.chunk.text.as_deref() else {
            out.unlocated.push(unlocated(Unlocated::NoText, None));
            continue;
        };
        match doc.locator().locate(text, None) {
            Ok((s, e)) => {
                l.chunk.start = Some(s);
                l.chunk.end = Some(e);
                out.by_text += 1;
            }
            Err(veredicto_core::evidence::text::LocateError::Ambiguous { count }) => {
                out.unlocated
                    .push(unlocated(Unlocated::Ambiguous, Some(count)));
            }
            Err(veredicto_core::evidence::text::LocateError::Empty) => {
                out.unlocated.push(unlocated(Unlocated::NoText, None));
            }
            Err(_) => out.unlocated.push(unlocated(Unlocated::NotFound, None)),
        }
    }
    Ok(out)
}

/// Refuses chunks whose offsets are in another unit than characters when no documents are
/// given to convert them (the first one is the error).
pub fn require_char_offsets(path: &Path, lines: &[CorpusLine]) -> Result<()> {
    match lines.iter().find_map(|l| l.offsets_in.map(|o| (l.line, o.2))) {
        Some((line, unit)) => Err(FormatError::invalid(
            path,
            line,
            "offset_unit",
            format!(
                "offsets in {} are converted to characters with the document's text: give the documents file (--documents)",
                unit.as_str()
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::{Document, Documents};

    fn docs() -> Documents {
        Documents::new(
            Path::new("docs.jsonl"),
            vec![Document::new(
                "D".into(),
                "Uno. Dos dos. Tres\n\ncuatro. Dos dos.".into(),
                1,
                Default::default(),
            )],
        )
    }

    fn lines(corpus: &str) -> (tempfile::TempDir, std::path::PathBuf, Vec<CorpusLine>) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("corpus.jsonl");
        std::fs::write(&p, corpus).unwrap();
        let l = crate::corpus::read_corpus_lines(&p).unwrap();
        (dir, p, l)
    }

    #[test]
    fn offsets_are_checked_and_texts_located_once_or_listed() {
        let (_d, p, mut l) = lines(concat!(
            "{\"id\":\"a\",\"doc_id\":\"D\",\"start\":0,\"end\":4,\"text\":\"Uno.\"}\n",
            "{\"id\":\"b\",\"doc_id\":\"D\",\"text\":\"Tres cuatro.\"}\n",
            "{\"id\":\"c\",\"doc_id\":\"D\",\"text\":\"Dos dos.\"}\n",
            "{\"id\":\"d\",\"doc_id\":\"X\",\"text\":\"Uno.\"}\n",
            "{\"id\":\"e\",\"text\":\"Uno.\"}\n",
            "{\"id\":\"f\",\"doc_id\":\"D\",\"text\":\"Cinco.\"}\n",
        ));
        let got = locate_chunks(&p, &mut l, &docs()).unwrap();
        assert_eq!(
            (got.by_offsets, got.by_text, got.without_document),
            (1, 1, 1)
        );
        assert_eq!((l[1].chunk.start, l[1].chunk.end), (Some(14), Some(27)));
        let reasons: Vec<_> = got
            .unlocated
            .iter()
            .map(|u| (u.id.as_str(), u.reason, u.occurrences))
            .collect();
        assert_eq!(
            reasons,
            [
                ("c", Unlocated::Ambiguous, Some(2)),
                ("d", Unlocated::NoSuchDocument, None),
                ("f", Unlocated::NotFound, None),
            ]
        );
    }

    #[test]
    fn offsets_that_disagree_with_the_text_or_the_document_name_the_line_and_field() {
        let cases = [
            (
                "{\"id\":\"a\",\"doc_id\":\"D\",\"start\":0,\"end\":3,\"text\":\"Uno.\"}\n",
                "corpus.jsonl:1: field `text`: does not read as characters 0..3 of document `D`",
            ),
            (
                "{\"id\":\"a\",\"doc_id\":\"D\",\"start\":0,\"end\":99,\"text\":\"Uno.\"}\n",
                "corpus.jsonl:1: field `end`: 99 is beyond the end of document `D` (36 characters)",
            ),
            (
                "{\"id\":\"a\",\"doc_id\":\"Q\",\"start\":0,\"end\":4}\n",
                "corpus.jsonl:1: field `doc_id`: document `Q` is not in docs.jsonl",
            ),
        ];
        for (corpus, want) in cases {
            let (_d, p, mut l) = lines(corpus);
            let e = locate_chunks(&p, &mut l, &docs()).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn byte_offsets_are_converted_with_the_document() {
        let d = Documents::new(
            Path::new("docs.jsonl"),
            vec![Document::new(
                "D".into(),
                "añb ñc".into(),
                1,
                Default::default(),
            )],
        );
        let (_d, p, mut l) = lines(
            "{\"id\":\"a\",\"doc_id\":\"D\",\"start\":5,\"end\":8,\"offset_unit\":\"bytes\",\"text\":\"ñc\"}\n",
        );
        assert!(require_char_offsets(&p, &l).is_err());
        locate_chunks(&p, &mut l, &d).unwrap();
        assert_eq!((l[0].chunk.start, l[0].chunk.end), (Some(4), Some(6)));
    }
}
