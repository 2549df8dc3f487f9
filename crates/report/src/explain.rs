//! The gate's day-one explanations, shared by the text renderers: the arithmetic behind a
//! noise finding, the uncalibrated-defaults note, input warnings, and where the Quality
//! Score and the noise rule are explained.

use veredicto_core::diagnosis::NoiseFinding;
use veredicto_core::exam::{CaseResult, ExamReport, ExamWarning};

/// Where a reader finds the Quality Score and the noise rule explained.
pub const RULES_DOC: &str = "docs/policy.md#the-quality-score-and-the-noise-rule";

/// One line explaining a case's noise finding from its numbers.
///
/// Structural: `K = 10, 1 expected chunk at rank 1: the other 9 necessarily score below it
/// (ceiling 3); lower this case's top_k to 1, or calibrate (veredicto calibrate)`.
pub fn noise_line(nf: &NoiseFinding) -> String {
    match nf {
        NoiseFinding::Structural {
            k,
            expected,
            ranks,
            noise,
            max_noise,
            perfect_noise,
            suggested_top_k,
            ..
        } => {
            let chunks = if *expected == 1 {
                "1 expected chunk".to_owned()
            } else {
                format!("{expected} expected chunks")
            };
            let list = ranks
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let plural = if ranks.len() == 1 { "" } else { "s" };
            let at = if ranks.len() as u32 == *expected {
                format!(" at rank{plural} {list}")
            } else {
                format!(", {} in the top {k} at rank{plural} {list}", ranks.len())
            };
            let perfect = ranks.len() as u32 == *expected
                && ranks.iter().enumerate().all(|(i, &r)| r == i + 1);
            let them = if *expected == 1 { "it" } else { "them" };
            let what = if perfect && noise == perfect_noise {
                format!("the other {perfect_noise} necessarily score below {them}")
            } else {
                format!(
                    "{noise} results score below the worst of them, and with every expected chunk first the other {perfect_noise} still would"
                )
            };
            format!(
                "K = {k}, {chunks}{at}: {what} (ceiling {max_noise}); lower this case's top_k to {suggested_top_k}, or calibrate (veredicto calibrate)"
            )
        }
        NoiseFinding::Ranking {
            k,
            noise,
            max_noise,
            expected_in_top_k,
            expected,
        } => format!(
            "{noise} of the top {k} results score below the worst expected chunk (ceiling {max_noise}), with {expected_in_top_k} of {expected} expected chunks in the top {k}: generic descriptions, mixed chunks or loose facets"
        ),
    }
}

/// The text of a diagnosis finding: noise findings are explained from their numbers.
pub fn finding_text(c: &CaseResult, f: &veredicto_core::diagnosis::Finding) -> String {
    match (&f.check, &c.noise_finding) {
        (veredicto_core::diagnosis::Check::Noise, Some(nf)) => noise_line(nf),
        _ => crate::findings::finding_sentence(f),
    }
}

/// The note printed once when the exam ran on the built-in defaults.
pub fn uncalibrated_note(r: &ExamReport) -> Option<String> {
    (!r.policy_calibrated).then(|| {
        format!(
            "policy: veredicto's defaults, not calibrated on this suite (noise ceiling {}% of K); `veredicto calibrate` writes one from the suite's healthy cases",
            crate::fmt::pct0(r.policy.noise_ceiling)
        )
    })
}

/// One line per input warning.
pub fn warning_lines(r: &ExamReport) -> Vec<String> {
    r.warnings
        .iter()
        .map(|w| match w {
            ExamWarning::GoldUnknown { gold_label } => format!(
                "warning: gold cases cannot be told: the policy's gold label `{}` is carried by chunks of a corpus, and the exam has no corpus (give --corpus or --index) and no case says \"gold\": true",
                veredicto_core::redact::escape_control(&veredicto_core::redact::short(gold_label))
            ),
        })
        .collect()
}

/// How many failing cases fail on structural noise alone (no other reason). Records
/// written before structural noise was a reason of its own say `noise` with a structural
/// finding.
pub fn structural_only(r: &ExamReport) -> usize {
    r.cases
        .iter()
        .filter(|c| {
            c.fails_on_structural_noise_only()
                || (!c.passed
                    && c.reasons == [veredicto_core::exam::CaseReason::Noise]
                    && matches!(c.noise_finding, Some(NoiseFinding::Structural { .. })))
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chunk_first_reads_as_the_issue_says() {
        let nf = NoiseFinding::Structural {
            k: 10,
            in_top_k: 10,
            expected: 1,
            ranks: vec![1],
            noise: 9,
            max_noise: 3,
            perfect_noise: 9,
            suggested_top_k: 1,
        };
        assert_eq!(
            noise_line(&nf),
            "K = 10, 1 expected chunk at rank 1: the other 9 necessarily score below it (ceiling 3); lower this case's top_k to 1, or calibrate (veredicto calibrate)"
        );
    }

    #[test]
    fn chunks_outside_the_top_k_are_said() {
        let nf = NoiseFinding::Structural {
            k: 10,
            in_top_k: 10,
            expected: 3,
            ranks: vec![1, 2],
            noise: 8,
            max_noise: 3,
            perfect_noise: 7,
            suggested_top_k: 4,
        };
        assert!(noise_line(&nf).starts_with(
            "K = 10, 3 expected chunks, 2 in the top 10 at ranks 1, 2: 8 results score below the worst of them"
        ));
    }

    #[test]
    fn chunks_not_first_say_what_a_perfect_ranking_would_leave() {
        let nf = NoiseFinding::Structural {
            k: 10,
            in_top_k: 10,
            expected: 2,
            ranks: vec![1, 4],
            noise: 6,
            max_noise: 3,
            perfect_noise: 8,
            suggested_top_k: 2,
        };
        assert_eq!(
            noise_line(&nf),
            "K = 10, 2 expected chunks at ranks 1, 4: 6 results score below the worst of them, and with every expected chunk first the other 8 still would (ceiling 3); lower this case's top_k to 2, or calibrate (veredicto calibrate)"
        );
    }
}
