//! One pass of a golden set over any [`Retriever`]: query embedding (when the retriever
//! reads vectors), retrieval with bounded concurrency, each chunk once per answer, the
//! optional rerank stage, the optional exactness check's search and per-stage latency. The
//! exam that reads the pass's runs lives in the application layer (`veredicto-app`).
//!
//! Output is deterministic: cases run on up to `concurrency` threads but their results are
//! assembled in the golden set's order, so the report does not depend on the thread count
//! (latency figures aside, which are only reported when asked for).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use veredicto_core::case::{Case, Corpus};
use veredicto_core::history::{LatencySource, StageLatency};
use veredicto_core::retrieval::{self, DuplicateRule, FailureLimit, RemovedDuplicates};
use veredicto_core::run::{Retrieved, Run};
use veredicto_embed::{Embedder, Reranker, TextKind};

use crate::{Hit, Ranking, Request, RetrieveError, Retriever, Vectors};

/// Default number of cases in flight at once.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Default number of results asked per case.
pub const DEFAULT_DEPTH: usize = 100;
/// Default number of single-query searches timed after a batched pass.
pub const DEFAULT_LATENCY_SAMPLE: usize = 20;

/// The cases (indices into the golden set) timed one at a time after a batched pass:
/// `min(sample, cases)` of them, evenly spaced: case `i * cases / sample` for `i` in
/// `0..sample`, so the same golden set always gives the same sample.
pub fn latency_sample(cases: usize, sample: usize) -> Vec<usize> {
    let m = sample.min(cases);
    (0..m).map(|i| i * cases / m).collect()
}

/// How the pipeline retrieves.
pub struct Settings<'a> {
    /// Results asked per case (at least each case's K, and the rerank candidates).
    pub depth: usize,
    /// Cases in flight at once (at least 1).
    pub concurrency: usize,
    /// The rerank stage, when there is one.
    pub reranker: Option<&'a dyn Reranker>,
    /// Stage-1 candidates handed to the reranker.
    pub candidates: usize,
    /// Results kept after reranking (at least each case's K).
    pub keep: usize,
    /// Also ask the engine for its exact ranking ([`Retriever::exact_search`]).
    pub exactness_check: bool,
    /// Called once for each case as its retrieval ends (from the worker threads, in no
    /// particular order): progress reporting. It sees no result, so nothing it does can
    /// change the exam's output.
    pub progress: Option<&'a (dyn Fn() + Sync)>,
    /// With a retriever that answers all cases in one batched pass
    /// ([`Retriever::batched`]): how many cases are searched again one at a time, after the
    /// pass, to measure the search stage's per-query latency (0: none). The cases are evenly
    /// spaced in the golden set's order ([`latency_sample`]); their results are not used.
    pub latency_sample: usize,
    /// A chunk ID answered twice for one case: keep its first occurrence (and report the
    /// rest), or stop with [`RetrieveError::Duplicate`]. Applied to every answer, whatever
    /// the retriever, before the rerank stage and the measures ([`dedup_answer`]).
    pub duplicates: DuplicateRule,
    /// Beyond this many cases failed in a live retriever the pass stops with
    /// [`RetrieveError::RetrieverFailed`] instead of giving failing cases; an exam in which
    /// every case failed always does. A run file's missing cases do not count.
    pub max_retriever_failures: FailureLimit,
    /// Set (by another thread) to stop the pass: no case starts after it is seen, and the
    /// pass ends with [`RetrieveError::Cancelled`].
    pub cancel: Option<&'a AtomicBool>,
}

impl Default for Settings<'_> {
    fn default() -> Self {
        Settings {
            depth: DEFAULT_DEPTH,
            concurrency: DEFAULT_CONCURRENCY,
            reranker: None,
            candidates: 30,
            keep: 10,
            exactness_check: false,
            progress: None,
            latency_sample: DEFAULT_LATENCY_SAMPLE,
            duplicates: DuplicateRule::default(),
            max_retriever_failures: FailureLimit::default(),
            cancel: None,
        }
    }
}

/// What one pass over the golden set produced.
#[derive(Debug, Default)]
pub struct Retrieval {
    /// The final ranking per case (reranked when a reranker is given).
    pub run: Run,
    /// Stage 1 alone, `candidates` deep, when a reranker is given.
    pub stage1: Option<Run>,
    /// The engine's exact ranking, with the exactness check.
    pub exact: Option<Run>,
    /// Per stage (`query_embedding`, `search`, `rerank`, `exact_search`): latency over the
    /// cases.
    pub latency: BTreeMap<String, StageLatency>,
    /// Cases the retriever failed for, with its error, in case order.
    pub failures: BTreeMap<String, String>,
}

struct CaseOut {
    final_hits: Vec<Hit>,
    duplicates: Option<RemovedDuplicates>,
    known: BTreeMap<String, (usize, Option<f64>)>,
    stage1: Option<Ranking>,
    exact: Option<Vec<Hit>>,
    embed_ms: Option<f64>,
    search_ms: Option<f64>,
    rerank_ms: Option<f64>,
    exact_ms: Option<f64>,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// The text a reranker reads for a chunk: its text (BEIR: title + text), else its
/// representation, else its ID.
fn passage(corpus: Option<&Corpus>, id: &str) -> String {
    let chunk = corpus.and_then(|c| c.get(id));
    chunk
        .and_then(|c| c.text.clone().filter(|t| !t.is_empty()))
        .or_else(|| chunk.and_then(|c| c.representation.clone()))
        .unwrap_or_else(|| id.to_owned())
}

fn to_run_list(hits: &[Hit]) -> Vec<Retrieved> {
    hits.iter()
        .map(|h| Retrieved {
            id: h.id.clone(),
            score: h.score,
        })
        .collect()
}

/// Keeps the spans the retriever gave with `hits` ([`Hit::span`]) in `run`: a chunk's first
/// span in case order, so that the result does not depend on the thread schedule.
fn keep_spans(run: &mut Run, hits: &[Hit]) {
    for h in hits {
        if let Some(span) = &h.span {
            if !run.spans.contains_key(&h.id) {
                run.spans.insert(h.id.clone(), span.clone());
            }
        }
    }
}

struct Ctx<'a> {
    retriever: &'a dyn Retriever,
    embedder: Option<&'a dyn Embedder>,
    corpus: Option<&'a Corpus>,
    settings: &'a Settings<'a>,
}

/// A case's query vector before its search: the embedder's (with the time it took), or
/// none when the case's own `query_vector` serves or the retriever reads no vectors.
struct Prepared {
    embedded: Option<Vec<f32>>,
    embed_ms: Option<f64>,
}

fn prepare_case(ctx: &Ctx<'_>, case: &Case) -> Result<Prepared, RetrieveError> {
    let none = Prepared {
        embedded: None,
        embed_ms: None,
    };
    match (&case.query_vector, ctx.embedder, ctx.retriever.vectors()) {
        (_, _, Vectors::Never) | (Some(_), _, _) | (None, None, Vectors::Optional) => Ok(none),
        (None, Some(e), _) => {
            let t = Instant::now();
            let mut out = e
                .embed(&[case.query.as_str()], TextKind::Query)
                .map_err(|source| RetrieveError::Embed {
                    case: case.id.clone(),
                    source,
                })?;
            Ok(Prepared {
                embed_ms: Some(ms(t)),
                embedded: Some(out.pop().unwrap_or_default()),
            })
        }
        (None, None, Vectors::Required) => Err(RetrieveError::NoVector {
            case: case.id.clone(),
        }),
    }
}

/// The request for one case (`exact: false`).
fn request_of<'a>(ctx: &Ctx<'_>, case: &'a Case, prepared: &'a Prepared, k: usize) -> Request<'a> {
    let vector = match ctx.retriever.vectors() {
        Vectors::Never => None,
        _ => prepared
            .embedded
            .as_deref()
            .or(case.query_vector.as_deref()),
    };
    let depth = depth_of(ctx.settings, k);
    Request {
        case_id: &case.id,
        query: &case.query,
        vector,
        depth,
        expected: &case.expected,
        exact: false,
        filters: case.filters.as_ref(),
    }
}

/// Results asked for a case of K `k`: the depth, at least K and the rerank candidates.
pub fn depth_of(s: &Settings<'_>, k: usize) -> usize {
    s.depth
        .max(k)
        .max(if s.reranker.is_some() {
            s.candidates
        } else {
            0
        })
        .max(1)
}

/// One case, one search at a time: embedding, search, then [`finish_case`].
fn run_case(ctx: &Ctx<'_>, case: &Case, k: usize) -> Result<CaseOut, RetrieveError> {
    let prepared = prepare_case(ctx, case)?;
    let request = request_of(ctx, case, &prepared, k);
    let t = Instant::now();
    let ranking = ctx.retriever.search(&request)?;
    let search_ms = ms(t);
    finish_case(
        ctx,
        case,
        k,
        request,
        ranking,
        prepared.embed_ms,
        Some(search_ms),
    )
}

/// A retriever's answer for one case with each chunk ID once: under
/// [`DuplicateRule::KeepFirst`] the first occurrence is kept, the later ones removed, the
/// ranks closed up (ranks known beyond the list too) and what was removed returned; under
/// [`DuplicateRule::Refuse`] a repeated ID is [`RetrieveError::Duplicate`]. The one place
/// where every retriever's answers (served and exact) go through, before anything reads them.
pub fn dedup_answer(
    retriever: &dyn Retriever,
    case_id: &str,
    rule: DuplicateRule,
    ranking: &mut Ranking,
) -> Result<Option<RemovedDuplicates>, RetrieveError> {
    if rule == DuplicateRule::Refuse {
        if let Some((id, first, again)) = retrieval::first_duplicate(&ranking.hits, |h| &h.id) {
            return Err(RetrieveError::Duplicate {
                uri: retriever.describe(),
                case: case_id.to_owned(),
                id,
                first,
                again,
            });
        }
        return Ok(None);
    }
    let listed = ranking.hits.len();
    let removed = retrieval::remove_duplicates(&mut ranking.hits, |h| &h.id);
    if let Some(r) = &removed {
        retrieval::shift_ranks_beyond(&mut ranking.known, listed, r.count);
    }
    Ok(removed)
}

/// What follows a case's search: duplicates ([`dedup_answer`]), the exactness check's
/// search and the rerank stage.
fn finish_case(
    ctx: &Ctx<'_>,
    case: &Case,
    k: usize,
    mut request: Request<'_>,
    mut ranking: Ranking,
    embed_ms: Option<f64>,
    search_ms: Option<f64>,
) -> Result<CaseOut, RetrieveError> {
    let s = ctx.settings;
    let duplicates = dedup_answer(ctx.retriever, &case.id, s.duplicates, &mut ranking)?;
    let Ranking { hits, known } = ranking;
    let (mut exact, mut exact_ms) = (None, None);
    if s.exactness_check {
        request.exact = true;
        let t = Instant::now();
        let mut answer = ctx.retriever.search(&request)?;
        dedup_answer(ctx.retriever, &case.id, s.duplicates, &mut answer)?;
        exact = Some(answer.hits);
        exact_ms = Some(ms(t));
    }
    let Some(reranker) = s.reranker else {
        return Ok(CaseOut {
            final_hits: hits,
            duplicates,
            known,
            stage1: None,
            exact,
            embed_ms,
            search_ms,
            rerank_ms: None,
            exact_ms,
        });
    };
    let n = s.candidates.min(hits.len());
    let texts: Vec<String> = hits[..n]
        .iter()
        .map(|h| passage(ctx.corpus, &h.id))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    let scores = reranker
        .score(&case.query, &refs)
        .map_err(|source| RetrieveError::Rerank {
            case: case.id.clone(),
            source,
        })?;
    let rerank_ms = Some(ms(t));
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
    let reranked: Vec<Hit> = order
        .iter()
        .map(|&i| Hit {
            id: hits[i].id.clone(),
            score: Some(f64::from(scores[i])),
            span: hits[i].span.clone(),
        })
        .collect();
    let mut known_final = BTreeMap::new();
    for id in &case.expected {
        let full = reranked.iter().chain(&hits[n..]);
        if let Some((p, h)) = full.enumerate().find(|(_, h)| &h.id == id) {
            known_final.insert(id.clone(), (p + 1, h.score));
        } else if let Some(&(r, sc)) = known.get(id) {
            known_final.insert(id.clone(), (r, sc));
        }
    }
    let keep = s.keep.max(k).min(reranked.len());
    let mut final_hits = reranked;
    final_hits.truncate(keep);
    let stage1_hits = hits[..n].to_vec();
    Ok(CaseOut {
        final_hits,
        duplicates,
        known: known_final,
        stage1: Some(Ranking {
            hits: stage1_hits,
            known,
        }),
        exact,
        embed_ms,
        search_ms,
        rerank_ms,
        exact_ms,
    })
}

/// Runs every case through the retriever, `settings.concurrency` at a time. A failure
/// that concerns one case ([`RetrieveError::is_case_only`]) is recorded in
/// [`Retrieval::failures`] and the case gets no results; any other failure stops the pass.
pub fn retrieve(
    retriever: &dyn Retriever,
    embedder: Option<&dyn Embedder>,
    corpus: Option<&Corpus>,
    cases: &[Case],
    k_of: &(dyn Fn(&Case) -> usize + Sync),
    settings: &Settings<'_>,
) -> Result<Retrieval, RetrieveError> {
    if retriever.vectors() != Vectors::Never {
        retriever.prepare(embedder.map(|e| e.dim()))?;
    }
    if settings.exactness_check && !retriever.exact_search() {
        return Err(RetrieveError::Setup {
            uri: retriever.describe(),
            reason: format!(
                "--exactness-check needs a retriever that can also search exactly (pgvector, OpenSearch / Elasticsearch, Qdrant); `{}` cannot",
                retriever.kind()
            ),
        });
    }
    let ctx = Ctx {
        retriever,
        embedder,
        corpus,
        settings,
    };
    let n = cases.len();
    let workers = settings.concurrency.max(1).min(n.max(1));
    let mut search_latency = None;
    let outs = if retriever.batched() {
        let (outs, latency) = retrieve_batched(&ctx, cases, k_of, workers)?;
        search_latency = latency;
        outs
    } else {
        in_parallel(n, workers, settings.progress, settings.cancel, &|i| {
            run_case(&ctx, &cases[i], k_of(&cases[i]))
        })
    };
    if cancelled(settings) {
        return Err(RetrieveError::Cancelled);
    }
    let mut run = retriever.preloaded().cloned().unwrap_or_else(|| Run {
        name: retriever.describe(),
        ..Run::default()
    });
    let mut stage1 = settings.reranker.map(|_| Run {
        name: format!("{} (stage 1)", retriever.describe()),
        ..Run::default()
    });
    let mut exact_run = settings.exactness_check.then(|| Run {
        name: format!("{} (exact)", retriever.describe()),
        ..Run::default()
    });
    let (mut embed_ms, mut search_ms, mut rerank_ms, mut exact_ms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut failures = BTreeMap::new();
    let mut outs = outs;
    // The first failure in case order that stops the pass, so that the error does not
    // depend on the thread schedule more than it must.
    if let Some(p) = outs
        .iter()
        .position(|o| matches!(o, Some(Err(e)) if !e.is_case_only()))
    {
        if let Some(Err(e)) = outs[p].take() {
            return Err(e);
        }
    }
    for (case, out) in cases.iter().zip(outs) {
        match out {
            Some(Ok(o)) => {
                embed_ms.extend(o.embed_ms);
                search_ms.extend(o.search_ms);
                rerank_ms.extend(o.rerank_ms);
                exact_ms.extend(o.exact_ms);
                keep_spans(&mut run, &o.final_hits);
                run.queries
                    .insert(case.id.clone(), to_run_list(&o.final_hits));
                run.known_ranks.insert(case.id.clone(), o.known);
                match o.duplicates {
                    Some(d) => run.duplicates.insert(case.id.clone(), d),
                    None => run.duplicates.remove(&case.id),
                };
                if let (Some(s1), Some(r1)) = (stage1.as_mut(), o.stage1) {
                    keep_spans(s1, &r1.hits);
                    s1.queries.insert(case.id.clone(), to_run_list(&r1.hits));
                    s1.known_ranks.insert(case.id.clone(), r1.known);
                }
                if let (Some(x), Some(hits)) = (exact_run.as_mut(), o.exact) {
                    x.queries.insert(case.id.clone(), to_run_list(&hits));
                }
            }
            Some(Err(e)) => {
                run.queries.remove(&case.id);
                run.known_ranks.remove(&case.id);
                run.duplicates.remove(&case.id);
                failures.insert(case.id.clone(), e.to_string());
            }
            None => {}
        }
    }
    let mut latency = BTreeMap::new();
    for (name, samples) in [
        ("query_embedding", &embed_ms),
        ("search", &search_ms),
        ("rerank", &rerank_ms),
        ("exact_search", &exact_ms),
    ] {
        if !samples.is_empty() {
            latency.insert(name.to_owned(), StageLatency::from_samples(samples));
        }
    }
    if let Some(l) = search_latency {
        latency.insert("search".to_owned(), l);
    }
    // A run known in advance may hold queries that are not golden cases (they are ignored):
    // they name each chunk once too, so that whatever is saved from the run reads back.
    if retriever.preloaded().is_some() {
        for list in run.queries.values_mut() {
            retrieval::remove_duplicates(list, |r| &r.id);
        }
    }
    if retriever.preloaded().is_none() {
        check_failures(retriever, cases, &failures, settings.max_retriever_failures)?;
    }
    Ok(Retrieval {
        run,
        stage1,
        exact: exact_run,
        latency,
        failures,
    })
}

/// Whether the caller asked the pass to stop ([`Settings::cancel`]).
fn cancelled(settings: &Settings<'_>) -> bool {
    settings.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
}

/// The pass's verdict on the retriever itself: more failed cases than `limit` allows (or
/// every case) is [`RetrieveError::RetrieverFailed`], naming the retriever, the count and
/// the last failure in case order.
fn check_failures(
    retriever: &dyn Retriever,
    cases: &[Case],
    failures: &BTreeMap<String, String>,
    limit: FailureLimit,
) -> Result<(), RetrieveError> {
    if !limit.exceeded(failures.len(), cases.len()) {
        return Ok(());
    }
    let uri = retriever.describe();
    let (last_case, last) = cases
        .iter()
        .rev()
        .find_map(|c| failures.get(&c.id).map(|e| (c.id.clone(), e.clone())))
        .unwrap_or_default();
    // The failure's text may name the retriever and the case already; the error says each
    // once.
    let last = last
        .strip_prefix(&format!("{uri}: "))
        .unwrap_or(&last)
        .to_owned();
    let last = last
        .strip_prefix(&format!("case `{last_case}`: "))
        .unwrap_or(&last)
        .to_owned();
    Err(RetrieveError::RetrieverFailed {
        uri,
        failed: failures.len(),
        cases: cases.len(),
        limit,
        last_case,
        last,
    })
}

/// Runs `f` over `0..n` on `workers` threads; a failure that does not concern one case
/// stops the workers from taking new indices (those get `None`), and so does `cancel` once
/// set. `progress` is called as each index ends.
fn in_parallel<T: Send>(
    n: usize,
    workers: usize,
    progress: Option<&(dyn Fn() + Sync)>,
    cancel: Option<&AtomicBool>,
    f: &(dyn Fn(usize) -> Result<T, RetrieveError> + Sync),
) -> Vec<Option<Result<T, RetrieveError>>> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Result<T, RetrieveError>>>> =
        (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| loop {
                if stop.load(Ordering::Relaxed) || cancel.is_some_and(|c| c.load(Ordering::Relaxed))
                {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let out = f(i);
                if out.as_ref().is_err_and(|e| !e.is_case_only()) {
                    stop.store(true, Ordering::Relaxed);
                }
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(out);
                }
                if let Some(progress) = progress {
                    progress();
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().ok().flatten())
        .collect()
}

type CaseSlots = Vec<Option<Result<CaseOut, RetrieveError>>>;

/// The pass of a batching retriever: the query vectors (embedded on `workers` threads),
/// then one [`Retriever::search_batch`] for every case, then each case's exactness check
/// and rerank stage on `workers` threads, then the single-query latency sample. The error
/// that stops the pass is the first in case order, as one case at a time.
fn retrieve_batched(
    ctx: &Ctx<'_>,
    cases: &[Case],
    k_of: &(dyn Fn(&Case) -> usize + Sync),
    workers: usize,
) -> Result<(CaseSlots, Option<StageLatency>), RetrieveError> {
    let n = cases.len();
    let cancel = ctx.settings.cancel;
    let prepared = in_parallel(n, workers, None, cancel, &|i| prepare_case(ctx, &cases[i]));
    // Embedding errors all stop the pass; cases before the first one are still searched,
    // so that an earlier case's search error wins, as it would one case at a time.
    let first_failed = prepared
        .iter()
        .position(|p| !matches!(p, Some(Ok(_))))
        .unwrap_or(n);
    let ready: Vec<&Prepared> = prepared[..first_failed]
        .iter()
        .filter_map(|p| p.as_ref().and_then(|r| r.as_ref().ok()))
        .collect();
    let requests: Vec<Request<'_>> = cases[..first_failed]
        .iter()
        .zip(&ready)
        .map(|(case, p)| request_of(ctx, case, p, k_of(case)))
        .collect();
    let t = Instant::now();
    let rankings = ctx.retriever.search_batch(&requests)?;
    let batch_ms = ms(t);
    if first_failed < n {
        let mut prepared = prepared;
        return match prepared[first_failed].take() {
            Some(Err(e)) => Err(e),
            _ => Err(RetrieveError::Setup {
                uri: ctx.retriever.describe(),
                reason: format!("case `{}` was not prepared", cases[first_failed].id),
            }),
        };
    }
    if rankings.len() != n {
        return Err(RetrieveError::Setup {
            uri: ctx.retriever.describe(),
            reason: format!("{} rankings for {n} cases", rankings.len()),
        });
    }
    let outs = in_parallel(n, workers, ctx.settings.progress, cancel, &|i| {
        let case = &cases[i];
        finish_case(
            ctx,
            case,
            k_of(case),
            requests[i],
            rankings[i].clone(),
            ready[i].embed_ms,
            None,
        )
    });
    // Per-query latency: single-query searches, one at a time, after the batched pass.
    let mut samples = Vec::new();
    for i in latency_sample(n, ctx.settings.latency_sample) {
        let t = Instant::now();
        ctx.retriever.search(&requests[i])?;
        samples.push(ms(t));
    }
    let latency = (n > 0).then(|| StageLatency {
        source: Some(LatencySource::SingleQuerySample),
        queries: Some(n),
        batch_ms: Some(batch_ms),
        ..StageLatency::from_samples(&samples)
    });
    Ok((outs, latency))
}
