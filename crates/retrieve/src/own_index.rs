//! veredicto's own exact index behind the [`Retriever`] seam (`index:DIR`, or `--index DIR`).

use std::path::Path;

use veredicto_core::case::Corpus;
use veredicto_index::{Index, Query, Rank};

use crate::{Hit, Ranking, Request, RetrieveError, Retriever, Vectors};

/// The own index: exact search, and the exact rank of every expected chunk at any depth.
pub struct OwnIndex {
    index: Index,
    uri: String,
}

impl OwnIndex {
    /// Opens the index folder.
    pub fn open(dir: &Path) -> Result<OwnIndex, RetrieveError> {
        Ok(OwnIndex {
            index: Index::open(dir)?,
            uri: dir.display().to_string(),
        })
    }

    /// The opened index.
    pub fn index(&self) -> &Index {
        &self.index
    }
}

impl Retriever for OwnIndex {
    fn describe(&self) -> String {
        self.uri.clone()
    }

    fn kind(&self) -> &'static str {
        "index"
    }

    fn vectors(&self) -> Vectors {
        Vectors::Required
    }

    fn prepare(&self, dimension: Option<usize>) -> Result<(), RetrieveError> {
        match dimension {
            Some(d) if d != self.index.dimension() => Err(RetrieveError::Setup {
                uri: self.uri.clone(),
                reason: format!(
                    "the embedder gives vectors of dimension {d}, the index holds {}",
                    self.index.dimension()
                ),
            }),
            _ => Ok(()),
        }
    }

    fn search(&self, request: &Request<'_>) -> Result<Ranking, RetrieveError> {
        let vector = request.vector.ok_or_else(|| RetrieveError::NoVector {
            case: request.case_id.to_owned(),
        })?;
        if vector.len() != self.index.dimension() {
            return Err(RetrieveError::QueryDimension {
                case: request.case_id.to_owned(),
                got: vector.len(),
                want: self.index.dimension(),
            });
        }
        let filter = match request.filters {
            Some(f) => Some(
                veredicto_index::Filter::from_json(&serde_json::Value::Object(f.clone())).map_err(
                    |e| RetrieveError::Setup {
                        uri: self.describe(),
                        reason: format!("case `{}`: {e}", request.case_id),
                    },
                )?,
            ),
            None => None,
        };
        let mut q = Query::new(vector, request.depth);
        q.rank_ids = request.expected;
        q.filter = filter.as_ref();
        let Some(result) = self.index.search_batch(&[q])?.pop() else {
            return Ok(Ranking::default());
        };
        let hits = result
            .hits
            .iter()
            .map(|h| Hit {
                id: self.index.chunk(h.row).id().to_owned(),
                score: Some(f64::from(h.score)),
            })
            .collect();
        let mut known = std::collections::BTreeMap::new();
        for (id, rank) in request.expected.iter().zip(&result.ranks) {
            if let Rank::Ranked { rank, score } = rank {
                known.insert(id.clone(), (*rank, Some(f64::from(*score))));
            }
        }
        Ok(Ranking { hits, known })
    }

    fn corpus(&self) -> Result<Option<Corpus>, RetrieveError> {
        Ok(Some(
            veredicto_index::retriever::corpus_of(&self.index).map_err(|e| match e {
                veredicto_index::retriever::RetrieveError::Index(e) => RetrieveError::Index(e),
                veredicto_index::retriever::RetrieveError::Record(e) => RetrieveError::Format(e),
                other => RetrieveError::Setup {
                    uri: self.uri.clone(),
                    reason: other.to_string(),
                },
            })?,
        ))
    }

    fn fingerprint(&self) -> Option<String> {
        Some(self.index.manifest().corpus_hash.clone())
    }

    fn model(&self) -> (Option<String>, Option<String>) {
        let m = self.index.manifest();
        (
            m.model
                .get("name")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            Some(m.model_hash.clone()),
        )
    }

    fn check_model(&self, model_hash: &str) -> Result<(), RetrieveError> {
        Ok(self.index.check_model(model_hash)?)
    }
}
