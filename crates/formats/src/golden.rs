//! Golden sets: veredicto JSONL cases, or a BEIR folder (`queries.jsonl` + `qrels/test.tsv`).
//!
//! JSONL case fields: `id`, `query`, and what must come back, as one of
//! - `expected`: a non-empty list of chunk IDs (no repeats); an entry may also be an object
//!   `{"id": "c7", "grade": 2}` (a plain string has grade 1);
//! - `evidence`: a non-empty list of spans of documents, each `{"doc_id": …}` with either
//!   `"quote": "…"` (located in the document's text; `occurrence` picks the n-th match when
//!   it occurs several times) or `"start"` / `"end"` (character offsets, end exclusive;
//!   `offset_unit` `chars` (default), `bytes` or `utf16`), and an optional `grade`;
//!
//! never both (a case gives chunk IDs of one chunking, or evidence that survives
//! re-chunking). Optional: `top_k` (>= 1), `domain`, `tags`, `gold`, `query_vector` (a
//! precomputed query embedding) and `filters` (an object: `domain`, `label` / `labels`,
//! `valid_at`, `facets`, any other key a facet; see `read_filters`). Other fields of a case
//! are allowed and ignored; an evidence item or a graded entry accepts only its own fields.
//!
//! Quotes, and offsets in another unit than characters, need the documents' text
//! ([`read_golden_with`]); offsets in characters are checked against it when it is given.
//!
//! BEIR: the cases are the queries that have at least one qrel with relevance > 0, in the
//! order of `queries.jsonl`; those documents are the expected list (in qrels order), each
//! graded with its relevance.

use crate::documents::Documents;
use crate::error::{FormatError, Result};
use crate::jsonl::{self, SeenIds};
use crate::text;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use veredicto_core::case::Case;
use veredicto_core::evidence::text::LocateError;
use veredicto_core::evidence::{EvidenceItem, OffsetUnit, DEFAULT_GRADE, MAX_GRADE};

/// Reads a golden set from a JSONL file or a BEIR folder. Evidence given by quotes (or by
/// offsets in bytes or UTF-16 units) needs the documents: see [`read_golden_with`].
pub fn read_golden(path: &Path) -> Result<Vec<Case>> {
    read_golden_with(path, None)
}

/// Reads a golden set and locates its evidence in `documents`: quotes found, offsets
/// converted to characters and checked against the texts. The first problem is the error.
pub fn read_golden_with(path: &Path, documents: Option<&Documents>) -> Result<Vec<Case>> {
    // `sqlite:FILE?table=T` reads the cases from a table of a SQLite database (a Cloudflare
    // D1 database's local file too); see [`crate::golden_sqlite`].
    if let Some(spec) = crate::golden_sqlite::spec_of(path) {
        return crate::golden_sqlite::read(spec);
    }
    read_golden_file(path)?.resolve(documents)
}

/// Reads a golden set without locating its evidence yet.
pub fn read_golden_file(path: &Path) -> Result<GoldenFile> {
    let lines = if path.is_dir() {
        read_beir(path, "test")?
            .into_iter()
            .map(|case| GoldenLine {
                case,
                line: 0,
                evidence: Vec::new(),
            })
            .collect()
    } else {
        read_jsonl(path)?
    };
    if lines.is_empty() {
        return Err(FormatError::invalid(
            path,
            0,
            "-",
            "the golden set has no cases",
        ));
    }
    Ok(GoldenFile {
        path: path.to_path_buf(),
        lines,
    })
}

/// A golden set as read: cases whose evidence is not located yet.
#[derive(Debug, Clone)]
pub struct GoldenFile {
    pub path: PathBuf,
    pub lines: Vec<GoldenLine>,
}

/// One case as read, with the line it is on (0 for a BEIR folder).
#[derive(Debug, Clone)]
pub struct GoldenLine {
    /// The case, its `evidence` still empty.
    pub case: Case,
    pub line: usize,
    /// Its evidence items as written.
    pub evidence: Vec<RawEvidence>,
}

/// An evidence item as written in the golden set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvidence {
    pub doc_id: String,
    pub at: RawLocation,
    pub grade: u32,
}

/// How an item says where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawLocation {
    Quote {
        quote: String,
        occurrence: Option<usize>,
    },
    Offsets {
        start: usize,
        end: usize,
        unit: OffsetUnit,
    },
}

impl GoldenFile {
    /// The cases with their evidence located; the first problem is the error.
    pub fn resolve(&self, documents: Option<&Documents>) -> Result<Vec<Case>> {
        let mut out = Vec::with_capacity(self.lines.len());
        for l in &self.lines {
            let mut case = l.case.clone();
            for (i, raw) in l.evidence.iter().enumerate() {
                case.evidence.push(self.locate(l, i, raw, documents)?);
            }
            self.check_repeats(l, &case.evidence)?;
            out.push(case);
        }
        Ok(out)
    }

    /// The cases with every item that could be located, and every problem (one per item
    /// that could not, and one per item repeating an earlier one), in file order: what
    /// `golden check` reports instead of stopping at the first.
    pub fn resolve_all(&self, documents: Option<&Documents>) -> (Vec<Case>, Vec<FormatError>) {
        let mut out = Vec::with_capacity(self.lines.len());
        let mut problems = Vec::new();
        for l in &self.lines {
            let mut case = l.case.clone();
            for (i, raw) in l.evidence.iter().enumerate() {
                match self.locate(l, i, raw, documents) {
                    Ok(item) => case.evidence.push(item),
                    Err(e) => problems.push(e),
                }
            }
            if let Err(e) = self.check_repeats(l, &case.evidence) {
                problems.push(e);
            }
            out.push(case);
        }
        (out, problems)
    }

    fn error(&self, l: &GoldenLine, field: String, message: String) -> FormatError {
        FormatError::invalid(&self.path, l.line, field, message)
    }

    fn check_repeats(&self, l: &GoldenLine, items: &[EvidenceItem]) -> Result<()> {
        let mut seen: HashMap<(&str, usize, usize), usize> = HashMap::new();
        for (i, it) in items.iter().enumerate() {
            if let Some(first) = seen.insert((it.doc_id.as_str(), it.start, it.end), i) {
                return Err(self.error(
                    l,
                    format!("evidence[{i}]"),
                    format!(
                        "the same span as evidence[{first}] (characters {}..{} of document `{}`): list each piece of evidence once",
                        it.start, it.end, it.doc_id
                    ),
                ));
            }
        }
        Ok(())
    }

    fn locate(
        &self,
        l: &GoldenLine,
        i: usize,
        raw: &RawEvidence,
        documents: Option<&Documents>,
    ) -> Result<EvidenceItem> {
        let field = |f: &str| format!("evidence[{i}].{f}");
        let doc = match documents {
            Some(docs) => Some(docs.get(&raw.doc_id).ok_or_else(|| {
                self.error(
                    l,
                    field("doc_id"),
                    format!(
                        "document `{}` is not in {}",
                        raw.doc_id,
                        docs.path.display()
                    ),
                )
            })?),
            None => None,
        };
        let (start, end, quote) = match (&raw.at, doc) {
            (RawLocation::Quote { .. }, None) => return Err(self.error(
                l,
                field("quote"),
                "a quote is located in its document's text: give the documents file (--documents)"
                    .to_owned(),
            )),
            (RawLocation::Quote { quote, occurrence }, Some(doc)) => {
                match doc.locator().locate(quote, *occurrence) {
                    Ok((s, e)) => (s, e, Some(quote.clone())),
                    Err(e) => {
                        let f = if matches!(e, LocateError::NoSuchOccurrence { .. }) {
                            "occurrence"
                        } else {
                            "quote"
                        };
                        return Err(self.error(
                            l,
                            field(f),
                            format!("{e} (document `{}`)", raw.doc_id),
                        ));
                    }
                }
            }
            (RawLocation::Offsets { start, end, unit }, None) => {
                if *unit != OffsetUnit::Chars {
                    return Err(self.error(
                        l,
                        field("offset_unit"),
                        format!(
                            "offsets in {} are converted to characters with the document's text: give the documents file (--documents)",
                            unit.as_str()
                        ),
                    ));
                }
                (*start, *end, None)
            }
            (RawLocation::Offsets { start, end, unit }, Some(doc)) => {
                let conv = |v: usize, name: &str| {
                    doc.text
                        .to_chars(v, *unit)
                        .ok_or_else(|| self.error(l, field(name), offset_problem(v, *unit, doc)))
                };
                (conv(*start, "start")?, conv(*end, "end")?, None)
            }
        };
        Ok(EvidenceItem {
            doc_id: raw.doc_id.clone(),
            start,
            end,
            grade: raw.grade,
            quote,
        })
    }
}

/// Why offset `v` (in `unit`) does not point into `doc`.
pub(crate) fn offset_problem(
    v: usize,
    unit: OffsetUnit,
    doc: &crate::documents::Document,
) -> String {
    let (len, what) = match unit {
        OffsetUnit::Chars => (doc.text.chars(), "characters"),
        OffsetUnit::Bytes => (doc.text.as_str().len(), "bytes"),
        OffsetUnit::Utf16 => (
            doc.text.as_str().chars().map(char::len_utf16).sum(),
            "UTF-16 units",
        ),
    };
    if v > len {
        format!(
            "{v} is beyond the end of document `{}` ({len} {what})",
            doc.id
        )
    } else {
        format!(
            "{v} falls inside a character of document `{}` (offsets in {what} must fall between characters)",
            doc.id
        )
    }
}

fn read_jsonl(path: &Path) -> Result<Vec<GoldenLine>> {
    let mut seen = SeenIds::default();
    let mut cases = Vec::new();
    for line in jsonl::read_objects(path)? {
        cases.push(golden_line_of(&line, &mut seen)?);
    }
    Ok(cases)
}

/// One case from one object (a JSONL line, or a row of a SQLite table made into one), with
/// its evidence not yet located.
fn golden_line_of(line: &jsonl::ObjectLine<'_>, seen: &mut SeenIds) -> Result<GoldenLine> {
    let id = line.req_id("id")?;
    seen.check(line, "id", &id, "case")?;
    let query = line
        .opt_text("query")?
        .ok_or_else(|| line.error("query", "missing"))?;
    let has_expected = !matches!(line.object.get("expected"), None | Some(Value::Null));
    let has = |k: &str| match line.object.get(k) {
        None | Some(Value::Null) => false,
        // A list of plain strings beside `expected` is not spans: it is where a drafted
        // candidate came from (`signals candidates` writes the signal log lines there), kept
        // for the reviewer and ignored like any other extra field.
        Some(Value::Array(items)) if k == "evidence" && has_expected => {
            !items.iter().all(Value::is_string)
        }
        Some(_) => true,
    };
    let (expected, grades, evidence) =
        match (has("expected"), has("evidence")) {
            (true, true) => return Err(line.error(
                "evidence",
                "a case gives `expected` (chunk IDs) or `evidence` (spans of documents), not both",
            )),
            (false, false) => return Err(line.error(
                "expected",
                "missing: a case needs `expected` (chunk IDs) or `evidence` (spans of documents)",
            )),
            (true, false) => {
                let (expected, grades) = read_expected(line)?;
                (expected, grades, Vec::new())
            }
            (false, true) => (Vec::new(), BTreeMap::new(), read_evidence(line)?),
        };
    Ok(GoldenLine {
        case: Case {
            id,
            query,
            expected,
            grades,
            evidence: Vec::new(),
            top_k: line.opt_positive("top_k")?,
            domain: line.opt_id("domain")?,
            tags: line.str_list("tags")?,
            gold: line.opt_bool("gold")?.unwrap_or(false),
            query_vector: line.opt_vector("query_vector")?,
            filters: read_filters(line)?,
        },
        line: line.line,
        evidence,
    })
}

/// One case of a source that cannot carry evidence spans (a SQLite table): `evidence` is
/// refused there, naming the row.
pub(crate) fn case_of(line: &jsonl::ObjectLine<'_>, seen: &mut SeenIds) -> Result<Case> {
    let g = golden_line_of(line, seen)?;
    if !g.evidence.is_empty() {
        return Err(line.error(
            "evidence",
            "evidence spans are read from JSONL golden sets only; give `expected` chunk IDs here",
        ));
    }
    Ok(g.case)
}

/// A grade: an integer from 1 to [`MAX_GRADE`].
fn grade(line: &jsonl::ObjectLine<'_>, field: &str, v: &Value) -> Result<u32> {
    match v.as_i64() {
        Some(g) if g >= 1 && g <= i64::from(MAX_GRADE) => Ok(g as u32),
        _ => Err(line.error(
            field,
            format!(
                "a grade is an integer from 1 to {MAX_GRADE}, got {}",
                veredicto_core::redact::short(&v.to_string())
            ),
        )),
    }
}

/// Refuses keys of an item object other than `known`.
fn only_keys(
    line: &jsonl::ObjectLine<'_>,
    prefix: &str,
    object: &Map<String, Value>,
    known: &[&str],
) -> Result<()> {
    for key in object.keys() {
        if !known.contains(&key.as_str()) {
            let hint = crate::config::did_you_mean(key, known.iter().copied())
                .map(|s| format!("did you mean `{s}`? "))
                .unwrap_or_default();
            return Err(line.error(
                &format!("{prefix}.{key}"),
                format!("{hint}unknown field (expected one of {})", known.join(", ")),
            ));
        }
    }
    Ok(())
}

/// `expected`: chunk IDs, or `{"id", "grade"}` objects; no ID twice.
fn read_expected(line: &jsonl::ObjectLine<'_>) -> Result<(Vec<String>, BTreeMap<String, u32>)> {
    let items = match line.object.get("expected") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(line.error(
                "expected",
                format!(
                    "expected an array of chunk IDs, found {}",
                    jsonl::kind(other)
                ),
            ))
        }
        None => return Err(line.error("expected", "missing")),
    };
    if items.is_empty() {
        return Err(line.error(
            "expected",
            "empty: a case needs at least one expected chunk",
        ));
    }
    let mut expected = Vec::with_capacity(items.len());
    let mut grades = BTreeMap::new();
    for (i, v) in items.iter().enumerate() {
        let field = format!("expected[{i}]");
        let (id, g) = match v {
            Value::String(s) if !s.trim().is_empty() => (s.clone(), DEFAULT_GRADE),
            Value::Number(n) if n.is_u64() || n.is_i64() => (n.to_string(), DEFAULT_GRADE),
            Value::String(_) => return Err(line.error(&field, "empty")),
            Value::Object(o) => {
                only_keys(line, &field, o, &["id", "grade"])?;
                let id = match o.get("id") {
                    Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                    Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
                    Some(Value::String(_)) => {
                        return Err(line.error(&format!("{field}.id"), "empty"))
                    }
                    None | Some(Value::Null) => {
                        return Err(line.error(&format!("{field}.id"), "missing"))
                    }
                    Some(other) => {
                        return Err(line.error(
                            &format!("{field}.id"),
                            format!("expected a string, found {}", jsonl::kind(other)),
                        ))
                    }
                };
                let g = match o.get("grade") {
                    None | Some(Value::Null) => DEFAULT_GRADE,
                    Some(g) => grade(line, &format!("{field}.grade"), g)?,
                };
                (id, g)
            }
            other => {
                return Err(line.error(
                    &field,
                    format!(
                        "expected a chunk ID or an object {{\"id\", \"grade\"}}, found {}",
                        jsonl::kind(other)
                    ),
                ))
            }
        };
        if expected.contains(&id) {
            return Err(line.error(&field, format!("chunk `{id}` is listed twice")));
        }
        if g != DEFAULT_GRADE {
            grades.insert(id.clone(), g);
        }
        expected.push(id);
    }
    Ok((expected, grades))
}

/// A non-negative integer field of an evidence item.
fn offset(line: &jsonl::ObjectLine<'_>, field: &str, v: &Value) -> Result<usize> {
    match v.as_u64() {
        Some(n) if usize::try_from(n).is_ok() => Ok(n as usize),
        _ => Err(line.error(
            field,
            format!(
                "an offset is a non-negative integer, got {}",
                veredicto_core::redact::short(&v.to_string())
            ),
        )),
    }
}

/// `evidence`: items with `doc_id`, and `quote` (+ `occurrence`) or `start` / `end`
/// (+ `offset_unit`), and `grade`.
fn read_evidence(line: &jsonl::ObjectLine<'_>) -> Result<Vec<RawEvidence>> {
    let items = match line.object.get("evidence") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(line.error(
                "evidence",
                format!(
                    "expected an array of evidence items, found {}",
                    jsonl::kind(other)
                ),
            ))
        }
        None => return Err(line.error("evidence", "missing")),
    };
    if items.is_empty() {
        return Err(line.error("evidence", "empty: a case needs at least one evidence item"));
    }
    const KEYS: &[&str] = &[
        "doc_id",
        "quote",
        "occurrence",
        "start",
        "end",
        "offset_unit",
        "grade",
    ];
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        let prefix = format!("evidence[{i}]");
        let f = |k: &str| format!("{prefix}.{k}");
        let Value::Object(o) = v else {
            return Err(line.error(
                &prefix,
                format!(
                    "expected an object with `doc_id` and `quote` or `start`/`end`, found {}",
                    jsonl::kind(v)
                ),
            ));
        };
        only_keys(line, &prefix, o, KEYS)?;
        let get = |k: &str| o.get(k).filter(|v| !v.is_null());
        let doc_id = match get("doc_id") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
            Some(Value::String(_)) => return Err(line.error(&f("doc_id"), "empty")),
            None => return Err(line.error(&f("doc_id"), "missing")),
            Some(other) => {
                return Err(line.error(
                    &f("doc_id"),
                    format!("expected a string, found {}", jsonl::kind(other)),
                ))
            }
        };
        let grade = match get("grade") {
            None => DEFAULT_GRADE,
            Some(g) => grade(line, &f("grade"), g)?,
        };
        let at = match (get("quote"), get("start"), get("end")) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(line.error(&f("quote"), "give `quote` or `start`/`end`, not both"))
            }
            (Some(q), None, None) => {
                let Value::String(quote) = q else {
                    return Err(line.error(
                        &f("quote"),
                        format!("expected a string, found {}", jsonl::kind(q)),
                    ));
                };
                if get("offset_unit").is_some() {
                    return Err(line.error(
                        &f("offset_unit"),
                        "applies to `start`/`end`, not to a quote",
                    ));
                }
                let occurrence = match get("occurrence") {
                    None => None,
                    Some(v) => match v.as_u64() {
                        Some(n) if n >= 1 => Some(n as usize),
                        _ => {
                            return Err(line.error(
                                &f("occurrence"),
                                format!(
                                    "a positive integer (1: the first match), got {}",
                                    veredicto_core::redact::short(&v.to_string())
                                ),
                            ))
                        }
                    },
                };
                RawLocation::Quote {
                    quote: quote.clone(),
                    occurrence,
                }
            }
            (None, Some(s), Some(e)) => {
                if get("occurrence").is_some() {
                    return Err(
                        line.error(&f("occurrence"), "applies to a quote, not to `start`/`end`")
                    );
                }
                let start = offset(line, &f("start"), s)?;
                let end = offset(line, &f("end"), e)?;
                if end <= start {
                    return Err(line.error(
                        &f("end"),
                        format!("must be more than start ({start}), got {end}"),
                    ));
                }
                let unit = match get("offset_unit") {
                    None => OffsetUnit::Chars,
                    Some(Value::String(u)) => u
                        .parse()
                        .map_err(|m: String| line.error(&f("offset_unit"), m))?,
                    Some(other) => {
                        return Err(line.error(
                            &f("offset_unit"),
                            format!("expected a string, found {}", jsonl::kind(other)),
                        ))
                    }
                };
                RawLocation::Offsets { start, end, unit }
            }
            (None, Some(_), None) => return Err(line.error(&f("end"), "missing (beside `start`)")),
            (None, None, Some(_)) => return Err(line.error(&f("start"), "missing (beside `end`)")),
            (None, None, None) => {
                return Err(line.error(
                    &prefix,
                    "says where the evidence is with `quote` or with `start` and `end`",
                ))
            }
        };
        out.push(RawEvidence { doc_id, at, grade });
    }
    Ok(out)
}

/// A case's optional `filters` object, checked against the shape every retriever reads:
/// `domain` a string; `label` / `labels` a string or a list of strings; `valid_at` a
/// calendar date `YYYY-MM-DD`; `facets` an object of scalars (string, number, boolean); any
/// other key a scalar (a facet). An empty object is no filter.
fn read_filters(
    line: &jsonl::ObjectLine<'_>,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>> {
    use serde_json::Value;
    let object = match line.object.get("filters") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(line.error(
                "filters",
                format!("expected an object, found {}", jsonl::kind(other)),
            ))
        }
    };
    let scalar = |v: &Value| matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_));
    for (key, value) in object {
        let field = format!("filters.{key}");
        match key.as_str() {
            "domain" if !value.is_string() => {
                return Err(line.error(
                    &field,
                    format!("expected a string, found {}", jsonl::kind(value)),
                ))
            }
            "label" | "labels" => match value {
                Value::String(_) => {}
                Value::Array(items) => {
                    if let Some((i, item)) = items.iter().enumerate().find(|(_, v)| !v.is_string())
                    {
                        return Err(line.error(
                            &format!("{field}[{i}]"),
                            format!("expected a string, found {}", jsonl::kind(item)),
                        ));
                    }
                }
                other => {
                    return Err(line.error(
                        &field,
                        format!(
                            "expected a string or a list of strings, found {}",
                            jsonl::kind(other)
                        ),
                    ))
                }
            },
            "valid_at" => {
                let checked = match value.as_str() {
                    Some(d) => veredicto_core::time::check_date(d).map_err(|e| e.to_string()),
                    None => Err(format!(
                        "expected a calendar date YYYY-MM-DD, found {}",
                        veredicto_core::redact::short(&value.to_string())
                    )),
                };
                if let Err(message) = checked {
                    return Err(line.error(&field, message));
                }
            }
            "facets" => {
                let Some(facets) = value.as_object() else {
                    return Err(line.error(
                        &field,
                        format!("expected an object, found {}", jsonl::kind(value)),
                    ));
                };
                if let Some((k, v)) = facets.iter().find(|(_, v)| !scalar(v)) {
                    return Err(line.error(
                        &format!("{field}.{k}"),
                        format!(
                            "expected a string, number or boolean, found {}",
                            jsonl::kind(v)
                        ),
                    ));
                }
            }
            "domain" => {}
            _ if !scalar(value) => {
                return Err(line.error(
                    &field,
                    format!(
                        "expected a string, number or boolean (a facet), found {}",
                        jsonl::kind(value)
                    ),
                ))
            }
            _ => {}
        }
    }
    Ok((!object.is_empty()).then(|| object.clone()))
}

/// Reads a BEIR folder's queries and `qrels/<split>.tsv`.
pub fn read_beir(dir: &Path, split: &str) -> Result<Vec<Case>> {
    let qrels_path = dir.join("qrels").join(format!("{split}.tsv"));
    let text = text::read_to_string(&qrels_path)?;
    let mut expected: HashMap<String, Vec<(String, u32)>> = HashMap::new();
    for (line, raw) in text::lines(&text) {
        if raw.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = raw.split('\t').collect();
        if line == 1 && cols.first().is_some_and(|c| c.trim() == "query-id") {
            continue;
        }
        if cols.len() != 3 {
            return Err(FormatError::invalid(
                &qrels_path,
                line,
                "-",
                format!(
                    "expected 3 tab-separated columns (query-id, corpus-id, score), found {}",
                    cols.len()
                ),
            ));
        }
        let score: i64 = cols[2].trim().parse().map_err(|_| {
            FormatError::invalid(
                &qrels_path,
                line,
                "score",
                format!("not an integer: `{}`", cols[2].trim()),
            )
        })?;
        if score > 0 {
            let docs = expected.entry(cols[0].trim().to_owned()).or_default();
            let doc = cols[1].trim().to_owned();
            if !docs.iter().any(|(d, _)| *d == doc) {
                let grade = u32::try_from(score.min(i64::from(MAX_GRADE))).unwrap_or(MAX_GRADE);
                docs.push((doc, grade));
            }
        }
    }
    let queries_path = dir.join("queries.jsonl");
    let mut seen = SeenIds::default();
    let mut cases = Vec::new();
    for line in jsonl::read_objects(&queries_path)? {
        let id = line.req_id("_id")?;
        seen.check(&line, "_id", &id, "query")?;
        let Some(exp) = expected.remove(&id) else {
            continue;
        };
        let query = line
            .opt_text("text")?
            .ok_or_else(|| line.error("text", "missing"))?;
        let grades = exp
            .iter()
            .filter(|(_, g)| *g != DEFAULT_GRADE)
            .cloned()
            .collect();
        cases.push(Case {
            id,
            query,
            expected: exp.into_iter().map(|(d, _)| d).collect(),
            grades,
            evidence: Vec::new(),
            top_k: None,
            domain: None,
            tags: Vec::new(),
            gold: false,
            query_vector: None,
            filters: None,
        });
    }
    Ok(cases)
}
