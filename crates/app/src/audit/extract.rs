//! `audit extract`: a recorded answer split into suggested material claims by a chat model
//! (fixed, versioned prompt `claims-v1`), each with the words of the answer that state it
//! located in the answer and the citations they carry. The suggestions are written to their
//! own file; the case file is never changed: a person copies the claims they accept.

use std::path::Path;

use serde_json::{json, Value};
use veredicto_embed::JsonSchema;

use super::AuditTarget;
use crate::chat::{json_object, Asker, Prompt, Tally};
use crate::{Error, Events, Result};

/// The prompt of `audit extract`.
pub const CLAIMS: Prompt = Prompt {
    name: "claims-v1",
    text: include_str!("../../prompts/claims-v1.txt"),
};

/// Largest answer text put in a prompt, in characters.
const MAX_ANSWER: usize = 8000;

/// What `audit extract` wrote.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// One record per answer: case, answer, the suggested claims.
    pub records: Vec<Value>,
    /// Claims suggested in all.
    pub claims: usize,
    /// Replies unreadable twice, `case answer: why` (nothing suggested there).
    pub failures: Vec<String>,
    pub tally: Tally,
}

/// The JSON schema of a reply.
pub fn reply_schema() -> JsonSchema {
    JsonSchema {
        name: "claims".into(),
        schema: json!({
            "type": "object", "additionalProperties": false, "required": ["claims"],
            "properties": {"claims": {"type": "array", "items": {
                "type": "object", "additionalProperties": false,
                "required": ["text", "quote", "citations"],
                "properties": {
                    "text": {"type": "string"},
                    "quote": {"type": "string"},
                    "citations": {"type": "array", "items": {"type": "string"}},
                },
            }}},
        }),
    }
}

/// One claim as read: `(text, quote, start, end, citations)`, offsets in characters of the
/// answer text.
type Suggested = (String, String, usize, usize, Vec<String>);

fn read_reply(
    reply: &str,
    answer: &str,
    cited: &[String],
) -> std::result::Result<Vec<Suggested>, String> {
    let o = json_object(reply)?;
    let Some(Value::Array(items)) = o.get("claims") else {
        return Err(format!(
            "the reply has no `claims` list: {:?}",
            crate::chat::excerpt(reply)
        ));
    };
    let mut out = Vec::new();
    for (i, c) in items.iter().enumerate() {
        let (Some(text), Some(quote)) = (c["text"].as_str(), c["quote"].as_str()) else {
            return Err(format!("claims[{i}] needs `text` and `quote` strings"));
        };
        let (text, quote) = (text.trim(), quote.trim());
        if text.is_empty() || quote.is_empty() {
            return Err(format!("claims[{i}]: empty `text` or `quote`"));
        }
        let Some(at) = answer.find(quote) else {
            return Err(format!(
                "claims[{i}]'s quote is not in the answer: {:?}",
                crate::chat::excerpt(quote)
            ));
        };
        let mut citations = Vec::new();
        for x in c["citations"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let Some(id) = x.as_str() else {
                return Err(format!("claims[{i}].citations holds a non-string"));
            };
            if !cited.iter().any(|c| c == id) {
                return Err(format!(
                    "claims[{i}] cites {:?}, which the answer does not show",
                    crate::chat::excerpt(id)
                ));
            }
            citations.push(id.to_owned());
        }
        let start = answer[..at].chars().count();
        out.push((
            text.to_owned(),
            quote.to_owned(),
            start,
            start + quote.chars().count(),
            citations,
        ));
    }
    Ok(out)
}

/// Asks for the claims of every answer of `target`, in file order, and writes one record
/// per answer to `out` (JSONL, atomically). Claim IDs are `S-<answer>-<n>`.
pub fn extract(
    target: &AuditTarget,
    asker: &Asker,
    out: &Path,
    events: Events<'_>,
) -> Result<Extracted> {
    let schema = reply_schema();
    let mut records = Vec::new();
    let mut failures = Vec::new();
    let mut claims = 0;
    for case in &target.set.cases {
        for a in &case.answers {
            events.check()?;
            let cited: Vec<String> = a.citations.iter().map(|c| c.id.clone()).collect();
            let text = match a.text.char_indices().nth(MAX_ANSWER) {
                Some((i, _)) => &a.text[..i],
                None => a.text.as_str(),
            };
            let user = format!(
                "Question:\n{}\n\nAnswer (citation IDs shown: {}):\n{}\n",
                case.query.trim(),
                if cited.is_empty() {
                    "none".to_owned()
                } else {
                    cited.join(", ")
                },
                text
            );
            match asker.ask(&CLAIMS, &user, &schema, |r| read_reply(r, &a.text, &cited))? {
                Ok(ans) => {
                    claims += ans.value.len();
                    records.push(json!({
                        "case": case.id, "answer": a.id, "origin": "suggestion",
                        "claims": ans.value.iter().enumerate().map(|(n, (t, q, s, e, c))| json!({
                            "id": format!("S-{}-{}", a.id, n + 1), "text": t, "quote": q,
                            "start": s, "end": e, "citations": c,
                        })).collect::<Vec<_>>(),
                        "suggested": {"model": ans.model, "prompt": CLAIMS.fingerprint(), "input": ans.input},
                    }));
                }
                Err(why) => failures.push(format!("case {} answer {}: {why}", case.id, a.id)),
            }
        }
    }
    let mut text = String::new();
    for r in &records {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    crate::files::write_atomic(out, text.as_bytes())
        .map_err(|e| Error::Message(format!("writing {}: {e}", out.display())))?;
    Ok(Extracted {
        records,
        claims,
        failures,
        tally: asker.tally(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_located_and_cite_only_what_the_answer_shows() {
        let answer = "Puedes devolverlo en 30 días.[D-01] Se completa en cinco días.";
        let cited = vec!["D-01".to_owned()];
        let ok = read_reply(
            r#"{"claims": [{"text": "30 días", "quote": "devolverlo en 30 días", "citations": ["D-01"]}]}"#,
            answer,
            &cited,
        )
        .unwrap();
        assert_eq!((ok[0].2, ok[0].3), (7, 28));
        for bad in [
            r#"{"claims": [{"text": "t", "quote": "en 60 días", "citations": []}]}"#,
            r#"{"claims": [{"text": "t", "quote": "cinco días", "citations": ["D-09"]}]}"#,
            r#"{"claims": "none"}"#,
            "no claims",
        ] {
            assert!(read_reply(bad, answer, &cited).is_err(), "{bad}");
        }
    }
}
