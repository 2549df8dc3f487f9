//! The retriever backed by veredicto's own index: query embedding, exact search, optional
//! rerank, with per-stage latency. Produces a [`Run`] that also knows the exact rank of
//! every expected chunk in the whole index (not only within the listed depth).

use std::collections::BTreeMap;
use std::time::Instant;
use veredicto_core::case::{Case, Chunk, Corpus};
use veredicto_core::history::StageLatency;
use veredicto_core::run::{Retrieved, Run};
use veredicto_embed::{EmbedError, Embedder, Reranker, TextKind};

use crate::{Index, IndexError, Query, Rank};

/// Why a pass over the golden set failed. Each names the case.
#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    /// A precomputed `query_vector` of the wrong dimension.
    #[error("case `{case}`: field `query_vector` has dimension {got}, the index has {want}")]
    QueryDimension {
        /// The case ID.
        case: String,
        /// The vector's dimension.
        got: usize,
        /// The index's dimension.
        want: usize,
    },
    /// No precomputed vector and no model to embed the query with.
    #[error("case `{case}` has no `query_vector` and the index's model is not loaded")]
    NoModel {
        /// The case ID.
        case: String,
    },
    /// The embedder failed on the case's query.
    #[error("embedding the query of case `{case}`")]
    Embed {
        /// The case ID.
        case: String,
        /// What the embedder said.
        #[source]
        source: EmbedError,
    },
    /// The reranker failed on the case's candidates.
    #[error("reranking case `{case}`")]
    Rerank {
        /// The case ID.
        case: String,
        /// What the reranker said.
        #[source]
        source: EmbedError,
    },
    /// A reranker that answered with the wrong number of scores.
    #[error("reranking case `{case}`: {got} scores for {want} passages")]
    RerankCount {
        /// The case ID.
        case: String,
        /// Scores returned.
        got: usize,
        /// Passages sent.
        want: usize,
    },
    /// The index answered a query with no result list.
    #[error("the index returned no result")]
    NoResult,
    /// The index failed (reading a chunk record, searching).
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A stored chunk record that is not a valid corpus line.
    #[error(transparent)]
    Record(#[from] veredicto_formats::FormatError),
}

/// What one pass over the golden set produced.
#[derive(Debug)]
pub struct Retrieval {
    /// The final ranking per case (reranked when a reranker is given).
    pub run: Run,
    /// Stage 1 alone (the vector index, `candidates` deep) when a reranker is given.
    pub stage1: Option<Run>,
    /// Per stage (`query_embedding`, `search`, `rerank`): latency over the cases.
    pub latency: BTreeMap<String, StageLatency>,
}

/// How deep and in how many stages to retrieve.
pub struct Settings<'a> {
    /// Results listed per case (at least each case's K).
    pub depth: usize,
    /// The second stage, when there is one.
    pub reranker: Option<&'a dyn Reranker>,
    /// Stage-1 candidates handed to the reranker.
    pub candidates: usize,
    /// Results kept after reranking.
    pub keep: usize,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// The passage text a reranker reads for a chunk of the index: its `text` (BEIR: title +
/// text), else what was embedded.
fn passage(index: &Index, row: usize) -> Result<String, RetrieveError> {
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
) -> Result<Retrieval, RetrieveError> {
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
                    return Err(RetrieveError::QueryDimension {
                        case: case.id.clone(),
                        got: v.len(),
                        want: index.dimension(),
                    });
                }
                v.clone()
            }
            (None, Some(e)) => {
                let t = Instant::now();
                let mut out =
                    e.embed(&[case.query.as_str()], TextKind::Query)
                        .map_err(|source| RetrieveError::Embed {
                            case: case.id.clone(),
                            source,
                        })?;
                embed_ms.push(ms(t));
                out.pop().unwrap_or_default()
            }
            (None, None) => {
                return Err(RetrieveError::NoModel {
                    case: case.id.clone(),
                })
            }
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
            .ok_or(RetrieveError::NoResult)?;
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
                    .collect::<Result<_, _>>()?;
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let t = Instant::now();
                let scores =
                    reranker
                        .score(&case.query, &refs)
                        .map_err(|source| RetrieveError::Rerank {
                            case: case.id.clone(),
                            source,
                        })?;
                rerank_ms.push(ms(t));
                if scores.len() != n {
                    return Err(RetrieveError::RerankCount {
                        case: case.id.clone(),
                        got: scores.len(),
                        want: n,
                    });
                }
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
        latency.insert(
            "query_embedding".to_owned(),
            StageLatency::from_samples(&embed_ms),
        );
    }
    latency.insert("search".to_owned(), StageLatency::from_samples(&search_ms));
    if !rerank_ms.is_empty() {
        latency.insert("rerank".to_owned(), StageLatency::from_samples(&rerank_ms));
    }
    Ok(Retrieval {
        run,
        stage1,
        latency,
    })
}

/// The index's chunks as a corpus for the diagnosis (from the records kept at ingest), each
/// with the batch that brought it and the batch's time from the index's batch records.
pub fn corpus_of(index: &Index) -> Result<Corpus, RetrieveError> {
    let rows: Vec<usize> = (0..index.len()).collect();
    let (chunks, times) = chunks_of_rows(index, &rows)?;
    Ok(Corpus::from_index(chunks).with_batch_times(times))
}

/// The chunks named by `ids` that the index holds (others are left out), read from their
/// records alone: what an exam needs (the expected and the retrieved chunks) without
/// parsing the rest of the collection. The batches' chunk counts are those of the whole
/// index, read from its chunk table.
pub fn corpus_of_ids<'a>(
    index: &Index,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<Corpus, RetrieveError> {
    let mut rows: Vec<usize> = ids.into_iter().filter_map(|id| index.row_of(id)).collect();
    rows.sort_unstable();
    rows.dedup();
    let (chunks, _) = chunks_of_rows(index, &rows)?;
    // Counts and times of every batch, from the chunk table (no record is read).
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut times: BTreeMap<String, String> = BTreeMap::new();
    let mut run: Option<(&str, &str, usize)> = None;
    let mut flush = |(name, at, n): (&str, &str, usize)| {
        *counts.entry(name.to_owned()).or_default() += n;
        let t = times.entry(name.to_owned()).or_default();
        if at > t.as_str() {
            *t = at.to_owned();
        }
    };
    // Rows of one batch are mostly adjacent: count runs of equal (batch, time).
    for c in index.chunks() {
        let (b, at) = (c.ingest_batch(), c.ingested_at());
        match &mut run {
            Some((name, time, n)) if *name == b && *time == at => *n += 1,
            _ => {
                if let Some(r) = run.take() {
                    flush(r);
                }
                run = Some((b, at, 1));
            }
        }
    }
    if let Some(r) = run {
        flush(r);
    }
    Ok(Corpus::from_index(chunks)
        .with_batch_times(times)
        .with_batch_counts(counts))
}

/// The chunks of `rows` (in row order) from their records, and the time of each batch they
/// name.
fn chunks_of_rows(
    index: &Index,
    rows: &[usize],
) -> Result<(Vec<Chunk>, BTreeMap<String, String>), RetrieveError> {
    use rayon::prelude::*;
    let records = index.dir().join("records.jsonl");
    // Records are parsed in parallel; the first failing row (in row order) is the error.
    let parsed: Vec<Result<Chunk, RetrieveError>> = rows
        .par_iter()
        .map(|&row| {
            let c = index.chunk(row);
            Ok(match c.record()? {
                Some(serde_json::Value::Object(map)) => {
                    veredicto_formats::corpus::chunk_from_object(&records, row + 1, map)?
                }
                _ => Chunk {
                    id: c.id().to_owned(),
                    domain: c.meta().domain.clone(),
                    labels: c.meta().labels.clone(),
                    valid_from: c.meta().valid_from.clone(),
                    valid_to: c.meta().valid_to.clone(),
                    ..Chunk::default()
                },
            })
        })
        .collect();
    let mut chunks: Vec<Chunk> = Vec::with_capacity(parsed.len());
    for chunk in parsed {
        chunks.push(chunk?);
    }
    // The batch is the index's own record (the batch that brought the chunk's current
    // text, with its time), not what the corpus line said.
    let mut times: BTreeMap<String, String> = BTreeMap::new();
    for (chunk, &row) in chunks.iter_mut().zip(rows) {
        let c = index.chunk(row);
        chunk.ingest_batch = Some(c.ingest_batch().to_owned());
        let t = times.entry(c.ingest_batch().to_owned()).or_default();
        // A label used for several batches: the latest time.
        if c.ingested_at() > t.as_str() {
            *t = c.ingested_at().to_owned();
        }
    }
    Ok((chunks, times))
}
