//! `veredicto ingest`: embeds a corpus into veredicto's on-disk exact index, incrementally.

use crate::models::{index_fingerprint, EmbedderArgs};
use anyhow::Context;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use veredicto_embed::TextKind;
use veredicto_formats::corpus::CorpusLine;
use veredicto_index::{
    BatchInfo, ChunkInput, ChunkMeta, EmbeddedField, Index, IngestSettings, ModelFingerprint, Plan,
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
    /// Chunk JSONL (SPEC §1) or a BEIR corpus.jsonl (embedded as title + " " + text).
    #[arg(long, value_name = "CORPUS.jsonl")]
    pub corpus: PathBuf,
    /// The index folder (created, or updated incrementally).
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    #[command(flatten)]
    pub embedder: EmbedderArgs,
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
    #[arg(long, value_name = "TIME")]
    pub time: Option<String>,
    /// Print what happened as JSON.
    #[arg(long)]
    pub json: bool,
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
    let precomputed: Option<HashMap<&str, &[f32]>> = match with_vectors {
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
            }
            Some(
                lines
                    .iter()
                    .filter_map(|l| l.vector.as_deref().map(|v| (l.chunk.id.as_str(), v)))
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
        None => Some(args.embedder.load_for_index(Some(&args.index))?),
    };
    let (model, dimension) = match (&embedder, &precomputed) {
        (Some(e), _) => (index_fingerprint(e.as_ref()), e.dim()),
        (None, Some(map)) => {
            let dim = map.values().next().map_or(0, |v| v.len());
            (precomputed_fingerprint(dim), dim)
        }
        (None, None) => unreachable!("either a model or precomputed vectors"),
    };
    let old = if args.index.join("manifest.json").is_file() {
        Some(Index::open(&args.index)?)
    } else {
        None
    };
    if let (Some(old), Some(e), false) = (&old, &embedder, args.rebuild) {
        crate::models::check_index_model(old, e.as_ref())?;
    }
    let plan = Plan::new(
        old.as_ref(),
        inputs,
        IngestSettings {
            model: model.clone(),
            dimension,
            field,
            full_rebuild: args.rebuild,
        },
    )?;
    let to_embed = plan.to_embed();
    let truncated = embedder
        .as_ref()
        .and_then(|e| crate::models::truncated(e.as_ref(), &to_embed));
    let vectors: Vec<Vec<f32>> = match (&embedder, &precomputed) {
        (_, Some(map)) => to_embed
            .iter()
            .map(|(id, _)| map.get(id).map(|v| v.to_vec()).unwrap_or_default())
            .collect(),
        (Some(e), None) => embed_with_progress(e.as_ref(), &to_embed, !args.json)?,
        (None, None) => unreachable!("either a model or precomputed vectors"),
    };
    let embedded = to_embed.len();
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
