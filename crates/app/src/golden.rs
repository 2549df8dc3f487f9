//! Golden sets with their documents: reading a golden set, a corpus and a documents file
//! together (quotes located, chunk offsets checked, chunks without offsets located by their
//! text), `golden check` (where each evidence item sits in a chunking) and `golden
//! convert` (a chunk-ID golden set rewritten as evidence spans).
//!
//! Every command that reads a golden set or a corpus (`exam`, `calibrate`, `compare`,
//! `report`, `search`) reads them through [`load`] / [`load_corpus`], so that
//! `--documents` means the same everywhere:
//! - the documents file is read first; the golden set's quotes are located in it, its
//!   offsets converted to characters and checked against the texts;
//! - the corpus' chunks that give `start` / `end` are checked against their document (the
//!   text must read as those characters), and those that give a `doc_id` and a `text` but no
//!   offsets are located by their text; those that cannot be are named in a warning (they
//!   hold no evidence);
//! - without documents, offsets are taken as given (in characters) and quotes are refused.
//!
//! The first problem is the error (file, line, field), before anything is retrieved or
//! recorded.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};
use veredicto_core::case::{Case, Corpus};
use veredicto_core::evidence::check::{self, CheckReport, Placement};
use veredicto_formats::documents::{read_documents, Documents};
use veredicto_formats::locate::{locate_chunks, require_char_offsets, Located};
use veredicto_formats::FormatError;

use crate::{Error, Events, Result};

/// What an exam reads beside the retriever.
#[derive(Debug)]
pub struct Loaded {
    /// The golden cases, their evidence located.
    pub cases: Vec<Case>,
    /// The corpus, its chunks located when documents were given.
    pub corpus: Option<Corpus>,
    /// What locating the corpus found (with documents and a corpus).
    pub located: Option<Located>,
}

/// Most unlocated chunks named in the warning.
const NAMED: usize = 5;

/// Reads the documents file, when given.
pub fn documents(path: Option<&Path>) -> Result<Option<Documents>> {
    Ok(match path {
        Some(p) => Some(read_documents(p)?),
        None => None,
    })
}

/// Reads a corpus and locates its chunks in `documents` (see the module documentation);
/// chunks that could not be located are named in a warning.
pub fn load_corpus(
    path: &Path,
    documents: Option<&Documents>,
    events: Events<'_>,
) -> Result<(Corpus, Option<Located>)> {
    let mut lines = veredicto_formats::corpus::read_corpus_lines(path)?;
    let located = match documents {
        Some(docs) => {
            let located = locate_chunks(path, &mut lines, docs)?;
            if !located.unlocated.is_empty() {
                events.warn(unlocated_warning(path, &located));
            }
            Some(located)
        }
        None => {
            require_char_offsets(path, &lines)?;
            None
        }
    };
    Ok((Corpus::new(lines.into_iter().map(|l| l.chunk)), located))
}

fn unlocated_warning(path: &Path, located: &Located) -> String {
    let named: Vec<String> = located
        .unlocated
        .iter()
        .take(NAMED)
        .map(|u| match u.occurrences {
            Some(n) => format!(
                "{} (line {}: {}, {n} times)",
                u.id,
                u.line,
                u.reason.as_str()
            ),
            None => format!("{} (line {}: {})", u.id, u.line, u.reason.as_str()),
        })
        .collect();
    let more = located.unlocated.len().saturating_sub(NAMED);
    format!(
        "{}: {} chunk(s) could not be located in their documents and hold no evidence: {}{}",
        path.display(),
        located.unlocated.len(),
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// Reads the golden set, the corpus and the documents together (see the module
/// documentation).
pub fn load(
    golden: &Path,
    corpus: Option<&Path>,
    documents_path: Option<&Path>,
    events: Events<'_>,
) -> Result<Loaded> {
    let docs = documents(documents_path)?;
    let cases = veredicto_formats::golden::read_golden_with(golden, docs.as_ref())?;
    let (corpus, located) = match corpus {
        Some(p) => {
            let (c, l) = load_corpus(p, docs.as_ref(), events)?;
            (Some(c), l)
        }
        None => (None, None),
    };
    Ok(Loaded {
        cases,
        corpus,
        located,
    })
}

/// What `golden check` reads.
#[derive(Debug, Clone)]
pub struct CheckRequest<'a> {
    pub golden: &'a Path,
    pub corpus: &'a Path,
    pub documents: Option<&'a Path>,
    /// The share of an item a chunk must hold (the policy's `evidence_coverage`).
    pub coverage: f64,
}

/// `golden check`: every quote located, the chunks holding each item, items split across
/// chunks, items no chunk covers, items the golden set cannot locate, gold chunks graded low.
pub fn check(req: &CheckRequest<'_>, events: Events<'_>) -> Result<CheckReport> {
    let docs = documents(req.documents)?;
    let file = veredicto_formats::golden::read_golden_file(req.golden)?;
    let (cases, problems) = file.resolve_all(docs.as_ref());
    let (corpus, located) = load_corpus(req.corpus, docs.as_ref(), events)?;
    let places = check::place_items(&cases, corpus.spans(), req.coverage);
    let count = |p: Placement| places.iter().filter(|x| x.placement == p).count();
    let (by_offsets, by_text, unlocated) = match &located {
        Some(l) => (
            l.by_offsets,
            l.by_text,
            l.unlocated
                .iter()
                .map(|u| format!("{} (line {}: {})", u.id, u.line, u.reason.as_str()))
                .collect(),
        ),
        None => (corpus.spans().len(), 0, Vec::new()),
    };
    Ok(CheckReport {
        golden: req.golden.display().to_string(),
        corpus: req.corpus.display().to_string(),
        documents: req.documents.map(|d| d.display().to_string()),
        cases: cases.len(),
        evidence_cases: cases.iter().filter(|c| c.by_evidence()).count(),
        items: places.len(),
        quotes: cases
            .iter()
            .flat_map(|c| &c.evidence)
            .filter(|i| i.quote.is_some())
            .count(),
        chunks: corpus.len(),
        chunks_located: corpus.spans().len(),
        by_offsets,
        by_text,
        unlocated_chunks: unlocated,
        evidence_coverage: req.coverage,
        whole: count(Placement::Whole),
        split: count(Placement::Split),
        dropped: count(Placement::Dropped),
        places,
        problems: problems.iter().map(|e| e.to_string()).collect(),
        grade_warnings: check::grade_warnings(&cases, Some(&corpus)),
    })
}

/// What `golden convert` reads.
#[derive(Debug, Clone)]
pub struct ConvertRequest<'a> {
    /// A JSONL golden set with `expected` chunk IDs.
    pub golden: &'a Path,
    pub corpus: &'a Path,
    pub documents: Option<&'a Path>,
}

/// A golden set rewritten as evidence spans.
#[derive(Debug, Clone)]
pub struct ConvertOutcome {
    /// The new golden set (JSONL): every line as it was, `expected` replaced by `evidence`
    /// (cases that already name evidence unchanged).
    pub text: String,
    pub cases: usize,
    /// Cases converted, and the items they now name.
    pub converted: usize,
    pub items: usize,
}

/// `golden convert`: each expected chunk becomes the span of the document it sits in (its
/// offsets, or where its text was found in the documents), with its grade; the other
/// fields of each line are kept in their order. A chunk missing from the corpus or not
/// located is an error naming the golden set's line and the `expected` entry.
pub fn convert(req: &ConvertRequest<'_>, events: Events<'_>) -> Result<ConvertOutcome> {
    if veredicto_formats::golden_sqlite::spec_of(req.golden).is_some() || req.golden.is_dir() {
        return Err(Error::msg(format!(
            "{}: golden convert rewrites a JSONL golden set (export a table or a BEIR folder to JSONL first)",
            req.golden.display()
        )));
    }
    let docs = documents(req.documents)?;
    let file = veredicto_formats::golden::read_golden_file(req.golden)?;
    let (corpus, _) = load_corpus(req.corpus, docs.as_ref(), events)?;
    let mut by_line: BTreeMap<usize, Vec<veredicto_core::evidence::EvidenceItem>> = BTreeMap::new();
    for l in &file.lines {
        if l.case.by_evidence() || !l.evidence.is_empty() {
            continue;
        }
        let items = check::convert_case(&l.case, &corpus).map_err(|(i, why)| {
            let id = &l.case.expected[i];
            let message = match why {
                check::ConvertProblem::NotInCorpus => {
                    format!("chunk `{id}` is not in {}", req.corpus.display())
                }
                check::ConvertProblem::Unlocated if req.documents.is_none() => format!(
                    "chunk `{id}` has no `doc_id`, `start` and `end` in {}: give the documents file (--documents) to locate it by its text",
                    req.corpus.display()
                ),
                check::ConvertProblem::Unlocated => format!(
                    "chunk `{id}` could not be located in its document (see the warning about {})",
                    req.corpus.display()
                ),
            };
            FormatError::invalid(req.golden, l.line, format!("expected[{i}]"), message)
        })?;
        by_line.insert(l.line, items);
    }
    let text = veredicto_formats::text::read_to_string(req.golden)?;
    let mut out = String::with_capacity(text.len() * 2);
    let (mut converted, mut items) = (0, 0);
    for (n, raw) in veredicto_formats::text::lines(&text) {
        let Some(new) = by_line.get(&n) else {
            if !raw.trim().is_empty() {
                out.push_str(raw.trim_end_matches('\r'));
                out.push('\n');
            }
            continue;
        };
        let object: Map<String, Value> = serde_json::from_str(raw)
            .map_err(|e| FormatError::invalid(req.golden, n, "-", e.to_string()))?;
        let mut rewritten = Map::new();
        for (k, v) in object {
            if k == "expected" {
                rewritten.insert("evidence".to_owned(), evidence_json(new));
            } else if k != "evidence" {
                rewritten.insert(k, v);
            }
        }
        converted += 1;
        items += new.len();
        out.push_str(&serde_json::to_string(&Value::Object(rewritten))?);
        out.push('\n');
    }
    Ok(ConvertOutcome {
        text: out,
        cases: file.lines.len(),
        converted,
        items,
    })
}

fn evidence_json(items: &[veredicto_core::evidence::EvidenceItem]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|i| {
                let mut m = Map::new();
                m.insert("doc_id".into(), Value::from(i.doc_id.clone()));
                m.insert("start".into(), Value::from(i.start));
                m.insert("end".into(), Value::from(i.end));
                if i.grade != veredicto_core::evidence::DEFAULT_GRADE {
                    m.insert("grade".into(), Value::from(i.grade));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// Where one search result sits in its document (`search --documents`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Placed {
    /// The document.
    pub doc_id: String,
    /// Its first character (Unicode scalar values).
    pub start: usize,
    /// One past its last character.
    pub end: usize,
    /// Where the span came from: `retriever` (the result's own span), `corpus` (the chunk's
    /// `start`/`end`, from `--corpus` or the index's record) or `text` (its text found in the
    /// document).
    pub from: &'static str,
}

/// Places each search result `(id, the retriever's span)` in `documents`: the retriever's
/// span, else the chunk's in `corpus`, else the chunk's text found in its document (once);
/// `None` when nothing says where it sits. A span that does not fit its document (an unknown
/// document, offsets beyond its text) is an error naming the result.
pub fn place_results(
    results: &[(&str, Option<&veredicto_core::evidence::ChunkSpan>)],
    corpus: Option<&Corpus>,
    documents: &Documents,
) -> Result<Vec<Option<Placed>>> {
    let mut out = Vec::with_capacity(results.len());
    for (n, (id, given)) in results.iter().enumerate() {
        let chunk = corpus.and_then(|c| c.get(id));
        let span = given
            .map(|s| (s.doc_id.as_str(), s.start, s.end, "retriever"))
            .or_else(|| {
                chunk
                    .and_then(|c| c.span())
                    .map(|s| (s.doc_id, s.start, s.end, "corpus"))
            });
        let placed = match span {
            Some((doc_id, start, end, from)) => {
                let Some(doc) = documents.get(doc_id) else {
                    crate::bail!(
                        "result {} (`{id}`): its span names document `{doc_id}`, which is not in {}",
                        n + 1,
                        documents.path.display()
                    );
                };
                let len = doc.text.chars();
                crate::ensure!(
                    start <= end && end <= len,
                    "result {} (`{id}`): its span {start}..{end} ({from}) does not fit document `{doc_id}` of {len} characters in {}",
                    n + 1,
                    documents.path.display()
                );
                Some(Placed {
                    doc_id: doc_id.to_owned(),
                    start,
                    end,
                    from,
                })
            }
            None => chunk.and_then(|c| {
                let doc_id = c.doc_id.as_deref()?;
                let text = c.text.as_deref()?;
                let (start, end) = documents.get(doc_id)?.locator().locate(text, None).ok()?;
                Some(Placed {
                    doc_id: doc_id.to_owned(),
                    start,
                    end,
                    from: "text",
                })
            }),
        };
        out.push(placed);
    }
    Ok(out)
}
