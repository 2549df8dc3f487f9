//! Converter from the original SciFact release (Wadden et al. 2020: `corpus.jsonl`,
//! `claims_*.jsonl`) into frozen cases. One case per claim: the claim is the recorded
//! answer's single material claim, citing the rationale sentences of its cited abstracts
//! (the whole abstract when it holds no rationale); the expert label becomes the support
//! verdict: SUPPORT -> supported, CONTRADICT -> unsupported (contradicted), no rationale
//! (NOT ENOUGH INFO) -> unsupported. SciFact has no retrieval run and no required facts:
//! retrieval is empty and coverage undefined.

use crate::error::GroundingError;
use crate::model::*;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

#[derive(Deserialize)]
struct RawDoc {
    doc_id: u64,
    #[serde(default)]
    title: String,
    #[serde(rename = "abstract")]
    abstract_: Vec<String>,
}

#[derive(Deserialize)]
struct Rationale {
    sentences: Vec<usize>,
    label: String,
}

#[derive(Deserialize)]
struct RawClaim {
    id: u64,
    claim: String,
    #[serde(default)]
    evidence: BTreeMap<String, Vec<Rationale>>,
    #[serde(default)]
    cited_doc_ids: Vec<u64>,
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, GroundingError> {
    let text = std::fs::read_to_string(path).map_err(|e| GroundingError::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            veredicto_formats::json::from_str(l).map_err(|e| GroundingError::Parse {
                path: path.to_path_buf(),
                message: format!(
                    "line {}: {}",
                    i + 1,
                    veredicto_core::redact::message(&e.to_string())
                ),
            })
        })
        .collect()
}

/// Reads SciFact's corpus and a claims file (with labels: train or dev) into a case set.
pub fn scifact_cases(corpus: &Path, claims: &Path) -> Result<CaseSet, GroundingError> {
    let docs: HashMap<u64, RawDoc> = read_jsonl::<RawDoc>(corpus)?
        .into_iter()
        .map(|d| (d.doc_id, d))
        .collect();
    let raw: Vec<RawClaim> = read_jsonl(claims)?;
    let bad = |message: String| GroundingError::Parse {
        path: claims.to_path_buf(),
        message,
    };
    let mut cases = Vec::with_capacity(raw.len());
    for c in raw {
        let mut sources = Vec::new();
        let mut citations = Vec::new();
        let mut labels: Vec<String> = Vec::new();
        // SciFact lists some cited documents twice (claim 1245 in dev): de-duplicated, in order.
        let mut cited: Vec<u64> = Vec::new();
        for d in &c.cited_doc_ids {
            if !cited.contains(d) {
                cited.push(*d);
            }
        }
        for did in &cited {
            let d = docs.get(did).ok_or_else(|| {
                bad(format!(
                    "claim {}: cited doc {did} is not in the corpus",
                    c.id
                ))
            })?;
            let sid = d.doc_id.to_string();
            sources.push(Source {
                id: sid.clone(),
                version: "scifact-original".into(),
                uri: Some(format!("scifact:corpus/{sid}")),
                anchor: None,
                passages: d
                    .abstract_
                    .iter()
                    .enumerate()
                    .map(|(i, t)| Passage {
                        id: format!("s{i}"),
                        text: Some(t.clone()),
                        hash: None,
                        neighbours: None,
                        anchor: None,
                    })
                    .collect(),
            });
            let rats = c.evidence.get(&sid).map(Vec::as_slice).unwrap_or(&[]);
            if rats.is_empty() {
                citations.push(Citation {
                    id: sid.clone(),
                    source: sid.clone(),
                    passage: None,
                });
                labels.push(format!("{sid} ({}): no rationale", d.title));
            }
            for r in rats {
                for s in &r.sentences {
                    if *s >= d.abstract_.len() {
                        return Err(bad(format!(
                            "claim {}: rationale sentence {s} beyond the {} sentences of doc {sid}",
                            c.id,
                            d.abstract_.len()
                        )));
                    }
                    let id = format!("{sid}:s{s}");
                    if !citations.iter().any(|x: &Citation| x.id == id) {
                        citations.push(Citation {
                            id,
                            source: sid.clone(),
                            passage: Some(format!("s{s}")),
                        });
                    }
                }
                let sents: Vec<String> = r.sentences.iter().map(|s| format!("s{s}")).collect();
                labels.push(format!("{sid} {}: {}", sents.join("+"), r.label));
            }
        }
        let all: Vec<&str> = c
            .evidence
            .values()
            .flatten()
            .map(|r| r.label.as_str())
            .collect();
        let (verdict, what) = if all.is_empty() {
            (
                Support::Unsupported,
                "SciFact NOT ENOUGH INFO: the cited abstract neither supports nor contradicts the claim",
            )
        } else if all.iter().all(|l| *l == "SUPPORT") {
            (Support::Supported, "SciFact SUPPORT")
        } else if all.iter().all(|l| *l == "CONTRADICT") {
            (
                Support::Unsupported,
                "SciFact CONTRADICT: the rationale contradicts the claim",
            )
        } else {
            (
                Support::Unsupported,
                "SciFact rationales disagree (SUPPORT and CONTRADICT)",
            )
        };
        let valid: Vec<String> = c.evidence.keys().cloned().collect();
        let claim_id = format!("SF-{}-1", c.id);
        cases.push(Case {
            id: format!("SF-{}", c.id),
            query: c.claim.clone(),
            snapshot: "scifact-original".into(),
            sources,
            valid_sources: valid,
            retrieval: Vec::new(),
            required_facts: Vec::new(),
            unanswerable: Vec::new(),
            configuration: None,
            answers: vec![Answer {
                id: format!("SF-{}-A", c.id),
                text: c.claim.clone(),
                claims: vec![Claim {
                    id: claim_id,
                    text: c.claim,
                    citations: citations.iter().map(|x| x.id.clone()).collect(),
                    facts: Vec::new(),
                    association: None,
                    support: Some(SupportVerdict {
                        verdict,
                        reason: format!("{what}. Rationales: {}", labels.join("; ")),
                    }),
                    diagnosis: None,
                    reviewer: Some("SciFact annotators (Wadden et al. 2020)".into()),
                    time: None,
                    pending: None,
                }],
                citations,
            }],
            notes: None,
        });
    }
    Ok(CaseSet {
        schema: SCHEMA_VERSION.into(),
        cases,
    })
}
