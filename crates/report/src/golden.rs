//! `golden check`: where each evidence item sits in a chunking, worded for people (human)
//! or as the check's JSON value.

use veredicto_core::evidence::check::{CheckReport, ItemPlace, Placement};
use veredicto_core::redact::escape_control;

/// Most items listed per kind (split, dropped) in the human report; the JSON lists all.
const LISTED: usize = 20;

/// The check as pretty JSON (every item's place included).
pub fn json(report: &CheckReport) -> String {
    let mut s = serde_json::to_string_pretty(report).unwrap_or_default();
    s.push('\n');
    s
}

fn holders(p: &ItemPlace) -> String {
    p.chunks
        .iter()
        .map(|h| format!("{} ({}..{})", escape_control(&h.id), h.start, h.end))
        .collect::<Vec<_>>()
        .join(", ")
}

fn item_name(p: &ItemPlace) -> String {
    format!(
        "{} evidence[{}] ({} {}..{}{})",
        escape_control(&p.case_id),
        p.item,
        escape_control(&p.doc_id),
        p.start,
        p.end,
        if p.grade == 1 {
            String::new()
        } else {
            format!(", grade {}", p.grade)
        }
    )
}

/// The check for people: the counts, then the problems, the items split across chunks, the
/// items the chunking dropped, the unlocated chunks and the grade warnings.
pub fn human(r: &CheckReport) -> String {
    let mut out = String::new();
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    out.push_str(&format!(
        "golden check: {} case(s), {} with evidence: {} item(s) ({} by quote)\n",
        r.cases, r.evidence_cases, r.items, r.quotes
    ));
    out.push_str(&format!(
        "corpus {}: {} chunk(s), {} located in their documents ({} by offsets, {} by text)\n",
        escape_control(&r.corpus),
        r.chunks,
        r.chunks_located,
        r.by_offsets,
        r.by_text
    ));
    out.push_str(&format!(
        "items held whole by one chunk: {}; split across chunks: {}; not covered by the chunking: {} (coverage needed: {})\n",
        r.whole,
        r.split,
        r.dropped,
        pct(r.evidence_coverage)
    ));
    if !r.problems.is_empty() {
        out.push_str(&format!(
            "\n{} item(s) could not be located:\n",
            r.problems.len()
        ));
        for p in &r.problems {
            out.push_str(&format!("  {}\n", escape_control(p)));
        }
    }
    let list =
        |out: &mut String, kind: Placement, title: &str, detail: &dyn Fn(&ItemPlace) -> String| {
            let items: Vec<&ItemPlace> = r.places.iter().filter(|p| p.placement == kind).collect();
            if items.is_empty() {
                return;
            }
            out.push_str(&format!("\n{title} ({}):\n", items.len()));
            for p in items.iter().take(LISTED) {
                out.push_str(&format!("  {}: {}\n", item_name(p), detail(p)));
            }
            if items.len() > LISTED {
                out.push_str(&format!(
                    "  … and {} more (--format json lists all)\n",
                    items.len() - LISTED
                ));
            }
        };
    list(
        &mut out,
        Placement::Split,
        "items split across chunks",
        &|p| {
            format!(
                "held by {} (one chunk holds at most {})",
                holders(p),
                pct(p.best_single)
            )
        },
    );
    list(
        &mut out,
        Placement::Dropped,
        "items the chunking does not cover",
        &|p| {
            if p.chunks.is_empty() {
                format!("no chunk holds any of its {} character(s)", p.end - p.start)
            } else {
                format!(
                    "{} character(s) in no chunk; held by {}",
                    p.uncovered,
                    holders(p)
                )
            }
        },
    );
    if !r.unlocated_chunks.is_empty() {
        out.push_str(&format!(
            "\nchunks not located in their documents ({}): {}\n",
            r.unlocated_chunks.len(),
            escape_control(&veredicto_core::redact::short(
                &r.unlocated_chunks.join(", ")
            ))
        ));
    }
    for w in &r.grade_warnings {
        out.push_str(&format!(
            "warning: case {}: gold chunk {} has grade {}, below {} of {}\n",
            escape_control(&w.case_id),
            escape_control(&w.chunk),
            w.grade,
            w.highest,
            escape_control(&w.highest_chunk)
        ));
    }
    out.push_str(if r.clean() {
        "\nok: every item is located and covered by the chunking\n"
    } else {
        "\nnot clean: see above\n"
    });
    out
}
