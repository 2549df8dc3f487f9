//! The HTML report in a real browser (issue 4's bar): Debian's `chromium`, headless, opens
//! the report of the bundled example from disk, takes a screenshot and dumps the DOM after
//! the scripts ran. The test checks the screenshot is a real picture, the page text carries
//! the verdict and every case ID, the sorting script ran, and nothing went wrong: no console
//! message at all, no uncaught error (recorded by the page into `data-js-errors`), no
//! blocked load (the page's Content Security Policy forbids the network).
//!
//! Needs `chromium` (run `scripts/install-chromium.sh`; CI does). Without it the test fails
//! rather than passing silently. `CHROMIUM=/path/to/chromium` picks another binary. The
//! report and the screenshot are kept in `target/tmp/html-report/` for a look.

use crate::html_support as support;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::Fixture;

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(p);
    }
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!(
        "chromium not found: the HTML report test needs Debian's `chromium` package; \
         run scripts/install-chromium.sh (CI does), or set CHROMIUM=/path/to/chromium"
    );
}

/// Runs chromium headless on `page` with `extra` flags, killing it after 90 s.
fn run_chromium(page: &Path, profile: &Path, extra: &[String]) -> Output {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1400,2000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        panic!("cannot start chromium ({e}): run scripts/install-chromium.sh (CI does)")
    });
    // Drain the pipes on threads so a chatty browser cannot block on a full pipe.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > Duration::from_secs(90) {
            child.kill().ok();
            panic!("chromium did not finish in 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: t_out.join().expect("stdout thread"),
        stderr: t_err.join().expect("stderr thread"),
    }
}

/// Lines of chromium's log that mean the page misbehaved: any console message (the page
/// logs none), an uncaught error, or a load the Content Security Policy refused.
fn page_problems(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains(":CONSOLE")
                || l.contains("Uncaught")
                || l.contains("Refused to")
                || l.contains("Content Security Policy")
        })
        .collect()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.len() > 24, "PNG too short");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

/// Text content of the dumped DOM (tags dropped, the common entities decoded).
fn dom_text(dom: &str) -> String {
    let mut out = String::with_capacity(dom.len());
    let mut in_tag = false;
    for c in dom.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn check_page(html: &str, name: &str, verdict: &str, case_ids: &[String], screenshot: bool) {
    let keep = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&keep).expect("output dir");
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join(format!("{name}.html"));
    std::fs::write(&page, html).expect("write report");
    std::fs::write(keep.join(format!("{name}.html")), html).expect("keep report");

    // The DOM after the scripts ran.
    let profile = tempfile::tempdir().expect("profile dir");
    let dump = run_chromium(&page, profile.path(), &["--dump-dom".to_owned()]);
    let stderr = String::from_utf8_lossy(&dump.stderr);
    assert!(
        dump.status.success(),
        "chromium --dump-dom failed ({}):\n{stderr}",
        dump.status
    );
    let dom = String::from_utf8(dump.stdout).expect("DOM is UTF-8");
    let problems = page_problems(&stderr);
    assert!(
        problems.is_empty(),
        "console output / errors:\n{}",
        problems.join("\n")
    );
    assert!(
        dom.contains("data-js=\"ready\""),
        "the sorting script did not run; DOM head: {}",
        &dom[..dom.len().min(400)]
    );
    assert!(
        !dom.contains("data-js-errors=\""),
        "uncaught script error recorded by the page: {}",
        dom.split("data-js-error=\"")
            .nth(1)
            .unwrap_or("")
            .split('"')
            .next()
            .unwrap_or("")
    );
    let text = dom_text(&dom);
    assert!(
        dom.contains(&format!("id=\"verdict-word\">{verdict}</div>")),
        "verdict {verdict} not rendered"
    );
    assert!(text.contains(verdict));
    for id in case_ids {
        assert!(text.contains(id.as_str()), "case {id} not in the page text");
    }

    if screenshot {
        let profile = tempfile::tempdir().expect("profile dir");
        let png = dir.path().join(format!("{name}.png"));
        let shot = run_chromium(
            &page,
            profile.path(),
            &[format!("--screenshot={}", png.display())],
        );
        let stderr = String::from_utf8_lossy(&shot.stderr);
        assert!(
            shot.status.success(),
            "chromium --screenshot failed:\n{stderr}"
        );
        let problems = page_problems(&stderr);
        assert!(
            problems.is_empty(),
            "console output / errors:\n{}",
            problems.join("\n")
        );
        let bytes = std::fs::read(&png).expect("screenshot written");
        assert_eq!(png_size(&bytes), (1400, 2000), "screenshot size");
        // A blank page compresses to a few kilobytes; the report is far busier.
        assert!(
            bytes.len() > 50_000,
            "screenshot looks empty ({} bytes)",
            bytes.len()
        );
        std::fs::write(keep.join(format!("{name}.png")), &bytes).expect("keep screenshot");
    }
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let f = Fixture::build();
    let ids: Vec<String> = f
        .current()
        .report
        .cases
        .iter()
        .map(|c| c.id.clone())
        .collect();
    check_page(&f.render(), "rack-stop", "STOP", &ids, true);
}

/// Clicks the recall header of the case table twice from an injected script and records
/// the row order after each click, to check the sorting script in the browser.
const CLICK_RECALL_JS: &str = "<script>(function(){\
var t=document.getElementById('case-table');\
var b=t.tHead.rows[0].cells[4].querySelector('button');\
function order(){return [].map.call(t.tBodies[0].rows,function(r){return r.cells[0].getAttribute('data-v');}).join(' ');}\
b.click();document.documentElement.setAttribute('data-sorted-asc',order());\
b.click();document.documentElement.setAttribute('data-sorted-desc',order());\
})();</script>";

fn attr<'a>(dom: &'a str, name: &str) -> &'a str {
    let key = format!("{name}=\"");
    let start = dom
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in the DOM"))
        + key.len();
    let len = dom[start..].find('"').expect("attribute end");
    &dom[start..start + len]
}

#[test]
fn the_case_table_sorts_in_headless_chromium() {
    let f = Fixture::build();
    let html = f
        .render()
        .replace("</body>", &format!("{CLICK_RECALL_JS}</body>"));
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("sort.html");
    std::fs::write(&page, html).expect("write");
    let profile = tempfile::tempdir().expect("profile dir");
    let dump = run_chromium(&page, profile.path(), &["--dump-dom".to_owned()]);
    let stderr = String::from_utf8_lossy(&dump.stderr);
    assert!(dump.status.success(), "chromium failed:\n{stderr}");
    let problems = page_problems(&stderr);
    assert!(
        problems.is_empty(),
        "console output / errors:\n{}",
        problems.join("\n")
    );
    let dom = String::from_utf8(dump.stdout).expect("UTF-8");
    // Displayed order: failing first; sorting is stable on that order, both ways.
    let report = &f.current().report;
    let mut shown: Vec<(usize, &veredicto_core::exam::CaseResult)> = report
        .cases
        .iter()
        .filter(|c| !c.passed)
        .chain(report.cases.iter().filter(|c| c.passed))
        .enumerate()
        .collect();
    shown.sort_by(|a, b| a.1.recall.total_cmp(&b.1.recall).then(a.0.cmp(&b.0)));
    let asc: Vec<&str> = shown.iter().map(|(_, c)| c.id.as_str()).collect();
    shown.sort_by(|a, b| b.1.recall.total_cmp(&a.1.recall).then(a.0.cmp(&b.0)));
    let desc: Vec<&str> = shown.iter().map(|(_, c)| c.id.as_str()).collect();
    assert_eq!(attr(&dom, "data-sorted-asc"), asc.join(" "));
    assert_eq!(attr(&dom, "data-sorted-desc"), desc.join(" "));
    assert_eq!(asc[0], "q-viaje-internacional", "lowest recall first (50%)");
}

#[test]
fn the_accept_report_renders_in_headless_chromium() {
    let rack = support::Rack::load();
    let history: Vec<_> = rack.history().into_iter().take(2).collect();
    let run = &history[1];
    let html = veredicto_report::html::render(&veredicto_report::html::HtmlInput {
        current: run,
        baseline_comparison: None,
        diagnosis: None,
        history: &history,
    });
    let ids: Vec<String> = run.report.cases.iter().map(|c| c.id.clone()).collect();
    check_page(&html, "rack-accept", "ACCEPT", &ids, true);
}
