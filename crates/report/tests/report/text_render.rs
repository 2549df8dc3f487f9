//! The text renderers (terminal, Markdown) on hostile data: control characters from a case
//! file or a corpus must not reach the terminal, and HTML or Markdown from the data must not
//! come alive in a pull-request comment.

use crate::html_support as support;
use support::{Fixture, Rack};
use veredicto_report::{comparison, human, markdown};

const EVIL: &str = "<img src=https://tracker.example/p.png> [x](javascript:alert(1)) | \u{1b}]0;pwned\u{7}\u{1b}[2J";

fn hostile() -> veredicto_core::history::RecordedRun {
    let rack = Rack::load();
    let mut run = rack.record(5, &rack.stop);
    let c = run
        .report
        .cases
        .iter_mut()
        .find(|c| !c.passed && !c.diagnosis.is_empty())
        .expect("a failing case with a diagnosis");
    c.id = format!("q`{EVIL}");
    c.domain = Some(EVIL.to_owned());
    c.note = Some(EVIL.to_owned());
    c.expected[0].id = EVIL.to_owned();
    c.diagnosis[0].finding = EVIL.to_owned();
    c.diagnosis[0].detail = Some(
        veredicto_core::diagnosis::DiagnosisFinding::DomainMismatch {
            chunk_domain: EVIL.to_owned(),
            case_domain: EVIL.to_owned(),
        },
    );
    c.diagnosis[0].chunk = Some(EVIL.to_owned());
    run.report.run.name = EVIL.to_owned();
    run
}

#[test]
fn control_characters_from_data_do_not_reach_the_terminal() {
    let run = hostile();
    for color in [false, true] {
        let text = human::render(&run.report, color);
        assert!(!text.contains('\u{7}'), "BEL leaked");
        assert!(!text.contains("\u{1b}]"), "OSC leaked");
        assert!(!text.contains("\u{1b}[2J"), "clear-screen leaked");
        assert!(text.contains("\\u{1b}[2J"), "escaped form shown");
    }
    let plain = human::render(&run.report, false);
    assert!(!plain.contains('\u{1b}'));
}

/// `text` without its code spans (whose content Markdown shows literally), as CommonMark
/// matches them: a run of N backticks up to the next run of exactly N.
fn outside_code_spans(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let run_at = |i: usize| b[i..].iter().take_while(|&&c| c == '`').count();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == '\\' && i + 1 < b.len() {
            out.extend(&b[i..i + 2]);
            i += 2;
            continue;
        }
        if b[i] != '`' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let close = loop {
            if j >= b.len() {
                break None;
            }
            if b[j] == '`' {
                let m = run_at(j);
                if m == n {
                    break Some(j + m);
                }
                j += m;
            } else {
                j += 1;
            }
        };
        match close {
            Some(end) => i = end,
            None => {
                out.extend(&b[i..i + n]);
                i += n;
            }
        }
    }
    out
}

#[test]
fn markdown_report_does_not_pass_html_or_links_from_data() {
    let run = hostile();
    let md = markdown::render(&run.report);
    let live = outside_code_spans(&md);
    assert!(!live.contains("<img"), "{md}");
    assert!(!live.contains("](javascript"), "{md}");
    assert!(!md.contains('\u{1b}') && !md.contains('\u{7}'));
    assert!(
        md.contains("&lt;img src=https://tracker.example/p.png&gt;"),
        "{md}"
    );
    // The table keeps its shape: every row of the failing-cases table has 8 cells.
    for line in md
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("q`"))
    {
        let cells = line.replace("\\|", "").matches('|').count();
        assert_eq!(cells, 9, "{line}");
    }
}

#[test]
fn comparison_renderers_escape_data() {
    let mut f = Fixture::build();
    if let Some(first) = f.comparison.newly_failing.first_mut() {
        *first = EVIL.to_owned();
    } else {
        f.comparison.newly_failing.push(EVIL.to_owned());
    }
    let text = comparison::human(&f.comparison);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text}"
    );
    let md = comparison::markdown(&f.comparison);
    assert!(
        !outside_code_spans(&md).contains("<img") && !md.contains('\u{1b}'),
        "{md}"
    );
}
