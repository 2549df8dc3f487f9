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
    let grade = |g: u32| {
        if g == veredicto_core::evidence::DEFAULT_GRADE {
            String::new()
        } else {
            format!(" (grade {g})")
        }
    };
    let rank = |r: Option<usize>| r.map_or("-".to_owned(), |r| r.to_string());
    c.expected
        .iter()
        .map(|e| format!("{}#{}{}", e.id, rank(e.rank), grade(e.grade)))
        .chain(c.evidence.iter().map(|e| {
            format!(
                "{}[{}..{}]#{}{}",
                e.doc_id,
                e.start,
                e.end,
                rank(e.rank),
                grade(e.grade)
            )
        }))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line per stop reason, with the numbers behind it. The cases that fail on structural
/// noise alone are named by `structural_noise`, not by the other reasons (as the reasons are
/// computed: see `veredicto_core::exam::StopReason`).
pub fn stop_reasons(r: &ExamReport) -> Vec<String> {
    use veredicto_core::exam::StopReason::*;
    let s = &r.summary;
    // A case the live retriever failed for is marked as such: it is not a failure of the
    // knowledge base.
    let other = |c: &&CaseResult| !c.passed && !c.fails_on_structural_noise_only();
    let failing_ids = |gold: bool, undocumented_only: bool| {
        r.cases
            .iter()
            .filter(other)
            .filter(|c| c.gold == gold && (!undocumented_only || !c.documented))
            .map(|c| {
                if crate::explain::retriever_failed(r, c) {
                    format!("{} (retriever failed)", c.id)
                } else {
                    c.id.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let other_non_gold = r.cases.iter().filter(other).filter(|c| !c.gold).count();
    let structural_non_gold = r
        .cases
        .iter()
        .filter(|c| !c.gold && c.fails_on_structural_noise_only())
        .count();
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
                "too_many_failures: {other_non_gold} non-gold failing {} > {} tolerated ({} of {} cases){}{}",
                if other_non_gold == 1 { "case" } else { "cases" },
                s.max_failing,
                pct(r.policy.max_failing_fraction),
                s.cases,
                if structural_non_gold > 0 {
                    format!(", besides {structural_non_gold} on structural noise alone")
                } else {
                    String::new()
                },
                match r
                    .cases
                    .iter()
                    .filter(|c| !c.passed && !c.gold && crate::explain::retriever_failed(r, c))
                    .count()
                {
                    0 => String::new(),
                    n => format!(", {n} of them failed in the retriever"),
                }
            ),
            StructuralNoise => structural_noise_reason(r),
        })
        .collect()
}

/// The `structural_noise` stop reason in words: when the policy is veredicto's defaults it
/// starts with "the noise ceiling is not calibrated for this suite".
pub fn structural_noise_reason(r: &ExamReport) -> String {
    use veredicto_core::diagnosis::NoiseFinding;
    let cases: Vec<&CaseResult> = r
        .cases
        .iter()
        .filter(|c| c.fails_on_structural_noise_only())
        .collect();
    let gold = cases.iter().filter(|c| c.gold).count();
    let count = match (cases.len(), gold) {
        (1, 0) => "1 case fails".to_owned(),
        (1, _) => "1 gold case fails".to_owned(),
        (n, 0) => format!("{n} cases fail"),
        (n, g) => format!("{n} cases ({g} gold) fail"),
    };
    // The arithmetic, when every such case shares it.
    let shapes: std::collections::BTreeSet<(u32, u32, u32, u32)> = cases
        .iter()
        .filter_map(|c| match c.noise_finding {
            Some(NoiseFinding::Structural {
                k,
                expected,
                perfect_noise,
                max_noise,
                ..
            }) => Some((k, expected, perfect_noise, max_noise)),
            _ => None,
        })
        .collect();
    let arithmetic = match shapes.iter().next() {
        Some(&(k, e, perfect, max)) if shapes.len() == 1 => {
            let (chunks, them) = if e == 1 {
                ("1 expected chunk".to_owned(), "it")
            } else {
                (format!("{e} expected chunks"), "them")
            };
            format!(
                " (K = {k}, {chunks}: a perfect ranking leaves {perfect} results below {them}, ceiling {max})"
            )
        }
        _ => String::new(),
    };
    let ids = id_list(cases.iter().map(|c| c.id.as_str()), 10);
    if r.policy_calibrated {
        format!(
            "structural_noise: {count} on noise alone that a perfect ranking would also have{arithmetic}: {ids}; their K exceeds what their expected lists can fill under their noise ceiling: give them the top_k their diagnosis suggests"
        )
    } else {
        format!(
            "structural_noise: the noise ceiling is not calibrated for this suite: {count} on noise alone that a perfect ranking would also have{arithmetic}: {ids}; calibrate the ceiling on this suite (veredicto calibrate), or give these cases a top_k their expected lists can fill"
        )
    }
}

/// `a, b, c and 4 more`: at most `max` IDs.
fn id_list<'a>(ids: impl ExactSizeIterator<Item = &'a str>, max: usize) -> String {
    let total = ids.len();
    let shown: Vec<&str> = ids.take(max).collect();
    let mut out = shown.join(", ");
    if total > max {
        out.push_str(&format!(" and {} more", total - max));
    }
    out
}

/// A fraction as a percentage without the sign, whole when it is: `0.3` → `30`, `0.125` →
/// `12.5`.
pub fn pct0(v: f64) -> String {
    let p = v * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}", p.round() as i64)
    } else {
        format!("{p:.1}")
    }
}

/// Cases in display order: failing first, each group in golden-set order.
pub fn failing_first(r: &ExamReport) -> Vec<&CaseResult> {
    let mut out: Vec<&CaseResult> = r.cases.iter().filter(|c| !c.passed).collect();
    out.extend(r.cases.iter().filter(|c| c.passed));
    out
}

/// The declared boost's effect, when the policy has one: a summary line (both orders'
/// mean recall from the stage summaries, cases where expected or gold chunks reach the top
/// K only thanks to the boost) and one line per case whose top K the boost changed.
pub fn boost_lines(r: &ExamReport) -> Vec<String> {
    if r.boost.is_empty() {
        return Vec::new();
    }
    let recall = |stage: &str| {
        r.stages
            .iter()
            .find(|s| s.stage == stage)
            .map_or("-".to_owned(), |s| f3(s.mean_recall))
    };
    let helped = r
        .boost
        .iter()
        .filter(|b| !b.only_with_boost.is_empty())
        .count();
    let gold = r
        .boost
        .iter()
        .filter(|b| !b.gold_only_with_boost.is_empty())
        .count();
    let hurt = r
        .boost
        .iter()
        .filter(|b| !b.lost_by_boost.is_empty())
        .count();
    let mut out = vec![format!(
        "boost: mean recall vector only {} · vector + boost {} · {helped} cases reach expected chunks only thanks to the boost ({gold} of them gold chunks) · {hurt} lose expected chunks to it",
        recall("retrieval"),
        recall("boost")
    )];
    for b in &r.boost {
        if b.vector_order == b.boosted_order {
            continue;
        }
        let mut line = format!(
            "  {}: vector [{}] -> boosted [{}]",
            b.case,
            b.vector_order.join(", "),
            b.boosted_order.join(", ")
        );
        if !b.only_with_boost.is_empty() {
            line.push_str(&format!(
                "; only thanks to the boost: {}",
                b.only_with_boost.join(", ")
            ));
        }
        if !b.gold_only_with_boost.is_empty() {
            line.push_str(" (gold)");
        }
        if !b.lost_by_boost.is_empty() {
            line.push_str(&format!(
                "; lost to the boost: {}",
                b.lost_by_boost.join(", ")
            ));
        }
        out.push(line);
    }
    out
}

/// The exactness check in one line, when the report has one.
pub fn exactness(r: &ExamReport) -> Option<String> {
    let x = r.exactness.as_ref()?;
    let missing = if x.failing_missing_chunks > 0 {
        format!(
            " · {} fail because expected chunks are not in the collection",
            x.failing_missing_chunks
        )
    } else {
        String::new()
    };
    if x.served_plan.as_ref().is_some_and(|p| p.exact()) {
        return Some(format!(
            "exactness check: the served query is already exact (its plan scans no ANN index: a sequential scan and a sort), so there is no ANN loss to measure over {} cases · {} fail under exact search too{missing}",
            x.cases, x.failing_under_exact_too
        ));
    }
    let index = match x.served_plan.as_ref().and_then(|p| p.ann_index.as_deref()) {
        Some(name) => format!(
            " (the served query scans the {} index `{}`)",
            x.served_plan
                .as_ref()
                .and_then(|p| p.method.as_deref())
                .unwrap_or("ANN"),
            veredicto_core::redact::escape_control(name)
        ),
        None => String::new(),
    };
    Some(format!(
        "exactness check: ANN recall@K against exact search {} over {} cases{index} · {} failing cases lost expected chunks to the ANN index · {} fail under exact search too{missing}",
        f3(x.ann_recall_at_k),
        x.cases,
        x.failing_lost_by_ann,
        x.failing_under_exact_too
    ))
}

/// The stored-vector check in one line, when the report has one: a warning when the
/// collection looks embedded with another model than the query model.
pub fn stored_vectors(r: &ExamReport) -> Option<String> {
    let v = r.stored_vectors.as_ref()?;
    Some(stored_vectors_line(v))
}

/// `stored_vectors` for a check without a report (`search --retriever`).
pub fn stored_vectors_line(v: &veredicto_core::exam::StoredVectors) -> String {
    let esc = veredicto_core::redact::escape_control;
    let model = esc(&v.query_model);
    let collection = esc(&v.collection);
    let not_held = if v.not_held > 0 {
        format!(
            " · {} of {} sampled chunks not held (no stored vector)",
            v.not_held, v.sampled
        )
    } else {
        String::new()
    };
    if let Some(first) = v.other_dimension.first() {
        return format!(
            "warning: {collection} was embedded with another model: {} of {} stored vectors have another dimension than the query model `{model}`'s (first: `{}`){not_held}",
            v.other_dimension.len(),
            v.compared + v.other_dimension.len(),
            esc(&veredicto_core::redact::short(first))
        );
    }
    let lowest = v.lowest.as_ref().map_or(String::new(), |l| {
        format!(
            ", lowest {:.3} (`{}`)",
            l.cosine,
            esc(&veredicto_core::redact::short(&l.chunk))
        )
    });
    let body = format!(
        "mean cosine {:.3} between the stored vectors of {} sampled chunks and their texts embedded by the query model `{model}`{lowest}; {} below {}",
        v.mean_cosine, v.compared, v.below, v.threshold
    );
    if v.other_model {
        format!(
            "warning: {collection} was embedded with another model: {body}{not_held}. Re-embed it with the query model (veredicto embed), or examine with the model that embedded it"
        )
    } else {
        format!("stored vectors: {body}: {collection} was embedded with the query model{not_held}")
    }
}

/// A `sha256:…` fingerprint shortened to its first 12 hex digits (`sha256:1a2b3c4d5e6f`).
pub fn short_fingerprint(fp: &str) -> String {
    let first = |s: &str| s.chars().take(12).collect::<String>();
    match fp.split_once(':') {
        Some((algo, hex)) => format!("{algo}:{}", first(hex)),
        None => first(fp),
    }
}

/// A recall of the fusion section: three decimals, `-` without cases with expected chunks.
pub fn recall_or_dash(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), f3)
}

/// The cases only one arm finds, listed (at most 10, then `+N more`).
pub fn only_found(cases: &[String]) -> String {
    const SHOWN: usize = 10;
    if cases.is_empty() {
        return "none".to_owned();
    }
    let mut s = cases
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if cases.len() > SHOWN {
        s.push_str(&format!(" +{} more", cases.len() - SHOWN));
    }
    s
}

/// An arm's time, when the report has it (`--timings`).
pub fn arm_latency(a: &veredicto_core::exam::FusionArm) -> Option<String> {
    let l = a.latency.as_ref()?;
    Some(format!(
        "{:.2} ms in {} call{} ({:.3} ms per case)",
        l.total_ms,
        l.calls,
        if l.calls == 1 { "" } else { "s" },
        l.ms_per_case
    ))
}

/// The fusion section, when the retriever is a fusion: one line for the fused ranking, then
/// one per arm (its recall at K, the cases only it finds, its time with `--timings`).
pub fn fusion_lines(r: &ExamReport) -> Vec<String> {
    let Some(f) = &r.fusion else {
        return Vec::new();
    };
    let mut lines = vec![format!(
        "fusion {}: recall@K {} fused, over {} arms",
        f.method,
        recall_or_dash(f.recall),
        f.arms.len()
    )];
    for (i, a) in f.arms.iter().enumerate() {
        let time = arm_latency(a)
            .map(|t| format!(" · {t}"))
            .unwrap_or_default();
        lines.push(format!(
            "  arm {} {} ({}): recall@K {} · {} case(s) only this arm finds: {}{time}",
            i + 1,
            a.uri,
            a.kind,
            recall_or_dash(a.recall),
            a.only_found.len(),
            only_found(&a.only_found)
        ));
    }
    lines
}
