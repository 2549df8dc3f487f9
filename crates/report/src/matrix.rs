//! The configuration matrix as one table: configurations as rows, the suite's metrics and
//! verdict as columns, the best value of each metric column marked with `*`.

use serde::Serialize;
use veredicto_core::redact::escape_control;

/// One configuration's exam.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatrixRow {
    pub name: String,
    /// `accept` or `stop`.
    pub verdict: String,
    pub top_k: u32,
    pub cases: usize,
    pub mean_quality: f64,
    pub mean_recall: f64,
    pub mrr: f64,
    pub mean_ndcg: f64,
    pub failing: usize,
    /// The recorded run (absent with `--no-record`).
    pub run_id: Option<String>,
    /// Mean recall of this configuration's recorded runs on the same golden set (same
    /// label), oldest first, ending with this run: at most the last 10. Empty with
    /// `--no-record`.
    pub recall_trend: Vec<f64>,
}

/// A trend as text: `0.833 → 0.917 → 0.917` (empty: `-`).
pub fn trend_text(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".to_owned();
    }
    values
        .iter()
        .map(|v| format!("{v:.3}"))
        .collect::<Vec<_>>()
        .join(" → ")
}

/// Which rows hold the best value of each metric column (ties: all of them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Best {
    pub mean_quality: Vec<String>,
    pub mean_recall: Vec<String>,
    pub mrr: Vec<String>,
    pub mean_ndcg: Vec<String>,
    pub failing: Vec<String>,
}

/// The best rows per column: highest quality, recall, MRR, nDCG; fewest failing cases.
pub fn best(rows: &[MatrixRow]) -> Best {
    fn top(rows: &[MatrixRow], f: impl Fn(&MatrixRow) -> f64) -> Vec<String> {
        let best = rows.iter().map(&f).fold(f64::NEG_INFINITY, f64::max);
        rows.iter()
            .filter(|r| f(r) == best)
            .map(|r| r.name.clone())
            .collect()
    }
    Best {
        mean_quality: top(rows, |r| r.mean_quality),
        mean_recall: top(rows, |r| r.mean_recall),
        mrr: top(rows, |r| r.mrr),
        mean_ndcg: top(rows, |r| r.mean_ndcg),
        failing: top(rows, |r| -(r.failing as f64)),
    }
}

/// The table for people.
pub fn human(rows: &[MatrixRow]) -> String {
    let b = best(rows);
    let mark = |list: &[String], name: &str, v: String| {
        if list.iter().any(|n| n == name) {
            format!("{v}*")
        } else {
            v
        }
    };
    let header = [
        "configuration",
        "K",
        "quality",
        "recall",
        "MRR",
        "nDCG",
        "failing",
        "verdict",
        "run",
        "recall trend",
    ]
    .map(str::to_owned);
    let mut table: Vec<[String; 10]> = vec![header];
    for r in rows {
        table.push([
            escape_control(&r.name),
            r.top_k.to_string(),
            mark(&b.mean_quality, &r.name, format!("{:.1}", r.mean_quality)),
            mark(&b.mean_recall, &r.name, format!("{:.3}", r.mean_recall)),
            mark(&b.mrr, &r.name, format!("{:.3}", r.mrr)),
            mark(&b.mean_ndcg, &r.name, format!("{:.3}", r.mean_ndcg)),
            mark(&b.failing, &r.name, r.failing.to_string()),
            r.verdict.to_uppercase(),
            r.run_id
                .as_deref()
                .map_or("-".to_owned(), |id| id.chars().take(12).collect()),
            trend_text(&r.recall_trend),
        ]);
    }
    let widths: Vec<usize> = (0..10)
        .map(|c| {
            table
                .iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &table {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| format!("{cell:<w$}", w = widths[c]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str("* best in its column (highest; fewest failing)\n");
    out
}

/// The table as pretty JSON with a final newline.
pub fn json(rows: &[MatrixRow]) -> String {
    let value = serde_json::json!({"configurations": rows, "best": best(rows)});
    let mut s = serde_json::to_string_pretty(&value).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_reads_oldest_first_and_an_empty_one_is_a_dash() {
        assert_eq!(trend_text(&[0.8333, 0.9167]), "0.833 → 0.917");
        assert_eq!(trend_text(&[]), "-");
    }

    fn row(name: &str, q: f64, failing: usize) -> MatrixRow {
        MatrixRow {
            name: name.into(),
            verdict: if failing == 0 { "accept" } else { "stop" }.into(),
            top_k: 10,
            cases: 20,
            mean_quality: q,
            mean_recall: q / 100.0,
            mrr: 0.5,
            mean_ndcg: 0.6,
            failing,
            run_id: Some("0123456789abcdef".into()),
            recall_trend: vec![0.5, q / 100.0],
        }
    }

    #[test]
    fn best_values_are_marked_and_ties_marked_on_every_row() {
        let rows = [row("minilm", 90.0, 2), row("e5", 97.5, 0)];
        let text = human(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("configuration"), "{text}");
        assert!(
            lines[2].contains("97.5*") && lines[2].contains("ACCEPT"),
            "{text}"
        );
        assert!(!lines[1].contains("90.0*"), "{text}");
        // MRR ties: both marked.
        assert!(
            lines[1].contains("0.500*") && lines[2].contains("0.500*"),
            "{text}"
        );
        let j: serde_json::Value = serde_json::from_str(&json(&rows)).unwrap();
        assert_eq!(j["best"]["failing"], serde_json::json!(["e5"]));
    }
}
