//! Golden cases drafted by a chat model and decided by a person: `golden draft` (candidate
//! cases of three kinds, each with its evidence located in the chunk text and why it was
//! drafted), `golden accept` / `golden reject` (one decision of a person, with a reason,
//! logged) and the check that keeps an exam off a golden set with unaccepted drafts.
//!
//! A draft is never measured: it carries `origin: "draft"` until a person accepts it,
//! which moves it into the golden file with `origin: "accepted"`, the reviewer and the time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use veredicto_core::aggregation::normalize;
use veredicto_core::case::Chunk;
use veredicto_embed::{Embedder, JsonSchema, TextKind};

use crate::chat::{json_object, Asker, Tally, GOLDEN_DRAFT};
use crate::{Error, Events, Result};

/// The three kinds of draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Answered by one chunk.
    OneChunk,
    /// Needs two chunks of different documents.
    TwoChunks,
    /// Not answered by this corpus.
    Unanswerable,
}

impl Kind {
    /// `one_chunk`, `two_chunks`, `unanswerable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::OneChunk => "one_chunk",
            Kind::TwoChunks => "two_chunks",
            Kind::Unanswerable => "unanswerable",
        }
    }
}

/// The language of a corpus, as the prompt names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    Spanish,
    English,
}

impl Language {
    /// `Spanish`, `English`.
    pub fn name(self) -> &'static str {
        match self {
            Language::Spanish => "Spanish",
            Language::English => "English",
        }
    }
}

const SPANISH: &[&str] = &[
    "de", "la", "el", "que", "en", "los", "las", "del", "por", "con", "para", "una", "se", "es",
    "un", "al", "lo", "como", "más", "su", "sus", "y",
];
const ENGLISH: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "for", "that", "with", "on", "are", "as", "by", "be",
    "this", "it", "or", "from", "an", "at",
];

/// Spanish or English, by counting their most frequent words (and `¿`, `¡`) in the first
/// 200,000 characters of `texts`; a tie is English.
pub fn detect_language<'a>(texts: impl IntoIterator<Item = &'a str>) -> Language {
    let (mut es, mut en) = (0usize, 0usize);
    let mut seen = 0usize;
    for t in texts {
        if seen > 200_000 {
            break;
        }
        seen += t.len();
        es += t.matches(['¿', '¡']).count();
        for w in t.split(|c: char| !c.is_alphanumeric()) {
            let w = w.to_lowercase();
            if SPANISH.contains(&w.as_str()) {
                es += 1;
            } else if ENGLISH.contains(&w.as_str()) {
                en += 1;
            }
        }
    }
    if es > en {
        Language::Spanish
    } else {
        Language::English
    }
}

/// What `golden draft` does.
pub struct DraftRequest<'a> {
    /// The chunk corpus.
    pub corpus: &'a Path,
    /// Where the drafts are written (JSONL, atomically).
    pub out: &'a Path,
    /// The golden set: questions it asks, and drafts decided in its log, are not drafted
    /// again.
    pub golden: Option<&'a Path>,
    /// Drafts asked per domain and kind.
    pub per_domain: usize,
    /// Most drafts asked in all (`None`: no limit).
    pub limit: Option<usize>,
    /// The embedder that merges near-duplicate questions; `None`: by their text only.
    pub embedder: Option<&'a dyn Embedder>,
    /// Cosine at or above which two questions are one.
    pub merge_cosine: f32,
    /// The chat model.
    pub asker: &'a Asker,
    pub events: Events<'a>,
}

/// What `golden draft` wrote.
#[derive(Debug, Clone)]
pub struct Drafted {
    /// The drafts written, in file order.
    pub drafts: Vec<Value>,
    /// The corpus's language, as the prompt named it.
    pub language: Language,
    /// Drafts merged into an earlier one (same question, or cosine at or above the bound).
    pub merged: usize,
    /// Drafts left out because the golden set asks the question or a person decided them.
    pub known: usize,
    /// The replies that could not be read twice, `chunk IDs: why` (nothing drafted there).
    pub failures: Vec<String>,
    /// Requests, cache and tokens.
    pub tally: Tally,
}

/// Largest chunk text put in a prompt, in characters.
const MAX_PASSAGE: usize = 4000;

/// One request to draft.
struct Task<'a> {
    kind: Kind,
    domain: String,
    chunks: Vec<&'a Chunk>,
}

fn key(s: &str) -> String {
    hex(&Sha256::digest(s.as_bytes()))
}

/// The chunks of each domain, by document, each list in a fixed order that does not
/// depend on the file's (documents and chunks by the SHA-256 of their IDs).
fn by_domain(chunks: &[Chunk]) -> BTreeMap<String, Vec<Vec<&Chunk>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<&Chunk>>> = BTreeMap::new();
    for c in chunks {
        if c.text.as_deref().is_none_or(|t| t.trim().is_empty()) {
            continue;
        }
        let doc = c.doc_id.clone().unwrap_or_else(|| c.id.clone());
        out.entry(c.domain.clone().unwrap_or_default())
            .or_default()
            .entry(key(&doc))
            .or_default()
            .push(c);
    }
    out.into_iter()
        .map(|(d, docs)| {
            let docs = docs
                .into_values()
                .map(|mut v| {
                    v.sort_by_cached_key(|c| key(&c.id));
                    v
                })
                .collect();
            (d, docs)
        })
        .collect()
}

/// The requests of one domain: `n` of each kind, taking documents in turn.
fn tasks_of<'a>(domain: &str, docs: &[Vec<&'a Chunk>], n: usize) -> Vec<Task<'a>> {
    let nd = docs.len();
    let pick = |doc: usize, round: usize| {
        let d = &docs[doc % nd];
        d[round % d.len()]
    };
    let mut out = Vec::new();
    for k in 0..n {
        out.push(Task {
            kind: Kind::OneChunk,
            domain: domain.to_owned(),
            chunks: vec![pick(k, k / nd)],
        });
    }
    if nd >= 2 {
        for k in 0..n {
            let a = 2 * k;
            out.push(Task {
                kind: Kind::TwoChunks,
                domain: domain.to_owned(),
                chunks: vec![pick(a, a / nd), pick(a + 1, (a + 1) / nd)],
            });
        }
    }
    for k in 0..n {
        let mut chunks = vec![pick(k, k / nd + 1)];
        if nd >= 2 {
            chunks.push(pick(k + 1, k / nd + 1));
        }
        out.push(Task {
            kind: Kind::Unanswerable,
            domain: domain.to_owned(),
            chunks,
        });
    }
    out
}

/// The requests: each domain's, taken in turn across domains, cut at `limit`.
fn sample(chunks: &[Chunk], n: usize, limit: Option<usize>) -> Vec<Task<'_>> {
    let mut lists: Vec<std::collections::VecDeque<Task<'_>>> = by_domain(chunks)
        .iter()
        .map(|(d, docs)| tasks_of(d, docs, n).into())
        .collect();
    let mut out = Vec::new();
    loop {
        let mut any = false;
        for l in &mut lists {
            if let Some(t) = l.pop_front() {
                out.push(t);
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    if let Some(l) = limit {
        out.truncate(l);
    }
    out
}

fn cut(text: &str) -> &str {
    match text.char_indices().nth(MAX_PASSAGE) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// The user message of one request (layout fixed by the prompt's version).
fn user_message(t: &Task<'_>, language: Language) -> String {
    let mut m = format!(
        "Kind: {}\nLanguage: {}\nDomain: {}\n\nPassages:\n",
        t.kind.as_str(),
        language.name(),
        if t.domain.is_empty() {
            "(none)"
        } else {
            &t.domain
        }
    );
    for c in &t.chunks {
        m.push_str(&format!(
            "\n[{}] (document {})\n{}\n",
            c.id,
            c.doc_id.as_deref().unwrap_or(&c.id),
            cut(c.text.as_deref().unwrap_or("")).trim()
        ));
    }
    m
}

/// The JSON schema of a reply.
pub fn reply_schema() -> JsonSchema {
    JsonSchema {
        name: "golden_draft".into(),
        schema: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["question", "quotes", "why"],
            "properties": {
                "question": {"type": "string"},
                "quotes": {"type": "array", "items": {
                    "type": "object", "additionalProperties": false,
                    "required": ["chunk", "quote"],
                    "properties": {"chunk": {"type": "string"}, "quote": {"type": "string"}},
                }},
                "why": {"type": "string"},
            },
        }),
    }
}

/// A reply, read and checked against its request.
#[derive(Debug, Clone, PartialEq)]
struct Reply {
    question: String,
    /// `(chunk, quote, start, end)`: characters of the chunk's text, end exclusive.
    quotes: Vec<(String, String, usize, usize)>,
    why: String,
}

fn read_reply(reply: &str, t: &Task<'_>) -> std::result::Result<Reply, String> {
    let o = json_object(reply)?;
    let text = |k: &str| -> std::result::Result<String, String> {
        match o.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
            _ => Err(format!(
                "the reply has no `{k}` text: {:?}",
                crate::chat::excerpt(reply)
            )),
        }
    };
    let question = text("question")?;
    if question.chars().count() > 500 {
        return Err(format!(
            "the question is longer than 500 characters: {:?}",
            crate::chat::excerpt(&question)
        ));
    }
    let why = text("why")?;
    let items = match o.get("quotes") {
        Some(Value::Array(a)) => a.clone(),
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err("`quotes` is not a list".to_owned()),
    };
    let mut quotes = Vec::new();
    for (i, q) in items.iter().enumerate() {
        let (Some(chunk), Some(quote)) = (q["chunk"].as_str(), q["quote"].as_str()) else {
            return Err(format!("quotes[{i}] needs `chunk` and `quote` strings"));
        };
        let Some(c) = t.chunks.iter().find(|c| c.id == chunk) else {
            return Err(format!(
                "quotes[{i}] names chunk {:?}, which was not given",
                crate::chat::excerpt(chunk)
            ));
        };
        let body = c.text.as_deref().unwrap_or("");
        let quote = quote.trim();
        let Some(at) = body.find(quote).filter(|_| !quote.is_empty()) else {
            return Err(format!(
                "quotes[{i}] is not in chunk {chunk}'s text: {:?}",
                crate::chat::excerpt(quote)
            ));
        };
        let start = body[..at].chars().count();
        quotes.push((
            chunk.to_owned(),
            quote.to_owned(),
            start,
            start + quote.chars().count(),
        ));
    }
    let quoted: BTreeSet<&str> = quotes.iter().map(|q| q.0.as_str()).collect();
    match t.kind {
        Kind::Unanswerable if !quotes.is_empty() => {
            return Err("an unanswerable question quotes no passage".to_owned())
        }
        Kind::OneChunk | Kind::TwoChunks => {
            for c in &t.chunks {
                if !quoted.contains(c.id.as_str()) {
                    return Err(format!(
                        "no quote of chunk {}, which the question needs",
                        c.id
                    ));
                }
            }
        }
        Kind::Unanswerable => {}
    }
    Ok(Reply {
        question,
        quotes,
        why,
    })
}

/// The ID of a draft: `d-` and the first 12 hex digits of the SHA-256 of its kind and
/// normalised question (the same draft always gets the same ID).
pub fn draft_id(kind: Kind, question: &str) -> String {
    format!(
        "d-{}",
        &key(&format!("{}\n{}", kind.as_str(), normalize(question)))[..12]
    )
}

/// Drafts candidate cases from the corpus and writes them to `out` (atomically, JSONL, one
/// draft a line, in request order). Replies that could not be read twice are in
/// [`Drafted::failures`]; the rest are written.
pub fn draft(req: &DraftRequest<'_>) -> Result<Drafted> {
    if !(req.merge_cosine > 0.0 && req.merge_cosine <= 1.0) {
        crate::bail!(
            "--merge-cosine must be above 0 and at most 1, got {}",
            req.merge_cosine
        );
    }
    if req.per_domain == 0 {
        crate::bail!("--per-domain must be at least 1");
    }
    let chunks = veredicto_formats::corpus::read_corpus(req.corpus)?;
    let language = detect_language(chunks.iter().filter_map(|c| c.text.as_deref()));
    let tasks = sample(&chunks, req.per_domain, req.limit);
    req.events.status(format!(
        "drafting {} question(s) in {} from {} ({} chunks) with {} at {}",
        tasks.len(),
        language.name(),
        req.corpus.display(),
        chunks.len(),
        req.asker.model(),
        req.asker.url()
    ));
    let schema = reply_schema();
    let mut replies = Vec::new();
    let mut failures = Vec::new();
    for t in &tasks {
        req.events.check()?;
        let user = user_message(t, language);
        match req
            .asker
            .ask(&GOLDEN_DRAFT, &user, &schema, |r| read_reply(r, t))?
        {
            Ok(a) => replies.push((t, a)),
            Err(why) => failures.push(format!(
                "{} ({}): {why}",
                t.chunks
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(" + "),
                t.kind.as_str()
            )),
        }
    }
    // What the golden set asks already, and what a person decided.
    let (asked, decided) = match req.golden {
        Some(g) => (golden_questions(g)?, decided_drafts(g)?),
        None => Default::default(),
    };
    let mut known = 0;
    let mut kept: Vec<(usize, Vec<(String, String)>)> = Vec::new();
    let mut seen_text: BTreeMap<(Kind, String), usize> = BTreeMap::new();
    let vectors = match req.embedder {
        Some(e) => {
            let texts: Vec<&str> = replies
                .iter()
                .map(|(_, a)| a.value.question.as_str())
                .collect();
            Some(e.embed(&texts, TextKind::Query)?)
        }
        None => None,
    };
    let mut merged = 0;
    for (i, (t, a)) in replies.iter().enumerate() {
        let q = &a.value.question;
        let n = normalize(q);
        if asked.contains(&n) || decided.contains(&draft_id(t.kind, q)) {
            known += 1;
            continue;
        }
        // The earliest kept draft of the same kind with the same text, or the most
        // similar of that kind at or above the bound (the earliest on a tie).
        let mut into = seen_text.get(&(t.kind, n.clone())).copied();
        if into.is_none() {
            if let Some(v) = &vectors {
                let mut best: Option<(f32, usize)> = None;
                for (k, (j, _)) in kept.iter().enumerate() {
                    if replies[*j].0.kind != t.kind {
                        continue;
                    }
                    let c = cosine(&v[i], &v[*j]);
                    if c >= req.merge_cosine && best.is_none_or(|(b, _)| c > b) {
                        best = Some((c, k));
                    }
                }
                into = best.map(|(_, k)| k);
            }
        }
        match into {
            Some(k) => {
                merged += 1;
                kept[k].1.push((draft_id(t.kind, q), q.clone()));
            }
            None => {
                seen_text.insert((t.kind, n), kept.len());
                kept.push((i, Vec::new()));
            }
        }
    }
    let mut drafts = Vec::new();
    let mut text = String::new();
    for (i, merged_here) in &kept {
        let (t, a) = &replies[*i];
        let v = record(t, a, merged_here);
        text.push_str(&serde_json::to_string(&v)?);
        text.push('\n');
        drafts.push(v);
    }
    crate::files::write_atomic(req.out, text.as_bytes())
        .map_err(|e| Error::Message(format!("writing {}: {e}", req.out.display())))?;
    Ok(Drafted {
        drafts,
        language,
        merged,
        known,
        failures,
        tally: req.asker.tally(),
    })
}

fn record(t: &Task<'_>, a: &crate::chat::Answer<Reply>, merged: &[(String, String)]) -> Value {
    let r = &a.value;
    let expected: Vec<&str> = match t.kind {
        Kind::Unanswerable => Vec::new(),
        _ => t.chunks.iter().map(|c| c.id.as_str()).collect(),
    };
    let mut o = Map::new();
    o.insert("id".into(), json!(draft_id(t.kind, &r.question)));
    o.insert("query".into(), json!(r.question));
    o.insert("expected".into(), json!(expected));
    if !t.domain.is_empty() {
        o.insert("domain".into(), json!(t.domain));
    }
    o.insert("origin".into(), json!("draft"));
    o.insert("kind".into(), json!(t.kind.as_str()));
    o.insert(
        "quotes".into(),
        Value::Array(
            r.quotes
                .iter()
                .map(|(chunk, quote, start, end)| {
                    let doc = t
                        .chunks
                        .iter()
                        .find(|c| &c.id == chunk)
                        .and_then(|c| c.doc_id.clone());
                    json!({"chunk": chunk, "doc_id": doc, "quote": quote, "start": start, "end": end})
                })
                .collect(),
        ),
    );
    if t.kind == Kind::Unanswerable {
        o.insert(
            "shown".into(),
            json!(t.chunks.iter().map(|c| c.id.as_str()).collect::<Vec<_>>()),
        );
    }
    o.insert("why".into(), json!(r.why));
    o.insert(
        "drafted".into(),
        json!({"model": a.model, "prompt": GOLDEN_DRAFT.fingerprint(), "input": a.input}),
    );
    if !merged.is_empty() {
        o.insert(
            "merged".into(),
            Value::Array(
                merged
                    .iter()
                    .map(|(id, q)| json!({"id": id, "query": q}))
                    .collect(),
            ),
        );
    }
    Value::Object(o)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        ab += f64::from(*x) * f64::from(*y);
        aa += f64::from(*x) * f64::from(*x);
        bb += f64::from(*y) * f64::from(*y);
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        (ab / (aa.sqrt() * bb.sqrt())) as f32
    }
}

/// The normalised questions of a golden JSONL file (absent: none).
fn golden_questions(golden: &Path) -> Result<BTreeSet<String>> {
    Ok(objects(golden)?
        .into_iter()
        .filter_map(|(_, o)| o.get("query").and_then(Value::as_str).map(normalize))
        .collect())
}

/// The drafts accepted or rejected in the golden file's log.
fn decided_drafts(golden: &Path) -> Result<BTreeSet<String>> {
    let path = crate::workbench::log_path(golden);
    let bytes = crate::workbench::read_bytes(&path)?;
    let mut out = BTreeSet::new();
    for line in String::from_utf8_lossy(&bytes).lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if matches!(v["action"].as_str(), Some("accept_draft" | "reject_draft")) {
            if let Some(id) = v["draft"].as_str() {
                out.insert(id.to_owned());
            }
        }
    }
    Ok(out)
}

/// The objects of a JSONL file with their line numbers (1-based; absent file: none).
/// Largest drafts or golden file read here (1 GiB).
const MAX_FILE: u64 = 1 << 30;

/// Refuses a file larger than [`MAX_FILE`], naming it.
fn bounded(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_FILE => Err(Error::Message(format!(
            "{}: larger than {MAX_FILE} bytes",
            path.display()
        ))),
        _ => Ok(()),
    }
}

fn objects(path: &Path) -> Result<Vec<(usize, Map<String, Value>)>> {
    bounded(path)?;
    let bytes = crate::workbench::read_bytes(path)?;
    let mut out = Vec::new();
    for (i, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Map<String, Value> = serde_json::from_str(line).map_err(|e| {
            Error::Message(format!(
                "{}: line {}: {}",
                path.display(),
                i + 1,
                veredicto_core::redact::short(&e.to_string())
            ))
        })?;
        out.push((i + 1, v));
    }
    Ok(out)
}

/// The cases of a golden JSONL file that are drafts no person accepted (`origin:
/// "draft"`), as `(line, id)`; none for a file that is not JSONL (a BEIR folder, SQLite).
pub fn unaccepted(golden: &Path) -> Result<Vec<(usize, String)>> {
    if !golden.is_file()
        || golden
            .extension()
            .is_some_and(|e| e == "db" || e == "sqlite")
    {
        return Ok(Vec::new());
    }
    bounded(golden)?;
    // A line that is not a JSON object is left to the golden set's reader, whose error
    // names its field (and which reads a byte-order mark).
    let bytes = crate::workbench::read_bytes(golden)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let line = line.trim_start_matches('\u{feff}');
            let o: Map<String, Value> = serde_json::from_str(line).ok()?;
            (o.get("origin").and_then(Value::as_str) == Some("draft")).then(|| {
                (
                    i + 1,
                    o.get("id").and_then(Value::as_str).unwrap_or("").to_owned(),
                )
            })
        })
        .collect())
}

/// A person's decision on a draft.
#[derive(Debug, Clone)]
pub struct Decision<'a> {
    /// The drafts file (`golden draft --out`).
    pub drafts: &'a Path,
    /// The golden file an accepted draft moves into.
    pub golden: &'a Path,
    pub id: &'a str,
    /// Why (required).
    pub reason: &'a str,
    /// The reviewer.
    pub who: &'a str,
    /// When (RFC 3339).
    pub at: &'a str,
}

/// What a decision did.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The case as it now reads in the golden file (accepted), or the draft rejected.
    pub case: Value,
    /// The line of the golden file it was written to (accepted).
    pub line: Option<usize>,
    /// Drafts left in the drafts file.
    pub left: usize,
}

/// An exclusive lock on `<golden>.lock`, held until dropped: decisions from two
/// processes are serialised.
struct Lock(std::fs::File);

fn lock(golden: &Path) -> Result<Lock> {
    let mut name = golden.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let path = golden.with_file_name(name);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::Message(format!("{}: {e}", path.display())))?;
    f.lock()
        .map_err(|e| Error::Message(format!("{}: {e}", path.display())))?;
    Ok(Lock(f))
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// The draft `id` of the drafts file, with every other line kept as it is.
fn take_draft(d: &Decision<'_>) -> Result<(Map<String, Value>, Vec<u8>, usize)> {
    let reason = d.reason.trim();
    if reason.is_empty() {
        crate::bail!("draft {}: a decision needs a reason (--reason)", d.id);
    }
    if d.who.trim().is_empty() {
        crate::bail!("draft {}: a decision needs a reviewer (--reviewer)", d.id);
    }
    bounded(d.drafts)?;
    let bytes = std::fs::read(d.drafts)
        .map_err(|e| Error::Message(format!("{}: {e}", d.drafts.display())))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut found = None;
    let mut rest = String::new();
    let mut left = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let o: Map<String, Value> = serde_json::from_str(line).map_err(|e| {
            Error::Message(format!(
                "{}: line {}: {}",
                d.drafts.display(),
                i + 1,
                veredicto_core::redact::short(&e.to_string())
            ))
        })?;
        if found.is_none() && o.get("id").and_then(Value::as_str) == Some(d.id) {
            if o.get("origin").and_then(Value::as_str) != Some("draft") {
                crate::bail!(
                    "{}: line {}: origin: draft {} is not a draft (origin {})",
                    d.drafts.display(),
                    i + 1,
                    d.id,
                    o.get("origin")
                        .map(Value::to_string)
                        .unwrap_or("missing".into())
                );
            }
            found = Some(o);
        } else {
            rest.push_str(line);
            if !line.ends_with('\n') {
                rest.push('\n');
            }
            left += 1;
        }
    }
    let Some(o) = found else {
        crate::bail!("{}: no draft with id {:?}", d.drafts.display(), d.id);
    };
    Ok((o, rest.into_bytes(), left))
}

/// Accepts the draft `id`: its case is appended to the golden file (temp file + rename)
/// with `origin: "accepted"`, the reviewer, the time and the reason, the draft leaves the
/// drafts file, and the decision is appended to the golden file's log. An unanswerable
/// draft is refused (a golden case needs the chunks that answer it).
pub fn accept(d: &Decision<'_>) -> Result<Decided> {
    let _lock = lock(d.golden)?;
    let (mut o, rest, left) = take_draft(d)?;
    if o.get("kind").and_then(Value::as_str) == Some(Kind::Unanswerable.as_str()) {
        crate::bail!(
            "draft {}: an unanswerable question has no expected chunks, and a golden case needs them; reject it, or keep it in {}",
            d.id,
            d.drafts.display()
        );
    }
    let golden_bytes = crate::workbench::read_bytes(d.golden)?;
    if objects(d.golden)?
        .iter()
        .any(|(_, c)| c.get("id").and_then(Value::as_str) == Some(d.id))
    {
        crate::bail!(
            "{}: a case with id {:?} already exists",
            d.golden.display(),
            d.id
        );
    }
    o.insert("origin".into(), json!("accepted"));
    o.insert(
        "accepted".into(),
        json!({"by": d.who.trim(), "at": d.at, "reason": d.reason.trim()}),
    );
    let mut bytes = golden_bytes;
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    let line = String::from_utf8_lossy(&bytes).lines().count() + 1;
    bytes.extend_from_slice(serde_json::to_string(&o)?.as_bytes());
    bytes.push(b'\n');
    crate::workbench::replace_golden(d.golden, &bytes)?;
    crate::files::write_atomic(d.drafts, &rest)
        .map_err(|e| Error::Message(format!("{}: {e}", d.drafts.display())))?;
    crate::workbench::append_log(
        d.golden,
        &json!({"at": d.at, "who": d.who.trim(), "action": "accept_draft", "draft": d.id,
                "file": d.golden.file_name().map(|n| n.to_string_lossy().into_owned()),
                "line": line, "reason": d.reason.trim(), "case": Value::Object(o.clone())}),
    )?;
    Ok(Decided {
        case: Value::Object(o),
        line: Some(line),
        left,
    })
}

/// Rejects the draft `id`: it leaves the drafts file and the decision, with the draft and
/// the reason, is appended to the golden file's log (a later `golden draft` skips it).
pub fn reject(d: &Decision<'_>) -> Result<Decided> {
    let _lock = lock(d.golden)?;
    let (o, rest, left) = take_draft(d)?;
    crate::files::write_atomic(d.drafts, &rest)
        .map_err(|e| Error::Message(format!("{}: {e}", d.drafts.display())))?;
    crate::workbench::append_log(
        d.golden,
        &json!({"at": d.at, "who": d.who.trim(), "action": "reject_draft", "draft": d.id,
                "reason": d.reason.trim(), "case": Value::Object(o.clone())}),
    )?;
    Ok(Decided {
        case: Value::Object(o),
        line: None,
        left,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, doc: &str, domain: &str, text: &str) -> Chunk {
        Chunk {
            id: id.into(),
            doc_id: Some(doc.into()),
            text: Some(text.into()),
            representation: None,
            domain: Some(domain.into()),
            labels: Vec::new(),
            valid_from: None,
            valid_to: None,
            ingest_batch: None,
            facets: Default::default(),
            start: None,
            end: None,
        }
    }

    #[test]
    fn spanish_and_english_are_told_apart() {
        assert_eq!(
            detect_language(["¿Cuántos días de vacaciones corresponden según el convenio?"]),
            Language::Spanish
        );
        assert_eq!(
            detect_language(["How many days of leave are granted by the agreement?"]),
            Language::English
        );
    }

    #[test]
    fn sampling_takes_domains_and_documents_in_turn_whatever_the_file_order() {
        let mut chunks = vec![
            chunk("a1", "A", "x", "t"),
            chunk("a2", "A", "x", "t"),
            chunk("b1", "B", "x", "t"),
            chunk("c1", "C", "y", "t"),
        ];
        let ids = |c: &[Chunk]| {
            sample(c, 1, None)
                .iter()
                .map(|t| {
                    format!(
                        "{}:{}",
                        t.kind.as_str(),
                        t.chunks
                            .iter()
                            .map(|c| c.id.as_str())
                            .collect::<Vec<_>>()
                            .join("+")
                    )
                })
                .collect::<Vec<_>>()
        };
        let first = ids(&chunks);
        chunks.reverse();
        assert_eq!(ids(&chunks), first);
        // Domains alternate; y has one document, so no two-chunk draft there.
        let kinds: Vec<&str> = first.iter().map(|s| s.split(':').next().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "one_chunk",
                "one_chunk",
                "two_chunks",
                "unanswerable",
                "unanswerable"
            ]
        );
        let two = first.iter().find(|s| s.starts_with("two")).unwrap();
        assert!(two.contains("b1"), "{two}");
        assert_eq!(sample(&chunks, 1, Some(2)).len(), 2);
    }

    #[test]
    fn a_reply_must_quote_the_passages_it_needs() {
        let c = [chunk(
            "c1",
            "D",
            "x",
            "Se conceden 23 días hábiles de vacaciones.",
        )];
        let t = Task {
            kind: Kind::OneChunk,
            domain: "x".into(),
            chunks: c.iter().collect(),
        };
        let ok = read_reply(
            r#"{"question": "¿cuántos días de vacaciones?", "quotes": [{"chunk": "c1", "quote": "23 días hábiles"}], "why": "lo dice"}"#,
            &t,
        )
        .unwrap();
        assert_eq!(ok.quotes[0].2, 12);
        assert_eq!(ok.quotes[0].3, 27);
        for bad in [
            r#"{"question": "q", "quotes": [{"chunk": "c1", "quote": "30 días"}], "why": "w"}"#,
            r#"{"question": "q", "quotes": [{"chunk": "c9", "quote": "23"}], "why": "w"}"#,
            r#"{"question": "q", "quotes": [], "why": "w"}"#,
            r#"{"quotes": [], "why": "w"}"#,
            "Sure! Here is a question.",
        ] {
            assert!(read_reply(bad, &t).is_err(), "{bad}");
        }
    }

    #[test]
    fn ids_follow_the_question() {
        assert_eq!(
            draft_id(Kind::OneChunk, "¿Cuántos días?"),
            draft_id(Kind::OneChunk, "cuantos dias")
        );
        assert_ne!(
            draft_id(Kind::OneChunk, "x"),
            draft_id(Kind::Unanswerable, "x")
        );
    }
}
