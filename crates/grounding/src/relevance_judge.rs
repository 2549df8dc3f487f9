//! A chat model asked whether an answer addresses what was asked (an answer-relevance
//! suggestion, never the verdict): the fixed, versioned prompt, the reading of the reply, the
//! suggestion record kept in the suggestions log beside the claims' suggestions, and the
//! orchestration over any [`Judge`].
//!
//! Changing a word of [`RELEVANCE_SYSTEM_PROMPT`] or of the user message layout means a new
//! [`RELEVANCE_VERSION`]; the method recorded names the version and the prompt's SHA-256.

use crate::load::hex;
use crate::model::CaseSet;
use crate::relevance::Relevance;
use crate::suggest::{Judge, SuggestError, SuggestionRecord};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Version of the relevance prompt and of its user message layout.
pub const RELEVANCE_VERSION: &str = "relevance/1";

/// The system message, word for word.
pub const RELEVANCE_SYSTEM_PROMPT: &str = "\
You audit whether an answer addresses the question that was asked. Do not judge whether \
the answer is true or supported by sources: only whether it answers this question, and not \
a neighbouring one.

Choose exactly one verdict:
- addresses: the answer responds to what was asked (an honest statement that the sources do \
not say also addresses it).
- partly: the answer responds to part of what was asked, or drifts into a neighbouring \
topic for part of it.
- off_topic: the answer responds to a different question than the one asked.

Reply with one JSON object and nothing else:
{\"verdict\": \"<addresses, partly or off_topic>\", \"confidence\": <number from 0 to 1>, \
\"reason\": \"<one sentence naming what was asked and what the answer addresses>\"}";

/// `relevance/1 sha256:<first 16 hex of the system prompt's SHA-256>`.
pub fn relevance_method() -> String {
    let d = Sha256::digest(RELEVANCE_SYSTEM_PROMPT.as_bytes());
    format!("{RELEVANCE_VERSION} sha256:{}", &hex(&d)[..16])
}

/// The user message for one answer (layout fixed by [`RELEVANCE_VERSION`]).
pub fn relevance_user_message(query: &str, answer: &str) -> String {
    format!(
        "Question:\n{}\n\nAnswer:\n{}\n",
        query.trim(),
        answer.trim()
    )
}

/// A relevance suggestion: a line of the suggestions log with `suggested_relevance` and no
/// `claim`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelevanceSuggestion {
    pub case: String,
    pub answer: String,
    pub suggested_relevance: Relevance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Endpoint + model.
    pub model: String,
    /// `relevance/1 sha256:…`.
    pub method: String,
    pub time: String,
}

/// A line of the suggestions log: a claim's support suggestion or an answer's relevance
/// suggestion.
#[derive(Debug, Clone, PartialEq)]
pub enum SuggestionLine {
    Claim(SuggestionRecord),
    Relevance(RelevanceSuggestion),
}

impl Serialize for SuggestionLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SuggestionLine::Claim(r) => r.serialize(s),
            SuggestionLine::Relevance(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SuggestionLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let relevance = map.contains_key("suggested_relevance") && !map.contains_key("claim");
        let value = serde_json::Value::Object(map);
        if relevance {
            serde_json::from_value(value)
                .map(SuggestionLine::Relevance)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(value)
                .map(SuggestionLine::Claim)
                .map_err(D::Error::custom)
        }
    }
}

/// The claim suggestions and the relevance suggestions of a log, each in appended order.
pub fn split_suggestion_lines(
    lines: Vec<SuggestionLine>,
) -> (Vec<SuggestionRecord>, Vec<RelevanceSuggestion>) {
    let mut claims = Vec::new();
    let mut relevance = Vec::new();
    for l in lines {
        match l {
            SuggestionLine::Claim(r) => claims.push(r),
            SuggestionLine::Relevance(r) => relevance.push(r),
        }
    }
    (claims, relevance)
}

/// The latest relevance suggestion for an answer.
pub fn latest_relevance_suggestion<'a>(
    case: &str,
    answer: &str,
    suggestions: &'a [RelevanceSuggestion],
) -> Option<&'a RelevanceSuggestion> {
    suggestions
        .iter()
        .rev()
        .find(|s| s.case == case && s.answer == answer)
}

/// A relevance reply, read.
#[derive(Debug, Clone, PartialEq)]
pub struct RelevanceVerdict {
    pub verdict: Relevance,
    pub confidence: Option<f64>,
    pub reason: Option<String>,
}

/// Reads a reply as [`crate::parse_judge_reply`] does, with `verdict` one of `addresses`,
/// `partly`, `off_topic` (case, spaces and hyphens tolerated).
pub fn parse_relevance_reply(reply: &str) -> Result<RelevanceVerdict, String> {
    let (verdict, confidence, reason) = crate::judge::reply_fields(reply)?;
    Ok(RelevanceVerdict {
        verdict: verdict.parse()?,
        confidence,
        reason,
    })
}

/// What a judge suggested on answers' relevance, and the answers whose reply could not be
/// read (`CASE ANSWER: why`; not stored).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RelevanceOutcome {
    pub records: Vec<RelevanceSuggestion>,
    pub failures: Vec<String>,
}

/// Relevance suggestions from a chat model asked with the fixed `relevance/1` prompt, for
/// every recorded answer with text, in file order.
pub fn relevance_suggestions(
    set: &CaseSet,
    judge: &dyn Judge,
    model: &str,
    url: &str,
    time: &str,
) -> Result<RelevanceOutcome, SuggestError> {
    let method = relevance_method();
    let mut out = RelevanceOutcome::default();
    for case in &set.cases {
        for a in &case.answers {
            if a.text.trim().is_empty() {
                continue;
            }
            let reply = judge
                .complete(
                    RELEVANCE_SYSTEM_PROMPT,
                    &relevance_user_message(&case.query, &a.text),
                )
                .map_err(|error| SuggestError::Judge {
                    claim: format!("answer {}", a.id),
                    error,
                })?;
            match parse_relevance_reply(&reply.content) {
                Ok(v) => {
                    let answered = match &reply.model {
                        Some(m) if m != model => format!(" (answered by {m})"),
                        _ => String::new(),
                    };
                    out.records.push(RelevanceSuggestion {
                        case: case.id.clone(),
                        answer: a.id.clone(),
                        suggested_relevance: v.verdict,
                        confidence: v.confidence,
                        reason: v.reason,
                        model: format!("{model} @ {url}{answered}"),
                        method: method.clone(),
                        time: time.to_string(),
                    });
                }
                Err(e) => out
                    .failures
                    .push(format!("{} answer {}: {e}", case.id, a.id)),
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_verdicts_and_refuses_others() {
        let r = parse_relevance_reply(
            "```json\n{\"verdict\": \"Off topic\", \"confidence\": 0.7, \"reason\": \"asks refunds, answers shipping\"}\n```",
        )
        .unwrap();
        assert_eq!(r.verdict, Relevance::OffTopic);
        assert_eq!(r.confidence, Some(0.7));
        assert_eq!(
            parse_relevance_reply("{\"verdict\":\"partly\"}")
                .unwrap()
                .verdict,
            Relevance::Partly
        );
        for bad in [
            "{\"verdict\": \"supported\"}",
            "addresses",
            "{\"verdict\": \"addresses\", \"confidence\": 2}",
        ] {
            assert!(parse_relevance_reply(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_relevance_suggestion_line_is_told_from_a_claim_suggestion() {
        let line = r#"{"case":"Q","answer":"A","suggested_relevance":"addresses","model":"m @ u","method":"relevance/1","time":"t"}"#;
        let l: SuggestionLine = serde_json::from_str(line).unwrap();
        assert!(
            matches!(&l, SuggestionLine::Relevance(r) if r.suggested_relevance == Relevance::Addresses)
        );
        assert_eq!(serde_json::to_string(&l).unwrap(), line);
    }

    #[test]
    fn the_documented_prompt_is_the_prompt_sent() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grounding.md"),
        )
        .expect("docs/grounding.md");
        assert!(
            doc.contains(RELEVANCE_SYSTEM_PROMPT),
            "docs/grounding.md must quote relevance/1 word for word"
        );
        assert!(relevance_method().starts_with("relevance/1 sha256:"));
    }
}
