//! Suggested support from a model (e.g. an NLI cross-encoder): stored beside the human verdict
//! in `<cases>.suggestions.jsonl` (append-only), never in its place. This module holds the
//! records, the label mapping and the orchestration over any model behind [`NliModel`] or
//! [`Judge`]; loading a model or opening a connection is the caller's job.

use crate::error::GroundingError;
use crate::jsonl::{AppendReport, LogRead};
use crate::model::{CaseSet, Support};
use crate::review::ReviewRecord;
use crate::sheet::effective_support;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuggestionRecord {
    pub case: String,
    pub answer: String,
    pub claim: String,
    /// The suggested verdict (from the top label).
    pub suggestion: Support,
    /// The model's top label (`entailment`, `neutral`, `contradiction`), or the verdict a
    /// judge returned.
    pub label: String,
    /// Softmax probability of every label (NLI models).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub probabilities: BTreeMap<String, f64>,
    /// The judge's stated confidence in [0, 1], when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The judge's reason, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Model identity (name / fingerprint, or endpoint + model for a judge).
    pub model: String,
    /// How the input was built (versioned: `nli/1`, `judge/1`).
    pub method: String,
    pub time: String,
}

impl SuggestionRecord {
    /// The suggestion's score: the probability of the top label, else the judge's confidence.
    pub fn score(&self) -> Option<f64> {
        self.probabilities
            .get(&self.label)
            .copied()
            .or(self.confidence)
    }
}

/// The input construction of NLI suggestions, versioned.
pub const NLI_METHOD: &str =
    "nli/1: premise = cited passage texts joined with a space, hypothesis = claim text";

/// `<cases>.suggestions.jsonl`.
pub fn suggestion_log_path(cases: &Path) -> PathBuf {
    let mut s = cases.as_os_str().to_os_string();
    s.push(".suggestions.jsonl");
    PathBuf::from(s)
}

/// Entailment suggests `supported`; contradiction and neutral suggest `unsupported` (the passage
/// does not justify the claim). Unknown labels give `None`.
pub fn label_to_support(label: &str) -> Option<Support> {
    match label.to_ascii_lowercase().as_str() {
        "entailment" | "entails" | "supports" | "support" => Some(Support::Supported),
        "contradiction" | "contradicts" | "neutral" | "not_entailment" => {
            Some(Support::Unsupported)
        }
        _ => None,
    }
}

/// Softmax of logits, as f64.
pub fn softmax(logits: &[f32]) -> Vec<f64> {
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let e: Vec<f64> = logits.iter().map(|&x| (x as f64 - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|x| x / s).collect()
}

/// The index of the highest probability; ties (and NaN) go to the lowest index; 0 when empty.
pub fn argmax(p: &[f64]) -> usize {
    let (top, _) = p
        .iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &v)| {
            if v > bv {
                (i, v)
            } else {
                (bi, bv)
            }
        });
    top
}

/// A boxed error of a model or a server, shown as its own message.
pub type ModelError = Box<dyn std::error::Error + Send + Sync>;

/// Why suggestions could not be made (nothing is stored then).
#[derive(Debug, thiserror::Error)]
pub enum SuggestError {
    /// The model has no `entailment` label.
    #[error("{model}: not an NLI model: labels {labels:?} have no `entailment`")]
    NotNli { model: String, labels: Vec<String> },
    /// The top label has no verdict (see [`label_to_support`]).
    #[error("{model}: label `{label}` has no support mapping")]
    UnmappedLabel { model: String, label: String },
    /// Running the model failed.
    #[error(transparent)]
    Model(ModelError),
    /// The judge could not be asked (after its retries).
    #[error("judge for claim {claim}")]
    Judge {
        claim: String,
        #[source]
        error: ModelError,
    },
}

/// A sequence-classification model over (premise, hypothesis) pairs.
pub trait NliModel {
    /// Its labels, in the order of its logits.
    fn labels(&self) -> &[String];
    /// The logits of one pair (`None`: the model gave no row).
    fn logits(&self, premise: &str, hypothesis: &str) -> Result<Option<Vec<f32>>, ModelError>;
}

/// Suggestions for every claim with cited passage text (see [`nli_inputs`]): the softmax of
/// the logits, the top label ([`argmax`]) and its verdict ([`label_to_support`]).
/// `name` names the model in messages, `model_id` is recorded with every suggestion.
pub fn nli_suggestions(
    set: &CaseSet,
    model: &dyn NliModel,
    name: &str,
    model_id: &str,
    time: &str,
) -> Result<Vec<SuggestionRecord>, SuggestError> {
    let labels: Vec<String> = model.labels().to_vec();
    if !labels.iter().any(|l| l.eq_ignore_ascii_case("entailment")) {
        return Err(SuggestError::NotNli {
            model: name.to_string(),
            labels,
        });
    }
    let mut recs = Vec::new();
    for (case, answer, claim, premise, hypothesis) in nli_inputs(set) {
        let Some(row) = model
            .logits(&premise, &hypothesis)
            .map_err(SuggestError::Model)?
        else {
            continue;
        };
        let p = softmax(&row);
        let label = labels.get(argmax(&p)).cloned().unwrap_or_default();
        let Some(suggestion) = label_to_support(&label) else {
            return Err(SuggestError::UnmappedLabel {
                model: name.to_string(),
                label,
            });
        };
        recs.push(SuggestionRecord {
            case,
            answer,
            claim,
            suggestion,
            label,
            probabilities: labels.iter().cloned().zip(p.iter().copied()).collect(),
            confidence: None,
            reason: None,
            model: model_id.to_string(),
            method: NLI_METHOD.into(),
            time: time.to_string(),
        });
    }
    Ok(recs)
}

/// A chat model's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeReply {
    pub content: String,
    /// The model the server says answered, when it says.
    pub model: Option<String>,
}

/// A chat model asked as a judge.
pub trait Judge {
    /// One completion of a system and a user message.
    fn complete(&self, system: &str, user: &str) -> Result<JudgeReply, ModelError>;
}

/// What a judge suggested, and the claims whose reply could not be read (named by case
/// and claim, with the reason; they are not stored).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgeOutcome {
    pub records: Vec<SuggestionRecord>,
    pub failures: Vec<String>,
}

/// Suggestions from a chat model asked with the fixed `judge/1` prompt, for every claim with
/// cited passage text. `model` is the model asked for at `url` (both recorded).
pub fn judge_suggestions(
    set: &CaseSet,
    judge: &dyn Judge,
    model: &str,
    url: &str,
    time: &str,
) -> Result<JudgeOutcome, SuggestError> {
    let method = crate::judge::judge_method();
    let mut out = JudgeOutcome::default();
    for input in crate::judge::judge_inputs(set) {
        let reply = judge
            .complete(
                crate::judge::JUDGE_SYSTEM_PROMPT,
                &crate::judge::judge_user_message(&input),
            )
            .map_err(|error| SuggestError::Judge {
                claim: input.claim.clone(),
                error,
            })?;
        match crate::judge::parse_judge_reply(&reply.content) {
            Ok(v) => {
                let answered = match &reply.model {
                    Some(m) if m != model => format!(" (answered by {m})"),
                    _ => String::new(),
                };
                out.records.push(SuggestionRecord {
                    case: input.case,
                    answer: input.answer,
                    claim: input.claim,
                    suggestion: v.verdict,
                    label: v.verdict.as_str().into(),
                    probabilities: Default::default(),
                    confidence: v.confidence,
                    reason: v.reason,
                    model: format!("{model} @ {url}{answered}"),
                    method: method.clone(),
                    time: time.to_string(),
                });
            }
            Err(e) => out
                .failures
                .push(format!("{} {}: {e}", input.case, input.claim)),
        }
    }
    Ok(out)
}

/// (case, answer, claim ID, premise, hypothesis) for every claim with at least one cited
/// passage text: the premise is the cited passages' texts joined with a space.
pub fn nli_inputs(set: &CaseSet) -> Vec<(String, String, String, String, String)> {
    crate::judge::judge_inputs(set)
        .into_iter()
        .map(|i| {
            let premise: Vec<String> = i.passages.into_iter().map(|(_, t)| t).collect();
            (i.case, i.answer, i.claim, premise.join(" "), i.claim_text)
        })
        .collect()
}

/// Reads the log (absent = empty): its complete records; a torn last record is left out
/// (see [`read_suggestion_log`] for the warning). A bad line before the end names the line.
pub fn read_suggestions(path: &Path) -> Result<Vec<SuggestionRecord>, GroundingError> {
    Ok(read_suggestion_log(path)?.records)
}

/// Reads the log (absent = empty), with the length of its complete part and any torn tail:
/// its claim suggestions (relevance suggestions are left out; see [`read_suggestion_lines`]).
pub fn read_suggestion_log(path: &Path) -> Result<LogRead<SuggestionRecord>, GroundingError> {
    let l = read_suggestion_lines(path)?;
    Ok(LogRead {
        records: crate::relevance_judge::split_suggestion_lines(l.records).0,
        complete_len: l.complete_len,
        torn: l.torn,
    })
}

/// Reads the log (absent = empty): every line, claim and answer-relevance suggestions.
pub fn read_suggestion_lines(
    path: &Path,
) -> Result<LogRead<crate::relevance_judge::SuggestionLine>, GroundingError> {
    crate::jsonl::read_log(path)
}

/// Appends records, whole or absent (all of them or none; see [`crate::append_review`]).
pub fn append_suggestions(
    path: &Path,
    recs: &[SuggestionRecord],
) -> Result<AppendReport, GroundingError> {
    let lines: Vec<crate::relevance_judge::SuggestionLine> = recs
        .iter()
        .cloned()
        .map(crate::relevance_judge::SuggestionLine::Claim)
        .collect();
    crate::jsonl::append_log(path, &lines)
}

/// Appends suggestion lines of both kinds, whole or absent (all of them or none).
pub fn append_suggestion_lines(
    path: &Path,
    lines: &[crate::relevance_judge::SuggestionLine],
) -> Result<AppendReport, GroundingError> {
    crate::jsonl::append_log(path, lines)
}

/// Pairs (verdict in force, latest suggestion) for every claim that has both.
pub fn suggestion_pairs(
    set: &CaseSet,
    reviews: &[ReviewRecord],
    suggestions: &[SuggestionRecord],
) -> Vec<(Support, Support)> {
    let mut out = Vec::new();
    for case in &set.cases {
        for a in &case.answers {
            for c in &a.claims {
                let human = effective_support(c, reviews);
                let sug = suggestions.iter().rev().find(|s| s.claim == c.id);
                if let (Some(h), Some(s)) = (human, sug) {
                    out.push((h, s.suggestion));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CASES: &str = r#"
schema: veredicto-grounding/1
cases:
  - id: Q
    query: q
    snapshot: s
    sources: [{ id: D, version: v1, passages: [{ id: p, text: "The sky is blue." }] }]
    answers:
      - id: A
        text: "The sky is blue [D]. It rains."
        citations: [{ id: D, source: D, passage: p }]
        claims:
          - { id: A-1, text: "The sky is blue.", citations: [D] }
          - { id: A-2, text: "It rains." }
          - { id: A-3, text: "The sky is green.", citations: [D] }
"#;

    fn set() -> CaseSet {
        crate::load::parse_cases(Path::new("cases.yaml"), CASES).expect("valid cases")
    }

    /// Fixed logits per hypothesis: a stand-in for a classifier, to test the arithmetic.
    struct Fixed(Vec<String>, Vec<(&'static str, Vec<f32>)>);

    impl NliModel for Fixed {
        fn labels(&self) -> &[String] {
            &self.0
        }
        fn logits(&self, _premise: &str, h: &str) -> Result<Option<Vec<f32>>, ModelError> {
            Ok(self.1.iter().find(|(x, _)| *x == h).map(|(_, l)| l.clone()))
        }
    }

    fn labels(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn softmax_is_stable_and_sums_to_one() {
        let p = softmax(&[1000.0, 1000.0, 999.0]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((p[0] - p[1]).abs() < 1e-15);
        assert!(p[2] < p[0]);
        let q = softmax(&[0.0, (2.0f32).ln()]);
        assert!((q[0] - 1.0 / 3.0).abs() < 1e-6 && (q[1] - 2.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn argmax_takes_the_lowest_index_on_ties() {
        assert_eq!(argmax(&[0.2, 0.5, 0.3]), 1);
        assert_eq!(argmax(&[0.4, 0.4, 0.2]), 0);
        assert_eq!(argmax(&[0.1, 0.45, 0.45]), 1);
        assert_eq!(argmax(&[]), 0);
        assert_eq!(argmax(&[f64::NAN, 0.3]), 1);
    }

    #[test]
    fn labels_map_to_verdicts() {
        for l in ["entailment", "ENTAILMENT", "entails", "supports", "support"] {
            assert_eq!(label_to_support(l), Some(Support::Supported), "{l}");
        }
        for l in ["contradiction", "neutral", "not_entailment", "Contradicts"] {
            assert_eq!(label_to_support(l), Some(Support::Unsupported), "{l}");
        }
        assert_eq!(label_to_support("LABEL_0"), None);
    }

    #[test]
    fn nli_suggestions_take_the_top_label_of_every_cited_claim() {
        let m = Fixed(
            labels(&["contradiction", "entailment", "neutral"]),
            vec![
                ("The sky is blue.", vec![0.0, 3.0, 1.0]),
                ("The sky is green.", vec![4.0, 0.0, 1.0]),
            ],
        );
        let recs = nli_suggestions(&set(), &m, "tiny", "tiny (bert; abc)", "T").unwrap();
        let got: Vec<(&str, Support, &str)> = recs
            .iter()
            .map(|r| (r.claim.as_str(), r.suggestion, r.label.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("A-1", Support::Supported, "entailment"),
                ("A-3", Support::Unsupported, "contradiction"),
            ],
            "A-2 cites nothing and is skipped"
        );
        let p = &recs[0].probabilities;
        assert!((p.values().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(recs[0].score(), p.get("entailment").copied());
        assert_eq!(recs[0].model, "tiny (bert; abc)");
        assert_eq!(recs[0].method, NLI_METHOD);
        assert_eq!(recs[0].time, "T");
    }

    #[test]
    fn a_model_without_entailment_or_with_an_unmapped_top_label_is_refused() {
        let m = Fixed(labels(&["LABEL_0", "LABEL_1"]), vec![]);
        let e = nli_suggestions(&set(), &m, "dir", "id", "T").unwrap_err();
        assert_eq!(
            e.to_string(),
            "dir: not an NLI model: labels [\"LABEL_0\", \"LABEL_1\"] have no `entailment`"
        );
        let m = Fixed(
            labels(&["entailment", "other"]),
            vec![("The sky is blue.", vec![0.0, 1.0])],
        );
        let e = nli_suggestions(&set(), &m, "dir", "id", "T").unwrap_err();
        assert_eq!(e.to_string(), "dir: label `other` has no support mapping");
    }

    struct Replies(Vec<&'static str>, std::cell::Cell<usize>);

    impl Judge for Replies {
        fn complete(&self, system: &str, _user: &str) -> Result<JudgeReply, ModelError> {
            assert_eq!(system, crate::judge::JUDGE_SYSTEM_PROMPT);
            let i = self.1.get();
            self.1.set(i + 1);
            Ok(JudgeReply {
                content: self.0[i].to_string(),
                model: Some(if i == 0 { "m" } else { "m-2" }.to_string()),
            })
        }
    }

    #[test]
    fn judge_suggestions_store_readable_replies_and_name_the_rest() {
        let j = Replies(
            vec![
                r#"{"verdict": "supported", "confidence": 0.9, "reason": "it says so"}"#,
                "I think it is fine",
            ],
            Default::default(),
        );
        let out = judge_suggestions(&set(), &j, "m", "http://127.0.0.1:1/v1", "T").unwrap();
        assert_eq!(out.records.len(), 1);
        let r = &out.records[0];
        assert_eq!(
            (r.claim.as_str(), r.suggestion),
            ("A-1", Support::Supported)
        );
        assert_eq!(r.model, "m @ http://127.0.0.1:1/v1");
        assert_eq!(r.score(), Some(0.9));
        assert_eq!(r.method, crate::judge::judge_method());
        assert_eq!(out.failures.len(), 1);
        assert!(out.failures[0].starts_with("Q A-3: "), "{:?}", out.failures);
    }

    struct Down;

    impl Judge for Down {
        fn complete(&self, _: &str, _: &str) -> Result<JudgeReply, ModelError> {
            Err("connection refused".into())
        }
    }

    #[test]
    fn a_judge_that_cannot_be_asked_is_an_error_naming_the_claim() {
        let e = judge_suggestions(&set(), &Down, "m", "u", "T").unwrap_err();
        assert_eq!(e.to_string(), "judge for claim A-1");
        let source = std::error::Error::source(&e).expect("source");
        assert_eq!(source.to_string(), "connection refused");
    }
}
