//! `veredicto judge`: the relevance suggestions of a chat model for the chunks that outrank
//! a failing case's expected ones, and their agreement with people's judgments.

use std::fmt::Write;

use serde_json::json;
use veredicto_grounding::Agreement;

/// One suggestion, as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'a> {
    pub case: &'a str,
    pub chunk: &'a str,
    pub rank: usize,
    /// `relevant`, `partly`, `not`.
    pub grade: &'a str,
    pub reason: &'a str,
}

/// What `judge` shows.
#[derive(Debug, Clone)]
pub struct View<'a> {
    pub run: &'a str,
    pub rows: Vec<Row<'a>>,
    /// Outranking chunks the corpus has no text for (not asked).
    pub missing: usize,
    /// Where the suggestions were appended.
    pub file: &'a str,
    /// Latest suggestions against people's latest judgments.
    pub agreement: &'a Agreement,
    /// The prompt's fingerprint.
    pub prompt: &'a str,
}

/// The sentence of the report when outranking chunks are suggested relevant.
pub fn suggested_sentence(n: usize) -> String {
    format!(
        "{n} outranking chunk{} suggested relevant: the golden set may be incomplete",
        if n == 1 { "" } else { "s" }
    )
}

fn kappa_line(ag: &Agreement) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "undefined".to_string(), |v| format!("{v:.3}"));
    if ag.pairs == 0 {
        "agreement with people's judgments: no chunk rated by both yet".to_owned()
    } else {
        format!(
            "agreement with people's judgments: {} pair(s), observed {}, chance {}, Cohen's kappa {}",
            ag.pairs,
            f(ag.observed),
            f(ag.expected),
            f(ag.kappa)
        )
    }
}

/// Human text: one line per suggestion, the sentence when some are relevant, the agreement.
pub fn human(v: &View<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "run {}: {} suggestion(s) ({}), a model's, not a person's",
        v.run,
        v.rows.len(),
        v.prompt
    );
    for r in &v.rows {
        let _ = writeln!(
            s,
            "  {:<24} {:<24} rank {:>3}  {:<8} {}",
            r.case, r.chunk, r.rank, r.grade, r.reason
        );
    }
    let relevant = v.rows.iter().filter(|r| r.grade == "relevant").count();
    if relevant > 0 {
        let _ = writeln!(s, "{}", suggested_sentence(relevant));
    }
    if v.missing > 0 {
        let _ = writeln!(
            s,
            "{} outranking chunk(s) not asked about: the corpus has no text for them",
            v.missing
        );
    }
    let _ = writeln!(s, "{}", kappa_line(v.agreement));
    let _ = writeln!(
        s,
        "stored in {} (people's judgments are not touched)",
        v.file
    );
    s
}

/// The grades in matrix order (the agreement is computed over them as the first three
/// verdicts of `audit agreement`).
pub const GRADES: [&str; 3] = ["relevant", "partly", "not"];

/// `judge --agreement`, human text: κ and the confusion matrix (rows: people's judgments;
/// columns: the model's suggestions).
pub fn agreement_human(ag: &Agreement) -> String {
    let mut s = format!("{}\n", kappa_line(ag));
    s.push_str("rows: people's judgments; columns: model suggestions\n");
    let _ = write!(s, "{:<10}", "");
    for g in GRADES {
        let _ = write!(s, "{g:>10}");
    }
    s.push('\n');
    for (i, g) in GRADES.iter().enumerate() {
        let _ = write!(s, "{g:<10}");
        for n in &ag.matrix[i][..3] {
            let _ = write!(s, "{n:>10}");
        }
        s.push('\n');
    }
    s
}

/// `judge --agreement --json`: the labels, the pairs, κ and the 3 × 3 matrix.
pub fn agreement_json(ag: &Agreement) -> String {
    let matrix: Vec<Vec<usize>> = ag.matrix[..3].iter().map(|r| r[..3].to_vec()).collect();
    let mut s = serde_json::to_string_pretty(&json!({
        "labels": GRADES, "pairs": ag.pairs, "observed": ag.observed, "expected": ag.expected,
        "kappa": ag.kappa, "matrix": matrix,
    }))
    .unwrap_or_default();
    s.push('\n');
    s
}

/// JSON: the run, the suggestions, the count suggested relevant, the agreement.
pub fn json(v: &View<'_>) -> String {
    let rows: Vec<_> = v
        .rows
        .iter()
        .map(|r| json!({"case": r.case, "chunk": r.chunk, "rank": r.rank, "grade": r.grade, "reason": r.reason}))
        .collect();
    let relevant = v.rows.iter().filter(|r| r.grade == "relevant").count();
    let mut s = serde_json::to_string_pretty(&json!({
        "run": v.run, "prompt": v.prompt, "suggestions": rows, "suggested_relevant": relevant,
        "missing_text": v.missing, "file": v.file,
        "agreement": {"pairs": v.agreement.pairs, "kappa": v.agreement.kappa, "observed": v.agreement.observed},
    }))
    .unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_counts() {
        assert_eq!(
            suggested_sentence(3),
            "3 outranking chunks suggested relevant: the golden set may be incomplete"
        );
        assert_eq!(
            suggested_sentence(1),
            "1 outranking chunk suggested relevant: the golden set may be incomplete"
        );
    }
}
