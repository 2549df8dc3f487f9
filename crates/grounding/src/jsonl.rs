//! Append-only JSON-lines logs (`<cases>.reviews.jsonl`, `<cases>.suggestions.jsonl`).
//!
//! An append is whole or absent: the new lines are written in one write under an exclusive
//! lock, fsynced, and read back; if any step fails the file is cut back to its previous length.
//! A torn tail left by a crash (an unparseable last line, e.g. half a record without its
//! newline, or zeros) is reported by readers and ignored; the next append moves it aside to
//! `<log>.torn-<n>` (first free n from 1) and keeps every complete record before it. A bad
//! line followed by other records is an error naming the file and the line.

use crate::error::GroundingError;
use serde::de::DeserializeOwned;
use serde::Serialize;
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

fn parse_error(path: &Path, line: usize, e: impl std::fmt::Display) -> GroundingError {
    GroundingError::Parse {
        path: path.to_path_buf(),
        message: format!("line {line}: {e}"),
    }
}

/// Parses log bytes (`path` only names the file in messages). Blank lines are skipped.
pub fn parse_log<T: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<LogRead<T>, GroundingError> {
    // (1-based line, start offset, content without the newline)
    let mut lines: Vec<(usize, usize, &[u8])> = Vec::new();
    let mut start = 0usize;
    for (n, chunk) in bytes.split(|&b| b == b'\n').enumerate() {
        lines.push((n + 1, start, chunk));
        start += chunk.len() + 1;
    }
    let is_blank = |l: &[u8]| l.iter().all(|b| b.is_ascii_whitespace());
    let last_content = lines.iter().rposition(|(_, _, l)| !is_blank(l));
    let mut records = Vec::new();
    for (i, &(line, offset, text)) in lines.iter().enumerate() {
        if is_blank(text) {
            continue;
        }
        let parsed = std::str::from_utf8(text)
            .map_err(|e| format!("not UTF-8: {e}"))
            .and_then(|s| serde_json::from_str::<T>(s).map_err(|e| e.to_string()));
        match parsed {
            Ok(r) => records.push(r),
            Err(reason) if Some(i) == last_content => {
                return Ok(LogRead {
                    records,
                    complete_len: offset as u64,
                    torn: Some(TornTail {
                        line,
                        offset: offset as u64,
                        bytes: (bytes.len() - offset) as u64,
                        reason,
                    }),
                });
            }
            Err(reason) => return Err(parse_error(path, line, reason)),
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
