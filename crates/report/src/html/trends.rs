//! Trends over the history (mean QS, mean recall and MRR, overall and per domain), the
//! cross-run trend tests, and per-stage latency.

use super::svg::{self, LineChart, Series};
use super::text::{escape, p_value, pct, plural, signed_pp, signed_qs};
use crate::fmt;
use std::collections::BTreeSet;
use veredicto_core::compare::{Direction, RunsDiagnosis, Trend};
use veredicto_core::exam::{CaseResult, Verdict};
use veredicto_core::history::RecordedRun;

/// `history` with `current` appended when no run of it has the same ID.
pub fn history_with<'a>(
    history: &'a [RecordedRun],
    current: &'a RecordedRun,
) -> Vec<&'a RecordedRun> {
    let mut out: Vec<&RecordedRun> = history.iter().collect();
    if !history.iter().any(|r| r.meta.id == current.meta.id) {
        out.push(current);
    }
    out
}

#[derive(Clone, Copy)]
enum M {
    Quality,
    Recall,
    Mrr,
}

impl M {
    fn of_case(self, c: &CaseResult) -> f64 {
        match self {
            M::Quality => c.quality,
            M::Recall => c.recall,
            M::Mrr => c.reciprocal_rank,
        }
    }
    fn of_run(self, r: &RecordedRun) -> f64 {
        let s = &r.report.summary;
        match self {
            M::Quality => s.mean_quality,
            M::Recall => s.mean_recall,
            M::Mrr => s.mrr,
        }
    }
    /// Chart ID, title and the range of values the metric can take.
    fn chart(self) -> (&'static str, &'static str, (f64, f64)) {
        match self {
            M::Quality => ("trend-qs", "Mean Quality Score", (0.0, 100.0)),
            M::Recall => ("trend-recall", "Mean recall@K", (0.0, 1.0)),
            M::Mrr => ("trend-mrr", "MRR@K", (0.0, 1.0)),
        }
    }
    fn delta(self, d: f64) -> String {
        match self {
            M::Quality => signed_qs(d),
            M::Recall => signed_pp(d),
            M::Mrr => super::text::signed_f3(d),
        }
    }
    fn format(self, v: f64) -> String {
        match self {
            M::Quality => fmt::qs(v),
            M::Recall => pct(v),
            M::Mrr => fmt::f3(v),
        }
    }
}

/// Mean of `m` over the run's cases of `domain`; `None` when it has none.
fn domain_mean(r: &RecordedRun, domain: &str, m: M) -> Option<f64> {
    let values: Vec<f64> = r
        .report
        .cases
        .iter()
        .filter(|c| c.domain.as_deref() == Some(domain))
        .map(|c| m.of_case(c))
        .collect();
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

fn x_labels(runs: &[&RecordedRun]) -> Vec<String> {
    let dates: Vec<&str> = runs
        .iter()
        .map(|r| super::text::prefix(&r.meta.created_at, 10))
        .collect();
    let distinct: BTreeSet<&str> = dates.iter().copied().collect();
    if distinct.len() == dates.len() {
        dates.into_iter().map(str::to_owned).collect()
    } else {
        // Several runs a day: month-day and time.
        runs.iter()
            .map(|r| {
                let t = &r.meta.created_at;
                let s: String = t.chars().skip(5).take(11).collect();
                s.replace('T', " ")
            })
            .collect()
    }
}

fn series(runs: &[&RecordedRun], domains: &BTreeSet<&str>, m: M) -> Vec<Series> {
    let mut out = vec![Series {
        name: "all cases".to_owned(),
        values: runs.iter().map(|r| Some(m.of_run(r))).collect(),
    }];
    for d in domains {
        out.push(Series {
            name: (*d).to_owned(),
            values: runs.iter().map(|r| domain_mean(r, d, m)).collect(),
        });
    }
    out
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Accept => "ACCEPT",
        Verdict::Stop => "STOP",
    }
}

/// The trends section.
pub fn section(runs: &[&RecordedRun], diagnosis: Option<&RunsDiagnosis>) -> String {
    let mut s = String::from(
        "<section id=\"trends\" aria-labelledby=\"trends-h\"><h2 id=\"trends-h\">Trends over the history</h2>\n",
    );
    if runs.len() < 2 {
        s.push_str(&format!(
            "<p class=\"small muted\">Trends need at least two recorded runs; the history given has {}.</p>\n",
            plural(runs.len(), "run", "runs")
        ));
    } else {
        let domains: BTreeSet<&str> = runs
            .iter()
            .flat_map(|r| r.report.cases.iter().filter_map(|c| c.domain.as_deref()))
            .collect();
        let labels = x_labels(runs);
        let tips: Vec<String> = runs
            .iter()
            .map(|r| {
                format!(
                    "{} ({}{}, {})",
                    r.meta.id,
                    r.meta.created_at,
                    r.meta
                        .label
                        .as_deref()
                        .map(|l| format!(", {l}"))
                        .unwrap_or_default(),
                    verdict_word(r.report.verdict)
                )
            })
            .collect();
        let current = runs[runs.len() - 1];
        // Up to MAX_INLINE_DOMAINS domains share the overall charts; more get a row each.
        let inline = domains.len() <= MAX_INLINE_DOMAINS;
        let drawn: BTreeSet<&str> = if inline {
            domains.clone()
        } else {
            BTreeSet::new()
        };
        s.push_str(&format!(
            "<p class=\"small muted\">{}, oldest to newest: {}.</p>\n",
            plural(runs.len(), "run", "runs"),
            if domains.is_empty() {
                "the mean over all cases (the cases have no domain)"
            } else if inline {
                "the mean over all cases (thick) and the mean of each domain's cases in each run"
            } else {
                "the mean over all cases; each domain's trend is in the table below the charts"
            }
        ));
        let qs_series = series(runs, &drawn, M::Quality);
        if qs_series.len() > 1 {
            s.push_str(&svg::legend(&qs_series));
        }
        s.push_str("<div class=\"grid3\">\n");
        let min_quality = current.report.policy.min_mean_quality;
        for m in [M::Quality, M::Recall, M::Mrr] {
            let (id, title, bounds) = m.chart();
            let threshold = matches!(m, M::Quality)
                .then(|| (min_quality, format!("threshold {}", fmt::qs(min_quality))));
            let data = series(runs, &drawn, m);
            let format = move |v: f64| m.format(v);
            let desc = format!(
                "Line chart of {} over {} runs, overall and for {}; newest {}.",
                title.to_lowercase(),
                runs.len(),
                plural(domains.len(), "domain", "domains"),
                m.format(m.of_run(current))
            );
            s.push_str(&format!(
                "<figure><figcaption><strong>{title}</strong></figcaption>\n"
            ));
            s.push_str(&svg::line_chart(&LineChart {
                id,
                title,
                desc: &desc,
                x_labels: &labels,
                x_tooltips: &tips,
                series: &data,
                bounds,
                threshold,
                format: &format,
            }));
            s.push_str("</figure>\n");
        }
        s.push_str("</div>\n");
        if !inline {
            s.push_str(&domain_sparklines(runs, &domains, &tips));
        }
        s.push_str(&data_table(runs, &domains));
        s.push_str(&configuration_table(runs));
    }
    if let Some(d) = diagnosis {
        s.push_str(&trend_tests(&d.trends));
    }
    s.push_str("</section>\n");
    s
}

/// Domains drawn as extra lines of the overall charts; more get a sparkline row each.
const MAX_INLINE_DOMAINS: usize = 6;

/// One row per domain: a sparkline of each metric with its newest value and its change
/// since the first run in which the domain had cases.
fn domain_sparklines(runs: &[&RecordedRun], domains: &BTreeSet<&str>, tips: &[String]) -> String {
    let mut s = String::from(
        "<div class=\"table-wrap\"><table class=\"sparks\"><caption>Per domain: mean of the domain's cases in each run (newest value, change since the domain's first run)</caption><thead><tr><th scope=\"col\">domain</th><th scope=\"col\" class=\"n\">cases now</th>",
    );
    for m in [M::Quality, M::Recall, M::Mrr] {
        s.push_str(&format!(
            "<th scope=\"col\" colspan=\"2\">{}</th>",
            m.chart().1
        ));
    }
    s.push_str("</tr></thead><tbody>\n");
    let newest = runs[runs.len() - 1];
    for d in domains {
        let now = newest
            .report
            .cases
            .iter()
            .filter(|c| c.domain.as_deref() == Some(*d))
            .count();
        s.push_str(&format!(
            "<tr><th scope=\"row\"><code>{}</code></th><td class=\"n\">{now}</td>",
            escape(d)
        ));
        for m in [M::Quality, M::Recall, M::Mrr] {
            let values: Vec<Option<f64>> = runs.iter().map(|r| domain_mean(r, d, m)).collect();
            let format = move |v: f64| m.format(v);
            let first = values.iter().flatten().next().copied();
            let last = values.iter().flatten().last().copied();
            s.push_str(&format!(
                "<td>{}</td><td class=\"last\">{}</td>",
                svg::sparkline(
                    &format!("{} of domain {d}", m.chart().1),
                    &values,
                    tips,
                    m.chart().2,
                    &format
                ),
                match (first, last) {
                    (Some(f), Some(l)) => format!(
                        "{} <span class=\"{}\">({})</span>",
                        m.format(l),
                        if (l - f).abs() < 1e-9 {
                            "muted"
                        } else if l < f {
                            "down"
                        } else {
                            "up"
                        },
                        m.delta(l - f)
                    ),
                    _ => "–".to_owned(),
                }
            ));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n");
    s
}

fn data_table(runs: &[&RecordedRun], domains: &BTreeSet<&str>) -> String {
    let mut s = String::from(
        "<details><summary class=\"small\">The numbers behind the plots</summary>\n<div class=\"table-wrap\"><table class=\"inner\"><thead><tr><th scope=\"col\">run</th><th scope=\"col\">created</th><th scope=\"col\">label</th><th scope=\"col\">verdict</th><th scope=\"col\" class=\"n\">cases</th><th scope=\"col\" class=\"n\">mean QS</th><th scope=\"col\" class=\"n\">mean recall</th><th scope=\"col\" class=\"n\">MRR</th>",
    );
    for d in domains {
        s.push_str(&format!(
            "<th scope=\"col\" class=\"n\">{} QS · recall · MRR</th>",
            escape(d)
        ));
    }
    s.push_str("</tr></thead><tbody>\n");
    for r in runs {
        let sm = &r.report.summary;
        s.push_str(&format!(
            "<tr><th scope=\"row\"><code>{}</code></th><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
            escape(&r.meta.id),
            escape(&r.meta.created_at),
            escape(r.meta.label.as_deref().unwrap_or("")),
            verdict_word(r.report.verdict),
            sm.cases,
            fmt::qs(sm.mean_quality),
            pct(sm.mean_recall),
            fmt::f3(sm.mrr)
        ));
        for d in domains {
            let v: Vec<String> = [M::Quality, M::Recall, M::Mrr]
                .iter()
                .map(|m| domain_mean(r, d, *m).map_or("–".to_owned(), |v| m.format(v)))
                .collect();
            s.push_str(&format!("<td class=\"n\">{}</td>", v.join(" · ")));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div></details>\n");
    s
}

/// What makes two runs the same configuration: the kind of retriever, the embedding model,
/// the default K, the rerank stage and the chunking. (Not the source: a run file or an index
/// folder may be renamed from night to night without changing the configuration.)
fn configuration_of(r: &RecordedRun) -> String {
    let c = &r.meta.config;
    let mut parts = vec![c.retriever.clone()];
    if let Some(m) = &c.embedding_model {
        parts.push(m.clone());
    }
    parts.push(format!("K {}", c.top_k));
    if let Some(rr) = &c.rerank {
        parts.push(format!("rerank {rr}"));
    }
    match (c.chunk_size, c.chunk_overlap) {
        (Some(size), Some(overlap)) => parts.push(format!("chunks {size}/{overlap}")),
        (Some(size), None) => parts.push(format!("chunks {size}")),
        _ => {}
    }
    parts.join(" · ")
}

/// The trends grouped by configuration, when the history holds runs of more than one (a
/// configuration matrix run every night): one row per configuration, in order of first
/// appearance, with its runs' mean recall oldest to newest and its newest verdict.
fn configuration_table(runs: &[&RecordedRun]) -> String {
    let mut groups: Vec<(String, Vec<&RecordedRun>)> = Vec::new();
    for r in runs {
        let key = configuration_of(r);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    if groups.len() < 2 {
        return String::new();
    }
    let mut s = String::from(
        "<div class=\"table-wrap\"><table class=\"inner\" id=\"trends-by-configuration\"><caption>Per configuration (retriever, model, K, rerank, chunking): mean recall of its runs, oldest to newest</caption><thead><tr><th scope=\"col\">configuration</th><th scope=\"col\" class=\"n\">runs</th><th scope=\"col\">mean recall</th><th scope=\"col\" class=\"n\">newest mean QS</th><th scope=\"col\">newest verdict</th></tr></thead><tbody>\n",
    );
    for (key, list) in &groups {
        let newest = list[list.len() - 1];
        let recall: Vec<String> = list
            .iter()
            .map(|r| pct(r.report.summary.mean_recall))
            .collect();
        s.push_str(&format!(
            "<tr><th scope=\"row\">{}</th><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
            escape(key),
            list.len(),
            recall.join(" → "),
            fmt::qs(newest.report.summary.mean_quality),
            verdict_word(newest.report.verdict)
        ));
    }
    s.push_str("</tbody></table></div>\n");
    s
}

fn trend_value(metric: &str, v: f64) -> String {
    match metric {
        "mean_quality" => signed_qs(v),
        _ => signed_pp(v),
    }
}

fn trend_tests(trends: &[Trend]) -> String {
    let mut s = String::from("<h3>Trend tests</h3>\n");
    if trends.is_empty() {
        s.push_str("<p class=\"small muted\">No trend computed (too few runs in the window; see the diagnosis notes).</p>\n");
        return s;
    }
    s.push_str("<div class=\"table-wrap\"><table><caption>Linear trend over the last runs (OLS slope per run, over the cases every run of the window shares), one-sided permutation test in the direction shown, Holm-adjusted across mean recall and mean QS</caption><thead><tr><th scope=\"col\">metric</th><th scope=\"col\">looks for</th><th scope=\"col\" class=\"n\">runs</th><th scope=\"col\" class=\"n\">cases</th><th scope=\"col\" class=\"n\">slope / run</th><th scope=\"col\" class=\"n\">fitted change</th><th scope=\"col\" class=\"n\">largest step</th><th scope=\"col\" class=\"n\">cases moving</th><th scope=\"col\" class=\"n\">p</th><th scope=\"col\" class=\"n\">Holm p</th><th scope=\"col\">significant</th></tr></thead><tbody>\n");
    for t in trends {
        s.push_str(&format!(
            "<tr><th scope=\"row\">{}</th><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
            escape(&t.metric),
            match t.direction {
                Direction::Decreasing => "a decline",
                Direction::Increasing => "a rise",
            },
            t.runs.len(),
            t.cases,
            trend_value(&t.metric, t.slope),
            trend_value(&t.metric, t.total_change),
            // A magnitude in the direction looked for: show it with that direction's sign.
            trend_value(
                &t.metric,
                match t.direction {
                    Direction::Decreasing => -t.largest_step,
                    Direction::Increasing => t.largest_step,
                }
            ),
            t.moving_cases,
            p_value(t.p_value),
            p_value(t.p_adjusted),
            if t.significant {
                "<span class=\"sig down\">yes</span>"
            } else {
                "no"
            }
        ));
    }
    s.push_str("</tbody></table></div>\n");
    s
}

const STAGE_ORDER: [&str; 5] = [
    "query_embedding",
    "search",
    "rehydration",
    "rerank",
    "total",
];

fn ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// Per-stage latency, when the run measured it.
pub fn latency(run: &RecordedRun) -> String {
    let l = &run.meta.latency;
    if l.is_empty() {
        return String::new();
    }
    let mut stages: Vec<(&String, _)> = l.iter().collect();
    stages.sort_by_key(|(name, _)| {
        STAGE_ORDER
            .iter()
            .position(|s| s == name)
            .unwrap_or(STAGE_ORDER.len())
    });
    let mut s = String::from(
        "<section id=\"latency\" aria-labelledby=\"latency-h\"><h2 id=\"latency-h\">Latency per stage</h2>\n<div class=\"table-wrap\"><table><caption>Milliseconds per query</caption><thead><tr><th scope=\"col\">stage</th><th scope=\"col\" class=\"n\">queries</th><th scope=\"col\" class=\"n\">p50</th><th scope=\"col\" class=\"n\">p95</th><th scope=\"col\" class=\"n\">p99</th><th scope=\"col\" class=\"n\">max</th></tr></thead><tbody>\n",
    );
    for (name, v) in stages {
        s.push_str(&format!(
            "<tr><th scope=\"row\"><code>{}</code></th><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
            escape(name),
            v.count,
            ms(v.p50_ms),
            ms(v.p95_ms),
            ms(v.p99_ms),
            ms(v.max_ms)
        ));
    }
    s.push_str("</tbody></table></div>\n</section>\n");
    s
}
