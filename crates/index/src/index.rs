//! Opening an index folder: the manifest, the memory-mapped vectors and the per-row metadata.

use crate::chunk::{ChunkLine, ChunkMeta, Entry, TextHash};
use crate::error::{IndexError, Result};
use crate::manifest::{files, BatchRecord, Manifest};
use crate::table::{BinaryTable, Table};
use memmap2::Mmap;
use rayon::prelude::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// An open index. Cheap to open: the manifest and `chunks.jsonl` are read, the vectors and
/// the original chunk records are memory-mapped and paged in only when searched or read.
#[derive(Debug)]
pub struct Index {
    dir: PathBuf,
    manifest: Manifest,
    vectors: Option<Mmap>,
    records: Option<Mmap>,
    table: Table,
    /// The manifest's SHA-256 of `chunks.bin` (format version 2), checked with the vectors.
    table_hash: Option<String>,
    /// Rows per block and each block's CRC-32 of `vectors.f32` (format version 3), checked
    /// with the norms before the first search.
    vector_sums: Option<(usize, Vec<u32>)>,
    /// Result of [`Index::check_vectors`], computed once (before the first search).
    vectors_checked: OnceLock<std::result::Result<(), (&'static str, String)>>,
    /// The lexical arm's files, mapped, when the index has one.
    lexical: Option<crate::lexical::LexicalFiles>,
    /// The lexical arm, checked and opened before the first lexical search.
    lexical_searcher:
        OnceLock<std::result::Result<crate::lexical::Searcher, crate::lexical::Problem>>,
    /// The folder as opened (so that `verify` reads this version's files).
    folder: Folder,
}

/// How far a stored vector's squared norm may be from 1 (they are L2-normalised when
/// written; f32 rounding over thousands of components stays far below this).
const NORM_TOLERANCE: f32 = 1e-3;

/// A view of one row: the chunk's ID, text hash, batch, metadata, vector and original record.
#[derive(Debug, Clone, Copy)]
pub struct ChunkRef<'a> {
    index: &'a Index,
    row: usize,
}

impl<'a> ChunkRef<'a> {
    /// The row.
    pub fn row(&self) -> usize {
        self.row
    }

    /// The chunk ID.
    pub fn id(&self) -> &'a str {
        self.index.table.id(self.row)
    }

    /// SHA-256 of the text that was embedded.
    pub fn text_hash(&self) -> TextHash {
        self.index.table.text_hash(self.row)
    }

    /// SHA-256 of the precomputed vector given for this chunk (`None` when a model embedded it).
    pub fn vector_hash(&self) -> Option<TextHash> {
        self.index.table.vector_hash(self.row)
    }

    /// The batch that brought this chunk's current text (unchanged chunks keep theirs).
    pub fn batch(&self) -> &'a BatchRecord {
        &self.index.manifest.batches[self.index.table.batch(self.row) as usize]
    }

    /// Position of [`ChunkRef::batch`] in the manifest's `batches`.
    pub fn batch_position(&self) -> usize {
        self.index.table.batch(self.row) as usize
    }

    /// The batch label (`ingest_batch`).
    pub fn ingest_batch(&self) -> &'a str {
        &self.batch().name
    }

    /// When the chunk's current text was ingested (the batch's time).
    pub fn ingested_at(&self) -> &'a str {
        &self.batch().time
    }

    /// Filter metadata.
    pub fn meta(&self) -> &'a ChunkMeta {
        self.index.table.meta(self.row)
    }

    /// The stored (L2-normalised) vector.
    pub fn vector(&self) -> &'a [f32] {
        self.index.vector(self.row)
    }

    /// The original chunk JSON given at ingest, read from `records.jsonl` (`None` when none
    /// was kept).
    pub fn record(&self) -> Result<Option<Value>> {
        let Some((offset, len)) = self.index.table.record(self.row) else {
            return Ok(None);
        };
        let path = self.index.dir.join(files::RECORDS);
        let bytes = self
            .index
            .records
            .as_deref()
            .and_then(|m| m.get(offset as usize..(offset + len) as usize))
            .ok_or_else(|| {
                IndexError::corrupt(&path, 0, format!("record of row {} out of range", self.row))
            })?;
        serde_json::from_slice(bytes).map(Some).map_err(|e| {
            IndexError::corrupt(&path, 0, format!("record of chunk {:?}: {e}", self.id()))
        })
    }
}

impl Index {
    /// Opens the index in folder `dir`.
    ///
    /// Refuses a folder written by a newer format version ([`IndexError::NewerFormat`]), and
    /// checks that each file has the size and line count the manifest says
    /// ([`IndexError::Corrupt`] names the file). Contents are not hashed: see [`Index::verify`].
    pub fn open(dir: &Path) -> Result<Index> {
        if cfg!(target_endian = "big") {
            return Err(IndexError::corrupt(
                &dir.join(files::VECTORS),
                0,
                "vectors are little-endian f32 and this machine is big-endian: not supported",
            ));
        }
        // Every file is opened relative to one handle on the folder: a writer swapping in a
        // new version meanwhile cannot mix two versions' files into this one. If the version
        // being opened is replaced and deleted half-way, the new one is opened instead.
        let mut attempt = 0;
        loop {
            let folder = Folder::open(dir)?;
            match Index::open_in(dir, folder) {
                Ok(index) => return Ok(index),
                Err((e, folder)) => {
                    attempt += 1;
                    if attempt >= 5 || !folder.replaced() {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Opens the version held by `folder`; on error, gives the folder back with the error.
    fn open_in(dir: &Path, folder: Folder) -> std::result::Result<Index, (IndexError, Folder)> {
        match Index::read_version(dir, &folder) {
            Ok(parts) => Ok(parts.into_index(dir, folder)),
            Err(e) => Err((e, folder)),
        }
    }

    fn read_version(dir: &Path, folder: &Folder) -> Result<Parts> {
        let manifest = {
            let path = dir.join(files::MANIFEST);
            let mut bytes = Vec::new();
            folder
                .file(files::MANIFEST)?
                .read_to_end(&mut bytes)
                .map_err(|e| IndexError::io(&path, e))?;
            Manifest::parse(&path, &bytes)?
        };
        let dim = manifest.dimension;
        let count = manifest.count;
        let vector_sums = match &manifest.vector_blocks {
            Some(b) => Some((b.rows, b.sums(&dir.join(files::MANIFEST), count)?)),
            None => None,
        };
        if count > u32::MAX as usize {
            return Err(IndexError::corrupt(
                &dir.join(files::MANIFEST),
                0,
                format!(
                    "count {count} exceeds the supported maximum of {}",
                    u32::MAX
                ),
            ));
        }

        // Vectors: size must be exactly count × dim × 4.
        let expected = (count as u64)
            .checked_mul(dim as u64)
            .and_then(|x| x.checked_mul(4))
            .ok_or_else(|| {
                IndexError::corrupt(&dir.join(files::MANIFEST), 0, "count × dimension overflows")
            })?;
        let vectors = map_file(folder, files::VECTORS, expected, |found| {
            format!(
                "expected {expected} bytes ({count} vectors × {dim} dimensions × 4), found {found}{}",
                if found < expected { " (truncated)" } else { "" }
            )
        })?;

        // Records: size must match the manifest.
        let rbytes = manifest
            .files
            .get(files::RECORDS)
            .map(|f| f.bytes)
            .ok_or_else(|| missing_file_record(dir, files::RECORDS))?;
        let records = map_file(folder, files::RECORDS, rbytes, |found| {
            format!("expected {rbytes} bytes (from the manifest), found {found}")
        })?;

        // The manifest lists exactly the three data files (the chunk table is JSON lines in
        // format version 1, binary since version 2), and the lexical arm's files when the
        // index has one (format version 4).
        let table_name = if manifest.format_version >= 2 {
            files::CHUNK_TABLE
        } else {
            files::CHUNKS
        };
        let names: Vec<&str> = manifest
            .files
            .keys()
            .map(String::as_str)
            .filter(|n| crate::lexical::lexical_name(n).is_none())
            .collect();
        let lexical = read_lexical(dir, folder, &manifest)?;
        if names != [table_name, files::RECORDS, files::VECTORS] {
            return Err(IndexError::corrupt(
                &dir.join(files::MANIFEST),
                0,
                format!(
                    "`files` must list {table_name}, {} and {}, found {names:?}",
                    files::RECORDS,
                    files::VECTORS
                ),
            ));
        }
        let vbytes = manifest.files[files::VECTORS].bytes;
        if vbytes != expected {
            return Err(IndexError::corrupt(
                &dir.join(files::MANIFEST),
                0,
                format!(
                    "`files` says {} has {vbytes} bytes, but {count} vectors × {dim} dimensions × 4 = {expected}",
                    files::VECTORS
                ),
            ));
        }

        if table_name == files::CHUNK_TABLE {
            // The binary table: mapped, its structure checked row by row without parsing;
            // its SHA-256 is checked before the first search, with the vectors.
            let record = &manifest.files[files::CHUNK_TABLE];
            let (expected, sha) = (record.bytes, record.sha256.clone());
            let map = map_file(folder, files::CHUNK_TABLE, expected, |found| {
                format!("expected {expected} bytes (from the manifest), found {found}")
            })?
            .ok_or_else(|| {
                IndexError::corrupt(&dir.join(files::CHUNK_TABLE), 0, "the file is empty")
            })?;
            let table = BinaryTable::open(
                &dir.join(files::CHUNK_TABLE),
                map,
                count,
                manifest.batches.len(),
                rbytes,
            )?;
            return Ok(Parts {
                manifest,
                vectors,
                records,
                table: Table::Binary(table),
                table_hash: Some(sha),
                vector_sums,
                lexical,
            });
        }

        // Format version 1: one JSON line per row, IDs strictly ascending; size and SHA-256
        // as in the manifest (the file is read whole anyway, so hashing it costs little).
        let cpath = dir.join(files::CHUNKS);
        let chunks_record = &manifest.files[files::CHUNKS];
        let file = folder.file(files::CHUNKS)?;
        let mut found = 0u64;
        let mut chunks_hash = Sha256::new();
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut entries: Vec<Entry> = Vec::with_capacity(count);
        let mut line = String::new();
        let mut lineno = 0usize;
        loop {
            line.clear();
            let read = reader
                .read_line(&mut line)
                .map_err(|e| IndexError::io(&cpath, e))?;
            if read == 0 {
                break;
            }
            chunks_hash.update(line.as_bytes());
            found += read as u64;
            lineno += 1;
            if entries.len() == count {
                return Err(IndexError::corrupt(
                    &cpath,
                    lineno,
                    format!("more lines than the {count} chunks of the manifest"),
                ));
            }
            let mut parsed: ChunkLine = serde_json::from_str(line.trim_end_matches('\n'))
                .map_err(|e| IndexError::corrupt(&cpath, lineno, format!("{e}")))?;
            let text_hash: TextHash = parsed
                .text_hash
                .parse()
                .map_err(|e| IndexError::corrupt(&cpath, lineno, format!("`text_hash`: {e}")))?;
            let vector_hash: Option<TextHash> = match &parsed.vector_hash {
                Some(h) => Some(h.parse().map_err(|e| {
                    IndexError::corrupt(&cpath, lineno, format!("`vector_hash`: {e}"))
                })?),
                None => None,
            };
            if parsed.batch as usize >= manifest.batches.len() {
                return Err(IndexError::corrupt(
                    &cpath,
                    lineno,
                    format!(
                        "`batch` {} but the manifest lists {} batches",
                        parsed.batch,
                        manifest.batches.len()
                    ),
                ));
            }
            if let Some(prev) = entries.last() {
                if *prev.id >= *parsed.id {
                    return Err(IndexError::corrupt(
                        &cpath,
                        lineno,
                        format!(
                            "chunk IDs must be strictly ascending: {:?} after {:?}",
                            parsed.id, prev.id
                        ),
                    ));
                }
            }
            if let Some((offset, len)) = parsed.record {
                if offset.checked_add(len).is_none_or(|end| end > rbytes) {
                    return Err(IndexError::corrupt(
                        &cpath,
                        lineno,
                        format!("`record` [{offset}, {len}] lies outside records.jsonl"),
                    ));
                }
            }
            let meta = parsed.meta();
            entries.push(Entry::new(
                &parsed.id,
                text_hash,
                vector_hash,
                parsed.batch,
                &meta,
                parsed.record,
            ));
        }
        if entries.len() != count {
            return Err(IndexError::corrupt(
                &cpath,
                0,
                format!(
                    "{} lines but the manifest says {count} chunks (truncated?)",
                    entries.len()
                ),
            ));
        }
        // Lines are checked first (their errors name the line); then size and hash.
        if found != chunks_record.bytes {
            return Err(IndexError::corrupt(
                &cpath,
                0,
                format!(
                    "expected {} bytes (from the manifest), found {found}",
                    chunks_record.bytes
                ),
            ));
        }
        let got = crate::hash_hex(&chunks_hash.finalize());
        if got != chunks_record.sha256 {
            return Err(IndexError::corrupt(
                &cpath,
                0,
                format!(
                    "content does not match the manifest: {got}, expected {}",
                    chunks_record.sha256
                ),
            ));
        }
        Ok(Parts {
            manifest,
            vectors,
            records,
            table: Table::Lines(entries),
            table_hash: None,
            vector_sums,
            lexical,
        })
    }

    /// Checks, before anything is ranked, that the vectors are those the ingest wrote: one
    /// pass over `vectors.f32` (about as long as one search; done once per opened index,
    /// before its first search) that refuses, naming the file and where:
    ///
    /// - a row that is not a finite unit vector (squared norm within 1e-3 of 1), naming the
    ///   row and chunk (NaN, infinity, a changed exponent);
    /// - a block of rows whose CRC-32 differs from the manifest's (format version 3): any
    ///   changed bit, a swapped pair of rows, a block of zeros; named by block, rows and
    ///   chunks;
    /// - for an index written before version 3 (no block checksums), a file whose SHA-256
    ///   differs from the manifest's: the whole file is hashed instead, which costs more.
    ///
    /// In the same pass (format version 2 and later) the binary chunk table `chunks.bin` is
    /// hashed and compared with the manifest, as every open of a version-1 index did with
    /// `chunks.jsonl`. [`Index::verify`] also hashes `records.jsonl` and every file whole.
    pub fn check_vectors(&self) -> Result<()> {
        let outcome = self.vectors_checked.get_or_init(|| {
            let (vectors, table) = rayon::join(
                || match &self.vector_sums {
                    Some((rows, sums)) => self.vector_blocks(*rows, sums),
                    None => {
                        let (norms, digest) =
                            rayon::join(|| self.vector_norms(), || self.vectors_digest());
                        norms.and(digest)
                    }
                },
                || self.table_digest(),
            );
            table.and(vectors)
        });
        outcome
            .clone()
            .map_err(|(file, m)| IndexError::corrupt(&self.dir.join(file), 0, m))
    }

    /// Whether the vectors are checked block by block before the first search (format
    /// version 3); older indexes have their vector file hashed whole instead.
    pub fn has_block_checksums(&self) -> bool {
        self.vector_sums.is_some()
    }

    /// Format version 3: norms and block checksums in one pass, blocks in parallel, each
    /// row's checksum taken while its bytes are in cache from the norm. The first damaged
    /// block in row order is the error, whatever the thread count.
    fn vector_blocks(
        &self,
        rows: usize,
        sums: &[u32],
    ) -> std::result::Result<(), (&'static str, String)> {
        let n = self.len();
        let bytes = self.vector_bytes();
        let row_bytes = self.dimension() * 4;
        let first_bad = (0..sums.len())
            .into_par_iter()
            .map(|block| {
                let (start, end) = (block * rows, ((block + 1) * rows).min(n));
                let mut crc = crc32fast::Hasher::new();
                for row in start..end {
                    if !is_unit(squared_norm(self.vector(row))) {
                        return Err(self.not_a_unit_vector(row));
                    }
                    crc.update(&bytes[row * row_bytes..(row + 1) * row_bytes]);
                }
                let got = crc.finalize();
                if got == sums[block] {
                    return Ok(());
                }
                let last = end.saturating_sub(1);
                Err((
                    files::VECTORS,
                    format!(
                        "block {block} (rows {start}-{last}, chunks \"{}\" to \"{}\") does not \
                         match its checksum in the manifest (CRC-32 {got:08x}, expected {:08x}): \
                         the file is damaged; rebuild the index",
                        veredicto_core::redact::short(self.table.id(start)),
                        veredicto_core::redact::short(self.table.id(last)),
                        sums[block]
                    ),
                ))
            })
            .find_first(|r| r.is_err());
        match first_bad {
            Some(Err(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// Before format version 3: every row's norm (the whole file is hashed beside it).
    fn vector_norms(&self) -> std::result::Result<(), (&'static str, String)> {
        let dim = self.dimension();
        let bad = self
            .vectors()
            .par_chunks(dim.max(1))
            .position_first(|row| !is_unit(squared_norm(row)));
        match bad {
            None => Ok(()),
            Some(row) => Err(self.not_a_unit_vector(row)),
        }
    }

    fn not_a_unit_vector(&self, row: usize) -> (&'static str, String) {
        let v = self.vector(row);
        let n = crate::kernel::dot(v, v);
        let block = match &self.vector_sums {
            Some((rows, _)) => format!(", block {}", row / rows),
            None => String::new(),
        };
        (
            files::VECTORS,
            format!(
                "row {row} (chunk \"{}\"{block}) is not a finite unit vector (squared norm \
                 {n}): the file is damaged; rebuild the index",
                veredicto_core::redact::short(self.table.id(row))
            ),
        )
    }

    /// Before format version 3: the SHA-256 of the whole of `vectors.f32` against the
    /// manifest (there are no block checksums to check instead).
    fn vectors_digest(&self) -> std::result::Result<(), (&'static str, String)> {
        let Some(record) = self.manifest.files.get(files::VECTORS) else {
            return Err((
                files::MANIFEST,
                format!("`files` has no entry for {}", files::VECTORS),
            ));
        };
        let got = crate::hash_hex(&Sha256::digest(self.vector_bytes()));
        if got == record.sha256 {
            Ok(())
        } else {
            Err((
                files::VECTORS,
                format!(
                    "content does not match the manifest: {got}, expected {}: the file is \
                     damaged; rebuild the index",
                    record.sha256
                ),
            ))
        }
    }

    fn table_digest(&self) -> std::result::Result<(), (&'static str, String)> {
        let (Some(expected), Table::Binary(table)) = (&self.table_hash, &self.table) else {
            return Ok(());
        };
        let got = crate::hash_hex(&Sha256::digest(table.bytes()));
        if &got == expected {
            table.meta_problem().map_err(|m| (files::CHUNK_TABLE, m))
        } else {
            Err((
                files::CHUNK_TABLE,
                format!("content does not match the manifest: {got}, expected {expected}"),
            ))
        }
    }

    /// Checks every data file's size and SHA-256 against the manifest (reads all of them),
    /// then the vectors themselves ([`Index::check_vectors`]). The first mismatch is the
    /// error, naming the file.
    pub fn verify(&self) -> Result<()> {
        for (name, record) in &self.manifest.files {
            let path = self.dir.join(name);
            let mut file = self.folder.file(name)?;
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 1 << 20];
            let mut total = 0u64;
            loop {
                let n = file.read(&mut buf).map_err(|e| IndexError::io(&path, e))?;
                if n == 0 {
                    break;
                }
                total += n as u64;
                hasher.update(&buf[..n]);
            }
            let got = crate::hash_hex(&hasher.finalize());
            if total != record.bytes || got != record.sha256 {
                return Err(IndexError::corrupt(
                    &path,
                    0,
                    format!(
                        "content does not match the manifest: {total} bytes with {got}, \
                         expected {} bytes with {}",
                        record.bytes, record.sha256
                    ),
                ));
            }
        }
        self.check_vectors()
    }

    /// The folder the index was opened from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the index holds no chunk.
    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    /// Number of components per vector.
    pub fn dimension(&self) -> usize {
        self.manifest.dimension
    }

    /// The model fingerprint hash the index was built with.
    pub fn model_hash(&self) -> &str {
        &self.manifest.model_hash
    }

    /// Refuses a model other than the index's ([`IndexError::ModelMismatch`]); call it
    /// before embedding queries with `model_hash`.
    pub fn check_model(&self, model_hash: &str) -> Result<()> {
        if model_hash == self.manifest.model_hash {
            Ok(())
        } else {
            Err(IndexError::ModelMismatch {
                path: self.dir.join(files::MANIFEST),
                index: self.manifest.model_hash.clone(),
                given: model_hash.to_string(),
            })
        }
    }

    /// The chunk at `row` (panics if `row >= len()`, like slice indexing).
    pub fn chunk(&self, row: usize) -> ChunkRef<'_> {
        assert!(
            row < self.len(),
            "row {row} out of range (len {})",
            self.len()
        );
        ChunkRef { index: self, row }
    }

    /// The chunk with ID `id`, if present.
    pub fn get(&self, id: &str) -> Option<ChunkRef<'_>> {
        self.row_of(id).map(|row| ChunkRef { index: self, row })
    }

    /// The row of chunk `id` (binary search: rows are in ID order).
    pub fn row_of(&self, id: &str) -> Option<usize> {
        self.table.row_of(id)
    }

    /// Every chunk, in row (= ID) order.
    pub fn chunks(&self) -> impl ExactSizeIterator<Item = ChunkRef<'_>> + '_ {
        (0..self.len()).map(move |row| ChunkRef { index: self, row })
    }

    /// The vector of `row` (L2-normalised).
    pub fn vector(&self, row: usize) -> &[f32] {
        let d = self.dimension();
        &self.vectors()[row * d..(row + 1) * d]
    }

    /// All vectors, row-major.
    pub fn vectors(&self) -> &[f32] {
        match &self.vectors {
            // SAFETY: the map is page-aligned (so f32-aligned), its length is a multiple of 4
            // (checked at open), and any bit pattern is a valid f32.
            Some(m) => unsafe { std::slice::from_raw_parts(m.as_ptr().cast::<f32>(), m.len() / 4) },
            None => &[],
        }
    }

    /// The bytes of `vectors.f32` as mapped.
    fn vector_bytes(&self) -> &[u8] {
        self.vectors.as_deref().unwrap_or(&[])
    }

    /// The chunk table.
    pub(crate) fn table(&self) -> &Table {
        &self.table
    }

    /// The lexical arm's mapped files, when the index has one.
    pub(crate) fn lexical_files(&self) -> Option<&crate::lexical::LexicalFiles> {
        self.lexical.as_ref()
    }

    /// The lexical arm, checked against the manifest and opened once (before the first
    /// lexical search); [`IndexError::NoLexicalArm`] when the index has none.
    pub(crate) fn lexical_searcher(&self) -> Result<&crate::lexical::Searcher> {
        let Some(files) = &self.lexical else {
            return Err(IndexError::NoLexicalArm {
                path: self.dir.join(files::MANIFEST),
            });
        };
        match self
            .lexical_searcher
            .get_or_init(|| crate::lexical::Searcher::open(files, &self.table))
        {
            Ok(s) => Ok(s),
            Err((file, m)) => Err(IndexError::corrupt(&self.dir.join(file), 0, m.clone())),
        }
    }
}

/// Maps the lexical arm's files (those the manifest lists as `lexical/NAME`), checking each
/// one's size; `None` when the manifest has no `lexical` section. Files without a section,
/// or a section without `lexical/meta.json`, are refused.
fn read_lexical(
    dir: &Path,
    folder: &Folder,
    manifest: &Manifest,
) -> Result<Option<crate::lexical::LexicalFiles>> {
    let mpath = dir.join(files::MANIFEST);
    let listed: Vec<(&str, &crate::manifest::FileRecord)> = manifest
        .files
        .iter()
        .filter_map(|(n, r)| crate::lexical::lexical_name(n).map(|l| (l, r)))
        .collect();
    let Some(record) = &manifest.lexical else {
        if let Some((name, _)) = listed.first() {
            return Err(IndexError::corrupt(
                &mpath,
                0,
                format!(
                    "`files` lists {}{name} but the manifest has no `lexical` section",
                    files::LEXICAL_PREFIX
                ),
            ));
        }
        return Ok(None);
    };
    if manifest.format_version < 4 {
        return Err(IndexError::corrupt(
            &mpath,
            0,
            "a `lexical` section needs format version 4",
        ));
    }
    if !listed.iter().any(|(n, _)| *n == "meta.json") {
        return Err(IndexError::corrupt(
            &mpath,
            0,
            format!(
                "`files` must list {}meta.json (the BM25 arm's own manifest)",
                files::LEXICAL_PREFIX
            ),
        ));
    }
    let mut out = std::collections::BTreeMap::new();
    for (name, rec) in listed {
        if !crate::lexical::valid_file_name(name) {
            return Err(IndexError::corrupt(
                &mpath,
                0,
                format!(
                    "`files` lists {:?}, not a plain file name",
                    veredicto_core::redact::short(name)
                ),
            ));
        }
        let full = format!("{}{name}", files::LEXICAL_PREFIX);
        let expected = rec.bytes;
        let bytes = match map_file(folder, &full, expected, |found| {
            format!("expected {expected} bytes (from the manifest), found {found}")
        })? {
            Some(map) => tantivy::directory::OwnedBytes::new(map),
            None => tantivy::directory::OwnedBytes::empty(),
        };
        out.insert(name.to_string(), (bytes, rec.clone()));
    }
    Ok(Some(crate::lexical::LexicalFiles {
        record: record.clone(),
        files: out,
    }))
}

fn missing_file_record(dir: &Path, name: &str) -> IndexError {
    IndexError::corrupt(
        &dir.join(files::MANIFEST),
        0,
        format!("`files` has no entry for {name}"),
    )
}

/// What [`Index::read_version`] read.
struct Parts {
    manifest: Manifest,
    vectors: Option<Mmap>,
    records: Option<Mmap>,
    table: Table,
    /// The manifest's SHA-256 of `chunks.bin`, checked before the first search.
    table_hash: Option<String>,
    vector_sums: Option<(usize, Vec<u32>)>,
    lexical: Option<crate::lexical::LexicalFiles>,
}

impl Parts {
    fn into_index(self, dir: &Path, folder: Folder) -> Index {
        Index {
            dir: dir.to_path_buf(),
            manifest: self.manifest,
            vectors: self.vectors,
            records: self.records,
            table: self.table,
            table_hash: self.table_hash,
            vector_sums: self.vector_sums,
            vectors_checked: OnceLock::new(),
            lexical: self.lexical,
            lexical_searcher: OnceLock::new(),
            folder,
        }
    }
}

/// An index folder held open: its files are opened relative to it (`openat` on Unix), so
/// they all come from the version that was there when it was opened, even if a writer
/// renames a new version into its place meanwhile.
#[derive(Debug)]
struct Folder {
    path: PathBuf,
    #[cfg(unix)]
    handle: File,
}

impl Folder {
    fn open(dir: &Path) -> Result<Folder> {
        #[cfg(unix)]
        {
            // A missing folder is reported as its missing manifest (what callers look for).
            let handle =
                File::open(dir).map_err(|e| IndexError::io(&dir.join(files::MANIFEST), e))?;
            Ok(Folder {
                path: dir.to_path_buf(),
                handle,
            })
        }
        #[cfg(not(unix))]
        Ok(Folder {
            path: dir.to_path_buf(),
        })
    }

    /// Whether the path now names another folder than the one held (a writer swapped a new
    /// version in).
    fn replaced(&self) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            match (self.handle.metadata(), std::fs::metadata(&self.path)) {
                (Ok(held), Ok(now)) => held.dev() != now.dev() || held.ino() != now.ino(),
                _ => false,
            }
        }
        #[cfg(not(unix))]
        false
    }

    fn file(&self, name: &str) -> Result<File> {
        let path = self.path.join(name);
        #[cfg(unix)]
        {
            use std::os::unix::io::{AsRawFd, FromRawFd};
            let c = std::ffi::CString::new(name).map_err(|_| IndexError::Destination {
                path: path.clone(),
                message: "file name contains a NUL byte".into(),
            })?;
            // SAFETY: a valid folder descriptor and NUL-terminated name; on success the new
            // descriptor is owned by the returned File.
            let fd = unsafe {
                libc::openat(
                    self.handle.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(IndexError::io(&path, std::io::Error::last_os_error()));
            }
            // SAFETY: `fd` was just opened and is owned by no one else.
            Ok(unsafe { File::from_raw_fd(fd) })
        }
        #[cfg(not(unix))]
        File::open(&path).map_err(|e| IndexError::io(&path, e))
    }
}

/// Maps file `name` of `folder` read-only after checking its length; `None` for an empty file.
fn map_file(
    folder: &Folder,
    name: &str,
    expected: u64,
    message: impl Fn(u64) -> String,
) -> Result<Option<Mmap>> {
    let path = &folder.path.join(name);
    let file = folder.file(name)?;
    let found = file.metadata().map_err(|e| IndexError::io(path, e))?.len();
    if found != expected {
        return Err(IndexError::corrupt(path, 0, message(found)));
    }
    if found == 0 {
        return Ok(None);
    }
    // SAFETY: the index files are never modified in place (writers build a new folder and
    // rename it over the old one), so the mapping's contents do not change under us.
    let map = unsafe { Mmap::map(&file) }.map_err(|e| IndexError::io(path, e))?;
    Ok(Some(map))
}

/// Whether a squared norm is that of a finite unit vector (within [`NORM_TOLERANCE`]).
fn is_unit(squared_norm: f32) -> bool {
    squared_norm.is_finite() && (squared_norm - 1.0).abs() <= NORM_TOLERANCE
}

/// The squared norm for the check on open, in 16 independent lanes (the compiler turns them
/// into vector instructions): a tolerance check needs no particular summation order, and one
/// sequential multiply-add chain per row made the check a tenth of an exam's CPU time.
fn squared_norm(row: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    let mut blocks = row.chunks_exact(16);
    for b in &mut blocks {
        for (a, x) in acc.iter_mut().zip(b) {
            *a += x * x;
        }
    }
    let tail: f32 = blocks.remainder().iter().map(|x| x * x).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_open_checks_norm_agrees_with_the_score_kernel_and_sees_damage() {
        for dim in [1usize, 5, 16, 17, 384, 1000] {
            let v: Vec<f32> = (0..dim)
                .map(|i| ((i * 7 % 13) as f32 - 6.0) / 9.0)
                .collect();
            let (a, b) = (super::squared_norm(&v), crate::kernel::dot(&v, &v));
            assert!((a - b).abs() <= 1e-5 * b.max(1.0), "dim {dim}: {a} vs {b}");
            let mut bad = v.clone();
            bad[dim / 2] = f32::NAN;
            assert!(!super::squared_norm(&bad).is_finite());
            bad[dim / 2] = f32::INFINITY;
            assert!(!super::squared_norm(&bad).is_finite());
        }
    }
}
