//! Number and list formatting shared by the text renderers.

use veredicto_core::exam::{CaseResult, ExamReport};

/// A fraction as a percentage with one decimal: `0.6667` → `66.7%`.
pub fn pct(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// A 0..1 value with three decimals.
pub fn f3(v: f64) -> String {
    format!("{v:.3}")
}

/// A Quality Score (0..100) with one decimal, trailing `.0` dropped.
pub fn qs(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

pub fn noise(c: &CaseResult) -> String {
    match c.noise {
        Some(n) => format!("{n}/{}", c.max_noise),
        None => "-".to_owned(),
    }
}

pub fn reasons(c: &CaseResult) -> String {
    if c.reasons.is_empty() {
        return "ok".to_owned();
    }
    c.reasons
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// `gold_001#1 silver_legal_045#3 silver_finanzas_123#15 other#-`.
pub fn expected_ranks(c: &CaseResult) -> String {
    c.expected
        .iter()
        .map(|e| match e.rank {
            Some(r) => format!("{}#{r}", e.id),
            None => format!("{}#-", e.id),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line per stop reason, with the numbers behind it.
pub fn stop_reasons(r: &ExamReport) -> Vec<String> {
    use veredicto_core::exam::StopReason::*;
    let s = &r.summary;
    let failing_ids = |gold: bool, undocumented_only: bool| {
        r.cases
            .iter()
            .filter(|c| !c.passed && c.gold == gold && (!undocumented_only || !c.documented))
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    r.reasons
        .iter()
        .map(|reason| match reason {
            MeanQuality => format!(
                "mean_quality: mean Quality Score {} < {}",
                qs(s.mean_quality),
                qs(r.policy.min_mean_quality)
            ),
            GoldCaseFailed => format!("gold_case_failed: {}", failing_ids(true, false)),
            UndocumentedFailures => format!(
                "undocumented_failures: failing cases without a note: {}",
                failing_ids(false, true)
            ),
            TooManyFailures => format!(
                "too_many_failures: {} non-gold failing cases > {} tolerated ({} of {} cases)",
                s.failing - s.failing_gold,
                s.max_failing,
                pct(r.policy.max_failing_fraction),
                s.cases
            ),
        })
        .collect()
}

/// Cases in display order: failing first, each group in golden-set order.
pub fn failing_first(r: &ExamReport) -> Vec<&CaseResult> {
    let mut out: Vec<&CaseResult> = r.cases.iter().filter(|c| !c.passed).collect();
    out.extend(r.cases.iter().filter(|c| c.passed));
    out
}

/// The exactness check in one line, when the report has one.
pub fn exactness(r: &ExamReport) -> Option<String> {
    let x = r.exactness.as_ref()?;
    Some(format!(
        "exactness check: ANN recall@K against exact search {} over {} cases · {} failing cases lost expected chunks to the ANN index · {} fail under exact search too",
        f3(x.ann_recall_at_k),
        x.cases,
        x.failing_lost_by_ann,
        x.failing_under_exact_too
    ))
}
