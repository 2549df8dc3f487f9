//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::Path;
use veredicto_index::*;

/// `sha256:` + 64 hex digits derived from `tag` (not a real hash; the index only checks the shape).
pub fn fake_hash(tag: u8) -> String {
    format!("sha256:{}", format!("{tag:02x}").repeat(32))
}

pub fn model(tag: u8) -> ModelFingerprint {
    ModelFingerprint {
        value: serde_json::json!({"name": format!("test-model-{tag}"), "dimension": "test"}),
        hash: fake_hash(tag),
    }
}

pub fn settings(dim: usize, model_tag: u8) -> IngestSettings {
    IngestSettings {
        model: model(model_tag),
        dimension: dim,
        field: EmbeddedField::Representation,
        full_rebuild: false,
    }
}

pub fn batch(name: &str, time: &str) -> BatchInfo {
    BatchInfo {
        name: name.into(),
        time: time.into(),
        corpus_hash: fake_hash(0xcc),
    }
}

/// Builds a new index at `dir` from `(id, vector)` pairs (text = id, so every text differs)
/// with metadata from `meta(i)`.
pub fn build(dir: &Path, items: &[(String, Vec<f32>)], meta: impl Fn(usize) -> ChunkMeta) -> Index {
    let dim = items.first().map_or(3, |(_, v)| v.len());
    let corpus: Vec<ChunkInput> = items
        .iter()
        .enumerate()
        .map(|(i, (id, _))| ChunkInput {
            id: id.clone(),
            text: format!("text of {id}"),
            meta: meta(i),
            record: Some(serde_json::json!({"id": id, "n": i})),
        })
        .collect();
    let plan = Plan::new(None, corpus, settings(dim, 1)).expect("plan");
    let by_id: std::collections::BTreeMap<&str, &Vec<f32>> =
        items.iter().map(|(id, v)| (id.as_str(), v)).collect();
    let vectors: Vec<Vec<f32>> = plan
        .to_embed()
        .iter()
        .map(|(id, _)| by_id[id].clone())
        .collect();
    plan.apply(&vectors, &batch("b1", "2025-01-01T00:00:00Z"), dir)
        .expect("apply")
}

/// The reference: every row scored with `dot`, filtered, sorted by score descending then row
/// ascending.
pub fn naive(index: &Index, query: &[f32], filter: Option<&Filter>) -> Vec<Hit> {
    let q = normalize(query).expect("query");
    let mut all: Vec<Hit> = (0..index.len())
        .filter(|&r| filter.is_none_or(|f| f.matches(index.chunk(r).meta())))
        .map(|r| Hit {
            row: r,
            score: dot(index.vector(r), &q),
        })
        .collect();
    all.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .expect("no NaN")
            .then(a.row.cmp(&b.row))
    });
    all
}

/// Every file of an index folder, by name.
pub fn files_of(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).expect("read"),
            )
        })
        .collect()
}
