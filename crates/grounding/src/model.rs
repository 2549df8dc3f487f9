//! The frozen case set: what a reviewer audits, exactly as it was recorded.
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
    /// Points the collection cannot answer (honest absences): a text, or
    /// `{id, text, sources}` naming where the missing fact would appear.
    #[serde(default)]
    pub unanswerable: Vec<Absence>,
    #[serde(default)]
    pub answers: Vec<Answer>,
    /// What produced the recorded answers (a replay declares what changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<Configuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl Case {
    /// The case's absences with their IDs (`U1`, `U2`, … by position when not given).
    pub fn absences(&self) -> Vec<(String, &Absence)> {
        self.unanswerable
            .iter()
            .enumerate()
            .map(|(i, a)| (a.id.clone().unwrap_or_else(|| format!("U{}", i + 1)), a))
            .collect()
    }
}

/// A point the collection does not answer: "the sources do not say" as a recorded result.
#[derive(Debug, Clone, PartialEq)]
pub struct Absence {
    /// Optional ID; `U<n>` (1-based position) when absent.
    pub id: Option<String>,
    /// What the sources lack (the point asked that no source states).
    pub text: String,
    /// Source IDs of the case where the missing fact would appear (a new version of one of
    /// them reopens the absence); empty = any source of the case.
    pub sources: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AbsenceRepr {
    Text(String),
    Full(AbsenceFull),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AbsenceFull {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sources: Vec<String>,
}

impl<'de> Deserialize<'de> for Absence {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match AbsenceRepr::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "an `unanswerable` entry is a text, or a map with `text` and optional `id` and `sources`",
            )
        })? {
            AbsenceRepr::Text(text) => Absence {
                id: None,
                text,
                sources: Vec::new(),
            },
            AbsenceRepr::Full(f) => Absence {
                id: f.id,
                text: f.text,
                sources: f.sources,
            },
        })
    }
}

impl Serialize for Absence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.id.is_none() && self.sources.is_empty() {
            return s.serialize_str(&self.text);
        }
        AbsenceFull {
            id: self.id.clone(),
            text: self.text.clone(),
            sources: self.sources.clone(),
        }
        .serialize(s)
    }
}

/// The configuration that produced a case's recorded answers. Every field is optional; a
/// replay states what it ran with, and `audit compare` shows what changed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    /// Retrieval configuration ID (index, embedder, K, filters…), as the application names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval_config: Option<String>,
    /// Generation configuration ID (temperature, max tokens…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    /// The generation model's ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The application's revision (a commit, a release).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_revision: Option<String>,
    /// BCP 47 language tag of the answers (`es`, `es-ES`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
    /// `SOURCE#PASSAGE` → `sha256:<hex>` of the passage text the answer was generated from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passage_hashes: BTreeMap<String, String>,
}

impl Configuration {
    /// `(label, value)` of every field, in a fixed order (passage hashes one by one).
    pub fn fields(&self) -> Vec<(String, Option<String>)> {
        let mut v = vec![
            (
                "retrieval configuration".to_owned(),
                self.retrieval_config.clone(),
            ),
            (
                "generation configuration".to_owned(),
                self.generation_config.clone(),
            ),
            ("prompt version".to_owned(), self.prompt_version.clone()),
            ("generation model".to_owned(), self.model.clone()),
            ("application revision".to_owned(), self.app_revision.clone()),
            ("locale".to_owned(), self.locale.clone()),
        ];
        for (k, h) in &self.passage_hashes {
            v.push((format!("passage hash {k}"), Some(h.clone())));
        }
        v
    }
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
    /// Where the fact is stated: `SOURCE#PASSAGE` or `SOURCE` of this case. Gives the fact
    /// coverage of the retrieved list (which facts the top-k passages contain).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found_in: Vec<String>,
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
