//! `veredicto ingest`: embeds a corpus into veredicto's on-disk exact index, incrementally.

use crate::models::EmbedderArgs;
use std::path::PathBuf;
use veredicto_app::ingest as app;

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
    /// The index's BM25 arm (searched with `--retriever 'index:DIR?mode=bm25'` or
    /// `mode=hybrid`), over the embedded field: `english` or `spanish` builds or updates one
    /// with that analyser (recorded in the manifest), `none` drops it. Default: keep what
    /// the index has (updated with the corpus; a new index gets none).
    #[arg(long, value_name = "english|spanish|none", value_parser = bm25_choice)]
    pub bm25: Option<Bm25Choice>,
}

/// `--bm25`: an analyser, or `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bm25Choice(pub Option<veredicto_index::Analyzer>);

fn bm25_choice(s: &str) -> Result<Bm25Choice, String> {
    if s.trim().eq_ignore_ascii_case("none") {
        return Ok(Bm25Choice(None));
    }
    s.parse::<veredicto_index::Analyzer>()
        .map(|a| Bm25Choice(Some(a)))
        .map_err(|_| {
            format!(
                "expected english, spanish or none, got `{}`",
                veredicto_core::redact::short(s)
            )
        })
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
    let time = args.time.clone().unwrap_or_else(crate::clock::now_rfc3339);
    let lock_wait = std::time::Duration::try_from_secs_f64(args.lock_timeout).map_err(|_| {
        anyhow::anyhow!(
            "--lock-timeout: expected a number of seconds >= 0, got {}",
            args.lock_timeout
        )
    })?;
    let prepared = app::prepare(app::IngestRequest {
        corpus: corpus_path,
        index: index_path.clone(),
        field: match args.field {
            FieldArg::Representation => app::TextField::Representation,
            FieldArg::Text => app::TextField::Text,
        },
        batch_label: args.batch_label.clone(),
        rebuild: args.rebuild,
        time,
        strict: args.strict,
        reject_expired: args.reject_expired,
        lock_wait,
        bm25: args.bm25.map(|c| c.0),
    })?;
    let embedder = if prepared.needs_embedder() {
        Some(
            args.embedder.load_for_index(
                settings,
                Some(&index_path),
                Some(
                    (
                        std::time::Duration::from_secs_f64(args.timeout),
                        args.retries,
                    )
                        .into(),
                ),
            )?,
        )
    } else {
        None
    };
    let done = app::ingest(prepared, embedder.as_deref(), crate::printer::events())?;
    let Some(batch) = &done.batch else {
        let text = if json {
            crate::printer::json(&serde_json::json!({
                "chunks": done.chunks,
                "added": 0,
                "changed": 0,
                "removed": 0,
                "embedded": 0,
                "reused": done.reused,
                "index": index_path.display().to_string(),
                "fingerprint": done.model.hash,
                "field": done.field.to_string(),
                "batch": null,
                "truncated": null,
                "unchanged": true,
                "bm25": bm25_json(done.bm25.as_ref()),
            }))?
        } else {
            format!(
                "{}: unchanged: {} chunks; the corpus is the one last ingested (no batch written)\n",
                index_path.display(),
                done.chunks
            ) + &bm25_human(done.bm25.as_ref(), done.chunks)
        };
        crate::printer::stdout(&text)?;
        return Ok(crate::printer::ExitStatus::Success);
    };
    let (truncated, rejected, embedded) = (done.truncated, &done.rejected, done.embedded);
    let summary = serde_json::json!({
        "chunks": done.chunks,
        "added": done.added,
        "changed": done.changed,
        "removed": done.removed,
        "embedded": embedded,
        "reused": done.reused,
        "index": index_path.display().to_string(),
        "fingerprint": done.model.hash,
        "field": done.field.to_string(),
        "batch": batch,
        "truncated": truncated.map(|t| serde_json::json!({"chunks": t.0, "max_tokens": t.1})),
        "unchanged": false,
        "rejected": rejected,
        "bm25": bm25_json(done.bm25.as_ref()),
    });
    let text = if json {
        format!("{}\n", serde_json::to_string_pretty(&summary)?)
    } else {
        format!(
            "{}: {} chunks ({} added, {} changed, {} removed); embedded {}, reused {}; model {}; field {}; batch {}\n",
            index_path.display(),
            done.chunks,
            done.added,
            done.changed,
            done.removed,
            embedded,
            done.reused,
            done.model.value.get("name").and_then(|v| v.as_str()).unwrap_or("?"),
            done.field,
            batch
        ) + &bm25_human(done.bm25.as_ref(), done.chunks)
            + &veredicto_report::gate::rejections_human(rejected)
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

/// The BM25 arm in the JSON summary: `null` when the index has none.
fn bm25_json(work: Option<&veredicto_index::LexicalWork>) -> serde_json::Value {
    match work {
        None => serde_json::Value::Null,
        Some(w) => serde_json::json!({
            "analyzer": w.analyzer.name(),
            "analysed": w.analysed,
            "removed": w.removed,
            "rebuilt": w.rebuilt,
        }),
    }
}

/// The BM25 arm, one line (nothing when the index has none).
fn bm25_human(work: Option<&veredicto_index::LexicalWork>, chunks: usize) -> String {
    match work {
        None => String::new(),
        Some(w) if w.rebuilt => format!(
            "bm25 arm: {} analyser, built over {} chunks\n",
            w.analyzer.name(),
            w.analysed
        ),
        Some(w) => format!(
            "bm25 arm: {} analyser, {} chunks; {} analysed, {} removed\n",
            w.analyzer.name(),
            chunks,
            w.analysed,
            w.removed
        ),
    }
}
