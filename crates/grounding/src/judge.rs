//! A chat model as a judge of support (a suggestion, never the verdict): the fixed,
//! versioned prompt, the inputs it is filled with, and the strict reading of the reply.
//! Sending it is the caller's job (`veredicto-embed`'s `ChatClient`).
//!
//! Changing a word of [`JUDGE_SYSTEM_PROMPT`] or of the user message layout means a new
//! [`JUDGE_VERSION`]: every suggestion records the version and the prompt's SHA-256, so
//! agreement figures are never mixed across prompts.

use crate::load::{hex, passage_hash};
use crate::model::{CaseSet, Support};
use sha2::{Digest, Sha256};

/// Version of the prompt and of the user message layout.
pub const JUDGE_VERSION: &str = "judge/1";

/// The system message, word for word.
pub const JUDGE_SYSTEM_PROMPT: &str = "\
You audit whether a claim is supported by the passages it cites. Judge only from the \
passages given; do not use outside knowledge, and do not reward a claim for being \
plausible or true elsewhere.

Choose exactly one verdict:
- supported: the passages state everything the claim asserts.
- partially_supported: the passages state part of what the claim asserts and nothing in \
them contradicts it, but some of the claim (a number, a condition, a scope) is not in them.
- unsupported: the passages do not state what the claim asserts, or they contradict it.
- not_evaluable: the passages are missing, cut off or unreadable, so no judgement is \
possible; say what is missing.

Reply with one JSON object and nothing else:
{\"verdict\": \"<one of the four>\", \"confidence\": <number from 0 to 1>, \
\"reason\": \"<one sentence naming the passage text that decides>\"}";

/// What one claim is judged on.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeInput {
    pub case: String,
    pub answer: String,
    pub claim: String,
    pub claim_text: String,
    /// `(label, text)` of every cited passage, in citation order (`D2@v3#p1`).
    pub passages: Vec<(String, String)>,
}

/// `judge/1 sha256:<first 16 hex of the system prompt's SHA-256>`: recorded as the method.
pub fn judge_method() -> String {
    let d = Sha256::digest(JUDGE_SYSTEM_PROMPT.as_bytes());
    format!("{JUDGE_VERSION} sha256:{}", &hex(&d)[..16])
}

/// The inputs for every claim with at least one cited passage text, in file order.
pub fn judge_inputs(set: &CaseSet) -> Vec<JudgeInput> {
    let mut out = Vec::new();
    for case in &set.cases {
        for a in &case.answers {
            for cl in &a.claims {
                let mut passages = Vec::new();
                for cid in &cl.citations {
                    let Some(c) = a.citations.iter().find(|c| &c.id == cid) else {
                        continue;
                    };
                    let Some(s) = case.sources.iter().find(|s| s.id == c.source) else {
                        continue;
                    };
                    for p in &s.passages {
                        if c.passage.as_deref().is_none_or(|x| x == p.id) {
                            if let Some(t) = &p.text {
                                passages
                                    .push((format!("{}@{}#{}", s.id, s.version, p.id), t.clone()));
                            }
                        }
                    }
                }
                if !passages.is_empty() {
                    out.push(JudgeInput {
                        case: case.id.clone(),
                        answer: a.id.clone(),
                        claim: cl.id.clone(),
                        claim_text: cl.text.clone(),
                        passages,
                    });
                }
            }
        }
    }
    out
}

/// The user message for one claim (layout fixed by [`JUDGE_VERSION`]).
pub fn judge_user_message(input: &JudgeInput) -> String {
    let mut m = format!("Claim:\n{}\n\nCited passages:\n", input.claim_text.trim());
    for (i, (label, text)) in input.passages.iter().enumerate() {
        m.push_str(&format!(
            "\n[{}] {label} ({})\n{}\n",
            i + 1,
            passage_hash(text),
            text.trim()
        ));
    }
    m
}

/// A judge's reply, read.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeVerdict {
    pub verdict: Support,
    pub confidence: Option<f64>,
    pub reason: Option<String>,
}

/// Reads a reply: the JSON object in it (a Markdown code fence around it is tolerated),
/// with `verdict` one of the four support verdicts (case, spaces and hyphens tolerated),
/// `confidence` a number in [0, 1] when present and `reason` a string when present.
/// Anything else is an error that quotes the reply.
pub fn parse_judge_reply(reply: &str) -> Result<JudgeVerdict, String> {
    let (verdict, confidence, reason) = reply_fields(reply)?;
    Ok(JudgeVerdict {
        verdict: verdict.parse()?,
        confidence,
        reason,
    })
}

/// The fields of a judge's reply, read strictly: the JSON object in it (a Markdown code
/// fence around it is tolerated), its `verdict` string normalised (lower case, spaces and
/// hyphens to `_`), `confidence` a number in [0, 1] when present, `reason` a non-empty string
/// when present. Shared by every prompt's reader; anything else quotes the reply.
pub(crate) fn reply_fields(reply: &str) -> Result<(String, Option<f64>, Option<String>), String> {
    let quote = || {
        let t = reply.trim();
        match t.char_indices().nth(200) {
            Some((i, _)) => format!("{}…", &t[..i]),
            None => t.to_string(),
        }
    };
    let (Some(start), Some(end)) = (reply.find('{'), reply.rfind('}')) else {
        return Err(format!("no JSON object in the reply: {:?}", quote()));
    };
    if end < start {
        return Err(format!("no JSON object in the reply: {:?}", quote()));
    }
    let v: serde_json::Value = serde_json::from_str(&reply[start..=end])
        .map_err(|e| format!("the reply's JSON does not parse ({e}): {:?}", quote()))?;
    let verdict = v
        .get("verdict")
        .and_then(|x| x.as_str())
        .ok_or_else(|| format!("the reply has no `verdict` string: {:?}", quote()))?;
    let norm = verdict.trim().to_ascii_lowercase().replace([' ', '-'], "_");
    let confidence = match v.get("confidence") {
        None | Some(serde_json::Value::Null) => None,
        Some(x) => match x.as_f64() {
            Some(c) if (0.0..=1.0).contains(&c) => Some(c),
            _ => {
                return Err(format!(
                    "`confidence` must be a number from 0 to 1, got {x}"
                ))
            }
        },
    };
    let reason = v
        .get("reason")
        .and_then(|x| x.as_str())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    Ok((norm, confidence, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_plain_fenced_and_loose_replies() {
        let r = parse_judge_reply(
            "{\"verdict\": \"supported\", \"confidence\": 0.9, \"reason\": \"[1] says so\"}",
        )
        .unwrap();
        assert_eq!(r.verdict, Support::Supported);
        assert_eq!(r.confidence, Some(0.9));
        assert_eq!(r.reason.as_deref(), Some("[1] says so"));
        let r = parse_judge_reply("```json\n{\"verdict\": \"Partially supported\"}\n```").unwrap();
        assert_eq!(r.verdict, Support::PartiallySupported);
        assert_eq!((r.confidence, r.reason), (None, None));
        assert_eq!(
            parse_judge_reply("{\"verdict\":\"not-evaluable\",\"reason\":\"cut\"}")
                .unwrap()
                .verdict,
            Support::NotEvaluable
        );
    }

    #[test]
    fn refuses_what_is_not_one_of_the_four() {
        for bad in [
            "supported",
            "{\"verdict\": \"true\"}",
            "{\"verdict\": 1}",
            "{\"verdict\": \"supported\", \"confidence\": 3}",
            "{\"verdict\": \"supported\"",
            "} {",
        ] {
            assert!(parse_judge_reply(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_documented_prompt_is_the_prompt_sent() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/grounding.md"),
        )
        .expect("docs/grounding.md");
        assert!(
            doc.contains(JUDGE_SYSTEM_PROMPT),
            "docs/grounding.md must quote judge/1 word for word"
        );
    }

    #[test]
    fn the_method_names_the_prompt() {
        let m = judge_method();
        assert!(m.starts_with("judge/1 sha256:"));
        assert_eq!(m.len(), "judge/1 sha256:".len() + 16);
    }
}
