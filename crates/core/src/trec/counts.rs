//! Counts: `num_q`, `num_ret`, `num_rel`, `num_rel_ret`, `num_nonrel_judged_ret`.
//!
//! - `NumQ` = 1 per query; the summary is the number of queries evaluated (with `-c`, the
//!   number of queries in the qrels).
//! - `NumRet` = documents retrieved (after `-M` and `-J`).
//! - `NumRel` = judged documents with level >= the relevance level. Summary: the sum; with
//!   `-c` trec_eval instead counts every judgement with level > 0 in the whole qrels
//!   (ignoring `-l`), and so do we.
//! - `NumRelRet` = relevant documents retrieved.
//! - `NumNonRelJudgedRet` = retrieved documents judged with a level below the relevance level.
//!
//! All counts sum over queries in the summary (except `NumQ`, see above).

use super::ResRels;

/// `num_ret`.
pub fn num_ret(q: &ResRels) -> f64 {
    q.num_ret() as f64
}

/// `num_rel`.
pub fn num_rel(q: &ResRels) -> f64 {
    q.num_rel() as f64
}

/// `num_rel_ret`.
pub fn num_rel_ret(q: &ResRels) -> f64 {
    q.num_rel_ret() as f64
}

/// `num_nonrel_judged_ret` = num_ret - unjudged retrieved - relevant retrieved.
pub fn num_nonrel_judged_ret(q: &ResRels) -> f64 {
    q.num_ret() as f64
        - q.num_nonpool() as f64
        - q.num_unjudged_in_pool() as f64
        - q.num_rel_ret() as f64
}
