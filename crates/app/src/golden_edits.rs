//! The workbench's golden-set edits beyond adding a case: questions pasted in bulk and
//! candidates from the production signals wait as **drafts** beside the golden set until a
//! person picks what answers them (a golden case needs its expected chunks or evidence, so a
//! bare question never enters the golden file); candidates are accepted or rejected with a
//! reason; a case's `gold`, `top_k`, `domain` and `tags` are set, and evidence spans added,
//! each as a one-line edit of the golden file. Every edit is refused when the golden file
//! changed since the page was read, replaces its file atomically, and appends who, what and
//! when to the golden file's log. Callers serialise edits (the workbench holds a lock).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use veredicto_core::aggregation::normalize;
use veredicto_core::signals::Candidate;

use crate::workbench::{append_log, content_hash, golden_page, read_bytes, replace_golden, Saved};
use crate::{Error, Result};

/// The drafts beside a golden file (`golden.jsonl` → `golden.jsonl.drafts.jsonl`).
pub fn drafts_path(golden: &Path) -> PathBuf {
    let mut name = golden.file_name().unwrap_or_default().to_os_string();
    name.push(".drafts.jsonl");
    golden.with_file_name(name)
}

/// A question waiting for its expected chunks or evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub id: String,
    pub query: String,
    /// Chunks proposed for it (a candidate's), to confirm.
    pub expected: Vec<String>,
    /// Where it came from: `paste`, or `signals` (an accepted candidate).
    pub from: String,
}

/// The drafts of a golden file, in file order (absent: none).
pub fn drafts(golden: &Path) -> Result<Vec<Draft>> {
    let path = drafts_path(golden);
    let bytes = read_bytes(&path)?;
    let mut out = Vec::new();
    for (i, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| Error::Message(format!("{}: line {}: {e}", path.display(), i + 1)))?;
        let s = |k: &str| v[k].as_str().unwrap_or("").to_owned();
        out.push(Draft {
            id: s("id"),
            query: s("query"),
            expected: v["expected"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            from: s("from"),
        });
    }
    Ok(out)
}

fn write_drafts(golden: &Path, drafts: &[Draft]) -> Result<()> {
    let mut text = String::new();
    for d in drafts {
        text.push_str(&serde_json::to_string(
            &json!({"id": d.id, "query": d.query, "expected": d.expected, "from": d.from}),
        )?);
        text.push('\n');
    }
    let path = drafts_path(golden);
    crate::files::write_atomic(&path, text.as_bytes())
        .map_err(|e| Error::Message(format!("{}: {e}", path.display())))
}

/// Drops the draft `id` (once it became a case); nothing when there is none.
pub fn remove_draft(golden: &Path, id: &str) -> Result<()> {
    let mut all = drafts(golden)?;
    let before = all.len();
    all.retain(|d| d.id != id);
    if all.len() != before {
        write_drafts(golden, &all)?;
    }
    Ok(())
}

/// A pasted question not added, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    pub query: String,
    /// The case or draft that already asks it (same text once lower-cased, accents and
    /// punctuation removed), or `None` when it was pasted twice.
    pub existing: Option<String>,
}

/// What a paste did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pasted {
    /// The drafts added, `(id, query)`, in paste order.
    pub added: Vec<(String, String)>,
    pub duplicates: Vec<Duplicate>,
}

/// The ID of a pasted question: `q-` and the first 12 hex digits of the SHA-256 of its
/// normalised text (the same question always gets the same ID).
pub fn question_id(query: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(normalize(query).as_bytes());
    let hex: String = d.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("q-{hex}")
}

/// Adds each non-blank line of `text` as a draft question, unless the golden file's
/// identity is no longer `read_hash` (then nothing is written). A line asking what a case
/// or a draft already asks, or what an earlier line asked, is reported, not added.
pub fn paste_questions(
    golden: &Path,
    read_hash: &str,
    text: &str,
    who: &str,
    at: &str,
) -> Result<std::result::Result<Pasted, Saved>> {
    let current = content_hash(&read_bytes(golden)?);
    if current != read_hash {
        return Ok(Err(Saved::Stale { current }));
    }
    let mut known: std::collections::HashMap<String, String> = golden_page(golden, 0, usize::MAX)?
        .rows
        .into_iter()
        .map(|r| (normalize(&r.query), r.id))
        .collect();
    let mut all = drafts(golden)?;
    for d in &all {
        known.entry(normalize(&d.query)).or_insert(d.id.clone());
    }
    let mut pasted = Pasted::default();
    let mut this_paste = BTreeSet::new();
    for line in text.lines() {
        let q = line.trim();
        if q.is_empty() {
            continue;
        }
        let n = normalize(q);
        if n.is_empty() {
            continue;
        }
        if let Some(id) = known.get(&n) {
            pasted.duplicates.push(Duplicate {
                query: q.to_owned(),
                existing: Some(id.clone()),
            });
            continue;
        }
        if !this_paste.insert(n.clone()) {
            pasted.duplicates.push(Duplicate {
                query: q.to_owned(),
                existing: None,
            });
            continue;
        }
        let id = question_id(q);
        pasted.added.push((id.clone(), q.to_owned()));
        all.push(Draft {
            id,
            query: q.to_owned(),
            expected: Vec::new(),
            from: "paste".to_owned(),
        });
    }
    if !pasted.added.is_empty() {
        write_drafts(golden, &all)?;
    }
    append_log(
        golden,
        &json!({
            "at": at, "who": who, "action": "paste_questions",
            "added": pasted.added.iter().map(|(id, q)| json!({"id": id, "query": q})).collect::<Vec<_>>(),
            "duplicates": pasted.duplicates.iter().map(|d| json!({"query": d.query, "existing": d.existing})).collect::<Vec<_>>(),
        }),
    )?;
    Ok(Ok(pasted))
}

/// Where the candidates come from.
#[derive(Debug, Clone, Copy)]
pub struct SignalsSource<'a> {
    /// The signals file (what `veredicto signals candidates` reads by default).
    pub signals: &'a Path,
    /// The corpus, to find the chunk a copied text came from.
    pub corpus: Option<&'a Path>,
}

/// The candidates `veredicto signals candidates` proposes from the signals file (merging
/// by text only: the page loads no model), without those already decided: accepted (a
/// draft or a case now) or rejected (in the golden file's log).
pub fn open_candidates(golden: &Path, from: SignalsSource<'_>) -> Result<Vec<Candidate>> {
    let req = crate::signals::CandidatesRequest {
        source: from.signals,
        map: Default::default(),
        from_log: false,
        out: Path::new(""),
        golden: golden.exists().then_some(golden),
        corpus: from.corpus,
        settings: Default::default(),
        embedder: None,
    };
    let report = crate::signals::propose(&req)?;
    let decided = decided_candidates(golden)?;
    let drafted: BTreeSet<String> = drafts(golden)?.into_iter().map(|d| d.id).collect();
    Ok(report
        .candidates
        .into_iter()
        .filter(|c| !decided.contains(&c.id) && !drafted.contains(&c.id))
        .collect())
}

/// The candidate IDs accepted or rejected in the golden file's log.
fn decided_candidates(golden: &Path) -> Result<BTreeSet<String>> {
    let path = crate::workbench::log_path(golden);
    let bytes = read_bytes(&path)?;
    let mut out = BTreeSet::new();
    for line in String::from_utf8_lossy(&bytes).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if matches!(
            v["action"].as_str(),
            Some("accept_candidate" | "reject_candidate")
        ) {
            if let Some(id) = v["candidate"].as_str() {
                out.insert(id.to_owned());
            }
        }
    }
    Ok(out)
}

/// Accepts (`accept`: it becomes a draft with the candidate's chunks proposed) or rejects
/// the candidate `id` with a reason (required); the decision goes to the golden file's log
/// and the candidate is not listed again.
#[allow(clippy::too_many_arguments)]
pub fn decide_candidate(
    golden: &Path,
    from: SignalsSource<'_>,
    id: &str,
    accept: bool,
    reason: &str,
    who: &str,
    at: &str,
) -> Result<()> {
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(Error::Message(format!(
            "candidate {id}: a decision needs a reason"
        )));
    }
    let open = open_candidates(golden, from)?;
    let Some(c) = open.iter().find(|c| c.id == id) else {
        return Err(Error::Message(format!(
            "candidate {id}: not among the open candidates (decided already, or not proposed)"
        )));
    };
    if accept {
        let mut all = drafts(golden)?;
        all.push(Draft {
            id: c.id.clone(),
            query: c.query.clone(),
            expected: c.expected.clone(),
            from: "signals".to_owned(),
        });
        write_drafts(golden, &all)?;
    }
    append_log(
        golden,
        &json!({
            "at": at, "who": who,
            "action": if accept { "accept_candidate" } else { "reject_candidate" },
            "candidate": c.id, "query": c.query, "expected": c.expected, "reason": reason,
            "evidence": c.evidence,
        }),
    )
}

/// The fields of a case the workbench sets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fields {
    pub gold: bool,
    /// `None`: the policy's K.
    pub top_k: Option<u32>,
    pub domain: Option<String>,
    pub tags: Vec<String>,
}

/// One case's line of the golden file, as an object, with its position among the lines.
fn case_line(text: &str, id: &str, golden: &Path) -> Result<(usize, Map<String, Value>)> {
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Map<String, Value> = serde_json::from_str(line)
            .map_err(|e| Error::Message(format!("{}: line {}: {e}", golden.display(), i + 1)))?;
        if v.get("id").and_then(Value::as_str) == Some(id) {
            return Ok((i, v));
        }
    }
    Err(Error::Message(format!(
        "{}: no case with id {id:?}",
        golden.display()
    )))
}

/// Replaces line `at_line` (0-based) of `text` with `object`, keeping every other byte.
fn with_line(text: &str, at_line: usize, object: &Map<String, Value>) -> Result<Vec<u8>> {
    let mut out = String::with_capacity(text.len() + 64);
    for (i, piece) in text.split_inclusive('\n').enumerate() {
        if i == at_line {
            out.push_str(&serde_json::to_string(object)?);
            out.push('\n');
        } else {
            out.push_str(piece);
        }
    }
    Ok(out.into_bytes())
}

/// A case of the golden file as its line holds it.
pub fn case(golden: &Path, id: &str) -> Result<Map<String, Value>> {
    let text = String::from_utf8_lossy(&read_bytes(golden)?).into_owned();
    Ok(case_line(&text, id, golden)?.1)
}

fn edit_case(
    golden: &Path,
    read_hash: &str,
    id: &str,
    action: &str,
    who: &str,
    at: &str,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<Value>,
) -> Result<Saved> {
    let bytes = read_bytes(golden)?;
    let current = content_hash(&bytes);
    if current != read_hash {
        return Ok(Saved::Stale { current });
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (at_line, mut object) = case_line(&text, id, golden)?;
    let before = Value::Object(object.clone());
    let what = change(&mut object)?;
    let new = with_line(&text, at_line, &object)?;
    replace_golden(golden, &new)?;
    append_log(
        golden,
        &json!({"at": at, "who": who, "action": action, "file": golden.file_name().map(|n| n.to_string_lossy().into_owned()), "line": at_line + 1, "case": id, "change": what, "before": before}),
    )?;
    Ok(Saved::Written {
        hash: content_hash(&new),
    })
}

/// Sets the case `id`'s `gold`, `top_k`, `domain` and `tags` (a field left empty is
/// removed), rewriting only its line.
pub fn set_fields(
    golden: &Path,
    read_hash: &str,
    id: &str,
    fields: &Fields,
    who: &str,
    at: &str,
) -> Result<Saved> {
    if fields.top_k == Some(0) {
        return Err(Error::Message(format!(
            "case {id}: top_k must be at least 1"
        )));
    }
    let tags: Vec<String> = fields
        .tags
        .iter()
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    let domain = fields
        .domain
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    edit_case(golden, read_hash, id, "set_fields", who, at, |o| {
        let mut set = |k: &str, v: Option<Value>| match v {
            Some(v) => {
                o.insert(k.to_owned(), v);
            }
            None => {
                o.shift_remove(k);
            }
        };
        set("gold", fields.gold.then_some(Value::Bool(true)));
        set("top_k", fields.top_k.map(|k| json!(k)));
        set("domain", domain.map(|d| json!(d)));
        set("tags", (!tags.is_empty()).then(|| json!(tags)));
        Ok(json!({"gold": fields.gold, "top_k": fields.top_k, "domain": domain, "tags": tags}))
    })
}

/// An evidence span as the workbench makes it: a span of a document, by offsets (Unicode
/// scalar values, end exclusive) or by a quote of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    Offsets {
        doc_id: String,
        start: usize,
        end: usize,
    },
    Quote {
        doc_id: String,
        quote: String,
    },
}

impl Span {
    /// From typed fields: `start`/`end` (both) or `quote`, never both.
    pub fn parse(doc_id: &str, start: &str, end: &str, quote: &str) -> Result<Span> {
        let doc_id = doc_id.trim();
        if doc_id.is_empty() {
            return Err(Error::Message(
                "an evidence span needs the document's ID (doc_id)".to_owned(),
            ));
        }
        let (start, end, quote) = (start.trim(), end.trim(), quote.trim());
        match (start.is_empty() && end.is_empty(), quote.is_empty()) {
            (true, false) => Ok(Span::Quote {
                doc_id: doc_id.to_owned(),
                quote: quote.to_owned(),
            }),
            (false, true) => {
                let n = |s: &str, f: &str| {
                    s.parse::<usize>().map_err(|_| {
                        Error::Message(format!(
                            "evidence span `{f}`: {s:?} is not an offset (a whole number of characters)"
                        ))
                    })
                };
                let (s, e) = (n(start, "start")?, n(end, "end")?);
                if s >= e {
                    return Err(Error::Message(format!(
                        "evidence span: start {s} must be before end {e}"
                    )));
                }
                Ok(Span::Offsets {
                    doc_id: doc_id.to_owned(),
                    start: s,
                    end: e,
                })
            }
            (true, true) => Err(Error::Message(
                "an evidence span needs `start` and `end`, or a `quote`".to_owned(),
            )),
            (false, false) => Err(Error::Message(
                "an evidence span gives `start`/`end` or a `quote`, not both".to_owned(),
            )),
        }
    }

    /// The evidence item as the golden file holds it.
    pub fn to_json(&self) -> Value {
        match self {
            Span::Offsets { doc_id, start, end } => {
                json!({"doc_id": doc_id, "start": start, "end": end})
            }
            Span::Quote { doc_id, quote } => json!({"doc_id": doc_id, "quote": quote}),
        }
    }

    /// Checks the span against the documents' text: the document exists, the offsets lie
    /// inside it, a quote occurs in it.
    pub fn check(&self, documents: &veredicto_formats::documents::Documents) -> Result<()> {
        let doc_id = match self {
            Span::Offsets { doc_id, .. } | Span::Quote { doc_id, .. } => doc_id,
        };
        let Some(doc) = documents.get(doc_id) else {
            return Err(Error::Message(format!(
                "evidence span: no document `{doc_id}` in the documents"
            )));
        };
        match self {
            Span::Offsets { end, .. } => {
                let n = doc.text.chars();
                if *end > n {
                    return Err(Error::Message(format!(
                        "evidence span: end {end} is past the end of document `{doc_id}` ({n} characters)"
                    )));
                }
            }
            Span::Quote { quote, .. } => {
                if !doc.text.as_str().contains(quote.as_str()) {
                    return Err(Error::Message(format!(
                        "evidence span: the quote is not in document `{doc_id}`"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Adds an evidence span to the case `id` (rewriting only its line). A case that names
/// chunk IDs (`expected`) cannot take spans: a case gives one or the other.
pub fn add_evidence(
    golden: &Path,
    read_hash: &str,
    id: &str,
    span: &Span,
    who: &str,
    at: &str,
) -> Result<Saved> {
    edit_case(golden, read_hash, id, "add_evidence", who, at, |o| {
        if o.get("expected").is_some_and(|v| !v.is_null()) {
            return Err(Error::Message(format!(
                "case {id} names chunk IDs (`expected`); a case gives chunk IDs or evidence spans, not both"
            )));
        }
        let item = span.to_json();
        match o.get_mut("evidence") {
            Some(Value::Array(items)) => {
                if items.contains(&item) {
                    return Err(Error::Message(format!(
                        "case {id}: this evidence span is already listed"
                    )));
                }
                items.push(item.clone());
            }
            _ => {
                o.insert("evidence".to_owned(), json!([item.clone()]));
            }
        }
        Ok(item)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden(dir: &Path) -> PathBuf {
        let g = dir.join("golden.jsonl");
        std::fs::write(
            &g,
            "{\"id\":\"a\",\"query\":\"¿Cuántos días de vacaciones?\",\"expected\":[\"c1\"]}\n{\"id\":\"b\",\"query\":\"preaviso\",\"evidence\":[{\"doc_id\":\"D\",\"start\":0,\"end\":4}]}\n",
        )
        .unwrap();
        g
    }

    #[test]
    fn a_paste_adds_each_new_question_once_and_reports_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let g = golden(dir.path());
        let hash = content_hash(&std::fs::read(&g).unwrap());
        let before = std::fs::read(&g).unwrap();
        let text = "cuantos dias de VACACIONES\n\n  ¿Hay teletrabajo?  \nhay teletrabajo\n¿Y el preaviso?\n";
        assert!(matches!(
            paste_questions(&g, "sha256:old", text, "ana", "t").unwrap(),
            Err(Saved::Stale { .. })
        ));
        let p = paste_questions(&g, &hash, text, "ana", "t")
            .unwrap()
            .unwrap();
        assert_eq!(
            p.added,
            vec![
                (
                    question_id("¿Hay teletrabajo?"),
                    "¿Hay teletrabajo?".to_owned()
                ),
                (question_id("¿Y el preaviso?"), "¿Y el preaviso?".to_owned()),
            ]
        );
        assert_eq!(p.duplicates[0].existing.as_deref(), Some("a"));
        assert_eq!(p.duplicates[1].existing, None);
        assert_eq!(
            std::fs::read(&g).unwrap(),
            before,
            "the golden file is untouched"
        );
        // Pasted again: every line is a draft already.
        let again = paste_questions(&g, &hash, text, "ana", "t")
            .unwrap()
            .unwrap();
        assert!(again.added.is_empty());
        assert_eq!(drafts(&g).unwrap().len(), 2);
        remove_draft(&g, &p.added[0].0).unwrap();
        assert_eq!(drafts(&g).unwrap().len(), 1);
    }

    #[test]
    fn fields_and_spans_rewrite_one_line_and_refuse_a_stale_page() {
        let dir = tempfile::tempdir().unwrap();
        let g = golden(dir.path());
        let hash = content_hash(&std::fs::read(&g).unwrap());
        let f = Fields {
            gold: true,
            top_k: Some(5),
            domain: Some("laboral".into()),
            tags: vec!["vacaciones".into(), " ".into()],
        };
        let Saved::Written { hash } = set_fields(&g, &hash, "a", &f, "ana", "t").unwrap() else {
            panic!("stale")
        };
        let text = std::fs::read_to_string(&g).unwrap();
        assert_eq!(
            text.lines().next().unwrap(),
            "{\"id\":\"a\",\"query\":\"¿Cuántos días de vacaciones?\",\"expected\":[\"c1\"],\"gold\":true,\"top_k\":5,\"domain\":\"laboral\",\"tags\":[\"vacaciones\"]}"
        );
        assert!(matches!(
            set_fields(&g, "sha256:old", "a", &Fields::default(), "ana", "t").unwrap(),
            Saved::Stale { .. }
        ));
        let span = Span::parse("D", "", "", "El preaviso").unwrap();
        assert!(add_evidence(&g, &hash, "a", &span, "ana", "t").is_err());
        add_evidence(&g, &hash, "b", &span, "ana", "t").unwrap();
        let text = std::fs::read_to_string(&g).unwrap();
        assert!(text.lines().nth(1).unwrap().ends_with(
            "\"evidence\":[{\"doc_id\":\"D\",\"start\":0,\"end\":4},{\"doc_id\":\"D\",\"quote\":\"El preaviso\"}]}"
        ));
        assert!(Span::parse("D", "4", "2", "").is_err());
        assert!(Span::parse("D", "1", "2", "x").is_err());
        // Every edit left a line in the log.
        let log = std::fs::read_to_string(crate::workbench::log_path(&g)).unwrap();
        assert_eq!(log.lines().count(), 2);
    }
}
