//! The fast run reader behind `veredicto trec`.
//!
//! The file is read in large blocks; each block is cut at line ends into pieces that are
//! parsed in parallel (rayon). Only the results of queries the caller asks for (those in the
//! qrels) are kept, in compact form: per result an 8-byte score key and the docno's place in
//! a per-piece byte arena. Every line is still validated, and the first error in file order is
//! reported, whatever the number of threads. Queries are found again through a per-query
//! list of record ranges, so the file may list queries in any order.

use super::{check_utf8, parse_run_line_at, RunLine};
use crate::error::{FormatError, Result};
use rayon::prelude::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use veredicto_core::trec::score_key;

/// Bytes read per block.
const BLOCK: usize = 16 << 20;
/// Target size of a piece parsed by one task.
const PIECE: usize = 2 << 20;

/// Where the run comes from.
pub enum RunSource<'a> {
    /// A file.
    Path(&'a Path),
    /// Any reader (standard input); `name` names it in errors.
    Reader {
        /// The reader.
        reader: Box<dyn Read + Send + 'a>,
        /// How errors name it.
        name: PathBuf,
    },
}

/// Results of one piece, in arena order: result `i` has score key `keys[i]` and docno
/// `arena[ends[i-1]..ends[i]]` (`ends[-1]` = 0). 12 bytes per result plus the docno.
#[derive(Default)]
struct Records {
    arena: Vec<u8>,
    keys: Vec<u64>,
    ends: Vec<u32>,
}

impl Records {
    #[inline]
    fn docno(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start..self.ends[i] as usize]
    }

    #[inline]
    fn push(&mut self, key: u64, docno: &[u8]) -> bool {
        let Ok(end) = u32::try_from(self.arena.len() + docno.len()) else {
            return false;
        };
        self.arena.extend_from_slice(docno);
        self.keys.push(key);
        self.ends.push(end);
        true
    }

    fn len(&self) -> usize {
        self.keys.len()
    }
}

struct Piece {
    recs: Records,
    /// `(query, start, end)` ranges of `recs`.
    runs: Vec<(u32, u32, u32)>,
    lines: u64,
    /// Whether the piece has a result line (of any query).
    has_results: bool,
    runid: Option<Vec<u8>>,
    error: Option<(u64, &'static str, String)>,
}

/// The results of the requested queries, compact.
pub struct IndexedRun {
    runid: String,
    pieces: Vec<Records>,
    /// `(piece, start, end)` per query, grouped by query (`starts` indexes it).
    ranges: Vec<(u32, u32, u32)>,
    starts: Vec<usize>,
    lines: u64,
    has_results: bool,
}

impl IndexedRun {
    /// The run id of the last result line.
    pub fn runid(&self) -> &str {
        &self.runid
    }

    /// Number of lines read.
    pub fn num_lines(&self) -> u64 {
        self.lines
    }

    /// Whether the file has at least one result line (of any query).
    pub fn has_results(&self) -> bool {
        self.has_results
    }

    /// Whether query `q` has results.
    pub fn has_query(&self, q: u32) -> bool {
        let q = q as usize;
        q + 1 < self.starts.len() && self.starts[q] < self.starts[q + 1]
    }

    /// Appends `(score key, docno)` of every result of query `q`, in file order.
    pub fn docs_into<'a>(&'a self, q: u32, out: &mut Vec<(u64, &'a [u8])>) {
        let q = q as usize;
        if q + 1 >= self.starts.len() {
            return;
        }
        for &(piece, start, end) in &self.ranges[self.starts[q]..self.starts[q + 1]] {
            let recs = &self.pieces[piece as usize];
            out.extend((start as usize..end as usize).map(|i| (recs.keys[i], recs.docno(i))));
        }
    }
}

/// Reads a run, keeping the results of the queries that `query_index` maps to an index below
/// `num_queries` (other lines are validated and dropped; `usize::MAX` keeps every query that
/// gets an index).
pub fn read_run_indexed(
    source: RunSource<'_>,
    query_index: &(dyn Fn(&[u8]) -> Option<u32> + Sync),
    num_queries: usize,
) -> Result<IndexedRun> {
    read_blocks(source, query_index, num_queries, BLOCK, PIECE)
}

fn read_blocks(
    source: RunSource<'_>,
    query_index: &(dyn Fn(&[u8]) -> Option<u32> + Sync),
    num_queries: usize,
    block: usize,
    piece: usize,
) -> Result<IndexedRun> {
    let (mut reader, path): (Box<dyn Read + Send + '_>, PathBuf) = match source {
        RunSource::Path(p) => {
            let f = std::fs::File::open(p).map_err(|e| FormatError::io(p, e))?;
            (Box::new(f), p.to_path_buf())
        }
        RunSource::Reader { reader, name } => (reader, name),
    };
    let path = path.as_path();
    let io_err = |e| FormatError::io(path, e);
    let mut pieces: Vec<Piece> = Vec::new();
    let mut line_base = 1u64;
    // Double buffering: the next block is read while the current one is parsed.
    let mut cur: Vec<u8> = Vec::new();
    let mut spare: Vec<u8> = Vec::new();
    let mut eof = fill(&mut reader, &mut cur, block).map_err(io_err)?;
    let mut start = if cur.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    loop {
        let end = if eof {
            cur.len()
        } else {
            match memchr::memrchr(b'\n', &cur) {
                Some(i) => i + 1,
                None => {
                    // One line longer than a block: read on.
                    eof = fill(&mut reader, &mut cur, block).map_err(io_err)?;
                    continue;
                }
            }
        };
        let mut next = std::mem::take(&mut spare);
        next.clear();
        next.extend_from_slice(&cur[end..]);
        let data = &cur[start..end];
        let (read, parsed) = rayon::join(
            || {
                if eof {
                    Ok(true)
                } else {
                    fill(&mut reader, &mut next, block)
                }
            },
            || {
                split_pieces(data, piece)
                    .par_iter()
                    .map(|&(a, b)| parse_piece(&data[a..b], query_index, num_queries))
                    .collect::<Vec<Piece>>()
            },
        );
        for p in parsed {
            if let Some((line, field, message)) = p.error {
                let line = (line_base + line) as usize;
                return Err(FormatError::invalid(path, line, field, message));
            }
            line_base += p.lines;
            pieces.push(p);
        }
        if eof {
            break;
        }
        eof = read.map_err(io_err)?;
        spare = std::mem::replace(&mut cur, next);
        start = 0;
    }
    Ok(assemble(pieces, num_queries, line_base - 1))
}

/// Reads until `buf` holds `want` more bytes or the reader ends; returns whether it ended.
fn fill(reader: &mut dyn Read, buf: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    buf.reserve(want);
    let n = reader.take(want as u64).read_to_end(buf)?;
    Ok(n < want)
}

/// Cuts `data` into pieces of about `piece` bytes at line ends.
fn split_pieces(data: &[u8], piece: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut a = 0;
    while a < data.len() {
        let want = (a + piece).min(data.len());
        let b = if want == data.len() {
            want
        } else {
            match memchr::memchr(b'\n', &data[want..]) {
                Some(i) => want + i + 1,
                None => data.len(),
            }
        };
        out.push((a, b));
        a = b;
    }
    out
}

fn parse_piece(
    data: &[u8],
    query_index: &(dyn Fn(&[u8]) -> Option<u32> + Sync),
    num_queries: usize,
) -> Piece {
    let mut p = Piece {
        recs: Records::default(),
        runs: Vec::new(),
        lines: 0,
        has_results: false,
        runid: None,
        error: None,
    };
    if let Err(e) = check_utf8(data, Path::new(""), 0) {
        if let FormatError::Invalid { line, message, .. } = e {
            p.error = Some((line as u64, "-", message));
        }
        return p;
    }
    p.recs.keys.reserve(data.len() / 48);
    p.recs.ends.reserve(data.len() / 48);
    p.recs.arena.reserve(data.len() / 8);
    let mut last_qid: &[u8] = &[];
    let mut last_q: Option<u32> = None;
    let mut last_runid: &[u8] = &[];
    let mut pos = 0;
    while pos < data.len() {
        let (parsed, used) = parse_run_line_at(&data[pos..]);
        pos += used;
        let line_no = p.lines;
        p.lines += 1;
        let (qid, docno, score, runid) = match parsed {
            Ok(RunLine::Skip) => continue,
            Ok(RunLine::Result {
                qid,
                docno,
                score,
                runid,
            }) => (qid, docno, score, runid),
            Err((field, message)) => {
                p.error = Some((line_no, field, message));
                return p;
            }
        };
        p.has_results = true;
        last_runid = runid;
        if !same_id(qid, last_qid) {
            last_qid = qid;
            last_q = query_index(qid).filter(|&q| (q as usize) < num_queries);
        }
        let Some(q) = last_q else { continue };
        let i = p.recs.len() as u32;
        if !p.recs.push(score_key(score), docno) {
            p.error = Some((line_no, "docno", "too long".to_string()));
            return p;
        }
        match p.runs.last_mut() {
            Some(r) if r.0 == q && r.2 == i => r.2 = i + 1,
            _ => p.runs.push((q, i, i + 1)),
        }
    }
    if p.has_results {
        p.runid = Some(last_runid.to_vec());
    }
    regroup(&mut p);
    p
}

/// If a query's results are scattered over a piece, gathers them (stable) so that each query
/// has one range per piece.
fn regroup(p: &mut Piece) {
    let mut qs: Vec<u32> = p.runs.iter().map(|r| r.0).collect();
    qs.sort_unstable();
    qs.dedup();
    if qs.len() == p.runs.len() {
        return;
    }
    let mut runs = std::mem::take(&mut p.runs);
    runs.sort_by_key(|r| r.0); // stable: keeps file order within a query
    let old = std::mem::take(&mut p.recs);
    let mut recs = Records::default();
    recs.arena.reserve(old.arena.len());
    recs.keys.reserve(old.len());
    recs.ends.reserve(old.len());
    for &(q, a, b) in &runs {
        let start = recs.len() as u32;
        for i in a as usize..b as usize {
            // Cannot overflow: the same bytes fitted before.
            recs.push(old.keys[i], old.docno(i));
        }
        let end = recs.len() as u32;
        match p.runs.last_mut() {
            Some(r) if r.0 == q => r.2 = end,
            _ => p.runs.push((q, start, end)),
        }
    }
    p.recs = recs;
}

fn assemble(pieces: Vec<Piece>, num_queries: usize, lines: u64) -> IndexedRun {
    let mut ranges: Vec<(u32, u32, u32, u32)> = Vec::new(); // (query, piece, start, end)
    let mut runid: Option<Vec<u8>> = None;
    let mut has_results = false;
    let mut stored = Vec::with_capacity(pieces.len());
    for (i, p) in pieces.into_iter().enumerate() {
        for &(q, a, b) in &p.runs {
            ranges.push((q, i as u32, a, b));
        }
        if p.runid.is_some() {
            runid = p.runid;
        }
        has_results |= p.has_results;
        stored.push(p.recs);
    }
    ranges.sort_by_key(|r| (r.0, r.1));
    let seen = ranges.last().map_or(0, |r| r.0 as usize + 1);
    let num_queries = if num_queries == usize::MAX {
        seen
    } else {
        num_queries.max(seen)
    };
    let mut starts = vec![0usize; num_queries + 1];
    for r in &ranges {
        starts[r.0 as usize + 1] += 1;
    }
    for i in 0..num_queries {
        starts[i + 1] += starts[i];
    }
    IndexedRun {
        runid: String::from_utf8_lossy(&runid.unwrap_or_default()).into_owned(),
        pieces: stored,
        ranges: ranges.into_iter().map(|(_, p, a, b)| (p, a, b)).collect(),
        starts,
        lines,
        has_results,
    }
}

/// Byte equality for short ids without a call to `memcmp`.
#[inline]
fn same_id(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(text: &[u8], qids: &[&str]) -> Result<IndexedRun> {
        let lookup = |q: &[u8]| {
            qids.iter()
                .position(|x| x.as_bytes() == q)
                .map(|i| i as u32)
        };
        read_run_indexed(
            RunSource::Reader {
                reader: Box::new(text),
                name: PathBuf::from("run"),
            },
            &lookup,
            qids.len(),
        )
    }

    #[test]
    fn keeps_requested_queries_in_any_order() {
        let text = b"\xEF\xBB\xBF1 Q0 a 1 3 r\n2 Q0 x 1 1 r\n1 Q0 b 2 2 r\r\n# c\n3 Q0 z 1 1 last\n1 Q0 c 1 1 r";
        let run = index(text, &["1", "3", "9"]).unwrap();
        let mut docs = Vec::new();
        run.docs_into(0, &mut docs);
        let names: Vec<&[u8]> = docs.iter().map(|d| d.1).collect();
        assert_eq!(names, [b"a" as &[u8], b"b", b"c"]);
        assert!(run.has_query(1));
        assert!(!run.has_query(2));
        assert_eq!(run.runid(), "r");
        assert_eq!(run.num_lines(), 6);
    }

    #[test]
    fn tiny_blocks_and_pieces_give_the_same_result() {
        let mut text = b"\xEF\xBB\xBF".to_vec();
        for i in 0..300 {
            let q = ["1", "3", "2"][i % 3];
            let tag = if i == 150 {
                "a-very-long-run-tag-".repeat(20)
            } else {
                "r".to_string()
            };
            text.extend_from_slice(format!("{q} Q0 d{i} {i} {}.5 {tag}\r\n", i % 7).as_bytes());
            if i % 50 == 0 {
                text.extend_from_slice(b"# comment\n\n");
            }
        }
        let qids = ["1", "2"];
        let lookup = |q: &[u8]| {
            qids.iter()
                .position(|x| x.as_bytes() == q)
                .map(|i| i as u32)
        };
        let read = |block, piece| {
            read_blocks(
                RunSource::Reader {
                    reader: Box::new(&text[..]),
                    name: PathBuf::from("run"),
                },
                &lookup,
                2,
                block,
                piece,
            )
            .unwrap()
        };
        let whole = read(1 << 20, 1 << 20);
        for (block, piece) in [(40, 40), (97, 13), (1000, 64)] {
            let small = read(block, piece);
            for q in 0..2 {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                whole.docs_into(q, &mut a);
                small.docs_into(q, &mut b);
                assert_eq!(a, b);
                assert_eq!(a.len(), 100);
            }
            assert_eq!(small.num_lines(), whole.num_lines());
            assert_eq!(small.runid(), "r");
        }
        let e = read_blocks(
            RunSource::Reader {
                reader: Box::new(&b"1 Q0 a 1 1 r\n1 Q0 b 1 1 r\n1 Q0 c 1 x r\n"[..]),
                name: PathBuf::from("run"),
            },
            &lookup,
            2,
            16,
            8,
        )
        .err()
        .unwrap();
        assert_eq!(e.to_string(), "run:3: field `score`: not a number: 'x'");
    }

    #[test]
    fn errors_carry_the_file_line() {
        let e = index(b"1 Q0 a 1 3 r\n\n1 Q0 b 2 x r\n", &["1"])
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "run:3: field `score`: not a number: 'x'");
        let e = index(b"1 Q0 a 1 3 r\n1 Q0 \xff 2 1 r\n", &["1"])
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "run:2: field `-`: not valid UTF-8");
    }
}
