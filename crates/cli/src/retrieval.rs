//! Running the golden set against veredicto's own index: query embedding, exact search,
//! optional rerank, with per-stage latency. Produces a [`Run`] that also knows the exact
//! rank of every expected chunk in the whole index.

use anyhow::Context;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
use veredicto_core::case::{Case, Chunk, Corpus};
use veredicto_core::history::StageLatency;
use veredicto_core::run::{Retrieved, Run};
use veredicto_embed::{Embedder, Reranker, TextKind};
use veredicto_index::{Index, Query, Rank};

/// What one pass over the golden set produced.
pub struct Retrieval {
    /// The final ranking per case (reranked when a reranker is given).
    pub run: Run,
    /// Stage 1 alone (the vector index, `candidates` deep) when a reranker is given.
    pub stage1: Option<Run>,
    pub latency: BTreeMap<String, StageLatency>,
}

/// How deep and in how many stages to retrieve.
pub struct Settings<'a> {
    /// Results listed per case (at least each case's K).
    pub depth: usize,
    pub reranker: Option<&'a dyn Reranker>,
    /// Stage-1 candidates handed to the reranker.
    pub candidates: usize,
    /// Results kept after reranking.
    pub keep: usize,
}

/// Nearest-rank percentiles of latency samples, in milliseconds.
pub fn latency_stats(samples: &[f64]) -> StageLatency {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let pick = |q: f64| -> f64 {
        if v.is_empty() {
            return 0.0;
        }
        let rank = (q * v.len() as f64).ceil().max(1.0) as usize;
        v[rank.min(v.len()) - 1]
    };
    StageLatency {
        count: v.len(),
        p50_ms: pick(0.50),
        p95_ms: pick(0.95),
        p99_ms: pick(0.99),
        max_ms: v.last().copied().unwrap_or(0.0),
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// The passage text a reranker reads for a chunk of the index: its `text` (BEIR: title +
/// text), else what was embedded.
fn passage(index: &Index, row: usize) -> anyhow::Result<String> {
    let chunk = index.chunk(row);
    if let Some(serde_json::Value::Object(map)) = chunk.record()? {
        let get = |k: &str| {
            map.get(k)
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
        };
        match (get("title"), get("text")) {
            (Some(t), Some(x)) if map.contains_key("_id") => return Ok(format!("{t} {x}")),
            (_, Some(x)) => return Ok(x.to_owned()),
            _ => {}
        }
        if let Some(r) = get("representation") {
            return Ok(r.to_owned());
        }
    }
    Ok(chunk.id().to_owned())
}

/// Runs every case against the index.
pub fn retrieve(
    index: &Index,
    embedder: Option<&dyn Embedder>,
    cases: &[Case],
    k_of: impl Fn(&Case) -> usize,
    settings: &Settings<'_>,
) -> anyhow::Result<Retrieval> {
    let mut embed_ms = Vec::new();
    let mut search_ms = Vec::new();
    let mut rerank_ms = Vec::new();
    let mut run = Run {
        name: index.dir().display().to_string(),
        ..Run::default()
    };
    let mut stage1 = settings.reranker.map(|_| Run {
        name: format!("{} (stage 1)", index.dir().display()),
        ..Run::default()
    });
    for case in cases {
        let vector = match (&case.query_vector, embedder) {
            (Some(v), _) => {
                if v.len() != index.dimension() {
                    anyhow::bail!(
                        "case `{}`: field `query_vector` has dimension {}, the index has {}",
                        case.id,
                        v.len(),
                        index.dimension()
                    );
                }
                v.clone()
            }
            (None, Some(e)) => {
                let t = Instant::now();
                let mut out = e
                    .embed(&[case.query.as_str()], TextKind::Query)
                    .with_context(|| format!("embedding the query of case `{}`", case.id))?;
                embed_ms.push(ms(t));
                out.pop().unwrap_or_default()
            }
            (None, None) => anyhow::bail!(
                "case `{}` has no `query_vector` and the index's model is not loaded",
                case.id
            ),
        };
        let k = k_of(case);
        let depth = settings.depth.max(k).max(if settings.reranker.is_some() {
            settings.candidates
        } else {
            0
        });
        let t = Instant::now();
        let mut q = Query::new(&vector, depth);
        q.rank_ids = &case.expected;
        let result = index
            .search_batch(&[q])?
            .pop()
            .context("the index returned no result")?;
        search_ms.push(ms(t));
        let hits: Vec<(usize, f64)> = result
            .hits
            .iter()
            .map(|h| (h.row, f64::from(h.score)))
            .collect();
        let mut known: BTreeMap<String, (usize, Option<f64>)> = BTreeMap::new();
        for (id, rank) in case.expected.iter().zip(&result.ranks) {
            if let Rank::Ranked { rank, score } = rank {
                known.insert(id.clone(), (*rank, Some(f64::from(*score))));
            }
        }
        let listed = |rows: &[(usize, f64)]| -> Vec<Retrieved> {
            rows.iter()
                .map(|(row, score)| Retrieved {
                    id: index.chunk(*row).id().to_owned(),
                    score: Some(*score),
                })
                .collect()
        };
        match settings.reranker {
            None => {
                run.queries.insert(case.id.clone(), listed(&hits));
                run.known_ranks.insert(case.id.clone(), known);
            }
            Some(reranker) => {
                let n = settings.candidates.min(hits.len());
                let texts: Vec<String> = hits[..n]
                    .iter()
                    .map(|(row, _)| passage(index, *row))
                    .collect::<anyhow::Result<_>>()?;
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let t = Instant::now();
                let scores = reranker
                    .score(&case.query, &refs)
                    .with_context(|| format!("reranking case `{}`", case.id))?;
                rerank_ms.push(ms(t));
                // Reranked candidates (ties keep stage-1 order), then the stage-1 rest.
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
                let reranked: Vec<(usize, f64)> = order
                    .iter()
                    .map(|&i| (hits[i].0, f64::from(scores[i])))
                    .collect();
                let full: Vec<(usize, f64)> = reranked.iter().chain(&hits[n..]).copied().collect();
                let mut known_final = BTreeMap::new();
                for id in &case.expected {
                    if let Some(p) = full
                        .iter()
                        .position(|(row, _)| index.chunk(*row).id() == id)
                    {
                        known_final.insert(id.clone(), (p + 1, Some(full[p].1)));
                    } else if let Some(&(r, s)) = known.get(id) {
                        known_final.insert(id.clone(), (r, s));
                    }
                }
                let keep = settings.keep.max(k).min(reranked.len());
                run.queries
                    .insert(case.id.clone(), listed(&reranked[..keep]));
                run.known_ranks.insert(case.id.clone(), known_final);
                if let Some(s1) = stage1.as_mut() {
                    s1.queries.insert(case.id.clone(), listed(&hits[..n]));
                    s1.known_ranks.insert(case.id.clone(), known);
                }
            }
        }
    }
    let mut latency = BTreeMap::new();
    if !embed_ms.is_empty() {
        latency.insert("query_embedding".to_owned(), latency_stats(&embed_ms));
    }
    latency.insert("search".to_owned(), latency_stats(&search_ms));
    if !rerank_ms.is_empty() {
        latency.insert("rerank".to_owned(), latency_stats(&rerank_ms));
    }
    Ok(Retrieval {
        run,
        stage1,
        latency,
    })
}

/// The index's chunks as a corpus for the diagnosis (from the records kept at ingest).
pub fn corpus_of(index: &Index) -> anyhow::Result<Corpus> {
    let records = index.dir().join("records.jsonl");
    let mut chunks: Vec<Chunk> = Vec::with_capacity(index.len());
    for c in index.chunks() {
        match c.record()? {
            Some(serde_json::Value::Object(map)) => chunks.push(
                veredicto_formats::corpus::chunk_from_object(&records, c.row() + 1, map)?,
            ),
            _ => chunks.push(Chunk {
                id: c.id().to_owned(),
                domain: c.meta().domain.clone(),
                labels: c.meta().labels.clone(),
                valid_from: c.meta().valid_from.clone(),
                valid_to: c.meta().valid_to.clone(),
                ..Chunk::default()
            }),
        }
    }
    // The index knows each chunk's batch even when the corpus line did not say.
    for (chunk, c) in chunks.iter_mut().zip(index.chunks()) {
        if chunk.ingest_batch.is_none() {
            chunk.ingest_batch = Some(c.ingest_batch().to_owned());
        }
    }
    Ok(Corpus::from_index(chunks))
}

/// Writes a run as TREC lines (`qid Q0 docid rank score tag`), ranks as listed.
pub fn write_trec_run(path: &Path, run: &Run, tag: &str) -> anyhow::Result<()> {
    let mut out = String::new();
    for (qid, results) in &run.queries {
        for (i, r) in results.iter().enumerate() {
            out.push_str(&format!(
                "{qid} Q0 {} {} {} {tag}\n",
                r.id,
                i + 1,
                r.score.unwrap_or(0.0)
            ));
        }
    }
    crate::output::write_atomic(path, out.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
