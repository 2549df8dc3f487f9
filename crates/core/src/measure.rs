//! The measure registry: every retrieval measure is a [`Measure`] value with one canonical
//! name.
//!
//! - `Display` prints the canonical name, in the style of ir_measures: `AP`, `AP@10`,
//!   `nDCG`, `nDCG@10`, `P@5`, `R@100`, `RR`, `RR@10`, `IPrec@0.5`, `RBP(p=0.9)`,
//!   `nDCG(gains={1:3,2:9})`...
//! - `FromStr` parses a canonical name back to the same value, and also accepts trec_eval's
//!   names, both as given to `-m` (`ndcg_cut.10`, `P.5`, `iprec_at_recall.0.5`,
//!   `rbp.p=0.95`) and as printed (`ndcg_cut_10`, `P_5`, `iprec_at_recall_0.50`), plus a few
//!   aliases (`MAP`, `MRR`, `Recall@k`, `Precision@k`). Names are matched without regard to
//!   case. An unknown name is an error that lists the known ones.
//! - [`Measure::compute`] gives the per-query value from a query's judged ranking
//!   ([`ResRels`]); [`Measure::aggregate`] says how per-query values combine.
//!
//! The table [`registry`] is the single source of names, syntax, descriptions and formulas:
//! `veredicto trec --list` and `docs/measures.md` come from it. Each measure's computation lives
//! in its own small file under [`crate::trec`], whose doc comment states the formula and
//! conventions.

use crate::trec::{self, ResRels};
use std::fmt;
use std::str::FromStr;

/// How per-query values combine into the summary value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// Arithmetic mean over queries.
    Mean,
    /// Sum over queries (counts).
    Sum,
    /// Geometric mean, `exp(mean(ln(max(v, 0.00001))))`.
    GeometricMean,
    /// Number of queries.
    Count,
}

/// A family of measures: one row of the registry.
/// (Variants are named after the canonical names; see [`registry`] for each one's meaning.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum Family {
    NumQ,
    NumRet,
    NumRel,
    NumRelRet,
    AP,
    GMAP,
    Rprec,
    Bpref,
    RR,
    IPrec,
    P,
    R,
    InfAP,
    GMBpref,
    RprecMult,
    Utility,
    ElevenPtAvg,
    BinG,
    G,
    DCG,
    IDCG,
    NDCG,
    NDCGRel,
    RnDCG,
    NDCGCut,
    APCut,
    RelP,
    Success,
    SetP,
    SetRelP,
    SetR,
    SetAP,
    SetF,
    NumNonRelJudgedRet,
    RBP,
    RBPResid,
    Unjudged,
    RRCut,
}

/// The shape of a family's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// No parameter: `AP`.
    Plain,
    /// A required rank cut-off: `P@5` (trec `P.5`).
    AtRank,
    /// A required number: `IPrec@0.5` (trec `iprec_at_recall.0.5`).
    AtValue,
    /// An optional gain mapping: `nDCG` or `nDCG(gains={1:3,2:9})` (trec `ndcg.1=3,2=9`).
    Gains,
    /// Persistence and optional gains: `RBP(p=0.9)` (trec `rbp.p=0.9`).
    Rbp,
    /// Persistence only: `RBPResid(p=0.9)` (trec `rbp_resid.p=0.9`).
    Persistence,
    /// Optional weight of recall: `SetF` or `SetF(beta2=0.25)` (trec `set_F.0.25`).
    Beta2,
    /// Optional coefficients: `Utility(a=2,b=-1,c=0,d=0)` (trec `utility.2,-1,0,0`).
    Utility,
    /// Optional recall levels: `11ptAvg(levels={0.25,0.5})` (trec `11pt_avg.0.25,0.5`).
    Levels,
}

/// One row of the registry.
#[derive(Debug)]
pub struct MeasureSpec {
    /// The family.
    pub family: Family,
    /// Canonical base name (`P`, `nDCG`, `AP`).
    pub name: &'static str,
    /// Canonical syntax with placeholders (`P@k`, `nDCG(gains={l:g,...})`).
    pub syntax: &'static str,
    /// trec_eval's name, if trec_eval has the measure.
    pub trec: Option<&'static str>,
    /// Other accepted names.
    pub aliases: &'static [&'static str],
    /// One line: what it measures.
    pub description: &'static str,
    /// One line: the formula (R = relevant judged, rel(i) = relevance at rank i).
    pub formula: &'static str,
    /// How per-query values combine.
    pub aggregate: Aggregate,
    /// Parameter shape.
    pub params: Syntax,
    /// trec_eval's default cut-offs or parameters, when `-m` names the family bare.
    pub trec_defaults: &'static [f64],
    compute: fn(&Measure, &ResRels) -> f64,
}

const CUTOFFS: &[f64] = &[5.0, 10.0, 15.0, 20.0, 30.0, 100.0, 200.0, 500.0, 1000.0];
const RECALL_LEVELS: &[f64] = &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
const RPREC_MULTS: &[f64] = &[0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0];
const DEFAULT_UTILITY: [f64; 4] = [1.0, -1.0, 0.0, 0.0];
/// Default RBP persistence.
pub const DEFAULT_RBP_P: f64 = 0.9;

macro_rules! spec {
    ($family:ident, $name:expr, $syntax:expr, $trec:expr, $aliases:expr, $agg:ident, $params:ident,
     $defaults:expr, $desc:expr, $formula:expr, $compute:expr) => {
        MeasureSpec {
            family: Family::$family,
            name: $name,
            syntax: $syntax,
            trec: $trec,
            aliases: $aliases,
            description: $desc,
            formula: $formula,
            aggregate: Aggregate::$agg,
            params: Syntax::$params,
            trec_defaults: $defaults,
            compute: $compute,
        }
    };
}

/// The registry, in trec_eval's output order (measures trec_eval lacks come last).
static REGISTRY: &[MeasureSpec] = &[
    spec!(
        NumQ,
        "NumQ",
        "NumQ",
        Some("num_q"),
        &[],
        Count,
        Plain,
        &[],
        "Number of queries evaluated (summary only).",
        "1 per query; summary = number of queries (-c: queries in the qrels)",
        |_, _| 1.0
    ),
    spec!(
        NumRet,
        "NumRet",
        "NumRet",
        Some("num_ret"),
        &[],
        Sum,
        Plain,
        &[],
        "Number of documents retrieved.",
        "|ranking| after -M and -J; summary = sum",
        |_, q| trec::counts::num_ret(q)
    ),
    spec!(
        NumRel,
        "NumRel",
        "NumRel",
        Some("num_rel"),
        &[],
        Sum,
        Plain,
        &[],
        "Number of relevant documents judged.",
        "R = |{judged d : rel(d) >= level}|; summary = sum",
        |_, q| trec::counts::num_rel(q)
    ),
    spec!(
        NumRelRet,
        "NumRelRet",
        "NumRelRet",
        Some("num_rel_ret"),
        &[],
        Sum,
        Plain,
        &[],
        "Number of relevant documents retrieved.",
        "|{retrieved d : rel(d) >= level}|; summary = sum",
        |_, q| trec::counts::num_rel_ret(q)
    ),
    spec!(
        AP,
        "AP",
        "AP",
        Some("map"),
        &["MAP"],
        Mean,
        Plain,
        &[],
        "Average precision (mean: MAP).",
        "sum over relevant retrieved ranks i of P@i, / R",
        |_, q| trec::ap::average_precision(q)
    ),
    spec!(
        GMAP,
        "GMAP",
        "GMAP",
        Some("gm_map"),
        &[],
        GeometricMean,
        Plain,
        &[],
        "Geometric mean of average precision (summary only).",
        "per query AP; summary = exp(mean(ln(max(AP, 1e-5))))",
        |_, q| trec::ap::average_precision(q)
    ),
    spec!(
        Rprec,
        "Rprec",
        "Rprec",
        Some("Rprec"),
        &[],
        Mean,
        Plain,
        &[],
        "Precision after R documents.",
        "|relevant in top R| / R",
        |_, q| trec::rprec::r_precision(q)
    ),
    spec!(
        Bpref,
        "Bpref",
        "Bpref",
        Some("bpref"),
        &[],
        Mean,
        Plain,
        &[],
        "Binary preference: judged relevant ranked above judged non-relevant.",
        "(1/R) sum over relevant retrieved r of 1 - min(nonrel above r, R) / min(N, R)",
        |_, q| trec::bpref::bpref(q)
    ),
    spec!(
        RR,
        "RR",
        "RR",
        Some("recip_rank"),
        &["MRR"],
        Mean,
        Plain,
        &[],
        "Reciprocal rank of the first relevant document (mean: MRR).",
        "1 / rank of first relevant, 0 if none",
        |_, q| trec::rr::reciprocal_rank(q)
    ),
    spec!(
        IPrec,
        "IPrec",
        "IPrec@x",
        Some("iprec_at_recall"),
        &[],
        Mean,
        AtValue,
        RECALL_LEVELS,
        "Interpolated precision at recall level x.",
        "max over ranks i with recall(i) >= x of P@i (x*R rounded to whole documents)",
        |m, q| trec::iprec::iprec_at_recall(q, m.value())
    ),
    spec!(
        P,
        "P",
        "P@k",
        Some("P"),
        &["Precision"],
        Mean,
        AtRank,
        CUTOFFS,
        "Precision at rank k.",
        "|relevant in top k| / k",
        |m, q| trec::precision::precision_at(q, m.rank())
    ),
    spec!(
        R,
        "R",
        "R@k",
        Some("recall"),
        &["Recall"],
        Mean,
        AtRank,
        CUTOFFS,
        "Recall at rank k.",
        "|relevant in top k| / R (0 if R = 0)",
        |m, q| trec::recall::recall_at(q, m.rank())
    ),
    spec!(
        InfAP,
        "infAP",
        "infAP",
        Some("infAP"),
        &[],
        Mean,
        Plain,
        &[],
        "Inferred AP for sampled pools (negative qrels levels = unsampled).",
        "AP with precision above each relevant doc estimated from the judged sample",
        |_, q| trec::infap::inferred_ap(q)
    ),
    spec!(
        GMBpref,
        "GMBpref",
        "GMBpref",
        Some("gm_bpref"),
        &[],
        GeometricMean,
        Plain,
        &[],
        "Geometric mean of bpref (summary only).",
        "per query bpref; summary = exp(mean(ln(max(bpref, 1e-5))))",
        |_, q| trec::bpref::bpref(q)
    ),
    spec!(
        RprecMult,
        "RprecMult",
        "RprecMult@x",
        Some("Rprec_mult"),
        &[],
        Mean,
        AtValue,
        RPREC_MULTS,
        "Precision at x times R documents.",
        "|relevant in top c| / c, c = trunc(x*R + 0.9)",
        |m, q| trec::rprec::r_precision_mult(q, m.value())
    ),
    spec!(
        Utility,
        "Utility",
        "Utility(a=1,b=-1,c=0,d=0)",
        Some("utility"),
        &[],
        Mean,
        Utility,
        &DEFAULT_UTILITY,
        "Set utility with coefficients a, b, c, d.",
        "a*relret + b*nonrelret + c*relnotret + d*nonrelnotret (collection size from -N)",
        |m, q| trec::utility::utility(q, &m.utility_coefficients())
    ),
    spec!(
        ElevenPtAvg,
        "11ptAvg",
        "11ptAvg(levels={x,...})",
        Some("11pt_avg"),
        &[],
        Mean,
        Levels,
        RECALL_LEVELS,
        "Mean interpolated precision at recall 0, 0.1, ..., 1 (or the given levels).",
        "mean over levels x of IPrec@x",
        |m, q| trec::iprec::eleven_point_average(q, m.levels())
    ),
    spec!(
        BinG,
        "binG",
        "binG",
        Some("binG"),
        &[],
        Mean,
        Plain,
        &[],
        "Binary G: gain discounted by the non-relevant documents above.",
        "(1/R) sum over relevant retrieved (i-th rank, n-th relevant) of 1/log2(2 + i - n)",
        |_, q| trec::bing::bin_g(q)
    ),
    spec!(
        G,
        "G",
        "G(gains={l:g,...})",
        Some("G"),
        &[],
        Mean,
        Gains,
        &[],
        "G: graded gain with a cost-based discount.",
        "sum of g(i)/log2(2 + cost(i) - gain(i)), / ideal total gain",
        |m, q| trec::g::g(q, m.gains())
    ),
    spec!(
        DCG,
        "DCG",
        "DCG(gains={l:g,...})",
        Some("dcg"),
        &[],
        Mean,
        Gains,
        &[],
        "Discounted cumulative gain over the whole ranking.",
        "sum over ranks i of g(i) / log2(i + 1)",
        |m, q| trec::ndcg::dcg(q, m.gains())
    ),
    spec!(
        IDCG,
        "IDCG",
        "IDCG(gains={l:g,...})",
        Some("ideal_dcg"),
        &[],
        Mean,
        Gains,
        &[],
        "DCG of the ideal ranking.",
        "DCG of the judged documents sorted by gain",
        |m, q| trec::ndcg::ideal_dcg(q, m.gains())
    ),
    spec!(
        NDCG,
        "nDCG",
        "nDCG(gains={l:g,...})",
        Some("ndcg"),
        &[],
        Mean,
        Gains,
        &[],
        "Normalized DCG over the whole ranking (gain = level unless mapped).",
        "DCG / IDCG",
        |m, q| trec::ndcg::ndcg(q, m.gains())
    ),
    spec!(
        NDCGRel,
        "nDCGRel",
        "nDCGRel(gains={l:g,...})",
        Some("ndcg_rel"),
        &[],
        Mean,
        Gains,
        &[],
        "nDCG averaged over the relevant documents.",
        "mean over relevant d of nDCG at d's rank (final nDCG if not retrieved)",
        |m, q| trec::ndcg_rel::ndcg_rel(q, m.gains())
    ),
    spec!(
        RnDCG,
        "RnDCG",
        "RnDCG(gains={l:g,...})",
        Some("Rndcg"),
        &[],
        Mean,
        Gains,
        &[],
        "nDCG averaged over the ideal ranking's level boundaries.",
        "mean of nDCG at each rank where the ideal gain changes",
        |m, q| trec::rndcg::rndcg(q, m.gains())
    ),
    spec!(
        NDCGCut,
        "nDCG",
        "nDCG@k",
        Some("ndcg_cut"),
        &[],
        Mean,
        AtRank,
        CUTOFFS,
        "Normalized DCG of the first k ranks (gain = judged level).",
        "DCG@k / IDCG@k, DCG@k = sum over i <= k of rel(i) / log2(i + 1)",
        |m, q| trec::ndcg_cut::ndcg_at(q, m.rank())
    ),
    spec!(
        APCut,
        "AP",
        "AP@k",
        Some("map_cut"),
        &["MAP"],
        Mean,
        AtRank,
        CUTOFFS,
        "Average precision of the first k ranks.",
        "sum over relevant ranks i <= k of P@i, / R",
        |m, q| trec::ap::average_precision_at(q, m.rank())
    ),
    spec!(
        RelP,
        "RelP",
        "RelP@k",
        Some("relative_P"),
        &[],
        Mean,
        AtRank,
        CUTOFFS,
        "Precision at k relative to the best possible.",
        "|relevant in top k| / min(k, R)",
        |m, q| trec::precision::relative_precision_at(q, m.rank())
    ),
    spec!(
        Success,
        "Success",
        "Success@k",
        Some("success"),
        &[],
        Mean,
        AtRank,
        &[1.0, 5.0, 10.0],
        "Whether a relevant document is in the first k ranks.",
        "1 if |relevant in top k| > 0 else 0",
        |m, q| trec::success::success_at(q, m.rank())
    ),
    spec!(
        SetP,
        "SetP",
        "SetP",
        Some("set_P"),
        &[],
        Mean,
        Plain,
        &[],
        "Precision of the retrieved set.",
        "relret / ret",
        |_, q| trec::set::set_precision(q)
    ),
    spec!(
        SetRelP,
        "SetRelP",
        "SetRelP",
        Some("set_relative_P"),
        &[],
        Mean,
        Plain,
        &[],
        "Set precision relative to the best possible.",
        "relret / min(ret, R)",
        |_, q| trec::set::set_relative_precision(q)
    ),
    spec!(
        SetR,
        "SetR",
        "SetR",
        Some("set_recall"),
        &[],
        Mean,
        Plain,
        &[],
        "Recall of the retrieved set.",
        "relret / R",
        |_, q| trec::set::set_recall(q)
    ),
    spec!(
        SetAP,
        "SetAP",
        "SetAP",
        Some("set_map"),
        &[],
        Mean,
        Plain,
        &[],
        "Set precision times set recall.",
        "SetP * SetR",
        |_, q| trec::set::set_map(q)
    ),
    spec!(
        SetF,
        "SetF",
        "SetF(beta2=1)",
        Some("set_F"),
        &[],
        Mean,
        Beta2,
        &[1.0],
        "F measure of the retrieved set (beta2 = weight of recall, default 1).",
        "(beta2 + 1) * SetP * SetR / (beta2 * SetP + SetR)",
        |m, q| trec::set::set_f(q, m.value())
    ),
    spec!(
        NumNonRelJudgedRet,
        "NumNonRelJudgedRet",
        "NumNonRelJudgedRet",
        Some("num_nonrel_judged_ret"),
        &[],
        Sum,
        Plain,
        &[],
        "Number of judged non-relevant documents retrieved.",
        "|{retrieved d : 0 <= rel(d) < level}|; summary = sum",
        |_, q| trec::counts::num_nonrel_judged_ret(q)
    ),
    spec!(
        RBP,
        "RBP",
        "RBP(p=0.9,gains={l:g,...})",
        Some("rbp"),
        &[],
        Mean,
        Rbp,
        &[],
        "Rank-biased precision with persistence p (gains rescaled to [0,1]).",
        "(1 - p) * sum over ranks i of g(i) * p^(i-1)",
        |m, q| trec::rbp::rbp(q, m.persistence(), m.gains())
    ),
    spec!(
        RBPResid,
        "RBPResid",
        "RBPResid(p=0.9)",
        Some("rbp_resid"),
        &[],
        Mean,
        Persistence,
        &[],
        "RBP residual: how much unjudged documents could add.",
        "p^n + (1 - p) * sum over unjudged ranks i of p^(i-1) (0 if none unjudged)",
        |m, q| trec::rbp::rbp_resid(q, m.persistence())
    ),
    spec!(
        Unjudged,
        "Unjudged",
        "Unjudged@k",
        Some("unj"),
        &[],
        Mean,
        AtRank,
        &[5.0, 10.0, 20.0],
        "Share of the first k ranks that are not judged.",
        "|unjudged in top k| / k",
        |m, q| trec::unjudged::unjudged_at(q, m.rank())
    ),
    spec!(
        RRCut,
        "RR",
        "RR@k",
        None,
        &["MRR"],
        Mean,
        AtRank,
        &[],
        "Reciprocal rank within the first k ranks (not in trec_eval; ir_measures' RR@k).",
        "1 / rank of first relevant if <= k, else 0",
        |m, q| trec::rr::reciprocal_rank_at(q, m.rank())
    ),
];

/// The registry table, in trec_eval's output order.
pub fn registry() -> &'static [MeasureSpec] {
    REGISTRY
}

/// The registry row of a family.
pub fn spec(family: Family) -> &'static MeasureSpec {
    // The table holds one row per family, in the order of the enum.
    &REGISTRY[family as usize]
}

/// The parameter values of a measure.
#[derive(Clone, Debug, PartialEq)]
enum Param {
    None,
    Rank(u64),
    Value(f64),
    Gains(Vec<(i64, f64)>),
    Rbp { p: f64, gains: Vec<(i64, f64)> },
    Utility([f64; 4]),
    Levels(Vec<f64>),
}

/// A retrieval measure with its parameters, e.g. `nDCG@10`. See the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Measure {
    family: Family,
    param: Param,
}

/// Why a measure name was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MeasureError {
    /// No measure has this name.
    #[error("unknown measure '{name}'; known measures: {known}")]
    Unknown {
        /// The name given.
        name: String,
        /// The known names, comma separated.
        known: String,
    },
    /// The name is known but its parameters are not acceptable.
    #[error("measure '{name}': {message}")]
    Invalid {
        /// The name given.
        name: String,
        /// What is wrong.
        message: String,
    },
}

impl MeasureError {
    fn unknown(name: &str) -> Self {
        MeasureError::Unknown {
            name: name.to_string(),
            known: known_names(),
        }
    }

    fn invalid(name: &str, message: impl Into<String>) -> Self {
        MeasureError::Invalid {
            name: name.to_string(),
            message: message.into(),
        }
    }
}

/// Canonical syntax and trec name of every measure, for error messages.
pub fn known_names() -> String {
    REGISTRY
        .iter()
        .map(|s| match s.trec {
            Some(t) => format!("{} ({t})", s.syntax),
            None => s.syntax.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Measure {
    fn new(family: Family, param: Param) -> Measure {
        Measure { family, param }
    }

    /// `R@k`: recall at rank k (trec `recall.k`). For this and the other `*_at`
    /// constructors, k = 0 is taken as 1.
    pub fn recall_at(k: u32) -> Measure {
        Measure::new(Family::R, Param::Rank(u64::from(k.max(1))))
    }

    /// `P@k`: precision at rank k (trec `P.k`).
    pub fn precision_at(k: u32) -> Measure {
        Measure::new(Family::P, Param::Rank(u64::from(k.max(1))))
    }

    /// `RR@k`: reciprocal rank within the first k ranks (ir_measures' RR@k).
    pub fn reciprocal_rank_at(k: u32) -> Measure {
        Measure::new(Family::RRCut, Param::Rank(u64::from(k.max(1))))
    }

    /// `nDCG@k` (trec `ndcg_cut.k`).
    pub fn ndcg_at(k: u32) -> Measure {
        Measure::new(Family::NDCGCut, Param::Rank(u64::from(k.max(1))))
    }

    /// `AP@k` (trec `map_cut.k`; the denominator is the number of relevant documents).
    pub fn average_precision_at(k: u32) -> Measure {
        Measure::new(Family::APCut, Param::Rank(u64::from(k.max(1))))
    }

    /// `Success@k` (trec `success.k`).
    pub fn success_at(k: u32) -> Measure {
        Measure::new(Family::Success, Param::Rank(u64::from(k.max(1))))
    }

    /// The measure of a family that takes no parameter, or its default parameters (`AP`,
    /// `nDCG`, `RBP(p=0.9)`, `Utility`, `11ptAvg`); `None` for families that need a
    /// cut-off (`P`, `IPrec`...).
    pub fn of(family: Family) -> Option<Measure> {
        let param = match spec(family).params {
            Syntax::Plain => Param::None,
            Syntax::AtRank | Syntax::AtValue => return None,
            Syntax::Gains => Param::Gains(Vec::new()),
            Syntax::Rbp | Syntax::Persistence => Param::Rbp {
                p: DEFAULT_RBP_P,
                gains: Vec::new(),
            },
            Syntax::Beta2 => Param::Value(1.0),
            Syntax::Utility => Param::Utility(DEFAULT_UTILITY),
            Syntax::Levels => Param::Levels(RECALL_LEVELS.to_vec()),
        };
        Some(Measure::new(family, param))
    }

    /// A family that takes a rank cut-off, at rank `k` (> 0).
    pub fn at_rank(family: Family, k: u64) -> Result<Measure, MeasureError> {
        let s = spec(family);
        if s.params != Syntax::AtRank {
            return Err(MeasureError::invalid(s.name, "takes no rank cut-off"));
        }
        if k == 0 {
            return Err(MeasureError::invalid(
                s.name,
                "the cut-off must be at least 1",
            ));
        }
        Ok(Measure::new(family, Param::Rank(k)))
    }

    /// A family that takes a number (`IPrec@x`, `RprecMult@x`, `SetF(beta2=x)`).
    pub fn at_value(family: Family, x: f64) -> Result<Measure, MeasureError> {
        let s = spec(family);
        if !matches!(s.params, Syntax::AtValue | Syntax::Beta2) {
            return Err(MeasureError::invalid(s.name, "takes no numeric parameter"));
        }
        if !x.is_finite() {
            return Err(MeasureError::invalid(
                s.name,
                "the parameter must be a finite number",
            ));
        }
        Ok(Measure::new(family, Param::Value(x)))
    }

    /// A graded family (`nDCG`, `DCG`, `IDCG`, `nDCGRel`, `RnDCG`, `G`, `RBP`) with a gain
    /// mapping `(level, gain)`, kept in the given order.
    pub fn with_gains(family: Family, gains: Vec<(i64, f64)>) -> Result<Measure, MeasureError> {
        let s = spec(family);
        validate_gains(s.name, &gains)?;
        match s.params {
            Syntax::Gains => Ok(Measure::new(family, Param::Gains(gains))),
            Syntax::Rbp => Ok(Measure::new(
                family,
                Param::Rbp {
                    p: DEFAULT_RBP_P,
                    gains,
                },
            )),
            _ => Err(MeasureError::invalid(s.name, "takes no gains")),
        }
    }

    /// `RBP(p=...)` or `RBPResid(p=...)` with persistence `p` and gains (RBP only).
    pub fn rbp(family: Family, p: f64, gains: Vec<(i64, f64)>) -> Result<Measure, MeasureError> {
        let s = spec(family);
        // RBP weighs rank i by (1 - p) p^(i-1): outside (0, 1) the weights are negative or
        // grow with depth (p = 1.5 gave RBP -26.12), so such a p is no persistence at all.
        if !(p > 0.0 && p < 1.0) {
            return Err(MeasureError::invalid(
                s.name,
                format!("p must be in (0, 1), got {p}"),
            ));
        }
        validate_gains(s.name, &gains)?;
        match s.params {
            Syntax::Rbp => Ok(Measure::new(family, Param::Rbp { p, gains })),
            Syntax::Persistence if gains.is_empty() => {
                Ok(Measure::new(family, Param::Rbp { p, gains }))
            }
            _ => Err(MeasureError::invalid(s.name, "takes no persistence/gains")),
        }
    }

    /// `Utility(a=..,b=..,c=..,d=..)`.
    pub fn utility(coefficients: [f64; 4]) -> Result<Measure, MeasureError> {
        if coefficients.iter().any(|c| !c.is_finite()) {
            return Err(MeasureError::invalid(
                "Utility",
                "coefficients must be finite",
            ));
        }
        Ok(Measure::new(Family::Utility, Param::Utility(coefficients)))
    }

    /// `11ptAvg(levels={...})` over the given recall levels (at least one).
    pub fn eleven_point_average(levels: Vec<f64>) -> Result<Measure, MeasureError> {
        if levels.is_empty() || levels.iter().any(|c| !c.is_finite()) {
            return Err(MeasureError::invalid(
                "11ptAvg",
                "needs at least one finite recall level",
            ));
        }
        Ok(Measure::new(Family::ElevenPtAvg, Param::Levels(levels)))
    }

    /// The family (registry row).
    pub fn family(&self) -> Family {
        self.family
    }

    /// The registry row.
    pub fn spec(&self) -> &'static MeasureSpec {
        spec(self.family)
    }

    /// How per-query values combine into a summary.
    pub fn aggregate(&self) -> Aggregate {
        self.spec().aggregate
    }

    /// The per-query value.
    pub fn compute(&self, q: &ResRels) -> f64 {
        (self.spec().compute)(self, q)
    }

    /// The rank cut-off (families written `X@k`), else 0.
    pub fn rank(&self) -> u64 {
        match self.param {
            Param::Rank(k) => k,
            _ => 0,
        }
    }

    /// The numeric parameter (`IPrec@x`, `RprecMult@x`, `SetF(beta2=x)`), else 0.
    pub fn value(&self) -> f64 {
        match self.param {
            Param::Value(x) => x,
            _ => 0.0,
        }
    }

    /// The gain mapping of a graded measure (empty: gains are the levels).
    pub fn gains(&self) -> &[(i64, f64)] {
        match &self.param {
            Param::Gains(g) | Param::Rbp { gains: g, .. } => g,
            _ => &[],
        }
    }

    /// RBP persistence (0.9 unless given).
    pub fn persistence(&self) -> f64 {
        match self.param {
            Param::Rbp { p, .. } => p,
            _ => DEFAULT_RBP_P,
        }
    }

    /// Utility coefficients (a, b, c, d).
    pub fn utility_coefficients(&self) -> [f64; 4] {
        match self.param {
            Param::Utility(c) => c,
            _ => DEFAULT_UTILITY,
        }
    }

    /// Recall levels of 11ptAvg.
    pub fn levels(&self) -> &[f64] {
        match &self.param {
            Param::Levels(l) => l,
            _ => RECALL_LEVELS,
        }
    }

    /// The same measure as a trec_eval `-m` argument (`ndcg_cut.10`, `map`,
    /// `ndcg.1=3,2=9`), if trec_eval has it.
    pub fn trec_arg(&self) -> Option<String> {
        let trec = self.spec().trec?;
        let params = match &self.param {
            Param::None => None,
            Param::Rank(k) => Some(k.to_string()),
            Param::Value(x) => Some(x.to_string()),
            Param::Gains(g) if g.is_empty() => None,
            Param::Gains(g) => Some(trec_pairs(g)),
            Param::Rbp { p, gains } => {
                let mut s = format!("p={p}");
                if !gains.is_empty() {
                    s.push(',');
                    s.push_str(&trec_pairs(gains));
                }
                Some(s)
            }
            Param::Utility(c) => Some(join(c, ",")),
            Param::Levels(l) => Some(join(l, ",")),
        };
        Some(match params {
            Some(p) => format!("{trec}.{p}"),
            None => trec.to_string(),
        })
    }
}

fn validate_gains(name: &str, gains: &[(i64, f64)]) -> Result<(), MeasureError> {
    if gains.iter().any(|(_, g)| !g.is_finite()) {
        return Err(MeasureError::invalid(name, "gains must be finite numbers"));
    }
    for (i, (l, _)) in gains.iter().enumerate() {
        if gains[..i].iter().any(|(m, _)| m == l) {
            return Err(MeasureError::invalid(
                name,
                format!("level {l} is mapped twice"),
            ));
        }
    }
    Ok(())
}

fn trec_pairs(g: &[(i64, f64)]) -> String {
    g.iter()
        .map(|(l, v)| format!("{l}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn join(values: &[f64], sep: &str) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.spec().name;
        match &self.param {
            Param::None => f.write_str(name),
            Param::Rank(k) => write!(f, "{name}@{k}"),
            Param::Value(x) if self.spec().params == Syntax::Beta2 => {
                if *x == 1.0 {
                    f.write_str(name)
                } else {
                    write!(f, "{name}(beta2={x})")
                }
            }
            Param::Value(x) => write!(f, "{name}@{x}"),
            Param::Gains(g) if g.is_empty() => f.write_str(name),
            Param::Gains(g) => write!(f, "{name}(gains={})", braces_pairs(g)),
            Param::Rbp { p, gains } if gains.is_empty() => write!(f, "{name}(p={p})"),
            Param::Rbp { p, gains } => write!(f, "{name}(p={p},gains={})", braces_pairs(gains)),
            Param::Utility(c) if *c == DEFAULT_UTILITY => f.write_str(name),
            Param::Utility(c) => write!(f, "{name}(a={},b={},c={},d={})", c[0], c[1], c[2], c[3]),
            Param::Levels(l) if l.as_slice() == RECALL_LEVELS => f.write_str(name),
            Param::Levels(l) => write!(f, "{name}(levels={{{}}})", join(l, ",")),
        }
    }
}

fn braces_pairs(g: &[(i64, f64)]) -> String {
    let inner = g
        .iter()
        .map(|(l, v)| format!("{l}:{v}"))
        .collect::<Vec<_>>()
        .join(",");
    format!("{{{inner}}}")
}

impl FromStr for Measure {
    type Err = MeasureError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse::parse(s.trim())
    }
}

/// Looks a name up among canonical names, aliases and trec names (case-insensitive), keeping
/// the rows whose syntax passes `accept`.
fn lookup(name: &str, accept: impl Fn(&MeasureSpec) -> bool) -> Option<&'static MeasureSpec> {
    let matches = |s: &MeasureSpec| {
        s.name.eq_ignore_ascii_case(name)
            || s.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
            || s.trec.is_some_and(|t| t.eq_ignore_ascii_case(name))
    };
    REGISTRY.iter().find(|s| matches(s) && accept(s))
}

/// The registry row whose trec_eval name is exactly `name`.
pub fn by_trec_name(name: &str) -> Option<&'static MeasureSpec> {
    REGISTRY.iter().find(|s| s.trec == Some(name))
}

/// Parsing of measure names and of trec_eval parameter lists (shared with `veredicto trec`).
pub mod parse {
    use super::*;

    pub(super) fn parse(s: &str) -> Result<Measure, MeasureError> {
        if s.is_empty() {
            return Err(MeasureError::unknown(s));
        }
        if let Some(open) = s.find('(') {
            return parse_call(s, open);
        }
        if let Some((name, cut)) = s.split_once('@') {
            return parse_at(s, name.trim(), cut.trim());
        }
        if let Some(spec) = lookup(s, |sp| {
            !matches!(sp.params, Syntax::AtRank | Syntax::AtValue)
        }) {
            if let Some(m) = Measure::of(spec.family) {
                return Ok(m);
            }
        }
        if let Some(spec) = lookup(s, |_| true) {
            return Err(MeasureError::invalid(
                s,
                format!("needs a parameter: {}", spec.syntax),
            ));
        }
        if let Some((name, params)) = s.split_once('.') {
            if let Some(spec) = by_trec_name(name) {
                return from_trec_params(s, spec, params);
            }
        }
        // trec_eval's printed form: name_params, with the longest trec name that fits.
        let printed = REGISTRY
            .iter()
            .filter_map(|sp| {
                let t = sp.trec?;
                let rest = s.strip_prefix(t)?.strip_prefix('_')?;
                Some((t.len(), sp, rest))
            })
            .max_by_key(|(len, _, _)| *len);
        if let Some((_, spec, params)) = printed {
            return from_trec_params(s, spec, params);
        }
        Err(MeasureError::unknown(s))
    }

    fn parse_at(s: &str, name: &str, cut: &str) -> Result<Measure, MeasureError> {
        let spec = lookup(name, |sp| {
            matches!(sp.params, Syntax::AtRank | Syntax::AtValue)
        })
        .ok_or_else(|| match lookup(name, |_| true) {
            Some(sp) => MeasureError::invalid(s, format!("takes no cut-off: {}", sp.syntax)),
            None => MeasureError::unknown(s),
        })?;
        match spec.params {
            Syntax::AtRank => {
                let k: u64 = cut.parse().map_err(|_| {
                    MeasureError::invalid(s, format!("cut-off must be a whole number: '{cut}'"))
                })?;
                Measure::at_rank(spec.family, k).map_err(|e| rename(e, s))
            }
            _ => {
                let x = number(s, cut)?;
                Measure::at_value(spec.family, x).map_err(|e| rename(e, s))
            }
        }
    }

    fn rename(e: MeasureError, s: &str) -> MeasureError {
        match e {
            MeasureError::Invalid { message, .. } => MeasureError::invalid(s, message),
            other => other,
        }
    }

    fn number(s: &str, text: &str) -> Result<f64, MeasureError> {
        match text.trim().parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(MeasureError::invalid(s, format!("not a number: '{text}'"))),
        }
    }

    /// Splits `a=1,b={x,y},c=2` at top-level commas.
    fn split_top(text: &str) -> Vec<&str> {
        let mut parts = Vec::new();
        let mut depth = 0i32;
        let mut start = 0;
        for (i, c) in text.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&text[start..]);
        parts
    }

    fn parse_call(s: &str, open: usize) -> Result<Measure, MeasureError> {
        let name = s[..open].trim();
        let rest = &s[open + 1..];
        let close = rest
            .rfind(')')
            .ok_or_else(|| MeasureError::invalid(s, "missing ')'"))?;
        let args = &rest[..close];
        let tail = rest[close + 1..].trim();
        if !tail.is_empty() {
            return Err(MeasureError::invalid(
                s,
                format!("unexpected '{tail}' after the parameters"),
            ));
        }
        let spec = lookup(name, |sp| {
            !matches!(sp.params, Syntax::Plain | Syntax::AtRank | Syntax::AtValue)
        })
        .ok_or_else(|| match lookup(name, |_| true) {
            Some(sp) => MeasureError::invalid(s, format!("takes no parameters: {}", sp.syntax)),
            None => MeasureError::unknown(s),
        })?;
        let mut p: Option<f64> = None;
        let mut gains: Option<Vec<(i64, f64)>> = None;
        let mut beta2: Option<f64> = None;
        let mut coef: [Option<f64>; 4] = [None; 4];
        let mut levels: Option<Vec<f64>> = None;
        let args = args.trim();
        let parts = if args.is_empty() {
            Vec::new()
        } else {
            split_top(args)
        };
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| MeasureError::invalid(s, format!("expected key=value: '{part}'")))?;
            let (key, value) = (key.trim(), value.trim());
            let allowed = match (spec.params, key) {
                (Syntax::Gains | Syntax::Rbp, "gains") => {
                    gains = Some(brace_pairs(s, value)?);
                    true
                }
                (Syntax::Rbp | Syntax::Persistence, "p") => {
                    p = Some(number(s, value)?);
                    true
                }
                (Syntax::Beta2, "beta2") => {
                    beta2 = Some(number(s, value)?);
                    true
                }
                (Syntax::Utility, "a" | "b" | "c" | "d") => {
                    let i = usize::from(key.as_bytes()[0] - b'a');
                    coef[i] = Some(number(s, value)?);
                    true
                }
                (Syntax::Levels, "levels") => {
                    levels = Some(brace_list(s, value)?);
                    true
                }
                _ => false,
            };
            if !allowed {
                return Err(MeasureError::invalid(
                    s,
                    format!("unknown parameter '{key}'; syntax: {}", spec.syntax),
                ));
            }
        }
        let m = match spec.params {
            Syntax::Gains => Measure::with_gains(spec.family, gains.unwrap_or_default()),
            Syntax::Rbp | Syntax::Persistence => Measure::rbp(
                spec.family,
                p.unwrap_or(DEFAULT_RBP_P),
                gains.unwrap_or_default(),
            ),
            Syntax::Beta2 => Measure::at_value(spec.family, beta2.unwrap_or(1.0)),
            Syntax::Utility => Measure::utility([
                coef[0].unwrap_or(DEFAULT_UTILITY[0]),
                coef[1].unwrap_or(DEFAULT_UTILITY[1]),
                coef[2].unwrap_or(DEFAULT_UTILITY[2]),
                coef[3].unwrap_or(DEFAULT_UTILITY[3]),
            ]),
            Syntax::Levels => {
                Measure::eleven_point_average(levels.unwrap_or_else(|| RECALL_LEVELS.to_vec()))
            }
            Syntax::Plain | Syntax::AtRank | Syntax::AtValue => Err(MeasureError::unknown(s)),
        };
        m.map_err(|e| rename(e, s))
    }

    fn braces<'a>(s: &str, value: &'a str) -> Result<&'a str, MeasureError> {
        value
            .strip_prefix('{')
            .and_then(|v| v.strip_suffix('}'))
            .ok_or_else(|| MeasureError::invalid(s, format!("expected {{...}}: '{value}'")))
    }

    fn brace_pairs(s: &str, value: &str) -> Result<Vec<(i64, f64)>, MeasureError> {
        let inner = braces(s, value)?.trim();
        if inner.is_empty() {
            return Ok(Vec::new());
        }
        inner
            .split(',')
            .map(|pair| {
                let (l, g) = pair.split_once(':').ok_or_else(|| {
                    MeasureError::invalid(s, format!("expected level:gain: '{pair}'"))
                })?;
                let l: i64 = l.trim().parse().map_err(|_| {
                    MeasureError::invalid(s, format!("level must be a whole number: '{l}'"))
                })?;
                Ok((l, number(s, g)?))
            })
            .collect()
    }

    fn brace_list(s: &str, value: &str) -> Result<Vec<f64>, MeasureError> {
        braces(s, value)?.split(',').map(|x| number(s, x)).collect()
    }

    /// The values of a trec_eval parameter list (the text after the first `.` of `-m`).
    #[derive(Clone, Debug, PartialEq)]
    pub enum TrecParams {
        /// Rank cut-offs, sorted ascending (`P.5,10`).
        Ranks(Vec<u64>),
        /// Numeric cut-offs, sorted ascending (`iprec_at_recall.0.1,0.2`).
        Values(Vec<f64>),
        /// Numbers in the given order (`utility.2,-1,0,0`).
        Numbers(Vec<f64>),
        /// `name=value` pairs (`ndcg.1=3,2=9`, `rbp.p=0.8`): gains and persistence.
        Pairs {
            /// Persistence, if a `p=` pair was given (the last one counts).
            p: Option<f64>,
            /// Integer-named pairs, in order.
            gains: Vec<(i64, f64)>,
        },
    }

    /// Parses a trec_eval parameter list for a family as trec_eval does: rank cut-offs are
    /// truncated to whole numbers (`23.4` is 23), must be positive and distinct, and are
    /// sorted; numeric cut-offs are sorted and must be distinct; other lists keep their order.
    /// Unlike trec_eval (which reads bad numbers as 0), a number that does not parse is an
    /// error.
    pub fn trec_params(
        name: &str,
        spec: &MeasureSpec,
        params: &str,
    ) -> Result<TrecParams, MeasureError> {
        if params.is_empty() {
            return Err(MeasureError::invalid(name, "empty parameter list"));
        }
        let items: Vec<&str> = params.split(',').collect();
        match spec.params {
            Syntax::Plain => Err(MeasureError::invalid(name, "takes no parameters")),
            Syntax::AtRank => {
                let mut ks = Vec::with_capacity(items.len());
                for it in &items {
                    ks.push(trec_long(name, it)?);
                }
                ks.sort_unstable();
                if ks.first().is_some_and(|&k| k <= 0) {
                    return Err(MeasureError::invalid(name, "cut-offs must be positive"));
                }
                if ks.windows(2).any(|w| w[0] == w[1]) {
                    return Err(MeasureError::invalid(name, "duplicate cut-offs"));
                }
                Ok(TrecParams::Ranks(
                    ks.into_iter().map(|k| k as u64).collect(),
                ))
            }
            Syntax::AtValue => {
                let mut xs = items
                    .iter()
                    .map(|x| number(name, x))
                    .collect::<Result<Vec<f64>, _>>()?;
                xs.sort_by(f64::total_cmp);
                if xs.windows(2).any(|w| w[0] == w[1]) {
                    return Err(MeasureError::invalid(name, "duplicate cut-offs"));
                }
                Ok(TrecParams::Values(xs))
            }
            Syntax::Beta2 | Syntax::Utility | Syntax::Levels => {
                let xs = items
                    .iter()
                    .map(|x| number(name, x))
                    .collect::<Result<Vec<f64>, _>>()?;
                if spec.params == Syntax::Utility && xs.len() != 4 {
                    return Err(MeasureError::invalid(
                        name,
                        format!("needs 4 coefficients, got {}", xs.len()),
                    ));
                }
                if spec.params == Syntax::Beta2 && xs.len() != 1 {
                    return Err(MeasureError::invalid(name, "takes one number"));
                }
                Ok(TrecParams::Numbers(xs))
            }
            Syntax::Gains | Syntax::Rbp | Syntax::Persistence => {
                let mut p = None;
                let mut gains = Vec::new();
                for it in &items {
                    let (k, v) = it.split_once('=').ok_or_else(|| {
                        MeasureError::invalid(name, format!("malformed pair parameter '{it}'"))
                    })?;
                    let v = number(name, v)?;
                    if k == "p" && spec.params != Syntax::Gains {
                        p = Some(v);
                    } else if spec.params != Syntax::Persistence && is_int(k) {
                        let l: i64 = k.parse().map_err(|_| {
                            MeasureError::invalid(name, format!("level out of range: '{k}'"))
                        })?;
                        gains.push((l, v));
                    } else {
                        return Err(MeasureError::invalid(
                            name,
                            format!("unknown parameter '{k}' (expected level=gain or p=value)"),
                        ));
                    }
                }
                Ok(TrecParams::Pairs { p, gains })
            }
        }
    }

    fn is_int(k: &str) -> bool {
        let d = k.strip_prefix(['-', '+']).unwrap_or(k);
        !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
    }

    /// A rank cut-off as `atol` reads it, but strictly: digits, optionally followed by a
    /// fraction that is dropped.
    fn trec_long(name: &str, text: &str) -> Result<i64, MeasureError> {
        let t = text.trim();
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        let digits = int.strip_prefix(['-', '+']).unwrap_or(int);
        let ok = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && frac.bytes().all(|b| b.is_ascii_digit());
        if !ok {
            return Err(MeasureError::invalid(
                name,
                format!("cut-off must be a whole number: '{text}'"),
            ));
        }
        int.parse()
            .map_err(|_| MeasureError::invalid(name, format!("cut-off out of range: '{text}'")))
    }

    /// The measures a trec_eval parameter list names, one per cut-off.
    pub fn measures_from_trec(
        name: &str,
        spec: &MeasureSpec,
        params: &TrecParams,
    ) -> Result<Vec<Measure>, MeasureError> {
        let family = spec.family;
        match params {
            TrecParams::Ranks(ks) => ks.iter().map(|&k| Measure::at_rank(family, k)).collect(),
            TrecParams::Values(xs) => xs.iter().map(|&x| Measure::at_value(family, x)).collect(),
            TrecParams::Numbers(xs) => match spec.params {
                Syntax::Utility => {
                    let c: [f64; 4] = xs
                        .as_slice()
                        .try_into()
                        .map_err(|_| MeasureError::invalid(name, "needs 4 coefficients"))?;
                    Ok(vec![Measure::utility(c)?])
                }
                Syntax::Beta2 => Ok(vec![Measure::at_value(family, xs[0])?]),
                _ => Ok(vec![Measure::eleven_point_average(xs.clone())?]),
            },
            TrecParams::Pairs { p, gains } => match spec.params {
                Syntax::Gains => Ok(vec![Measure::with_gains(family, gains.clone())?]),
                _ => Ok(vec![Measure::rbp(
                    family,
                    p.unwrap_or(DEFAULT_RBP_P),
                    gains.clone(),
                )?]),
            },
        }
    }

    fn from_trec_params(
        s: &str,
        spec: &'static MeasureSpec,
        params: &str,
    ) -> Result<Measure, MeasureError> {
        let p = trec_params(s, spec, params)?;
        let mut ms = measures_from_trec(s, spec, &p).map_err(|e| rename(e, s))?;
        if ms.len() != 1 {
            let names: Vec<String> = ms.iter().map(|m| m.to_string()).collect();
            return Err(MeasureError::invalid(
                s,
                format!(
                    "names {} measures ({}); give one",
                    ms.len(),
                    names.join(", ")
                ),
            ));
        }
        Ok(ms.remove(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_rows_follow_the_enum() {
        for (i, s) in REGISTRY.iter().enumerate() {
            assert_eq!(s.family as usize, i, "{}", s.name);
        }
    }

    #[test]
    fn canonical_names_round_trip() {
        for name in [
            "AP",
            "AP@10",
            "nDCG",
            "nDCG@10",
            "P@5",
            "R@100",
            "RR",
            "RR@10",
            "IPrec@0.5",
            "RBP(p=0.9)",
            "RBP(p=0.8,gains={1:3})",
            "nDCG(gains={1:3,2:9,4:4.5})",
            "SetF",
            "SetF(beta2=0.25)",
            "Utility",
            "Utility(a=2,b=-1,c=0,d=0)",
            "11ptAvg",
            "11ptAvg(levels={0.25,0.5,0.75})",
            "RprecMult@0.2",
            "Success@1",
            "NumQ",
            "GMAP",
            "RBPResid(p=0.9)",
            "Unjudged@10",
            "RelP@5",
        ] {
            let m: Measure = name.parse().unwrap();
            assert_eq!(m.to_string(), name);
        }
    }

    #[test]
    fn trec_names_map_in() {
        let cases = [
            ("ndcg_cut.10", "nDCG@10"),
            ("ndcg_cut_10", "nDCG@10"),
            ("ndcg_cut.23.4", "nDCG@23"),
            ("P_5", "P@5"),
            ("P.5", "P@5"),
            ("recip_rank", "RR"),
            ("map", "AP"),
            ("MAP", "AP"),
            ("map_cut.10", "AP@10"),
            ("recall.100", "R@100"),
            ("recall_100", "R@100"),
            ("iprec_at_recall_0.10", "IPrec@0.1"),
            ("iprec_at_recall..10", "IPrec@0.1"),
            ("Rprec_mult_0.20", "RprecMult@0.2"),
            ("ndcg.1=3,2=9", "nDCG(gains={1:3,2:9})"),
            ("ndcg_1=3,2=9,4=4.5", "nDCG(gains={1:3,2:9,4:4.5})"),
            ("rbp.p=0.95", "RBP(p=0.95)"),
            ("rbp", "RBP(p=0.9)"),
            ("utility.2,-1,0,0", "Utility(a=2,b=-1,c=0,d=0)"),
            ("11pt_avg..25,.5,.75", "11ptAvg(levels={0.25,0.5,0.75})"),
            ("set_F.0.5", "SetF(beta2=0.5)"),
            ("num_rel_ret", "NumRelRet"),
            ("success_1", "Success@1"),
            ("gm_map", "GMAP"),
            ("ndcg", "nDCG"),
            ("NDCG@10", "nDCG@10"),
            ("mrr@10", "RR@10"),
        ];
        for (trec, canonical) in cases {
            let m: Measure = trec.parse().unwrap_or_else(|e| panic!("{trec}: {e}"));
            assert_eq!(m.to_string(), canonical, "{trec}");
        }
    }

    /// `-m rbp.p=1.5` was accepted and printed RBP -26.12.
    #[test]
    fn rbp_persistence_outside_zero_one_is_refused() {
        for bad in [
            "rbp.p=1.5",
            "rbp.p=1",
            "rbp.p=0",
            "rbp.p=-0.5",
            "rbp_resid.p=2",
            "RBP(p=1.5)",
            "rbp.p=nan",
        ] {
            let e = bad.parse::<Measure>().expect_err(bad).to_string();
            assert!(e.contains("(0, 1)") || e.contains("p="), "{bad}: {e}");
        }
        assert!("rbp.p=0.999".parse::<Measure>().is_ok());
    }

    #[test]
    fn bad_names_explain() {
        let e = "nope".parse::<Measure>().unwrap_err().to_string();
        assert!(e.contains("known measures") && e.contains("nDCG@k"), "{e}");
        let e = "P".parse::<Measure>().unwrap_err().to_string();
        assert!(e.contains("P@k"), "{e}");
        assert!("P.5,10"
            .parse::<Measure>()
            .unwrap_err()
            .to_string()
            .contains("2 measures"));
        assert!("P@0".parse::<Measure>().is_err());
        assert!("P@x".parse::<Measure>().is_err());
        assert!("AP(p=1)".parse::<Measure>().is_err());
        assert!("utility.1,2".parse::<Measure>().is_err());
        assert!("nDCG(gains={1:2,1:3})".parse::<Measure>().is_err());
        assert!("IPrec@nan".parse::<Measure>().is_err());
    }

    #[test]
    fn trec_args() {
        let m: Measure = "nDCG@10".parse().unwrap();
        assert_eq!(m.trec_arg().as_deref(), Some("ndcg_cut.10"));
        assert_eq!(Measure::reciprocal_rank_at(10).trec_arg(), None);
        let m: Measure = "RBP(p=0.8,gains={1:2})".parse().unwrap();
        assert_eq!(m.trec_arg().as_deref(), Some("rbp.p=0.8,1=2"));
    }
}
