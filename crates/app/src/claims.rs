//! The workbench's claims area (`veredicto serve`): the queue of claims of an audit target
//! (a case file, or an audit run in the history) waiting for a verdict or in disagreement,
//! one claim's card (the query, the answer with the claim's sentence, each cited passage's
//! exact text, the required facts, the verdict in force and its annexes, the model's latest
//! suggestion, the answer's relevance verdicts), the claims reopened by a source change,
//! and progress. Verdicts are appended by [`crate::audit::record::review`] and
//! [`crate::audit::record::review_relevance`], exactly as `veredicto audit review` appends
//! them; agreement is
//! [`crate::audit::agreement`], as `veredicto audit agreement` computes it.

use std::collections::BTreeSet;

use unicode_segmentation::UnicodeSegmentation;
use veredicto_grounding::{self as g, Support};

use crate::audit::AuditTarget;

/// Which claims the queue lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// Claims without a verdict in force.
    Waiting,
    /// Claims whose verdict in force a later reviewer or the model's latest suggestion
    /// disagrees with.
    Disagreements,
    /// Every claim.
    All,
}

impl std::str::FromStr for Show {
    type Err = String;
    fn from_str(s: &str) -> Result<Show, String> {
        match s {
            "" | "waiting" => Ok(Show::Waiting),
            "disagreements" => Ok(Show::Disagreements),
            "all" => Ok(Show::All),
            other => Err(format!(
                "`{other}`: show waiting, disagreements or all claims"
            )),
        }
    }
}

/// One claim of the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub case: String,
    pub answer: String,
    pub claim: String,
    pub text: String,
    /// The verdict in force (the case file's, else the first review's).
    pub verdict: Option<Support>,
    /// Reviews appended for the claim (the first one, when it is the verdict in force, and
    /// the annexes).
    pub reviews: usize,
    /// The model's latest suggestion.
    pub suggestion: Option<Support>,
    /// A later reviewer or the latest suggestion disagrees with the verdict in force.
    pub disagreement: bool,
}

/// The queue and where the review stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Queue {
    /// The claims listed, in file order (case, answer, claim).
    pub rows: Vec<Row>,
    /// Claims in the target.
    pub claims: usize,
    /// Claims with a verdict in force.
    pub decided: usize,
    /// Claims in disagreement.
    pub disagreements: usize,
    /// Recorded answers in the target.
    pub answers: usize,
    /// Answers with an answer-relevance verdict in force.
    pub answers_judged: usize,
}

/// Who gave each verdict on a claim: the case file's reviewer (when the file holds the
/// verdict), then every review of the log, in order.
fn reviewers_of(c: &g::Claim, reviews: &[g::ReviewRecord]) -> Vec<String> {
    let mut v = Vec::new();
    if c.support.is_some() {
        v.push(c.reviewer.clone().unwrap_or_default());
    }
    v.extend(
        reviews
            .iter()
            .filter(|r| r.claim == c.id)
            .map(|r| r.reviewer.clone()),
    );
    v
}

fn latest_suggestion<'a>(
    claim: &str,
    suggestions: &'a [g::SuggestionRecord],
) -> Option<&'a g::SuggestionRecord> {
    suggestions.iter().rev().find(|s| s.claim == claim)
}

fn disagreement(c: &g::Claim, t: &AuditTarget) -> bool {
    let Some(first) = g::effective_support(c, &t.reviews) else {
        return false;
    };
    let skip = usize::from(c.support.is_none());
    t.reviews
        .iter()
        .filter(|r| r.claim == c.id)
        .skip(skip)
        .any(|r| r.support != first)
        || latest_suggestion(&c.id, &t.suggestions).is_some_and(|s| s.suggestion != first)
}

/// The claims of `t` that `show` asks for. With `blind_for` (a blind second review by that
/// reviewer), the claims that reviewer has not judged yet, whatever `show` says; the rows
/// then carry no verdict, suggestion or disagreement, so that nothing anchors the reviewer.
pub fn queue(t: &AuditTarget, show: Show, blind_for: Option<&str>) -> Queue {
    let mut rows = Vec::new();
    let (mut claims, mut decided, mut disagreements) = (0, 0, 0);
    let (mut answers, mut answers_judged) = (0, 0);
    for case in &t.set.cases {
        for a in &case.answers {
            answers += 1;
            answers_judged +=
                usize::from(g::effective_relevance(&case.id, &a.id, &t.relevance).is_some());
            for c in &a.claims {
                claims += 1;
                let verdict = g::effective_support(c, &t.reviews);
                let differs = disagreement(c, t);
                decided += usize::from(verdict.is_some());
                disagreements += usize::from(differs);
                let who = reviewers_of(c, &t.reviews);
                let listed = match blind_for {
                    Some(me) => !who.iter().any(|w| w == me),
                    None => match show {
                        Show::Waiting => verdict.is_none(),
                        Show::Disagreements => differs,
                        Show::All => true,
                    },
                };
                if !listed {
                    continue;
                }
                let blind = blind_for.is_some();
                rows.push(Row {
                    case: case.id.clone(),
                    answer: a.id.clone(),
                    claim: c.id.clone(),
                    text: c.text.clone(),
                    verdict: if blind { None } else { verdict },
                    reviews: if blind {
                        0
                    } else {
                        t.reviews.iter().filter(|r| r.claim == c.id).count()
                    },
                    suggestion: if blind {
                        None
                    } else {
                        latest_suggestion(&c.id, &t.suggestions).map(|s| s.suggestion)
                    },
                    disagreement: !blind && differs,
                });
            }
        }
    }
    Queue {
        rows,
        claims,
        decided,
        disagreements,
        answers,
        answers_judged,
    }
}

/// A claim whose verdict was given against cited evidence that has since changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Reopened {
    pub case: String,
    pub answer: String,
    pub claim: String,
    pub text: String,
    /// The verdict in force, given against the old evidence.
    pub verdict: Support,
    /// What changed, one entry per cited passage or source that changed
    /// (`D-02#p07 refunds-v2 -> refunds-v3: passage text changed`).
    pub changes: Vec<String>,
    /// The cited passages as the current sources hold them, in the order of `changes`:
    /// what the reviewer judges the claim against now (nothing for a removed passage or
    /// source, or a citation of a whole source).
    pub now: Vec<CurrentPassage>,
}

/// A cited passage in the current sources: `SOURCE@VERSION#PASSAGE` and its text (absent
/// when the sources file gives only its hash).
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentPassage {
    pub reference: String,
    pub text: Option<String>,
}

/// The claims of `t` with a verdict in force whose cited passages changed in `current`
/// (what `veredicto audit impact` computes: the passage's SHA-256 differs, the passage or
/// source is gone, or a whole cited source's passages changed), in file order.
pub fn reopened(t: &AuditTarget, current: &g::SourceSet) -> Vec<Reopened> {
    let mut out: Vec<Reopened> = Vec::new();
    for hit in g::impact(&t.set, current) {
        let Some(c) = t.claim(&hit.claim) else {
            continue;
        };
        let Some(verdict) = g::effective_support(c, &t.reviews) else {
            continue;
        };
        let what = format!(
            "{}{} {} -> {}: {}",
            hit.source,
            hit.passage
                .as_deref()
                .map(|p| format!("#{p}"))
                .unwrap_or_default(),
            hit.old_version,
            hit.new_version.as_deref().unwrap_or("(removed)"),
            hit.change
        );
        let now = hit.passage.as_deref().and_then(|pid| {
            let source = current.sources.iter().find(|s| s.id == hit.source)?;
            let p = source.passages.iter().find(|p| p.id == pid)?;
            Some(CurrentPassage {
                reference: format!("{}@{}#{}", source.id, source.version, p.id),
                text: p.text.clone(),
            })
        });
        match out.last_mut() {
            Some(last) if last.claim == hit.claim => {
                last.changes.push(what);
                last.now.extend(now);
            }
            _ => out.push(Reopened {
                case: hit.case.clone(),
                answer: hit.answer.clone(),
                claim: hit.claim.clone(),
                text: c.text.clone(),
                verdict,
                changes: vec![what],
                now: now.into_iter().collect(),
            }),
        }
    }
    out
}

/// An answer-relevance verdict given on an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenRelevance {
    pub relevance: g::Relevance,
    pub reason: String,
    pub reviewer: String,
    pub time: String,
}

/// A passage a claim cites, as the case recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct CitedPassage {
    /// The citation's ID in the answer (`D-01`).
    pub citation: String,
    pub source: String,
    /// The source's version.
    pub version: Option<String>,
    pub passage: Option<String>,
    /// The passage's exact text (`None`: the case gives only its hash, or the citation
    /// names no passage of a recorded source).
    pub text: Option<String>,
    /// Its position in the retrieved list (1-based), when it was retrieved.
    pub position: Option<u32>,
}

impl CitedPassage {
    /// `source@version#passage`.
    pub fn reference(&self) -> String {
        let mut s = self.source.clone();
        if let Some(v) = &self.version {
            s.push('@');
            s.push_str(v);
        }
        if let Some(p) = &self.passage {
            s.push('#');
            s.push_str(p);
        }
        s
    }
}

/// A verdict given on the claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Given {
    pub support: Support,
    pub reason: String,
    pub reviewer: String,
    pub time: String,
}

/// Everything a reviewer sees of one claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub case: String,
    pub query: String,
    pub answer: String,
    pub answer_text: String,
    /// The byte range of the answer's sentence the claim comes from (most words shared;
    /// ties: the first), `None` when no sentence shares a word.
    pub highlight: Option<(usize, usize)>,
    pub claim: String,
    pub text: String,
    pub passages: Vec<CitedPassage>,
    /// The required facts the claim maps to: ID and text.
    pub facts: Vec<(String, String)>,
    /// The verdict in force, then every annex (later reviews), in order.
    pub verdicts: Vec<Given>,
    /// The model's latest suggestion.
    pub suggestion: Option<g::SuggestionRecord>,
    /// The answer's relevance verdict in force, then every annex, in order.
    pub relevance: Vec<GivenRelevance>,
    /// The next claim in file order, for moving on.
    pub next: Option<String>,
}

fn words(text: &str) -> BTreeSet<String> {
    text.unicode_words()
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() > 2)
        .collect()
}

/// Sentences of an answer as byte ranges: a sentence ends at the whitespace after a token
/// that ends in `.`, `!`, `?` or `…`, once any trailing bracketed citations (`[D-01]`)
/// are set aside.
pub fn sentences(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for token in text.split_whitespace() {
        let at = token.as_ptr() as usize - text.as_ptr() as usize;
        let from = *start.get_or_insert(at);
        if ends_sentence(token) {
            out.push((from, at + token.len()));
            start = None;
        }
    }
    if let Some(from) = start {
        out.push((from, text.trim_end().len()));
    }
    out
}

fn ends_sentence(token: &str) -> bool {
    let mut t = token;
    while let Some(stripped) = t.strip_suffix(']') {
        match stripped.rfind('[') {
            Some(open) => t = &stripped[..open],
            None => break,
        }
    }
    t.ends_with(['.', '!', '?', '…'])
}

fn highlight(answer: &str, claim: &str) -> Option<(usize, usize)> {
    let want = words(claim);
    let mut best: Option<((usize, usize), usize)> = None;
    for (s, e) in sentences(answer) {
        let shared = words(&answer[s..e]).intersection(&want).count();
        if shared > 0 && best.is_none_or(|(_, b)| shared > b) {
            best = Some(((s, e), shared));
        }
    }
    best.map(|(r, _)| r)
}

/// The card of `claim` in `t` (`None`: no such claim).
pub fn card(t: &AuditTarget, claim: &str) -> Option<Card> {
    let mut found = None;
    let mut next = None;
    'all: for case in &t.set.cases {
        for a in &case.answers {
            for c in &a.claims {
                if found.is_some() {
                    next = Some(c.id.clone());
                    break 'all;
                }
                if c.id == claim {
                    found = Some((case, a, c));
                }
            }
        }
    }
    let (case, a, c) = found?;
    let passages = c
        .citations
        .iter()
        .map(|cid| {
            let cit = a.citations.iter().find(|x| &x.id == cid);
            let source_id = cit.map_or(cid.clone(), |x| x.source.clone());
            let passage = cit.and_then(|x| x.passage.clone());
            let source = case.sources.iter().find(|s| s.id == source_id);
            let text = source.and_then(|s| {
                let texts: Vec<&str> = s
                    .passages
                    .iter()
                    .filter(|p| passage.as_ref().is_none_or(|id| &p.id == id))
                    .filter_map(|p| p.text.as_deref())
                    .collect();
                (!texts.is_empty()).then(|| texts.join("\n\n"))
            });
            let position = case
                .retrieval
                .iter()
                .find(|r| {
                    r.source == source_id
                        && (passage.is_none() || r.passage.as_ref() == passage.as_ref())
                })
                .map(|r| r.position);
            CitedPassage {
                citation: cid.clone(),
                source: source_id,
                version: source.map(|s| s.version.clone()),
                passage,
                text,
                position,
            }
        })
        .collect();
    let facts = c
        .facts
        .iter()
        .map(|f| {
            let text = case
                .required_facts
                .iter()
                .find(|x| &x.id == f)
                .map(|x| x.text.clone())
                .unwrap_or_default();
            (f.clone(), text)
        })
        .collect();
    let mut verdicts = Vec::new();
    if let Some(s) = &c.support {
        verdicts.push(Given {
            support: s.verdict,
            reason: s.reason.clone(),
            reviewer: c.reviewer.clone().unwrap_or_default(),
            time: c.time.clone().unwrap_or_default(),
        });
    }
    verdicts.extend(t.reviews.iter().filter(|r| r.claim == c.id).map(|r| Given {
        support: r.support,
        reason: r.reason.clone(),
        reviewer: r.reviewer.clone(),
        time: r.time.clone(),
    }));
    Some(Card {
        case: case.id.clone(),
        query: case.query.clone(),
        answer: a.id.clone(),
        answer_text: a.text.clone(),
        highlight: highlight(&a.text, &c.text),
        claim: c.id.clone(),
        text: c.text.clone(),
        passages,
        facts,
        verdicts,
        suggestion: latest_suggestion(&c.id, &t.suggestions).cloned(),
        relevance: g::relevance_reviews(&case.id, &a.id, &t.relevance)
            .into_iter()
            .map(|r| GivenRelevance {
                relevance: r.relevance,
                reason: r.reason.clone(),
                reviewer: r.reviewer.clone(),
                time: r.time.clone(),
            })
            .collect(),
        next,
    })
}

/// The first claim `queue` lists after `claim` (in file order), else the first it lists.
pub fn next_in(queue: &Queue, claim: &str) -> Option<String> {
    let at = queue.rows.iter().position(|r| r.claim == claim);
    match at {
        Some(i) => queue.rows.get(i + 1).or(queue.rows.first()),
        None => queue.rows.first(),
    }
    .map(|r| r.claim.clone())
    .filter(|c| c != claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_splits_after_a_terminal_even_before_its_citation() {
        let a = "Puedes devolver todo en 30 días.[D-01] El reembolso empieza ya.[D-02] Dura cinco días.";
        let s: Vec<&str> = sentences(a).iter().map(|(x, y)| &a[*x..*y]).collect();
        assert_eq!(
            s,
            [
                "Puedes devolver todo en 30 días.[D-01]",
                "El reembolso empieza ya.[D-02]",
                "Dura cinco días."
            ]
        );
        let (x, y) = highlight(a, "El reembolso empieza cuando se pide.").unwrap();
        assert_eq!(&a[x..y], "El reembolso empieza ya.[D-02]");
        assert_eq!(highlight(a, "xyz"), None);
    }

    #[test]
    fn the_q017_card_shows_the_cited_passage_its_position_and_the_fact() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/grounding/q017.yaml");
        let t = AuditTarget::from_file(&path).unwrap();
        let c = card(&t, "C-017-3").unwrap();
        assert_eq!(c.passages.len(), 1);
        assert_eq!(c.passages[0].reference(), "D-02@refunds-v2#p07");
        assert_eq!(c.passages[0].position, Some(2));
        assert!(c.passages[0]
            .text
            .as_deref()
            .unwrap()
            .starts_with("El procesamiento del reembolso"));
        assert_eq!(c.facts[0].0, "F3");
        let (x, y) = c.highlight.unwrap();
        assert_eq!(
            &c.answer_text[x..y],
            "El reembolso comienza cuando envías la solicitud.[D-02]"
        );
        assert_eq!(c.next.as_deref(), Some("C-017-4"));
        let q = queue(&t, Show::All, None);
        assert_eq!((q.claims, q.decided), (4, 4));
        assert!(queue(&t, Show::Waiting, None).rows.is_empty());
        assert_eq!(queue(&t, Show::All, Some("ana")).rows.len(), 4);
        assert!(queue(&t, Show::All, Some("seed-004")).rows.is_empty());
    }
}
