//! `audit suggest`: support verdicts suggested by a local NLI model or by a chat model
//! asked as a judge (fixed, versioned prompt), stored beside the reviewer's verdict, never
//! in its place.

use std::path::PathBuf;
use veredicto_grounding as g;

use super::AuditTarget;
use crate::{Context, Error, Result};

/// Who suggests.
#[derive(Debug, Clone)]
pub enum Suggester {
    /// A local sequence-classification model folder with NLI labels.
    Nli(PathBuf),
    /// An OpenAI-compatible chat server asked with the `judge/1` prompt.
    Judge(JudgeSettings),
}

/// The chat judge and how it is asked.
#[derive(Clone)]
pub struct JudgeSettings {
    /// The server (`http://host:port`, `.../v1` or the full `/chat/completions` URL).
    pub url: String,
    /// The `model` asked for.
    pub model: String,
    /// The API key (sent as a Bearer token), already read by the caller. Never printed.
    pub api_key: Option<String>,
    /// Seed sent to the judge.
    pub seed: u64,
    /// Timeout of one request.
    pub timeout: std::time::Duration,
    /// Retries after a 429, a 5xx or a timeout.
    pub retries: u32,
}

impl std::fmt::Debug for JudgeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeSettings")
            .field("url", &veredicto_core::redact::url(&self.url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("seed", &self.seed)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish()
    }
}

/// What was suggested and stored.
#[derive(Debug, Clone)]
pub struct Suggested {
    /// The suggestions appended.
    pub records: Vec<g::SuggestionRecord>,
    /// The answer-relevance suggestions appended (a chat judge only).
    pub relevance: Vec<g::RelevanceSuggestion>,
    /// Where they were appended (a log file, or the run in the history).
    pub place: String,
    /// Warnings of the append (a torn record moved aside).
    pub warnings: Vec<String>,
}

/// Suggests a verdict for every claim of `target` with cited passage text and appends the
/// suggestions (all or none) to the target's records. A judge reply that cannot be read is
/// an error naming the claim and what is wrong with the reply; the readable suggestions of
/// the same pass are appended first, so that no answer paid for is lost.
pub fn suggest(target: &AuditTarget, by: &Suggester, time: &str) -> Result<Suggested> {
    let (records, relevance, failures) = match by {
        Suggester::Nli(dir) => (nli_suggestions(target, dir, time)?, Vec::new(), Vec::new()),
        Suggester::Judge(j) => judge_suggestions(target, j, time)?,
    };
    let lines: Vec<g::SuggestionLine> = records
        .iter()
        .cloned()
        .map(g::SuggestionLine::Claim)
        .chain(relevance.iter().cloned().map(g::SuggestionLine::Relevance))
        .collect();
    let appended = target.append_suggestion_lines(&lines)?;
    let suggested = Suggested {
        records,
        relevance,
        place: appended.place,
        warnings: appended.warnings,
    };
    if !failures.is_empty() {
        return Err(Error::UnreadableReply(Box::new(UnreadableReply {
            failures,
            suggested,
        })));
    }
    Ok(suggested)
}

/// Judge replies that could not be read (an error of the command: the judge did not answer
/// as asked). The suggestions of the same pass that could be read were appended first.
#[derive(Debug, Clone)]
pub struct UnreadableReply {
    /// The claims without a suggestion, with what is wrong with each reply
    /// (`Q-017 C-017-3: …`).
    pub failures: Vec<String>,
    /// What was suggested and appended.
    pub suggested: Suggested,
}

impl std::fmt::Display for UnreadableReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first = self.failures.first().map(String::as_str).unwrap_or("");
        let (claim, why) = first.split_once(": ").unwrap_or((first, "unreadable"));
        write!(
            f,
            "the judge's reply for {} could not be read: {}",
            veredicto_core::redact::message(claim),
            veredicto_core::redact::message(why)
        )?;
        if self.failures.len() > 1 {
            write!(f, " (and {} more claim(s))", self.failures.len() - 1)?;
        }
        write!(
            f,
            "; {} suggestion(s) appended to {}",
            self.suggested.records.len() + self.suggested.relevance.len(),
            self.suggested.place
        )
    }
}

impl std::error::Error for UnreadableReply {}

/// A local NLI sequence-classification model, for `veredicto_grounding::nli_suggestions`.
struct Nli(veredicto_embed::CrossEncoder);

impl g::NliModel for Nli {
    fn labels(&self) -> &[String] {
        self.0.labels()
    }
    fn logits(
        &self,
        premise: &str,
        hypothesis: &str,
    ) -> std::result::Result<Option<Vec<f32>>, g::suggest::ModelError> {
        Ok(self.0.logits(premise, &[hypothesis])?.into_iter().next())
    }
}

/// Suggestions from a local NLI sequence-classification model.
fn nli_suggestions(
    t: &AuditTarget,
    dir: &std::path::Path,
    time: &str,
) -> Result<Vec<g::SuggestionRecord>> {
    use veredicto_embed::Reranker;
    let model = veredicto_embed::CrossEncoder::load(dir)
        .with_context(|| format!("loading NLI model {}", dir.display()))?;
    let fp = model.fingerprint();
    let model_id = format!(
        "{} ({}; {})",
        fp.name,
        fp.architecture,
        fp.files
            .get("model.safetensors")
            .cloned()
            .unwrap_or_default()
    );
    let name = dir.display().to_string();
    Ok(g::nli_suggestions(
        &t.set,
        &Nli(model),
        &name,
        &model_id,
        time,
    )?)
}

/// An OpenAI-compatible chat client, for `veredicto_grounding::judge_suggestions`.
struct ChatJudge(veredicto_embed::ChatClient);

impl g::Judge for ChatJudge {
    fn complete(
        &self,
        system: &str,
        user: &str,
    ) -> std::result::Result<g::JudgeReply, g::suggest::ModelError> {
        let r = self.0.complete(system, user)?;
        Ok(g::JudgeReply {
            content: r.content,
            model: r.model,
        })
    }
}

/// Suggestions from a chat model asked with the fixed `judge/1` prompt for every claim, then
/// with the `relevance/1` prompt for every answer. Replies that cannot be read are returned
/// as failures (named by claim or answer), not stored.
#[allow(clippy::type_complexity)]
fn judge_suggestions(
    t: &AuditTarget,
    j: &JudgeSettings,
    time: &str,
) -> Result<(
    Vec<g::SuggestionRecord>,
    Vec<g::RelevanceSuggestion>,
    Vec<String>,
)> {
    let mut cfg = veredicto_embed::ChatConfig::new(&j.url, j.model.clone());
    cfg.seed = Some(j.seed);
    cfg.timeout = j.timeout;
    cfg.retries = j.retries;
    cfg.api_key = j.api_key.clone();
    let client = veredicto_embed::ChatClient::new(cfg)?;
    let url = client.url().to_string();
    let judge = ChatJudge(client);
    let mut out = g::judge_suggestions(&t.set, &judge, &j.model, &url, time)?;
    let rel = g::relevance_suggestions(&t.set, &judge, &j.model, &url, time)?;
    out.failures.extend(rel.failures);
    Ok((out.records, rel.records, out.failures))
}
