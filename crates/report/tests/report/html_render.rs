//! The HTML report on the bundled example: content, escaping, determinism, no network
//! references, balanced markup. (The headless-browser check is `html_chromium.rs`.)

use crate::html_support as support;
use support::{Fixture, Rack};
use veredicto_report::html::{escape, render, HtmlInput};

fn minimal(run: &veredicto_core::history::RecordedRun) -> String {
    render(&HtmlInput {
        current: run,
        baseline_comparison: None,
        diagnosis: None,
        history: &[],
    })
}

#[test]
fn shows_the_verdict_and_every_case() {
    let f = Fixture::build();
    let html = f.render();
    assert!(
        html.contains("id=\"verdict-word\">STOP</div>"),
        "verdict word"
    );
    assert!(html.contains("<title>veredicto: STOP"));
    for c in &f.current().report.cases {
        assert!(
            html.contains(&format!("<code>{}</code>", escape(&c.id))),
            "case {} missing",
            c.id
        );
    }
    // The reasons, in words.
    assert!(html.contains("mean_quality"));
    assert!(html.contains("The mean Quality Score is <strong>83.3</strong>"));
    assert!(html.contains("gold_case_failed"));
    assert!(html.contains("too_many_failures"));
    // Seed 000's first example: the IRPF table buried at position 15.
    assert!(html.contains("silver_finanzas_123 <span class=\"r\">#15</span>"));
    // The Friday story: the travel table displaced by the new batch.
    assert!(html.contains("<code>silver_viajes_014</code>"));
    assert!(html.contains("2025-11-14-viajes"));
    // Charts, calibration, comparison, trends, latency.
    for needle in [
        "id=\"recall-chart-t\"",
        "id=\"noise-chart-t\"",
        "Noise calibration",
        "Is the change more than chance?",
        "id=\"trend-qs-t\"",
        "id=\"trend-recall-t\"",
        "id=\"trend-mrr-t\"",
        "<code>query_embedding</code>",
        "REGRESSION",
        "Newly failing",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    // Per-domain trend lines.
    for d in ["fiscal", "laboral", "nominas", "viajes"] {
        assert!(html.contains(&format!("<title>{d}</title>")), "domain {d}");
    }
}

#[test]
fn the_accept_run_says_accept() {
    let rack = Rack::load();
    let run = rack.record(0, &rack.accept);
    let html = minimal(&run);
    assert!(html.contains("id=\"verdict-word\">ACCEPT</div>"));
    assert!(!html.contains(">STOP<"));
    assert!(html.contains("Trends need at least two recorded runs"));
    assert!(html.contains("Not computed for this report"));
    assert!(!html.contains("id=\"comparison\""));
}

#[test]
fn output_is_deterministic() {
    let a = Fixture::build().render();
    let b = Fixture::build().render();
    assert_eq!(a, b);
    let f = Fixture::build();
    assert_eq!(f.render(), f.render());
}

#[test]
fn references_nothing_on_the_network() {
    let html = Fixture::build().render();
    let lower = html.to_lowercase();
    assert!(!lower.contains("http://"), "http:// reference");
    assert!(!lower.contains("https://"), "https:// reference");
    assert!(!lower.contains("src="), "no src= attribute at all");
    assert!(!lower.contains("@import"));
    assert!(!lower.contains("<link rel=\"stylesheet\""));
    for (i, _) in lower.match_indices("href=\"") {
        let rest = &lower[i + 6..];
        assert!(
            rest.starts_with('#') || rest.starts_with("data:"),
            "external href: {}",
            &rest[..rest.len().min(60)]
        );
    }
    for (i, _) in lower.match_indices("url(") {
        assert!(lower[i + 4..].starts_with('#'), "external url()");
    }
    assert!(lower.contains("content-security-policy"));
    let markup = html.replace("isNaN", "");
    assert!(
        !markup.contains("NaN") && !markup.contains("inf\""),
        "non-finite coordinate"
    );
    assert!(lower.contains("default-src 'none'"));
}

#[test]
fn escapes_every_user_string() {
    let rack = Rack::load();
    let mut run = rack.record(5, &rack.stop);
    let evil = "<script>alert(\"x\")</script> & 'días' <b>";
    let c = &mut run.report.cases[0];
    c.id = format!("q-{evil}");
    c.query = format!("¿{evil}?");
    c.domain = Some(evil.to_owned());
    c.note = Some(evil.to_owned());
    c.expected[0].id = evil.to_owned();
    c.diagnosis[0].finding = evil.to_owned();
    c.diagnosis[0].detail = Some(
        veredicto_core::diagnosis::DiagnosisFinding::DomainMismatch {
            chunk_domain: evil.to_owned(),
            case_domain: evil.to_owned(),
        },
    );
    run.meta.label = Some(evil.to_owned());
    run.meta.id = evil.to_owned();
    run.meta.git_revision = Some(evil.to_owned());
    run.meta.config.embedding_model = Some(evil.to_owned());
    run.report.run.name = evil.to_owned();
    let history = vec![rack.record(0, &rack.accept), run.clone()];
    let html = render(&HtmlInput {
        current: &run,
        baseline_comparison: None,
        diagnosis: None,
        history: &history,
    });
    assert!(!html.contains("<script>alert"), "raw markup leaked");
    assert!(!html.contains("<b>"), "raw markup leaked");
    assert!(html.contains(
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;días&#39; &lt;b&gt;"
    ));
    // Only the page's own two scripts.
    assert_eq!(html.matches("<script>").count(), 2);
    assert_balanced(&html);
}

#[test]
fn markup_is_balanced() {
    assert_balanced(&Fixture::build().render());
    let rack = Rack::load();
    assert_balanced(&minimal(&rack.record(0, &rack.accept)));
}

/// Checks that every non-void element is closed in order (a small structural check; the
/// browser test is the real one).
fn assert_balanced(html: &str) {
    const VOID: [&str; 6] = ["meta", "link", "br", "input", "img", "hr"];
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        if rest.starts_with("!DOCTYPE") || rest.starts_with("!--") {
            continue;
        }
        let end = rest.find('>').expect("unclosed tag");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        if closing {
            let open = stack.pop().unwrap_or_else(|| panic!("stray </{name}>"));
            assert_eq!(open, name, "</{name}> closes <{open}>");
        } else if !tag.ends_with('/') && !VOID.contains(&name.as_str()) {
            if name == "script" || name == "style" {
                let close = format!("</{name}>");
                let j = rest.find(&close).expect("unclosed raw text element");
                rest = &rest[j + close.len()..];
            } else {
                stack.push(name);
            }
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

#[test]
fn many_domains_get_a_sparkline_row_each() {
    let rack = Rack::load();
    let mut history = rack.history();
    for run in &mut history {
        for (i, c) in run.report.cases.iter_mut().enumerate() {
            c.domain = Some(format!("dominio-{}", i % 8));
        }
    }
    let current = history.last().expect("history").clone();
    let html = render(&HtmlInput {
        current: &current,
        baseline_comparison: None,
        diagnosis: None,
        history: &history,
    });
    // Eight domains: the overall charts carry only the overall line, each domain a row.
    assert!(!html.contains("<div class=\"legend\">"));
    assert_eq!(html.matches("<svg class=\"spark\"").count(), 8 * 3);
    for i in 0..8 {
        assert!(html.contains(&format!("<code>dominio-{i}</code>")));
    }
    assert_balanced(&html);
}

#[test]
fn trends_are_grouped_by_configuration_when_the_history_holds_several() {
    let rack = Rack::load();
    let mut history = rack.history();
    // One history, two configurations examined on alternate nights (a matrix).
    for (i, run) in history.iter_mut().enumerate() {
        if i % 2 == 1 {
            run.meta.config.top_k = 5;
            run.meta.config.rerank = Some("models/<cross>".into());
        }
    }
    let current = history.last().expect("history").clone();
    let html = render(&HtmlInput {
        current: &current,
        baseline_comparison: None,
        diagnosis: None,
        history: &history,
    });
    assert!(html.contains("id=\"trends-by-configuration\""), "no table");
    assert!(html.contains("rerank models/&lt;cross&gt;"));
    let table = &html[html.find("trends-by-configuration").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert_eq!(table.matches("<tr><th scope=\"row\">").count(), 2);
    assert_balanced(&html);

    // A history of one configuration draws no such table.
    let same = rack.history();
    let html = render(&HtmlInput {
        current: same.last().expect("history"),
        baseline_comparison: None,
        diagnosis: None,
        history: &same,
    });
    assert!(!html.contains("trends-by-configuration"));
}
