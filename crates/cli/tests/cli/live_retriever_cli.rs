//! The live-retriever flags through the binary: `--cmd-env` and the minimal environment of
//! a `cmd:` program, `--body-template`, `--id-as-text`, `--max-answer-bytes`.

use crate::common;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

const GOLDEN: &str = "{\"id\": \"q1\", \"query\": \"alpha\", \"expected\": [\"7\"]}\n{\"id\": \"q2\", \"query\": \"beta \\\"quoted\\\"\", \"expected\": [\"9\"]}\n";

fn exam(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let golden = write(dir, "golden.jsonl", GOLDEN);
    Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args([
            "exam",
            "--golden",
            &golden,
            "--no-record",
            "--concurrency",
            "1",
        ])
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .output()
        .expect("run veredicto")
}

#[test]
fn a_cmd_program_gets_the_default_environment_and_cmd_env_only() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("env.txt");
    let script = write(
        dir.path(),
        "search.sh",
        &format!(
            r#"env > {}
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^{{"id":\([0-9]*\),.*/\1/p')
  printf '{{"id": %s, "results": []}}\n' "$id"
done
"#,
            dump.display()
        ),
    );
    let o = exam(
        dir.path(),
        &[
            "--retriever",
            &format!("cmd:sh {script}"),
            "--cmd-env",
            "SEARCH_INDEX",
        ],
        &[
            ("SEARCH_TOKEN", "s3cret"),
            ("SEARCH_INDEX", "prod"),
            ("LC_ALL", "C"),
            ("TZ", "UTC"),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let env = std::fs::read_to_string(&dump).unwrap();
    for wanted in ["SEARCH_INDEX=prod", "LC_ALL=C", "TZ=UTC", "PATH="] {
        assert!(
            env.lines().any(|l| l.starts_with(wanted)),
            "{wanted}: {env}"
        );
    }
    assert!(!env.contains("SEARCH_TOKEN"), "{env}");
    assert!(!env.contains("s3cret"), "{env}");
    assert!(!env.contains("NO_COLOR"), "{env}");
}

#[test]
fn cmd_env_naming_an_unset_variable_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = exam(
        dir.path(),
        &[
            "--retriever",
            "cmd:true",
            "--cmd-env",
            "VEREDICTO_TEST_UNSET_42",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "--cmd-env VEREDICTO_TEST_UNSET_42: environment variable `VEREDICTO_TEST_UNSET_42` is not set"
        ),
        "{}",
        stderr(&o)
    );
}

/// A search service answering in Elasticsearch's shape with numeric `_id`s (7 for `alpha`,
/// 9 otherwise); it records the request bodies.
fn numeric_service() -> (String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let id = if req.to_string().contains("alpha") {
                7
            } else {
                9
            };
            log.lock().unwrap().push(req);
            let text = format!(r#"{{"hits": {{"hits": [{{"_id": {id}, "_score": 3.5}}]}}}}"#);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (url, seen)
}

#[test]
fn an_es_search_through_a_body_template_with_numeric_ids_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let (url, seen) = numeric_service();
    let template = write(
        dir.path(),
        "search-body.json",
        "{\"size\": {{k}}, \"query\": {\"match\": {\"text\": {{query}}}}, \"_source\": false}\n",
    );
    let pointers = [
        "--results-pointer",
        "/hits/hits",
        "--id-pointer",
        "/_id",
        "--score-pointer",
        "/_score",
    ];
    let mut args = vec!["--retriever", &url, "--body-template", &template, "--json"];
    args.extend(pointers);
    // Without --id-as-text a numeric `_id` is an error that names the flag.
    let o = exam(dir.path(), &args, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("`/_id` is not a string: 7 (numeric IDs are read as text with --id-as-text)"),
        "{}",
        stderr(&o)
    );
    args.push("--id-as-text");
    let o = exam(dir.path(), &args, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["cases"][0]["expected"][0]["rank"], 1);
    assert_eq!(report["cases"][1]["expected"][0]["rank"], 1);
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen[seen.len() - 1],
        serde_json::json!({"size": 100, "query": {"match": {"text": "beta \"quoted\""}}, "_source": false})
    );
}

#[test]
fn a_bad_body_template_is_exit_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let template = write(
        dir.path(),
        "body.json",
        "{\n  \"size\": {{k}},\n  \"query\": {{qurey}}\n}\n",
    );
    let o = exam(
        dir.path(),
        &[
            "--retriever",
            "http://127.0.0.1:9/search",
            "--body-template",
            &template,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{template}:3: unknown placeholder `{{{{qurey}}}}`"
        )),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn max_answer_bytes_takes_units_and_refuses_nonsense() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["12", "64MB", "1.5MiB", "5GiB"] {
        let o = exam(
            dir.path(),
            &["--retriever", "cmd:true", "--max-answer-bytes", bad],
            &[],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(
            stderr(&o).contains("expected a size between 1KiB and 4GiB"),
            "{bad}: {}",
            stderr(&o)
        );
    }
}

/// A `cmd:` retriever that takes `secs` per answer (and finds nothing).
fn slow_retriever(dir: &std::path::Path, secs: &str) -> String {
    let script = write(
        dir,
        "slow.sh",
        &format!(
            r#"while IFS= read -r line; do
  sleep {secs}
  id=$(printf '%s' "$line" | sed -n 's/^{{"id":\([0-9]*\),.*/\1/p')
  printf '{{"id": %s, "results": []}}\n' "$id"
done
"#
        ),
    );
    format!("cmd:sh {script}")
}

#[test]
fn a_live_exam_off_a_terminal_prints_a_progress_line_every_interval() {
    let dir = tempfile::tempdir().unwrap();
    let uri = slow_retriever(dir.path(), "0.6");
    // The interval shortened for the test (the documented one is 5 s): two cases of 0.6 s
    // each leave time for several lines while no case ends.
    let o = exam(
        dir.path(),
        &["--retriever", &uri],
        &[("VEREDICTO_PROGRESS_EVERY_MS", "100")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("cases examined"))
        .collect();
    assert!(lines.len() >= 3, "{err}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("veredicto: ") && l.contains("/2 cases examined (")),
        "{err}"
    );
}

#[test]
fn quiet_silences_the_progress_lines() {
    let dir = tempfile::tempdir().unwrap();
    let uri = slow_retriever(dir.path(), "0.3");
    let golden = write(dir.path(), "golden.jsonl", GOLDEN);
    let o = Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args(["-q", "exam", "--golden", &golden, "--no-record"])
        .args(["--concurrency", "1", "--retriever", &uri])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("VEREDICTO_PROGRESS_EVERY_MS", "50")
        .output()
        .expect("run veredicto");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!stderr(&o).contains("cases examined"), "{}", stderr(&o));
}
