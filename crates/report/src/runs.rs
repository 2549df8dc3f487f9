//! The run history as text: the table of `veredicto runs list`.

use veredicto_core::exam::Verdict;
use veredicto_core::history::{short_fingerprint, RunSummary};

/// The run history as a table, newest first (`veredicto runs list`).
pub fn list_table(runs: &[RunSummary]) -> String {
    let header = [
        "run",
        "created",
        "label",
        "verdict",
        "cases",
        "failing",
        "gold fail",
        "mean QS",
        "recall",
        "MRR",
        "golden",
    ];
    let rows: Vec<[String; 11]> = runs
        .iter()
        .map(|r| {
            [
                r.id.clone(),
                r.created_at.clone(),
                r.label.clone().unwrap_or_default(),
                match r.verdict {
                    Verdict::Accept => "accept".to_owned(),
                    Verdict::Stop => "STOP".to_owned(),
                },
                r.cases.to_string(),
                r.failing.to_string(),
                r.failing_gold.to_string(),
                format!("{:.1}", r.mean_quality),
                format!("{:.3}", r.mean_recall),
                format!("{:.3}", r.mrr),
                short_fingerprint(&r.golden_fingerprint).to_owned(),
            ]
            // A label or time with ESC… must not drive the terminal.
            .map(|cell| veredicto_core::redact::escape_control(&cell))
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    let mut out = line(header.map(str::to_owned).to_vec());
    out.push('\n');
    for row in rows {
        out.push_str(&line(row.to_vec()));
        out.push('\n');
    }
    if runs.is_empty() {
        out.push_str("(no runs)\n");
    }
    out
}

/// The provenance lines above a recorded run's report (`veredicto runs show`): ID, time,
/// label, tool, git revision, fingerprints, retriever, and the latency of each stage.
pub fn run_header(m: &veredicto_core::history::RunMeta) -> String {
    let mut s = format!(
        "run {} · {} · label {} · tool {} · git {}\ngolden {} · policy {} · corpus {} · retriever {} {}\n",
        m.id,
        m.created_at,
        m.label.as_deref().unwrap_or("-"),
        m.tool_version,
        m.git_revision.as_deref().unwrap_or("-"),
        short_fingerprint(&m.golden_fingerprint),
        short_fingerprint(&m.policy_fingerprint),
        m.corpus_fingerprint.as_deref().map(short_fingerprint).unwrap_or("-"),
        m.config.retriever,
        m.config.source.as_deref().unwrap_or(""),
    );
    for (stage, l) in &m.latency {
        s.push_str(&format!(
            "latency {stage}: p50 {:.2} ms · p95 {:.2} ms · p99 {:.2} ms ({} queries)\n",
            l.p50_ms, l.p95_ms, l.p99_ms, l.count
        ));
    }
    s.push('\n');
    s
}
