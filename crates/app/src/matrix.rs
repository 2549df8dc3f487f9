//! The matrix: the exam once per declared configuration, each recorded in the history with
//! its configuration and labelled with its name, then one row per configuration with the
//! trend of its recorded runs on the same golden set.

use std::path::{Path, PathBuf};
use veredicto_formats::matrix::{ChunkSpec, Matrix, MatrixConfig};
use veredicto_report::matrix::MatrixRow;

use crate::history::HistorySpec;
use crate::{Context, Events, ExamOutcome, Result};

/// Recorded runs of a configuration its recall trend shows, newest last.
pub const TREND_RUNS: usize = 10;

/// One configuration's exam, as the caller ran it: the outcome, and the history it was
/// recorded in (`None` when not recorded).
#[derive(Debug)]
pub struct ConfigRun {
    /// The exam's outcome.
    pub outcome: ExamOutcome,
    /// Where the run was recorded.
    pub history: Option<HistorySpec>,
}

/// What a matrix gives: one row per configuration, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixOutcome {
    /// The rows.
    pub rows: Vec<MatrixRow>,
}

impl MatrixOutcome {
    /// Whether every configuration was accepted.
    pub fn accepted(&self) -> bool {
        self.rows.iter().all(|r| r.verdict == "accept")
    }
}

/// Runs `exam` for every configuration of `matrix` (read from `file`, which errors name)
/// and gathers the rows; each configuration's trend is read from the history its run was
/// recorded in. The caller runs one exam from a configuration (it resolves the exam's
/// settings as its own exam command does).
pub fn run_matrix(
    matrix: &Matrix,
    file: &Path,
    exam: &mut dyn FnMut(&MatrixConfig) -> Result<ConfigRun>,
) -> Result<MatrixOutcome> {
    let mut rows = Vec::new();
    let mut history = None;
    for c in &matrix.configs {
        let run = exam(c).with_context(|| {
            format!(
                "{}: configuration `{}`",
                file.display(),
                veredicto_core::redact::short(&c.name)
            )
        })?;
        let outcome = run.outcome;
        if run.history.is_some() {
            history = run.history;
        }
        let s = &outcome.report.summary;
        rows.push(MatrixRow {
            name: c.name.clone(),
            verdict: if outcome.accepted() { "accept" } else { "stop" }.into(),
            top_k: outcome.report.policy.top_k,
            cases: s.cases,
            mean_quality: s.mean_quality,
            mean_recall: s.mean_recall,
            mrr: s.mrr,
            mean_ndcg: s.mean_ndcg,
            failing: s.failing,
            run_id: outcome.run_id.clone(),
            recall_trend: Vec::new(),
        });
    }
    // Each configuration's trend: its recorded runs (by label) on this golden set.
    if let Some(spec) = history {
        let store = spec.open_read_only()?;
        for row in rows.iter_mut() {
            let runs = store.list(&veredicto_store::RunFilter {
                label: Some(row.name.clone()),
                limit: Some(TREND_RUNS),
                ..Default::default()
            })?;
            let golden = runs
                .iter()
                .find(|r| Some(&r.id) == row.run_id.as_ref())
                .map(|r| r.golden_fingerprint.clone());
            row.recall_trend = runs
                .iter()
                .rev()
                .filter(|r| Some(&r.golden_fingerprint) == golden.as_ref())
                .map(|r| r.mean_recall)
                .collect();
        }
    }
    Ok(MatrixOutcome { rows })
}

/// What a configuration's `chunk` became: the corpus cut from the documents and the index
/// ingested from it, both kept under the chunking's fingerprint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunked {
    /// `sha256:…` of the documents' bytes and the chunking's parameters (and the tokenizer's
    /// bytes with `unit = "tokens"`).
    pub fingerprint: String,
    /// The corpus (`…/corpus.jsonl`).
    pub corpus: PathBuf,
    /// The index of the corpus with the configuration's model (`…/index-MODEL`).
    pub index: PathBuf,
    /// Whether the corpus was cut now (false: the cached one was reused).
    pub cut: bool,
    /// Chunks embedded now (0: the cached index was up to date).
    pub embedded: usize,
}

/// What [`chunked_index`] reads.
pub struct ChunkedRequest<'a> {
    /// The documents file.
    pub documents: &'a Path,
    /// The chunking.
    pub spec: &'a ChunkSpec,
    /// The configuration's model as written (folder or known name): names the index, and
    /// with `unit = "tokens"` its folder holds the tokenizer.
    pub model: &'a str,
    /// The folder chunkings are kept in (one sub-folder per fingerprint).
    pub cache: &'a Path,
    /// The time recorded for an ingestion batch (RFC 3339).
    pub time: String,
    /// Loads the model to embed with, for the index folder given (only when something is
    /// to be embedded).
    pub embedder: &'a mut dyn FnMut(&Path) -> Result<Box<dyn veredicto_embed::Embedder>>,
    pub events: Events<'a>,
}

/// The chunking's parameters as the chunker takes them.
fn chunking_of(spec: &ChunkSpec) -> Result<crate::chunk::Chunking> {
    use crate::chunk::{Split, Unit};
    Ok(crate::chunk::Chunking {
        size: spec.size,
        overlap: spec.overlap,
        unit: match spec.unit.as_str() {
            "chars" => Unit::Chars,
            "tokens" => Unit::Tokens,
            other => crate::bail!("chunk: unknown unit `{other}`"),
        },
        split: match spec.split.as_str() {
            "text" => Split::Text,
            "markdown" => Split::Markdown,
            "sentences" => Split::Sentences,
            other => crate::bail!("chunk: unknown split `{other}`"),
        },
    })
}

/// Cuts the documents as `spec` says and ingests the corpus into an index with the model,
/// both kept in `cache/FINGERPRINT/`: a chunking already cut is not cut again, and its index
/// embeds only what changed (nothing, when the documents and the chunking are the same).
pub fn chunked_index(req: ChunkedRequest<'_>) -> Result<Chunked> {
    use veredicto_core::fingerprint::{sha256_bytes, sha256_json};
    let chunking = chunking_of(req.spec)?;
    let bytes = std::fs::read(req.documents)
        .with_context(|| format!("reading {}", req.documents.display()))?;
    let tokenizer = (chunking.unit == crate::chunk::Unit::Tokens).then(|| Path::new(req.model));
    let tokenizer_hash = match tokenizer {
        Some(dir) => {
            let file = dir.join("tokenizer.json");
            Some(sha256_bytes(&std::fs::read(&file).with_context(|| {
                format!("reading {} (unit = \"tokens\")", file.display())
            })?))
        }
        None => None,
    };
    let fingerprint = sha256_json(&serde_json::json!({
        "documents": sha256_bytes(&bytes),
        "chunk": req.spec,
        "tokenizer": tokenizer_hash,
    }));
    let short = |h: &str| {
        h.trim_start_matches("sha256:")
            .chars()
            .take(16)
            .collect::<String>()
    };
    let dir = req.cache.join(short(&fingerprint));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let corpus = dir.join("corpus.jsonl");
    let cut = !corpus.exists();
    if cut {
        let documents = veredicto_formats::documents::read_documents(req.documents)?;
        let out = crate::chunk::chunk(&crate::chunk::ChunkRequest {
            documents: &documents,
            chunking,
            tokenizer,
            events: req.events,
        })?;
        crate::files::write_atomic(&corpus, out.text.as_bytes())
            .with_context(|| format!("writing {}", corpus.display()))?;
    }
    let index = dir.join(format!(
        "index-{}",
        short(&sha256_bytes(req.model.as_bytes()))
    ));
    let prepared = crate::ingest::prepare(crate::ingest::IngestRequest {
        corpus: corpus.clone(),
        index: index.clone(),
        time: req.time,
        strict: true,
        ..Default::default()
    })?;
    let embedder = match prepared.needs_embedder() {
        true => Some((req.embedder)(&index)?),
        false => None,
    };
    let done = crate::ingest::ingest(prepared, embedder.as_deref(), req.events)?;
    Ok(Chunked {
        fingerprint,
        corpus,
        index,
        cut,
        embedded: done.embedded,
    })
}
