//! A question's chunks searched through the project's source: the own index (`index:DIR`)
//! or the configured retriever, opened as `veredicto search` and `veredicto exam` open it
//! ([`crate::source::open`], [`crate::source::embedder`]), and kept open between searches
//! ([`SourceCache`]): the model is loaded once, not per question. When no source is set, or
//! it cannot be opened or searched, the corpus file's word search answers instead and says
//! why.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use veredicto_embed::{Embedder, TextKind};
use veredicto_formats::config::Source;
use veredicto_retrieve::Retriever;

use super::{CorpusIndex, Hit};
use crate::models::EmbedderSpec;
use crate::source::Net;
use crate::{Error, Result, Settings};

/// Where a question's chunks were searched.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchedBy {
    /// The project's source: the retriever's description (without credentials).
    Source(String),
    /// The corpus file's shared words: no source is set (`None`), or why the source could not
    /// be searched (one line).
    Words(Option<String>),
}

/// The chunks a question found, and where they were searched.
#[derive(Debug, Clone)]
pub struct Found {
    pub by: SearchedBy,
    pub hits: Vec<Hit>,
}

/// The project's source opened for searches: the retriever and the query embedder it needs.
pub struct OpenSource {
    retriever: Box<dyn Retriever>,
    embedder: Option<Box<dyn Embedder>>,
    net: Net,
    duplicates: veredicto_core::retrieval::DuplicateRule,
    opened: Instant,
    /// A live retriever's total deadline runs from its opening: it is opened again after.
    expires: bool,
}

impl std::fmt::Debug for OpenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenSource")
            .field("retriever", &self.retriever.describe())
            .finish_non_exhaustive()
    }
}

/// What the chunks are searched with when the settings name no source that can search a new
/// question: `None` for no source; the reason for a run file (it answers only the
/// questions it holds).
fn searchable(settings: &Settings) -> std::result::Result<String, Option<String>> {
    match &settings.source {
        None => Err(None),
        Some(Source::Run(file)) => Err(Some(format!(
            "the project's source is the run file {}, which answers only the questions it holds",
            file.display()
        ))),
        Some(_) => Ok(settings.source_uri().unwrap_or_default()),
    }
}

impl OpenSource {
    /// Opens the settings' source (with their arms and the network options `net`) and loads
    /// the query embedder it needs, as the exam does: the index's model for an own index.
    pub fn open(settings: &Settings, net: &Net) -> Result<OpenSource> {
        let uri = searchable(settings).map_err(|why| {
            Error::msg(why.unwrap_or_else(|| "the project names no source".to_owned()))
        })?;
        let opened = crate::source::open(&uri, &[], settings, net)?;
        let retriever = opened.retriever;
        let probe = veredicto_core::case::Case {
            id: "workbench".into(),
            query: "workbench".into(),
            expected: Vec::new(),
            grades: Default::default(),
            evidence: Vec::new(),
            top_k: None,
            domain: None,
            tags: Vec::new(),
            gold: false,
            query_vector: None,
            filters: None,
        };
        let embedder = crate::source::embedder(
            retriever.as_ref(),
            opened.index_dir.as_deref(),
            &EmbedderSpec {
                embedder_model: "text-embedding-3-small".into(),
                api_key_env: "OPENAI_API_KEY".into(),
                ..EmbedderSpec::default()
            },
            settings,
            net,
            net.total_deadline(),
            std::slice::from_ref(&probe),
            false,
        )?;
        retriever.prepare(embedder.as_ref().map(|e| e.dim()))?;
        let expires = !matches!(retriever.kind(), "index" | "run-file");
        Ok(OpenSource {
            retriever,
            embedder,
            net: net.clone(),
            duplicates: settings.duplicates,
            opened: Instant::now(),
            expires,
        })
    }

    /// The retriever as a URI without credentials (`index:DIR` for the own index, whose
    /// description is its folder).
    pub fn describe(&self) -> String {
        let d = self.retriever.describe();
        let kind = self.retriever.kind();
        if d.starts_with(kind) {
            d
        } else {
            format!("{kind}:{d}")
        }
    }

    fn expired(&self) -> bool {
        self.expires && self.opened.elapsed() >= self.net.deadline
    }

    /// The `k` best chunks for `query`, each chunk once (the exam's duplicate rule), with
    /// their text and fields from `corpus` when it holds them.
    pub fn search(&self, query: &str, k: usize, corpus: Option<&CorpusIndex>) -> Result<Vec<Hit>> {
        let vector = match &self.embedder {
            Some(e) => Some(
                e.embed(&[query], TextKind::Query)?
                    .pop()
                    .unwrap_or_default(),
            ),
            None => None,
        };
        let mut ranking = self.retriever.search(&veredicto_retrieve::Request {
            case_id: "workbench",
            query,
            vector: vector.as_deref(),
            depth: k,
            expected: &[],
            exact: false,
            filters: None,
        })?;
        veredicto_retrieve::pass::dedup_answer(
            self.retriever.as_ref(),
            "workbench",
            self.duplicates,
            &mut ranking,
        )?;
        Ok(ranking
            .hits
            .into_iter()
            .take(k)
            .enumerate()
            .map(|(i, h)| {
                let mut hit = corpus.and_then(|c| c.chunk(&h.id)).unwrap_or_else(|| Hit {
                    rank: 0,
                    id: h.id.clone(),
                    score: None,
                    text: String::new(),
                    metadata: Default::default(),
                });
                hit.rank = i + 1;
                hit.score = h.score;
                hit
            })
            .collect())
    }
}

/// The project's source kept open between searches: opened at the first search, opened
/// again once a live retriever's total deadline has passed; a failure to open is kept for
/// [`RETRY_OPEN`] (its error line shown with each word search), then opening is tried again.
#[derive(Debug, Default)]
pub struct SourceCache {
    slot: Mutex<Option<(Instant, Opening)>>,
}

/// The source opened, or why it could not be (one line).
type Opening = std::result::Result<Arc<OpenSource>, String>;

/// How long a source that failed to open is not tried again.
pub const RETRY_OPEN: std::time::Duration = std::time::Duration::from_secs(30);

impl SourceCache {
    /// An empty cache: the source opens at the first search.
    pub fn new() -> SourceCache {
        SourceCache::default()
    }

    fn get(&self, settings: &Settings, net: &Net) -> std::result::Result<Arc<OpenSource>, String> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        match &*slot {
            Some((_, Ok(s))) if !s.expired() => return Ok(s.clone()),
            Some((at, Err(e))) if at.elapsed() < RETRY_OPEN => return Err(e.clone()),
            _ => {}
        }
        let opened = OpenSource::open(settings, net)
            .map(Arc::new)
            .map_err(|e| one_line(&e.to_string()));
        *slot = Some((Instant::now(), opened.clone()));
        opened
    }
}

fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    veredicto_core::redact::short(&line).to_string()
}

/// The `k` chunks for a new question: through the settings' source when they name one that
/// can search (kept open in `cache`), else, or when it fails, by the corpus file's shared
/// words ([`CorpusIndex::search`]), saying why. `net` bounds each search (per-request
/// timeout, retries, total deadline).
pub fn search_source(
    cache: &SourceCache,
    settings: Option<&Settings>,
    net: &Net,
    corpus: Option<&CorpusIndex>,
    query: &str,
    k: usize,
) -> Found {
    let words = |why: Option<String>| Found {
        by: SearchedBy::Words(why),
        hits: corpus.map(|c| c.search(query, k)).unwrap_or_default(),
    };
    let Some(settings) = settings else {
        return words(None);
    };
    if let Err(why) = searchable(settings) {
        return words(why);
    }
    if query.trim().is_empty() {
        return Found {
            by: SearchedBy::Source(settings.source_uri().unwrap_or_default()),
            hits: Vec::new(),
        };
    }
    let source = match cache.get(settings, net) {
        Ok(s) => s,
        Err(e) => return words(Some(e)),
    };
    match source.search(query, k, corpus) {
        Ok(hits) => Found {
            by: SearchedBy::Source(source.describe()),
            hits,
        },
        Err(e) => words(Some(one_line(&e.to_string()))),
    }
}
