//! `veredicto search`: one query against the index, exact top-k.

use crate::models::EmbedderArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use veredicto_embed::TextKind;
use veredicto_index::{Filter, Index};

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// The index folder.
    #[arg(long, value_name = "DIR")]
    pub index: PathBuf,
    /// The query text.
    pub query: String,
    /// How many results.
    #[arg(short = 'k', long = "top-k", default_value_t = 10)]
    pub k: usize,
    /// Filters, ANDed: `domain=laboral`, `label=SINTESIS_CURADA`, `facet.tipo=tabla`,
    /// `valid_at=2025-11-14`.
    #[arg(long, value_name = "KEY=VALUE")]
    pub filter: Vec<String>,
    #[command(flatten)]
    pub embedder: EmbedderArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let index = Index::open(&args.index)?;
    let embedder = args.embedder.load_for_index(Some(&args.index))?;
    crate::models::check_index_model(&index, embedder.as_ref())?;
    let filter = if args.filter.is_empty() {
        None
    } else {
        Some(Filter::parse_all(args.filter.iter().map(String::as_str))?)
    };
    let vector = embedder
        .embed(&[args.query.as_str()], TextKind::Query)?
        .pop()
        .unwrap_or_default();
    let hits = index.search(&vector, args.k, filter.as_ref())?;
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
            serde_json::json!({
                "rank": i + 1,
                "id": c.id(),
                "score": h.score,
                "domain": c.meta().domain,
                "ingest_batch": c.ingest_batch(),
                "text": text,
            })
        })
        .collect();
    let out = if args.json {
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
            s.push_str(&format!(
                "{:>3}  {:.4}  {:<28} {:<10} {}\n",
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
    Ok(ExitCode::SUCCESS)
}
