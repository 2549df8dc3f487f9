//! `veredicto search`: one query against the index, exact top-k.

use crate::models::EmbedderArgs;
use crate::printer::ExitStatus;
use std::path::PathBuf;
use veredicto_core::evidence::ChunkSpan;
use veredicto_embed::TextKind;
use veredicto_index::{Filter, Index};

#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("source").multiple(false))]
pub struct SearchArgs {
    /// The index folder (default: the `[source]` of veredicto.toml).
    #[arg(long, value_name = "DIR", group = "source")]
    pub index: Option<PathBuf>,
    /// A live retriever instead, by its URI: every scheme is listed at the end of this help.
    #[arg(long, value_name = "URI", group = "source")]
    pub retriever: Option<String>,
    /// An arm of a `fusion:` retriever (repeatable, in order; `run:FILE` for a run file):
    /// `--retriever 'fusion:rrf?k=60' --arm 'index:kb?mode=bm25' --arm index:kb`. Default:
    /// `VEREDICTO_ARMS`, else `[retriever] arms` of veredicto.toml.
    #[arg(long = "arm", value_name = "URI")]
    pub arm: Vec<String>,
    #[command(flatten)]
    pub net: crate::retriever_args::NetArgs,
    /// A chunk ID a live retriever returns twice: `keep-first` (the later ones are removed
    /// and counted) or `refuse` (exit 2 naming the chunk). Default: `[source] duplicates`
    /// of veredicto.toml, else keep-first.
    #[arg(long, value_name = "keep-first|refuse", value_parser = crate::retriever_args::duplicate_rule)]
    pub duplicates: Option<veredicto_core::retrieval::DuplicateRule>,
    /// The query text.
    pub query: String,
    /// How many results.
    #[arg(short = 'k', long = "top-k", default_value_t = 10)]
    pub k: usize,
    /// Filters, ANDed: `domain=laboral`, `label=SINTESIS_CURADA`, `facet.tipo=tabla`,
    /// `valid_at=2025-11-14`.
    #[arg(long, value_name = "KEY=VALUE")]
    pub filter: Vec<String>,
    /// The documents the chunks come from (JSONL: `id`, `text`): each result then shows
    /// where it sits in its document (`doc_id`, `start`, `end`), from the retriever's answer,
    /// the chunk's offsets, or its text found in the document.
    #[arg(long, value_name = "FILE")]
    pub documents: Option<PathBuf>,
    /// The corpus the chunks come from (JSONL): their spans with `--documents` (default with
    /// `--index`: the index's records of them), the texts `--check-vectors` embeds.
    #[arg(long, value_name = "FILE")]
    pub corpus: Option<PathBuf>,
    #[command(flatten)]
    pub embedder: EmbedderArgs,
    /// With --retriever: compare the stored vectors of N chunks sampled from --corpus with
    /// their texts embedded by the query model (pgvector, Qdrant, Chroma).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000), requires = "corpus")]
    pub check_vectors: Option<u64>,
    /// Seed of the --check-vectors sample.
    #[arg(long, value_name = "N", default_value_t = veredicto_core::compare::DEFAULT_SEED)]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_parser = crate::printer::formats(&["human", "json"]), default_value = "human")]
    pub format: crate::printer::Format,
    /// Alias of `--format json`.
    #[arg(long)]
    pub json: bool,
}

impl SearchArgs {
    /// What the flags say about the shared settings (source, answer rule, model).
    pub fn overrides(&self) -> veredicto_app::Overrides {
        use veredicto_formats::config::Source;
        veredicto_app::Overrides {
            source: match (&self.index, &self.retriever) {
                (Some(dir), _) => Some(Source::Index(dir.clone())),
                (_, Some(uri)) => Some(Source::Retriever(uri.clone())),
                _ => None,
            },
            duplicates: self.duplicates,
            model: self.embedder.model.clone(),
            arms: Some(self.arm.clone()),
            ..Default::default()
        }
    }
}

pub fn run(args: SearchArgs, settings: &veredicto_app::Settings) -> anyhow::Result<ExitStatus> {
    let dir = match (&args.index, &args.retriever) {
        (Some(dir), _) => dir.clone(),
        // The own index's vector arm is searched here; its BM25 and hybrid modes and every
        // other retriever through the retriever seam.
        (None, Some(uri)) => match uri.strip_prefix("index:") {
            Some(dir) if !dir.contains('?') || std::path::Path::new(dir).is_dir() => {
                PathBuf::from(dir)
            }
            _ => return run_live(&args, settings, uri),
        },
        (None, None) => match &settings.source {
            Some(veredicto_formats::config::Source::Index(dir)) => dir.clone(),
            Some(veredicto_formats::config::Source::Retriever(uri)) => {
                return run_live(&args, settings, &uri.clone())
            }
            _ => anyhow::bail!(
                "search needs an index or a retriever: give --index DIR or --retriever URI (or a [source] in veredicto.toml)"
            ),
        },
    };
    if args.check_vectors.is_some() {
        anyhow::bail!(
            "--check-vectors compares a live retriever's stored vectors with the query model's: give --retriever URI (pgvector, Qdrant, Chroma); the own index checks its vectors with `veredicto index verify`"
        );
    }
    // The arguments first: a bad filter is reported before a model is loaded.
    let filter = if args.filter.is_empty() {
        None
    } else {
        Some(Filter::parse_all(args.filter.iter().map(String::as_str))?)
    };
    let index = Index::open(&dir)?;
    let embedder =
        args.embedder
            .load_for_index(settings, Some(&dir), Some(args.net.embedder_net()))?;
    crate::models::check_index_model(&index, embedder.as_ref())?;
    show_embedder(embedder.as_ref());
    let vector = embedder
        .embed(&[args.query.as_str()], TextKind::Query)?
        .pop()
        .unwrap_or_default();
    let hits = index.search(&vector, args.k, filter.as_ref())?;
    let places = match &args.documents {
        Some(_) => {
            let ids: Vec<&str> = hits.iter().map(|h| index.chunk(h.row).id()).collect();
            let results: Vec<(&str, Option<&ChunkSpan>)> =
                ids.iter().map(|id| (*id, None)).collect();
            let corpus = match args.corpus {
                Some(_) => None,
                None => Some(veredicto_index::records::corpus_of_ids(
                    &index,
                    ids.iter().copied(),
                )?),
            };
            Some(place(&args, &results, corpus)?)
        }
        None => None,
    };
    let rows: Vec<serde_json::Value> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let c = index.chunk(h.row);
            let record = c.record().ok().flatten();
            let text = record
                .as_ref()
                .and_then(|r| r.get("text"))
                .and_then(|t| t.as_str())
                .unwrap_or("")
                .to_owned();
            let mut row = serde_json::json!({
                "rank": i + 1,
                "id": c.id(),
                "score": h.score,
                "domain": c.meta().domain,
                "ingest_batch": c.ingest_batch(),
                "text": text,
            });
            if let (Some(p), Some(map)) = (&places, row.as_object_mut()) {
                map.insert(
                    "span".into(),
                    serde_json::to_value(&p[i]).unwrap_or_default(),
                );
            }
            row
        })
        .collect();
    let out = if args.json || args.format == crate::printer::Format::Json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({
                "query": args.query,
                "k": args.k,
                "results": rows,
            }))?
        )
    } else {
        let mut s = String::new();
        for r in &rows {
            let text: String = r["text"].as_str().unwrap_or("").chars().take(90).collect();
            let span = match places {
                Some(_) => format!("{:<24} ", span_text(&r["span"])),
                None => String::new(),
            };
            s.push_str(&format!(
                "{:>3}  {:.4}  {:<28} {span}{:<10} {}\n",
                r["rank"],
                r["score"].as_f64().unwrap_or(0.0),
                r["id"].as_str().unwrap_or(""),
                r["domain"].as_str().unwrap_or("-"),
                text.replace('\n', " ")
            ));
        }
        if rows.is_empty() {
            s.push_str("(no results)\n");
        }
        s
    };
    crate::output::print_stdout(&out)?;
    Ok(ExitStatus::Success)
}

/// Where each result sits, with `--documents` (and `--corpus`, or the index's `records`).
fn place(
    args: &SearchArgs,
    results: &[(&str, Option<&ChunkSpan>)],
    records: Option<veredicto_core::case::Corpus>,
) -> anyhow::Result<Vec<Option<veredicto_app::golden::Placed>>> {
    let docs = veredicto_app::golden::documents(args.documents.as_deref())?
        .ok_or_else(|| anyhow::anyhow!("--documents is needed to place the results"))?;
    let corpus = match &args.corpus {
        Some(path) => {
            Some(veredicto_app::golden::load_corpus(path, Some(&docs), crate::printer::events())?.0)
        }
        None => records,
    };
    Ok(veredicto_app::golden::place_results(
        results,
        corpus.as_ref(),
        &docs,
    )?)
}

/// A result's span as the human format shows it: `DOC:START-END`, or `(not located)`.
fn span_text(span: &serde_json::Value) -> String {
    match (
        span["doc_id"].as_str(),
        span["start"].as_u64(),
        span["end"].as_u64(),
    ) {
        (Some(d), Some(a), Some(b)) => {
            format!("{}:{a}-{b}", veredicto_core::redact::escape_control(d))
        }
        _ => "(not located)".to_owned(),
    }
}

/// With `-v`: the model that embeds the query, and its fingerprint.
fn show_embedder(e: &dyn veredicto_embed::Embedder) {
    crate::printer::detail(&format!(
        "query embedder {} ({})",
        veredicto_core::redact::escape_control(&e.fingerprint().name),
        e.fingerprint().digest()
    ));
}

/// `search --retriever URI`: one query against a live retriever.
fn run_live(
    args: &SearchArgs,
    settings: &veredicto_app::Settings,
    uri: &str,
) -> anyhow::Result<ExitStatus> {
    // `--filter` conditions travel as the request's `filters`, exactly as a golden case's
    // would (each retriever maps them as documented, or refuses them naming the key).
    let filters = if args.filter.is_empty() {
        None
    } else {
        Some(Filter::parse_all(args.filter.iter().map(String::as_str))?.to_json()?)
    };
    let opened = crate::retriever_args::open_retriever(uri, &args.arm, settings, &args.net)?;
    let retriever = opened.retriever;
    let case = veredicto_core::case::Case {
        id: "search".into(),
        query: args.query.clone(),
        expected: Vec::new(),
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: None,
        domain: None,
        tags: Vec::new(),
        gold: false,
        query_vector: None,
        filters: filters.clone(),
    };
    let embedder = crate::retriever_args::load_embedder(
        retriever.as_ref(),
        opened.index_dir.as_deref(),
        &args.embedder,
        settings,
        &args.net,
        args.net.total_deadline(),
        std::slice::from_ref(&case),
        args.check_vectors.is_some(),
    )?;
    if let Some(e) = &embedder {
        show_embedder(e.as_ref());
    }
    let vector = match &embedder {
        Some(e) => Some(
            e.embed(&[args.query.as_str()], TextKind::Query)?
                .pop()
                .unwrap_or_default(),
        ),
        None => None,
    };
    retriever.prepare(embedder.as_ref().map(|e| e.dim()))?;
    let mut ranking = retriever.search(&veredicto_retrieve::Request {
        case_id: "search",
        query: &args.query,
        vector: vector.as_deref(),
        depth: args.k,
        expected: &[],
        exact: false,
        filters: filters.as_ref(),
    })?;
    // The exam's rule for every answer: each chunk once.
    let rule = settings.duplicates;
    let removed =
        veredicto_retrieve::pass::dedup_answer(retriever.as_ref(), "search", rule, &mut ranking)?;
    if let Some(d) = &removed {
        crate::printer::note(&format!(
            "{} duplicate result(s) removed (first occurrence kept): {}; several chunks of one document mapped to one ID, or a hybrid merge that returned an ID twice, are common causes",
            d.count,
            veredicto_core::redact::short(&d.ids.join(", "))
        ));
    }
    let places = match &args.documents {
        Some(_) => {
            let results: Vec<(&str, Option<&ChunkSpan>)> = ranking
                .hits
                .iter()
                .map(|h| (h.id.as_str(), h.span.as_ref()))
                .collect();
            Some(place(args, &results, None)?)
        }
        None => None,
    };
    let stored_vectors = match (args.check_vectors, &embedder) {
        (Some(n), Some(e)) => {
            let corpus = match &args.corpus {
                Some(p) => veredicto_formats::corpus::read_corpus(p)?,
                None => anyhow::bail!(
                    "--check-vectors needs the chunks' texts to embed: give --corpus FILE"
                ),
            };
            Some(veredicto_app::stored_vectors::check(
                retriever.as_ref(),
                e.as_ref(),
                &veredicto_core::case::Corpus::new(corpus),
                veredicto_app::stored_vectors::CheckVectors {
                    chunks: n as usize,
                    seed: args.seed,
                },
            )?)
        }
        _ => None,
    };
    let out = if args.json || args.format == crate::printer::Format::Json {
        let rows: Vec<serde_json::Value> = ranking
            .hits
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let mut row = serde_json::json!({"rank": i + 1, "id": h.id, "score": h.score});
                if let (Some(p), Some(map)) = (&places, row.as_object_mut()) {
                    map.insert(
                        "span".into(),
                        serde_json::to_value(&p[i]).unwrap_or_default(),
                    );
                }
                row
            })
            .collect();
        format!(
            "{}\n",
            serde_json::to_string_pretty(&{
                let mut v = serde_json::json!({
                    "query": args.query,
                    "k": args.k,
                    "retriever": retriever.describe(),
                    "results": rows,
                });
                if let (Some(d), Some(map)) = (&removed, v.as_object_mut()) {
                    map.insert("duplicates_removed".into(), serde_json::to_value(d)?);
                }
                if let (Some(c), Some(map)) = (&stored_vectors, v.as_object_mut()) {
                    map.insert("stored_vectors".into(), serde_json::to_value(c)?);
                }
                v
            })?
        )
    } else {
        let mut s = String::new();
        for (i, h) in ranking.hits.iter().enumerate() {
            let score = h.score.map_or("-".to_owned(), |v| format!("{v:.4}"));
            let span = match &places {
                Some(p) => format!(
                    "  {}",
                    span_text(&serde_json::to_value(&p[i]).unwrap_or_default())
                ),
                None => String::new(),
            };
            s.push_str(&format!(
                "{:>3}  {score:>7}  {}{span}\n",
                i + 1,
                veredicto_core::redact::escape_control(&h.id)
            ));
        }
        if ranking.hits.is_empty() {
            s.push_str("(no results)\n");
        }
        if let Some(c) = &stored_vectors {
            s.push_str(&veredicto_report::stored_vectors_line(c));
            s.push('\n');
        }
        s
    };
    crate::output::print_stdout(&out)?;
    Ok(ExitStatus::Success)
}
