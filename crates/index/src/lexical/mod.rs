//! The lexical (BM25) arm of the index: a tantivy index of the same chunks and the same field
//! as the vectors, in the folder's `lexical/` sub-folder, built and updated by the same
//! ingest (only added and changed chunks are analysed), and searched exactly: every chunk
//! that shares a term with the query is scored, so the rank of any chunk is known.
//!
//! **Score** (tantivy's BM25, k1 = 1.2, b = 0.75, as Elasticsearch's defaults):
//!
//! ```text
//! score(d, q) = Σ over the distinct terms t of q, in query order:
//!               qtf(t) · idf(t) · (k1 + 1) · tf(t, d) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))
//! idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! with `qtf` the term's count in the query, `tf` its count in the chunk, `|d|` the chunk's
//! term count as tantivy stores it (one byte per chunk, exact up to 40 terms, then rounded as
//! Lucene does), `N` the number of chunks, `df` the chunks holding the term and `avgdl` the
//! exact mean term count (`tokens / N`, recorded in the manifest). Every quantity depends on
//! the current chunks only (the arm never keeps deleted documents: an ingest that removes or
//! changes chunks merges the arm into one segment), and the sum runs in `f32` in query-term
//! order for every chunk, so a chunk's score has the same bits whether the arm was built at
//! once or ingest by ingest. A chunk that shares no term with the query has no score
//! ([`crate::Rank::Unmatched`]).
//!
//! **Ties**: score descending, then chunk ID ascending — the vector search's rule.

pub mod analyzer;
mod dir;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tantivy::directory::OwnedBytes;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::index::SegmentReader;
use tantivy::query::Bm25Weight;
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STRING,
};
use tantivy::tokenizer::PreTokenizedString;
use tantivy::{IndexWriter, TantivyDocument, Term};

pub use analyzer::{Analyzer, ANALYZER_VERSION};

use crate::chunk::ChunkInput;
use crate::error::{IndexError, Result};
use crate::filter::Filter;
use crate::manifest::{files, FileRecord};
use crate::search::{Hit, QueryResult, Rank};

/// Name of the engine recorded in the manifest.
pub const ENGINE: &str = "tantivy 0.27";
/// BM25's term-frequency saturation (tantivy's constant).
pub const K1: f32 = 1.2;
/// BM25's length normalisation (tantivy's constant).
pub const B: f32 = 0.75;

/// Field names of the tantivy schema.
const ID_FIELD: &str = "id";
const TEXT_FIELD: &str = "text";
const TOKENS_FIELD: &str = "tokens";

/// Chunks analysed and handed to tantivy at once (bounds the memory of the tokens held).
const SLICE: usize = 4096;
/// Memory tantivy's writer may use before it writes a segment.
const WRITER_BUDGET: usize = 64 << 20;

/// The manifest's `lexical` section: what the BM25 arm is (absent when the index has none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LexicalRecord {
    /// The engine that wrote the arm ([`ENGINE`]).
    pub engine: String,
    /// The analyser's language.
    pub analyzer: Analyzer,
    /// The analysis pipeline's version ([`ANALYZER_VERSION`] when written by this build).
    pub analyzer_version: u32,
    /// The scoring function and its parameters: `bm25 k1=1.2 b=0.75`.
    pub scoring: String,
    /// Documents in the arm: one per chunk.
    pub documents: usize,
    /// Terms over all documents (after analysis): `avgdl = tokens / documents`.
    pub tokens: u64,
}

/// The scoring text recorded in [`LexicalRecord::scoring`].
pub fn scoring_name() -> String {
    format!("bm25 k1={K1} b={B}")
}

/// One query of a lexical batch.
#[derive(Debug, Clone, Copy)]
pub struct LexicalQuery<'a> {
    /// The query text, analysed like the chunks.
    pub text: &'a str,
    /// How many hits to return (fewer when fewer chunks share a term with the query).
    pub k: usize,
    /// Only chunks matching this filter are ranked.
    pub filter: Option<&'a Filter>,
    /// Chunk IDs whose rank and score are wanted, wherever they rank.
    pub rank_ids: &'a [String],
}

/// The lexical files of an opened index, mapped (by name inside `lexical/`).
#[derive(Debug, Clone)]
pub(crate) struct LexicalFiles {
    pub(crate) record: LexicalRecord,
    pub(crate) files: BTreeMap<String, (OwnedBytes, FileRecord)>,
}

/// Whether `name` (a key of the manifest's `files`) is a lexical file; its name inside
/// `lexical/` when it is.
pub(crate) fn lexical_name(name: &str) -> Option<&str> {
    name.strip_prefix(files::LEXICAL_PREFIX)
}

/// A lexical file name must be one plain file name (no folder, no `..`).
pub(crate) fn valid_file_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The tantivy schema of the arm.
fn schema(analyzer: Analyzer) -> Schema {
    let mut builder = Schema::builder();
    builder.add_text_field(ID_FIELD, STRING.set_fast("raw"));
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(analyzer.tokenizer_name())
            .set_index_option(IndexRecordOption::WithFreqs)
            .set_fieldnorms(true),
    );
    builder.add_text_field(TEXT_FIELD, text);
    builder.add_u64_field(TOKENS_FIELD, NumericOptions::default().set_fast());
    builder.build()
}

fn fields(schema: &Schema) -> Option<(Field, Field, Field)> {
    Some((
        schema.get_field(ID_FIELD).ok()?,
        schema.get_field(TEXT_FIELD).ok()?,
        schema.get_field(TOKENS_FIELD).ok()?,
    ))
}

/// What [`build`] does to the arm.
pub(crate) struct BuildInput<'a> {
    /// The analyser.
    pub analyzer: Analyzer,
    /// The base index's arm, when it is reused (same analyser and version): its files are
    /// copied, `delete` removed from it and `analyse` added.
    pub base: Option<(&'a LexicalFiles, &'a Path)>,
    /// Every chunk of the new corpus.
    pub chunks: &'a [ChunkInput],
    /// Positions in `chunks` to analyse and add (every chunk for a new arm).
    pub analyse: Vec<usize>,
    /// IDs of the base arm to remove (removed and changed chunks).
    pub delete: Vec<&'a str>,
}

fn lexical_error(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::Lexical {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Builds the arm in `dir` (the new version's `lexical/` folder, created here) and returns
/// its files (keyed `lexical/NAME`, synced, hashed) and its manifest section.
pub(crate) fn build(
    dir: &Path,
    input: BuildInput<'_>,
) -> Result<(BTreeMap<String, FileRecord>, LexicalRecord)> {
    std::fs::create_dir(dir).map_err(|e| IndexError::io(dir, e))?;
    let analyzer = input.analyzer;
    let tantivy_index = match input.base {
        Some((base, base_dir)) => {
            // Copy the base arm as opened, checking each file against its manifest record
            // on the way: damage is reported, never carried into the new version.
            for (name, (bytes, record)) in &base.files {
                let got = crate::hash_hex(&Sha256::digest(bytes.as_slice()));
                if got != record.sha256 || bytes.len() as u64 != record.bytes {
                    return Err(IndexError::corrupt(
                        &base_dir.join(files::LEXICAL_DIR).join(name),
                        0,
                        format!(
                            "content does not match the manifest: {} bytes with {got}, \
                             expected {} bytes with {}: the file is damaged; rebuild the index",
                            bytes.len(),
                            record.bytes,
                            record.sha256
                        ),
                    ));
                }
                let path = dir.join(name);
                std::fs::write(&path, bytes.as_slice()).map_err(|e| IndexError::io(&path, e))?;
            }
            let mut index = tantivy::Index::open_in_dir(dir).map_err(|e| lexical_error(dir, e))?;
            if fields(&index.schema()).is_none() {
                return Err(IndexError::corrupt(
                    &base_dir.join(files::LEXICAL_DIR),
                    0,
                    "the BM25 arm's schema lacks the id, text or tokens field",
                ));
            }
            register(&mut index, analyzer);
            index
        }
        None => {
            let mut index = tantivy::Index::create_in_dir(dir, schema(analyzer))
                .map_err(|e| lexical_error(dir, e))?;
            register(&mut index, analyzer);
            index
        }
    };
    let (id_field, text_field, tokens_field) =
        fields(&tantivy_index.schema()).ok_or_else(|| lexical_error(dir, "schema"))?;
    {
        let mut writer: IndexWriter<TantivyDocument> = tantivy_index
            .writer_with_num_threads(1, WRITER_BUDGET)
            .map_err(|e| lexical_error(dir, e))?;
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        for id in &input.delete {
            writer.delete_term(Term::from_field_text(id_field, id));
        }
        for slice in input.analyse.chunks(SLICE) {
            let docs: Vec<TantivyDocument> = slice
                .par_iter()
                .map_init(
                    || analyzer.text_analyzer(),
                    |a, &i| {
                        let c = &input.chunks[i];
                        let tokens = Analyzer::tokens(a, &c.text);
                        let count = tokens.len() as u64;
                        let mut doc = TantivyDocument::default();
                        doc.add_text(id_field, &c.id);
                        doc.add_pre_tokenized_text(
                            text_field,
                            PreTokenizedString {
                                text: String::new(),
                                tokens,
                            },
                        );
                        doc.add_u64(tokens_field, count);
                        doc
                    },
                )
                .collect();
            for doc in docs {
                writer
                    .add_document(doc)
                    .map_err(|e| lexical_error(dir, e))?;
            }
        }
        writer.commit().map_err(|e| lexical_error(dir, e))?;
        // No deleted document is ever kept: the statistics are those of the chunks alone.
        let metas = tantivy_index
            .searchable_segment_metas()
            .map_err(|e| lexical_error(dir, e))?;
        if metas.len() > 1 || metas.iter().any(|m| m.has_deletes()) {
            let ids: Vec<_> = metas.iter().map(|m| m.id()).collect();
            writer
                .merge(&ids)
                .wait()
                .map_err(|e| lexical_error(dir, e))?;
        }
        writer
            .garbage_collect_files()
            .wait()
            .map_err(|e| lexical_error(dir, e))?;
        writer
            .wait_merging_threads()
            .map_err(|e| lexical_error(dir, e))?;
    }
    // The exact term count and document count of what was written.
    let segments = tantivy_index
        .searchable_segments()
        .map_err(|e| lexical_error(dir, e))?;
    let mut documents = 0usize;
    let mut tokens = 0u64;
    for segment in &segments {
        let reader = SegmentReader::open(segment).map_err(|e| lexical_error(dir, e))?;
        if reader.has_deletes() {
            return Err(lexical_error(
                dir,
                "a segment still holds deleted documents",
            ));
        }
        let column = reader
            .fast_fields()
            .u64(TOKENS_FIELD)
            .map_err(|e| lexical_error(dir, e))?;
        for doc in 0..reader.max_doc() {
            tokens += column.first(doc).unwrap_or(0);
        }
        documents += reader.max_doc() as usize;
    }
    drop(segments);
    drop(tantivy_index);
    if documents != input.chunks.len() {
        return Err(lexical_error(
            dir,
            format!(
                "{documents} documents written for {} chunks",
                input.chunks.len()
            ),
        ));
    }
    // Writer locks are not part of the arm.
    for lock in [".tantivy-writer.lock", ".tantivy-meta.lock"] {
        let _ = std::fs::remove_file(dir.join(lock));
    }
    let mut out = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|e| IndexError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| IndexError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = dir.join(&name);
        if !valid_file_name(&name) {
            return Err(lexical_error(&path, "unexpected file name"));
        }
        let bytes = std::fs::read(&path).map_err(|e| IndexError::io(&path, e))?;
        std::fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(|e| IndexError::io(&path, e))?;
        out.insert(
            format!("{}{name}", files::LEXICAL_PREFIX),
            FileRecord {
                bytes: bytes.len() as u64,
                sha256: crate::hash_hex(&Sha256::digest(&bytes)),
            },
        );
    }
    crate::write::sync_dir(dir)?;
    Ok((
        out,
        LexicalRecord {
            engine: ENGINE.to_string(),
            analyzer,
            analyzer_version: ANALYZER_VERSION,
            scoring: scoring_name(),
            documents,
            tokens,
        },
    ))
}

fn register(index: &mut tantivy::Index, analyzer: Analyzer) {
    index
        .tokenizers()
        .register(analyzer.tokenizer_name(), analyzer.text_analyzer());
}

/// One segment of the opened arm.
struct Segment {
    inverted: Arc<tantivy::InvertedIndexReader>,
    fieldnorms: FieldNormReader,
    /// Document → row of the chunk table.
    rows: Vec<u32>,
}

/// The arm, checked and ready to search (built once per opened index, before its first
/// lexical search).
pub(crate) struct Searcher {
    text_field: Field,
    analyzer: Analyzer,
    documents: u64,
    average: f32,
    segments: Vec<Segment>,
}

impl std::fmt::Debug for Searcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Searcher")
            .field("analyzer", &self.analyzer)
            .field("documents", &self.documents)
            .field("segments", &self.segments.len())
            .finish()
    }
}

/// A problem found while opening the arm: the file (inside the index folder) and what.
pub(crate) type Problem = (String, String);

impl Searcher {
    /// Checks the arm's files against the manifest (SHA-256), opens it with tantivy and
    /// maps every document to its chunk: each chunk of the table has exactly one document.
    pub(crate) fn open(
        lexical: &LexicalFiles,
        table: &crate::table::Table,
    ) -> std::result::Result<Searcher, Problem> {
        let lexical_dir = files::LEXICAL_DIR.to_string();
        let record = &lexical.record;
        if record.analyzer_version != ANALYZER_VERSION {
            return Err((
                files::MANIFEST.to_string(),
                format!(
                    "the BM25 arm was analysed by analyser version {}, this build analyses \
                     queries with version {ANALYZER_VERSION}: their terms would not match; \
                     ingest again to re-analyse it",
                    record.analyzer_version
                ),
            ));
        }
        let digests: Vec<Option<Problem>> = lexical
            .files
            .par_iter()
            .map(|(name, (bytes, rec))| {
                let got = crate::hash_hex(&Sha256::digest(bytes.as_slice()));
                (got != rec.sha256).then(|| {
                    (
                        format!("{}{name}", files::LEXICAL_PREFIX),
                        format!(
                            "content does not match the manifest: {got}, expected {}: the \
                             file is damaged; rebuild the index",
                            rec.sha256
                        ),
                    )
                })
            })
            .collect();
        if let Some(problem) = digests.into_iter().flatten().next() {
            return Err(problem);
        }
        let bad = |m: String| (lexical_dir.clone(), m);
        let mapped = dir::MappedDir::new(
            lexical
                .files
                .iter()
                .map(|(name, (bytes, _))| (PathBuf::from(name), bytes.clone()))
                .collect(),
        );
        let index = tantivy::Index::open(mapped).map_err(|e| bad(format!("tantivy: {e}")))?;
        let schema = index.schema();
        let (id_field, text_field, _) = fields(&schema)
            .ok_or_else(|| bad("the schema lacks the id, text or tokens field".into()))?;
        let _ = id_field;
        let segments = index
            .searchable_segments()
            .map_err(|e| bad(format!("tantivy: {e}")))?;
        let n = table.len();
        let mut seen = vec![false; n];
        let mut out = Vec::with_capacity(segments.len());
        let mut documents = 0u64;
        let mut tokens = 0u64;
        for segment in &segments {
            let reader = SegmentReader::open(segment).map_err(|e| bad(format!("tantivy: {e}")))?;
            if reader.has_deletes() {
                return Err(bad("a segment holds deleted documents".into()));
            }
            let ids = reader
                .fast_fields()
                .str(ID_FIELD)
                .map_err(|e| bad(format!("tantivy: {e}")))?
                .ok_or_else(|| bad("the id column is missing".into()))?;
            let counts = reader
                .fast_fields()
                .u64(TOKENS_FIELD)
                .map_err(|e| bad(format!("tantivy: {e}")))?;
            // The column's dictionary, in ord order: each ID's row in the chunk table.
            let mut ord_rows = Vec::with_capacity(ids.num_terms());
            let mut stream = ids
                .dictionary()
                .stream()
                .map_err(|e| bad(format!("tantivy: {e}")))?;
            while stream.advance() {
                let id = std::str::from_utf8(stream.key())
                    .map_err(|_| bad("a document ID is not UTF-8".into()))?;
                let row = table.row_of(id).ok_or_else(|| {
                    bad(format!(
                        "document {:?} is not a chunk of the index",
                        veredicto_core::redact::short(id)
                    ))
                })?;
                ord_rows.push(row as u32);
            }
            let mut rows = Vec::with_capacity(reader.max_doc() as usize);
            for doc in 0..reader.max_doc() {
                let ord = ids
                    .term_ords(doc)
                    .next()
                    .ok_or_else(|| bad(format!("document {doc} has no ID")))?;
                let row = *ord_rows
                    .get(ord as usize)
                    .ok_or_else(|| bad(format!("document {doc}: ID out of range")))?;
                if std::mem::replace(&mut seen[row as usize], true) {
                    return Err(bad(format!(
                        "chunk {:?} has two documents",
                        veredicto_core::redact::short(table.id(row as usize))
                    )));
                }
                rows.push(row);
                tokens += counts.first(doc).unwrap_or(0);
            }
            documents += u64::from(reader.max_doc());
            out.push(Segment {
                inverted: reader
                    .inverted_index(text_field)
                    .map_err(|e| bad(format!("tantivy: {e}")))?,
                fieldnorms: reader
                    .get_fieldnorms_reader(text_field)
                    .map_err(|e| bad(format!("tantivy: {e}")))?,
                rows,
            });
        }
        if let Some(row) = seen.iter().position(|s| !s) {
            return Err(bad(format!(
                "chunk {:?} has no document",
                veredicto_core::redact::short(table.id(row))
            )));
        }
        if documents != record.documents as u64 || tokens != record.tokens {
            return Err(bad(format!(
                "{documents} documents with {tokens} terms, the manifest says {} with {}",
                record.documents, record.tokens
            )));
        }
        Ok(Searcher {
            text_field,
            analyzer: record.analyzer,
            documents,
            average: if documents == 0 {
                1.0
            } else {
                tokens as f32 / documents as f32
            },
            segments: out,
        })
    }

    /// The weighted terms of a query: distinct terms in first-occurrence order, each with
    /// its BM25 weight (`qtf` folded in); terms no chunk holds are left out.
    fn weights(&self, text: &str) -> std::io::Result<Vec<(Term, Bm25Weight)>> {
        let mut distinct: Vec<(String, u32)> = Vec::new();
        for t in self.analyzer.terms(text) {
            match distinct.iter_mut().find(|(s, _)| *s == t) {
                Some((_, n)) => *n += 1,
                None => distinct.push((t, 1)),
            }
        }
        let mut out = Vec::with_capacity(distinct.len());
        for (text, qtf) in distinct {
            let term = Term::from_field_text(self.text_field, &text);
            let mut df = 0u64;
            for s in &self.segments {
                df += u64::from(s.inverted.doc_freq(&term)?);
            }
            if df == 0 {
                continue;
            }
            let weight = Bm25Weight::for_one_term_without_explain(df, self.documents, self.average)
                .boost_by(qtf as f32);
            out.push((term, weight));
        }
        Ok(out)
    }

    /// Scores every chunk that shares a term with `text` into `acc` (indexed by row, all
    /// zeros on entry) and lists the rows touched.
    fn score(&self, text: &str, acc: &mut [f32], touched: &mut Vec<u32>) -> std::io::Result<()> {
        for (term, weight) in self.weights(text)? {
            for s in &self.segments {
                let Some(mut block) = s
                    .inverted
                    .read_block_postings(&term, IndexRecordOption::WithFreqs)?
                else {
                    continue;
                };
                loop {
                    let docs = block.docs();
                    if docs.is_empty() {
                        break;
                    }
                    for (&doc, &tf) in docs.iter().zip(block.freqs()) {
                        let row = s.rows[doc as usize];
                        let slot = &mut acc[row as usize];
                        if *slot == 0.0 {
                            touched.push(row);
                        }
                        *slot += weight.score(s.fieldnorms.fieldnorm_id(doc), tf);
                    }
                    block.advance();
                }
            }
        }
        Ok(())
    }
}

/// `a` ranks before `b`: higher score, or equal score and lower row (= lower chunk ID).
fn better(a: (f32, u32), b: (f32, u32)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

impl crate::Index {
    /// Whether the index has a lexical (BM25) arm.
    pub fn has_lexical(&self) -> bool {
        self.lexical_files().is_some()
    }

    /// The lexical arm's manifest section, when the index has one.
    pub fn lexical(&self) -> Option<&LexicalRecord> {
        self.manifest().lexical.as_ref()
    }

    /// Refuses a lexical search on an index without a BM25 arm
    /// ([`IndexError::NoLexicalArm`]).
    pub fn check_lexical(&self) -> Result<()> {
        self.lexical_searcher().map(|_| ())
    }

    /// Runs a batch of lexical queries: each query's top-k by BM25 (ties: chunk ID
    /// ascending) and the rank of each chunk ID it asks for. Before the first one, the arm's
    /// files are checked against the manifest. Deterministic whatever the thread count.
    pub fn search_lexical(&self, queries: &[LexicalQuery<'_>]) -> Result<Vec<QueryResult>> {
        let searcher = self.lexical_searcher()?;
        let n = self.len();
        let mut distinct: Vec<&Filter> = Vec::new();
        for q in queries {
            if let Some(f) = q.filter {
                if !distinct.contains(&f) {
                    distinct.push(f);
                }
            }
        }
        if !distinct.is_empty() {
            self.table().check_meta()?;
        }
        let bitmaps: Vec<Vec<u64>> = distinct.iter().map(|f| self.filter_bitmap(f)).collect();
        let bits_of = |f: Option<&Filter>| {
            f.and_then(|f| distinct.iter().position(|d| *d == f))
                .map(|i| bitmaps[i].as_slice())
        };
        let dir = self.dir().join(files::LEXICAL_DIR);
        let results: Vec<std::io::Result<QueryResult>> = queries
            .par_iter()
            .map_init(
                || (vec![0.0f32; n], Vec::<u32>::new()),
                |(acc, touched), q| {
                    touched.clear();
                    let scored = searcher.score(q.text, acc, touched);
                    let bits = bits_of(q.filter);
                    let mut cands: Vec<(f32, u32)> = touched
                        .iter()
                        .filter(|&&row| crate::search::allows(bits, row as usize))
                        .map(|&row| (acc[row as usize], row))
                        .collect();
                    let ranks = q
                        .rank_ids
                        .iter()
                        .map(|id| match self.row_of(id) {
                            None => Rank::NotInIndex,
                            Some(row) if acc[row] == 0.0 => Rank::Unmatched,
                            Some(row) if !crate::search::allows(bits, row) => {
                                Rank::FilteredOut { score: acc[row] }
                            }
                            Some(row) => {
                                let me = (acc[row], row as u32);
                                let before = cands.iter().filter(|&&c| better(c, me)).count();
                                Rank::Ranked {
                                    rank: before + 1,
                                    score: me.0,
                                }
                            }
                        })
                        .collect();
                    for &row in touched.iter() {
                        acc[row as usize] = 0.0;
                    }
                    scored?;
                    let order =
                        |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
                    if q.k < cands.len() {
                        if q.k > 0 {
                            cands.select_nth_unstable_by(q.k - 1, order);
                        }
                        cands.truncate(q.k);
                    }
                    cands.sort_unstable_by(order);
                    Ok(QueryResult {
                        hits: cands
                            .into_iter()
                            .map(|(score, row)| Hit {
                                row: row as usize,
                                score,
                            })
                            .collect(),
                        ranks,
                    })
                },
            )
            .collect();
        results
            .into_iter()
            .map(|r| r.map_err(|e| IndexError::io(&dir, e)))
            .collect()
    }
}
