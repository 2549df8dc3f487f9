//! The per-case values a trend can follow (STYLE item 4: one canonical name each, `Display`
//! prints it and `FromStr` parses it back).

use std::fmt;
use std::str::FromStr;
use veredicto_core::measure::Measure;

/// A per-case value stored in the history, averaged over a run's cases by
/// [`History::trend`](crate::RunStore::trend).
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// Recall at the case's K (`recall`).
    Recall,
    /// Quality Score, 0..100 (`quality`; alias `qs`).
    Quality,
    /// Precision at K (`precision`).
    Precision,
    /// Reciprocal rank at K; its mean is the MRR (`reciprocal_rank`; aliases `mrr`, `rr`).
    ReciprocalRank,
    /// nDCG at K (`ndcg`).
    Ndcg,
    /// Average precision at K (`average_precision`; aliases `map`, `ap`).
    AveragePrecision,
    /// Noise count; cases with undefined noise are left out of the mean (`noise`).
    Noise,
    /// Fraction of cases that passed (`pass_rate`).
    PassRate,
    /// One of the policy's extra measures, by its canonical name (`nDCG@5`, `R@100`...).
    Measure(String),
}

impl Metric {
    /// The `cases` column that holds it; `None` for extra measures (`case_measures` rows).
    pub(crate) fn column(&self) -> Option<&'static str> {
        Some(match self {
            Metric::Recall => "recall",
            Metric::Quality => "quality",
            Metric::Precision => "precision",
            Metric::ReciprocalRank => "reciprocal_rank",
            Metric::Ndcg => "ndcg",
            Metric::AveragePrecision => "average_precision",
            Metric::Noise => "noise",
            Metric::PassRate => "passed",
            Metric::Measure(_) => return None,
        })
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::PassRate => f.write_str("pass_rate"),
            Metric::Measure(name) => f.write_str(name),
            other => f.write_str(other.column().unwrap_or_default()),
        }
    }
}

/// A metric name that is neither an exam metric nor a known measure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown metric `{name}`: use recall, quality, precision, reciprocal_rank (mrr), ndcg, \
     average_precision (map), noise, pass_rate, or an extra measure of the policy ({reason})"
)]
pub struct UnknownMetric {
    /// The name given.
    pub name: String,
    /// Why it is not a measure either.
    pub reason: String,
}

impl FromStr for Metric {
    type Err = UnknownMetric;

    /// Exam metrics by name (case-insensitive, with the aliases above); anything else must
    /// parse as a [`Measure`] and is kept under its canonical name, the name the exam stores.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        Ok(match s.to_ascii_lowercase().as_str() {
            "recall" => Metric::Recall,
            "quality" | "qs" => Metric::Quality,
            "precision" => Metric::Precision,
            "reciprocal_rank" | "mrr" | "rr" => Metric::ReciprocalRank,
            "ndcg" => Metric::Ndcg,
            "average_precision" | "map" | "ap" => Metric::AveragePrecision,
            "noise" => Metric::Noise,
            "pass_rate" | "passed" => Metric::PassRate,
            _ => match s.parse::<Measure>() {
                Ok(m) => Metric::Measure(m.to_string()),
                Err(e) => {
                    return Err(UnknownMetric {
                        name: s.to_owned(),
                        reason: e.to_string(),
                    })
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in [
            Metric::Recall,
            Metric::Quality,
            Metric::Precision,
            Metric::ReciprocalRank,
            Metric::Ndcg,
            Metric::AveragePrecision,
            Metric::Noise,
            Metric::PassRate,
        ] {
            assert_eq!(m.to_string().parse::<Metric>(), Ok(m.clone()));
        }
        assert_eq!("MRR".parse(), Ok(Metric::ReciprocalRank));
        assert_eq!("qs".parse(), Ok(Metric::Quality));
    }

    #[test]
    fn measures_take_their_canonical_name() {
        let m: Metric = "ndcg_cut.10".parse().expect("a trec name parses");
        assert_eq!(m, Metric::Measure("nDCG@10".to_owned()));
        assert_eq!(m.to_string().parse::<Metric>(), Ok(m));
        assert!("bogus".parse::<Metric>().is_err());
    }
}
