//! Incremental ingest: compare a new corpus with the index, embed only what is new, write
//! the new index atomically.

use crate::chunk::{ChunkInput, TextHash};
use crate::error::{IndexError, Result};
use crate::index::Index;
use crate::kernel;
use crate::manifest::{
    files, BatchRecord, BlockSums, EmbeddedField, FileRecord, Manifest, Metric, ModelFingerprint,
    VectorBlocks, FORMAT_NAME, FORMAT_VERSION, ROW_ORDER, VECTOR_BLOCK_ROWS, VECTOR_DTYPE,
};
use crate::table::TableWriter;
use crate::write::{AtomicDir, HashingWriter};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// What the caller says about the embedding of this ingest.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestSettings {
    /// The model's fingerprint; must equal the index's unless `full_rebuild`.
    pub model: ModelFingerprint,
    /// The model's output dimension.
    pub dimension: usize,
    /// Which chunk field the texts come from.
    pub field: EmbeddedField,
    /// Ignore the stored vectors: embed every chunk (required to change model).
    pub full_rebuild: bool,
}

/// The batch an `apply` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchInfo {
    /// The batch label (`ingest_batch`).
    pub name: String,
    /// The time of the ingest, as the caller formats it (e.g. RFC 3339); the library never
    /// reads the clock.
    pub time: String,
    /// The corpus fingerprint (`sha256:...`) computed by the caller.
    pub corpus_hash: String,
}

/// Where a chunk's vector comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Row of the current index.
    Stored(usize),
    /// Position in [`Plan::to_embed`].
    New(usize),
}

/// How a new corpus differs from the index, and which texts need embedding.
///
/// Chunks are keyed by ID and compared by the SHA-256 of the embedded text. Only *added* and
/// *changed* chunks may need embedding, and not even those when a chunk with the same text
/// hash is already in the index (the vector cache is keyed by model fingerprint + text hash)
/// or earlier in the new corpus (each distinct text is embedded once).
///
/// With precomputed vectors ([`Plan::with_vectors`]) a chunk's identity is its text hash
/// *and* the SHA-256 of its vector's bytes: a chunk whose vector changed is *changed*, and a
/// chunk's vector is never taken from another chunk (two chunks with the same text keep
/// their own vectors).
#[derive(Debug)]
pub struct Plan<'a> {
    base: Option<&'a Index>,
    settings: IngestSettings,
    chunks: Vec<ChunkInput>,
    hashes: Vec<TextHash>,
    /// Per chunk, the hash of its precomputed vector (empty without precomputed vectors).
    vector_hashes: Vec<TextHash>,
    /// Precomputed vectors, in corpus order (`None`: the caller embeds [`Plan::to_embed`]).
    precomputed: Option<Vec<Vec<f32>>>,
    sources: Vec<Source>,
    /// Per chunk: the batch position it keeps (unchanged chunks), or `None` (new batch).
    keep_batch: Vec<Option<u32>>,
    added: Vec<String>,
    changed: Vec<String>,
    removed: Vec<String>,
    unchanged: Vec<String>,
    /// Chunk positions whose vector is new (to embed, or taken from `precomputed`), in
    /// corpus order.
    to_embed: Vec<usize>,
    reused: usize,
    /// Corpus lines the caller left out, recorded with the batch.
    rejected: Vec<veredicto_core::gate::Rejection>,
    /// What to do with the lexical (BM25) arm.
    lexical: LexicalChoice,
}

/// What an ingest does with the lexical (BM25) arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LexicalChoice {
    /// Keep the index's arm (updated with the corpus), or none if it has none.
    Keep,
    /// Build or update an arm with this analyser.
    Build(crate::Analyzer),
    /// Drop the arm.
    Drop,
}

/// What [`Plan::apply`] will do to the lexical (BM25) arm ([`Plan::lexical_work`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LexicalWork {
    /// The arm's analyser.
    pub analyzer: crate::Analyzer,
    /// Chunks analysed and added: the added and changed chunks, or every chunk when the arm
    /// is built anew.
    pub analysed: usize,
    /// Documents of the old arm removed (removed and changed chunks).
    pub removed: usize,
    /// Whether the arm is built anew (none before, another analyser or analyser version, or
    /// a full rebuild).
    pub rebuilt: bool,
}

impl<'a> Plan<'a> {
    /// Chooses the lexical (BM25) arm: `Some(analyzer)` builds one (or updates the index's
    /// arm incrementally when it has the same analyser; another analyser rebuilds it),
    /// `None` drops it. Without this call the index's arm is kept and updated with the
    /// corpus, and an index without one gets none.
    pub fn with_lexical(mut self, analyzer: Option<crate::Analyzer>) -> Self {
        self.lexical = match analyzer {
            Some(a) => LexicalChoice::Build(a),
            None => LexicalChoice::Drop,
        };
        self
    }

    /// What [`Plan::apply`] will do to the lexical arm (`None`: the new index has none).
    pub fn lexical_work(&self) -> Option<LexicalWork> {
        let base = self.base.and_then(|b| b.lexical());
        let analyzer = match self.lexical {
            LexicalChoice::Keep => base.map(|r| r.analyzer)?,
            LexicalChoice::Build(a) => a,
            LexicalChoice::Drop => return None,
        };
        let reuse = self.base.and_then(|b| b.lexical_files()).is_some()
            && base.is_some_and(|r| {
                r.analyzer == analyzer && r.analyzer_version == crate::lexical::ANALYZER_VERSION
            })
            && !self.settings.full_rebuild;
        Some(if reuse {
            LexicalWork {
                analyzer,
                analysed: self.added.len() + self.changed.len(),
                removed: self.removed.len() + self.changed.len(),
                rebuilt: false,
            }
        } else {
            LexicalWork {
                analyzer,
                analysed: self.chunks.len(),
                removed: 0,
                rebuilt: true,
            }
        })
    }

    /// Records the corpus lines the caller rejected (they are not in this plan's corpus)
    /// with the batch that [`Plan::apply`] writes, for the ingestion gate.
    pub fn with_rejections(mut self, rejected: Vec<veredicto_core::gate::Rejection>) -> Self {
        self.rejected = rejected;
        self
    }

    /// Compares `corpus` (in corpus order) with `base` (the current index, or `None` for a
    /// new one).
    ///
    /// Refuses ([`IndexError::ModelMismatch`]) an index built with another model unless
    /// `settings.full_rebuild`; refuses a dimension other than the index's, duplicate chunk
    /// IDs and validity dates that are not `YYYY-MM-DD`.
    pub fn new(
        base: Option<&'a Index>,
        corpus: Vec<ChunkInput>,
        settings: IngestSettings,
    ) -> Result<Plan<'a>> {
        Plan::build(base, corpus, None, settings)
    }

    /// Like [`Plan::new`], for a corpus that comes with its vectors: `vectors[i]` is the
    /// vector of `corpus[i]` (any finite, non-zero vector of `settings.dimension`
    /// components; it is L2-normalised when written).
    ///
    /// Each vector's bytes are hashed into its chunk's identity: a chunk is *unchanged* only
    /// when its text and its vector are, and a chunk's vector is never taken from another
    /// chunk. Nothing needs embedding ([`Plan::to_embed`] is empty): pass no vectors to
    /// [`Plan::apply`]. Refuses a vector count other than the corpus's, a wrong dimension
    /// and a NaN, infinite or all-zero vector ([`IndexError::InvalidVector`] names the
    /// chunk).
    pub fn with_vectors(
        base: Option<&'a Index>,
        corpus: Vec<ChunkInput>,
        vectors: Vec<Vec<f32>>,
        settings: IngestSettings,
    ) -> Result<Plan<'a>> {
        if vectors.len() != corpus.len() {
            return Err(IndexError::VectorCount {
                expected: corpus.len(),
                got: vectors.len(),
            });
        }
        for (c, v) in corpus.iter().zip(&vectors) {
            if v.len() != settings.dimension {
                return Err(IndexError::DimensionMismatch {
                    what: format!("vector for chunk {:?}", c.id),
                    expected: settings.dimension,
                    got: v.len(),
                });
            }
            if kernel::normalize(v).is_none() {
                return Err(IndexError::InvalidVector {
                    what: format!("vector for chunk {:?}", c.id),
                    problem: "has a NaN or infinite component, or is all zeros".into(),
                });
            }
        }
        Plan::build(base, corpus, Some(vectors), settings)
    }

    fn build(
        base: Option<&'a Index>,
        corpus: Vec<ChunkInput>,
        precomputed: Option<Vec<Vec<f32>>>,
        settings: IngestSettings,
    ) -> Result<Plan<'a>> {
        settings.model.validate()?;
        if settings.dimension == 0 {
            return Err(IndexError::argument("dimension", "must be at least 1"));
        }
        if let Some(index) = base {
            if !settings.full_rebuild {
                index.check_model(&settings.model.hash)?;
                if index.dimension() != settings.dimension {
                    return Err(IndexError::DimensionMismatch {
                        what: format!("index {}", index.dir().display()),
                        expected: index.dimension(),
                        got: settings.dimension,
                    });
                }
            }
        }
        let mut positions: HashMap<&str, usize> = HashMap::with_capacity(corpus.len());
        for (i, c) in corpus.iter().enumerate() {
            if let Some(first) = positions.insert(c.id.as_str(), i) {
                return Err(IndexError::DuplicateId {
                    id: c.id.clone(),
                    first,
                    second: i,
                });
            }
            c.meta.validate(&c.id)?;
        }
        let hashes: Vec<TextHash> = corpus.par_iter().map(|c| TextHash::of(&c.text)).collect();
        let vector_hashes: Vec<TextHash> = match &precomputed {
            Some(vectors) => vectors.par_iter().map(|v| TextHash::of_vector(v)).collect(),
            None => Vec::new(),
        };
        // Vectors are shared between chunks by text hash only when a model computes them.
        let share = precomputed.is_none();

        let reuse = base.filter(|_| !settings.full_rebuild);
        // Lookup only (never iterated): the first row holding each text hash.
        let mut stored_by_hash: HashMap<TextHash, usize> = HashMap::new();
        if let (Some(index), true) = (reuse, share) {
            let table = index.table();
            for row in 0..table.len() {
                stored_by_hash.entry(table.text_hash(row)).or_insert(row);
            }
        }
        let mut new_by_hash: HashMap<TextHash, usize> = HashMap::new();
        let mut plan = Plan {
            base,
            settings,
            chunks: Vec::new(),
            hashes: Vec::new(),
            vector_hashes: Vec::new(),
            precomputed: None,
            sources: Vec::with_capacity(corpus.len()),
            keep_batch: Vec::with_capacity(corpus.len()),
            added: Vec::new(),
            changed: Vec::new(),
            removed: Vec::new(),
            unchanged: Vec::new(),
            to_embed: Vec::new(),
            reused: 0,
            rejected: Vec::new(),
            lexical: LexicalChoice::Keep,
        };
        for (i, c) in corpus.iter().enumerate() {
            let hash = hashes[i];
            let old_row = base.and_then(|b| b.row_of(&c.id));
            let old_hash = old_row.and_then(|r| base.map(|b| b.table().text_hash(r)));
            let old_vector_hash = old_row.and_then(|r| base.and_then(|b| b.table().vector_hash(r)));
            let vector_hash = vector_hashes.get(i).copied();
            let unchanged = old_hash == Some(hash) && old_vector_hash == vector_hash;
            match (old_row, unchanged) {
                (None, _) => plan.added.push(c.id.clone()),
                (Some(_), false) => plan.changed.push(c.id.clone()),
                (Some(_), true) => plan.unchanged.push(c.id.clone()),
            }
            let source = match (old_row, reuse) {
                (Some(row), Some(index)) if unchanged => {
                    plan.keep_batch.push(Some(index.table().batch(row)));
                    Source::Stored(row)
                }
                _ => {
                    plan.keep_batch.push(None);
                    if let Some(&row) = stored_by_hash.get(&hash) {
                        plan.reused += 1;
                        Source::Stored(row)
                    } else if let Some(&slot) = new_by_hash.get(&hash) {
                        Source::New(slot)
                    } else {
                        let slot = plan.to_embed.len();
                        plan.to_embed.push(i);
                        if share {
                            new_by_hash.insert(hash, slot);
                        }
                        Source::New(slot)
                    }
                }
            };
            plan.sources.push(source);
        }
        if let Some(index) = base {
            let table = index.table();
            for row in 0..table.len() {
                let id = table.id(row);
                if !positions.contains_key(id) {
                    plan.removed.push(id.to_string());
                }
            }
        }
        drop(positions);
        plan.chunks = corpus;
        plan.hashes = hashes;
        plan.vector_hashes = vector_hashes;
        plan.precomputed = precomputed;
        Ok(plan)
    }

    /// IDs of chunks not in the index, in corpus order.
    pub fn added(&self) -> &[String] {
        &self.added
    }

    /// IDs of chunks in the index with another text hash, in corpus order.
    pub fn changed(&self) -> &[String] {
        &self.changed
    }

    /// IDs of chunks in the index and not in the corpus, in ID order.
    pub fn removed(&self) -> &[String] {
        &self.removed
    }

    /// IDs of chunks in the index with the same text hash, in corpus order.
    pub fn unchanged(&self) -> &[String] {
        &self.unchanged
    }

    /// Added or changed chunks whose vector is taken from the index by text hash.
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// The texts the caller must embed, in corpus order, each distinct text once:
    /// `(chunk ID of its first occurrence, text)`. Pass their vectors to [`Plan::apply`] in
    /// this order. Empty when the vectors were given ([`Plan::with_vectors`]).
    pub fn to_embed(&self) -> Vec<(&str, &str)> {
        if self.precomputed.is_some() {
            return Vec::new();
        }
        self.to_embed
            .iter()
            .map(|&i| (self.chunks[i].id.as_str(), self.chunks[i].text.as_str()))
            .collect()
    }

    /// Number of texts to embed.
    pub fn embed_count(&self) -> usize {
        if self.precomputed.is_some() {
            0
        } else {
            self.to_embed.len()
        }
    }

    /// Number of vectors [`Plan::apply`] writes that are not copied from the index: the texts
    /// to embed, or the added and changed chunks' precomputed vectors.
    pub fn new_vectors(&self) -> usize {
        self.to_embed.len()
    }

    /// Number of chunks in the new corpus.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// Whether the new corpus is empty.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Writes the new index to `dir` atomically and opens it.
    ///
    /// Holds the index's [`crate::WriterLock`] while writing (taking it, waiting up to
    /// [`crate::DEFAULT_LOCK_WAIT`], unless the caller holds it already) and refuses
    /// ([`IndexError::Conflict`]) when the index at `dir` is no longer the one the plan was
    /// made from. To update an index without ever meeting a conflict, take the lock before
    /// opening it.
    ///
    /// `vectors` are the embeddings of [`Plan::to_embed`], in that order (none for a plan
    /// made with [`Plan::with_vectors`]); they are L2-normalised here, stored vectors are
    /// copied verbatim. The index is built in a
    /// temporary folder beside `dir`, synced, then swapped in: on any error (or a crash) the
    /// old index at `dir` is untouched. Same plan, vectors and batch give byte-identical
    /// files, whatever the number of threads.
    pub fn apply<V: AsRef<[f32]> + Sync>(
        self,
        vectors: &[V],
        batch: &BatchInfo,
        dir: &Path,
    ) -> Result<Index> {
        let dim = self.settings.dimension;
        if vectors.len() != self.embed_count() {
            return Err(IndexError::VectorCount {
                expected: self.embed_count(),
                got: vectors.len(),
            });
        }
        crate::manifest::check_sha256(&batch.corpus_hash, "corpus hash")?;
        let vectors: Vec<&[f32]> = match &self.precomputed {
            Some(given) => self.to_embed.iter().map(|&i| given[i].as_slice()).collect(),
            None => vectors.iter().map(AsRef::as_ref).collect(),
        };
        for (slot, v) in vectors.iter().enumerate() {
            let got = v.len();
            if got != dim {
                return Err(IndexError::DimensionMismatch {
                    what: format!("vector for chunk {:?}", self.chunks[self.to_embed[slot]].id),
                    expected: dim,
                    got,
                });
            }
        }
        // Normalise the new vectors (in parallel; each is computed alone, so the bits do not
        // depend on the split). A bad vector is reported when its row is written, so that
        // this path also exercises the cleanup of a half-built folder.
        let mut fresh = vec![0.0f32; vectors.len() * dim];
        let ok: Vec<bool> = fresh
            .par_chunks_mut(dim.max(1))
            .zip(vectors.par_iter())
            .map(|(out, v)| kernel::normalize_into(v, out))
            .collect();

        // Batches: history kept, unless the index is rebuilt in full.
        let keep_history = self.base.is_some() && !self.settings.full_rebuild;
        let mut batches = match (self.base, keep_history) {
            (Some(index), true) => index.manifest().batches.clone(),
            _ => Vec::new(),
        };
        let batch_pos = u32::try_from(batches.len())
            .map_err(|_| IndexError::argument("batch", "too many batches"))?;
        batches.push(BatchRecord {
            name: batch.name.clone(),
            time: batch.time.clone(),
            added: self.added.len(),
            changed: self.changed.len(),
            removed: self.removed.len(),
            unchanged: self.unchanged.len(),
            embedded: self.to_embed.len(),
            reused: self.reused,
            rejected: self.rejected.clone(),
            acceptances: Vec::new(),
        });
        let created_at = match (self.base, keep_history) {
            (Some(index), true) => index.manifest().created_at.clone(),
            _ => batch.time.clone(),
        };

        // Rows in chunk-ID order (byte-wise).
        let mut order: Vec<usize> = (0..self.chunks.len()).collect();
        order.sort_unstable_by(|&a, &b| self.chunks[a].id.cmp(&self.chunks[b].id));

        // One writer at a time: take the lock unless the caller holds it (and then opened
        // `base` under it), and refuse to overwrite a batch committed since `base` was read.
        let _lock = if crate::lock::held_by_us(dir)? {
            None
        } else {
            Some(crate::lock::WriterLock::acquire(
                dir,
                crate::lock::DEFAULT_LOCK_WAIT,
            )?)
        };
        if let Some(index) = self.base.filter(|b| b.dir() == dir) {
            let current = Manifest::read(dir).ok();
            if current.as_ref() != Some(index.manifest()) {
                return Err(IndexError::Conflict {
                    path: dir.join(files::MANIFEST),
                });
            }
        }
        // Stored vectors are copied into the new version and re-hashed there: check them
        // against the old manifest first, so that damage is reported, never laundered.
        if let Some(index) = self.base {
            if self.sources.iter().any(|s| matches!(s, Source::Stored(_))) {
                index.verify()?;
            }
        }
        let target = AtomicDir::create(dir)?;
        let result = self.write_files(&target, &order, &fresh, &ok, batch_pos);
        let (file_records, vector_blocks) = match result {
            Ok(written) => written,
            Err(e) => {
                target.abandon();
                return Err(e);
            }
        };
        let mut file_records = file_records;
        let lexical = match self.lexical_work() {
            None => None,
            Some(work) => {
                let base = self
                    .base
                    .filter(|_| !work.rebuilt)
                    .and_then(|b| b.lexical_files().map(|f| (f, b.dir())));
                let input = crate::lexical::BuildInput {
                    analyzer: work.analyzer,
                    base,
                    chunks: &self.chunks,
                    analyse: if work.rebuilt {
                        (0..self.chunks.len()).collect()
                    } else {
                        (0..self.chunks.len())
                            .filter(|&i| self.keep_batch[i].is_none())
                            .collect()
                    },
                    delete: if work.rebuilt {
                        Vec::new()
                    } else {
                        self.removed
                            .iter()
                            .chain(&self.changed)
                            .map(String::as_str)
                            .collect()
                    },
                };
                match crate::lexical::build(&target.path(files::LEXICAL_DIR), input) {
                    Ok((records, section)) => {
                        file_records.extend(records);
                        Some(section)
                    }
                    Err(e) => {
                        target.abandon();
                        return Err(e);
                    }
                }
            }
        };
        let manifest = Manifest {
            format: FORMAT_NAME.to_string(),
            format_version: FORMAT_VERSION,
            dimension: dim,
            count: self.chunks.len(),
            metric: Metric::Cosine,
            vector_dtype: VECTOR_DTYPE.to_string(),
            row_order: ROW_ORDER.to_string(),
            field: self.settings.field,
            model: self.settings.model.value.clone(),
            model_hash: self.settings.model.hash.clone(),
            corpus_hash: batch.corpus_hash.clone(),
            created_at,
            updated_at: batch.time.clone(),
            batches,
            files: file_records,
            vector_blocks: Some(vector_blocks),
            lexical,
        };
        if let Err(e) = target.write_file(files::MANIFEST, &manifest.to_bytes()) {
            target.abandon();
            return Err(e);
        }
        target.commit()?;
        Index::open(dir)
    }

    fn write_files(
        &self,
        target: &AtomicDir,
        order: &[usize],
        fresh: &[f32],
        ok: &[bool],
        batch_pos: u32,
    ) -> Result<(BTreeMap<String, FileRecord>, VectorBlocks)> {
        let dim = self.settings.dimension;
        let mut vectors = HashingWriter::create(target, files::VECTORS)?;
        // The per-block checksums, computed row by row as the rows are written.
        let mut blocks = BlockSums::new(VECTOR_BLOCK_ROWS);
        let mut records = HashingWriter::create(target, files::RECORDS)?;
        let mut chunks = TableWriter::default();
        let mut row_bytes = Vec::with_capacity(dim * 4);
        for &i in order {
            let c = &self.chunks[i];
            let v: &[f32] = match self.sources[i] {
                Source::Stored(row) => match self.base {
                    Some(index) => index.vector(row),
                    None => unreachable_source(&c.id)?,
                },
                Source::New(slot) => {
                    if !ok[slot] {
                        return Err(IndexError::InvalidVector {
                            what: format!("vector for chunk {:?}", c.id),
                            problem: "has a NaN or infinite component, or is all zeros".into(),
                        });
                    }
                    &fresh[slot * dim..(slot + 1) * dim]
                }
            };
            row_bytes.clear();
            for x in v {
                row_bytes.extend_from_slice(&x.to_le_bytes());
            }
            vectors.write(&row_bytes)?;
            blocks.push_row(&row_bytes);

            let record = match &c.record {
                Some(value) => {
                    // The vector is in vectors.f32: the record keeps everything else.
                    let mut line = match value {
                        serde_json::Value::Object(map) if map.contains_key("vector") => {
                            let mut map = map.clone();
                            map.remove("vector");
                            serde_json::to_vec(&map)
                        }
                        // Serialising a JSON value cannot fail.
                        other => serde_json::to_vec(other),
                    }
                    .unwrap_or_default();
                    line.push(b'\n');
                    let at = records.position();
                    records.write(&line)?;
                    Some((at, line.len() as u64))
                }
                None => None,
            };
            let batch = self.keep_batch[i].unwrap_or(batch_pos);
            chunks.push(
                &c.id,
                &self.hashes[i],
                self.vector_hashes.get(i),
                batch,
                &c.meta,
                record,
            )?;
        }
        let mut table = HashingWriter::create(target, files::CHUNK_TABLE)?;
        for part in chunks.finish() {
            table.write(&part)?;
        }
        let mut out = BTreeMap::new();
        for w in [vectors, records, table] {
            let (name, rec) = w.finish()?;
            out.insert(name, rec);
        }
        Ok((out, blocks.finish()))
    }
}

/// A stored source without a base index cannot be built by `Plan::new`.
fn unreachable_source(id: &str) -> Result<&'static [f32]> {
    Err(IndexError::argument(
        "plan",
        format!("chunk {id:?} refers to a stored vector but there is no index"),
    ))
}
