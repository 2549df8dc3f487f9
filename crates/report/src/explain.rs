//! The gate's day-one explanations, shared by the text renderers: the arithmetic behind a
//! noise finding, the uncalibrated-defaults note, input warnings, and where the Quality
//! Score and the noise rule are explained.

use veredicto_core::diagnosis::NoiseFinding;
use veredicto_core::exam::{CaseResult, ExamReport, ExamWarning, ShortCase, ShortCause};

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

/// One line per warning.
pub fn warning_lines(r: &ExamReport) -> Vec<String> {
    r.warnings
        .iter()
        .map(|w| match w {
            ExamWarning::GoldUnknown { gold_label } => format!(
                "warning: gold cases cannot be told: the policy's gold label `{}` is carried by chunks of a corpus, and the exam has no corpus (give --corpus or --index) and no case says \"gold\": true",
                veredicto_core::redact::escape_control(&veredicto_core::redact::short(gold_label))
            ),
            ExamWarning::ShortResults { cases, cause } => short_results_line(r, cases, cause.as_ref()),
            ExamWarning::UnlocatedResults { cases, results } => format!(
                "warning: {} of {} that name evidence {} located in no document, so {} no evidence: give the chunks `doc_id`, `start` and `end` (in the corpus, or from the retriever), or the documents file (--documents) to locate them by their text",
                plural(*results, "result", "results"),
                plural(*cases, "case", "cases"),
                if *results == 1 { "is" } else { "are" },
                if *results == 1 { "it holds" } else { "they hold" },
            ),
            ExamWarning::UnacceptedDrafts { cases } => format!(
                "warning: {} of the golden set {} no person accepted (examined because drafts were allowed): {}",
                plural(cases.len(), "case", "cases"),
                if cases.len() == 1 { "is a draft" } else { "are drafts" },
                case_list(cases.iter().map(String::as_str))
            ),
        })
        .collect()
}

/// Most cases named in a suite line before "and N more".
const LISTED_CASES: usize = 10;

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `a, b, c and 4 more` (IDs escaped and cut).
fn case_list<'a>(ids: impl Iterator<Item = &'a str>) -> String {
    let all: Vec<&str> = ids.collect();
    let mut text = all
        .iter()
        .take(LISTED_CASES)
        .map(|id| veredicto_core::redact::short(id))
        .collect::<Vec<_>>()
        .join(", ");
    if all.len() > LISTED_CASES {
        text.push_str(&format!(" and {} more", all.len() - LISTED_CASES));
    }
    text
}

/// The suite line on duplicate results the exam removed, when it removed any: `18 duplicate
/// results removed in 2 cases (first occurrence kept): … are common causes. Cases: q1 (9),
/// q2 (9)`.
pub fn duplicates_line(r: &ExamReport) -> Option<String> {
    let s = &r.summary;
    if s.duplicates_removed == 0 {
        return None;
    }
    let cases = case_list(
        r.cases
            .iter()
            .filter_map(|c| c.duplicates_removed.as_ref().map(|_| c.id.as_str())),
    );
    Some(format!(
        "{} removed in {} (first occurrence kept): several chunks of one document mapped to one ID, or a hybrid merge that returned an ID twice, are common causes. Cases: {cases}",
        plural(s.duplicates_removed, "duplicate result", "duplicate results"),
        plural(s.cases_with_duplicates, "case", "cases"),
    ))
}

/// One case's duplicates: `9 duplicate results removed (first occurrence kept): c1`.
pub fn case_duplicates_line(c: &CaseResult) -> Option<String> {
    let d = c.duplicates_removed.as_ref()?;
    let mut ids = d
        .ids
        .iter()
        .map(|id| veredicto_core::redact::short(id))
        .collect::<Vec<_>>()
        .join(", ");
    if d.ids.len() == veredicto_core::retrieval::MAX_LISTED_DUPLICATES {
        ids.push_str(", …");
    }
    Some(format!(
        "{} removed (first occurrence kept): {ids}",
        plural(d.count, "duplicate result", "duplicate results")
    ))
}

/// Whether the live retriever failed for this case (its results say nothing about the
/// knowledge base).
pub fn retriever_failed(r: &ExamReport, c: &CaseResult) -> bool {
    r.summary.retriever_failures > 0
        && c.diagnosis.iter().any(|f| {
            matches!(
                f.detail,
                Some(veredicto_core::diagnosis::DiagnosisFinding::RetrieverFailed { .. })
            )
        })
}

/// The verdict's note when the live retriever failed for some cases (within
/// `--max-retriever-failures`): those cases count as failing, but they are failures of the
/// retriever, not of the knowledge base.
pub fn retriever_failures_line(r: &ExamReport) -> Option<String> {
    let n = r.summary.retriever_failures;
    if n == 0 {
        return None;
    }
    let cases = case_list(
        r.cases
            .iter()
            .filter(|c| retriever_failed(r, c))
            .map(|c| c.id.as_str()),
    );
    let (they, count, their) = if n == 1 {
        ("It", "counts", "its")
    } else {
        ("They", "count", "their")
    };
    Some(format!(
        "{} failed in the retriever, not in the knowledge base: {cases}. {they} {count} as failing (no_results) above; the retriever's error is in {their} diagnosis. Fix the retriever and run the exam again before reading the verdict as a judgement of the knowledge base",
        plural(n, "case", "cases")
    ))
}

/// The warning for cases the retriever answered with fewer results than asked.
fn short_results_line(r: &ExamReport, cases: &[ShortCase], cause: Option<&ShortCause>) -> String {
    const LISTED: usize = 10;
    let mut listed: Vec<String> = cases
        .iter()
        .take(LISTED)
        .map(|c| {
            format!(
                "{} ({} of {})",
                veredicto_core::redact::escape_control(&c.case),
                c.returned,
                c.asked
            )
        })
        .collect();
    if cases.len() > LISTED {
        listed.push(format!("… {} more", cases.len() - LISTED));
    }
    let why = match cause {
        Some(c) => short_cause(c),
        None => "the retriever does not say why; an expected chunk it did not return may still rank inside the depth asked".to_owned(),
    };
    format!(
        "warning: the retriever returned fewer results than asked in {} of {} cases: {}; {why}",
        cases.len(),
        r.cases.len(),
        listed.join(", ")
    )
}

/// Why a retriever's answers were short, in words.
pub fn short_cause(c: &ShortCause) -> String {
    let esc = |s: &str| veredicto_core::redact::escape_control(&veredicto_core::redact::short(s));
    match c {
        ShortCause::FewerRows { rows, asked } => format!(
            "the retriever searches only {rows} rows (fewer than the {asked} asked): that is all there is"
        ),
        ShortCause::HnswEfSearch {
            index,
            ef_search,
            asked,
            version,
            iterative_scan,
        } => {
            let head = if ef_search < &(*asked as u32) {
                format!(
                    "the served query scans the HNSW index `{}`, and pgvector's HNSW scan returns at most hnsw.ef_search = {ef_search} candidates, fewer than the {asked} asked: add `&ef_search={asked}` (or more) to the retriever URI",
                    esc(index)
                )
            } else {
                format!(
                    "the served query scans the HNSW index `{}` (hnsw.ef_search = {ef_search}), and conditions applied after the scan drop candidates: raise `&ef_search=` in the retriever URI",
                    esc(index)
                )
            };
            if *iterative_scan {
                format!("{head}, or turn on iterative index scans (`SET hnsw.iterative_scan = relaxed_order` for the database)")
            } else {
                format!(
                    "{head}; pgvector {} has no iterative index scans (`hnsw.iterative_scan` comes with 0.8.0)",
                    esc(version)
                )
            }
        }
        ShortCause::IvfflatProbes {
            index,
            probes,
            asked,
            version,
        } => format!(
            "the served query scans the IVFFlat index `{}`, which looks into ivfflat.probes = {probes} of its lists and found fewer than the {asked} asked there: raise `&probes=` in the retriever URI (pgvector {})",
            esc(index),
            esc(version)
        ),
    }
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
