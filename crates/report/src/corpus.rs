//! Renderers for `veredicto corpus check`: JSON (the [`CorpusCheck`] as is) and a report
//! for people.

use veredicto_core::hygiene::{CorpusCheck, ObsoleteReason, SuspiciousReason};

/// Pretty JSON with a trailing newline; each obsolete and suspicious finding keeps `why` and
/// its fields, with `detail` worded here.
pub fn json(check: &CorpusCheck) -> String {
    let mut check = check.clone();
    fill(&mut check);
    let mut s = serde_json::to_string_pretty(&check).unwrap_or_default();
    s.push('\n');
    s
}

/// Words every obsolete and suspicious finding's `detail` from its reason.
pub fn fill(check: &mut CorpusCheck) {
    for o in &mut check.obsolete {
        o.detail = obsolete_detail(&o.reason);
    }
    for x in &mut check.suspicious {
        x.detail = suspicious_detail(&x.reason);
    }
}

/// Why a chunk is obsolete, for people.
pub fn obsolete_detail(r: &ObsoleteReason) -> String {
    match r {
        ObsoleteReason::Expired { valid_to, as_of } => {
            format!("valid_to {valid_to} is before {as_of}")
        }
        ObsoleteReason::Superseded {
            doc_id,
            batch,
            newer_id,
            newer_batch,
            newer_valid_from,
        } => format!(
            "a newer version of doc_id {doc_id} came in batch {newer_batch} ({newer_id}, valid from {newer_valid_from}); this chunk is from batch {batch}"
        ),
    }
}

/// Why a chunk is listed for a person to look at, for people.
pub fn suspicious_detail(r: &SuspiciousReason) -> String {
    match r {
        SuspiciousReason::NoSource => "no doc_id nor source: where it comes from is unknown".into(),
        SuspiciousReason::UnexpectedBatch { batch: Some(b) } => {
            format!("batch {b} is not among the expected batches")
        }
        SuspiciousReason::UnexpectedBatch { batch: None } => "no ingestion batch".into(),
        SuspiciousReason::ContradictsGold {
            concept,
            values,
            gold_id,
            gold_values,
        } => format!(
            "`{concept}`: {} here, {} in gold chunk {gold_id}",
            values.join("/"),
            gold_values.join("/")
        ),
    }
}

/// The findings for a terminal, section by section.
pub fn human(check: &CorpusCheck) -> String {
    let mut s = format!(
        "corpus check: {} chunks, as of {}; near duplicates {}\n",
        check.chunks,
        check.as_of,
        if check.vectors > 0 {
            format!(
                "by cosine >= {} among the {} chunks with a vector",
                check.near_duplicate_cosine, check.vectors
            )
        } else {
            "not checked (no vectors: give --index)".to_owned()
        }
    );
    s.push_str(&format!(
        "\nduplicates: {} clusters; {} copies within a source, {} clusters of redundancy across sources (kept)\n",
        check.duplicates.len(),
        check.copies_within_source,
        check.redundant_across_sources
    ));
    for d in &check.duplicates {
        let members: Vec<String> = d
            .members
            .iter()
            .map(|m| format!("{} ({})", m.id, m.source.as_deref().unwrap_or("no source")))
            .collect();
        s.push_str(&format!(
            "  {:<14} {:<5} {}{}\n",
            d.verdict,
            d.kind,
            members.join(", "),
            if d.kind == "near" {
                format!("  cosine >= {:.4}", d.min_cosine)
            } else {
                String::new()
            }
        ));
    }
    s.push_str(&format!("\nobsolete: {}\n", check.obsolete.len()));
    for o in &check.obsolete {
        s.push_str(&format!(
            "  {:<11} {}  {}\n",
            o.reason.why(),
            o.id,
            obsolete_detail(&o.reason)
        ));
    }
    let chunks: std::collections::BTreeSet<&str> =
        check.suspicious.iter().map(|x| x.id.as_str()).collect();
    s.push_str(&format!(
        "\nsuspicious (for a person to look at; nothing is deleted): {} chunks, {} findings\n",
        chunks.len(),
        check.suspicious.len()
    ));
    for x in &check.suspicious {
        s.push_str(&format!(
            "  {:<17} {}  {}\n",
            x.reason.why(),
            x.id,
            suspicious_detail(&x.reason)
        ));
    }
    s.push_str("\ndrift:\n");
    match &check.drift.since_corpus {
        Some(d) => {
            s.push_str(&format!(
                "  since the previous corpus: {} entered, {} changed, {} left\n",
                d.entered, d.changed, d.left
            ));
            for g in &d.groups {
                s.push_str(&format!(
                    "    batch {} / domain {}: +{} ~{} -{}\n",
                    g.batch,
                    g.domain,
                    g.entered.len(),
                    g.changed.len(),
                    g.left.len()
                ));
            }
        }
        None => s.push_str("  since a previous corpus: not checked (give --since CORPUS)\n"),
    }
    match &check.drift.since_accepted_run {
        Some(r) if r.chunks.is_some() => {
            let d = r.chunks.as_ref().expect("checked");
            s.push_str(&format!(
                "  since the last accepted run {}: {} entered, {} changed, {} left\n",
                r.run, d.entered, d.changed, d.left
            ));
            for g in &d.groups {
                s.push_str(&format!(
                    "    batch {} / domain {}:{}{}{}\n",
                    g.batch,
                    g.domain,
                    id_list(" entered", &g.entered),
                    id_list(" changed", &g.changed),
                    id_list(" left", &g.left)
                ));
            }
        }
        Some(r) if r.batches.is_empty() => s.push_str(&format!(
            "  since the last accepted run {}: same batches, same sizes (by batch only: that run \
             was recorded before the history kept each run's chunks)\n",
            r.run
        )),
        Some(r) => {
            s.push_str(&format!(
                "  since the last accepted run {} (by batch only: that run was recorded before \
                 the history kept each run's chunks):\n",
                r.run
            ));
            for b in &r.batches {
                s.push_str(&format!(
                    "    {:<12} {}  {} -> {} chunks\n",
                    b.change, b.batch, b.chunks_then, b.chunks_now
                ));
            }
        }
        None => s.push_str("  since the last accepted run: no accepted run in the history\n"),
    }
    s.push_str(&format!(
        "\naggregation questions (not answerable by similarity search; route them elsewhere): {}\n",
        check.aggregation_questions.len()
    ));
    for a in &check.aggregation_questions {
        s.push_str(&format!(
            "  {} {}  {}  [{}: {}] {}\n",
            a.from,
            a.id,
            trunc(&a.query, 60),
            a.aggregation.kind,
            a.aggregation.matched,
            a.aggregation.reason
        ));
    }
    if check.breaches.is_empty() {
        s.push_str("\npolicy: no declared threshold exceeded\n");
    } else {
        s.push_str("\npolicy: thresholds exceeded\n");
        for b in &check.breaches {
            s.push_str(&format!(
                "  {}: {} found, at most {} allowed\n",
                b.key, b.found, b.limit
            ));
        }
    }
    s
}

/// `text` on one line, cut to `max` characters with an ellipsis.
fn trunc(text: &str, max: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut s: String = one_line.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// ` entered 3 (a, b, c)`, the IDs cut after 5 (`…` and how many more); empty for none.
fn id_list(what: &str, ids: &[String]) -> String {
    if ids.is_empty() {
        return String::new();
    }
    const SHOWN: usize = 5;
    let mut shown: Vec<&str> = ids.iter().take(SHOWN).map(String::as_str).collect();
    let more = format!("… {} more", ids.len().saturating_sub(SHOWN));
    if ids.len() > SHOWN {
        shown.push(&more);
    }
    format!("{what} {} ({})", ids.len(), shown.join(", "))
}

#[cfg(test)]
mod reason_tests {
    use super::*;

    /// Every reason has its words (an exhaustive match: a new reason without words does not
    /// compile), and the JSON keeps `why`, the reason's fields and the worded `detail`.
    #[test]
    fn every_obsolete_and_suspicious_reason_is_worded_and_keeps_its_fields_in_json() {
        let obsolete = [
            ObsoleteReason::Expired {
                valid_to: "2024-12-31".into(),
                as_of: "2025-11-14".into(),
            },
            ObsoleteReason::Superseded {
                doc_id: "D".into(),
                batch: "b1".into(),
                newer_id: "c2".into(),
                newer_batch: "b2".into(),
                newer_valid_from: "2025-11-25".into(),
            },
        ];
        for r in &obsolete {
            let words = match r {
                ObsoleteReason::Expired { .. } => "valid_to 2024-12-31 is before 2025-11-14",
                ObsoleteReason::Superseded { .. } => {
                    "a newer version of doc_id D came in batch b2 (c2, valid from 2025-11-25); this chunk is from batch b1"
                }
            };
            assert_eq!(obsolete_detail(r), words);
        }
        let suspicious = [
            SuspiciousReason::NoSource,
            SuspiciousReason::UnexpectedBatch {
                batch: Some("manual".into()),
            },
            SuspiciousReason::UnexpectedBatch { batch: None },
            SuspiciousReason::ContradictsGold {
                concept: "maximo [€]".into(),
                values: vec!["3000".into()],
                gold_id: "gold_001".into(),
                gold_values: vec!["2000".into()],
            },
        ];
        for r in &suspicious {
            let words = match r {
                SuspiciousReason::NoSource => {
                    "no doc_id nor source: where it comes from is unknown"
                }
                SuspiciousReason::UnexpectedBatch { batch: Some(_) } => {
                    "batch manual is not among the expected batches"
                }
                SuspiciousReason::UnexpectedBatch { batch: None } => "no ingestion batch",
                SuspiciousReason::ContradictsGold { .. } => {
                    "`maximo [€]`: 3000 here, 2000 in gold chunk gold_001"
                }
            };
            assert_eq!(suspicious_detail(r), words);
        }
        let o = veredicto_core::hygiene::Obsolete {
            id: "c1".into(),
            reason: obsolete[1].clone(),
            detail: String::new(),
        };
        let v = serde_json::to_value(&o).expect("json");
        assert_eq!(v["why"], "superseded");
        assert_eq!(v["newer_id"], "c2");
        let back: veredicto_core::hygiene::Obsolete = serde_json::from_value(v).expect("back");
        assert_eq!(back.reason, obsolete[1]);
    }
}
