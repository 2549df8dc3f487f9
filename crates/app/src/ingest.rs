//! Ingest: a corpus embedded into veredicto's on-disk exact index, incrementally. In two
//! steps, so that the caller loads a model only when one is needed: [`prepare`] reads and
//! screens the corpus (bad lines are rejected and listed, or refused with `strict`), and
//! [`ingest`] embeds what changed and writes the new version of the index under the
//! writer's lock.

use std::path::{Path, PathBuf};
use std::time::Duration;

use veredicto_core::gate::Rejection;
use veredicto_embed::{Embedder, TextKind};
use veredicto_formats::corpus::CorpusLine;
use veredicto_index::{
    Analyzer, BatchInfo, ChunkInput, ChunkMeta, EmbeddedField, Index, IngestSettings, LexicalWork,
    ModelFingerprint, Plan, WriterLock,
};

use crate::{Context, Error, Events, Result};

/// Which field of a chunk is embedded (a BEIR corpus always embeds title + " " + text).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TextField {
    /// The chunk's `representation`, falling back to `text` when absent.
    #[default]
    Representation,
    /// The chunk's `text`.
    Text,
}

/// One ingest.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestRequest {
    /// Chunk JSONL or a BEIR corpus.jsonl.
    pub corpus: PathBuf,
    /// The index folder (created, or updated incrementally).
    pub index: PathBuf,
    /// Which field is embedded.
    pub field: TextField,
    /// Name of this ingestion batch; default `ingest-TIME`.
    pub batch_label: Option<String>,
    /// Re-embed everything (needed to change the model of an existing index).
    pub rebuild: bool,
    /// The time recorded for the batch (RFC 3339; the caller reads the clock): the same
    /// inputs and time give a byte-identical index.
    pub time: String,
    /// Stop at the first bad corpus line instead of rejecting it.
    pub strict: bool,
    /// Also reject chunks whose `valid_to` is before the day of `time`.
    pub reject_expired: bool,
    /// How long to wait for another ingest into the same index to finish.
    pub lock_wait: Duration,
    /// The BM25 arm: `None` keeps what the index has (updated with the corpus; an index
    /// without one gets none), `Some(Some(analyser))` builds or updates one with that
    /// analyser, `Some(None)` drops it.
    pub bm25: Option<Option<Analyzer>>,
}

impl Default for IngestRequest {
    fn default() -> Self {
        IngestRequest {
            corpus: PathBuf::new(),
            index: PathBuf::new(),
            field: TextField::default(),
            batch_label: None,
            rebuild: false,
            time: String::new(),
            strict: false,
            reject_expired: false,
            lock_wait: Duration::from_secs(300),
            bm25: None,
        }
    }
}

/// A corpus read and screened, ready to be ingested ([`prepare`]).
#[derive(Debug, Clone)]
pub struct Prepared {
    request: IngestRequest,
    rejected: Vec<Rejection>,
    field: EmbeddedField,
    precomputed: Option<Vec<Vec<f32>>>,
    inputs: Vec<ChunkInput>,
}

impl Prepared {
    /// Whether [`ingest`] needs an embedder: the corpus carries no vectors of its own.
    pub fn needs_embedder(&self) -> bool {
        self.precomputed.is_none()
    }

    /// The corpus lines rejected (file, line, chunk, reason).
    pub fn rejected(&self) -> &[Rejection] {
        &self.rejected
    }
}

/// What an ingest did.
#[derive(Debug, Clone, PartialEq)]
pub struct Ingested {
    /// The index folder.
    pub index: PathBuf,
    /// Chunks in the index now.
    pub chunks: usize,
    /// Chunks whose ID was new, whose text changed, that left the corpus.
    pub added: usize,
    /// See `added`.
    pub changed: usize,
    /// See `added`.
    pub removed: usize,
    /// Vectors computed.
    pub embedded: usize,
    /// Vectors not recomputed (unchanged chunks, and new ones whose text was indexed).
    pub reused: usize,
    /// The model's fingerprint as the index records it.
    pub model: ModelFingerprint,
    /// The field embedded.
    pub field: EmbeddedField,
    /// The batch written (`None`: the corpus was the one last ingested; nothing written).
    pub batch: Option<String>,
    /// Chunks embedded truncated, and the model's token limit (when the model can tell).
    pub truncated: Option<(usize, usize)>,
    /// The corpus lines rejected.
    pub rejected: Vec<Rejection>,
    /// The BM25 arm of the index now, and what this ingest did to it (`None`: the index
    /// has none).
    pub bm25: Option<LexicalWork>,
}

impl Ingested {
    /// Whether the index was left as it was.
    pub fn unchanged(&self) -> bool {
        self.batch.is_none()
    }
}

/// The text a chunk contributes to the index, per the field rule.
fn text_of(line: &CorpusLine, field: EmbeddedField) -> Option<&str> {
    let c = &line.chunk;
    match field {
        EmbeddedField::Representation => c.representation.as_deref().or(c.text.as_deref()),
        EmbeddedField::Text | EmbeddedField::TitleText => c.text.as_deref(),
    }
}

/// Corpus lines as index inputs; errors name the file, line and field.
pub fn chunk_inputs(
    path: &Path,
    lines: &[CorpusLine],
    field: EmbeddedField,
) -> Result<Vec<ChunkInput>> {
    lines
        .iter()
        .map(|l| {
            let text = text_of(l, field).ok_or_else(|| {
                Error::msg(format!(
                    "{}:{}: field `text`: missing: the chunk has nothing to embed",
                    path.display(),
                    l.line
                ))
            })?;
            let c = &l.chunk;
            Ok(ChunkInput {
                id: c.id.clone(),
                text: text.to_owned(),
                meta: ChunkMeta {
                    domain: c.domain.clone(),
                    labels: c.labels.clone(),
                    facets: c.facets.clone(),
                    valid_from: c.valid_from.clone(),
                    valid_to: c.valid_to.clone(),
                },
                record: Some(serde_json::Value::Object(l.raw.clone())),
            })
        })
        .collect()
}

/// The fingerprint of vectors supplied in the corpus rather than computed by a model.
pub fn precomputed_fingerprint(dim: usize) -> ModelFingerprint {
    let value =
        serde_json::json!({"name": "precomputed", "architecture": "precomputed", "dim": dim});
    let hash = veredicto_core::fingerprint::sha256_json(&value);
    ModelFingerprint { value, hash }
}

/// The index's view of an embedder's fingerprint; a local model's folder is recorded beside
/// it (`folder`, not part of the hash) so that later commands find the model again.
pub fn index_fingerprint(e: &dyn Embedder) -> veredicto_index::ModelFingerprint {
    let fp = e.fingerprint();
    let mut value = serde_json::to_value(fp).unwrap_or_default();
    if let (Some(folder), Some(obj)) = (e.folder(), value.as_object_mut()) {
        obj.insert(
            "folder".into(),
            serde_json::Value::String(folder.display().to_string()),
        );
    }
    veredicto_index::ModelFingerprint {
        value,
        hash: fp.digest(),
    }
}

/// Refuses an embedder other than the one the index was built with, naming both.
pub fn check_index_model(index: &Index, e: &dyn Embedder) -> Result<()> {
    let given = index_fingerprint(e);
    if given.hash == index.model_hash() {
        return Ok(());
    }
    let name = |v: &serde_json::Value| {
        let n = v.get("name").and_then(|n| n.as_str()).unwrap_or("?");
        match v.get("folder").and_then(|f| f.as_str()) {
            Some(f) => format!("{} ({f})", veredicto_core::redact::short(n)),
            None => veredicto_core::redact::short(n),
        }
    };
    crate::bail!(
        "{}: the index was built with model {} [{}] but model {} [{}] was given; use the same model (or no --model), or rebuild the index with `ingest --rebuild`",
        index.dir().join("manifest.json").display(),
        name(&index.manifest().model),
        index.model_hash(),
        name(&given.value),
        given.hash
    )
}

/// Reads and screens the corpus: the lines to ingest, the rejected ones, the field, and the
/// corpus' own vectors (all lines or none).
pub fn prepare(request: IngestRequest) -> Result<Prepared> {
    let r = &request;
    let (lines, rejected) = if r.strict {
        (
            veredicto_formats::corpus::read_corpus_lines(&r.corpus)?,
            Vec::new(),
        )
    } else {
        let dimension = match r.rebuild {
            true => None,
            false => veredicto_index::Manifest::read(&r.index)
                .ok()
                .map(|m| m.dimension),
        };
        let screened = veredicto_formats::corpus::read_corpus_screened(
            &r.corpus,
            veredicto_formats::corpus::Screen {
                text: match r.field {
                    TextField::Representation => {
                        veredicto_formats::corpus::TextRule::RepresentationOrText
                    }
                    TextField::Text => veredicto_formats::corpus::TextRule::Text,
                },
                today: if r.reject_expired {
                    r.time.get(..10)
                } else {
                    None
                },
                dimension,
            },
        )?;
        if screened.lines.is_empty() {
            if let Some(first) = screened.rejected.first() {
                crate::bail!(
                    "{first} (every one of the {} corpus lines was rejected; nothing written)",
                    screened.rejected.len()
                );
            }
        }
        (screened.lines, screened.rejected)
    };
    if lines.is_empty() {
        crate::bail!("{}: the corpus has no chunks", r.corpus.display());
    }
    let beir = lines.iter().any(|l| l.raw.contains_key("_id"));
    let field = match (beir, r.field) {
        (true, _) => EmbeddedField::TitleText,
        (false, TextField::Representation) => EmbeddedField::Representation,
        (false, TextField::Text) => EmbeddedField::Text,
    };
    // Precomputed vectors: all lines or none.
    let with_vectors = lines.iter().filter(|l| l.vector.is_some()).count();
    let precomputed: Option<Vec<Vec<f32>>> = match with_vectors {
        0 => None,
        n if n == lines.len() => {
            let dim = lines[0].vector.as_ref().map_or(0, Vec::len);
            for l in &lines {
                let got = l.vector.as_ref().map_or(0, Vec::len);
                if got != dim {
                    crate::bail!(
                        "{}:{}: field `vector`: dimension {got}, but the first line has {dim}",
                        r.corpus.display(),
                        l.line
                    );
                }
                if l.vector
                    .as_deref()
                    .and_then(veredicto_index::normalize)
                    .is_none()
                {
                    crate::bail!(
                        "{}:{}: field `vector`: chunk \"{}\": a NaN or infinite component, or all zeros (cannot be normalised)",
                        r.corpus.display(),
                        l.line,
                        veredicto_core::redact::short(&l.chunk.id)
                    );
                }
            }
            Some(
                lines
                    .iter()
                    .map(|l| l.vector.clone().unwrap_or_default())
                    .collect(),
            )
        }
        _ => {
            let first = lines
                .iter()
                .find(|l| l.vector.is_none())
                .map_or(0, |l| l.line);
            crate::bail!(
                "{}:{first}: field `vector`: missing, while other lines carry precomputed vectors (give all or none)",
                r.corpus.display()
            );
        }
    };
    let inputs = chunk_inputs(&r.corpus, &lines, field)?;
    Ok(Prepared {
        rejected,
        field,
        precomputed,
        inputs,
        request,
    })
}

/// Ingests a prepared corpus: `embedder` (needed when [`Prepared::needs_embedder`]) embeds
/// the new and changed chunks, reporting progress through `events`.
pub fn ingest(
    prepared: Prepared,
    embedder: Option<&dyn Embedder>,
    events: Events<'_>,
) -> Result<Ingested> {
    let Prepared {
        request,
        rejected,
        field,
        precomputed,
        inputs,
    } = prepared;
    let r = &request;
    let (model, dimension) = match (embedder, &precomputed) {
        (Some(e), None) => (index_fingerprint(e), e.dim()),
        (_, Some(vectors)) => {
            let dim = vectors.first().map_or(0, Vec::len);
            (precomputed_fingerprint(dim), dim)
        }
        (None, None) => crate::bail!(
            "{}: the corpus carries no vectors: a model is needed to embed it",
            r.corpus.display()
        ),
    };
    let embedder = embedder.filter(|_| precomputed.is_none());
    // Taken before the index is read and kept until the new version is in place, so that
    // no other writer's batch can land in between and be lost.
    let _lock = WriterLock::acquire(&r.index, r.lock_wait)?;
    let old = if r.index.join("manifest.json").is_file() {
        Some(Index::open(&r.index)?)
    } else {
        None
    };
    if let (Some(old), Some(e), false) = (&old, embedder, r.rebuild) {
        check_index_model(old, e)?;
    }
    let settings = IngestSettings {
        model: model.clone(),
        dimension,
        field,
        full_rebuild: r.rebuild,
    };
    // Precomputed vectors belong to their own chunk: their bytes are part of its identity.
    let plan = match precomputed {
        Some(vectors) => Plan::with_vectors(old.as_ref(), inputs, vectors, settings)?,
        None => Plan::new(old.as_ref(), inputs, settings)?,
    }
    .with_rejections(rejected.clone());
    let plan = match r.bm25 {
        Some(choice) => plan.with_lexical(choice),
        None => plan,
    };
    let bm25 = plan.lexical_work();
    // Whether the BM25 arm stays as it is (same analyser, or none before and none asked).
    let old_analyzer = old
        .as_ref()
        .and_then(|o| o.lexical())
        .map(|l| (l.analyzer, l.analyzer_version));
    let lexical_same = match bm25 {
        None => old_analyzer.is_none(),
        Some(w) => old_analyzer == Some((w.analyzer, veredicto_index::lexical::ANALYZER_VERSION)),
    };
    // A corpus identical to the one last ingested, with the same model and field, changes
    // nothing: no batch is written and no index file is touched (unless the index is in an
    // older format: then it is rewritten in the current one, re-embedding nothing).
    let corpus_hash = veredicto_core::fingerprint::sha256_bytes(
        &std::fs::read(&r.corpus).with_context(|| format!("reading {}", r.corpus.display()))?,
    );
    if let Some(o) = old.as_ref().filter(|o| {
        let m = o.manifest();
        !r.rebuild
            && plan.added().is_empty()
            && plan.changed().is_empty()
            && plan.removed().is_empty()
            && m.corpus_hash == corpus_hash
            && m.field == field
            && m.model_hash == model.hash
            && m.format_version == veredicto_index::FORMAT_VERSION
            && lexical_same
    }) {
        // What a rewrite would have checked while copying the vectors: a damaged index is
        // an error here too, not "unchanged".
        o.verify()
            .with_context(|| format!("checking the index {}", r.index.display()))?;
        return Ok(Ingested {
            index: r.index.clone(),
            chunks: o.len(),
            added: 0,
            changed: 0,
            removed: 0,
            embedded: 0,
            reused: o.len(),
            model,
            field,
            batch: None,
            truncated: None,
            rejected,
            bm25: bm25.map(|w| LexicalWork {
                analysed: 0,
                removed: 0,
                rebuilt: false,
                ..w
            }),
        });
    }
    let to_embed = plan.to_embed();
    let (vectors, truncated): (Vec<Vec<f32>>, _) = match embedder {
        Some(e) => {
            let (vectors, truncated) = embed_with_progress(e, &to_embed, events)?;
            (vectors, truncated.map(|n| (n, e.fingerprint().max_tokens)))
        }
        None => (Vec::new(), None),
    };
    let embedded = plan.new_vectors();
    let (added, changed, removed, reused) = (
        plan.added().len(),
        plan.changed().len(),
        plan.removed().len(),
        // Vectors not recomputed: unchanged chunks, and new ones whose text is already indexed.
        plan.unchanged().len() + plan.reused(),
    );
    let batch = BatchInfo {
        name: r
            .batch_label
            .clone()
            .unwrap_or_else(|| format!("ingest-{}", r.time)),
        time: r.time.clone(),
        corpus_hash,
    };
    let index = plan
        .apply(&vectors, &batch, &r.index)
        .with_context(|| format!("writing the index {}", r.index.display()))?;
    Ok(Ingested {
        index: r.index.clone(),
        chunks: index.len(),
        added,
        changed,
        removed,
        embedded,
        reused,
        model,
        field,
        batch: Some(batch.name),
        truncated,
        rejected,
        bm25,
    })
}

/// Embeds passages in slices of 256, reporting progress as events (on stderr: a bar on a
/// terminal, else a line every 5 s, in every output format), and counts those embedded
/// truncated (`None` when the embedder cannot tell).
fn embed_with_progress(
    e: &dyn veredicto_embed::Embedder,
    items: &[(&str, &str)],
    events: Events<'_>,
) -> Result<(Vec<Vec<f32>>, Option<usize>)> {
    const WHAT: &str = "chunks embedded";
    let total = items.len() as u64;
    events.progress(WHAT, 0, total, false);
    let result = embed_slices(e, items, &|done| events.progress(WHAT, done, total, false));
    events.progress(WHAT, total, total, true);
    result
}

fn embed_slices(
    e: &dyn veredicto_embed::Embedder,
    items: &[(&str, &str)],
    progress: &dyn Fn(u64),
) -> Result<(Vec<Vec<f32>>, Option<usize>)> {
    let mut out = Vec::with_capacity(items.len());
    let mut truncated = Some(0usize);
    for slice in items.chunks(256) {
        let texts: Vec<&str> = slice.iter().map(|(_, t)| *t).collect();
        let (vectors, n) = e.embed_counting_truncated(&texts, TextKind::Passage)?;
        out.extend(vectors);
        truncated = truncated.zip(n).map(|(a, b)| a + b);
        progress(out.len() as u64);
    }
    Ok((out, truncated))
}
