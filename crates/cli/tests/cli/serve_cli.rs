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
