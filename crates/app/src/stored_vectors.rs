//! The stored-vector check (`--check-vectors N` on `exam` and `search --retriever`): N
//! chunks sampled from the corpus, their stored vectors asked of the retriever by ID
//! ([`Retriever::stored_vectors`]: pgvector, Qdrant, Chroma), their texts embedded by the
//! query model as passages, and each pair compared by cosine
//! ([`veredicto_vectors::check_vectors`]). A table embedded with another model, or left
//! behind by a model upgrade that re-embedded only the queries, has a low mean cosine.
//!
//! The sample is deterministic: the corpus' chunks that have a text, ordered by the SHA-256
//! of `SEED:ID` (ties by ID), the first N of them. The same corpus, N and seed give the same
//! sample whatever the order of the corpus file.

use sha2::{Digest, Sha256};
use veredicto_core::case::{Chunk, Corpus};
use veredicto_core::exam::{ChunkCosine, StoredVectors};
use veredicto_embed::{Embedder, TextKind};
use veredicto_retrieve::Retriever;

use crate::Result;

/// What `--check-vectors` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckVectors {
    /// Chunks to sample (at least 1).
    pub chunks: usize,
    /// The seed of the sample.
    pub seed: u64,
}

/// The text of a chunk that is embedded: its `representation`, else its `text` (the own
/// index's default field, and what `veredicto embed` writes).
pub fn embedded_text(chunk: &Chunk) -> Option<&str> {
    chunk
        .representation
        .as_deref()
        .or(chunk.text.as_deref())
        .filter(|t| !t.trim().is_empty())
}

/// The first `n` chunks with a text, ordered by the SHA-256 of `SEED:ID` (ties by ID).
pub fn sample(corpus: &Corpus, n: usize, seed: u64) -> Vec<&Chunk> {
    let mut keyed: Vec<([u8; 32], &Chunk)> = corpus
        .iter()
        .filter(|c| embedded_text(c).is_some())
        .map(|c| {
            let mut h = Sha256::new();
            h.update(format!("{seed}:{}", c.id).as_bytes());
            (h.finalize().into(), c)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
    keyed.into_iter().take(n).map(|(_, c)| c).collect()
}

/// Runs the check: refuses a retriever that cannot return its vectors and a corpus without
/// texts, before anything else is asked.
pub fn check(
    retriever: &dyn Retriever,
    embedder: &dyn Embedder,
    corpus: &Corpus,
    ask: CheckVectors,
) -> Result<StoredVectors> {
    crate::ensure!(ask.chunks > 0, "--check-vectors: give at least 1 chunk");
    let chunks = sample(corpus, ask.chunks, ask.seed);
    crate::ensure!(
        !chunks.is_empty(),
        "--check-vectors: the corpus has no chunk with a `text` (or `representation`) to embed"
    );
    let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    let Some(stored) = retriever.stored_vectors(&ids)? else {
        crate::bail!(
            "--check-vectors: {} cannot return its stored vectors (pgvector, Qdrant and Chroma can)",
            retriever.describe()
        );
    };
    let stored: std::collections::BTreeMap<String, Vec<f32>> = stored.into_iter().collect();
    let held: Vec<&Chunk> = chunks
        .iter()
        .copied()
        .filter(|c| stored.contains_key(&c.id))
        .collect();
    let texts: Vec<&str> = held.iter().filter_map(|c| embedded_text(c)).collect();
    let recomputed = if texts.is_empty() {
        Vec::new()
    } else {
        embedder.embed(&texts, TextKind::Passage)?
    };
    let pairs: Vec<(String, Vec<f32>, Vec<f32>)> = held
        .iter()
        .zip(recomputed)
        .map(|(c, r)| (c.id.clone(), stored[&c.id].clone(), r))
        .collect();
    let found = veredicto_vectors::check_vectors(&pairs);
    // The collection's name as the other findings give it (asking about no ID costs nothing).
    let collection = retriever
        .holds(&[])?
        .map_or_else(|| "the collection".to_owned(), |h| h.collection);
    Ok(StoredVectors {
        collection,
        query_model: embedder.fingerprint().name.clone(),
        sampled: chunks.len(),
        not_held: chunks.len() - held.len(),
        compared: found.compared,
        mean_cosine: found.mean,
        lowest: found.lowest.as_ref().map(|(chunk, cosine)| ChunkCosine {
            chunk: chunk.clone(),
            cosine: *cosine,
        }),
        below: found.below,
        threshold: veredicto_vectors::SAME_MODEL_COSINE,
        other_model: found.other_model(),
        other_dimension: found.other_dimension,
    })
}
