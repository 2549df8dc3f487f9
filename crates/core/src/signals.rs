//! Production signals: users' gestures become candidate golden cases, and failed answers
//! are triaged upstream (the right chunk was not retrieved) or downstream (retrieved and
//! ignored by the generator).
//!
//! Pure: the events come read and validated (`veredicto_formats::signals`), query vectors
//! for the embedding merge come computed by the caller. The rules, all deterministic:
//!
//! - An **interaction** is one answer: events with the same `conversation_id` and
//!   `answer_id` (or, without an `answer_id`, the same query text in that conversation).
//!   Its time is its earliest event's; interactions of a conversation are ordered by time,
//!   then by the first line that names them.
//! - A `reformulate` event on an interaction says that its query reformulates the previous
//!   interaction of the conversation: the previous answer failed. A chain of reformulations
//!   ends in its **final** interaction, which counts as successful unless it got a thumbs
//!   down.
//! - **Positive** chunks of an interaction: the clicked citations and the copied chunks (a
//!   copied text is matched to the retrieved chunk, then any chunk of the corpus, whose
//!   normalised text contains it).
//! - Queries are grouped by normalised text ([`crate::aggregation::normalize`]); groups
//!   whose query vectors have a cosine ≥ the merge threshold are merged too (single link).
//!   The group's question is its most frequent original text (ties: the earliest).
//! - A group's **candidate** expects the chunks with positive gestures on its interactions
//!   and, when its query failed and was rescued by a reformulation, the positive chunks of
//!   the final query (or, without any, its first [`Settings::rescue_depth`] retrieved
//!   chunks). Chunks are ordered by support (events), then by ID.
//! - A group whose question matches a golden case (same normalised text) yields no
//!   candidate: it is counted as covered.
//! - A **failed** interaction: reformulated away or thumbs down. Triage compares its
//!   retrieved list with the expected chunks of the golden case that covers its group, else
//!   of its group's candidate: `downstream` when one was retrieved, `upstream` when none
//!   was, `aggregation` when the question needs an aggregation (not a retrieval failure),
//!   `no_reference` without expected chunks, `no_retrieved_list` when the log has none.

use crate::aggregation::{self, Aggregation};
use crate::case::{Case, Chunk};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// What the user did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The answer was shown (no gesture): the interaction exists, nothing more.
    Answer,
    ClickCitation,
    Copy,
    Reformulate,
    Thumbs,
}

impl EventKind {
    /// The names accepted in logs.
    pub const NAMES: &'static [&'static str] =
        &["answer", "click_citation", "copy", "reformulate", "thumbs"];

    pub fn parse(name: &str) -> Option<EventKind> {
        Some(match name {
            "answer" => EventKind::Answer,
            "click_citation" => EventKind::ClickCitation,
            "copy" => EventKind::Copy,
            "reformulate" => EventKind::Reformulate,
            "thumbs" => EventKind::Thumbs,
            _ => return None,
        })
    }

    /// The canonical name (as in logs and the signals file).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Answer => "answer",
            EventKind::ClickCitation => "click_citation",
            EventKind::Copy => "copy",
            EventKind::Reformulate => "reformulate",
            EventKind::Thumbs => "thumbs",
        }
    }
}

/// `up` or `down`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Thumb {
    Up,
    Down,
}

/// One interaction event, in the canonical form the signals file stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub conversation_id: String,
    /// RFC 3339.
    pub time: String,
    pub query: String,
    /// Chunk IDs the retriever returned for the query, in order (what the model received).
    #[serde(default)]
    pub retrieved: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_id: Option<String>,
    pub event: EventKind,
    /// `click_citation` and `copy`: the chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk: Option<String>,
    /// `copy` without a chunk: the copied text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `thumbs`: up or down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Thumb>,
}

/// An event with where it was read, for the evidence lists.
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedEvent {
    pub event: Event,
    /// `file:line`.
    pub at: String,
    /// Unix milliseconds of `time` (the reader checked it).
    pub time_ms: i64,
}

/// Tunables of [`candidates`].
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Cosine at or above which two queries' vectors merge their groups.
    pub merge_cosine: f64,
    /// Retrieved chunks of a rescuing final query taken as expected when it has no gesture.
    pub rescue_depth: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            merge_cosine: 0.92,
            rescue_depth: 3,
        }
    }
}

/// Events supporting one expected chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkSupport {
    pub chunk: String,
    pub clicks: usize,
    pub copies: usize,
    /// Positive gestures on the final query of a reformulation chain that rescued this group.
    pub rescued: usize,
    /// Times it was retrieved by a rescuing final query that had no gesture.
    pub rescue_retrieved: usize,
}

impl ChunkSupport {
    fn total(&self) -> usize {
        self.clicks + self.copies + self.rescued + self.rescue_retrieved
    }
}

/// A proposed golden case: to be reviewed, never gold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub query: String,
    pub expected: Vec<String>,
    /// Always `candidate` (plus `failed-query` when the query was reformulated away, and
    /// `aggregation` when it needs one).
    pub tags: Vec<String>,
    /// Always true: a person reviews it before it joins the golden set.
    pub candidate: bool,
    /// Always false.
    pub gold: bool,
    /// Every original text merged into this group, sorted.
    pub variants: Vec<String>,
    pub support: Support,
    pub chunks: Vec<ChunkSupport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<Aggregation>,
    /// Where the supporting events were read (`file:line`), in reading order.
    pub evidence: Vec<String>,
}

/// How many events and interactions support a candidate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    pub events: usize,
    pub interactions: usize,
    pub conversations: usize,
    pub clicks: usize,
    pub copies: usize,
    pub thumbs_up: usize,
    pub thumbs_down: usize,
    /// Times this group's query was reformulated away (it failed).
    pub reformulated: usize,
}

/// The triage of one failed interaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Triage {
    pub conversation_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_id: Option<String>,
    pub query: String,
    /// `reformulated` or `thumbs_down` (both when both).
    pub why_failed: Vec<String>,
    /// `upstream`, `downstream`, `aggregation`, `no_reference` or `no_retrieved_list`.
    pub verdict: String,
    /// Where the expected chunks came from: `golden:<case>` or `candidate:<id>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub expected: Vec<String>,
    /// Expected chunks that were in the retrieved list, with their 1-based rank.
    pub retrieved_expected: Vec<(String, usize)>,
    pub at: String,
}

/// Counts over the whole log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub events: BTreeMap<String, usize>,
    pub interactions: usize,
    pub conversations: usize,
    /// Distinct normalised queries, and the groups after merging near duplicates.
    pub distinct_queries: usize,
    pub query_groups: usize,
    /// Groups merged by embedding similarity (beyond equal normalised text).
    pub merged_by_embedding: usize,
    pub candidates: usize,
    pub failed_query_candidates: usize,
    pub aggregation_candidates: usize,
    /// Groups whose question is already a golden case.
    pub covered_by_golden: usize,
    /// Groups with no positive evidence (nothing to propose).
    pub without_evidence: usize,
    /// Copied texts that matched no chunk.
    pub unresolved_copies: usize,
    pub failed_interactions: usize,
    pub triage: BTreeMap<String, usize>,
}

/// The result of [`candidates`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalsReport {
    pub counts: Counts,
    pub candidates: Vec<Candidate>,
    pub triage: Vec<Triage>,
}

/// Normalised text of a chunk for matching copied text.
fn chunk_text_norm(c: &Chunk) -> String {
    aggregation::normalize(
        c.text
            .as_deref()
            .or(c.representation.as_deref())
            .unwrap_or(""),
    )
}

/// Cosine of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// A union-find over `n` items whose root is always the smallest index.
pub(crate) struct Groups(Vec<usize>);

impl Groups {
    pub(crate) fn new(n: usize) -> Self {
        Groups((0..n).collect())
    }
    pub(crate) fn find(&mut self, mut i: usize) -> usize {
        while self.0[i] != i {
            self.0[i] = self.0[self.0[i]];
            i = self.0[i];
        }
        i
    }
    /// Joins the groups of `a` and `b`; true when they were apart.
    pub(crate) fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        self.0[hi] = lo;
        true
    }
}

/// Short stable ID of a normalised query: `cand-` and 12 hex digits of its SHA-256.
fn candidate_id(norm: &str) -> String {
    let fp = crate::fingerprint::sha256_bytes(norm.as_bytes());
    format!("cand-{}", &fp[7..19])
}

/// Strings kept once: a log repeats its conversation IDs, query texts and chunk IDs on
/// every event, and the accumulated state refers to them by index.
#[derive(Debug, Default)]
struct Interner {
    ids: HashMap<Rc<str>, usize>,
    strings: Vec<Rc<str>>,
}

impl Interner {
    fn intern(&mut self, s: &str) -> usize {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let rc: Rc<str> = Rc::from(s);
        let i = self.strings.len();
        self.strings.push(Rc::clone(&rc));
        self.ids.insert(rc, i);
        i
    }

    fn get(&self, s: &str) -> Option<usize> {
        self.ids.get(s).copied()
    }

    fn str(&self, i: usize) -> &str {
        &self.strings[i]
    }
}

/// What makes events one interaction besides their conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Answer(usize),
    Query(usize),
}

/// One interaction's aggregated state: what the rules need of its events, not the events.
#[derive(Debug)]
struct Interaction {
    conversation: usize,
    answer_id: Option<usize>,
    query: usize,
    norm: usize,
    time_ms: i64,
    /// The evidence key (line) of its first event.
    first_line: u64,
    retrieved: Box<[usize]>,
    positive: Vec<(usize, EventKind)>,
    thumbs_up: usize,
    thumbs_down: usize,
    reformulates: bool,
    /// The evidence keys of its events, in reading order.
    events: Vec<u64>,
    /// Set when the next interaction reformulates this one.
    reformulated: bool,
}

/// The corpus prepared for resolving copied texts: each chunk's normalised text computed
/// once, the chunks by ID and in ID order.
struct CopyIndex<'a> {
    norms: Vec<String>,
    by_id: HashMap<&'a str, usize>,
    sorted: Vec<usize>,
}

impl<'a> CopyIndex<'a> {
    fn new(corpus: &'a [Chunk]) -> Self {
        // As a map collected from the corpus: the last chunk of a repeated ID wins.
        let by_id = corpus
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.as_str(), i))
            .collect();
        let mut sorted: Vec<usize> = (0..corpus.len()).collect();
        sorted.sort_by(|&a, &b| corpus[a].id.cmp(&corpus[b].id));
        CopyIndex {
            norms: corpus.iter().map(chunk_text_norm).collect(),
            by_id,
            sorted,
        }
    }
}

/// The state of [`candidates`] built one event at a time, so that a log of any length is
/// read in one pass without keeping its events: per interaction, its key, first time and
/// line, first retrieved list, positive chunks, thumbs and the lines of its events; every
/// string once. [`Accumulator::finish`] applies the rules of this module to it.
pub struct Accumulator<'a> {
    corpus: Option<&'a [Chunk]>,
    copy_index: Option<CopyIndex<'a>>,
    strings: Interner,
    /// Query text → its normalised text.
    norms: HashMap<usize, usize>,
    by_key: HashMap<(usize, Key), usize>,
    inter: Vec<Interaction>,
    events: BTreeMap<&'static str, usize>,
    unresolved_copies: usize,
}

impl<'a> Accumulator<'a> {
    /// An empty state; `corpus` resolves copied texts to chunks.
    pub fn new(corpus: Option<&'a [Chunk]>) -> Self {
        Accumulator {
            corpus,
            copy_index: None,
            strings: Interner::default(),
            norms: HashMap::new(),
            by_key: HashMap::new(),
            inter: Vec::new(),
            events: BTreeMap::new(),
            unresolved_copies: 0,
        }
    }

    /// Adds one event. `line` locates it for the evidence lists (rendered by
    /// [`Accumulator::finish`]); lines must increase in reading order.
    pub fn push(&mut self, e: &Event, line: u64, time_ms: i64) {
        let name = match (e.event, e.value) {
            (EventKind::Thumbs, Some(Thumb::Up)) => "thumbs_up",
            (EventKind::Thumbs, Some(Thumb::Down)) => "thumbs_down",
            (kind, _) => kind.as_str(),
        };
        *self.events.entry(name).or_default() += 1;

        let conversation = self.strings.intern(&e.conversation_id);
        let query = self.strings.intern(&e.query);
        let key = match &e.answer_id {
            Some(a) => Key::Answer(self.strings.intern(a)),
            None => Key::Query(query),
        };
        let idx = match self.by_key.get(&(conversation, key)) {
            Some(&i) => i,
            None => {
                let norm = match self.norms.get(&query) {
                    Some(&n) => n,
                    None => {
                        let n = self.strings.intern(&aggregation::normalize(&e.query));
                        self.norms.insert(query, n);
                        n
                    }
                };
                self.inter.push(Interaction {
                    conversation,
                    answer_id: match key {
                        Key::Answer(a) => Some(a),
                        Key::Query(_) => None,
                    },
                    query,
                    norm,
                    time_ms,
                    first_line: line,
                    retrieved: Box::default(),
                    positive: Vec::new(),
                    thumbs_up: 0,
                    thumbs_down: 0,
                    reformulates: false,
                    events: Vec::new(),
                    reformulated: false,
                });
                self.by_key
                    .insert((conversation, key), self.inter.len() - 1);
                self.inter.len() - 1
            }
        };
        let resolved = match (e.event, &e.chunk, &e.text) {
            (EventKind::Copy, None, Some(t)) => self.resolve_copy(t, &e.retrieved),
            _ => None,
        };
        if self.inter[idx].retrieved.is_empty() && !e.retrieved.is_empty() {
            let ids: Box<[usize]> = e.retrieved.iter().map(|r| self.strings.intern(r)).collect();
            self.inter[idx].retrieved = ids;
        }
        let positive = match e.event {
            EventKind::ClickCitation => e.chunk.as_deref().map(|c| (c, EventKind::ClickCitation)),
            EventKind::Copy => match (&e.chunk, resolved.as_deref()) {
                (Some(c), _) => Some((c.as_str(), EventKind::Copy)),
                (None, Some(c)) => Some((c, EventKind::Copy)),
                (None, None) => {
                    self.unresolved_copies += 1;
                    None
                }
            },
            _ => None,
        };
        let positive = positive.map(|(c, kind)| (self.strings.intern(c), kind));
        let it = &mut self.inter[idx];
        it.time_ms = it.time_ms.min(time_ms);
        it.events.push(line);
        if let Some(p) = positive {
            it.positive.push(p);
        }
        match e.event {
            EventKind::Reformulate => it.reformulates = true,
            EventKind::Thumbs => match e.value {
                Some(Thumb::Up) => it.thumbs_up += 1,
                Some(Thumb::Down) => it.thumbs_down += 1,
                None => {}
            },
            _ => {}
        }
    }

    /// The chunk whose normalised text contains the normalised copied `text`: among the
    /// retrieved chunks first (in order), then the whole corpus (by ID). `None` when none
    /// does.
    fn resolve_copy(&mut self, text: &str, retrieved: &[String]) -> Option<String> {
        let corpus = self.corpus?;
        let needle = aggregation::normalize(text);
        if needle.is_empty() {
            return None;
        }
        let index = self
            .copy_index
            .get_or_insert_with(|| CopyIndex::new(corpus));
        for id in retrieved {
            if let Some(&c) = index.by_id.get(id.as_str()) {
                if index.norms[c].contains(&needle) {
                    return Some(id.clone());
                }
            }
        }
        index
            .sorted
            .iter()
            .find(|&&c| index.norms[c].contains(&needle))
            .map(|&c| corpus[c].id.clone())
    }

    /// The distinct normalised queries of the interactions, sorted: the caller embeds them
    /// (in this order) for the similarity merge.
    pub fn distinct_queries(&self) -> Vec<String> {
        let set: BTreeSet<&str> = self
            .inter
            .iter()
            .map(|i| self.strings.str(i.norm))
            .collect();
        set.into_iter().map(str::to_owned).collect()
    }

    /// Builds candidates and triage. `vectors`, when given, holds one vector per entry of
    /// [`Accumulator::distinct_queries`] (same order). `at` renders an event's line as the
    /// evidence shows it (`file:line`).
    pub fn finish(
        self,
        golden: &[Case],
        vectors: Option<&[Vec<f32>]>,
        settings: &Settings,
        at: &dyn Fn(u64) -> String,
    ) -> SignalsReport {
        let Accumulator {
            strings,
            mut inter,
            events,
            unresolved_copies,
            ..
        } = self;
        let s = |i: usize| strings.str(i);
        let mut counts = Counts {
            events: events.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            unresolved_copies,
            interactions: inter.len(),
            ..Counts::default()
        };

        // Conversations: interactions by time, then first line.
        let mut conv: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, it) in inter.iter().enumerate() {
            conv.entry(s(it.conversation)).or_default().push(i);
        }
        counts.conversations = conv.len();
        let mut chains: Vec<Vec<usize>> = Vec::new();
        let conv_lists: Vec<Vec<usize>> = conv
            .into_values()
            .map(|mut list| {
                list.sort_by_key(|&i| (inter[i].time_ms, inter[i].first_line));
                list
            })
            .collect();
        for list in &conv_lists {
            let mut chain: Vec<usize> = Vec::new();
            for &i in list {
                if inter[i].reformulates && !chain.is_empty() {
                    chain.push(i);
                } else {
                    if chain.len() > 1 {
                        chains.push(std::mem::take(&mut chain));
                    }
                    chain = vec![i];
                }
            }
            if chain.len() > 1 {
                chains.push(chain);
            }
        }
        for chain in &chains {
            for &i in &chain[..chain.len() - 1] {
                inter[i].reformulated = true;
            }
        }

        // Query groups: equal normalised text, then embedding similarity.
        let distinct: Vec<&str> = {
            let set: BTreeSet<&str> = inter.iter().map(|i| s(i.norm)).collect();
            set.into_iter().collect()
        };
        counts.distinct_queries = distinct.len();
        let pos: HashMap<&str, usize> = distinct.iter().enumerate().map(|(i, q)| (*q, i)).collect();
        let mut groups = Groups::new(distinct.len());
        if let Some(vectors) = vectors.filter(|v| v.len() == distinct.len()) {
            for a in 0..distinct.len() {
                for b in a + 1..distinct.len() {
                    if cosine(&vectors[a], &vectors[b]) >= settings.merge_cosine
                        && groups.union(a, b)
                    {
                        counts.merged_by_embedding += 1;
                    }
                }
            }
        }
        let group_of: Vec<usize> = inter
            .iter()
            .map(|it| groups.find(pos[s(it.norm)]))
            .collect();
        let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, g) in group_of.iter().enumerate() {
            members.entry(*g).or_default().push(i);
        }
        counts.query_groups = members.len();

        // Golden coverage by normalised question (any text of the group).
        let golden_by_norm: HashMap<String, &Case> = golden
            .iter()
            .map(|c| (aggregation::normalize(&c.query), c))
            .collect();

        // Rescues: the first interaction of each chain's group gets the final's evidence.
        // group → chunk → (rescued, rescue_retrieved)
        let mut rescue: BTreeMap<usize, BTreeMap<String, (usize, usize)>> = BTreeMap::new();
        let mut rescue_events: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
        for chain in &chains {
            let last = &inter[*chain.last().unwrap_or(&0)];
            if last.thumbs_down > 0 {
                continue;
            }
            for &failed in &chain[..chain.len() - 1] {
                let g = group_of[failed];
                if g == group_of[*chain.last().unwrap_or(&0)] {
                    continue;
                }
                let entry = rescue.entry(g).or_default();
                if last.positive.is_empty() {
                    for &c in last.retrieved.iter().take(settings.rescue_depth) {
                        entry.entry(s(c).to_owned()).or_default().1 += 1;
                    }
                } else {
                    for &(c, _) in &last.positive {
                        entry.entry(s(c).to_owned()).or_default().0 += 1;
                    }
                }
                rescue_events
                    .entry(g)
                    .or_default()
                    .extend(last.events.iter().copied());
            }
        }

        let mut out = Vec::new();
        let mut group_expected: HashMap<usize, (String, Vec<String>)> = HashMap::new();
        for (g, list) in &members {
            let mut texts: BTreeMap<&str, (usize, i64, u64)> = BTreeMap::new();
            for &i in list {
                let t = texts
                    .entry(s(inter[i].query))
                    .or_insert((0, i64::MAX, u64::MAX));
                t.0 += 1;
                t.1 = t.1.min(inter[i].time_ms);
                t.2 = t.2.min(inter[i].first_line);
            }
            let query = texts
                .iter()
                .min_by_key(|(_, (n, t, l))| (std::cmp::Reverse(*n), *t, *l))
                .map(|(q, _)| (*q).to_owned())
                .unwrap_or_default();
            let covered = list
                .iter()
                .find_map(|&i| golden_by_norm.get(s(inter[i].norm)).copied());
            if let Some(case) = covered {
                counts.covered_by_golden += 1;
                group_expected.insert(*g, (format!("golden:{}", case.id), case.expected.clone()));
                continue;
            }
            let mut chunks: BTreeMap<&str, ChunkSupport> = BTreeMap::new();
            let mut support = Support::default();
            let mut evidence: BTreeSet<u64> = BTreeSet::new();
            let mut convs: BTreeSet<usize> = BTreeSet::new();
            for &i in list {
                let it = &inter[i];
                convs.insert(it.conversation);
                evidence.extend(it.events.iter().copied());
                support.thumbs_up += it.thumbs_up;
                support.thumbs_down += it.thumbs_down;
                support.reformulated += usize::from(it.reformulated);
                for &(c, kind) in &it.positive {
                    let cs = chunks.entry(s(c)).or_insert_with(|| ChunkSupport {
                        chunk: s(c).to_owned(),
                        ..ChunkSupport::default()
                    });
                    if kind == EventKind::Copy {
                        cs.copies += 1;
                        support.copies += 1;
                    } else {
                        cs.clicks += 1;
                        support.clicks += 1;
                    }
                }
            }
            if let Some(r) = rescue.get(g) {
                for (c, (rescued, retrieved)) in r {
                    let cs = chunks.entry(c.as_str()).or_insert_with(|| ChunkSupport {
                        chunk: c.clone(),
                        ..ChunkSupport::default()
                    });
                    cs.rescued += rescued;
                    cs.rescue_retrieved += retrieved;
                }
                evidence.extend(rescue_events[g].iter().copied());
            }
            support.interactions = list.len();
            support.conversations = convs.len();
            support.events = evidence.len();
            if chunks.is_empty() {
                counts.without_evidence += 1;
                continue;
            }
            let mut chunk_list: Vec<ChunkSupport> = chunks.into_values().collect();
            chunk_list.sort_by(|a, b| b.total().cmp(&a.total()).then(a.chunk.cmp(&b.chunk)));
            let expected: Vec<String> = chunk_list.iter().map(|c| c.chunk.clone()).collect();
            let agg = aggregation::classify(&query);
            let mut tags = vec!["candidate".to_owned()];
            if support.reformulated > 0 {
                tags.push("failed-query".to_owned());
                counts.failed_query_candidates += 1;
            }
            if agg.is_some() {
                tags.push("aggregation".to_owned());
                counts.aggregation_candidates += 1;
            }
            let variants: Vec<String> = texts.keys().map(|s| (*s).to_owned()).collect();
            let id = candidate_id(s(inter[list[0]].norm));
            group_expected.insert(*g, (format!("candidate:{id}"), expected.clone()));
            out.push(Candidate {
                id,
                query,
                expected,
                tags,
                candidate: true,
                gold: false,
                variants,
                support,
                chunks: chunk_list,
                aggregation: agg,
                evidence: evidence.iter().map(|&e| at(e)).collect(),
            });
        }
        // Most supported first, then by ID.
        out.sort_by(|a, b| {
            b.support
                .events
                .cmp(&a.support.events)
                .then(a.id.cmp(&b.id))
        });
        counts.candidates = out.len();

        // Triage of failed interactions, in conversation then time order.
        let mut triage = Vec::new();
        for list in &conv_lists {
            for &i in list {
                let it = &inter[i];
                if !it.reformulated && it.thumbs_down == 0 {
                    continue;
                }
                let mut why = Vec::new();
                if it.reformulated {
                    why.push("reformulated".to_owned());
                }
                if it.thumbs_down > 0 {
                    why.push("thumbs_down".to_owned());
                }
                let reference = group_expected.get(&group_of[i]);
                let expected = reference.map(|r| r.1.clone()).unwrap_or_default();
                let retrieved_expected: Vec<(String, usize)> = expected
                    .iter()
                    .filter_map(|c| {
                        let c_id = strings.get(c)?;
                        it.retrieved
                            .iter()
                            .position(|&r| r == c_id)
                            .map(|p| (c.clone(), p + 1))
                    })
                    .collect();
                let query = s(it.query);
                let verdict = if aggregation::classify(query).is_some() {
                    "aggregation"
                } else if expected.is_empty() {
                    "no_reference"
                } else if it.retrieved.is_empty() {
                    "no_retrieved_list"
                } else if retrieved_expected.is_empty() {
                    "upstream"
                } else {
                    "downstream"
                };
                *counts.triage.entry(verdict.to_owned()).or_default() += 1;
                triage.push(Triage {
                    conversation_id: s(it.conversation).to_owned(),
                    answer_id: it.answer_id.map(|a| s(a).to_owned()),
                    query: query.to_owned(),
                    why_failed: why,
                    verdict: verdict.to_owned(),
                    reference: reference.map(|r| r.0.clone()),
                    expected,
                    retrieved_expected,
                    at: at(it.first_line),
                });
            }
        }
        counts.failed_interactions = triage.len();
        SignalsReport {
            counts,
            candidates: out,
            triage,
        }
    }
}

/// The distinct normalised queries of the interactions of `events`, sorted: the caller
/// embeds them (in this order) for the similarity merge.
pub fn distinct_queries(events: &[LocatedEvent]) -> Vec<String> {
    let mut acc = Accumulator::new(None);
    for (i, e) in events.iter().enumerate() {
        acc.push(&e.event, i as u64, e.time_ms);
    }
    acc.distinct_queries()
}

/// Builds candidates and triage from events already read (an [`Accumulator`] over them).
/// `vectors`, when given, holds one vector per entry of [`distinct_queries`] (same order).
/// `corpus` resolves copied texts to chunks.
pub fn candidates(
    events: &[LocatedEvent],
    golden: &[Case],
    corpus: Option<&[Chunk]>,
    vectors: Option<&[Vec<f32>]>,
    settings: &Settings,
) -> SignalsReport {
    let mut acc = Accumulator::new(corpus);
    for (i, e) in events.iter().enumerate() {
        acc.push(&e.event, i as u64, e.time_ms);
    }
    acc.finish(golden, vectors, settings, &|i| {
        events
            .get(usize::try_from(i).unwrap_or(usize::MAX))
            .map(|e| e.at.clone())
            .unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: usize, conv: &str, t: u32, q: &str, kind: EventKind) -> LocatedEvent {
        LocatedEvent {
            event: Event {
                conversation_id: conv.into(),
                time: format!("2025-11-20T10:{t:02}:00Z"),
                query: q.into(),
                retrieved: vec!["a".into(), "b".into(), "c".into(), "d".into()],
                answer_id: None,
                event: kind,
                chunk: None,
                text: None,
                value: None,
            },
            at: format!("log.jsonl:{line}"),
            time_ms: i64::from(t) * 60_000,
        }
    }

    fn click(line: usize, conv: &str, t: u32, q: &str, chunk: &str) -> LocatedEvent {
        let mut e = ev(line, conv, t, q, EventKind::ClickCitation);
        e.event.chunk = Some(chunk.into());
        e
    }

    #[test]
    fn clicks_become_candidates_merged_by_normalised_text() {
        let events = vec![
            click(1, "c1", 1, "¿Cuántos días de vacaciones?", "b"),
            click(2, "c2", 2, "cuantos dias de VACACIONES", "b"),
            click(3, "c3", 3, "Cuántos días de vacaciones", "c"),
        ];
        let r = candidates(&events, &[], None, None, &Settings::default());
        assert_eq!(r.candidates.len(), 1);
        let c = &r.candidates[0];
        assert_eq!(c.expected, vec!["b", "c"]);
        assert!(c.candidate && !c.gold && c.tags == vec!["candidate"]);
        assert_eq!(c.support.clicks, 3);
        assert_eq!(c.support.conversations, 3);
        assert_eq!(c.variants.len(), 3);
        assert_eq!(
            c.evidence,
            vec!["log.jsonl:1", "log.jsonl:2", "log.jsonl:3"]
        );
    }

    #[test]
    fn reformulations_make_a_failed_query_candidate_and_triage_it() {
        let mut final_q = click(3, "c1", 3, "vacaciones anuales convenio 2024", "z");
        final_q.event.retrieved = vec!["z".into(), "a".into()];
        let mut second = ev(
            2,
            "c1",
            2,
            "vacaciones anuales convenio 2024",
            EventKind::Reformulate,
        );
        second.event.retrieved = vec!["z".into(), "a".into()];
        let events = vec![
            ev(1, "c1", 1, "días libres al año", EventKind::Answer),
            second,
            final_q,
        ];
        let r = candidates(&events, &[], None, None, &Settings::default());
        let failed = r
            .candidates
            .iter()
            .find(|c| c.query == "días libres al año")
            .unwrap();
        assert_eq!(failed.expected, vec!["z"]);
        assert!(failed.tags.contains(&"failed-query".to_owned()));
        assert_eq!(failed.chunks[0].rescued, 1);
        // The first query retrieved a, b, c, d: z was not among them.
        assert_eq!(r.triage.len(), 1);
        assert_eq!(r.triage[0].verdict, "upstream");
        assert_eq!(r.counts.triage["upstream"], 1);
    }

    #[test]
    fn thumbs_down_with_the_golden_chunk_retrieved_is_downstream() {
        let mut down = ev(
            1,
            "c1",
            1,
            "¿Cuántos días de asuntos propios?",
            EventKind::Thumbs,
        );
        down.event.value = Some(Thumb::Down);
        let golden = vec![Case {
            id: "q1".into(),
            query: "Cuántos días de asuntos propios".into(),
            expected: vec!["c".into()],
            grades: Default::default(),
            evidence: Vec::new(),
            top_k: None,
            domain: None,
            tags: vec![],
            gold: false,
            query_vector: None,
            filters: None,
        }];
        let r = candidates(&[down], &golden, None, None, &Settings::default());
        assert!(r.candidates.is_empty());
        assert_eq!(r.counts.covered_by_golden, 1);
        assert_eq!(r.triage[0].verdict, "downstream");
        assert_eq!(r.triage[0].retrieved_expected, vec![("c".to_owned(), 3)]);
        assert_eq!(r.triage[0].reference.as_deref(), Some("golden:q1"));
    }

    #[test]
    fn embedding_merge_joins_paraphrases_above_the_threshold() {
        let events = vec![
            click(1, "c1", 1, "vacation days", "b"),
            click(2, "c2", 2, "days of holiday", "b"),
        ];
        let d = distinct_queries(&events);
        assert_eq!(d, vec!["days of holiday", "vacation days"]);
        let vectors = vec![vec![1.0, 0.1], vec![1.0, 0.12]];
        let r = candidates(&events, &[], None, Some(&vectors), &Settings::default());
        assert_eq!(r.candidates.len(), 1);
        assert_eq!(r.counts.merged_by_embedding, 1);
        let far = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        let r = candidates(&events, &[], None, Some(&far), &Settings::default());
        assert_eq!(r.candidates.len(), 2);
    }

    #[test]
    fn copied_text_resolves_to_the_retrieved_chunk_that_holds_it() {
        let mut copy = ev(1, "c1", 1, "retención", EventKind::Copy);
        copy.event.text = Some("el 15 %".into());
        let corpus = vec![
            Chunk {
                id: "a".into(),
                text: Some("Nada que ver".into()),
                ..Chunk::default()
            },
            Chunk {
                id: "c".into(),
                text: Some("Retención: el 15 % general".into()),
                ..Chunk::default()
            },
        ];
        let r = candidates(&[copy], &[], Some(&corpus), None, &Settings::default());
        assert_eq!(r.candidates[0].expected, vec!["c"]);
        assert_eq!(r.candidates[0].support.copies, 1);
    }
}
