//! The GitHub Action's scripts (scripts/action/veredicto_action.py), run locally: a fake `gh`
//! that logs its calls and answers like GitHub's REST API, and real git repositories on disk
//! as the remote (no GitHub needed).

use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    workspace().join("scripts/action/veredicto_action.py")
}

fn action(dir: &Path, args: &[&str], path_prefix: Option<&Path>) -> Output {
    let mut c = Command::new("python3");
    c.arg(script()).args(args).current_dir(dir);
    if let Some(p) = path_prefix {
        let path = std::env::var("PATH").unwrap_or_default();
        c.env("PATH", format!("{}:{path}", p.display()));
    }
    c.output().expect("python3")
}

fn git(dir: &Path, args: &[&str]) -> Output {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    o
}

#[test]
fn the_comment_is_capped_under_githubs_limit_with_the_report_link() {
    let dir = tempfile::tempdir().unwrap();
    let long: String = (0..20_000)
        .map(|i| format!("| case-{i} | recall 50% | noise 3/3 |\n"))
        .collect();
    assert!(long.len() > 200_000);
    std::fs::write(dir.path().join("r.md"), &long).unwrap();
    let o = action(
        dir.path(),
        &[
            "cap",
            "--in",
            "r.md",
            "--out",
            "c.md",
            "--link",
            "https://example.invalid/a/1",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let body = std::fs::read_to_string(dir.path().join("c.md")).unwrap();
    assert!(body.chars().count() < 65_536, "{}", body.len());
    assert!(body.starts_with("<!-- veredicto-exam-comment -->\n| case-0 |"));
    assert!(body.contains("characters cut to fit a comment"));
    assert!(body.trim_end().ends_with("(https://example.invalid/a/1)"));
    // Cut at a line end: no half row.
    let before_note = body.split("\n\n… ").next().unwrap();
    assert!(
        before_note.ends_with("noise 3/3 |"),
        "{}",
        &before_note[before_note.len() - 80..]
    );

    std::fs::write(dir.path().join("s.md"), "## veredicto: ACCEPT\n").unwrap();
    let o = action(dir.path(), &["cap", "--in", "s.md", "--out", "d.md"], None);
    assert!(o.status.success());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("d.md")).unwrap(),
        "<!-- veredicto-exam-comment -->\n## veredicto: ACCEPT\n\n"
    );
}

#[test]
fn failing_cases_are_annotated_on_their_golden_lines() {
    let dir = tempfile::tempdir().unwrap();
    let golden = example("golden.jsonl");
    let o = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--run",
            example("run-stop.trec").to_str().unwrap(),
            "--corpus",
            example("corpus.jsonl").to_str().unwrap(),
            "--policy",
            example("policy.toml").to_str().unwrap(),
            "--no-record",
            "--as-of",
            "2025-11-14",
            "--format",
            "json",
            "--out",
            "exam.json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let exam: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("exam.json")).unwrap()).unwrap();
    let failing: Vec<String> = exam["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!failing.is_empty());
    let o = action(
        dir.path(),
        &[
            "annotate",
            "--exam",
            "exam.json",
            "--golden",
            golden.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), failing.len(), "{lines:?}");
    let text = std::fs::read_to_string(&golden).unwrap();
    for (id, line) in failing.iter().zip(&lines) {
        let n = text
            .lines()
            .position(|l| {
                l.contains(&format!("\"id\": \"{id}\"")) || l.contains(&format!("\"id\":\"{id}\""))
            })
            .unwrap()
            + 1;
        let file = golden
            .to_str()
            .unwrap()
            .replace(':', "%3A")
            .replace(',', "%2C");
        assert!(
            line.starts_with(&format!(
                "::error file={file},line={n},title=veredicto%3A case {id} fails::"
            )),
            "{line}"
        );
    }
}

/// A fake `gh`: logs every call to $GH_LOG and answers `api --paginate …/comments` with the
/// JSON in $GH_COMMENTS (pages as GitHub sends them).
fn fake_gh(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gh = bin.join("gh");
    std::fs::write(
        &gh,
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$GH_LOG\"\ncase \"$*\" in\n  *--paginate*) cat \"$GH_COMMENTS\" ;;\n  *) echo '{}' ;;\nesac\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

#[test]
fn one_sticky_comment_is_posted_then_updated() {
    let dir = tempfile::tempdir().unwrap();
    let bin = fake_gh(dir.path());
    let log = dir.path().join("gh.log");
    let comments = dir.path().join("comments.json");
    std::fs::write(
        dir.path().join("c.md"),
        "<!-- veredicto-exam-comment -->\nhi\n",
    )
    .unwrap();
    let run = || {
        let mut c = Command::new("python3");
        c.arg(script())
            .args(["comment", "--repo", "o/r", "--pr", "7", "--body", "c.md"])
            .current_dir(dir.path())
            .env("GH_LOG", &log)
            .env("GH_COMMENTS", &comments)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            );
        c.output().unwrap()
    };
    // No comment of ours yet (someone else's comment on page one, an empty page two).
    std::fs::write(&comments, r#"[{"id": 1, "body": "LGTM"}][]"#).unwrap();
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.contains("api -X POST repos/o/r/issues/7/comments -F body=@c.md"),
        "{calls}"
    );
    // Ours is there now: updated in place, never a second one.
    std::fs::write(
        &comments,
        r#"[{"id": 1, "body": "LGTM"}][{"id": 42, "body": "<!-- veredicto-exam-comment -->\nold"}]"#,
    )
    .unwrap();
    std::fs::remove_file(&log).unwrap();
    let o = run();
    assert!(o.status.success(), "{}", stderr(&o));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.contains("api -X PATCH repos/o/r/issues/comments/42 -F body=@c.md"),
        "{calls}"
    );
    assert!(!calls.contains("POST"), "{calls}");
}

#[test]
fn the_gate_fails_the_job_on_stop() {
    let dir = tempfile::tempdir().unwrap();
    for (code, want) in [("0", 0), ("1", 1), ("2", 2)] {
        let o = action(dir.path(), &["gate", "--code", code], None);
        assert_eq!(o.status.code(), Some(want), "{code}");
    }
    let o = action(dir.path(), &["gate", "--code", "1"], None);
    assert!(stdout(&o).starts_with("::error::veredicto: stop"));
}

fn runs_in(history: &Path) -> usize {
    let o = veredicto(&[
        "runs",
        "list",
        "--json",
        "--history",
        history.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array().unwrap().len()
}

fn exam_into(history: &Path, run: &str) {
    let o = veredicto(&[
        "exam",
        "--golden",
        example("golden.jsonl").to_str().unwrap(),
        "--run",
        example(run).to_str().unwrap(),
        "--history",
        history.to_str().unwrap(),
        "--as-of",
        "2025-11-14",
    ]);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{}", stderr(&o));
}

/// The history lives on a branch of the repository (no 7-day artifact expiry); two
/// workflow runs that push at once both keep their run.
#[test]
fn the_history_branch_keeps_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    git(
        dir.path(),
        &["init", "--quiet", "--bare", remote.to_str().unwrap()],
    );
    let clone = |name: &str| {
        let p = dir.path().join(name);
        git(
            dir.path(),
            &[
                "clone",
                "--quiet",
                remote.to_str().unwrap(),
                p.to_str().unwrap(),
            ],
        );
        p
    };
    let a = clone("a");
    let b = clone("b");
    let bin = env!("CARGO_BIN_EXE_veredicto");
    let pull = |repo: &Path| {
        let h = repo.join("h/history.db");
        let o = action(repo, &["history-pull", "--dest", h.to_str().unwrap()], None);
        assert!(o.status.success(), "{}", stderr(&o));
        h
    };
    let push = |repo: &Path, h: &Path| {
        let o = action(
            repo,
            &[
                "history-push",
                "--src",
                h.to_str().unwrap(),
                "--veredicto",
                bin,
            ],
            None,
        );
        assert!(o.status.success(), "{} {}", stdout(&o), stderr(&o));
        o
    };

    // First workflow run: no branch yet, a new history, kept on the branch.
    let ha = pull(&a);
    assert!(!ha.exists());
    exam_into(&ha, "run-accept.trec");
    push(&a, &ha);
    let files = git(
        &remote,
        &["ls-tree", "--name-only", "-r", "veredicto-history"],
    );
    assert_eq!(stdout(&files), "history.db\n");
    assert_eq!(
        stdout(&git(&a, &["status", "--porcelain", "--untracked-files=no"])),
        "",
        "the work tree is not touched"
    );

    // Two later runs start from that history; both push, B after A.
    let ha = pull(&a);
    let hb = pull(&b);
    assert_eq!(runs_in(&hb), 1);
    exam_into(&ha, "run-stop.trec");
    exam_into(&hb, "run-accept.trec");
    push(&a, &ha);
    let o = push(&b, &hb);
    assert!(
        stdout(&o).contains("moved since the pull"),
        "{}",
        stdout(&o)
    );

    // A third run sees all three runs.
    let c = clone("c");
    let hc = pull(&c);
    assert_eq!(runs_in(&hc), 3);
}

/// action.yml is a valid composite action: every `run` step names its shell (composite
/// actions require it), every script call names a subcommand the script has.
#[test]
fn action_yml_is_a_composite_action_whose_steps_call_the_tested_script() {
    let text = std::fs::read_to_string(workspace().join("action.yml")).unwrap();
    let v: serde_json::Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(v["runs"]["using"], "composite");
    let steps = v["runs"]["steps"].as_array().unwrap();
    let help = stdout(&action(&workspace(), &["--help"], None));
    for s in steps {
        if let Some(run) = s["run"].as_str() {
            assert_eq!(s["shell"], "bash", "{s}");
            let words: Vec<&str> = run.split_whitespace().collect();
            for w in words.windows(2) {
                if w[0].ends_with("veredicto_action.py\"") && w[0].starts_with('"')
                    || w[0] == "\"$script\""
                {
                    assert!(help.contains(w[1]), "{} not in {help}", w[1]);
                }
            }
        } else {
            assert!(s["uses"].as_str().unwrap().contains("@v"), "{s}");
        }
    }
    let example =
        std::fs::read_to_string(workspace().join("docs/github-actions-example.yml")).unwrap();
    let _: serde_json::Value = serde_norway::from_str(&example).unwrap();
    assert!(example.contains("uses: your-org/veredicto@"));
}
