//! Append-only JSON-lines logs (`<cases>.reviews.jsonl`, `<cases>.suggestions.jsonl`).
//!
//! An append is whole or absent: the new lines are written in one write under an exclusive
//! lock, fsynced, and read back; if any step fails the file is cut back to its previous length.
//! A torn tail left by a crash (an unparseable last line *without its newline*: half a record,
//! or zeros) is reported by readers and ignored; the next append moves it aside to
//! `<log>.torn-<n>` (first free n from 1) and keeps every complete record before it. A line
//! that ends with its newline was written whole: if it is not a valid record (wherever it is,
//! the last line included) that is an error naming the file, the line and the field, and
//! nothing is appended. Values quoted in messages are cut to [`QUOTE_CHARS`] characters.

use crate::error::GroundingError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// An incomplete last record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line number of the torn record.
    pub line: usize,
    /// Byte offset where it starts (= the length of the complete part).
    pub offset: u64,
    /// Its length in bytes (up to the end of the file).
    pub bytes: u64,
    /// Why it is not a record.
    pub reason: String,
}

/// A log as read: its complete records, the length of the complete part and any torn tail.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRead<T> {
    pub records: Vec<T>,
    /// Bytes of the complete part (the whole file when nothing is torn).
    pub complete_len: u64,
    pub torn: Option<TornTail>,
}

impl<T> LogRead<T> {
    /// The warning a reader prints for a torn tail (naming file and line), if there is one.
    pub fn warning(&self, path: &Path) -> Option<String> {
        self.torn.as_ref().map(|t| {
            format!(
                "warning: {}: line {}: incomplete last record ({} bytes: {}) ignored; the {} \
                 complete record(s) before it are read, and the next append moves it to {}.torn-N",
                path.display(),
                t.line,
                t.bytes,
                t.reason,
                self.records.len(),
                path.display()
            )
        })
    }
}

/// What an append did besides appending.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AppendReport {
    /// A torn tail found before appending, and the file it was moved to.
    pub quarantined: Option<(TornTail, PathBuf)>,
}

impl AppendReport {
    /// The warning to print when a torn tail was moved aside.
    pub fn warning(&self, path: &Path) -> Option<String> {
        self.quarantined.as_ref().map(|(t, to)| {
            format!(
                "warning: {}: line {}: incomplete last record ({} bytes: {}) moved to {}; the \
                 complete records before it are kept",
                path.display(),
                t.line,
                t.bytes,
                t.reason,
                to.display()
            )
        })
    }
}

/// How many characters of a value quoted in a message are kept (a 600 KB value would
/// otherwise be printed whole).
pub const QUOTE_CHARS: usize = 200;

fn parse_error(path: &Path, line: usize, problem: &LineProblem) -> GroundingError {
    let message = match &problem.field {
        Some(field) => format!(
            "line {line}: field `{}`: {}",
            veredicto_core::redact::short(field),
            problem.message
        ),
        None => format!("line {line}: {}", problem.message),
    };
    GroundingError::Parse {
        path: path.to_path_buf(),
        message,
    }
}

/// Why a line is not a record: the field concerned (when one is) and the reason, with
/// quoted values cut.
struct LineProblem {
    field: Option<String>,
    message: String,
}

impl LineProblem {
    fn new(field: Option<String>, message: &str) -> LineProblem {
        LineProblem {
            field,
            message: veredicto_core::redact::message(&cut_quoted(message)),
        }
    }
}

/// Parses one line as a record, or says which field is wrong and why.
fn parse_record<T: DeserializeOwned>(text: &[u8]) -> Result<T, LineProblem> {
    let text = std::str::from_utf8(text)
        .map_err(|e| LineProblem::new(None, &format!("not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| LineProblem::new(None, &format!("malformed JSON: {e}")))?;
    let object = match value {
        Value::Object(o) => o,
        other => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            };
            return Err(LineProblem::new(
                None,
                &format!("expected a JSON object, found {kind}"),
            ));
        }
    };
    match serde_json::from_value::<T>(Value::Object(object.clone())) {
        Ok(r) => Ok(r),
        Err(e) => {
            let message = e.to_string();
            Err(LineProblem::new(culprit::<T>(&object, &message), &message))
        }
    }
}

/// The field a record's error is about: named by the message for a missing or unknown
/// field, else the first key (in the line's order, which is the order the fields are read
/// in) whose value the record refuses, found by reading ever longer prefixes of the object.
fn culprit<T: DeserializeOwned>(object: &Map<String, Value>, message: &str) -> Option<String> {
    for start in ["missing field `", "unknown field `"] {
        if let Some(rest) = message.strip_prefix(start) {
            return rest.split('`').next().map(str::to_owned);
        }
    }
    let mut prefix = Map::new();
    for (k, v) in object {
        prefix.insert(k.clone(), v.clone());
        if let Err(e) = serde_json::from_value::<T>(Value::Object(prefix.clone())) {
            if !e.to_string().starts_with("missing field `") {
                return Some(k.clone());
            }
        }
    }
    None
}

/// `message` with every value quoted in it (between backticks, as serde quotes variants
/// and fields, or between double quotes, as it quotes strings) cut to [`QUOTE_CHARS`]
/// characters, saying how long it was.
pub fn cut_quoted(message: &str) -> String {
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len().min(4 * QUOTE_CHARS));
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        out.push(c);
        i += 1;
        if c != '`' && c != '"' {
            continue;
        }
        // The quoted value runs to the matching quote (a `\"` inside a double-quoted one is
        // escaped), or to the end of the message.
        let start = i;
        while i < chars.len() && chars[i] != c {
            i += if c == '"' && chars[i] == '\\' { 2 } else { 1 };
        }
        let end = i.min(chars.len());
        let inner = &chars[start..end];
        if inner.len() > QUOTE_CHARS {
            out.extend(&inner[..QUOTE_CHARS]);
            out.push_str(&format!("… ({} characters)", inner.len()));
        } else {
            out.extend(inner);
        }
        if i < chars.len() {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Parses log bytes (`path` only names the file in messages). Blank lines are skipped.
pub fn parse_log<T: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<LogRead<T>, GroundingError> {
    // (1-based line, start offset, content without the newline, whether a newline ends it)
    let mut lines: Vec<(usize, usize, &[u8], bool)> = Vec::new();
    let mut start = 0usize;
    for (n, chunk) in bytes.split(|&b| b == b'\n').enumerate() {
        let ended = start + chunk.len() < bytes.len();
        lines.push((n + 1, start, chunk, ended));
        start += chunk.len() + 1;
    }
    let is_blank = |l: &[u8]| l.iter().all(|b| b.is_ascii_whitespace());
    let mut records = Vec::new();
    for &(line, offset, text, ended) in &lines {
        if is_blank(text) {
            continue;
        }
        match parse_record::<T>(text) {
            Ok(r) => records.push(r),
            // Only the last line can lack its newline: a write the crash cut short.
            Err(problem) if !ended => {
                return Ok(LogRead {
                    records,
                    complete_len: offset as u64,
                    torn: Some(TornTail {
                        line,
                        offset: offset as u64,
                        bytes: (bytes.len() - offset) as u64,
                        reason: match problem.field {
                            Some(f) => format!(
                                "field `{}`: {}",
                                veredicto_core::redact::short(&f),
                                problem.message
                            ),
                            None => problem.message,
                        },
                    }),
                });
            }
            // A whole line that is not a record was not torn by a crash: an error.
            Err(problem) => return Err(parse_error(path, line, &problem)),
        }
    }
    Ok(LogRead {
        records,
        complete_len: bytes.len() as u64,
        torn: None,
    })
}

/// Reads a log from disk (absent = empty).
pub fn read_log<T: DeserializeOwned>(path: &Path) -> Result<LogRead<T>, GroundingError> {
    match std::fs::read(path) {
        Ok(b) => parse_log(path, &b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LogRead {
            records: Vec::new(),
            complete_len: 0,
            torn: None,
        }),
        Err(e) => Err(GroundingError::io(path, e)),
    }
}

/// `<log>.torn-<n>`, first n from 1 that does not exist, created exclusively with `bytes`.
fn quarantine(path: &Path, bytes: &[u8]) -> Result<PathBuf, GroundingError> {
    for n in 1..10_000u32 {
        let mut s = path.as_os_str().to_os_string();
        s.push(format!(".torn-{n}"));
        let to = PathBuf::from(s);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&to)
        {
            Ok(mut f) => {
                f.write_all(bytes)
                    .and_then(|()| f.sync_all())
                    .map_err(|e| GroundingError::io(&to, e))?;
                sync_parent(path);
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(GroundingError::io(&to, e)),
        }
    }
    Err(GroundingError::Parse {
        path: path.to_path_buf(),
        message: "no free name for the torn record (.torn-1 … .torn-9999 all exist)".into(),
    })
}

/// Makes a new directory entry durable (best effort: not every platform can fsync a folder).
fn sync_parent(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Appends `recs` as JSON lines: whole or absent (see the module documentation). A torn tail
/// is moved aside first; a bad line in the middle is an error and nothing is appended.
pub fn append_log<T: Serialize + DeserializeOwned>(
    path: &Path,
    recs: &[T],
) -> Result<AppendReport, GroundingError> {
    let mut buf = Vec::new();
    for r in recs {
        serde_json::to_writer(&mut buf, r).map_err(|e| GroundingError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        buf.push(b'\n');
    }
    if recs.is_empty() {
        return Ok(AppendReport::default());
    }
    let io = |e| GroundingError::io(path, e);
    let existed = path.exists();
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io)?;
    if !existed {
        sync_parent(path);
    }
    // One writer at a time (released when `f` is dropped).
    f.lock().map_err(io)?;
    let mut old = Vec::new();
    f.read_to_end(&mut old).map_err(io)?;
    let parsed: LogRead<T> = parse_log(path, &old)?;
    let mut report = AppendReport::default();
    if let Some(t) = parsed.torn {
        let to = quarantine(path, &old[t.offset as usize..])?;
        f.set_len(t.offset)
            .and_then(|()| f.sync_all())
            .map_err(io)?;
        old.truncate(t.offset as usize);
        report.quarantined = Some((t, to));
    }
    let before = old.len() as u64;
    // A last record without its newline (written by hand) gets one, so it stays whole.
    if old.last().is_some_and(|&b| b != b'\n') {
        buf.insert(0, b'\n');
    }
    let written = (|| -> std::io::Result<()> {
        f.write_all(&buf)?;
        f.sync_all()?;
        // Read the new tail back: what is on disk must be exactly what was meant.
        let len = f.metadata()?.len();
        if len != before + buf.len() as u64 {
            return Err(std::io::Error::other(format!(
                "the log is {len} bytes after the append, expected {}",
                before + buf.len() as u64
            )));
        }
        f.seek(SeekFrom::Start(before))?;
        let mut back = vec![0u8; buf.len()];
        f.read_exact(&mut back)?;
        if back != buf {
            return Err(std::io::Error::other(
                "the appended bytes read back differ from those written",
            ));
        }
        Ok(())
    })();
    if let Err(e) = written {
        let restored = f.set_len(before).and_then(|()| f.sync_all());
        let message = match restored {
            Ok(()) => {
                format!("append failed, nothing appended (the log is back to {before} bytes): {e}")
            }
            Err(e2) => format!(
                "append failed ({e}) and the log could not be cut back to {before} bytes \
                 ({e2}); the next append moves the incomplete record aside"
            ),
        };
        return Err(GroundingError::io(
            path,
            std::io::Error::new(e.kind(), message),
        ));
    }
    Ok(report)
}
