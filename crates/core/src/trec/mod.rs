//! The trec_eval-compatible engine.
//!
//! - [`ResRels`] joins one query's ranking with its judgements (trec_eval's "res_rels"); its
//!   module documents the ordering, cut-off, duplicate and unjudged-document conventions.
//! - One small file per measure (or family of measures sharing their arithmetic) computes
//!   per-query values exactly as trec_eval 10.0 does, down to the order of floating-point
//!   operations; [`crate::measure`] is the registry that names them.
//! - [`plan`] turns trec_eval's `-m` arguments into the list of values to print, evaluates a
//!   query, accumulates the summary and formats trec_eval's output lines.
//!
//! Everything here is pure: the caller reads files, runs queries in parallel if it likes, and
//! writes the lines.

pub mod ap;
pub mod bing;
pub mod bpref;
pub mod counts;
pub mod g;
pub mod gains;
pub mod hash;
pub mod infap;
pub mod iprec;
pub mod ndcg;
pub mod ndcg_cut;
pub mod ndcg_rel;
pub mod plan;
pub mod precision;
pub mod rbp;
pub mod recall;
pub mod relstring;
pub mod res_rels;
pub mod rndcg;
pub mod rprec;
pub mod rr;
pub mod set;
pub mod success;
pub mod unjudged;
pub mod utility;
pub mod zscore;

pub use plan::{Plan, PlanError, QueryEval, Summary};
pub use res_rels::{
    cmp_trec, find_duplicate, key_score, score_key, sort_trec, sort_trec_keyed, DuplicateDoc,
    EvalOptions, QueryQrels, ResRels, Scratch, NONPOOL, UNJUDGED,
};
