//! The written acceptance criteria (SPEC §3). Defaults follow seed 000; every number is a
//! calibration a team may change, and the effective policy is fingerprinted into each run.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which chunk field is embedded and searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Representation,
    Text,
}

/// The acceptance policy. Field names are the TOML keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Free version label, kept with the golden set (e.g. `rack-2025.11`).
    pub version: Option<String>,
    /// Default cut-off K for cases that do not set `top_k`.
    pub top_k: u32,
    /// Recall below this fails the case and scores Quality 0.
    pub recall_floor: f64,
    /// The suite stops when mean Quality Score (0..100) is below this.
    pub min_mean_quality: f64,
    /// Maximum noise as a fraction of K (0.30: at most 3 of 10 results below the worst expected).
    pub noise_ceiling: f64,
    /// The label that marks a curated-synthesis (Gold) chunk.
    pub gold_label: String,
    /// Non-gold failing cases tolerated, as a fraction of all cases.
    pub max_failing_fraction: f64,
    /// Whether every non-gold failing case needs a note (a documented diagnosis).
    pub require_notes: bool,
    /// Extra measures reported per case and on average, by canonical or trec name.
    pub measures: Vec<String>,
    /// The field that is embedded and searched (recorded; used by the index).
    pub field: Field,
    /// Per-domain overrides, keyed by the case's `domain`.
    pub domains: BTreeMap<String, DomainPolicy>,
    /// A declared boost policy (`[boost]`), part of the fingerprint when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boost: Option<crate::boost::BoostPolicy>,
    /// A declared fusion stage (`fusion = "rrf?k=30"`, what `veredicto tune --write-policy`
    /// writes): an exam of a `fusion:` retriever with another method or parameters is
    /// refused. Part of the fingerprint when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fusion: Option<String>,
    /// The lowest grade that counts as relevant for recall, precision, reciprocal rank and
    /// AP (trec_eval's `-l`); nDCG takes every positive grade as its gain. Expected chunks
    /// and evidence items without a grade have grade 1. Written out only when not 1, so the
    /// fingerprint of a policy that does not set it stays what it was.
    #[serde(skip_serializing_if = "is_default_relevance_level")]
    pub relevance_level: u32,
    /// The share of an evidence item's characters the top-K chunks must hold for it to count
    /// as retrieved (0 excluded, up to 1: all of them). Written out only when not 1.
    #[serde(skip_serializing_if = "is_default_evidence_coverage")]
    pub evidence_coverage: f64,
}

fn is_default_relevance_level(v: &u32) -> bool {
    *v == 1
}

fn is_default_evidence_coverage(v: &f64) -> bool {
    *v == 1.0
}

/// Per-domain overrides of the case-level thresholds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DomainPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall_floor: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_ceiling: Option<f64>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            version: None,
            top_k: 10,
            recall_floor: 0.90,
            min_mean_quality: 95.0,
            noise_ceiling: 0.30,
            gold_label: "SINTESIS_CURADA".to_owned(),
            max_failing_fraction: 0.05,
            require_notes: true,
            measures: Vec::new(),
            field: Field::Representation,
            domains: BTreeMap::new(),
            boost: None,
            fusion: None,
            relevance_level: 1,
            evidence_coverage: 1.0,
        }
    }
}

/// A policy value that is out of range. `key` is the TOML key path (`domains.viajes.top_k`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    pub key: String,
    pub message: String,
}

/// The thresholds that apply to one case after domain overrides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaseThresholds {
    pub recall_floor: f64,
    pub noise_ceiling: f64,
    pub top_k: u32,
}

impl Policy {
    /// Checks every value's range; the first problem is returned with its key.
    pub fn validate(&self) -> Result<(), PolicyError> {
        fn err(key: &str, message: String) -> Result<(), PolicyError> {
            Err(PolicyError {
                key: key.to_owned(),
                message,
            })
        }
        fn fraction(key: &str, v: f64) -> Result<(), PolicyError> {
            if v.is_finite() && (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                err(key, format!("must be between 0 and 1, got {v}"))
            }
        }
        fn top_k(key: &str, v: u32) -> Result<(), PolicyError> {
            if v == 0 {
                err(key, "must be at least 1, got 0".to_owned())
            } else {
                Ok(())
            }
        }
        top_k("top_k", self.top_k)?;
        if let Some(f) = &self.fusion {
            if let Err(e) = f.parse::<crate::fusion::Fusion>() {
                return err(
                    "fusion",
                    format!("not a fusion (`rrf?k=60`, `wsum?w=0.7,0.3`): {e}"),
                );
            }
        }
        fraction("recall_floor", self.recall_floor)?;
        fraction("noise_ceiling", self.noise_ceiling)?;
        fraction("max_failing_fraction", self.max_failing_fraction)?;
        if !(self.min_mean_quality.is_finite() && (0.0..=100.0).contains(&self.min_mean_quality)) {
            return err(
                "min_mean_quality",
                format!("must be between 0 and 100, got {}", self.min_mean_quality),
            );
        }
        if self.relevance_level == 0 || self.relevance_level > crate::evidence::MAX_GRADE {
            return err(
                "relevance_level",
                format!(
                    "must be a grade from 1 to {}, got {}",
                    crate::evidence::MAX_GRADE,
                    self.relevance_level
                ),
            );
        }
        if !(self.evidence_coverage.is_finite()
            && self.evidence_coverage > 0.0
            && self.evidence_coverage <= 1.0)
        {
            return err(
                "evidence_coverage",
                format!(
                    "must be more than 0 and at most 1, got {}",
                    self.evidence_coverage
                ),
            );
        }
        if self.gold_label.trim().is_empty() {
            return err("gold_label", "must not be empty".to_owned());
        }
        for (i, m) in self.measures.iter().enumerate() {
            if let Err(e) = m.parse::<crate::measure::Measure>() {
                return err(&format!("measures[{i}]"), e.to_string());
            }
        }
        if let Some(b) = &self.boost {
            b.validate()?;
        }
        for (name, d) in &self.domains {
            if let Some(k) = d.top_k {
                top_k(&format!("domains.{name}.top_k"), k)?;
            }
            if let Some(v) = d.recall_floor {
                fraction(&format!("domains.{name}.recall_floor"), v)?;
            }
            if let Some(v) = d.noise_ceiling {
                fraction(&format!("domains.{name}.noise_ceiling"), v)?;
            }
        }
        Ok(())
    }

    /// The thresholds for a case of `domain` (domain override, else global). The case's own
    /// `top_k`, when it has one, wins over both (the caller applies it).
    pub fn thresholds(&self, domain: Option<&str>) -> CaseThresholds {
        let d = domain.and_then(|d| self.domains.get(d));
        CaseThresholds {
            recall_floor: d.and_then(|d| d.recall_floor).unwrap_or(self.recall_floor),
            noise_ceiling: d
                .and_then(|d| d.noise_ceiling)
                .unwrap_or(self.noise_ceiling),
            top_k: d.and_then(|d| d.top_k).unwrap_or(self.top_k),
        }
    }

    /// `sha256:<hex>` of the policy's canonical JSON (struct field order, maps sorted).
    pub fn fingerprint(&self) -> String {
        crate::fingerprint::sha256_json(self)
    }
}

/// The grounding audit's thresholds: the `[grounding]` table of a policy file (fractions in
/// [0, 1]; an absent key checks nothing).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroundingPolicy {
    pub min_citation_presence: Option<f64>,
    pub min_support: Option<f64>,
    pub min_coverage: Option<f64>,
    /// Document recall@k threshold at `recall_k` (both or neither).
    pub min_document_recall: Option<f64>,
    pub recall_k: Option<usize>,
}

impl GroundingPolicy {
    /// Checks the ranges; the error names the key (inside `[grounding]`).
    pub fn validate(&self) -> Result<(), PolicyError> {
        for (name, v) in [
            ("min_citation_presence", self.min_citation_presence),
            ("min_support", self.min_support),
            ("min_coverage", self.min_coverage),
            ("min_document_recall", self.min_document_recall),
        ] {
            if let Some(v) = v {
                if !(0.0..=1.0).contains(&v) {
                    return Err(PolicyError {
                        key: format!("grounding.{name}"),
                        message: format!("{name} = {v}: must be a fraction in [0, 1]"),
                    });
                }
            }
        }
        if self.min_document_recall.is_some() != self.recall_k.is_some() {
            let key = if self.recall_k.is_some() {
                "grounding.recall_k"
            } else {
                "grounding.min_document_recall"
            };
            return Err(PolicyError {
                key: key.to_owned(),
                message: "min_document_recall and recall_k go together".into(),
            });
        }
        Ok(())
    }
}
