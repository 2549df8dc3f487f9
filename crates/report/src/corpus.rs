//! Renderers for `veredicto corpus check`: JSON (the [`CorpusCheck`] as is) and a report
//! for people.

use veredicto_core::hygiene::CorpusCheck;

/// Pretty JSON with a trailing newline.
pub fn json(check: &CorpusCheck) -> String {
    let mut s = serde_json::to_string_pretty(check).unwrap_or_default();
    s.push('\n');
    s
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
        s.push_str(&format!("  {:<11} {}  {}\n", o.why, o.id, o.detail));
    }
    let chunks: std::collections::BTreeSet<&str> =
        check.suspicious.iter().map(|x| x.id.as_str()).collect();
    s.push_str(&format!(
        "\nsuspicious (for a person to look at; nothing is deleted): {} chunks, {} findings\n",
        chunks.len(),
        check.suspicious.len()
    ));
    for x in &check.suspicious {
        s.push_str(&format!("  {:<17} {}  {}\n", x.why, x.id, x.detail));
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
