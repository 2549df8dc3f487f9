//! Corpus hygiene: the chunks of a corpus file or an index (with the index's vectors and
//! batch times), the golden set's and the signals' questions, the previous corpus and the
//! last accepted run of the history, checked by `veredicto_core::hygiene`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use veredicto_core::hygiene::{self, CheckInput, CorpusCheck};

use crate::{Context, HistorySpec, Result};

/// What to check, and against what.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckRequest {
    /// The corpus (chunk JSONL or BEIR corpus.jsonl).
    pub corpus: Option<PathBuf>,
    /// veredicto's index: its vectors find near duplicates, its batch records order the
    /// batches; without `corpus`, its chunks are the ones checked.
    pub index: Option<PathBuf>,
    /// The policy file: its `[corpus]` table (thresholds) and its `gold_label`; `None`: the
    /// defaults.
    pub policy: Option<PathBuf>,
    /// The golden set, checked for aggregation questions.
    pub golden: Option<PathBuf>,
    /// A signals file, whose queries are checked for aggregations.
    pub signals: Option<PathBuf>,
    /// A previous corpus file: what entered, changed and left since it.
    pub since: Option<PathBuf>,
    /// The date for validity (`YYYY-MM-DD`; the caller reads the clock).
    pub as_of: String,
}

/// Checks the corpus; the history (when it exists) gives the last accepted run's chunks
/// and batches for the drift.
pub fn check(request: &CheckRequest, history: &HistorySpec) -> Result<CorpusCheck> {
    let r = request;
    let as_of = r.as_of.clone();
    let (policy, gold_label) = match &r.policy {
        Some(p) => {
            use veredicto_formats::policy::{PolicyFile, Section};
            let file = PolicyFile::read_sections(p, &[Section::Exam, Section::Corpus])?;
            (file.corpus, file.exam.gold_label)
        }
        None => (
            hygiene::CorpusPolicy::default(),
            veredicto_core::policy::Policy::default().gold_label,
        ),
    };
    let index = match &r.index {
        Some(dir) => Some(veredicto_index::Index::open(dir)?),
        None => None,
    };
    let mut input = CheckInput {
        as_of,
        gold_label,
        ..CheckInput::default()
    };
    match (&r.corpus, &index) {
        (Some(path), _) => {
            for line in veredicto_formats::corpus::read_corpus_lines(path)? {
                input.sources.push(
                    line.raw
                        .get("source")
                        .and_then(|v| v.as_str())
                        .filter(|s| !s.trim().is_empty())
                        .map(str::to_owned),
                );
                input.vectors.push(line.vector);
                input.chunks.push(line.chunk);
            }
        }
        (None, Some(index)) => {
            let corpus = veredicto_index::records::corpus_of(index)?;
            for c in corpus.iter() {
                input.sources.push(None);
                input.vectors.push(None);
                input.chunks.push(c.clone());
            }
        }
        (None, None) => crate::bail!("give --corpus FILE or --index DIR"),
    }
    if let Some(index) = &index {
        // The index's vectors (they win over a line's own) and its batch times; checked
        // against the manifest first, as before a search.
        index.check_vectors()?;
        let rows: HashMap<&str, usize> = index.chunks().map(|c| (c.id(), c.row())).collect();
        for (i, c) in input.chunks.iter().enumerate() {
            if let Some(&row) = rows.get(c.id.as_str()) {
                input.vectors[i] = Some(index.vector(row).to_vec());
            }
        }
        let mut times: BTreeMap<String, String> = BTreeMap::new();
        for c in index.chunks() {
            let t = times.entry(c.ingest_batch().to_owned()).or_default();
            if c.ingested_at() > t.as_str() {
                *t = c.ingested_at().to_owned();
            }
        }
        input.batch_times = times;
    }
    if let Some(prev) = &r.since {
        input.previous = Some(veredicto_formats::corpus::read_corpus(prev)?);
    }
    if let Some(g) = &r.golden {
        input.questions = hygiene::golden_questions(&veredicto_formats::golden::read_golden(g)?);
    }
    if let Some(s) = &r.signals {
        let events = veredicto_formats::signals::read_events(
            s,
            &veredicto_formats::signals::FieldMap::default(),
        )?;
        let mut seen = std::collections::BTreeSet::new();
        for e in events {
            if seen.insert(e.event.query.clone()) {
                input
                    .questions
                    .push(("signals".to_owned(), e.at.clone(), e.event.query.clone()));
            }
        }
    }
    if history.is_file() {
        let history = history
            .open_read_only()
            .with_context(|| format!("opening the history {}", history.display()))?;
        if let Some(run) = history.last_accepted(None, None)? {
            let recorded = history.get(&run.id)?;
            input.accepted_chunks = history.run_chunks(&run.id)?;
            input.accepted_batches = Some((run.id, recorded.report.batches));
        }
    }
    Ok(hygiene::check(&input, &policy))
}
