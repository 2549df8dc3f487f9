//! The chunk table: what each row stores besides its vector (ID, text hash, vector hash,
//! batch, the range of its original record, filter metadata).
//!
//! Format version 2 keeps it in `chunks.bin`, a binary table that is memory-mapped and checked
//! on open without parsing anything per chunk; format version 1 kept it in `chunks.jsonl`
//! (one JSON line per row), which is still read. The layout of `chunks.bin` (all integers
//! little-endian) is documented in `docs/index.md`:
//!
//! ```text
//! header   64 bytes: magic "VRDCHNK\0", u32 table version (1), u32 row size (48), u64 count,
//!          u64 flags (bit 0: the vector-hash section is present), u64 heap bytes, 24 zero bytes
//! rows     count × 48 bytes: u64 id offset, u32 id length, u32 batch, u64 record offset,
//!          u64 record length, u64 metadata offset, u32 metadata length, u32 row flags
//!          (bit 0 vector hash, bit 1 metadata, bit 2 record)
//! hashes   count × 32 bytes: SHA-256 of each row's embedded text
//! vhashes  count × 32 bytes when header flag bit 0 is set (zeros for rows without one)
//! heap     IDs (UTF-8) and metadata (compact JSON), addressed by the rows' offsets
//! ```

use crate::chunk::{ChunkMeta, Entry, TextHash};
use crate::error::{IndexError, Result};
use memmap2::Mmap;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// First bytes of `chunks.bin`.
pub(crate) const MAGIC: &[u8; 8] = b"VRDCHNK\0";
/// Version of the table layout inside `chunks.bin`.
const TABLE_VERSION: u32 = 1;
/// Bytes of the header.
const HEADER: usize = 64;
/// Bytes of one row.
const ROW: usize = 48;
/// Header flag: the vector-hash section is present.
const HAS_VECTOR_HASHES: u64 = 1;
/// Row flags.
const ROW_VECTOR_HASH: u32 = 1;
const ROW_META: u32 = 2;
const ROW_RECORD: u32 = 4;

static EMPTY_META: ChunkMeta = ChunkMeta {
    domain: None,
    labels: Vec::new(),
    facets: BTreeMap::new(),
    valid_from: None,
    valid_to: None,
};

/// The rows' metadata, in one of the two formats.
#[derive(Debug)]
pub(crate) enum Table {
    /// Format version 1: `chunks.jsonl` parsed into memory on open.
    Lines(Vec<Entry>),
    /// Format version 2: `chunks.bin`, memory-mapped.
    Binary(BinaryTable),
}

impl Table {
    pub(crate) fn len(&self) -> usize {
        match self {
            Table::Lines(e) => e.len(),
            Table::Binary(b) => b.count,
        }
    }

    pub(crate) fn id(&self, row: usize) -> &str {
        match self {
            Table::Lines(e) => &e[row].id,
            Table::Binary(b) => b.id(row),
        }
    }

    pub(crate) fn text_hash(&self, row: usize) -> TextHash {
        match self {
            Table::Lines(e) => e[row].text_hash,
            Table::Binary(b) => TextHash(b.hash32(b.hashes_at, row)),
        }
    }

    pub(crate) fn vector_hash(&self, row: usize) -> Option<TextHash> {
        match self {
            Table::Lines(e) => e[row].vector_hash.as_deref().copied(),
            Table::Binary(b) => match b.vhashes_at {
                Some(at) if b.flags(row) & ROW_VECTOR_HASH != 0 => {
                    Some(TextHash(b.hash32(at, row)))
                }
                _ => None,
            },
        }
    }

    pub(crate) fn batch(&self, row: usize) -> u32 {
        match self {
            Table::Lines(e) => e[row].batch,
            Table::Binary(b) => b.u32_at(b.row_at(row) + 12),
        }
    }

    /// Byte offset and length of the row's line in `records.jsonl`.
    pub(crate) fn record(&self, row: usize) -> Option<(u64, u64)> {
        match self {
            Table::Lines(e) => e[row].record,
            Table::Binary(b) => (b.flags(row) & ROW_RECORD != 0).then(|| {
                let at = b.row_at(row);
                (b.u64_at(at + 16), b.u64_at(at + 24))
            }),
        }
    }

    /// Filter metadata of `row`. On a binary table, the metadata of all rows is parsed on
    /// first use; see [`Table::check_meta`] for the fallible form.
    pub(crate) fn meta(&self, row: usize) -> &ChunkMeta {
        match self {
            Table::Lines(e) => e[row].meta(),
            Table::Binary(b) => {
                if b.flags(row) & ROW_META == 0 {
                    return &EMPTY_META;
                }
                match b.metas() {
                    Ok(metas) => metas.get(&(row as u32)).map_or(&EMPTY_META, |m| &**m),
                    // Only a table whose bytes no longer match the manifest's hash can get
                    // here; that is refused before the first search (`Index::check_vectors`).
                    Err(_) => &EMPTY_META,
                }
            }
        }
    }

    /// Parses the metadata of every row now (binary tables parse it on first use), so that
    /// damage is an error instead of empty metadata.
    pub(crate) fn check_meta(&self) -> Result<()> {
        match self {
            Table::Lines(_) => Ok(()),
            Table::Binary(b) => b.metas().map(|_| ()),
        }
    }

    /// Row of chunk `id` (binary search: rows are in ID order).
    pub(crate) fn row_of(&self, id: &str) -> Option<usize> {
        match self {
            Table::Lines(e) => e.binary_search_by(|x| (*x.id).cmp(id)).ok(),
            Table::Binary(b) => {
                let (mut lo, mut hi) = (0usize, b.count);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    match b.id_bytes(mid).cmp(id.as_bytes()) {
                        std::cmp::Ordering::Less => lo = mid + 1,
                        std::cmp::Ordering::Greater => hi = mid,
                        std::cmp::Ordering::Equal => return Some(mid),
                    }
                }
                None
            }
        }
    }
}

/// `chunks.bin`, mapped and checked.
#[derive(Debug)]
pub(crate) struct BinaryTable {
    path: PathBuf,
    map: Mmap,
    count: usize,
    hashes_at: usize,
    vhashes_at: Option<usize>,
    heap_at: usize,
    /// Metadata of the rows that have some, parsed on first use.
    metas: OnceLock<std::result::Result<BTreeMap<u32, Box<ChunkMeta>>, String>>,
}

impl BinaryTable {
    /// Checks the header and every row of a mapped `chunks.bin` (IDs strictly ascending and
    /// valid UTF-8, batch positions below `batches`, record ranges inside `records_bytes`,
    /// heap ranges inside the heap). Parses nothing per row.
    pub(crate) fn open(
        path: &Path,
        map: Mmap,
        count: usize,
        batches: usize,
        records_bytes: u64,
    ) -> Result<BinaryTable> {
        let corrupt = |m: String| IndexError::corrupt(path, 0, m);
        let b: &[u8] = &map;
        if b.len() < HEADER || &b[..8] != MAGIC {
            return Err(corrupt("not a veredicto chunk table (bad header)".into()));
        }
        let version = read_u32(b, 8);
        let row_size = read_u32(b, 12) as usize;
        if version != TABLE_VERSION || row_size != ROW {
            return Err(corrupt(format!(
                "table version {version} with rows of {row_size} bytes is not supported \
                 (expected version {TABLE_VERSION}, {ROW} bytes)"
            )));
        }
        let found = read_u64(b, 16);
        if found != count as u64 {
            return Err(corrupt(format!(
                "holds {found} rows but the manifest says {count} chunks"
            )));
        }
        let flags = read_u64(b, 24);
        let heap_bytes = read_u64(b, 32);
        if flags & !HAS_VECTOR_HASHES != 0 || b[40..HEADER].iter().any(|&x| x != 0) {
            return Err(corrupt("unknown header flags".into()));
        }
        let hashes_at = HEADER + count * ROW;
        let vhashes_at = (flags & HAS_VECTOR_HASHES != 0).then_some(hashes_at + count * 32);
        let heap_at = vhashes_at.unwrap_or(hashes_at) + count * 32;
        let expected = (heap_at as u64).checked_add(heap_bytes);
        if expected != Some(b.len() as u64) {
            return Err(corrupt(format!(
                "expected {} bytes from its header, found {}{}",
                expected.map_or_else(|| "more than 2^64".into(), |e| e.to_string()),
                b.len(),
                if expected.is_some_and(|e| (b.len() as u64) < e) {
                    " (truncated)"
                } else {
                    ""
                }
            )));
        }
        // Rows are checked in fixed blocks in parallel; the first damaged row (in row order)
        // is the error, whatever the thread count.
        const BLOCK: usize = 1 << 16;
        let check = |block: usize| -> std::result::Result<(), String> {
            let (start, end) = (block * BLOCK, ((block + 1) * BLOCK).min(count));
            check_rows(
                b,
                start..end,
                heap_at,
                heap_bytes,
                vhashes_at.is_some(),
                batches,
                records_bytes,
            )
        };
        let first_bad = (0..count.div_ceil(BLOCK))
            .into_par_iter()
            .map(check)
            .find_first(|r| r.is_err());
        if let Some(Err(m)) = first_bad {
            return Err(corrupt(m));
        }
        Ok(BinaryTable {
            path: path.to_path_buf(),
            map,
            count,
            hashes_at,
            vhashes_at,
            heap_at,
            metas: OnceLock::new(),
        })
    }

    /// The whole file.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Parses every row's metadata now (it is otherwise parsed on first use); the problem,
    /// if any.
    pub(crate) fn meta_problem(&self) -> std::result::Result<(), String> {
        self.parse_metas()
            .as_ref()
            .map(|_| ())
            .map_err(Clone::clone)
    }

    fn parse_metas(&self) -> &std::result::Result<BTreeMap<u32, Box<ChunkMeta>>, String> {
        self.metas.get_or_init(|| {
            let mut out = BTreeMap::new();
            for row in 0..self.count {
                if self.flags(row) & ROW_META == 0 {
                    continue;
                }
                let at = self.row_at(row);
                let start = self.heap_at + self.u64_at(at + 32) as usize;
                let bytes = &self.map[start..start + self.u32_at(at + 40) as usize];
                let meta: ChunkMeta = serde_json::from_slice(bytes)
                    .map_err(|e| format!("row {row}: metadata: {e}"))?;
                out.insert(row as u32, Box::new(meta));
            }
            Ok(out)
        })
    }

    fn row_at(&self, row: usize) -> usize {
        assert!(row < self.count, "row {row} out of range");
        HEADER + row * ROW
    }

    fn u32_at(&self, at: usize) -> u32 {
        read_u32(&self.map, at)
    }

    fn u64_at(&self, at: usize) -> u64 {
        read_u64(&self.map, at)
    }

    fn flags(&self, row: usize) -> u32 {
        self.u32_at(self.row_at(row) + 44)
    }

    fn hash32(&self, section: usize, row: usize) -> [u8; 32] {
        assert!(row < self.count, "row {row} out of range");
        let mut out = [0u8; 32];
        out.copy_from_slice(&self.map[section + row * 32..section + row * 32 + 32]);
        out
    }

    fn id_bytes(&self, row: usize) -> &[u8] {
        let at = self.row_at(row);
        let start = self.heap_at + self.u64_at(at) as usize;
        &self.map[start..start + self.u32_at(at + 8) as usize]
    }

    fn id(&self, row: usize) -> &str {
        // Checked to be UTF-8 when the table was opened (the map never changes).
        std::str::from_utf8(self.id_bytes(row)).unwrap_or_default()
    }

    fn metas(&self) -> Result<&BTreeMap<u32, Box<ChunkMeta>>> {
        self.parse_metas()
            .as_ref()
            .map_err(|m| IndexError::corrupt(&self.path, 0, m.clone()))
    }
}

/// Checks rows `rows` of a `chunks.bin` mapped as `b` (see [`BinaryTable::open`]).
fn check_rows(
    b: &[u8],
    rows: std::ops::Range<usize>,
    heap_at: usize,
    heap_bytes: u64,
    has_vhashes: bool,
    batches: usize,
    records_bytes: u64,
) -> std::result::Result<(), String> {
    let id_of = |row: usize| {
        let at = HEADER + row * ROW;
        let start = heap_at + read_u64(b, at) as usize;
        &b[start..start + read_u32(b, at + 8) as usize]
    };
    // The row before the block was checked by its own block; its ID is in range then, and
    // if it is not, that block reports first.
    let mut prev: Option<&[u8]> = None;
    if rows.start > 0 {
        let at = HEADER + (rows.start - 1) * ROW;
        let (off, len) = (read_u64(b, at), u64::from(read_u32(b, at + 8)));
        if off.checked_add(len).is_some_and(|end| end <= heap_bytes) {
            prev = Some(id_of(rows.start - 1));
        }
    }
    for row in rows {
        let at = HEADER + row * ROW;
        let row_corrupt = |m: String| format!("row {row}: {m}");
        let fl = read_u32(b, at + 44);
        if fl & !(ROW_VECTOR_HASH | ROW_META | ROW_RECORD) != 0 {
            return Err(row_corrupt(format!("unknown row flags {fl:#x}")));
        }
        if fl & ROW_VECTOR_HASH != 0 && !has_vhashes {
            return Err(row_corrupt(
                "a vector hash but no vector-hash section".into(),
            ));
        }
        let (id_off, id_len) = (read_u64(b, at), u64::from(read_u32(b, at + 4 + 4)));
        if id_len == 0
            || id_off
                .checked_add(id_len)
                .is_none_or(|end| end > heap_bytes)
        {
            return Err(row_corrupt("the ID lies outside the table".into()));
        }
        let start = heap_at + id_off as usize;
        let id = &b[start..start + id_len as usize];
        if std::str::from_utf8(id).is_err() {
            return Err(row_corrupt("the ID is not UTF-8".into()));
        }
        if let Some(p) = prev {
            if p >= id {
                return Err(row_corrupt(format!(
                    "chunk IDs must be strictly ascending: {:?} after {:?}",
                    veredicto_core::redact::short(&String::from_utf8_lossy(id)),
                    veredicto_core::redact::short(&String::from_utf8_lossy(p)),
                )));
            }
        }
        prev = Some(id);
        let batch = read_u32(b, at + 12) as usize;
        if batch >= batches {
            return Err(row_corrupt(format!(
                "batch {batch} but the manifest lists {batches} batches"
            )));
        }
        if fl & ROW_RECORD != 0 {
            let (off, len) = (read_u64(b, at + 16), read_u64(b, at + 24));
            if off.checked_add(len).is_none_or(|end| end > records_bytes) {
                return Err(row_corrupt(format!(
                    "record [{off}, {len}] lies outside records.jsonl"
                )));
            }
        }
        if fl & ROW_META != 0 {
            let (off, len) = (read_u64(b, at + 32), u64::from(read_u32(b, at + 40)));
            if off.checked_add(len).is_none_or(|end| end > heap_bytes) {
                return Err(row_corrupt("the metadata lies outside the table".into()));
            }
        }
    }
    Ok(())
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Builds `chunks.bin` in memory, row by row (in row order).
#[derive(Debug, Default)]
pub(crate) struct TableWriter {
    rows: Vec<u8>,
    hashes: Vec<u8>,
    vhashes: Vec<u8>,
    any_vector_hash: bool,
    heap: Vec<u8>,
    count: u64,
}

impl TableWriter {
    /// Appends one row.
    pub(crate) fn push(
        &mut self,
        id: &str,
        text_hash: &TextHash,
        vector_hash: Option<&TextHash>,
        batch: u32,
        meta: &ChunkMeta,
        record: Option<(u64, u64)>,
    ) -> Result<()> {
        let too_long = |what: &str| IndexError::InvalidChunk {
            id: veredicto_core::redact::short(id).to_string(),
            field: what.to_string(),
            message: "longer than 4 GiB".into(),
        };
        let id_off = self.heap.len() as u64;
        let id_len = u32::try_from(id.len()).map_err(|_| too_long("id"))?;
        self.heap.extend_from_slice(id.as_bytes());
        let mut flags = 0u32;
        let (meta_off, meta_len) = if *meta == ChunkMeta::default() {
            (0, 0)
        } else {
            flags |= ROW_META;
            // Serialising plain data cannot fail.
            let json = serde_json::to_vec(meta).unwrap_or_default();
            let off = self.heap.len() as u64;
            self.heap.extend_from_slice(&json);
            (
                off,
                u32::try_from(json.len()).map_err(|_| too_long("metadata"))?,
            )
        };
        if record.is_some() {
            flags |= ROW_RECORD;
        }
        let (rec_off, rec_len) = record.unwrap_or((0, 0));
        match vector_hash {
            Some(h) => {
                flags |= ROW_VECTOR_HASH;
                self.any_vector_hash = true;
                self.vhashes.extend_from_slice(&h.0);
            }
            None => self.vhashes.extend_from_slice(&[0u8; 32]),
        }
        self.hashes.extend_from_slice(&text_hash.0);
        let r = &mut self.rows;
        r.extend_from_slice(&id_off.to_le_bytes());
        r.extend_from_slice(&id_len.to_le_bytes());
        r.extend_from_slice(&batch.to_le_bytes());
        r.extend_from_slice(&rec_off.to_le_bytes());
        r.extend_from_slice(&rec_len.to_le_bytes());
        r.extend_from_slice(&meta_off.to_le_bytes());
        r.extend_from_slice(&meta_len.to_le_bytes());
        r.extend_from_slice(&flags.to_le_bytes());
        self.count += 1;
        Ok(())
    }

    /// The whole file, in pieces to be written in order.
    pub(crate) fn finish(self) -> Vec<Vec<u8>> {
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&TABLE_VERSION.to_le_bytes());
        header.extend_from_slice(&(ROW as u32).to_le_bytes());
        header.extend_from_slice(&self.count.to_le_bytes());
        let flags = if self.any_vector_hash {
            HAS_VECTOR_HASHES
        } else {
            0
        };
        header.extend_from_slice(&flags.to_le_bytes());
        header.extend_from_slice(&(self.heap.len() as u64).to_le_bytes());
        header.resize(HEADER, 0);
        let mut out = vec![header, self.rows, self.hashes];
        if self.any_vector_hash {
            out.push(self.vhashes);
        }
        out.push(self.heap);
        out
    }
}
