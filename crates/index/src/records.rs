//! The index's chunk records read back as a corpus (the chunks' texts, labels, validity
//! and batches, as ingest kept them), for the exam's diagnosis and the corpus check.

use std::collections::BTreeMap;
use veredicto_core::case::{Chunk, Corpus};

use crate::Index;

/// Why the records could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The index failed (reading a chunk record).
    #[error(transparent)]
    Index(#[from] crate::IndexError),
    /// A stored chunk record that is not a valid corpus line.
    #[error(transparent)]
    Record(#[from] veredicto_formats::FormatError),
}

/// The index's chunks as a corpus for the diagnosis (from the records kept at ingest), each
/// with the batch that brought it and the batch's time from the index's batch records.
pub fn corpus_of(index: &Index) -> Result<Corpus, RecordError> {
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
) -> Result<Corpus, RecordError> {
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
) -> Result<(Vec<Chunk>, BTreeMap<String, String>), RecordError> {
    use rayon::prelude::*;
    let records = index.dir().join("records.jsonl");
    // Records are parsed in parallel; the first failing row (in row order) is the error.
    let parsed: Vec<Result<Chunk, RecordError>> = rows
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
