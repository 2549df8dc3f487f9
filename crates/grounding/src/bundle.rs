//! What goes into an audit package, built in memory and deterministic.

use crate::error::GroundingError;
use crate::metrics::{answer_metrics, document_recall_at};
use crate::model::{CaseSet, SCHEMA_VERSION};
use crate::package::{seal_run, sha256_hex, unsafe_member_path, Files, ManifestRun, MissingPart};
use crate::relevance::{effective_relevance, RelevanceRecord};
use crate::review::ReviewRecord;
use crate::sheet::{build_sheet_with_marks, effective_support, to_csv, to_json};
use serde_json::json;

/// Everything a package is made from. No clock: `created` is written only when given.
pub struct PackageInputs<'a> {
    /// File name of the cases inside the package (`cases/<name>`).
    pub cases_name: &'a str,
    pub cases_bytes: &'a [u8],
    pub set: &'a CaseSet,
    /// Raw bytes of the review log, when there is one.
    pub reviews_bytes: Option<&'a [u8]>,
    pub reviews: &'a [ReviewRecord],
    /// The answer-relevance records of the same log.
    pub relevance: &'a [RelevanceRecord],
    /// The citation marks of the same log.
    pub citation_marks: &'a [crate::citation_mark::CitationMarkRecord],
    /// The answer-relevance suggestions of the suggestions log.
    pub relevance_suggestions: &'a [crate::relevance_judge::RelevanceSuggestion],
    /// Raw bytes of the model-suggestion log, when there is one (optional part).
    pub suggestions_bytes: Option<&'a [u8]>,
    pub suggestions: &'a [crate::suggest::SuggestionRecord],
    /// The recorded audit run being packaged (ID, time, label, replay_of, case file hash),
    /// written into `version.json`.
    pub run: Option<serde_json::Value>,
    pub notes: Option<&'a [u8]>,
    pub tool_version: &'a str,
    pub created: Option<&'a str>,
    /// Comparison with the previous recording, when one was given.
    pub comparison: Option<&'a crate::compare::Comparison>,
}

fn pretty(v: &serde_json::Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

/// The sealed package files (manifest included). The case file's name must be one plain file
/// name (it may come from a history: it never chooses where files are written).
pub fn build_package(i: &PackageInputs<'_>) -> Result<Files, GroundingError> {
    let cases_path = format!("cases/{}", i.cases_name);
    if let Some(why) = unsafe_member_path(&cases_path).or_else(|| {
        i.cases_name
            .contains('/')
            .then(|| "contains a `/`".to_string())
    }) {
        return Err(GroundingError::Package {
            path: veredicto_core::redact::short(i.cases_name).into(),
            message: format!("case file name cannot name a package member: {why}"),
        });
    }
    let mut files = Files::new();
    let mut missing = Vec::new();
    files.insert(cases_path.clone(), i.cases_bytes.to_vec());

    let mut retrieval = String::new();
    let mut answers = Vec::new();
    let mut citations = Vec::new();
    let mut metrics = Vec::new();
    for case in &i.set.cases {
        for r in &case.retrieval {
            let line = json!({
                "case": case.id, "snapshot": case.snapshot, "query": case.query,
                "position": r.position, "source": r.source, "passage": r.passage,
                "score": r.score, "filters": r.filters,
            });
            retrieval.push_str(&line.to_string());
            retrieval.push('\n');
        }
        if case.retrieval.is_empty() {
            missing.push(MissingPart {
                part: format!("retrieval/{}", case.id),
                reason: "the case records no retrieved passages".into(),
            });
        }
        let recall: Vec<_> = (1..=case.retrieval.len())
            .map(|k| json!({"k": k, "document_recall": document_recall_at(case, k)}))
            .collect();
        for a in &case.answers {
            answers.push(
                json!({"case": case.id, "snapshot": case.snapshot, "answer": a.id, "text": a.text}),
            );
            for c in &a.citations {
                let attached: Vec<&str> = a
                    .claims
                    .iter()
                    .filter(|cl| cl.citations.contains(&c.id))
                    .map(|cl| cl.id.as_str())
                    .collect();
                citations.push(json!({
                    "case": case.id, "answer": a.id, "citation": c.id,
                    "source": c.source, "passage": c.passage, "attached_to": attached,
                }));
            }
            let m = answer_metrics(case, a, &|id| {
                a.claims
                    .iter()
                    .find(|c| c.id == id)
                    .and_then(|c| effective_support(c, i.reviews))
            });
            let ks: Vec<usize> = (1..=case.retrieval.len()).collect();
            let mut entry = json!({
                "metrics": m, "document_recall": recall,
                "fact_coverage": crate::absence::fact_coverage(case, &ks),
                "absences": case.absences().iter().map(|(id, a)| json!({"id": id, "lacking": a.text, "sources": a.sources})).collect::<Vec<_>>(),
            });
            // Only when judged, so that a package of inputs without relevance verdicts is
            // byte for byte what it was before answer relevance existed.
            if let Some(r) = effective_relevance(&case.id, &a.id, i.relevance) {
                entry["relevance"] = json!({
                    "verdict": r.relevance, "reason": r.reason,
                    "reviewer": r.reviewer, "time": r.time,
                });
            }
            // Likewise only when some citation of the answer is marked.
            let cp = crate::citation_mark::citation_precision(&a.claims, i.citation_marks);
            if cp.marked > 0 {
                entry["citation_precision"] = json!({
                    "marked": cp.marked, "necessary": cp.necessary, "redundant": cp.redundant,
                    "irrelevant": cp.irrelevant, "precision": cp.value(),
                });
            }
            metrics.push(entry);
        }
    }
    files.insert("retrieval.jsonl".into(), retrieval.into_bytes());
    files.insert("answers.json".into(), pretty(&json!(answers)));
    files.insert("citations.json".into(), pretty(&json!(citations)));
    files.insert("metrics.json".into(), pretty(&json!(metrics)));
    let rows = build_sheet_with_marks(
        i.set,
        i.reviews,
        i.relevance,
        i.citation_marks,
        i.suggestions,
        i.relevance_suggestions,
    );
    let csv = to_csv(&rows).map_err(|e| GroundingError::Package {
        path: "sheet.csv".into(),
        message: e.to_string(),
    })?;
    files.insert("sheet.csv".into(), csv);
    let mut sj = to_json(&rows).into_bytes();
    sj.push(b'\n');
    files.insert("sheet.json".into(), sj);
    match i.reviews_bytes {
        Some(b) => {
            files.insert("reviews.jsonl".into(), b.to_vec());
        }
        None => missing.push(MissingPart {
            part: "reviews.jsonl".into(),
            reason: "no review log beside the cases".into(),
        }),
    }
    if let Some(b) = i.suggestions_bytes {
        files.insert("suggestions.jsonl".into(), b.to_vec());
    }
    let case_notes: Vec<String> = i
        .set
        .cases
        .iter()
        .filter_map(|c| c.notes.as_ref().map(|n| format!("## {}\n\n{n}\n", c.id)))
        .collect();
    match (i.notes, case_notes.is_empty()) {
        (Some(n), _) => {
            files.insert("notes.md".into(), n.to_vec());
        }
        (None, false) => {
            files.insert("notes.md".into(), case_notes.join("\n").into_bytes());
        }
        (None, true) => missing.push(MissingPart {
            part: "notes.md".into(),
            reason: "no notes given (--notes) and none in the cases".into(),
        }),
    }
    match i.comparison {
        Some(c) => {
            files.insert("comparison.json".into(), pretty(&json!(c)));
        }
        None => missing.push(MissingPart {
            part: "comparison.json".into(),
            reason: "no previous recording given to compare with (--previous)".into(),
        }),
    }
    let mut version = json!({
        "tool": "veredicto", "tool_version": i.tool_version, "case_schema": SCHEMA_VERSION,
        "snapshots": i.set.cases.iter().map(|c| json!({"case": c.id, "snapshot": c.snapshot})).collect::<Vec<_>>(),
        "sources": i.set.cases.iter().flat_map(|c| c.sources.iter().map(move |s| json!({"case": c.id, "source": s.id, "version": s.version}))).collect::<Vec<_>>(),
        // What produced each case's answers (replay metadata), when the case declares it.
        "configurations": i.set.cases.iter().filter_map(|c| c.configuration.as_ref().map(|k| json!({"case": c.id, "configuration": k}))).collect::<Vec<_>>(),
    });
    if let Some(t) = i.created {
        version["created"] = json!(t);
    }
    if let Some(r) = &i.run {
        version["run"] = r.clone();
    }
    files.insert("version.json".into(), pretty(&version));
    files.insert(
        "schema.json".into(),
        crate::CASE_SCHEMA_JSON.as_bytes().to_vec(),
    );
    missing.sort_by(|a, b| a.part.cmp(&b.part));
    // A recorded run is named in the manifest with its case file's SHA-256.
    let run = i
        .run
        .as_ref()
        .and_then(|r| r.get("id"))
        .and_then(|id| id.as_str())
        .map(|id| ManifestRun {
            id: id.to_string(),
            cases: cases_path.clone(),
            cases_sha256: sha256_hex(i.cases_bytes),
        });
    Ok(seal_run(files, i.tool_version, missing, run))
}
