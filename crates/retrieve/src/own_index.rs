//! veredicto's own exact index behind the [`Retriever`] seam (`index:DIR`, or `--index DIR`).

use std::collections::BTreeSet;
use std::path::Path;

use veredicto_core::case::Corpus;
use veredicto_index::{Index, Query, QueryResult, Rank};

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

    /// A request's query vector (of the index's dimension) and filter, checked.
    fn check<'a>(
        &self,
        request: &Request<'a>,
    ) -> Result<(&'a [f32], Option<veredicto_index::Filter>), RetrieveError> {
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
        Ok((vector, filter))
    }

    /// The index query of a request: top `depth`, and the exact rank of every expected chunk.
    fn query<'a>(
        &self,
        request: &Request<'a>,
        vector: &'a [f32],
        filter: Option<&'a veredicto_index::Filter>,
    ) -> Query<'a> {
        let mut q = Query::new(vector, request.depth);
        q.rank_ids = request.expected;
        q.filter = filter;
        q
    }

    fn records_error(&self, e: veredicto_index::records::RecordError) -> RetrieveError {
        match e {
            veredicto_index::records::RecordError::Index(e) => RetrieveError::Index(e),
            veredicto_index::records::RecordError::Record(e) => RetrieveError::Format(e),
        }
    }

    fn ranking(&self, request: &Request<'_>, result: &QueryResult) -> Ranking {
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
        Ranking { hits, known }
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
        let (vector, filter) = self.check(request)?;
        let query = self.query(request, vector, filter.as_ref());
        let Some(result) = self.index.search_batch(&[query])?.pop() else {
            return Ok(Ranking::default());
        };
        Ok(self.ranking(request, &result))
    }

    fn batched(&self) -> bool {
        true
    }

    fn search_batch(&self, requests: &[Request<'_>]) -> Result<Vec<Ranking>, RetrieveError> {
        // Checked in order, so the first failing case is the error, as one at a time.
        let checked = requests
            .iter()
            .map(|r| self.check(r))
            .collect::<Result<Vec<_>, _>>()?;
        let queries: Vec<Query<'_>> = requests
            .iter()
            .zip(&checked)
            .map(|(r, (vector, filter))| self.query(r, vector, filter.as_ref()))
            .collect();
        let results = self.index.search_batch(&queries)?;
        Ok(requests
            .iter()
            .zip(&results)
            .map(|(r, result)| self.ranking(r, result))
            .collect())
    }

    fn corpus(&self) -> Result<Option<Corpus>, RetrieveError> {
        let corpus = veredicto_index::records::corpus_of(&self.index);
        Ok(Some(corpus.map_err(|e| self.records_error(e))?))
    }

    fn corpus_for(&self, ids: &BTreeSet<&str>) -> Result<Option<Corpus>, RetrieveError> {
        let corpus = veredicto_index::records::corpus_of_ids(&self.index, ids.iter().copied());
        Ok(Some(corpus.map_err(|e| self.records_error(e))?))
    }

    fn fingerprint(&self) -> Option<String> {
        Some(self.index.manifest().corpus_hash.clone())
    }

    fn holds(&self, ids: &[&str]) -> Result<Option<crate::Holding>, RetrieveError> {
        Ok(Some(crate::Holding {
            collection: "index".to_owned(),
            present: ids
                .iter()
                .filter(|id| self.index.row_of(id).is_some())
                .map(|id| (*id).to_owned())
                .collect(),
        }))
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
