//! veredicto's own exact index behind the [`Retriever`] seam (`index:DIR`, or `--index DIR`).
//!
//! `index:DIR?mode=vector` (the default) searches the vectors, `mode=bm25` the lexical
//! (BM25) arm built by `ingest`, and `mode=hybrid` both, fused by reciprocal rank fusion
//! (`k` = 60) over each arm's top `depth` ([`HYBRID_FUSION`]).

use std::collections::BTreeSet;
use std::path::Path;

use veredicto_core::case::Corpus;
use veredicto_core::fusion::Fusion;
use veredicto_index::{Index, LexicalQuery, Query, QueryResult, Rank};

use crate::{Hit, Ranking, Request, RetrieveError, Retriever, Vectors};

/// The fusion of `mode=hybrid`: RRF with `k` = 60 of the vector arm (first) and the BM25
/// arm. Other fusions of the two arms: `fusion:METHOD` with `index:DIR?mode=vector` and
/// `index:DIR?mode=bm25` as its arms.
pub const HYBRID_FUSION: &str = "rrf?k=60";

/// Which arm of the own index answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Exact vector search (the default).
    Vector,
    /// The lexical (BM25) arm: the query text, no vector.
    Bm25,
    /// Both, fused by [`HYBRID_FUSION`].
    Hybrid,
}

impl Mode {
    /// The name in the URI.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Vector => "vector",
            Mode::Bm25 => "bm25",
            Mode::Hybrid => "hybrid",
        }
    }
}

/// The own index: exact search, and the exact rank of every expected chunk at any depth.
pub struct OwnIndex {
    index: Index,
    uri: String,
    mode: Mode,
}

/// Splits `DIR?mode=M` into the folder and the mode. A folder whose name holds `?` is
/// read whole when it exists.
pub(crate) fn parse_uri(rest: &str) -> Result<(&str, Mode), String> {
    let Some((dir, query)) = rest.split_once('?') else {
        return Ok((rest, Mode::Vector));
    };
    if Path::new(rest).is_dir() {
        return Ok((rest, Mode::Vector));
    }
    let mut mode = Mode::Vector;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("mode", "vector")) => mode = Mode::Vector,
            Some(("mode", "bm25")) => mode = Mode::Bm25,
            Some(("mode", "hybrid")) => mode = Mode::Hybrid,
            Some(("mode", other)) => {
                return Err(format!(
                    "unknown mode `{}`: expected vector, bm25 or hybrid",
                    veredicto_core::redact::short(other)
                ))
            }
            _ => {
                return Err(format!(
                    "unknown parameter `{}`: the own index takes mode=vector|bm25|hybrid",
                    veredicto_core::redact::short(pair)
                ))
            }
        }
    }
    if dir.is_empty() {
        return Err("expected `index:DIR`".into());
    }
    Ok((dir, mode))
}

impl OwnIndex {
    /// Opens the index folder (vector search).
    pub fn open(dir: &Path) -> Result<OwnIndex, RetrieveError> {
        OwnIndex::open_mode(dir, Mode::Vector)
    }

    /// Opens the index folder to search by `mode`; a BM25 or hybrid mode on an index
    /// without a lexical arm is refused here, before any case runs.
    pub fn open_mode(dir: &Path, mode: Mode) -> Result<OwnIndex, RetrieveError> {
        let index = Index::open(dir)?;
        if mode != Mode::Vector {
            index.check_lexical()?;
        }
        let uri = match mode {
            Mode::Vector => dir.display().to_string(),
            m => format!("index:{}?mode={}", dir.display(), m.name()),
        };
        Ok(OwnIndex { index, uri, mode })
    }

    /// The arm that answers.
    pub fn mode(&self) -> Mode {
        self.mode
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
        let vector = match (self.mode, request.vector) {
            (Mode::Bm25, v) => v.unwrap_or(&[]),
            (_, Some(v)) => v,
            (_, None) => {
                return Err(RetrieveError::NoVector {
                    case: request.case_id.to_owned(),
                })
            }
        };
        if self.mode != Mode::Bm25 && vector.len() != self.index.dimension() {
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
                span: None,
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
        match self.mode {
            Mode::Bm25 => Vectors::Never,
            Mode::Vector | Mode::Hybrid => Vectors::Required,
        }
    }

    fn embedding_based(&self) -> bool {
        self.mode == Mode::Vector
    }

    fn prepare(&self, dimension: Option<usize>) -> Result<(), RetrieveError> {
        if self.mode == Mode::Bm25 {
            return Ok(());
        }
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
        Ok(self
            .search_batch(std::slice::from_ref(request))?
            .pop()
            .unwrap_or_default())
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
        let vector = || -> Result<Vec<Ranking>, RetrieveError> {
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
        };
        let lexical = || -> Result<Vec<Ranking>, RetrieveError> {
            let queries: Vec<LexicalQuery<'_>> = requests
                .iter()
                .zip(&checked)
                .map(|(r, (_, filter))| LexicalQuery {
                    text: r.query,
                    k: r.depth,
                    filter: filter.as_ref(),
                    rank_ids: r.expected,
                })
                .collect();
            let results = self.index.search_lexical(&queries)?;
            Ok(requests
                .iter()
                .zip(&results)
                .map(|(r, result)| self.ranking(r, result))
                .collect())
        };
        match self.mode {
            Mode::Vector => vector(),
            Mode::Bm25 => lexical(),
            Mode::Hybrid => {
                let fusion: Fusion = HYBRID_FUSION.parse().expect("a valid fusion");
                let dense = vector()?;
                let sparse = lexical()?;
                requests
                    .iter()
                    .zip(dense.into_iter().zip(sparse))
                    .map(|(r, (d, s))| {
                        crate::fusion::fuse_rankings(&fusion, &[d, s], r.depth).map_err(|e| {
                            RetrieveError::Setup {
                                uri: self.uri.clone(),
                                reason: format!("case `{}`: {e}", r.case_id),
                            }
                        })
                    })
                    .collect()
            }
        }
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
