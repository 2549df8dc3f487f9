//! TREC qrels and run files, read with trec_eval's rules (see docs/measures.md).
//!
//! **Qrels**: `qid iter docno rel`, exactly four whitespace-separated columns; `iter` is
//! ignored; `rel` is a whole number (negative: in the pool but unjudged).
//!
//! **Run**: `qid Q0 docno rank score run_id`, at least six columns (more are ignored, as
//! trec_eval does); the second and `rank` columns are ignored; `score` must be a finite number.
//! Documents are ranked by score descending, ties broken by docno descending (byte-wise, like
//! C `strcmp`); line order and the rank column do not matter. The run id is the one of the
//! last line, as trec_eval prints it.
//!
//! **Both**: whitespace is any of space, tab, CR, LF, vertical tab, form feed (so CRLF line
//! ends work); a UTF-8 byte-order mark at the start is skipped; the file must be UTF-8. A
//! line whose first character is `#` is a comment (in a run, leading whitespace may come
//! before it); a `#` anywhere else is part of the field (`CR#93E-1860` is a docno). Blank lines
//! are skipped (trec_eval rejects them in qrels; that is the one place veredicto is more
//! lenient). Queries come sorted by qid as trec_eval sorts them (byte-wise).
//!
//! **Stricter than trec_eval**, where trec_eval silently reads garbage as 0: a score or
//! relevance that is not a number is an error naming file, line and field; so are NaN and
//! infinite scores. A document judged twice for one query is an error (trec_eval only
//! complains when it evaluates that query). A document retrieved twice for one query is an
//! error in [`read_run`] (trec_eval also rejects it, but only for the queries it evaluates
//! and among the documents kept by `-M`; `veredicto trec` follows trec_eval there);
//! [`read_run_keeping_duplicates`] keeps it, for the exam, which keeps the first occurrence
//! and reports the others.

mod indexed;

pub use indexed::{read_run_indexed, IndexedRun, RunSource};

use crate::error::{FormatError, Result};
use crate::text::strip_bom;
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use veredicto_core::trec::{
    find_duplicate, hash::IdBuildHasher, key_score, sort_trec_keyed, Scratch,
};

/// One relevance judgement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgment {
    /// Document id.
    pub docno: String,
    /// Relevance level (negative: in the pool but not judged).
    pub rel: i32,
}

/// The judgements of one query, sorted by docno (byte-wise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QrelsQuery {
    /// Query id.
    pub qid: String,
    /// Judgements, sorted by docno.
    pub judgments: Vec<Judgment>,
}

/// A qrels file: queries sorted by qid (byte-wise).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Qrels {
    /// Queries, sorted by qid.
    pub queries: Vec<QrelsQuery>,
}

impl Qrels {
    /// The judgements of `qid`, if any.
    pub fn query(&self, qid: &str) -> Option<&QrelsQuery> {
        self.queries
            .binary_search_by(|q| q.qid.as_bytes().cmp(qid.as_bytes()))
            .ok()
            .map(|i| &self.queries[i])
    }

    /// Number of judgements.
    pub fn num_judgments(&self) -> usize {
        self.queries.iter().map(|q| q.judgments.len()).sum()
    }
}

/// One retrieved document.
#[derive(Clone, Debug, PartialEq)]
pub struct RankedDoc {
    /// Document id.
    pub docno: String,
    /// Retrieval score.
    pub score: f64,
}

/// The ranking of one query, in trec_eval order (score descending, docno descending).
#[derive(Clone, Debug, PartialEq)]
pub struct RunQuery {
    /// Query id.
    pub qid: String,
    /// Documents in trec_eval order.
    pub docs: Vec<RankedDoc>,
}

/// A run file: queries sorted by qid (byte-wise).
#[derive(Clone, Debug, PartialEq)]
pub struct TrecRun {
    /// The run id of the last line.
    pub runid: String,
    /// Queries, sorted by qid.
    pub queries: Vec<RunQuery>,
}

impl TrecRun {
    /// The ranking of `qid`, if any.
    pub fn query(&self, qid: &str) -> Option<&RunQuery> {
        self.queries
            .binary_search_by(|q| q.qid.as_bytes().cmp(qid.as_bytes()))
            .ok()
            .map(|i| &self.queries[i])
    }
}

/// Columns of a qrels line.
pub const QRELS_COLUMNS: [&str; 4] = ["qid", "iter", "docno", "rel"];
/// Columns of a run line.
pub const RUN_COLUMNS: [&str; 6] = ["qid", "Q0", "docno", "rank", "score", "run_id"];

/// A parse problem in one line: the field and the message.
pub(crate) type LineError = (&'static str, String);

/// trec_eval's whitespace (C `isspace`): space, tab, LF, CR, vertical tab, form feed.
static SPACE: [bool; 256] = {
    let mut t = [false; 256];
    t[b' ' as usize] = true;
    t[b'\t' as usize] = true;
    t[b'\n' as usize] = true;
    t[b'\r' as usize] = true;
    t[0x0b] = true;
    t[0x0c] = true;
    t
};

/// Whether `b` is trec_eval's whitespace.
#[inline]
pub(crate) fn is_space(b: u8) -> bool {
    SPACE[b as usize]
}

/// Splits up to `N` whitespace-separated fields; returns them and how many fields the line
/// has in total (counting past `N` only as far as `count_all` asks).
#[inline]
pub(crate) fn fields<const N: usize>(line: &[u8], count_all: bool) -> ([&[u8]; N], usize) {
    let mut out: [&[u8]; N] = [&[]; N];
    let mut n = 0;
    let mut i = 0;
    let len = line.len();
    while i < len {
        while i < len && is_space(line[i]) {
            i += 1;
        }
        if i == len {
            break;
        }
        let start = i;
        while i < len && !is_space(line[i]) {
            i += 1;
        }
        if n < N {
            out[n] = &line[start..i];
        } else if !count_all {
            return (out, n + 1);
        }
        n += 1;
    }
    (out, n)
}

fn column_error(columns: &[&'static str], found: usize) -> LineError {
    let field = columns.get(found).copied().unwrap_or("line");
    let message = format!(
        "line has {found} column{}, expected {} ({})",
        if found == 1 { "" } else { "s" },
        columns.len(),
        columns.join(" ")
    );
    (field, message)
}

/// Parses a score: a finite decimal number.
#[inline]
pub(crate) fn parse_score(tok: &[u8]) -> std::result::Result<f64, LineError> {
    if let Some(x) = parse_plain_decimal(tok) {
        return Ok(x);
    }
    let text = std::str::from_utf8(tok).unwrap_or("");
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(("score", format!("not a finite number: '{text}'"))),
        Err(_) => Err((
            "score",
            format!("not a number: '{}'", String::from_utf8_lossy(tok)),
        )),
    }
}

/// Powers of ten that `f64` holds exactly.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Fast path for the usual `[-+]ddd.ddd` scores: when the digits fit in 53 bits and there are
/// at most 22 decimals, `digits / 10^decimals` is one correctly rounded division of two exact
/// values, so the result is the correctly rounded value, the same as `str::parse`. Anything
/// else (exponents, long mantissas, words) returns `None` for the general parser.
#[inline]
fn parse_plain_decimal(tok: &[u8]) -> Option<f64> {
    let (neg, body) = match tok.first()? {
        b'-' => (true, &tok[1..]),
        b'+' => (false, &tok[1..]),
        _ => (false, tok),
    };
    let mut mant: u64 = 0;
    let mut i = 0;
    while i < body.len() && body[i].is_ascii_digit() {
        mant = mant
            .wrapping_mul(10)
            .wrapping_add(u64::from(body[i] - b'0'));
        i += 1;
    }
    let int_digits = i;
    let mut decimals = 0usize;
    if i < body.len() && body[i] == b'.' {
        i += 1;
        let start = i;
        while i < body.len() && body[i].is_ascii_digit() {
            mant = mant
                .wrapping_mul(10)
                .wrapping_add(u64::from(body[i] - b'0'));
            i += 1;
        }
        decimals = i - start;
    }
    let digits = int_digits + decimals;
    if i != body.len() || digits > 19 {
        return None;
    }
    if digits == 0 || mant > (1u64 << 53) || decimals >= POW10.len() {
        return None;
    }
    let v = mant as f64 / POW10[decimals];
    Some(if neg { -v } else { v })
}

/// What a run line holds.
pub(crate) enum RunLine<'a> {
    /// Blank or comment.
    Skip,
    /// A result.
    Result {
        qid: &'a [u8],
        docno: &'a [u8],
        score: f64,
        runid: &'a [u8],
    },
}

/// Parses one run line (without its `\n`).
#[inline]
pub(crate) fn parse_run_line(line: &[u8]) -> std::result::Result<RunLine<'_>, LineError> {
    parse_run_line_at(line).0
}

/// The index of the first whitespace byte at or after `i` (or `data.len()`). Eight bytes at a
/// time: a byte-parallel "less than 0x21" test finds the first candidate exactly (borrows only
/// run upwards from a true candidate), and the table decides whether it is whitespace.
#[inline]
fn token_end(data: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while i + 8 <= data.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&data[i..i + 8]);
        let w = u64::from_le_bytes(word);
        let below = w.wrapping_sub(ONES * 0x21) & !w & HIGH;
        if below == 0 {
            i += 8;
            continue;
        }
        let at = i + (below.trailing_zeros() / 8) as usize;
        if is_space(data[at]) {
            return at;
        }
        i = at + 1; // a control character that is not whitespace: part of the token
    }
    while i < data.len() && !is_space(data[i]) {
        i += 1;
    }
    i
}

/// Parses the run line at the start of `data` (which may hold further lines); returns it with
/// the length of the line, its `\n` included. One pass over the bytes.
#[inline]
pub(crate) fn parse_run_line_at(
    data: &[u8],
) -> (std::result::Result<RunLine<'_>, LineError>, usize) {
    let len = data.len();
    let mut f = [(0usize, 0usize); 6];
    let mut n = 0;
    let mut i = 0;
    while n < 6 {
        while i < len && data[i] != b'\n' && is_space(data[i]) {
            i += 1;
        }
        if i == len || data[i] == b'\n' {
            break;
        }
        if n == 0 && data[i] == b'#' {
            return (Ok(RunLine::Skip), line_end(data, i));
        }
        let start = i;
        i = token_end(data, i);
        f[n] = (start, i);
        n += 1;
    }
    let end = line_end(data, i);
    if n == 0 {
        return (Ok(RunLine::Skip), end);
    }
    if n < 6 {
        return (Err(column_error(&RUN_COLUMNS, n)), end);
    }
    let field = |k: usize| &data[f[k].0..f[k].1];
    let line = match parse_score(field(4)) {
        Ok(score) => Ok(RunLine::Result {
            qid: field(0),
            docno: field(2),
            score,
            runid: field(5),
        }),
        Err(e) => Err(e),
    };
    (line, end)
}

/// The end of the line that contains `data[i]`, its `\n` included.
#[inline]
fn line_end(data: &[u8], i: usize) -> usize {
    match data.get(i) {
        Some(b'\n') => i + 1,
        None => data.len(),
        Some(_) => memchr::memchr(b'\n', &data[i..]).map_or(data.len(), |k| i + k + 1),
    }
}

/// `(qid, docno, rel)` of a qrels line.
pub(crate) type QrelsLine<'a> = (&'a [u8], &'a [u8], i32);

/// Parses one qrels line: `None` for blank and comment lines.
#[inline]
pub(crate) fn parse_qrels_line(
    line: &[u8],
) -> std::result::Result<Option<QrelsLine<'_>>, LineError> {
    if line.first() == Some(&b'#') || line.iter().all(|&b| is_space(b)) {
        return Ok(None);
    }
    let (f, n) = fields::<4>(line, true);
    if n != 4 {
        return Err(column_error(&QRELS_COLUMNS, n));
    }
    let text = std::str::from_utf8(f[3]).unwrap_or("");
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    let rel = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<i32>()
            .map_err(|_| ("rel", format!("out of range: '{text}'")))?
    } else {
        return Err((
            "rel",
            format!("not a whole number: '{}'", String::from_utf8_lossy(f[3])),
        ));
    };
    Ok(Some((f[0], f[2], rel)))
}

/// Checks that `bytes` is UTF-8; otherwise names the 1-based line (counted from `first_line`).
pub(crate) fn check_utf8(bytes: &[u8], path: &Path, first_line: u64) -> Result<()> {
    match std::str::from_utf8(bytes) {
        Ok(_) => Ok(()),
        Err(e) => {
            let line =
                first_line + memchr::memchr_iter(b'\n', &bytes[..e.valid_up_to()]).count() as u64;
            Err(FormatError::invalid(
                path,
                line as usize,
                "-",
                "not valid UTF-8",
            ))
        }
    }
}

/// Iterates `(1-based line number, line without \n)`.
pub(crate) fn numbered_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut start = 0;
    let mut n = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        n += 1;
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let line = &bytes[start..end];
        start = end + 1;
        Some((n, line))
    })
}

fn utf8(b: &[u8]) -> String {
    // The whole file was checked to be UTF-8 before fields were cut from it.
    String::from_utf8_lossy(b).into_owned()
}

/// Reads a qrels file.
pub fn read_qrels(path: &Path) -> Result<Qrels> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    parse_qrels(&bytes, path)
}

/// Parses qrels text; `path` only names the source in errors.
pub fn parse_qrels(bytes: &[u8], path: &Path) -> Result<Qrels> {
    let bytes = strip_bom(bytes);
    check_utf8(bytes, path, 1)?;
    // Per query: `(docno, rel, line)` of each judgement, queries in order of appearance.
    type Judged<'a> = Vec<(&'a [u8], i32, usize)>;
    let mut index: HashMap<&[u8], usize, IdBuildHasher> = HashMap::default();
    let mut groups: Vec<(&[u8], Judged<'_>)> = Vec::new();
    for (n, line) in numbered_lines(bytes) {
        match parse_qrels_line(line) {
            Ok(Some((qid, docno, rel))) => {
                let g = *index.entry(qid).or_insert_with(|| {
                    groups.push((qid, Vec::new()));
                    groups.len() - 1
                });
                groups[g].1.push((docno, rel, n));
            }
            Ok(None) => {}
            Err((field, message)) => return Err(FormatError::invalid(path, n, field, message)),
        }
    }
    groups.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut queries: Vec<QrelsQuery> = Vec::with_capacity(groups.len());
    for (qid, mut judged) in groups {
        judged.sort_by(|a, b| a.0.cmp(b.0)); // stable: a repeated docno keeps line order
        if let Some(w) = judged.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(FormatError::invalid(
                path,
                w[1].2,
                "docno",
                format!(
                    "document '{}' is judged twice for query '{}' (first on line {})",
                    utf8(w[0].0),
                    utf8(qid),
                    w[0].2
                ),
            ));
        }
        queries.push(QrelsQuery {
            qid: utf8(qid),
            judgments: judged
                .into_iter()
                .map(|(docno, rel, _)| Judgment {
                    docno: utf8(docno),
                    rel,
                })
                .collect(),
        });
    }
    Ok(Qrels { queries })
}

/// Reads a run file (strict: errors carry line and field; a document retrieved twice for a
/// query is an error naming both lines).
pub fn read_run(path: &Path) -> Result<TrecRun> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    parse_run(&bytes, path)
}

/// [`read_run`], except that a document retrieved twice for a query is kept: both lines, in
/// trec_eval's order (the higher-scored first), for a reader that removes repetitions itself
/// and reports them (the exam keeps the first occurrence).
pub fn read_run_keeping_duplicates(path: &Path) -> Result<TrecRun> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    parse_run_with(&bytes, path, true)
}

/// Parses run text; `path` only names the source in errors. Large inputs are parsed in
/// parallel (see [`read_run_indexed`]).
pub fn parse_run(bytes: &[u8], path: &Path) -> Result<TrecRun> {
    parse_run_with(bytes, path, false)
}

/// [`parse_run`]; with `keep_duplicates` a document retrieved twice is kept, not an error.
fn parse_run_with(bytes: &[u8], path: &Path, keep_duplicates: bool) -> Result<TrecRun> {
    // Query ids get numbers in the order the parser meets them.
    type Names = (HashMap<Vec<u8>, u32, IdBuildHasher>, Vec<Vec<u8>>);
    let names: Mutex<Names> = Mutex::default();
    let intern = |qid: &[u8]| {
        let mut guard = names.lock().unwrap_or_else(|e| e.into_inner());
        let (map, list) = &mut *guard;
        if let Some(&i) = map.get(qid) {
            return Some(i);
        }
        let i = u32::try_from(list.len()).ok()?;
        map.insert(qid.to_vec(), i);
        list.push(qid.to_vec());
        Some(i)
    };
    let source = RunSource::Reader {
        reader: Box::new(bytes),
        name: path.to_path_buf(),
    };
    let run = read_run_indexed(source, &intern, usize::MAX)?;
    let (_, qids) = names.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut order: Vec<u32> = (0..qids.len() as u32).collect();
    order.sort_by(|&a, &b| qids[a as usize].cmp(&qids[b as usize]));
    let queries: Vec<Result<RunQuery>> = order
        .par_iter()
        .map(|&q| {
            let qid = &qids[q as usize];
            let mut docs: Vec<(u64, &[u8])> = Vec::new();
            run.docs_into(q, &mut docs);
            let duplicate = if keep_duplicates {
                None
            } else {
                find_duplicate(&mut Scratch::default(), &docs, |d| d.1)
            };
            if let Some((i, _)) = duplicate {
                let docno = docs[i].1;
                let lines = run_lines(strip_bom(bytes), qid, docno);
                let (first, second) = match lines.as_slice() {
                    [a, b, ..] => (*a, *b),
                    _ => (0, 0),
                };
                return Err(FormatError::invalid(
                    path,
                    second,
                    "docno",
                    format!(
                        "document '{}' is retrieved twice for query '{}' (first on line {first})",
                        utf8(docno),
                        utf8(qid)
                    ),
                ));
            }
            sort_trec_keyed(&mut docs);
            Ok(RunQuery {
                qid: utf8(qid),
                docs: docs
                    .into_iter()
                    .map(|(key, docno)| RankedDoc {
                        docno: utf8(docno),
                        score: key_score(key),
                    })
                    .collect(),
            })
        })
        .collect();
    Ok(TrecRun {
        runid: run.runid().to_string(),
        queries: queries.into_iter().collect::<Result<_>>()?,
    })
}

/// The 1-based lines where `qid` retrieves `docno`.
fn run_lines(bytes: &[u8], qid: &[u8], docno: &[u8]) -> Vec<usize> {
    numbered_lines(bytes)
        .filter_map(|(n, line)| match parse_run_line(line) {
            Ok(RunLine::Result {
                qid: q, docno: d, ..
            }) if q == qid && d == docno => Some(n),
            _ => None,
        })
        .collect()
}

/// Reads trec_eval's Z-score reference file (`-Z`): `qid measure mean stddev` per line
/// (blank lines and lines starting with `#` are skipped).
pub fn read_zscores(path: &Path) -> Result<Vec<(String, String, f64, f64)>> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let bytes = strip_bom(&bytes);
    check_utf8(bytes, path, 1)?;
    let mut rows = Vec::new();
    for (n, line) in numbered_lines(bytes) {
        if line.first() == Some(&b'#') || line.iter().all(|&b| is_space(b)) {
            continue;
        }
        let (f, count) = fields::<4>(line, true);
        if count != 4 {
            let (field, message) = column_error(&["qid", "measure", "mean", "stddev"], count);
            return Err(FormatError::invalid(path, n, field, message));
        }
        let number = |i: usize, field: &'static str| {
            let t = std::str::from_utf8(f[i]).unwrap_or("");
            t.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| FormatError::invalid(path, n, field, format!("not a number: '{t}'")))
        };
        rows.push((
            utf8(f[0]),
            utf8(f[1]),
            number(2, "mean")?,
            number(3, "stddev")?,
        ));
    }
    Ok(rows)
}

/// The 1-based lines of a run file where `qid` retrieves `docno` (to report duplicates found
/// while evaluating). Unreadable files give no lines.
pub fn find_run_lines(path: &Path, qid: &str, docno: &str) -> Vec<usize> {
    match std::fs::read(path) {
        Ok(bytes) => run_lines(strip_bom(&bytes), qid.as_bytes(), docno.as_bytes()),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("f.txt")
    }

    fn err(r: Result<impl std::fmt::Debug>) -> String {
        r.unwrap_err().to_string()
    }

    #[test]
    fn qrels_comments_bom_crlf() {
        let text = b"\xEF\xBB\xBF# c\r\n1 0 d#1 1\r\n\r\n1 0 a 0\r\n# x\r\n# y\n0 x b -1";
        let q = parse_qrels(text, p()).unwrap();
        assert_eq!(q.queries.len(), 2);
        assert_eq!(q.queries[0].qid, "0");
        let docs: Vec<&str> = q.queries[1]
            .judgments
            .iter()
            .map(|j| j.docno.as_str())
            .collect();
        assert_eq!(docs, ["a", "d#1"]);
        assert_eq!(q.query("0").unwrap().judgments[0].rel, -1);
    }

    #[test]
    fn qrels_errors_name_line_and_field() {
        assert_eq!(
            err(parse_qrels(b"1 0 a 1\n1 0 b\n", p())),
            "f.txt:2: field `rel`: line has 3 columns, expected 4 (qid iter docno rel)"
        );
        assert_eq!(
            err(parse_qrels(b"1 0 a 1 x\n", p())),
            "f.txt:1: field `line`: line has 5 columns, expected 4 (qid iter docno rel)"
        );
        assert_eq!(
            err(parse_qrels(b"1 0 a 1.5\n", p())),
            "f.txt:1: field `rel`: not a whole number: '1.5'"
        );
        assert_eq!(
            err(parse_qrels(b"1 0 a 1\n2 0 a 1\n1 0 a 0\n", p())),
            "f.txt:3: field `docno`: document 'a' is judged twice for query '1' (first on line 1)"
        );
        assert!(err(parse_qrels(b"1 0 a 1\n1 0 \xff 1\n", p())).starts_with("f.txt:2:"));
    }

    #[test]
    fn run_order_and_runid() {
        let text = b"\xEF\xBB\xBF2 Q0 a 1 1.0 r1\r\n  # comment\r\n\r\n1 Q0 b 9 0.5 r1\n1 Q0 c 1 0.5 r2 extra\n1 Q0 a 5 -0 r3";
        let run = parse_run(text, p()).unwrap();
        assert_eq!(run.runid, "r3");
        assert_eq!(run.queries[0].qid, "1");
        let docs: Vec<&str> = run.queries[0]
            .docs
            .iter()
            .map(|d| d.docno.as_str())
            .collect();
        assert_eq!(docs, ["c", "b", "a"]);
        assert_eq!(run.query("2").unwrap().docs[0].score, 1.0);
    }

    #[test]
    fn fast_score_parse_agrees_with_std() {
        for t in [
            "0",
            "-0",
            "1.5",
            "-2.129133",
            "+3.25",
            "12345678901234567",
            "0.1",
            "15.2000",
            "123456789012345678",
            "9007199254740993",
            "1e5",
            ".5",
            "5.",
            "0.0000000000000000000001",
        ] {
            let fast = parse_plain_decimal(t.as_bytes());
            let std: f64 = t.parse().unwrap();
            if let Some(x) = fast {
                assert_eq!(x.to_bits(), std.to_bits(), "{t}");
            }
            assert_eq!(
                parse_score(t.as_bytes()).unwrap().to_bits(),
                std.to_bits(),
                "{t}"
            );
        }
        assert!(parse_plain_decimal(b"1e5").is_none());
        assert!(parse_plain_decimal(b".").is_none());
        assert!(parse_score(b".").is_err());
        assert!(parse_score(b"1.2.3").is_err());
    }

    proptest::proptest! {
        #[test]
        fn run_line_fields_match_a_naive_split(
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![
                    b' ', b'\t', b'\r', 0x0b, 0x0c, 0x01, 0x1f, 0x7f, 0xc3, b'a', b'Z', b'#',
                    b'0', b'7', b'.', b'-', b'\n',
                ]),
                0..60,
            )
        ) {
            let (parsed, used) = parse_run_line_at(&bytes);
            let line_len = bytes.iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| i + 1);
            proptest::prop_assert_eq!(used, line_len);
            let line = &bytes[..line_len];
            let tokens: Vec<&[u8]> = line
                .split(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
                .filter(|t| !t.is_empty())
                .collect();
            match parsed {
                Ok(RunLine::Skip) => {
                    proptest::prop_assert!(tokens.is_empty() || tokens[0][0] == b'#');
                }
                Ok(RunLine::Result { qid, docno, runid, .. }) => {
                    proptest::prop_assert!(tokens.len() >= 6);
                    proptest::prop_assert_eq!(qid, tokens[0]);
                    proptest::prop_assert_eq!(docno, tokens[2]);
                    proptest::prop_assert_eq!(runid, tokens[5]);
                }
                Err((field, message)) => {
                    if message.starts_with("line has") {
                        let expected = format!("line has {} column", tokens.len());
                        proptest::prop_assert!(message.starts_with(&expected), "{}", message);
                    } else {
                        proptest::prop_assert!(tokens.len() >= 6 && field == "score");
                    }
                }
            }
        }
    }

    #[test]
    fn run_errors_name_line_and_field() {
        assert_eq!(
            err(parse_run(b"1 Q0 a 1 abc r\n", p())),
            "f.txt:1: field `score`: not a number: 'abc'"
        );
        assert_eq!(
            err(parse_run(b"1 Q0 a 1 1 r\n1 Q0 b 2 NaN r\n", p())),
            "f.txt:2: field `score`: not a finite number: 'NaN'"
        );
        assert_eq!(
            err(parse_run(b"1 Q0 a 1 inf r\n", p())),
            "f.txt:1: field `score`: not a finite number: 'inf'"
        );
        assert_eq!(
            err(parse_run(b"1 Q0 a 1 2.0\n", p())),
            "f.txt:1: field `run_id`: line has 5 columns, expected 6 (qid Q0 docno rank score run_id)"
        );
        assert_eq!(
            err(parse_run(b"1 Q0 a 1 2 r\n1 Q0 b 1 2 r\n1 Q0 a 3 1 r\n", p())),
            "f.txt:3: field `docno`: document 'a' is retrieved twice for query '1' (first on line 1)"
        );
    }
}
