//! Text renderings of a [`Comparison`] with its baseline and of the cross-run diagnosis
//! ([`RunsDiagnosis`]): for the terminal and for a pull-request comment.

use crate::fmt;
use veredicto_core::compare::{
    short_time, Comparison, Displacement, Displacer, MetricTest, RankChange, RegressionReason,
    RunsDiagnosis,
};
use veredicto_core::redact::{escape_lines, markdown_text};

fn signed(v: f64, digits: usize) -> String {
    if v > 0.0 {
        format!("+{v:.digits$}")
    } else {
        format!("{v:.digits$}")
    }
}

fn metric_digits(t: &MetricTest) -> usize {
    if t.metric.name().contains("quality") {
        1
    } else {
        3
    }
}

fn p(v: f64) -> String {
    if v < 0.0001 {
        "<0.0001".to_owned()
    } else {
        format!("{v:.4}")
    }
}

fn ci(t: &MetricTest) -> String {
    match (t.ci_low, t.ci_high) {
        (Some(lo), Some(hi)) => {
            let d = metric_digits(t);
            format!("[{}, {}]", signed(lo, d), signed(hi, d))
        }
        _ => "-".to_owned(),
    }
}

/// Lines describing what changed for each moved expected chunk and who displaced it.
fn case_lines(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for d in &c.cases {
        let moved: Vec<String> = d
            .expected
            .iter()
            .chain(&d.evidence)
            .filter(|e| !matches!(e.change, RankChange::Same | RankChange::Absent))
            .map(|e| {
                let r = |x: Option<usize>| x.map_or("-".to_owned(), |r| r.to_string());
                format!("{} {}→{}", e.id, r(e.base_rank), r(e.new_rank))
            })
            .collect();
        if moved.is_empty() && d.recall.delta == 0.0 && d.base_passed == d.new_passed {
            continue;
        }
        let status = match (d.base_passed, d.new_passed) {
            (true, false) => "NEWLY FAILING",
            (false, true) => "newly passing",
            (true, true) => "passing",
            (false, false) => "still failing",
        };
        out.push(format!(
            "{}{}: {status}; recall {} → {} ({}); {}",
            d.id,
            if d.gold { " (gold)" } else { "" },
            fmt::pct(d.recall.base),
            fmt::pct(d.recall.new),
            signed(d.recall.delta, 3),
            if moved.is_empty() && !d.evidence.is_empty() {
                "no evidence item moved".to_owned()
            } else if moved.is_empty() {
                "no expected chunk moved".to_owned()
            } else {
                moved.join(", ")
            }
        ));
        for disp in &d.displaced {
            out.push(format!("    {}", displacement(&d.id, disp)));
        }
    }
    out
}

/// "q3: exp3 fell from 8 to 13, displaced by n0, n1, all from batch `viernes` ingested
/// 2025-11-14 17:20": what now ranks above a displaced expected chunk, grouped by batch.
pub fn displacement(case: &str, d: &Displacement) -> String {
    let r = |x: Option<usize>| x.map_or("beyond the list".to_owned(), |r| r.to_string());
    let head = format!(
        "{case}: {} fell from {} to {}",
        d.chunk,
        r(d.base_rank),
        r(d.new_rank)
    );
    if let Some(collection) = &d.gone_from {
        return format!("{head}: it is no longer in the {collection}");
    }
    if d.by.is_empty() {
        return format!("{head}; what ranks above it now is not listed");
    }
    // Batches in order of their first chunk; chunks of unknown batch form their own group.
    let batch = |name: Option<&str>, at: Option<&str>| match (name, at) {
        (Some(n), Some(t)) => format!("batch `{n}` ingested {}", short_time(t)),
        (Some(n), None) => format!("batch `{n}`"),
        (None, _) => "an unknown batch".to_owned(),
    };
    let list = |groups: &[Group<'_>]| -> String {
        if let [(name, at, ids)] = groups {
            return format!("{}, all from {}", ids.join(", "), batch(*name, *at));
        }
        groups
            .iter()
            .map(|(name, at, ids)| format!("{} from {}", ids.join(", "), batch(*name, *at)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    // Chunks known to be new above it first; the rest may have been above it before.
    let (new, rest): (Vec<_>, Vec<_>) = d.by.iter().partition(|b| b.newly_above == Some(true));
    match (new.is_empty(), rest.is_empty()) {
        (false, true) => format!("{head}, displaced by {}", list(&group(&new))),
        (false, false) => format!(
            "{head}, displaced by {}; also above it: {}",
            list(&group(&new)),
            list(&group(&rest))
        ),
        _ => format!("{head}, displaced by {}", list(&group(&rest))),
    }
}

type Group<'a> = (Option<&'a str>, Option<&'a str>, Vec<&'a str>);

/// Displacers grouped by batch, in order of each batch's first chunk; chunks of unknown
/// batch form their own group.
fn group<'a>(by: &[&'a Displacer]) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    for b in by {
        let key = b.ingest_batch.as_deref();
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.2.push(&b.id),
            None => groups.push((key, b.ingested_at.as_deref(), vec![&b.id])),
        }
    }
    groups
}

/// The comparison for a terminal.
pub fn human(c: &Comparison) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "comparison with {} ({}{}) over {} shared cases\n",
        c.base.id,
        c.base.created_at,
        c.base
            .label
            .as_deref()
            .map(|l| format!(", {l}"))
            .unwrap_or_default(),
        c.shared_cases
    ));
    for d in crate::findings::compat_differences(&c.compatibility) {
        out.push_str(&format!("  differs: {d}\n"));
    }
    out.push_str(&format!(
        "  newly failing: {}\n  newly passing: {}\n",
        list_or_none(&c.newly_failing),
        list_or_none(&c.newly_passing)
    ));
    for line in case_lines(c) {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str(&format!(
        "  {:<14} {:>9} {:>9} {:>9}  {:<22} {:>8} {:>8}  sig\n",
        "metric", "base", "new", "Δ", "95% CI", "p", "Holm p"
    ));
    for t in &c.tests {
        let d = metric_digits(t);
        out.push_str(&format!(
            "  {:<14} {:>9.d$} {:>9.d$} {:>9}  {:<22} {:>8} {:>8}  {}\n",
            t.metric.name(),
            t.base_mean,
            t.new_mean,
            signed(t.mean_difference, d),
            ci(t),
            p(t.p_value),
            p(t.p_adjusted),
            if t.significant { "yes" } else { "no" },
        ));
    }
    out.push_str(&format!(
        "  (paired sign-flip randomisation test, two-sided; bootstrap {} resamples; Holm across metrics; seed {})\n",
        c.settings.bootstrap, c.settings.seed
    ));
    out.push_str(if c.regression {
        "  regression: YES\n"
    } else {
        "  regression: no\n"
    });
    for r in &c.regression_reasons {
        out.push_str(&format!("    - {}\n", regression_reason(r)));
    }
    escape_lines(&out)
}

/// One regression reason in one line.
pub fn regression_reason(r: &RegressionReason) -> String {
    match r {
        RegressionReason::SignificantDrop {
            metric,
            mean_difference,
            p_adjusted,
        } => format!(
            "significant drop of {} (Δ {mean_difference:+.4}, Holm p {})",
            metric.name(),
            p(*p_adjusted)
        ),
        RegressionReason::NewlyFailingGold { case } => {
            format!("gold case {case} passed in the baseline and fails now")
        }
    }
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
}

/// The comparison for a pull-request comment.
pub fn markdown(c: &Comparison) -> String {
    let mut out = format!(
        "\n### Compared with `{}`{}\n\n",
        c.base.id,
        if c.regression {
            " — ⚠️ regression"
        } else {
            ""
        }
    );
    for r in &c.regression_reasons {
        out.push_str(&format!(
            "- **regression**: {}\n",
            markdown_text(&regression_reason(r))
        ));
    }
    for d in crate::findings::compat_differences(&c.compatibility) {
        out.push_str(&format!("- differs: {}\n", markdown_text(&d)));
    }
    out.push_str(&format!(
        "- shared cases: {}\n- newly failing: {}\n- newly passing: {}\n\n",
        c.shared_cases,
        markdown_text(&list_or_none(&c.newly_failing)),
        markdown_text(&list_or_none(&c.newly_passing))
    ));
    out.push_str("| metric | base | new | Δ | 95% CI | p | Holm p | significant |\n");
    out.push_str("|---|---:|---:|---:|---|---:|---:|:-:|\n");
    for t in &c.tests {
        let d = metric_digits(t);
        out.push_str(&format!(
            "| {} | {:.d$} | {:.d$} | {} | {} | {} | {} | {} |\n",
            t.metric.name(),
            t.base_mean,
            t.new_mean,
            signed(t.mean_difference, d),
            ci(t),
            p(t.p_value),
            p(t.p_adjusted),
            if t.significant { "yes" } else { "no" }
        ));
    }
    let lines = case_lines(c);
    if !lines.is_empty() {
        out.push_str("\n<details><summary>Per-case changes</summary>\n\n");
        for l in lines {
            out.push_str(&format!("- {}\n", markdown_text(l.trim_start())));
        }
        out.push_str("\n</details>\n");
    }
    out
}

/// The cross-run diagnosis for a terminal.
pub fn diagnosis_human(d: &RunsDiagnosis) -> String {
    let mut out = String::new();
    if d.findings.is_empty() {
        out.push_str(&format!(
            "cross-run diagnosis over {} runs: no failure pattern\n",
            d.runs
        ));
    } else {
        out.push_str(&format!("cross-run diagnosis over {} runs:\n", d.runs));
    }
    for f in &d.findings {
        out.push_str(&format!(
            "  [{}] {}\n",
            f.pattern.id(),
            crate::findings::pattern_saw(f)
        ));
        out.push_str(&format!(
            "      likely cause: {}\n",
            crate::findings::pattern_cause(f)
        ));
        for e in &f.entered {
            let batch = format!(
                "batch {}{}",
                e.ingest_batch.as_deref().unwrap_or("unknown"),
                e.ingested_at
                    .as_deref()
                    .map(|t| format!(", ingested {}", short_time(t)))
                    .unwrap_or_default()
            );
            // "Entered" only when the batch or the accepted run's chunk list shows it.
            let line = match (e.entered_since, &e.in_accepted_run) {
                (Some(true), _) => format!(
                    "{} ({batch}) entered since the last accepted run and outranks {} of {} at rank {}",
                    e.id, e.expected, e.case, e.rank
                ),
                (_, Some(s)) => format!(
                    "{} ({batch}) outranks {} of {} at rank {} now; it was already there: the accepted run retrieved it at rank {} for {}",
                    e.id, e.expected, e.case, e.rank, s.rank, s.case
                ),
                (Some(false), None) => format!(
                    "{} ({batch}) outranks {} of {} at rank {} now; it is older than the accepted run",
                    e.id, e.expected, e.case, e.rank
                ),
                (None, None) => format!(
                    "{} ({batch}) outranks {} of {} at rank {} now; whether it entered since the last accepted run cannot be told",
                    e.id, e.expected, e.case, e.rank
                ),
            };
            out.push_str(&format!("      {line}\n"));
        }
    }
    if let Some(n) = &d.noise {
        let o = &n.overall;
        match (o.suggested_ceiling, o.p50, o.p90, o.max) {
            (Some(s), Some(p50), Some(p90), Some(max)) => out.push_str(&format!(
                "  noise calibration: {} healthy cases, noise p50 {p50}, p90 {p90}, max {max}; suggested ceiling {:.2} of K (current {:.2}){}\n",
                o.healthy_cases,
                s,
                n.current_ceiling,
                if o.reliable { "" } else { " — too few healthy cases to rely on" }
            )),
            _ => out.push_str("  noise calibration: no healthy case with a defined noise\n"),
        }
    }
    for note in crate::findings::runs_notes(d) {
        out.push_str(&format!("  note: {note}\n"));
    }
    escape_lines(&out)
}
