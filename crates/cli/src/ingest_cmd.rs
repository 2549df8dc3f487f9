//! `veredicto ingest`: embeds a corpus into veredicto's on-disk exact index, incrementally.

use crate::models::{index_fingerprint, EmbedderArgs};
use anyhow::Context;
use std::path::{Path, PathBuf};
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
    /// Chunk JSONL or a BEIR corpus.jsonl (embedded as title + " " + text). Default:
    /// `corpus` of veredicto.toml.
    #[arg(long, value_name = "CORPUS.jsonl")]
    pub corpus: Option<PathBuf>,
    /// The index folder (created, or updated incrementally). Default: `source.index` of
    /// veredicto.toml.
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    #[command(flatten)]
    pub embedder: EmbedderArgs,
    /// Per-request timeout of an embeddings server (`--embedder`), in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = crate::retriever_args::positive_secs)]
    pub timeout: f64,
    /// Retries after a 429, a 5xx or a timeout of the embeddings server (never after a refused connection).
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
    #[arg(long, value_name = "TIME", value_parser = crate::date_args::timestamp)]
    pub time: Option<String>,
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Stop at the first bad corpus line (exit 2, nothing written) instead of rejecting it:
    /// by default bad lines are left out, listed, and recorded with the batch for
    /// `veredicto gate`.
    #[arg(long)]
    pub strict: bool,
    /// Also reject chunks whose `valid_to` is before the day of the ingest (`--time`, else
    /// today). Off by default: the exam's validity windows (`--as-of`) and `corpus check`'s
    /// obsolete list deal with past validity.
    #[arg(long)]
    pub reject_expired: bool,
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

impl IngestArgs {
    /// What the flags say about the shared settings (corpus, index, model).
    pub fn overrides(&self) -> veredicto_app::Overrides {
        veredicto_app::Overrides {
            corpus: self.corpus.clone(),
            source: self
                .index
                .clone()
                .map(veredicto_formats::config::Source::Index),
            model: self.embedder.model.clone(),
            ..Default::default()
        }
    }
}

pub fn run(
    args: IngestArgs,
    settings: &veredicto_app::Settings,
) -> anyhow::Result<crate::printer::ExitStatus> {
    let started = std::time::Instant::now();
    let corpus_path = match (&args.corpus, &settings.corpus) {
        (Some(p), _) | (None, Some(p)) => p.clone(),
        (None, None) => anyhow::bail!(
            "ingest needs a corpus: give --corpus FILE, or `corpus` in veredicto.toml (`veredicto init` writes one)"
        ),
    };
    let index_path = match (&args.index, &settings.source) {
        (Some(p), _) | (None, Some(veredicto_formats::config::Source::Index(p))) => p.clone(),
        (None, _) => anyhow::bail!(
            "ingest needs an index folder: give --index DIR, or `index` under [source] in veredicto.toml"
        ),
    };
    let json = args.format.or_json(args.json) == crate::printer::Format::Json;
    let now = args.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let (lines, rejected) = if args.strict {
        (
            veredicto_formats::corpus::read_corpus_lines(&corpus_path)?,
            Vec::new(),
        )
    } else {
        let dimension = match args.rebuild {
            true => None,
            false => veredicto_index::Manifest::read(&index_path)
                .ok()
                .map(|m| m.dimension),
        };
        let screened = veredicto_formats::corpus::read_corpus_screened(
            &corpus_path,
            veredicto_formats::corpus::Screen {
                text: match args.field {
                    FieldArg::Representation => {
                        veredicto_formats::corpus::TextRule::RepresentationOrText
                    }
                    FieldArg::Text => veredicto_formats::corpus::TextRule::Text,
                },
                today: if args.reject_expired {
                    now.get(..10)
                } else {
                    None
                },
                dimension,
            },
        )?;
        if screened.lines.is_empty() {
            if let Some(first) = screened.rejected.first() {
                anyhow::bail!(
                    "{first} (every one of the {} corpus lines was rejected; nothing written)",
                    screened.rejected.len()
                );
            }
        }
        (screened.lines, screened.rejected)
    };
    if lines.is_empty() {
        anyhow::bail!("{}: the corpus has no chunks", corpus_path.display());
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
                        corpus_path.display(),
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
                        corpus_path.display(),
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
                corpus_path.display()
            );
        }
    };
    let inputs = chunk_inputs(&corpus_path, &lines, field)?;

    let embedder = match precomputed {
        Some(_) => None,
        None => Some(
            args.embedder.load_for_index(
                settings.model.as_deref(),
                Some(&index_path),
                Some(
                    (
                        std::time::Duration::from_secs_f64(args.timeout),
                        args.retries,
                    )
                        .into(),
                ),
            )?,
        ),
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
    let _lock = WriterLock::acquire(&index_path, wait)?;
    let old = if index_path.join("manifest.json").is_file() {
        Some(Index::open(&index_path)?)
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
    }
    .with_rejections(rejected.clone());
    // A corpus identical to the one last ingested, with the same model and field, changes
    // nothing: no batch is written and no index file is touched (unless the index is in an
    // older format: then it is rewritten in the current one, re-embedding nothing).
    let corpus_hash = crate::exam_cmd::file_fingerprint(&corpus_path)?;
    if let Some(o) = old.as_ref().filter(|o| {
        let m = o.manifest();
        !args.rebuild
            && plan.added().is_empty()
            && plan.changed().is_empty()
            && plan.removed().is_empty()
            && m.corpus_hash == corpus_hash
            && m.field == field
            && m.model_hash == model.hash
            && m.format_version == veredicto_index::FORMAT_VERSION
    }) {
        // What a rewrite would have checked while copying the vectors: a damaged index is
        // an error here too, not "unchanged".
        o.verify()
            .with_context(|| format!("checking the index {}", index_path.display()))?;
        let text = if json {
            crate::printer::json(&serde_json::json!({
                "chunks": o.len(),
                "added": 0,
                "changed": 0,
                "removed": 0,
                "embedded": 0,
                "reused": o.len(),
                "index": index_path.display().to_string(),
                "fingerprint": model.hash,
                "field": field.to_string(),
                "batch": null,
                "truncated": null,
                "unchanged": true,
            }))?
        } else {
            format!(
                "{}: unchanged: {} chunks; the corpus is the one last ingested (no batch written)\n",
                index_path.display(),
                o.len()
            )
        };
        crate::printer::stdout(&text)?;
        return Ok(crate::printer::ExitStatus::Success);
    }
    let to_embed = plan.to_embed();
    let (vectors, truncated): (Vec<Vec<f32>>, _) = match &embedder {
        Some(e) => {
            let (vectors, truncated) =
                embed_with_progress(e.as_ref(), &to_embed, crate::printer::events())?;
            (vectors, truncated.map(|n| (n, e.fingerprint().max_tokens)))
        }
        None => (Vec::new(), None),
    };
    let embedded = plan.new_vectors();
    let (added, changed, removed, reused) = (
        plan.added().len(),
        plan.changed().len(),
        plan.removed().len(),
        // Vectors not recomputed: unchanged chunks, and new ones whose text is already indexed.
        plan.unchanged().len() + plan.reused(),
    );
    let batch = BatchInfo {
        name: args
            .batch_label
            .clone()
            .unwrap_or_else(|| format!("ingest-{now}")),
        time: now,
        corpus_hash,
    };
    let index = plan
        .apply(&vectors, &batch, &index_path)
        .with_context(|| format!("writing the index {}", index_path.display()))?;
    let summary = serde_json::json!({
        "chunks": index.len(),
        "added": added,
        "changed": changed,
        "removed": removed,
        "embedded": embedded,
        "reused": reused,
        "index": index_path.display().to_string(),
        "fingerprint": model.hash,
        "field": field.to_string(),
        "batch": batch.name,
        "truncated": truncated.map(|t| serde_json::json!({"chunks": t.0, "max_tokens": t.1})),
        "unchanged": false,
        "rejected": rejected,
    });
    let text = if json {
        format!("{}\n", serde_json::to_string_pretty(&summary)?)
    } else {
        format!(
            "{}: {} chunks ({} added, {} changed, {} removed); embedded {}, reused {}; model {}; field {}; batch {}\n",
            index_path.display(),
            index.len(),
            added,
            changed,
            removed,
            embedded,
            reused,
            model.value.get("name").and_then(|v| v.as_str()).unwrap_or("?"),
            field,
            batch.name
        ) + &veredicto_report::gate::rejections_human(&rejected)
    };
    crate::printer::stdout(&text)?;
    // A warning, on stderr: it changes what the vectors mean, not the result's text.
    if let (false, Some((n, max))) = (json, truncated) {
        if n > 0 {
            crate::printer::warn(&format!(
                "{n} of {embedded} embedded chunks are longer than {max} tokens and were embedded truncated to their first {max} tokens"
            ));
        }
    }
    // On stderr: the result on stdout stays the same for the same inputs.
    crate::printer::note(&format!(
        "ingest took {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(crate::printer::ExitStatus::Success)
}

/// Embeds passages in slices of 256, reporting progress as events (on stderr: a bar on a
/// terminal, else a line every 5 s, in every output format), and counts those embedded
/// truncated (`None` when the embedder cannot tell).
fn embed_with_progress(
    e: &dyn veredicto_embed::Embedder,
    items: &[(&str, &str)],
    events: veredicto_app::Events<'_>,
) -> anyhow::Result<(Vec<Vec<f32>>, Option<usize>)> {
    const WHAT: &str = "chunks embedded";
    let total = items.len() as u64;
    events.progress(WHAT, 0, total, false);
    let result = embed_slices(e, items, &|done| events.progress(WHAT, done, total, false));
    events.progress(WHAT, total, total, true);
    result
}

fn embed_slices(
    e: &dyn veredicto_embed::Embedder,
    items: &[(&str, &str)],
    progress: &dyn Fn(u64),
) -> anyhow::Result<(Vec<Vec<f32>>, Option<usize>)> {
    let mut out = Vec::with_capacity(items.len());
    let mut truncated = Some(0usize);
    for slice in items.chunks(256) {
        let texts: Vec<&str> = slice.iter().map(|(_, t)| *t).collect();
        let (vectors, n) = e.embed_counting_truncated(&texts, TextKind::Passage)?;
        out.extend(vectors);
        truncated = truncated.zip(n).map(|(a, b)| a + b);
        progress(out.len() as u64);
    }
    Ok((out, truncated))
}
