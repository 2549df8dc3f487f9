//! Production signals: importing interaction logs into the signals file (validated whole,
//! appended once), and proposing candidate golden cases, with the triage of failed answers,
//! from them.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use veredicto_core::signals::{self, Settings, SignalsReport};
use veredicto_embed::Embedder;
use veredicto_formats::signals::FieldMap;

use crate::{bail, Context, Error, Result};

/// The default signals file, beside the default history.
pub const DEFAULT_SIGNALS: &str = ".veredicto/signals.jsonl";

/// The log's names for fields (`FIELD=NAME`) and events (`THEIRS=EVENT`).
pub fn field_map(pairs: &[String], events: &[String]) -> Result<FieldMap> {
    FieldMap::parse(pairs.iter().map(String::as_str))
        .and_then(|m| m.with_events(events.iter().map(String::as_str)))
        .map_err(Error::msg)
}

/// What an import did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Imported {
    /// Events read from the log.
    pub events: usize,
    /// Events appended to the signals file.
    pub added: usize,
    /// Events the signals file already held (skipped).
    pub already_present: usize,
}

/// Validates the whole interaction log at `log` (read with `map`) and appends its events,
/// in canonical form, to the signals file at `signals`; events already there are skipped.
/// All or nothing: a bad line appends nothing.
pub fn import(log: &Path, map: &FieldMap, signals: &Path) -> Result<Imported> {
    // The whole log is validated before anything is appended (all or nothing), one line at
    // a time: the canonical lines wait in an anonymous temporary file, not in memory.
    let mut spool = std::io::BufWriter::new(
        tempfile::tempfile().context("creating a temporary file for the validated events")?,
    );
    let events = veredicto_formats::signals::for_each_event(log, map, |e| -> Result<()> {
        serde_json::to_writer(&mut spool, &e.event)?;
        spool.write_all(b"\n")?;
        Ok(())
    })?;
    let spool = spool
        .into_inner()
        .map_err(|e| e.into_error())
        .context("writing the validated events to a temporary file")?;
    let (added, already_present) = append_new(signals, spool)
        .with_context(|| format!("appending to {}", signals.display()))?;
    Ok(Imported {
        events,
        added,
        already_present,
    })
}

/// What an import of trace files did: the events appended, and what the traces held that
/// could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TracesImported {
    /// The events made from the traces, appended as by [`import`].
    pub imported: Imported,
    /// Records, traces, interactions, feedback read; what could not be mapped, by reason.
    pub report: veredicto_formats::traces::TraceReport,
}

/// Reads exported traces (`format`: OpenInference spans, OTLP JSON, Langfuse objects) from
/// `paths`, maps them to the signals' events (see `veredicto_formats::traces`), and appends
/// those not yet in the signals file at `signals`, in canonical form. All or nothing: a file
/// that cannot be read appends nothing; what cannot be mapped is counted, not an error.
pub fn import_traces(
    paths: &[PathBuf],
    format: veredicto_formats::traces::TraceFormat,
    settings: &veredicto_formats::traces::ReadSettings,
    signals: &Path,
) -> Result<TracesImported> {
    let (events, report) = veredicto_formats::traces::read_traces(paths, format, settings)?;
    let mut spool = std::io::BufWriter::new(
        tempfile::tempfile().context("creating a temporary file for the mapped events")?,
    );
    for e in &events {
        serde_json::to_writer(&mut spool, &e.event)?;
        spool.write_all(b"\n")?;
    }
    let spool = spool
        .into_inner()
        .map_err(|e| e.into_error())
        .context("writing the mapped events to a temporary file")?;
    let (added, already_present) = append_new(signals, spool)
        .with_context(|| format!("appending to {}", signals.display()))?;
    Ok(TracesImported {
        imported: Imported {
            events: events.len(),
            added,
            already_present,
        },
        report,
    })
}

/// A line's identity for the duplicate check: the first 128 bits of the SHA-256 of its
/// bytes (without a trailing `\r`). Holding these instead of the lines keeps the check at
/// 16 bytes per distinct line, whatever the lines' length.
type LineKey = [u8; 16];

/// The key of the next line of `reader` (read piece by piece: a line of any length costs
/// no memory), or `None` at the end.
fn next_line_key(reader: &mut impl BufRead) -> std::io::Result<Option<LineKey>> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let mut read_any = false;
    // A `\r` is held back until we know whether it ends the line.
    let mut held_cr = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        read_any = true;
        let (piece, consumed, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], i + 1, true),
            None => (buf, buf.len(), false),
        };
        if !piece.is_empty() {
            if held_cr {
                hasher.update(b"\r");
            }
            let (body, cr) = match piece.strip_suffix(b"\r") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            hasher.update(body);
            held_cr = cr;
        }
        reader.consume(consumed);
        if done {
            break;
        }
    }
    if !read_any {
        return Ok(None);
    }
    let digest = hasher.finalize();
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    Ok(Some(key))
}

/// Appends the lines of `spool` not yet in `path` under an exclusive lock, then fsyncs (the
/// file, and the folder when the file is new). Returns (added, already present). Memory:
/// one key per distinct line ([`LineKey`]), one line at a time.
fn append_new(path: &Path, mut spool: std::fs::File) -> std::io::Result<(usize, usize)> {
    use std::io::{Read, Seek, SeekFrom};
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let existed = path.exists();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    file.lock()?;
    let mut seen: HashSet<LineKey> = HashSet::new();
    {
        let mut existing = std::io::BufReader::with_capacity(1 << 16, &file);
        while let Some(key) = next_line_key(&mut existing)? {
            seen.insert(key);
        }
    }
    // A file cut by a crash mid-line: start on a fresh line.
    let mut last_newline = true;
    if existed {
        let len = file.metadata()?.len();
        if len > 0 {
            let mut last = [0u8; 1];
            let mut f = &file;
            f.seek(SeekFrom::Start(len - 1))?;
            f.read_exact(&mut last)?;
            last_newline = last[0] == b'\n';
        }
    }
    spool.seek(SeekFrom::Start(0))?;
    let mut lines = std::io::BufReader::with_capacity(1 << 16, spool);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, &file);
    let (mut added, mut present) = (0, 0);
    let mut line = Vec::new();
    loop {
        line.clear();
        if lines.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let key = next_line_key(&mut line.as_slice())?.unwrap_or_default();
        if seen.insert(key) {
            if added == 0 && !last_newline {
                out.write_all(b"\n")?;
            }
            out.write_all(&line)?;
            added += 1;
        } else {
            present += 1;
        }
    }
    out.flush()?;
    drop(out);
    if added > 0 {
        file.sync_all()?;
        if !existed {
            if let Ok(d) = std::fs::File::open(&dir) {
                let _ = d.sync_all();
            }
        }
    }
    file.unlock()?;
    Ok((added, present))
}

/// Where the candidates are proposed from, and how.
pub struct CandidatesRequest<'a> {
    /// The signals file, or an interaction log read with `map`.
    pub source: &'a Path,
    /// The log's names (the default for a signals file).
    pub map: FieldMap,
    /// Whether `source` was named as a log (`--log`); else it is the signals file, which
    /// must exist.
    pub from_log: bool,
    /// Where the candidate cases are written (golden-set JSONL).
    pub out: &'a Path,
    /// The golden set: its questions are not proposed again, its expected chunks are the
    /// reference of the triage.
    pub golden: Option<&'a Path>,
    /// The corpus, to find the chunk a copied text came from.
    pub corpus: Option<&'a Path>,
    /// Merging and rescue settings.
    pub settings: Settings,
    /// The embedder that merges near-duplicate queries by similarity too, if any.
    pub embedder: Option<&'a dyn Embedder>,
}

/// Proposes candidate golden cases and triages the failed answers; writes the candidates
/// to `out` (atomically) and returns the report.
pub fn candidates(req: CandidatesRequest<'_>) -> Result<SignalsReport> {
    let report = propose(&req)?;
    crate::files::write_atomic(
        req.out,
        veredicto_report::signals::candidates_jsonl(&report).as_bytes(),
    )
    .with_context(|| format!("writing {}", req.out.display()))?;
    Ok(report)
}

/// What [`candidates`] computes, without writing anything (`req.out` is not read): the
/// workbench lists these candidates.
pub fn propose(req: &CandidatesRequest<'_>) -> Result<SignalsReport> {
    let cosine = req.settings.merge_cosine;
    if !(cosine.is_finite() && cosine > 0.0 && cosine <= 1.0) {
        bail!("--merge-cosine must be above 0 and at most 1, got {cosine}");
    }
    if !req.from_log && !req.source.is_file() {
        bail!(
            "{}: no signals file (import a log with `veredicto signals import LOG.jsonl`, or give --log)",
            req.source.display()
        );
    }
    // The corpus resolves copied texts as the events are read.
    let corpus = match req.corpus {
        Some(c) => Some(veredicto_formats::corpus::read_corpus(c)?),
        None => None,
    };
    // One pass over the log, keeping per interaction only what the rules need (not the
    // events): memory follows the interactions and distinct strings, not the log's size.
    let mut acc = signals::Accumulator::new(corpus.as_deref());
    veredicto_formats::signals::for_each_event(req.source, &req.map, |e| -> Result<()> {
        acc.push(&e.event, e.line as u64, e.time_ms);
        Ok(())
    })?;
    let golden = match req.golden {
        Some(g) => veredicto_formats::golden::read_golden(g)?,
        None => Vec::new(),
    };
    let vectors = match req.embedder {
        Some(embedder) => {
            let queries = acc.distinct_queries();
            let texts: Vec<&str> = queries.iter().map(String::as_str).collect();
            Some(embedder.embed(&texts, veredicto_embed::TextKind::Query)?)
        }
        None => None,
    };
    let shown = req.source.display().to_string();
    Ok(
        acc.finish(&golden, vectors.as_deref(), &req.settings, &|line| {
            format!("{shown}:{line}")
        }),
    )
}
