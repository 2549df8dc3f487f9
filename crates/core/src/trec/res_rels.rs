//! One query's ranking joined with its judgements: trec_eval's "res_rels".
//!
//! Conventions (all as trec_eval 10.0 does them):
//! - **Order**: documents are ranked by score descending; equal scores are broken by document
//!   id descending (byte-wise, like C `strcmp`). The rank column of a run file is ignored.
//!   `-0.0` and `0.0` are the same score.
//! - **Cut-off** (`-M`): only the first `max_retrieved` documents of that order are kept.
//! - **Duplicates**: a document retrieved twice (within the kept documents) is an error.
//! - **Relevance of a retrieved document**: its judged level if the qrels judge it with a
//!   non-negative level; [`UNJUDGED`] (-2) if the qrels list it with a negative level (in the
//!   pool but not judged); [`NONPOOL`] (-1) if the qrels do not list it. Both count as
//!   non-relevant for almost every measure; bpref and infAP skip them.
//! - **Relevant** means level >= the relevance level (`-l`, default 1).
//! - **Judged only** (`-J`): unjudged documents are dropped from the ranking (after `-M`).

use super::hash::hash_id;
use std::cmp::Ordering;

/// Relevance of a retrieved document that the qrels do not list.
pub const NONPOOL: i32 = -1;
/// Relevance of a retrieved document that the qrels list with a negative level.
pub const UNJUDGED: i32 = -2;

/// Settings that apply to every query (trec_eval's `-l`, `-M`, `-J` and `-N`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalOptions {
    /// Minimum judged level that counts as relevant (`-l`, default 1).
    pub relevance_level: i64,
    /// Keep only this many documents per query (`-M`); `None` keeps all.
    pub max_retrieved: Option<u64>,
    /// Drop unjudged documents before computing anything (`-J`).
    pub judged_only: bool,
    /// Number of documents in the collection (`-N`, default 0); only `utility` uses it.
    pub num_docs_in_coll: i64,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            relevance_level: 1,
            max_retrieved: None,
            judged_only: false,
            num_docs_in_coll: 0,
        }
    }
}

/// A document retrieved more than once for the same query.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("document '{docno}' appears more than once")]
pub struct DuplicateDoc {
    /// The repeated document id (lossily decoded if it is not UTF-8).
    pub docno: String,
}

/// Judgements at or below this many are searched linearly (comparing hashes first) instead
/// of through the hash table.
const LINEAR_LOOKUP_MAX: usize = 8;

/// The judgements of one query, indexed for lookup by document id.
#[derive(Clone, Debug)]
pub struct QueryQrels<'a> {
    /// `(hash, docno, level)` in the given order.
    docs: Vec<(u64, &'a [u8], i32)>,
    /// Open addressing table of `index + 1` into `docs` (empty for few judgements).
    table: Vec<u32>,
    /// `(level, count)` of the judgements with level >= 0, ascending, counts > 0.
    levels: Vec<(i32, u64)>,
}

impl<'a> QueryQrels<'a> {
    /// Indexes `(docno, level)` judgements. A document judged twice is an error.
    pub fn new<I>(judgments: I) -> Result<Self, DuplicateDoc>
    where
        I: IntoIterator<Item = (&'a [u8], i32)>,
    {
        let docs: Vec<(u64, &'a [u8], i32)> = judgments
            .into_iter()
            .map(|(d, r)| (hash_id(d), d, r))
            .collect();
        let mut counts: Vec<i32> = docs.iter().map(|d| d.2).filter(|&r| r >= 0).collect();
        counts.sort_unstable();
        let mut levels: Vec<(i32, u64)> = Vec::new();
        for level in counts {
            match levels.last_mut() {
                Some(last) if last.0 == level => last.1 += 1,
                _ => levels.push((level, 1)),
            }
        }
        let mut q = QueryQrels {
            docs,
            table: Vec::new(),
            levels,
        };
        if q.docs.len() <= LINEAR_LOOKUP_MAX {
            for (i, &(h, d, _)) in q.docs.iter().enumerate() {
                if q.docs[..i].iter().any(|e| e.0 == h && e.1 == d) {
                    return Err(duplicate(d));
                }
            }
        } else {
            let size = (q.docs.len() * 2).next_power_of_two();
            q.table = vec![0; size];
            let mask = size - 1;
            for (i, &(h, d, _)) in q.docs.iter().enumerate() {
                let mut at = h as usize & mask;
                while q.table[at] != 0 {
                    let e = &q.docs[q.table[at] as usize - 1];
                    if e.0 == h && e.1 == d {
                        return Err(duplicate(d));
                    }
                    at = (at + 1) & mask;
                }
                q.table[at] = i as u32 + 1;
            }
        }
        Ok(q)
    }

    /// The judged level of `docno`, if the qrels list it (negative levels included).
    #[inline]
    pub fn get(&self, docno: &[u8]) -> Option<i32> {
        self.get_hashed(hash_id(docno), docno)
    }

    /// [`QueryQrels::get`] with the docno's [`hash_id`] already computed.
    #[inline]
    pub fn get_hashed(&self, hash: u64, docno: &[u8]) -> Option<i32> {
        if self.table.is_empty() {
            return self
                .docs
                .iter()
                .find(|e| e.0 == hash && e.1 == docno)
                .map(|e| e.2);
        }
        let mask = self.table.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let i = self.table[at];
            if i == 0 {
                return None;
            }
            let e = &self.docs[i as usize - 1];
            if e.0 == hash && e.1 == docno {
                return Some(e.2);
            }
            at = (at + 1) & mask;
        }
    }

    /// `(level, count)` of the judgements with a level >= 0, ascending.
    pub fn levels(&self) -> &[(i32, u64)] {
        &self.levels
    }

    /// Number of judgements with a level > 0 (what `num_rel` sums under `-c`).
    pub fn num_positive(&self) -> u64 {
        self.levels
            .iter()
            .filter(|(l, _)| *l > 0)
            .map(|(_, n)| n)
            .sum()
    }
}

/// Reusable buffers for [`ResRels::from_ranking_in`] (one per thread saves allocations).
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    hashes: Vec<u64>,
    table: Vec<u32>,
}

fn duplicate(d: &[u8]) -> DuplicateDoc {
    DuplicateDoc {
        docno: String::from_utf8_lossy(d).into_owned(),
    }
}

/// Sort key of a score: ascending keys are ascending scores, and `-0.0` and `0.0` share a
/// key (they compare equal, so the document id decides). NaN (which the readers reject)
/// sorts above every number.
#[inline]
pub fn score_key(score: f64) -> u64 {
    let bits = (score + 0.0).to_bits(); // -0.0 + 0.0 == +0.0
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The score of a key from [`score_key`] (`-0.0` comes back as `0.0`).
#[inline]
pub fn key_score(key: u64) -> f64 {
    let bits = if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    };
    f64::from_bits(bits)
}

/// trec_eval's ranking order: `Less` means `a` is ranked before `b` (higher score, or equal
/// score and greater document id).
#[inline]
pub fn cmp_trec(a: (f64, &[u8]), b: (f64, &[u8])) -> Ordering {
    score_key(b.0)
        .cmp(&score_key(a.0))
        .then_with(|| b.1.cmp(a.1))
}

/// Sorts `(score key, docno)` pairs (keys from [`score_key`]) into trec_eval's ranking order.
/// Runs usually list a query's documents in rank order already, with at most a few tied
/// documents out of place: such input is finished by insertion sort in linear time; anything
/// else goes to the standard sort.
pub fn sort_trec_keyed(items: &mut [(u64, &[u8])]) {
    let before = |a: &(u64, &[u8]), b: &(u64, &[u8])| a.0 > b.0 || (a.0 == b.0 && a.1 > b.1);
    let descents = items.windows(2).filter(|w| before(&w[1], &w[0])).count();
    if descents == 0 {
        return;
    }
    if descents > 64 {
        items.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(a.1)));
        return;
    }
    for i in 1..items.len() {
        let mut j = i;
        while j > 0 && before(&items[j], &items[j - 1]) {
            items.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// Sorts any items into trec_eval's ranking order, given each item's score and document id.
pub fn sort_trec<T>(items: &mut [T], key: impl Fn(&T) -> (f64, &[u8])) {
    items.sort_unstable_by(|a, b| cmp_trec(key(a), key(b)));
}

/// The relevance of each retrieved document in rank order, plus the counts measures need.
#[derive(Clone, Debug, PartialEq)]
pub struct ResRels {
    rels: Vec<i32>,
    levels: Vec<(i32, u64)>,
    num_rel: u64,
    num_rel_ret: u64,
    num_nonpool: u64,
    num_unjudged: u64,
    relevance_level: i64,
    num_docs_in_coll: i64,
}

impl ResRels {
    /// Judgements of one ranking under binary relevance, as the exam needs them:
    /// `relevant_in_rank_order[i]` says whether the document at rank `i + 1` is relevant, and
    /// `num_relevant` is the number of relevant documents for the query (retrieved or not;
    /// raised to the number of relevant documents retrieved if smaller). Retrieved documents
    /// that are not relevant count as judged non-relevant (level 0); relevance level is 1.
    pub fn binary(relevant_in_rank_order: &[bool], num_relevant: usize) -> Self {
        let rels: Vec<i32> = relevant_in_rank_order
            .iter()
            .map(|&r| i32::from(r))
            .collect();
        let found = relevant_in_rank_order.iter().filter(|&&r| r).count() as u64;
        let nonrel = relevant_in_rank_order.len() as u64 - found;
        let num_rel = (num_relevant as u64).max(found);
        let mut levels = Vec::new();
        if nonrel > 0 {
            levels.push((0, nonrel));
        }
        if num_rel > 0 {
            levels.push((1, num_rel));
        }
        ResRels::from_rels(rels, &levels, &EvalOptions::default())
    }

    /// Builds from relevance values already in rank order (levels >= 0, [`NONPOOL`] or
    /// [`UNJUDGED`]) and the query's judged `(level, count)` pairs (levels >= 0; zero counts and
    /// any order allowed). `-M` and `-J` of `opts` are NOT applied here.
    pub fn from_rels(rels: Vec<i32>, judged_levels: &[(i32, u64)], opts: &EvalOptions) -> Self {
        let mut levels: Vec<(i32, u64)> = judged_levels
            .iter()
            .copied()
            .filter(|&(l, n)| l >= 0 && n > 0)
            .collect();
        levels.sort_unstable();
        levels.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 += b.1;
                true
            } else {
                false
            }
        });
        let level = opts.relevance_level;
        let num_rel = levels
            .iter()
            .filter(|(l, _)| i64::from(*l) >= level)
            .map(|(_, n)| n)
            .sum();
        let (mut num_rel_ret, mut num_nonpool, mut num_unjudged) = (0, 0, 0);
        for &r in &rels {
            if r == NONPOOL {
                num_nonpool += 1;
            } else if r == UNJUDGED {
                num_unjudged += 1;
            } else if r >= 0 && i64::from(r) >= level {
                num_rel_ret += 1;
            }
        }
        ResRels {
            rels,
            levels,
            num_rel,
            num_rel_ret,
            num_nonpool,
            num_unjudged,
            relevance_level: level,
            num_docs_in_coll: opts.num_docs_in_coll,
        }
    }

    /// Joins a ranking (already in trec_eval order, see [`sort_trec`]) with the query's
    /// judgements, applying `-M` (keep the first `max_retrieved`), the duplicate check (on the
    /// kept documents) and `-J` (drop unjudged documents), in that order.
    pub fn from_ranking<T>(
        ranked: &[T],
        docno: impl Fn(&T) -> &[u8],
        qrels: &QueryQrels<'_>,
        opts: &EvalOptions,
    ) -> Result<Self, DuplicateDoc> {
        ResRels::from_ranking_in(&mut Scratch::default(), ranked, docno, qrels, opts)
    }

    /// [`ResRels::from_ranking`] reusing `scratch`'s buffers.
    pub fn from_ranking_in<T>(
        scratch: &mut Scratch,
        ranked: &[T],
        docno: impl Fn(&T) -> &[u8],
        qrels: &QueryQrels<'_>,
        opts: &EvalOptions,
    ) -> Result<Self, DuplicateDoc> {
        let keep = match opts.max_retrieved {
            Some(m) => ranked.len().min(usize::try_from(m).unwrap_or(usize::MAX)),
            None => ranked.len(),
        };
        let ranked = &ranked[..keep];
        if let Some((_, j)) = find_duplicate(scratch, ranked, &docno) {
            return Err(duplicate(docno(&ranked[j])));
        }
        let hashes = &scratch.hashes;
        let mut rels: Vec<i32> = Vec::with_capacity(keep);
        for (d, &h) in ranked.iter().zip(hashes.iter()) {
            let r = match qrels.get_hashed(h, docno(d)) {
                None => NONPOOL,
                Some(r) if r < 0 => UNJUDGED,
                Some(r) => r,
            };
            if !(opts.judged_only && r < 0) {
                rels.push(r);
            }
        }
        Ok(ResRels::from_rels(rels, qrels.levels(), opts))
    }

    /// Relevance of each retrieved document, in rank order.
    #[inline]
    pub fn rels(&self) -> &[i32] {
        &self.rels
    }

    /// Number of documents retrieved (after `-M` and `-J`).
    #[inline]
    pub fn num_ret(&self) -> u64 {
        self.rels.len() as u64
    }

    /// Number of relevant documents (level >= relevance level) in the judgements.
    #[inline]
    pub fn num_rel(&self) -> u64 {
        self.num_rel
    }

    /// Number of relevant documents retrieved.
    #[inline]
    pub fn num_rel_ret(&self) -> u64 {
        self.num_rel_ret
    }

    /// Number of retrieved documents that the qrels do not list.
    #[inline]
    pub fn num_nonpool(&self) -> u64 {
        self.num_nonpool
    }

    /// Number of retrieved documents that the qrels list with a negative level.
    #[inline]
    pub fn num_unjudged_in_pool(&self) -> u64 {
        self.num_unjudged
    }

    /// `(level, count)` of the judged documents (level >= 0), ascending, counts > 0.
    #[inline]
    pub fn levels(&self) -> &[(i32, u64)] {
        &self.levels
    }

    /// Number of judged documents at `level`.
    pub fn count_at_level(&self, level: i64) -> u64 {
        self.levels
            .iter()
            .find(|(l, _)| i64::from(*l) == level)
            .map_or(0, |(_, n)| *n)
    }

    /// One more than the highest judged level (0 if nothing is judged with a level >= 0).
    #[inline]
    pub fn num_rel_levels(&self) -> i64 {
        self.levels.last().map_or(0, |(l, _)| i64::from(*l) + 1)
    }

    /// The relevance level (`-l`) these judgements were built with.
    #[inline]
    pub fn relevance_level(&self) -> i64 {
        self.relevance_level
    }

    /// The collection size (`-N`) these judgements were built with.
    #[inline]
    pub fn num_docs_in_coll(&self) -> i64 {
        self.num_docs_in_coll
    }

    /// Whether a relevance value counts as relevant (compared as trec_eval does, so with a
    /// relevance level <= -1 even unjudged documents count).
    #[inline]
    pub fn is_rel(&self, rel: i32) -> bool {
        i64::from(rel) >= self.relevance_level
    }

    /// Number of relevant documents among the first `k` retrieved.
    #[inline]
    pub fn relevant_in_top(&self, k: u64) -> u64 {
        let k = usize::try_from(k)
            .unwrap_or(usize::MAX)
            .min(self.rels.len());
        self.rels[..k].iter().filter(|&&r| self.is_rel(r)).count() as u64
    }
}

/// The first pair `(i, j)`, `i < j`, of items with the same document id (`j` as small as
/// possible), using `scratch`'s buffers; afterwards `scratch` holds each item's [`hash_id`].
pub fn find_duplicate<T>(
    scratch: &mut Scratch,
    items: &[T],
    docno: impl Fn(&T) -> &[u8],
) -> Option<(usize, usize)> {
    let hashes = &mut scratch.hashes;
    hashes.clear();
    hashes.extend(items.iter().map(|d| hash_id(docno(d))));
    // An open addressing table of index + 1, keyed by the id's hash.
    let size = (items.len() * 2).next_power_of_two().max(2);
    let table = &mut scratch.table;
    table.clear();
    table.resize(size, 0);
    let mask = size - 1;
    for (j, &h) in hashes.iter().enumerate() {
        let mut at = h as usize & mask;
        while table[at] != 0 {
            let i = table[at] as usize - 1;
            if hashes[i] == h && docno(&items[i]) == docno(&items[j]) {
                return Some((i, j));
            }
            at = (at + 1) & mask;
        }
        table[at] = j as u32 + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(j: &[(&'static str, i32)]) -> QueryQrels<'static> {
        QueryQrels::new(j.iter().map(|(d, r)| (d.as_bytes(), *r))).unwrap()
    }

    #[test]
    fn ties_break_by_docno_descending() {
        let mut v = vec![(1.0, "a"), (2.0, "b"), (1.0, "c"), (-0.0, "x"), (0.0, "y")];
        sort_trec(&mut v, |(s, d)| (*s, d.as_bytes()));
        let order: Vec<&str> = v.iter().map(|x| x.1).collect();
        assert_eq!(order, ["b", "c", "a", "y", "x"]);
    }

    #[test]
    fn keyed_sort_matches_the_comparator() {
        let scores = [3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 0.5, 3.0, -0.0, 0.0];
        let ids = ["a", "b", "d", "c", "z", "y", "q", "b", "m", "n"];
        let mut keyed: Vec<(u64, &[u8])> = scores
            .iter()
            .zip(ids)
            .map(|(s, d)| (score_key(*s), d.as_bytes()))
            .collect();
        let mut plain: Vec<(f64, &str)> = scores.iter().copied().zip(ids).collect();
        sort_trec(&mut plain, |(s, d)| (*s, d.as_bytes()));
        sort_trec_keyed(&mut keyed);
        for (k, s) in keyed.iter().zip([1.5, -2.25, 0.0, 1e300, -1e-300]) {
            assert_eq!(key_score(score_key(s)), s);
            let _ = k;
        }
        let a: Vec<&[u8]> = keyed.iter().map(|k| k.1).collect();
        let b: Vec<&[u8]> = plain.iter().map(|k| k.1.as_bytes()).collect();
        assert_eq!(a, b);
        // Many descents: the general sort.
        let mut rev: Vec<(u64, &[u8])> = (0..200u64).map(|i| (i, b"x" as &[u8])).collect();
        sort_trec_keyed(&mut rev);
        assert!(rev.windows(2).all(|w| w[0].0 > w[1].0));
    }

    #[test]
    fn relevance_of_retrieved_documents() {
        let qrels = q(&[("a", 2), ("b", 0), ("c", -1), ("z", 1)]);
        let ranked = ["a", "b", "c", "d"];
        let rr = ResRels::from_ranking(&ranked, |d| d.as_bytes(), &qrels, &EvalOptions::default())
            .unwrap();
        assert_eq!(rr.rels(), &[2, 0, UNJUDGED, NONPOOL]);
        assert_eq!(rr.num_rel(), 2);
        assert_eq!(rr.num_rel_ret(), 1);
        assert_eq!(rr.num_nonpool(), 1);
        assert_eq!(rr.num_unjudged_in_pool(), 1);
        assert_eq!(rr.num_rel_levels(), 3);
        let opts = EvalOptions {
            judged_only: true,
            max_retrieved: Some(3),
            ..EvalOptions::default()
        };
        let rr = ResRels::from_ranking(&ranked, |d| d.as_bytes(), &qrels, &opts).unwrap();
        assert_eq!(rr.rels(), &[2, 0]);
    }

    #[test]
    fn duplicates_are_errors_only_within_the_cutoff() {
        let qrels = q(&[]);
        let ranked = ["a", "b", "a"];
        let err = ResRels::from_ranking(&ranked, |d| d.as_bytes(), &qrels, &EvalOptions::default());
        assert_eq!(err.unwrap_err().docno, "a");
        let opts = EvalOptions {
            max_retrieved: Some(2),
            ..EvalOptions::default()
        };
        assert!(ResRels::from_ranking(&ranked, |d| d.as_bytes(), &qrels, &opts).is_ok());
        assert!(QueryQrels::new([("x".as_bytes(), 1), ("x".as_bytes(), 0)]).is_err());
    }

    #[test]
    fn binary_counts() {
        let rr = ResRels::binary(&[true, false, true], 5);
        assert_eq!(rr.num_rel(), 5);
        assert_eq!(rr.num_rel_ret(), 2);
        assert_eq!(rr.relevant_in_top(2), 1);
        let rr = ResRels::binary(&[true, true], 1);
        assert_eq!(rr.num_rel(), 2);
    }
}
