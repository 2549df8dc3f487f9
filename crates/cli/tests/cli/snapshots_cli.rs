//! Snapshot tests (insta) of what users read: the human, Markdown, JUnit and JSON outputs of
//! `exam`, `compare` and `runs`, on the rack example. Run IDs, times, latencies and
//! temporary paths are redacted; everything else must stay byte-identical (review changes
//! with `cargo insta review`, or `INSTA_UPDATE=always` and `git diff`).

use crate::common;
use common::*;
use std::path::Path;

/// Filters that replace what differs between runs.
fn redactions(tmp: &Path) -> Vec<(String, String)> {
    vec![
        (regex_escape(&tmp.display().to_string()), "[TMP]".to_owned()),
        (
            regex_escape(&workspace().display().to_string()),
            "[REPO]".to_owned(),
        ),
        // ULID run IDs.
        (
            r"\b[0-9A-HJKMNP-TV-Z]{26}\b".to_owned(),
            "[RUN-ID]".to_owned(),
        ),
        // RFC 3339 times.
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})".to_owned(),
            "[TIME]".to_owned(),
        ),
        (r"(?m)^latency .*\n".to_owned(), String::new()),
        (
            r"tool \d+\.\d+\.\d+".to_owned(),
            "tool [VERSION]".to_owned(),
        ),
        (
            r"git [0-9a-f]{40}(-dirty)?".to_owned(),
            "git [REV]".to_owned(),
        ),
        (
            r#""git_revision": "[0-9a-f]{40}(-dirty)?""#.to_owned(),
            r#""git_revision": "[REV]""#.to_owned(),
        ),
        (
            r#""tool_version": "[^"]*""#.to_owned(),
            r#""tool_version": "[VERSION]""#.to_owned(),
        ),
        (
            r#""(p50|p95|p99|max)_ms": [0-9.e-]+"#.to_owned(),
            r#""$1_ms": "[MS]""#.to_owned(),
        ),
    ]
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if "\\.+*?()|[]{}^$#&-~".contains(c) {
                vec!['\\', c]
            } else {
                vec![c]
            }
        })
        .collect()
}

fn snapshot(tmp: &Path, name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    for (re, with) in redactions(tmp) {
        settings.add_filter(&re, with);
    }
    settings.bind(|| insta::assert_snapshot!(name, text));
}

fn exam(dir: &Path, run: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "exam".to_owned(),
        "--golden".into(),
        example("golden.jsonl").display().to_string(),
        "--run".into(),
        example(run).display().to_string(),
        "--corpus".into(),
        example("corpus.jsonl").display().to_string(),
        "--policy".into(),
        example("policy.toml").display().to_string(),
        "--notes".into(),
        example("notes.jsonl").display().to_string(),
        "--as-of".into(),
        "2025-11-14".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    veredicto_in(dir, &refs)
}

#[test]
fn exam_compare_and_runs_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The exam in each format (not recorded), on the run that stops.
    for (format, name) in [
        ("human", "exam_human"),
        ("markdown", "exam_markdown"),
        ("junit", "exam_junit"),
        ("json", "exam_json"),
    ] {
        let o = exam(dir, "run-stop.trec", &["--no-record", "--format", format]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        snapshot(dir, name, &stdout(&o));
    }
    // Recorded: accept, then stop compared with it (a regression).
    let o = exam(dir, "run-accept.trec", &["--label", "v1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = exam(
        dir,
        "run-stop.trec",
        &["--label", "v2", "--compare", "--format", "junit"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    snapshot(dir, "exam_compare_junit", &stdout(&o));

    for (format, name) in [
        ("human", "compare_human"),
        ("markdown", "compare_markdown"),
        ("junit", "compare_junit"),
        ("json", "compare_json"),
    ] {
        let o = veredicto_in(dir, &["compare", "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        snapshot(dir, name, &stdout(&o));
    }
    let o = veredicto_in(
        dir,
        &["compare", "--fail-on-regression", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(1), "a regression: exit 1");

    for (args, name) in [
        (&["runs", "list"][..], "runs_list_human"),
        (&["runs", "list", "--json"], "runs_list_json"),
        (&["runs", "show"], "runs_show_human"),
        (
            &["runs", "show", "--format", "markdown"],
            "runs_show_markdown",
        ),
        (&["runs", "show", "--format", "junit"], "runs_show_junit"),
        (&["runs", "show", "--json"], "runs_show_json"),
    ] {
        let o = veredicto_in(dir, args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        snapshot(dir, name, &stdout(&o));
    }
    let o = veredicto_in(dir, &["report", "--format", "junit"]);
    snapshot(dir, "report_junit", &stdout(&o));
}
