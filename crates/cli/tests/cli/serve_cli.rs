//! `veredicto serve`: the URL on the first line of stdout, and no address beyond the
//! loopback one without a token.

use crate::common;
use common::*;
use std::io::{BufRead, Read, Write};

fn project(dir: &std::path::Path) {
    std::fs::copy(example("golden.jsonl"), dir.join("golden.jsonl")).unwrap();
    write(dir, "veredicto.toml", "golden = \"golden.jsonl\"\n");
}

#[test]
fn serve_refuses_another_address_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let o = veredicto_in(dir.path(), &["serve", "--host", "0.0.0.0", "--port", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs --token"), "{}", stderr(&o));
}

#[test]
fn serve_prints_its_url_first_and_serves_the_golden_set() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args(["serve", "--port", "0"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{first}");
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "GET /golden HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("q-asuntos-propios"));
}

/// One request with `Connection: close` to `addr`; the whole response.
fn http(addr: &str, method: &str, path: &str, body: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    page
}

#[test]
fn serve_runs_the_projects_exam_from_the_page_and_reviews_the_audit_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "golden.jsonl",
        "corpus.jsonl",
        "policy.toml",
        "run-accept.trec",
    ] {
        std::fs::copy(example(f), dir.path().join(f)).unwrap();
    }
    std::fs::copy(
        workspace().join("examples/grounding/q017.yaml"),
        dir.path().join("q017.yaml"),
    )
    .unwrap();
    write(
        dir.path(),
        "veredicto.toml",
        "golden = \"golden.jsonl\"\ncorpus = \"corpus.jsonl\"\npolicy_file = \"policy.toml\"\nhistory = \"history.db\"\n[source]\nrun = \"run-accept.trec\"\n",
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args(["serve", "--port", "0", "--audit", "q017.yaml"])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let golden = http(&addr, "GET", "/golden", "");
    let key = "name=\"csrf\" value=\"";
    let at = golden.find(key).unwrap() + key.len();
    let csrf = &golden[at..at + 32];
    let started = http(&addr, "POST", "/golden/exam", &format!("csrf={csrf}"));
    assert!(started.starts_with("HTTP/1.1 303"), "{started}");
    assert!(started.contains("location: /golden/exam/1"), "{started}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let done = loop {
        let page = http(&addr, "GET", "/golden/exam/1", "");
        if page.contains("id=\"exam-verdict\"") {
            break page;
        }
        assert!(std::time::Instant::now() < deadline, "{page}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let claims = http(&addr, "GET", "/claims?show=all", "");
    child.kill().unwrap();
    child.wait().unwrap();
    // The run the project's settings describe, recorded in the project's history.
    assert!(done.contains("failing cases:"), "{done}");
    assert!(done.contains("href=\"/runs/"), "{done}");
    let at = done.find("href=\"/runs/").unwrap() + "href=\"/runs/".len();
    let run = &done[at..at + done[at..].find('"').unwrap()];
    let shown = veredicto_in(dir.path(), &["runs", "show", run, "--json"]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains("run-accept.trec"),
        "{}",
        stdout(&shown)
    );
    assert!(
        claims.contains("/claims/C-017-4") && claims.contains("claims with a verdict: 4 / 4"),
        "{claims}"
    );
}

#[test]
fn serve_with_the_current_sources_lists_the_claims_a_source_change_reopened() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    for f in ["q017.yaml", "q017-sources-v5.yaml"] {
        std::fs::copy(
            workspace().join("examples/grounding").join(f),
            dir.path().join(f),
        )
        .unwrap();
    }
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args([
            "serve",
            "--port",
            "0",
            "--audit",
            "q017.yaml",
            "--audit-sources",
            "q017-sources-v5.yaml",
        ])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let claims = http(&addr, "GET", "/claims", "");
    child.kill().unwrap();
    child.wait().unwrap();
    // refunds-v3 changed D-02 p07, which C-017-3 (judged unsupported in the file) cites; what
    // `veredicto audit impact q017.yaml --sources q017-sources-v5.yaml` lists.
    let at = claims
        .find("id=\"reopened\"")
        .expect("the reopened section");
    let section = &claims[at..at + claims[at..].find("</section>").unwrap()];
    assert!(section.contains("/claims/C-017-3"), "{section}");
    assert!(
        section.contains("D-02#p07 refunds-v2 -&gt; refunds-v3: passage text changed"),
        "{section}"
    );
    // Without --audit the flag is refused.
    let o = veredicto_in(
        dir.path(),
        &[
            "serve",
            "--port",
            "0",
            "--audit-sources",
            "q017-sources-v5.yaml",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
