//! `veredicto chunk`: documents cut into a corpus, so that a chunking is an experiment
//! veredicto runs itself. The splitting is the `text-splitter` crate's; this module only
//! places each chunk in its document and writes the corpus.
//!
//! Each chunk is written as one JSONL line: `id` (`{doc_id}:{start}-{end}`, so the same
//! documents and settings always give the same IDs), `doc_id`, `start`, `end` (Unicode
//! scalar values of the document's text, end exclusive), `text` (exactly those characters),
//! then every other field of the document as given (a field named like one of these is
//! left out). Chunks come in document order, then by start.
//!
//! - `--split text` (default): text-splitter's semantic levels (paragraphs, line breaks,
//!   sentences, words, characters), the largest that fits in `size`, with `overlap`;
//! - `--split markdown`: the same over Markdown structure (headings, blocks, table rows);
//! - `--split sentences`: one chunk per sentence (Unicode sentence boundaries); a sentence
//!   longer than `size` is cut as `text` would cut it.
//!
//! Sizes count characters (`--unit chars`) or the tokens of a tokenizer (`--unit tokens`,
//! a model folder's `tokenizer.json`). Chunks keep their white space (nothing is trimmed),
//! so that without overlap consecutive chunks tile the document: evidence that runs across
//! a sentence boundary is covered by the two sentences' chunks, the space between them too.

use std::path::Path;

use serde_json::{Map, Value};
use text_splitter::{ChunkConfig, ChunkSizer, MarkdownSplitter, TextSplitter};
use veredicto_formats::documents::Documents;

use crate::{Error, Events, Result};

/// How sizes are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Unicode scalar values.
    Chars,
    /// Tokens of the tokenizer given.
    Tokens,
}

impl Unit {
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Chars => "chars",
            Unit::Tokens => "tokens",
        }
    }
}

/// Where chunks are cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// Plain text: the largest semantic level that fits.
    #[default]
    Text,
    /// Markdown structure.
    Markdown,
    /// One sentence per chunk.
    Sentences,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Text => "text",
            Split::Markdown => "markdown",
            Split::Sentences => "sentences",
        }
    }
}

/// A chunking's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunking {
    pub size: usize,
    pub overlap: usize,
    pub unit: Unit,
    pub split: Split,
}

/// What `chunk` reads.
pub struct ChunkRequest<'a> {
    pub documents: &'a Documents,
    pub chunking: Chunking,
    /// The tokenizer for [`Unit::Tokens`] (a `tokenizer.json` file).
    pub tokenizer: Option<&'a Path>,
    pub events: Events<'a>,
}

/// A corpus made from documents.
#[derive(Debug, Clone)]
pub struct ChunkOutcome {
    /// The corpus, JSONL.
    pub text: String,
    pub documents: usize,
    pub chunks: usize,
    /// Documents that gave no chunk (empty or white space only).
    pub empty_documents: usize,
}

/// One chunk: characters `start..end` of its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
}

/// A tokenizer's token count as a chunk size (special tokens left out).
struct Tokens<'a>(&'a tokenizers::Tokenizer);

impl ChunkSizer for Tokens<'_> {
    fn size(&self, chunk: &str) -> usize {
        self.0
            .encode(chunk, false)
            .map(|e| e.len())
            .unwrap_or_else(|_| chunk.chars().count())
    }
}

/// Cuts the documents (see the module documentation).
pub fn chunk(req: &ChunkRequest<'_>) -> Result<ChunkOutcome> {
    let c = req.chunking;
    if c.size == 0 {
        return Err(Error::msg("--size: a chunk holds at least 1 unit"));
    }
    if c.overlap >= c.size {
        return Err(Error::msg(format!(
            "--overlap {} must be less than --size {}",
            c.overlap, c.size
        )));
    }
    match (c.unit, req.tokenizer) {
        (Unit::Chars, _) => {
            let cut = |t: &str| pieces(t, c, text_splitter::Characters);
            write(req, &cut)
        }
        (Unit::Tokens, None) => Err(Error::msg(
            "--unit tokens counts a model's tokens: give --tokenizer MODEL_DIR (the folder holding tokenizer.json)",
        )),
        (Unit::Tokens, Some(path)) => {
            let file = if path.is_dir() {
                path.join("tokenizer.json")
            } else {
                path.to_path_buf()
            };
            let tokenizer = tokenizers::Tokenizer::from_file(&file).map_err(|e| {
                Error::msg(format!("{}: not a tokenizer: {e}", file.display()))
            })?;
            let cut = |t: &str| pieces(t, c, Tokens(&tokenizer));
            write(req, &cut)
        }
    }
}

fn write(req: &ChunkRequest<'_>, cut: &dyn Fn(&str) -> Result<Vec<Piece>>) -> Result<ChunkOutcome> {
    let mut text = String::new();
    let (mut chunks, mut empty) = (0, 0);
    let total = req.documents.len() as u64;
    for (n, doc) in req.documents.iter().enumerate() {
        req.events.check()?;
        let body = doc.text.as_str();
        let pieces = cut(body)?;
        if pieces.is_empty() {
            empty += 1;
        }
        for p in pieces {
            let mut line = Map::new();
            line.insert(
                "id".into(),
                Value::from(format!("{}:{}-{}", doc.id, p.start, p.end)),
            );
            line.insert("doc_id".into(), Value::from(doc.id.clone()));
            line.insert("start".into(), Value::from(p.start));
            line.insert("end".into(), Value::from(p.end));
            let slice = doc.text.slice(p.start, p.end).unwrap_or("");
            line.insert("text".into(), Value::from(slice));
            for (k, v) in &doc.fields {
                if !line.contains_key(k) {
                    line.insert(k.clone(), v.clone());
                }
            }
            text.push_str(&serde_json::to_string(&Value::Object(line))?);
            text.push('\n');
            chunks += 1;
        }
        req.events.progress(
            "documents chunked",
            n as u64 + 1,
            total,
            n as u64 + 1 == total,
        );
    }
    Ok(ChunkOutcome {
        text,
        documents: req.documents.len(),
        chunks,
        empty_documents: empty,
    })
}

/// The chunks of one text under `c`, as character spans in text order.
pub fn pieces<S: ChunkSizer>(text: &str, c: Chunking, sizer: S) -> Result<Vec<Piece>> {
    let config = ChunkConfig::new(c.size)
        .with_trim(false)
        .with_sizer(sizer)
        .with_overlap(c.overlap)
        .map_err(|e| Error::msg(format!("--overlap: {e}")))?;
    // (start, end, white space only)
    let mut raw: Vec<(usize, usize, bool)> = Vec::new();
    let mut push = |char_offset: usize, chunk: &str| {
        let len = chunk.chars().count();
        if len > 0 {
            raw.push((char_offset, char_offset + len, chunk.trim().is_empty()));
        }
    };
    match c.split {
        Split::Text => {
            for ch in TextSplitter::new(config).chunk_char_indices(text) {
                push(ch.char_offset, ch.chunk);
            }
        }
        Split::Markdown => {
            for ch in MarkdownSplitter::new(config).chunk_char_indices(text) {
                push(ch.char_offset, ch.chunk);
            }
        }
        Split::Sentences => {
            use unicode_segmentation::UnicodeSegmentation;
            let splitter = TextSplitter::new(config);
            let mut chars_before = 0usize;
            let mut last_byte = 0usize;
            for (byte, sentence) in text.split_sentence_bound_indices() {
                chars_before += text[last_byte..byte].chars().count();
                last_byte = byte;
                for ch in splitter.chunk_char_indices(sentence) {
                    push(chars_before + ch.char_offset, ch.chunk);
                }
            }
        }
    }
    raw.sort_unstable();
    raw.dedup();
    // A piece of white space only joins the piece it follows (so that the pieces still
    // tile the text), or is dropped.
    let mut out: Vec<Piece> = Vec::with_capacity(raw.len());
    for (start, end, blank) in raw {
        match out.last_mut() {
            Some(last) if blank && last.end == start => last.end = end,
            _ if blank => {}
            _ => out.push(Piece { start, end }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(size: usize, overlap: usize, split: Split) -> Chunking {
        Chunking {
            size,
            overlap,
            unit: Unit::Chars,
            split,
        }
    }

    #[test]
    fn pieces_point_at_their_text_in_characters() {
        let text = "Añejo vino. Él dijo: sí.\n\nOtra frase más larga que las demás, con comas.";
        for split in [Split::Text, Split::Markdown, Split::Sentences] {
            let ps = pieces(text, chars(20, 5, split), text_splitter::Characters).unwrap();
            assert!(!ps.is_empty());
            for p in &ps {
                let s: String = text.chars().skip(p.start).take(p.end - p.start).collect();
                assert!(s.chars().count() <= 20, "{split:?} {s:?}");
            }
        }
        let ps = pieces(
            text,
            chars(200, 0, Split::Sentences),
            text_splitter::Characters,
        )
        .unwrap();
        let got: Vec<String> = ps
            .iter()
            .map(|p| text.chars().skip(p.start).take(p.end - p.start).collect())
            .collect();
        assert_eq!(
            got,
            [
                "Añejo vino. ",
                "Él dijo: sí.\n\n",
                "Otra frase más larga que las demás, con comas."
            ]
        );
    }
}
