//! What `veredicto trec` prints: trec_eval's `-m` arguments resolved into a list of output
//! values ([`Plan`]), per-query evaluation ([`QueryEval`]), the summary ([`Summary`]) and the
//! output lines.
//!
//! Conventions, as trec_eval 10.0:
//! - Values are printed in trec_eval's measure-table order, whatever the order of `-m`.
//! - A measure named with parameters (`-m P.5,10`) uses the parameters of the first `-m` that
//!   names it; without parameters it uses trec_eval's defaults.
//! - Rank cut-offs print as `P_5`; numeric cut-offs with two decimals (`iprec_at_recall_0.10`,
//!   `Rprec_mult_0.20`); other parameterised names append the parameter text as given
//!   (`ndcg_1=3,2=9`, `utility_2,-1,0,0`).
//! - `num_q`, `gm_map` and `gm_bpref` print only in the summary; `relstring` and per-query
//!   values only with `-q`; `runid` (the run tag of the run file's last line) only in the
//!   summary.
//! - Summary: counts are summed, `num_q` counts queries, `gm_*` are geometric means (floor
//!   0.00001), everything else is the arithmetic mean over the evaluated queries. With `-c`
//!   the queries of the qrels that the run lacks are evaluated as a one-document ranking of a
//!   document nobody judged (then `num_ret`, `utility`, `relstring`, `unj_*` and `rbp_resid`,
//!   when printed under exactly those names, are reset to 0), and `num_rel` is the number of
//!   judgements with level > 0 in the whole qrels.
//! - Numbers print as C's `%6.4f` (round half to even on the exact binary value), counts as
//!   integers, names left-aligned in 22 columns.

use super::relstring::relstring;
use super::{EvalOptions, QueryQrels, ResRels};
use crate::measure::{
    self,
    parse::{measures_from_trec, trec_params},
    Aggregate, Family, Measure, MeasureError, Syntax,
};
use std::fmt::Write as _;

/// Why `-m` arguments were not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A measure name was recognised but its parameters were not.
    #[error(transparent)]
    Measure(#[from] MeasureError),
    /// No measure or measure set has this name.
    #[error("unknown measure '{name}'; known trec_eval measures: {known}; sets: {sets}; or a canonical name ({canonical})")]
    Unknown {
        /// The `-m` argument.
        name: String,
        /// trec_eval's measure names.
        known: String,
        /// trec_eval's measure sets.
        sets: String,
        /// Canonical names.
        canonical: String,
    },
    /// trec_eval has it, but only with a relevance format veredicto does not read.
    #[error("measure '{name}' is not supported: it needs trec_eval's -R prefs / qrels_prefs / qrels_jg input")]
    Unsupported {
        /// The `-m` argument.
        name: String,
    },
}

/// One entry of trec_eval's measure table.
#[derive(Clone, Copy, Debug)]
enum Entry {
    RunId,
    RelString,
    Family(Family),
}

/// trec_eval's measure table, in its output order (preference and judgement-group measures,
/// which need other input formats, are left out).
const TABLE: &[(&str, Entry)] = &[
    ("runid", Entry::RunId),
    ("num_q", Entry::Family(Family::NumQ)),
    ("num_ret", Entry::Family(Family::NumRet)),
    ("num_rel", Entry::Family(Family::NumRel)),
    ("num_rel_ret", Entry::Family(Family::NumRelRet)),
    ("map", Entry::Family(Family::AP)),
    ("gm_map", Entry::Family(Family::GMAP)),
    ("Rprec", Entry::Family(Family::Rprec)),
    ("bpref", Entry::Family(Family::Bpref)),
    ("recip_rank", Entry::Family(Family::RR)),
    ("iprec_at_recall", Entry::Family(Family::IPrec)),
    ("P", Entry::Family(Family::P)),
    ("relstring", Entry::RelString),
    ("recall", Entry::Family(Family::R)),
    ("infAP", Entry::Family(Family::InfAP)),
    ("gm_bpref", Entry::Family(Family::GMBpref)),
    ("Rprec_mult", Entry::Family(Family::RprecMult)),
    ("utility", Entry::Family(Family::Utility)),
    ("11pt_avg", Entry::Family(Family::ElevenPtAvg)),
    ("binG", Entry::Family(Family::BinG)),
    ("G", Entry::Family(Family::G)),
    ("dcg", Entry::Family(Family::DCG)),
    ("ideal_dcg", Entry::Family(Family::IDCG)),
    ("ndcg", Entry::Family(Family::NDCG)),
    ("ndcg_rel", Entry::Family(Family::NDCGRel)),
    ("Rndcg", Entry::Family(Family::RnDCG)),
    ("ndcg_cut", Entry::Family(Family::NDCGCut)),
    ("map_cut", Entry::Family(Family::APCut)),
    ("relative_P", Entry::Family(Family::RelP)),
    ("success", Entry::Family(Family::Success)),
    ("set_P", Entry::Family(Family::SetP)),
    ("set_relative_P", Entry::Family(Family::SetRelP)),
    ("set_recall", Entry::Family(Family::SetR)),
    ("set_map", Entry::Family(Family::SetAP)),
    ("set_F", Entry::Family(Family::SetF)),
    (
        "num_nonrel_judged_ret",
        Entry::Family(Family::NumNonRelJudgedRet),
    ),
    ("rbp", Entry::Family(Family::RBP)),
    ("rbp_resid", Entry::Family(Family::RBPResid)),
    ("unj", Entry::Family(Family::Unjudged)),
];

/// trec_eval's measure names that `-m` accepts, in its output order (what pytrec_eval calls
/// `supported_measures`).
pub fn measure_names() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|(name, _)| *name)
}

/// trec_eval's measure sets (`-m official` is the default).
pub const SETS: &[(&str, &[&str])] = &[
    (
        "official",
        &[
            "runid",
            "num_q",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "map",
            "gm_map",
            "Rprec",
            "bpref",
            "recip_rank",
            "iprec_at_recall",
            "P",
        ],
    ),
    (
        "set",
        &[
            "runid",
            "num_q",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "utility",
            "set_P",
            "set_recall",
            "set_relative_P",
            "set_map",
            "set_F",
        ],
    ),
    (
        "all_trec",
        &[
            "runid",
            "num_q",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "map",
            "gm_map",
            "Rprec",
            "bpref",
            "recip_rank",
            "iprec_at_recall",
            "P",
            "relstring",
            "recall",
            "unj",
            "rbp",
            "rbp_resid",
            "infAP",
            "gm_bpref",
            "utility",
            "11pt_avg",
            "ndcg",
            "relative_P",
            "Rprec_mult",
            "success",
            "map_cut",
            "ndcg_cut",
            "ndcg_rel",
            "Rndcg",
            "binG",
            "G",
            "set_P",
            "set_recall",
            "set_relative_P",
            "set_map",
            "set_F",
            "num_nonrel_judged_ret",
        ],
    ),
];

/// trec_eval measures and sets for preference or judgement-group input.
const UNSUPPORTED: &[&str] = &[
    "all_prefs",
    "prefs",
    "qrels_jg",
    "prefs_num_prefs_poss",
    "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret",
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
    "map_avgjg",
    "P_avgjg",
    "Rprec_mult_avgjg",
    "yaap",
];

/// How a value prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Print {
    /// As an integer (`%ld`).
    Long,
    /// As `%6.4f`.
    Double,
}

/// What an output slot holds.
#[derive(Clone, Debug, PartialEq)]
pub enum SlotKind {
    /// The run tag (summary only).
    RunId,
    /// The relevance string of the first `len` documents (per query only).
    RelString {
        /// Number of documents shown.
        len: i64,
    },
    /// A measure value.
    Value {
        /// The measure.
        measure: Measure,
        /// How it prints.
        print: Print,
        /// Whether it prints per query (with `-q`).
        per_query: bool,
    },
}

/// One name of trec_eval's output and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// The name as trec_eval prints it (`P_5`, `ndcg_cut_10`, `iprec_at_recall_0.10`).
    pub name: String,
    /// What it holds.
    pub kind: SlotKind,
}

/// The resolved `-m` arguments: the output slots in trec_eval's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    slots: Vec<Slot>,
}

/// The per-query values of a plan, one per slot, as trec_eval holds them (geometric-mean
/// measures hold `ln(max(v, 0.00001))`; run-id and relstring slots hold 0).
#[derive(Clone, Debug, PartialEq)]
pub struct QueryEval {
    /// One value per slot.
    pub values: Vec<f64>,
    /// The relevance string, if the plan has a relstring slot.
    pub relstring: Option<String>,
}

/// The floor of geometric means.
const MIN_GEO_MEAN: f64 = 0.00001;

/// The document of the ranking that `-c` evaluates for a query missing from the run.
pub const MISSING_QUERY_DOCNO: &str = "ceci_nest_pas_un_docno";

impl Plan {
    /// Resolves `-m` arguments (none means `official`). Each argument is a trec_eval measure
    /// (`map`, `P.5,10`, `ndcg.1=3`), a set (`official`, `set`, `all_trec`) or a canonical
    /// name (`nDCG@10`, taken as its trec_eval form `ndcg_cut.10`).
    pub fn from_args<S: AsRef<str>>(args: &[S]) -> Result<Plan, PlanError> {
        let mut marked = vec![false; TABLE.len()];
        let mut params: Vec<(String, String)> = Vec::new();
        let mut pending: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
        if pending.is_empty() {
            pending.push("official".to_string());
        }
        let mut i = 0;
        while i < pending.len() {
            let arg = pending[i].clone();
            i += 1;
            let (name, param) = match arg.split_once('.') {
                Some((n, p)) => (n, Some(p)),
                None => (arg.as_str(), None),
            };
            if UNSUPPORTED.contains(&name) {
                return Err(PlanError::Unsupported { name: arg.clone() });
            }
            let set = SETS.iter().find(|(s, _)| *s == name);
            let entry = TABLE.iter().position(|(t, _)| *t == name);
            if set.is_none() && entry.is_none() {
                // A canonical name: use its trec_eval form.
                match arg.parse::<Measure>() {
                    Ok(m) => match m.trec_arg() {
                        Some(t) => {
                            pending.push(t);
                            continue;
                        }
                        None => {
                            return Err(PlanError::Measure(MeasureError::Invalid {
                                name: arg.clone(),
                                message: "trec_eval has no such measure".to_string(),
                            }))
                        }
                    },
                    Err(MeasureError::Unknown { .. }) => return Err(unknown(&arg)),
                    Err(e) => return Err(PlanError::Measure(e)),
                }
            }
            if let Some(p) = param {
                if p.is_empty() {
                    return Err(PlanError::Measure(MeasureError::Invalid {
                        name: arg.clone(),
                        message: "empty parameter list after '.'".to_string(),
                    }));
                }
                if set.is_some() {
                    return Err(PlanError::Measure(MeasureError::Invalid {
                        name: arg.clone(),
                        message: "a measure set takes no parameters".to_string(),
                    }));
                }
                params.push((name.to_string(), p.to_string()));
            }
            if let Some((_, names)) = set {
                for n in names.iter() {
                    if let Some(j) = TABLE.iter().position(|(t, _)| t == n) {
                        marked[j] = true;
                    }
                }
            }
            if let Some(j) = entry {
                marked[j] = true;
            }
        }
        let mut slots = Vec::new();
        for (j, &(trec, entry)) in TABLE.iter().enumerate() {
            if !marked[j] {
                continue;
            }
            let given = params
                .iter()
                .find(|(n, _)| n == trec)
                .map(|(_, p)| p.as_str());
            let label = |raw: Option<&str>| match raw {
                Some(p) => format!("{trec}_{p}"),
                None => trec.to_string(),
            };
            match entry {
                Entry::RunId => slots.push(Slot {
                    name: trec.to_string(),
                    kind: SlotKind::RunId,
                }),
                Entry::RelString => {
                    let len = match given {
                        Some(p) => {
                            let first = p.split(',').next().unwrap_or(p);
                            let x: f64 = first.trim().parse().map_err(|_| {
                                PlanError::Measure(MeasureError::Invalid {
                                    name: format!("{trec}.{p}"),
                                    message: format!("not a number: '{first}'"),
                                })
                            })?;
                            x as i64
                        }
                        None => 10,
                    };
                    slots.push(Slot {
                        name: label(given),
                        kind: SlotKind::RelString { len },
                    });
                }
                Entry::Family(family) => {
                    let spec = measure::spec(family);
                    let print = match spec.aggregate {
                        Aggregate::Sum | Aggregate::Count => Print::Long,
                        _ => Print::Double,
                    };
                    let per_query =
                        !matches!(spec.aggregate, Aggregate::Count | Aggregate::GeometricMean);
                    let full = |p: &str| format!("{trec}.{p}");
                    let measures: Vec<Measure> = match given {
                        Some(p) => {
                            let parsed = trec_params(&full(p), spec, p)?;
                            measures_from_trec(&full(p), spec, &parsed)?
                        }
                        None => default_measures(family)?,
                    };
                    for m in measures {
                        let name = match spec.params {
                            Syntax::AtRank => format!("{trec}_{}", m.rank()),
                            Syntax::AtValue => {
                                let mut v = format!("{:.2}", m.value());
                                v.truncate(8);
                                format!("{trec}_{v}")
                            }
                            _ => label(given),
                        };
                        slots.push(Slot {
                            name,
                            kind: SlotKind::Value {
                                measure: m,
                                print,
                                per_query,
                            },
                        });
                    }
                }
            }
        }
        Ok(Plan { slots })
    }

    /// The output slots, in order.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The measures of the plan, in output order.
    pub fn measures(&self) -> impl Iterator<Item = &Measure> {
        self.slots.iter().filter_map(|s| match &s.kind {
            SlotKind::Value { measure, .. } => Some(measure),
            _ => None,
        })
    }

    /// Evaluates one query.
    pub fn evaluate(&self, q: &ResRels) -> QueryEval {
        let mut relstr = None;
        let values = self
            .slots
            .iter()
            .map(|s| match &s.kind {
                SlotKind::RunId => 0.0,
                SlotKind::RelString { len } => {
                    relstr = Some(relstring(q, *len));
                    0.0
                }
                SlotKind::Value { measure, .. } => {
                    let v = measure.compute(q);
                    if measure.aggregate() == Aggregate::GeometricMean {
                        v.max(MIN_GEO_MEAN).ln()
                    } else {
                        v
                    }
                }
            })
            .collect();
        QueryEval {
            values,
            relstring: relstr,
        }
    }

    /// Evaluates a qrels query that the run lacks, as `-c` does: the ranking is the single
    /// document [`MISSING_QUERY_DOCNO`] with score 1, and the values trec_eval resets by name
    /// are reset.
    pub fn evaluate_missing(&self, qrels: &QueryQrels<'_>, opts: &EvalOptions) -> QueryEval {
        let ranking = [MISSING_QUERY_DOCNO.as_bytes()];
        let q = match ResRels::from_ranking(&ranking, |d| d, qrels, opts) {
            Ok(q) => q,
            // One document cannot be a duplicate.
            Err(_) => ResRels::from_rels(Vec::new(), qrels.levels(), opts),
        };
        let mut eval = self.evaluate(&q);
        for (s, v) in self.slots.iter().zip(eval.values.iter_mut()) {
            if s.name == "num_ret"
                || s.name == "utility"
                || s.name.starts_with("unj")
                || s.name == "rbp_resid"
            {
                *v = 0.0;
            }
            if s.name == "relstring" {
                eval.relstring = Some(String::new());
            }
        }
        eval
    }

    /// Appends the per-query lines (`-q`) of one query. With `zscore`, values are labelled
    /// `Z<name>` and printed as numbers (trec_eval's `-Z`).
    pub fn write_query(&self, out: &mut String, qid: &str, q: &QueryEval, zscore: bool) {
        for (s, &v) in self.slots.iter().zip(&q.values) {
            match &s.kind {
                SlotKind::RunId => {}
                SlotKind::RelString { .. } => {
                    let rs = q.relstring.as_deref().unwrap_or("");
                    line_start(out, "", &s.name, qid);
                    let _ = writeln!(out, "'{rs}'");
                }
                SlotKind::Value {
                    print, per_query, ..
                } => {
                    if *per_query {
                        write_value(out, &s.name, qid, v, *print, zscore);
                    }
                }
            }
        }
    }

    /// Appends the summary lines (`all`).
    pub fn write_summary(&self, out: &mut String, runid: &str, values: &[f64], zscore: bool) {
        for (s, &v) in self.slots.iter().zip(values) {
            match &s.kind {
                SlotKind::RunId => {
                    line_start(out, "", &s.name, "all");
                    out.push_str(runid);
                    out.push('\n');
                }
                SlotKind::RelString { .. } => {}
                SlotKind::Value { print, .. } => {
                    write_value(out, &s.name, "all", v, *print, zscore);
                }
            }
        }
    }
}

fn default_measures(family: Family) -> Result<Vec<Measure>, MeasureError> {
    let spec = measure::spec(family);
    match spec.params {
        Syntax::AtRank => spec
            .trec_defaults
            .iter()
            .map(|&k| Measure::at_rank(family, k as u64))
            .collect(),
        Syntax::AtValue => spec
            .trec_defaults
            .iter()
            .map(|&x| Measure::at_value(family, x))
            .collect(),
        _ => Ok(Measure::of(family).into_iter().collect()),
    }
}

fn unknown(name: &str) -> PlanError {
    PlanError::Unknown {
        name: name.to_string(),
        known: TABLE.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", "),
        sets: SETS.iter().map(|(s, _)| *s).collect::<Vec<_>>().join(", "),
        canonical: measure::known_names(),
    }
}

fn line_start(out: &mut String, prefix: &str, name: &str, qid: &str) {
    out.push_str(prefix);
    out.push_str(name);
    for _ in name.len()..22 {
        out.push(' ');
    }
    out.push('\t');
    out.push_str(qid);
    out.push('\t');
}

fn write_value(out: &mut String, name: &str, qid: &str, v: f64, print: Print, zscore: bool) {
    line_start(out, if zscore { "Z" } else { "" }, name, qid);
    if print == Print::Long && !zscore {
        let _ = write!(out, "{}", v as i64);
    } else {
        push_c_double(out, v);
    }
    out.push('\n');
}

/// Formats like C's `printf("%6.4f", v)`.
pub fn push_c_double(out: &mut String, v: f64) {
    if v.is_finite() {
        let _ = write!(out, "{v:.4}");
    } else {
        let s = match (v.is_nan(), v.is_sign_negative()) {
            (true, true) => "-nan",
            (true, false) => "nan",
            (false, true) => "-inf",
            (false, false) => "inf",
        };
        let _ = write!(out, "{s:>6}");
    }
}

/// The summary accumulated over queries, in the order they are added.
#[derive(Clone, Debug)]
pub struct Summary {
    sums: Vec<f64>,
    num_queries: u64,
}

/// What `-c` needs to know about the whole qrels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Complete {
    /// Number of queries in the qrels.
    pub num_queries: u64,
    /// Number of judgements with level > 0 in the qrels.
    pub num_positive: u64,
}

impl Summary {
    /// An empty summary for `plan`.
    pub fn new(plan: &Plan) -> Summary {
        Summary {
            sums: vec![0.0; plan.slots.len()],
            num_queries: 0,
        }
    }

    /// Adds one query's values (in the order queries are to be averaged).
    pub fn add(&mut self, q: &QueryEval) {
        for (s, v) in self.sums.iter_mut().zip(&q.values) {
            *s += v;
        }
        self.num_queries += 1;
    }

    /// Number of queries added.
    pub fn num_queries(&self) -> u64 {
        self.num_queries
    }

    /// The summary values, one per slot. `complete` is `Some` under `-c`.
    pub fn finish(&self, plan: &Plan, complete: Option<Complete>) -> Vec<f64> {
        let n = complete.map_or(self.num_queries, |c| c.num_queries);
        plan.slots
            .iter()
            .zip(&self.sums)
            .map(|(s, &sum)| {
                let SlotKind::Value { measure, .. } = &s.kind else {
                    return 0.0;
                };
                match measure.aggregate() {
                    Aggregate::Count => n as f64,
                    Aggregate::Sum => match complete {
                        Some(c) if measure.family() == Family::NumRel => c.num_positive as f64,
                        _ => sum,
                    },
                    Aggregate::Mean => {
                        if n > 0 {
                            sum / n as f64
                        } else {
                            sum
                        }
                    }
                    Aggregate::GeometricMean => {
                        if n > 0 {
                            let mut sum = sum;
                            if complete.is_some() {
                                sum += (n - self.num_queries.min(n)) as f64 * MIN_GEO_MEAN.ln();
                            }
                            (sum / n as f64).exp()
                        } else {
                            sum
                        }
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(args: &[&str]) -> Vec<String> {
        Plan::from_args(args)
            .unwrap()
            .slots()
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    #[test]
    fn official_is_the_default() {
        let n = names(&[]);
        assert_eq!(n[0], "runid");
        assert_eq!(n[10], "iprec_at_recall_0.00");
        assert_eq!(n.last().map(String::as_str), Some("P_1000"));
    }

    #[test]
    fn parameters_sort_and_name_as_trec_eval() {
        assert_eq!(
            names(&["P.5,7,3", "iprec_at_recall..10,.20", "ndcg_cut.10,20,23.4"]),
            [
                "iprec_at_recall_0.10",
                "iprec_at_recall_0.20",
                "P_3",
                "P_5",
                "P_7",
                "ndcg_cut_10",
                "ndcg_cut_20",
                "ndcg_cut_23"
            ]
        );
        assert_eq!(names(&["P.5", "P.10"]), ["P_5"]);
        assert_eq!(names(&["utility.2,-1,0,0"]), ["utility_2,-1,0,0"]);
        assert_eq!(names(&["relstring.20", "map"]), ["map", "relstring_20"]);
        assert_eq!(names(&["nDCG@10"]), ["ndcg_cut_10"]);
        assert_eq!(names(&["Rprec_mult.100000"]), ["Rprec_mult_100000.0"]);
    }

    #[test]
    fn bad_arguments() {
        assert!(matches!(
            Plan::from_args(&["nope"]),
            Err(PlanError::Unknown { .. })
        ));
        assert!(matches!(
            Plan::from_args(&["prefs_simp"]),
            Err(PlanError::Unsupported { .. })
        ));
        assert!(Plan::from_args(&["P."]).is_err());
        assert!(Plan::from_args(&["P.0"]).is_err());
        assert!(Plan::from_args(&["P.5,5"]).is_err());
        assert!(Plan::from_args(&["utility.1,2"]).is_err());
        assert!(Plan::from_args(&["RR@10"]).is_err());
    }

    #[test]
    fn c_double_format() {
        let mut s = String::new();
        for v in [0.03125, 1.0 / 3.0, -0.0, f64::NAN, -f64::NAN, 2.5] {
            push_c_double(&mut s, v);
            s.push(' ');
        }
        assert_eq!(s, "0.0312 0.3333 -0.0000    nan   -nan 2.5000 ");
    }
}
