//! The frozen case set (SPEC §7): what a reviewer audits, exactly as it was recorded.
//! Documented in `docs/grounding.md`; JSON Schema in `docs/grounding-schema.json`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema version written by and accepted from case files.
pub const SCHEMA_VERSION: &str = "veredicto-grounding/1";

/// A file of frozen cases.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CaseSet {
    /// Must be `veredicto-grounding/1`.
    pub schema: String,
    pub cases: Vec<Case>,
}

/// One frozen case: a query, the collection as it was, what was retrieved and answered.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    pub query: String,
    /// Collection snapshot ID the answers were produced against.
    pub snapshot: String,
    pub sources: Vec<Source>,
    /// Source IDs that hold valid evidence for this query (denominator of document recall).
    #[serde(default)]
    pub valid_sources: Vec<String>,
    /// Retrieved passages in the order returned.
    #[serde(default)]
    pub retrieval: Vec<Retrieved>,
    /// Required facts G, fixed before generation.
    #[serde(default)]
    pub required_facts: Vec<Fact>,
    /// Points the collection cannot answer.
    #[serde(default)]
    pub unanswerable: Vec<String>,
    #[serde(default)]
    pub answers: Vec<Answer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub id: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<String>,
    #[serde(default)]
    pub passages: Vec<Passage>,
}

/// A passage: exact text, or a hash plus neighbouring text that relocates it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Passage {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `sha256:<hex>` of the exact text (checked when the text is present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbours: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<String>,
}

/// One retrieved item, as the retriever returned it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Retrieved {
    /// 1-based position in the returned order.
    pub position: u32,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub filters: BTreeMap<String, String>,
}

/// A required fact of G.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    pub id: String,
    pub text: String,
}

/// The recorded answer with the citations shown to the user.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub citations: Vec<Citation>,
    /// Material claims (atomic). Empty = abstention.
    #[serde(default)]
    pub claims: Vec<Claim>,
}

/// A citation shown in the answer (`[D-01]`), resolved to a source and optionally a passage.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Citation {
    pub id: String,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
}

/// A material claim with its verdicts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    pub text: String,
    /// Citation IDs (of the answer) attached to this claim.
    #[serde(default)]
    pub citations: Vec<String>,
    /// Required facts this claim expresses.
    #[serde(default)]
    pub facts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub association: Option<AssociationVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support: Option<SupportVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Association {
    Attached,
    NotAttached,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AssociationVerdict {
    pub verdict: Association,
    pub reason: String,
}

/// The four bounded support verdicts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Support {
    Supported,
    PartiallySupported,
    Unsupported,
    NotEvaluable,
}

impl Support {
    pub fn as_str(self) -> &'static str {
        match self {
            Support::Supported => "supported",
            Support::PartiallySupported => "partially_supported",
            Support::Unsupported => "unsupported",
            Support::NotEvaluable => "not_evaluable",
        }
    }
}

impl std::str::FromStr for Support {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "supported" => Ok(Support::Supported),
            "partially_supported" => Ok(Support::PartiallySupported),
            "unsupported" => Ok(Support::Unsupported),
            "not_evaluable" => Ok(Support::NotEvaluable),
            other => Err(format!(
                "`{other}` is not a support verdict (supported, partially_supported, unsupported, not_evaluable)"
            )),
        }
    }
}

impl Association {
    pub fn as_str(self) -> &'static str {
        match self {
            Association::Attached => "attached",
            Association::NotAttached => "not_attached",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SupportVerdict {
    pub verdict: Support,
    /// Required for every verdict; for `not_evaluable` it says what is missing.
    pub reason: String,
}
