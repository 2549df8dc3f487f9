//! The workbench's golden-set edits and look-ups (`veredicto serve`): a page of cases, a
//! case appended as one new line of the golden file (temp file + rename, refused when the
//! file changed since the page was read), the append-only log of who changed what and when,
//! and the chunks a question finds in the corpus. The web front end calls only these.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use unicode_segmentation::UnicodeSegmentation;

use crate::{Error, Result};
use veredicto_core::history::RecordedRun;

mod reports;
mod search;
mod trends;

pub use reports::{compare_runs_kept, run_report_html, ReportCache};

pub use search::{search_source, Found, OpenSource, SearchedBy, SourceCache, RETRY_OPEN};
pub use trends::{trends, TrendGroup, TrendsPage};

/// One case of the golden file as the workbench lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRow {
    /// Its line in the golden file (1-based).
    pub line: usize,
    pub id: String,
    pub query: String,
    pub expected: Vec<String>,
}

/// A page of the golden file.
#[derive(Debug, Clone)]
pub struct GoldenPage {
    /// `sha256:…` of the whole file as read: an edit sends it back and is refused when the
    /// file no longer has it.
    pub hash: String,
    /// How many cases the file holds.
    pub total: usize,
    /// The cases of the page, in file order.
    pub rows: Vec<CaseRow>,
}

/// The identity of a file's bytes, as edits compare it.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn read_or_empty(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::Message(format!("{}: {e}", path.display()))),
    }
}

/// Reads `limit` cases from the `offset`-th (0-based) of the golden file (absent: empty).
pub fn golden_page(path: &Path, offset: usize, limit: usize) -> Result<GoldenPage> {
    let bytes = read_or_empty(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut total = 0;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if total >= offset && rows.len() < limit {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| Error::Message(format!("{}: line {}: {e}", path.display(), i + 1)))?;
            rows.push(CaseRow {
                line: i + 1,
                id: v["id"].as_str().unwrap_or("").to_owned(),
                query: v["query"].as_str().unwrap_or("").to_owned(),
                expected: v["expected"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        }
        total += 1;
    }
    Ok(GoldenPage {
        hash: content_hash(&bytes),
        total,
        rows,
    })
}

/// A question added from the workbench.
#[derive(Debug, Clone)]
pub struct NewCase {
    pub id: String,
    pub query: String,
    pub expected: Vec<String>,
    /// Evidence spans instead of chunk IDs (a case gives one or the other).
    pub evidence: Vec<crate::golden_edits::Span>,
}

/// What became of an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Written; the file's new identity.
    Written { hash: String },
    /// Refused: the file changed since the page was read (its identity now).
    Stale { current: String },
}

/// The append-only log beside a golden file (`golden.jsonl` → `golden.jsonl.log`).
pub fn log_path(golden: &Path) -> PathBuf {
    let mut name = golden.file_name().unwrap_or_default().to_os_string();
    name.push(".log");
    golden.with_file_name(name)
}

/// Appends `case` as one new line of the golden file, unless the file's identity is no
/// longer `read_hash` (then nothing is written). The file is replaced atomically (a temp
/// file in its folder, synced, renamed); the log line (`who`, `at`, what) is appended and
/// synced after. Callers serialise edits of one file (the workbench holds a lock).
pub fn add_case(
    golden: &Path,
    read_hash: &str,
    case: &NewCase,
    who: &str,
    at: &str,
) -> Result<Saved> {
    let id = case.id.trim();
    if id.is_empty() || case.query.trim().is_empty() {
        return Err(Error::Message(
            "a new case needs an id and a query".to_owned(),
        ));
    }
    if !case.expected.is_empty() && !case.evidence.is_empty() {
        return Err(Error::Message(format!(
            "case {id}: a case gives chunk IDs or evidence spans, not both"
        )));
    }
    // A golden case says what answers it; a bare question waits among the drafts.
    if case.expected.iter().all(|e| e.trim().is_empty()) && case.evidence.is_empty() {
        return Err(Error::Message(format!(
            "case {id}: pick at least one expected chunk or an evidence span (a question without them waits among the drafts: paste it)"
        )));
    }
    let mut bytes = read_or_empty(golden)?;
    let current = content_hash(&bytes);
    if current != read_hash {
        return Ok(Saved::Stale { current });
    }
    let page = golden_page(golden, 0, usize::MAX)?;
    if page.rows.iter().any(|r| r.id == id) {
        return Err(Error::Message(format!(
            "{}: a case with id {id:?} already exists",
            golden.display()
        )));
    }
    let mut line = Map::new();
    line.insert("id".into(), json!(id));
    line.insert("query".into(), json!(case.query.trim()));
    if case.evidence.is_empty() {
        line.insert("expected".into(), json!(case.expected));
    } else {
        line.insert(
            "evidence".into(),
            Value::Array(case.evidence.iter().map(|s| s.to_json()).collect()),
        );
    }
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    let text = serde_json::to_string(&Value::Object(line.clone()))?;
    bytes.extend_from_slice(text.as_bytes());
    bytes.push(b'\n');
    replace_golden(golden, &bytes)?;
    let entry = json!({"at": at, "who": who, "action": "add_case", "file": golden.file_name().map(|n| n.to_string_lossy().into_owned()), "case": Value::Object(line)});
    append_log(golden, &entry)?;
    // A question waiting to be completed is done once it is a case.
    crate::golden_edits::remove_draft(golden, id)?;
    Ok(Saved::Written {
        hash: content_hash(&bytes),
    })
}

/// Appends one entry to the golden file's log, synced.
pub(crate) fn append_log(golden: &Path, entry: &Value) -> Result<()> {
    let path = log_path(golden);
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| Error::Message(format!("{}: {e}", path.display())))?;
    log.write_all(format!("{}\n", serde_json::to_string(entry)?).as_bytes())?;
    log.sync_all()?;
    Ok(())
}

/// Replaces the golden file's bytes atomically (a temp file in its folder, synced,
/// renamed).
pub(crate) fn replace_golden(golden: &Path, bytes: &[u8]) -> Result<()> {
    let dir = golden
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(golden).map_err(|e| Error::Io(e.error))?;
    Ok(())
}

pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    read_or_empty(path)
}

/// A chunk a question found.
#[derive(Debug, Clone)]
pub struct Hit {
    pub rank: usize,
    pub id: String,
    /// The share of the query's words it holds, or the retriever's score (when it gives one).
    pub score: Option<f64>,
    pub text: String,
    /// The chunk's other fields (domain, labels, validity, batch, …).
    pub metadata: Map<String, Value>,
}

fn terms(text: &str) -> BTreeSet<String> {
    text.unicode_words()
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() > 2)
        .collect()
}

/// The `k` chunks of the corpus file sharing most words with `query` (the share of the
/// query's words a chunk holds; ties by file order). A first look-up that needs no model.
pub fn search_corpus(corpus: &Path, query: &str, k: usize) -> Result<Vec<Hit>> {
    if terms(query).is_empty() {
        return Ok(Vec::new());
    }
    Ok(CorpusIndex::load(corpus)?.search(query, k))
}

/// A corpus file read once for [`search_corpus`]'s look-ups: its chunks and, for each word,
/// the chunks holding it. [`CorpusIndex::is_current`] tells when the file changed since.
#[derive(Debug)]
pub struct CorpusIndex {
    path: PathBuf,
    stamp: Option<(u64, std::time::SystemTime)>,
    chunks: Vec<Map<String, Value>>,
    postings: std::collections::HashMap<String, Vec<u32>>,
    /// Each chunk ID's position in `chunks` (the first, for an ID given twice).
    ids: std::collections::HashMap<String, u32>,
}

fn stamp(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

impl CorpusIndex {
    /// Reads the corpus file (one JSON object a line; a bad line names its number).
    pub fn load(corpus: &Path) -> Result<CorpusIndex> {
        let before = stamp(corpus);
        let text = std::fs::read_to_string(corpus)
            .map_err(|e| Error::Message(format!("{}: {e}", corpus.display())))?;
        let mut chunks = Vec::new();
        let mut postings: std::collections::HashMap<String, Vec<u32>> = Default::default();
        let mut ids: std::collections::HashMap<String, u32> = Default::default();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Map<String, Value> = serde_json::from_str(line).map_err(|e| {
                Error::Message(format!("{}: line {}: {e}", corpus.display(), i + 1))
            })?;
            let at = chunks.len() as u32;
            if let Some(id) = v.get("id").and_then(Value::as_str) {
                ids.entry(id.to_owned()).or_insert(at);
            }
            for w in terms(v.get("text").and_then(Value::as_str).unwrap_or("")) {
                postings.entry(w).or_default().push(at);
            }
            chunks.push(v);
        }
        Ok(CorpusIndex {
            path: corpus.to_path_buf(),
            stamp: before,
            chunks,
            postings,
            ids,
        })
    }

    /// The chunk `id` as a hit (rank 0, no score), when the file holds it.
    pub fn chunk(&self, id: &str) -> Option<Hit> {
        self.ids.get(id).map(|&at| self.hit(at, 0, None))
    }

    fn hit(&self, at: u32, rank: usize, score: Option<f64>) -> Hit {
        let mut v = self.chunks[at as usize].clone();
        let id = v
            .remove("id")
            .and_then(|x| x.as_str().map(str::to_owned))
            .unwrap_or_default();
        let text = v
            .remove("text")
            .and_then(|x| x.as_str().map(str::to_owned))
            .unwrap_or_default();
        Hit {
            rank,
            id,
            score,
            text,
            metadata: v,
        }
    }

    /// Whether the file still has the size and modification time it was read with.
    pub fn is_current(&self) -> bool {
        self.stamp.is_some() && stamp(&self.path) == self.stamp
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `k` chunks sharing most words with `query` (the share of the query's words a
    /// chunk holds; ties by file order).
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit> {
        let wanted = terms(query);
        if wanted.is_empty() {
            return Vec::new();
        }
        let mut shared: std::collections::HashMap<u32, usize> = Default::default();
        for w in &wanted {
            for &c in self.postings.get(w).map(Vec::as_slice).unwrap_or(&[]) {
                *shared.entry(c).or_default() += 1;
            }
        }
        let mut scored: Vec<(f64, u32)> = shared
            .into_iter()
            .map(|(c, n)| (n as f64 / wanted.len() as f64, c))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(k)
            .enumerate()
            .map(|(r, (score, c))| self.hit(c, r + 1, Some(score)))
            .collect()
    }
}

/// The corpus file read as the exam reads it (for the reports' and comparisons' ingest
/// batches), kept between requests and read again when the file changes.
#[derive(Debug, Default)]
pub struct CorpusCache {
    slot: std::sync::Mutex<Option<CachedCorpus>>,
}

#[derive(Debug)]
struct CachedCorpus {
    path: PathBuf,
    stamp: Option<(u64, std::time::SystemTime)>,
    corpus: std::sync::Arc<veredicto_core::case::Corpus>,
}

impl CorpusCache {
    /// An empty cache.
    pub fn new() -> CorpusCache {
        CorpusCache::default()
    }

    /// The corpus at `path`: the copy read before while the file keeps its size and
    /// modification time, else read now.
    pub fn get(&self, path: &Path) -> Result<std::sync::Arc<veredicto_core::case::Corpus>> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot
            .as_ref()
            .filter(|c| c.path == path && c.stamp.is_some() && stamp(path) == c.stamp)
        {
            return Ok(c.corpus.clone());
        }
        let before = stamp(path);
        let corpus =
            std::sync::Arc::new(crate::golden::load_corpus(path, None, crate::Events::silent())?.0);
        *slot = Some(CachedCorpus {
            path: path.to_path_buf(),
            stamp: before,
            corpus: corpus.clone(),
        });
        Ok(corpus)
    }
}

/// The newest `limit` runs of the history, newest first; an absent history has none.
pub fn recent(
    spec: &crate::HistorySpec,
    limit: usize,
) -> Result<Vec<veredicto_core::history::RunSummary>> {
    recent_before(spec, None, limit)
}

/// The newest `limit` runs recorded before the run `before` (all runs: `None`), newest
/// first: a page of the runs list. An absent history has none.
pub fn recent_before(
    spec: &crate::HistorySpec,
    before: Option<&str>,
    limit: usize,
) -> Result<Vec<veredicto_core::history::RunSummary>> {
    let history = match spec.open_read_only() {
        Ok(h) => h,
        Err(_) => return Ok(Vec::new()),
    };
    Ok(history.list(&veredicto_store::RunFilter {
        limit: Some(limit),
        before: before.map(str::to_owned),
        ..veredicto_store::RunFilter::default()
    })?)
}

/// A case's result in the newest run of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct LastResult {
    /// The run it comes from.
    pub run: String,
    pub passed: bool,
    pub recall: f64,
    /// Each expected chunk with its rank (`None`: not retrieved).
    pub ranks: Vec<(String, Option<usize>)>,
}

/// The newest run's result of each case, by case ID (empty without a history or a run).
pub fn last_results(
    spec: &crate::HistorySpec,
) -> Result<std::collections::BTreeMap<String, LastResult>> {
    last_results_in(spec, &RunCache::new())
}

/// [`last_results`], the newest run read through `cache` (read once while it stays the
/// newest).
pub fn last_results_in(
    spec: &crate::HistorySpec,
    cache: &RunCache,
) -> Result<std::collections::BTreeMap<String, LastResult>> {
    let newest = recent(spec, 1)?;
    let Some(summary) = newest.first() else {
        return Ok(Default::default());
    };
    let run = cache.get(spec, &summary.id)?;
    Ok(run
        .report
        .cases
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                LastResult {
                    run: summary.id.clone(),
                    passed: c.passed,
                    recall: c.recall,
                    ranks: c.expected.iter().map(|e| (e.id.clone(), e.rank)).collect(),
                },
            )
        })
        .collect())
}

/// Recorded runs kept decoded between requests, by history and run ID. A recorded run never
/// changes (the history is append-only and sealed), so a copy read once stays right; the
/// last [`RunCache::CAPACITY`] runs read are kept.
#[derive(Debug, Default)]
pub struct RunCache {
    runs: std::sync::Mutex<std::collections::VecDeque<(String, std::sync::Arc<RecordedRun>)>>,
}

impl RunCache {
    /// Runs kept.
    pub const CAPACITY: usize = 4;

    /// An empty cache.
    pub fn new() -> RunCache {
        RunCache::default()
    }

    /// The run `id` (an ID, a unique prefix or `latest`) of the history `spec`: the copy
    /// read before, else read now.
    pub fn get(&self, spec: &crate::HistorySpec, id: &str) -> Result<std::sync::Arc<RecordedRun>> {
        let history = spec.open_read_only()?;
        let full = history.resolve(id)?;
        let key = format!("{}\n{full}", spec.as_str());
        {
            let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, run)) = runs.iter().find(|(k, _)| *k == key) {
                return Ok(run.clone());
            }
        }
        let run = std::sync::Arc::new(history.get(&full)?);
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.retain(|(k, _)| *k != key);
        runs.push_front((key, run.clone()));
        runs.truncate(Self::CAPACITY);
        Ok(run)
    }
}

/// A graded judgment of a chunk for a case, made on the workbench: stored beside the golden
/// set (never inside it until a person promotes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
    /// The chunk answers the question: the golden set may be incomplete.
    Relevant,
    /// It answers part of it.
    Partly,
    /// It does not answer it.
    Not,
}

impl Grade {
    /// `relevant`, `partly`, `not`.
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Relevant => "relevant",
            Grade::Partly => "partly",
            Grade::Not => "not",
        }
    }
}

impl std::str::FromStr for Grade {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Grade, String> {
        match s {
            "relevant" => Ok(Grade::Relevant),
            "partly" => Ok(Grade::Partly),
            "not" => Ok(Grade::Not),
            other => Err(format!("`{other}` is not a grade (relevant, partly, not)")),
        }
    }
}

/// The judgments log beside a golden file (`golden.jsonl` → `golden.jsonl.judgments.jsonl`).
pub fn judgments_path(golden: &Path) -> PathBuf {
    let mut name = golden.file_name().unwrap_or_default().to_os_string();
    name.push(".judgments.jsonl");
    golden.with_file_name(name)
}

/// Appends one judgment (`who`, `at`, the case, the chunk, the grade, the run it was seen
/// in) to the judgments log, synced. Callers serialise appends (the workbench holds a lock).
pub fn judge_chunk(
    golden: &Path,
    case: &str,
    chunk: &str,
    grade: Grade,
    run: &str,
    who: &str,
    at: &str,
) -> Result<()> {
    if case.trim().is_empty() || chunk.trim().is_empty() {
        return Err(Error::Message(
            "a judgment needs a case and a chunk".to_owned(),
        ));
    }
    let entry = json!({"at": at, "who": who, "case": case, "chunk": chunk, "grade": grade.as_str(), "run": run});
    let path = judgments_path(golden);
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| Error::Message(format!("{}: {e}", path.display())))?;
    log.write_all(format!("{}\n", serde_json::to_string(&entry)?).as_bytes())?;
    log.sync_all()?;
    Ok(())
}

/// The latest judgment of each (case, chunk) in the log (absent: none).
pub fn judgments(
    golden: &Path,
) -> Result<std::collections::BTreeMap<(String, String), (Grade, String)>> {
    let path = judgments_path(golden);
    let bytes = read_or_empty(&path)?;
    let mut out = std::collections::BTreeMap::new();
    for (i, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| Error::Message(format!("{}: line {}: {e}", path.display(), i + 1)))?;
        let field = |k: &str| v[k].as_str().unwrap_or("").to_owned();
        let grade: Grade = field("grade").parse().map_err(|e: String| {
            Error::Message(format!("{}: line {}: grade: {e}", path.display(), i + 1))
        })?;
        out.insert((field("case"), field("chunk")), (grade, field("who")));
    }
    Ok(out)
}

/// The chunks rated relevant (their latest rating) that outrank an expected chunk of a case
/// in `run`, as `(case, chunk)` pairs in case order: the golden set may be incomplete there.
pub fn relevant_outranking(
    golden: &Path,
    run: &veredicto_core::history::RecordedRun,
) -> Result<Vec<(String, String)>> {
    let judged = judgments(golden)?;
    let mut out = Vec::new();
    for c in &run.report.cases {
        let mut seen = BTreeSet::new();
        for f in &c.diagnosis {
            for o in &f.outranked_by {
                if seen.insert(o.id.clone())
                    && matches!(
                        judged.get(&(c.id.clone(), o.id.clone())),
                        Some((Grade::Relevant, _))
                    )
                {
                    out.push((c.id.clone(), o.id.clone()));
                }
            }
        }
    }
    Ok(out)
}

/// One row of a case's ranked list.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedRow {
    /// 1-based rank; `None` for an expected chunk the run did not return.
    pub rank: Option<usize>,
    pub id: String,
    pub score: Option<f64>,
    /// An expected chunk of the case.
    pub expected: bool,
    /// The ingest batch of an outranking chunk, when the run recorded it.
    pub batch: Option<String>,
}

/// A case of a recorded run with its ranked list.
#[derive(Debug, Clone)]
pub struct CaseRanking {
    /// The run's ID.
    pub run: String,
    /// The case as the run recorded it.
    pub case: veredicto_core::exam::CaseResult,
    /// Its expected chunks and the chunks the diagnosis found outranking them, by rank
    /// (expected chunks not returned last).
    pub rows: Vec<RankedRow>,
}

/// The ranked list of `case` in the recorded run `run`: what the report knows of it (the
/// expected chunks' ranks, the outranking chunks with their batches).
pub fn case_ranking(spec: &crate::HistorySpec, run: &str, case: &str) -> Result<CaseRanking> {
    case_ranking_in(spec, &RunCache::new(), run, case)
}

/// [`case_ranking`], the run read through `cache`.
pub fn case_ranking_in(
    spec: &crate::HistorySpec,
    cache: &RunCache,
    run: &str,
    case: &str,
) -> Result<CaseRanking> {
    let recorded = cache.get(spec, run)?;
    let Some(c) = recorded.report.cases.iter().find(|c| c.id == case) else {
        return Err(Error::Message(format!(
            "run {}: no case {case:?}",
            recorded.meta.id
        )));
    };
    let mut rows: Vec<RankedRow> = c
        .expected
        .iter()
        .map(|e| RankedRow {
            rank: e.rank,
            id: e.id.clone(),
            score: e.score,
            expected: true,
            batch: None,
        })
        .collect();
    for f in &c.diagnosis {
        for o in &f.outranked_by {
            if !rows.iter().any(|r| r.id == o.id) {
                rows.push(RankedRow {
                    rank: Some(o.rank),
                    id: o.id.clone(),
                    score: o.score,
                    expected: false,
                    batch: o.ingest_batch.clone(),
                });
            }
        }
    }
    rows.sort_by_key(|r| (r.rank.is_none(), r.rank, r.id.clone()));
    Ok(CaseRanking {
        run: recorded.meta.id.clone(),
        case: c.clone(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_without_expected_chunks_or_spans_is_refused_and_nothing_written() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("golden.jsonl");
        let before = "{\"id\":\"a\",\"query\":\"q\",\"expected\":[\"c1\"]}\n";
        std::fs::write(&g, before).unwrap();
        let page = golden_page(&g, 0, 10).unwrap();
        let case = NewCase {
            id: "b".into(),
            query: "otra".into(),
            expected: vec![" ".into()],
            evidence: Vec::new(),
        };
        let e = add_case(&g, &page.hash, &case, "ana", "t").unwrap_err();
        assert!(
            e.to_string().contains("pick at least one expected chunk"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&g).unwrap(), before);
        assert!(!log_path(&g).exists());
    }

    #[test]
    fn an_edit_on_a_stale_page_is_refused_and_a_fresh_one_appends_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("golden.jsonl");
        std::fs::write(&g, "{\"id\":\"a\",\"query\":\"q\",\"expected\":[\"c1\"]}\n").unwrap();
        let page = golden_page(&g, 0, 10).unwrap();
        let case = NewCase {
            id: "b".into(),
            query: "otra".into(),
            expected: vec!["c2".into()],
            evidence: Vec::new(),
        };
        assert!(matches!(
            add_case(&g, "sha256:old", &case, "ana", "t").unwrap(),
            Saved::Stale { .. }
        ));
        assert!(matches!(
            add_case(&g, &page.hash, &case, "ana", "t").unwrap(),
            Saved::Written { .. }
        ));
        let text = std::fs::read_to_string(&g).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.ends_with("{\"id\":\"b\",\"query\":\"otra\",\"expected\":[\"c2\"]}\n"));
        assert_eq!(
            std::fs::read_to_string(log_path(&g))
                .unwrap()
                .lines()
                .count(),
            1
        );
    }

    #[test]
    fn judgments_are_appended_beside_the_golden_set_and_the_latest_counts() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("golden.jsonl");
        std::fs::write(&g, "").unwrap();
        judge_chunk(&g, "a", "c9", Grade::Relevant, "r1", "ana", "t1").unwrap();
        judge_chunk(&g, "a", "c9", Grade::Partly, "r1", "luis", "t2").unwrap();
        judge_chunk(&g, "a", "c8", Grade::Not, "r1", "ana", "t3").unwrap();
        let j = judgments(&g).unwrap();
        assert_eq!(
            j[&("a".into(), "c9".into())],
            (Grade::Partly, "luis".into())
        );
        assert_eq!(j[&("a".into(), "c8".into())].0, Grade::Not);
        assert_eq!(
            std::fs::read_to_string(&g).unwrap(),
            "",
            "the golden file is untouched"
        );
        assert!(judge_chunk(&g, "a", " ", Grade::Not, "r1", "ana", "t").is_err());
    }

    #[test]
    fn the_corpus_read_once_ranks_by_shared_words_ties_by_file_order_and_knows_when_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("corpus.jsonl");
        std::fs::write(
            &c,
            "{\"id\":\"x\",\"text\":\"días de vacaciones\"}\n{\"id\":\"y\",\"text\":\"vacaciones pagadas\"}\n{\"id\":\"z\",\"text\":\"días de vacaciones pagadas\",\"batch\":\"b2\"}\n",
        )
        .unwrap();
        let index = CorpusIndex::load(&c).unwrap();
        let hits = index.search("vacaciones pagadas", 10);
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["y", "z", "x"]);
        assert_eq!(hits[1].metadata["batch"], "b2");
        assert_eq!(hits[2].score, Some(0.5));
        assert_eq!(index.chunk("z").unwrap().metadata["batch"], "b2");
        assert!(index.chunk("w").is_none());
        assert!(index.is_current());
        std::fs::write(&c, "{\"id\":\"x\",\"text\":\"otra cosa\"}\n").unwrap();
        assert!(!index.is_current());
    }
}
