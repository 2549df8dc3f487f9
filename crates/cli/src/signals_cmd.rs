//! `veredicto signals`: import interaction logs into the signals file, and propose
//! candidate golden cases (with the triage of failed answers) from them.

use crate::models::EmbedderArgs;
use crate::printer::ExitStatus;
use anyhow::Context;
use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use veredicto_core::signals::{self, Settings};
use veredicto_formats::signals::FieldMap;

/// The default signals file, beside the default history.
pub const DEFAULT_SIGNALS: &str = ".veredicto/signals.jsonl";

#[derive(Debug, clap::Args)]
pub struct SignalsArgs {
    #[command(subcommand)]
    pub command: SignalsCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum SignalsCommand {
    /// Validate an interaction log (JSONL) and append its events, in canonical form, to the
    /// signals file (events already there are skipped). All or nothing.
    Import(ImportArgs),
    /// Propose candidate golden cases from the signals (a golden-set JSONL to review) and
    /// triage the failed answers: upstream (not retrieved) or downstream (retrieved, ignored).
    Candidates(Box<CandidatesArgs>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    Human,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The interaction log (JSONL, one event per line; see docs/signals.md).
    pub log: PathBuf,
    /// The log's name for a field: `FIELD=NAME` (e.g. `conversation_id=session`,
    /// `retrieved=context.ids`); repeatable.
    #[arg(long = "map", value_name = "FIELD=NAME")]
    pub map: Vec<String>,
    /// The log's name for an event, then the event it stands for: `THEIRS=EVENT` (e.g.
    /// `click=click_citation`, `thumb=thumbs`); repeatable.
    #[arg(long = "map-event", value_name = "THEIRS=EVENT")]
    pub map_event: Vec<String>,
    /// The signals file to append to.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_SIGNALS)]
    pub signals: PathBuf,
    #[arg(long, value_enum, default_value_t = OutFormat::Human)]
    pub format: OutFormat,
}

#[derive(Debug, clap::Args)]
pub struct CandidatesArgs {
    /// The signals file (written by `signals import`).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_SIGNALS, conflicts_with = "log")]
    pub signals: PathBuf,
    /// Read an interaction log directly instead of the signals file.
    #[arg(long, value_name = "LOG")]
    pub log: Option<PathBuf>,
    /// The log's name for a field (with --log): `FIELD=NAME`; repeatable.
    #[arg(long = "map", value_name = "FIELD=NAME", requires = "log")]
    pub map: Vec<String>,
    /// The log's name for an event (with --log): `THEIRS=EVENT`; repeatable.
    #[arg(long = "map-event", value_name = "THEIRS=EVENT", requires = "log")]
    pub map_event: Vec<String>,
    /// Where to write the candidate cases (golden-set JSONL).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// The golden set: its questions are not proposed again, and its expected chunks are
    /// the reference of the triage.
    #[arg(long, value_name = "FILE|DIR")]
    pub golden: Option<PathBuf>,
    /// The corpus, to find the chunk a copied text came from.
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    /// Merge near-duplicate queries by embedding similarity too (cosine at or above this),
    /// with the model given by --model / --embedder.
    #[arg(long, value_name = "COSINE", default_value_t = 0.92)]
    pub merge_cosine: f64,
    /// Retrieved chunks of a rescuing final query taken as expected when it has no gesture.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub rescue_depth: usize,
    #[command(flatten)]
    pub embedder: EmbedderArgs,
    #[arg(long, value_enum, default_value_t = OutFormat::Human)]
    pub format: OutFormat,
}

pub fn run(args: SignalsArgs) -> anyhow::Result<ExitStatus> {
    match args.command {
        SignalsCommand::Import(a) => import(a),
        SignalsCommand::Candidates(a) => candidates(*a),
    }
}

fn field_map(pairs: &[String], events: &[String]) -> anyhow::Result<FieldMap> {
    FieldMap::parse(pairs.iter().map(String::as_str))
        .and_then(|m| m.with_events(events.iter().map(String::as_str)))
        .map_err(anyhow::Error::msg)
}

fn import(args: ImportArgs) -> anyhow::Result<ExitStatus> {
    let map = field_map(&args.map, &args.map_event)?;
    // The whole log is validated before anything is appended (all or nothing), one line at
    // a time: the canonical lines wait in an anonymous temporary file, not in memory.
    let mut spool = std::io::BufWriter::new(
        tempfile::tempfile().context("creating a temporary file for the validated events")?,
    );
    let events =
        veredicto_formats::signals::for_each_event(&args.log, &map, |e| -> anyhow::Result<()> {
            serde_json::to_writer(&mut spool, &e.event)?;
            spool.write_all(b"\n")?;
            Ok(())
        })?;
    let spool = spool
        .into_inner()
        .map_err(|e| e.into_error())
        .context("writing the validated events to a temporary file")?;
    let (added, present) = append_new(&args.signals, spool)
        .with_context(|| format!("appending to {}", args.signals.display()))?;
    let out = match args.format {
        OutFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "log": args.log.display().to_string(),
                "signals": args.signals.display().to_string(),
                "events": events,
                "added": added,
                "already_present": present,
            }))?
        ),
        OutFormat::Human => format!(
            "{events} events read from {}: {added} added to {}, {present} already there\n",
            args.log.display(),
            args.signals.display()
        ),
    };
    crate::output::print_stdout(&out)?;
    Ok(ExitStatus::Success)
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

fn candidates(args: CandidatesArgs) -> anyhow::Result<ExitStatus> {
    if !(args.merge_cosine.is_finite() && args.merge_cosine > 0.0 && args.merge_cosine <= 1.0) {
        anyhow::bail!(
            "--merge-cosine must be above 0 and at most 1, got {}",
            args.merge_cosine
        );
    }
    let (log, map) = match &args.log {
        Some(log) => (log, field_map(&args.map, &args.map_event)?),
        None => {
            if !args.signals.is_file() {
                anyhow::bail!(
                    "{}: no signals file (import a log with `veredicto signals import LOG.jsonl`, or give --log)",
                    args.signals.display()
                );
            }
            (&args.signals, FieldMap::default())
        }
    };
    // The corpus resolves copied texts as the events are read.
    let corpus = match &args.corpus {
        Some(c) => Some(veredicto_formats::corpus::read_corpus(c)?),
        None => None,
    };
    // One pass over the log, keeping per interaction only what the rules need (not the
    // events): memory follows the interactions and distinct strings, not the log's size.
    let mut acc = signals::Accumulator::new(corpus.as_deref());
    veredicto_formats::signals::for_each_event(log, &map, |e| -> anyhow::Result<()> {
        acc.push(&e.event, e.line as u64, e.time_ms);
        Ok(())
    })?;
    let golden = match &args.golden {
        Some(g) => veredicto_formats::golden::read_golden(g)?,
        None => Vec::new(),
    };
    let vectors = if args.embedder.model.is_some() || args.embedder.embedder.is_some() {
        let embedder = args.embedder.load_for_index(None, None)?;
        let queries = acc.distinct_queries();
        let texts: Vec<&str> = queries.iter().map(String::as_str).collect();
        Some(embedder.embed(&texts, veredicto_embed::TextKind::Query)?)
    } else {
        None
    };
    let settings = Settings {
        merge_cosine: args.merge_cosine,
        rescue_depth: args.rescue_depth,
    };
    let shown = log.display().to_string();
    let report = acc.finish(&golden, vectors.as_deref(), &settings, &|line| {
        format!("{shown}:{line}")
    });
    crate::output::write_atomic(
        &args.out,
        veredicto_report::signals::candidates_jsonl(&report).as_bytes(),
    )
    .with_context(|| format!("writing {}", args.out.display()))?;
    let out_name = args.out.display().to_string();
    let text = match args.format {
        OutFormat::Json => veredicto_report::signals::json(&report, Some(&out_name)),
        OutFormat::Human => veredicto_report::signals::human(&report, Some(&out_name)),
    };
    let mut w = crate::output::human_stdout(args.format == OutFormat::Json);
    match w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(ExitStatus::Success)
}
