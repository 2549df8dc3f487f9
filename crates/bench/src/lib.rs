//! Benchmark harness for `veredicto trec`: a seeded generator of TREC qrels and runs, a process
//! runner that measures wall clock and peak RSS of a child (`wait4`), and the parsing of
//! trec_eval-format output used to check that all evaluators agree.

pub mod gen;
pub mod measure;
pub mod output;
pub mod rng;
