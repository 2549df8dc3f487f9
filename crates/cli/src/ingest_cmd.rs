//! `veredicto ingest`: embeds a corpus into veredicto's on-disk exact index, incrementally.

use crate::models::{index_fingerprint, EmbedderArgs};
use anyhow::Context;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use veredicto_embed::TextKind;
use veredicto_formats::corpus::CorpusLine;
use veredicto_index::{
    BatchInfo, ChunkInput, ChunkMeta, EmbeddedField, Index, IngestSettings, ModelFingerprint, Plan,
    WriterLock,
};

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FieldArg {
    /// The chunk's `representation`, falling back to `text` when absent.
    Representation,
    /// The chunk's `text`.
    Text,
}

#[derive(Debug, clap::Args)]
pub struct IngestArgs {
    /// Chunk JSONL or a BEIR corpus.jsonl (embedded as title + " " + text).
    #[arg(long, value_name = "CORPUS.jsonl")]
    pub corpus: PathBuf,
    /// The index folder (created, or updated incrementally).
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    #[command(flatten)]
    pub embedder: EmbedderArgs,
    /// Per-request timeout of an embeddings server (`--embedder`), in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = crate::retriever_args::positive_secs)]
    pub timeout: f64,
    /// Retries after a 429, a 5xx, a timeout or a connection error of the embeddings server.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// Which field is embedded.
    #[arg(long, value_enum, default_value = "representation")]
    pub field: FieldArg,
    /// Name of this ingestion batch, recorded for every new or changed chunk.
    #[arg(long, value_name = "NAME")]
    pub batch_label: Option<String>,
    /// Re-embed everything (needed to change the model of an existing index).
    #[arg(long)]
    pub rebuild: bool,
    /// Record this time (RFC 3339) for the batch instead of now: same inputs and time give
    /// a byte-identical index (reproducible builds).
    #[arg(long, value_name = "TIME", value_parser = rfc3339)]
    pub time: Option<String>,
    /// Print what happened as JSON.
    #[arg(long)]
    pub json: bool,
    /// How long to wait for another ingest into the same index to finish (one writer at a
    /// time; the error names the process holding the lock). 0: fail at once.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0)]
    pub lock_timeout: f64,
}

/// The text a chunk contributes to the index, per the field rule.
fn text_of(line: &CorpusLine, field: EmbeddedField) -> Option<&str> {
    let c = &line.chunk;
    match field {
        EmbeddedField::Representation => c.representation.as_deref().or(c.text.as_deref()),
        EmbeddedField::Text | EmbeddedField::TitleText => c.text.as_deref(),
    }
}

/// Corpus lines as index inputs; errors name the file, line and field.
pub fn chunk_inputs(
    path: &Path,
    lines: &[CorpusLine],
    field: EmbeddedField,
) -> anyhow::Result<Vec<ChunkInput>> {
    lines
        .iter()
        .map(|l| {
            let text = text_of(l, field).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}:{}: field `text`: missing: the chunk has nothing to embed",
                    path.display(),
                    l.line
                )
            })?;
            let c = &l.chunk;
            Ok(ChunkInput {
                id: c.id.clone(),
                text: text.to_owned(),
                meta: ChunkMeta {
                    domain: c.domain.clone(),
                    labels: c.labels.clone(),
                    facets: c.facets.clone(),
                    valid_from: c.valid_from.clone(),
                    valid_to: c.valid_to.clone(),
                },
                record: Some(serde_json::Value::Object(l.raw.clone())),
            })
        })
        .collect()
}

/// The fingerprint of vectors supplied in the corpus rather than computed by a model.
pub fn precomputed_fingerprint(dim: usize) -> ModelFingerprint {
    let value =
        serde_json::json!({"name": "precomputed", "architecture": "precomputed", "dim": dim});
    let hash = veredicto_core::fingerprint::sha256_json(&value);
    ModelFingerprint { value, hash }
}

/// `--time`: an RFC 3339 date-time (`2025-11-14T09:30:00Z`), kept as given.
fn rfc3339(text: &str) -> Result<String, String> {
    if veredicto_core::time::is_rfc3339(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{}` is not an RFC 3339 time (e.g. 2025-11-14T09:30:00Z)",
            veredicto_core::redact::short(text)
        ))
    }
}

pub fn run(args: IngestArgs) -> anyhow::Result<ExitCode> {
    let lines = veredicto_formats::corpus::read_corpus_lines(&args.corpus)?;
    if lines.is_empty() {
        anyhow::bail!("{}: the corpus has no chunks", args.corpus.display());
    }
    let beir = lines.iter().any(|l| l.raw.contains_key("_id"));
    let field = match (beir, args.field) {
        (true, _) => EmbeddedField::TitleText,
        (false, FieldArg::Representation) => EmbeddedField::Representation,
        (false, FieldArg::Text) => EmbeddedField::Text,
    };
    // Precomputed vectors: all lines or none.
    let with_vectors = lines.iter().filter(|l| l.vector.is_some()).count();
    let precomputed: Option<Vec<Vec<f32>>> = match with_vectors {
        0 => None,
        n if n == lines.len() => {
            let dim = lines[0].vector.as_ref().map_or(0, Vec::len);
            for l in &lines {
                let got = l.vector.as_ref().map_or(0, Vec::len);
                if got != dim {
                    anyhow::bail!(
                        "{}:{}: field `vector`: dimension {got}, but the first line has {dim}",
                        args.corpus.display(),
                        l.line
                    );
                }
                if l.vector
                    .as_deref()
                    .and_then(veredicto_index::normalize)
                    .is_none()
                {
                    anyhow::bail!(
                        "{}:{}: field `vector`: chunk \"{}\": a NaN or infinite component, or all zeros (cannot be normalised)",
                        args.corpus.display(),
                        l.line,
                        veredicto_core::redact::short(&l.chunk.id)
                    );
                }
            }
            Some(
                lines
                    .iter()
                    .map(|l| l.vector.clone().unwrap_or_default())
                    .collect(),
            )
        }
        _ => {
            let first = lines
                .iter()
                .find(|l| l.vector.is_none())
                .map_or(0, |l| l.line);
            anyhow::bail!(
                "{}:{first}: field `vector`: missing, while other lines carry precomputed vectors (give all or none)",
                args.corpus.display()
            );
        }
    };
    let inputs = chunk_inputs(&args.corpus, &lines, field)?;

    let embedder = match precomputed {
        Some(_) => None,
        None => Some(args.embedder.load_for_index(
            Some(&args.index),
            Some((
                std::time::Duration::from_secs_f64(args.timeout),
                args.retries,
            )),
        )?),
    };
    let (model, dimension) = match (&embedder, &precomputed) {
        (Some(e), _) => (index_fingerprint(e.as_ref()), e.dim()),
        (None, Some(vectors)) => {
            let dim = vectors.first().map_or(0, Vec::len);
            (precomputed_fingerprint(dim), dim)
        }
        (None, None) => unreachable!("either a model or precomputed vectors"),
    };
    let wait = std::time::Duration::try_from_secs_f64(args.lock_timeout).map_err(|_| {
        anyhow::anyhow!(
            "--lock-timeout: expected a number of seconds >= 0, got {}",
            args.lock_timeout
        )
    })?;
    // Taken before the index is read and kept until the new version is in place, so that
    // no other writer's batch can land in between and be lost.
    let _lock = WriterLock::acquire(&args.index, wait)?;
    let old = if args.index.join("manifest.json").is_file() {
        Some(Index::open(&args.index)?)
    } else {
        None
    };
    if let (Some(old), Some(e), false) = (&old, &embedder, args.rebuild) {
        crate::models::check_index_model(old, e.as_ref())?;
    }
    let settings = IngestSettings {
        model: model.clone(),
        dimension,
        field,
        full_rebuild: args.rebuild,
    };
    // Precomputed vectors belong to their own chunk: their bytes are part of its identity.
    let plan = match precomputed {
        Some(vectors) => Plan::with_vectors(old.as_ref(), inputs, vectors, settings)?,
        None => Plan::new(old.as_ref(), inputs, settings)?,
    };
    let to_embed = plan.to_embed();
    let truncated = embedder
        .as_ref()
        .and_then(|e| crate::models::truncated(e.as_ref(), &to_embed));
    let vectors: Vec<Vec<f32>> = match &embedder {
        Some(e) => embed_with_progress(e.as_ref(), &to_embed, !args.json)?,
        None => Vec::new(),
    };
    let embedded = plan.new_vectors();
    let (added, changed, removed, reused) = (
        plan.added().len(),
        plan.changed().len(),
        plan.removed().len(),
        // Vectors not recomputed: unchanged chunks, and new ones whose text is already indexed.
        plan.unchanged().len() + plan.reused(),
    );
    let now = args.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let batch = BatchInfo {
        name: args
            .batch_label
            .clone()
            .unwrap_or_else(|| format!("ingest-{now}")),
        time: now,
        corpus_hash: crate::exam_cmd::file_fingerprint(&args.corpus)?,
    };
    let index = plan
        .apply(&vectors, &batch, &args.index)
        .with_context(|| format!("writing the index {}", args.index.display()))?;
    let summary = serde_json::json!({
        "chunks": index.len(),
        "added": added,
        "changed": changed,
        "removed": removed,
        "embedded": embedded,
        "reused": reused,
        "index": args.index.display().to_string(),
        "fingerprint": model.hash,
        "field": field.to_string(),
        "batch": batch.name,
        "truncated": truncated.map(|t| serde_json::json!({"chunks": t.0, "max_tokens": t.1})),
    });
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&summary)?)
    } else {
        format!(
            "{}: {} chunks ({} added, {} changed, {} removed); embedded {}, reused {}; model {}; field {}; batch {}\n",
            args.index.display(),
            index.len(),
            added,
            changed,
            removed,
            embedded,
            reused,
            model.value.get("name").and_then(|v| v.as_str()).unwrap_or("?"),
            field,
            batch.name
        ) + &match truncated {
            Some((n, max)) if n > 0 => format!(
                "{n} of {embedded} embedded chunks are longer than {max} tokens and were embedded truncated to their first {max} tokens\n"
            ),
            _ => String::new(),
        }
    };
    crate::output::print_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Embeds passages in slices of 256 with a progress bar on stderr (when it is a terminal).
fn embed_with_progress(
    e: &dyn veredicto_embed::Embedder,
    items: &[(&str, &str)],
    show: bool,
) -> anyhow::Result<Vec<Vec<f32>>> {
    let bar = if show && std::io::stderr().is_terminal() && !items.is_empty() {
        let b = indicatif::ProgressBar::new(items.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "embedding {bar:40} {pos}/{len} chunks · {per_sec} · eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let mut out = Vec::with_capacity(items.len());
    for slice in items.chunks(256) {
        let texts: Vec<&str> = slice.iter().map(|(_, t)| *t).collect();
        out.extend(e.embed(&texts, TextKind::Passage)?);
        if let Some(b) = &bar {
            b.inc(slice.len() as u64);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(out)
}
