//! Renderers of the ingestion gate: an ingest's rejected lines, and `veredicto gate`.

use veredicto_core::gate::{GateOutcome, GateStatus, Rejection};
use veredicto_core::redact::escape_control;

/// At most this many rejections are listed in human output (JSON lists them all).
pub const LISTED: usize = 20;

/// `N corpus lines rejected:` and one line per rejection (the first [`LISTED`]); empty
/// when there are none.
pub fn rejections_human(rejected: &[Rejection]) -> String {
    if rejected.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "{} corpus line{} rejected (left out of the index, recorded with the batch):\n",
        rejected.len(),
        if rejected.len() == 1 { "" } else { "s" }
    );
    for r in rejected.iter().take(LISTED) {
        out.push_str(&format!("  {}\n", escape_control(&r.to_string())));
    }
    if rejected.len() > LISTED {
        out.push_str(&format!(
            "  ... and {} more (--json lists them all)\n",
            rejected.len() - LISTED
        ));
    }
    out
}

/// The gate's decision for people.
pub fn gate_human(index: &str, o: &GateOutcome) -> String {
    let verdict = match o.status {
        GateStatus::Pass => "PASS",
        GateStatus::Accepted => "PASS (accepted in writing)",
        GateStatus::Blocked => "BLOCKED",
    };
    let mut out = format!(
        "ingestion gate: {verdict}: {}: batch {}: {} of {} corpus lines rejected ({:.2}%); policy allows {}\n",
        escape_control(index),
        escape_control(&o.batch),
        o.rejected.len(),
        o.lines,
        o.rejected_percent,
        limit_text(&o.policy)
    );
    if let (Some(a), false) = (&o.accepted, o.within_policy) {
        out.push_str(&format!(
            "accepted on {} with {} rejections: {}\n",
            escape_control(&a.time),
            a.rejected,
            escape_control(&a.reason)
        ));
        if !o.accepted_in.is_empty() {
            out.push_str(&format!(
                "acceptance found in: {}\n",
                escape_control(&o.accepted_in.join(", "))
            ));
        }
    }
    out.push_str(&rejections_human(&o.rejected));
    if o.status == GateStatus::Blocked {
        out.push_str(
            "fix the corpus and ingest again, or accept the batch with a written reason: veredicto gate accept --index DIR --reason \"...\"\n",
        );
    }
    out
}

/// The `[ingest]` table's limit in words (`at most 3 rejected lines and at most 1%`).
pub fn limit_text(p: &veredicto_core::gate::IngestPolicy) -> String {
    match (p.max_rejected, p.max_rejected_percent) {
        (None, None) => "no rejected line (the [ingest] table sets no limit)".into(),
        (Some(n), None) => format!("at most {n} rejected lines"),
        (None, Some(p)) => format!("at most {p}% rejected lines"),
        (Some(n), Some(p)) => format!("at most {n} rejected lines and at most {p}%"),
    }
}

/// The gate's decision as pretty JSON with a final newline.
pub fn gate_json(index: &str, o: &GateOutcome) -> String {
    let value = serde_json::json!({
        "index": index,
        "status": o.status,
        "batch": o.batch,
        "lines": o.lines,
        "rejected_count": o.rejected.len(),
        "rejected_percent": o.rejected_percent,
        "limit": limit_text(&o.policy),
        "max_rejected": o.policy.max_rejected,
        "max_rejected_percent": o.policy.max_rejected_percent,
        "within_policy": o.within_policy,
        "accepted": o.accepted,
        "accepted_in": o.accepted_in,
        "rejected": o.rejected,
    });
    let mut s = serde_json::to_string_pretty(&value).unwrap_or_default();
    s.push('\n');
    s
}

/// `veredicto history acceptances` for people: one block per acceptance, oldest first.
pub fn acceptances_human(
    history: &str,
    list: &[veredicto_core::history::GateAcceptance],
) -> String {
    let mut out = format!(
        "{}: {} gate acceptance{}\n",
        escape_control(history),
        list.len(),
        if list.len() == 1 { "" } else { "s" }
    );
    for a in list {
        out.push_str(&format!(
            "{}  {}  by {}: index {}, batch {}: {} rejected line{} accepted: {}\n",
            a.id,
            escape_control(&a.created_at),
            escape_control(a.who.as_deref().unwrap_or("(unknown)")),
            escape_control(&a.index),
            escape_control(&a.batch),
            a.rejected,
            if a.rejected == 1 { "" } else { "s" },
            escape_control(&a.reason)
        ));
        for r in a.rejections.iter().take(LISTED) {
            out.push_str(&format!("  {}\n", escape_control(&r.to_string())));
        }
        if a.rejections.len() > LISTED {
            out.push_str(&format!(
                "  ... and {} more (--json lists them all)\n",
                a.rejections.len() - LISTED
            ));
        }
    }
    out
}

/// `veredicto history acceptances --json`: `{history, acceptances: [...]}`, pretty, with a
/// final newline.
pub fn acceptances_json(history: &str, list: &[veredicto_core::history::GateAcceptance]) -> String {
    let value = serde_json::json!({ "history": history, "acceptances": list });
    let mut s = serde_json::to_string_pretty(&value).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use veredicto_core::gate::{judge, IngestPolicy, RejectReason};

    #[test]
    fn blocked_gate_names_each_rejection_and_the_way_out() {
        let r: Vec<Rejection> = (1..=23)
            .map(|i| Rejection {
                file: "corpus.jsonl".into(),
                line: i,
                id: None,
                reason: RejectReason::Unparseable,
                field: "-".into(),
                message: "malformed JSON".into(),
            })
            .collect();
        let o = judge("nightly", 100, &r, &[], &IngestPolicy::default());
        let text = gate_human("kb", &o);
        assert!(
            text.starts_with("ingestion gate: BLOCKED: kb: batch nightly: 23 of 100"),
            "{text}"
        );
        assert!(text.contains("corpus.jsonl:1: field `-`: unparseable: malformed JSON"));
        assert!(text.contains("... and 3 more"));
        assert!(text.contains("veredicto gate accept"));
        let json: serde_json::Value = serde_json::from_str(&gate_json("kb", &o)).unwrap();
        assert_eq!(json["status"], "blocked");
        assert_eq!(json["rejected"].as_array().unwrap().len(), 23);
    }
}
