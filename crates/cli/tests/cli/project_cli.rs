//! The project file (`veredicto init`, discovery from subfolders), the printer's conventions
//! (formats, colours, closed pipes, completions) and argument validation.

use crate::common;
use common::*;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// The rack example copied into `dir` (golden set, runs, corpus, policy, notes).
fn rack_project(dir: &Path) {
    for f in [
        "golden.jsonl",
        "run-accept.trec",
        "run-stop.trec",
        "corpus.jsonl",
        "policy.toml",
        "notes.jsonl",
    ] {
        std::fs::copy(example(f), dir.join(f)).unwrap();
    }
}

#[test]
fn init_writes_a_project_file_and_refuses_to_overwrite_it() {
    let dir = tempfile::tempdir().unwrap();
    rack_project(dir.path());
    let o = veredicto_in(dir.path(), &["init", "--run", "run-accept.trec"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("wrote ./veredicto.toml"), "{text}");
    assert!(text.contains("veredicto exam"), "{text}");
    let toml = std::fs::read_to_string(dir.path().join("veredicto.toml")).unwrap();
    assert!(toml.contains("run = \"run-accept.trec\""), "{toml}");
    assert!(
        toml.contains("[policy]") && toml.contains("top_k = 10"),
        "{toml}"
    );

    let again = veredicto_in(dir.path(), &["init"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("already exists (--force overwrites it)"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("veredicto.toml")).unwrap(),
        toml,
        "refused, and left as it was"
    );
    let forced = veredicto_in(dir.path(), &["init", "--force", "--json"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    let v: serde_json::Value = serde_json::from_slice(&forced.stdout).unwrap();
    assert_eq!(v["source"]["kind"], "index");
    assert!(v["next"][0]
        .as_str()
        .unwrap()
        .starts_with("veredicto ingest"));
}

#[test]
fn init_keeps_credentials_out_of_the_project_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = veredicto_in(
        dir.path(),
        &["init", "--history", "postgres://u:secret@127.0.0.1/db"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!stderr(&o).contains("secret"), "{}", stderr(&o));
    assert!(!dir.path().join("veredicto.toml").exists());
}

/// Regression: `init --retriever postgres://user@host/db` was refused as "carries
/// credentials" (a user name is not one), and the message removed the offending part instead
/// of showing it masked.
#[test]
fn init_takes_a_user_name_and_shows_a_password_masked_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let o = veredicto_in(
        dir.path(),
        &[
            "init",
            "--retriever",
            "postgres://reader@127.0.0.1/rag?table=chunks",
            "--history",
            "postgres://ci@127.0.0.1/veredicto",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let toml = std::fs::read_to_string(dir.path().join("veredicto.toml")).unwrap();
    assert!(
        toml.contains("retriever = \"postgres://reader@127.0.0.1/rag?table=chunks\""),
        "{toml}"
    );
    assert!(
        toml.contains("history = \"postgres://ci@127.0.0.1/veredicto\""),
        "{toml}"
    );
    let bad = tempfile::tempdir().unwrap();
    for (flag, uri, shown) in [
        (
            "--retriever",
            "postgres://reader:hunter2@h/rag?table=t",
            "postgres://reader:***@h/rag?table=t",
        ),
        (
            "--retriever",
            "https://h/search?api_key=hunter2",
            "https://h/search?api_key=***",
        ),
        ("--retriever", "https://hunter2@h/s", "https://***@h/s"),
        (
            "--history",
            "postgres://ci:hunter2@h/veredicto",
            "postgres://ci:***@h/veredicto",
        ),
    ] {
        let o = veredicto_in(bad.path(), &["init", flag, uri]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{uri}: {err}");
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains(&format!("({shown})")), "{uri}: {err}");
        assert!(!bad.path().join("veredicto.toml").exists());
    }
}

/// Regression: `init` for a live retriever wrote `corpus = "corpus.jsonl"` although no
/// such file existed (every later command then looked for it).
#[test]
fn init_for_a_live_retriever_names_a_corpus_only_when_there_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let o = veredicto_in(
        dir.path(),
        &["init", "--retriever", "http://127.0.0.1:9/search"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let toml = std::fs::read_to_string(dir.path().join("veredicto.toml")).unwrap();
    assert!(
        !toml.lines().any(|l| l.starts_with("corpus")),
        "no corpus key: {toml}"
    );
    assert!(toml.contains("# corpus = \"corpus.jsonl\""), "{toml}");
    assert!(!stdout(&o).contains("corpus.jsonl"), "{}", stdout(&o));
    // With the file there, or named, it is written.
    std::fs::write(dir.path().join("corpus.jsonl"), "").unwrap();
    let o = veredicto_in(
        dir.path(),
        &[
            "init",
            "--force",
            "--retriever",
            "http://127.0.0.1:9/search",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let toml = std::fs::read_to_string(dir.path().join("veredicto.toml")).unwrap();
    assert!(toml.contains("\ncorpus = \"corpus.jsonl\"\n"), "{toml}");
    let o = veredicto_in(
        dir.path(),
        &["init", "--force", "--run", "r.trec", "--corpus", "kb.jsonl"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let toml = std::fs::read_to_string(dir.path().join("veredicto.toml")).unwrap();
    assert!(toml.contains("\ncorpus = \"kb.jsonl\"\n"), "{toml}");
    assert!(
        stdout(&o).contains("kb.jsonl does not exist yet"),
        "{}",
        stdout(&o)
    );
    // An index needs one to ingest: named even before it exists.
    let fresh = tempfile::tempdir().unwrap();
    let o = veredicto_in(fresh.path(), &["init"]);
    let toml = std::fs::read_to_string(fresh.path().join("veredicto.toml")).unwrap();
    assert!(toml.contains("\ncorpus = \"corpus.jsonl\"\n"), "{toml}");
    assert!(
        stdout(&o).contains("corpus.jsonl does not exist yet"),
        "{}",
        stdout(&o)
    );
}

/// Regression: `exam --compare` run from a subfolder started a new history there and
/// reported "no baseline"; the history now resolves against veredicto.toml's folder.
#[test]
fn exam_compare_from_a_subfolder_finds_the_project_history_and_its_baseline() {
    let dir = tempfile::tempdir().unwrap();
    rack_project(dir.path());
    std::fs::write(
        dir.path().join("veredicto.toml"),
        "golden = \"golden.jsonl\"\n",
    )
    .unwrap();
    let sub = dir.path().join("docs/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let exam = |cwd: &Path, run: &str| {
        let golden = dir.path().join("golden.jsonl");
        let run = dir.path().join(run);
        let policy = dir.path().join("policy.toml");
        veredicto_in(
            cwd,
            &[
                "exam",
                "--golden",
                golden.to_str().unwrap(),
                "--run",
                run.to_str().unwrap(),
                "--policy",
                policy.to_str().unwrap(),
                "--as-of",
                "2025-11-14",
                "--compare",
            ],
        )
    };
    let first = exam(dir.path(), "run-accept.trec");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let second = exam(&sub, "run-accept.trec");
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let err = stderr(&second);
    assert!(!err.contains("no baseline"), "{err}");
    // The project's history, named as the user would type it from the subfolder.
    assert!(err.contains("in ../../.veredicto/history.db"), "{err}");
    assert!(
        stdout(&second).contains("comparison with"),
        "{}",
        stdout(&second)
    );
    assert!(
        !sub.join(".veredicto").exists(),
        "no second history in the subfolder"
    );
    let runs = veredicto_in(&sub, &["runs", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
}

#[test]
fn environment_overrides_the_project_file_and_flags_override_both() {
    let dir = tempfile::tempdir().unwrap();
    rack_project(dir.path());
    std::fs::write(
        dir.path().join("veredicto.toml"),
        "history = \"from-file.db\"\n",
    )
    .unwrap();
    let list = |extra: &[&str], env: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_veredicto"));
        c.args(["runs", "list", "--verbose"]).args(extra);
        c.current_dir(dir.path()).env("NO_COLOR", "1");
        if let Some(e) = env {
            c.env("VEREDICTO_HISTORY", e);
        }
        c.output().unwrap()
    };
    let o = list(&[], None);
    assert!(stderr(&o).contains("from-file.db"), "{}", stderr(&o));
    assert!(stderr(&o).contains("project file"), "{}", stderr(&o));
    let o = list(&[], Some("from-env.db"));
    assert!(stderr(&o).contains("from-env.db"), "{}", stderr(&o));
    let o = list(&["--history", "from-flag.db"], Some("from-env.db"));
    assert!(stderr(&o).contains("from-flag.db"), "{}", stderr(&o));
}

#[test]
fn a_bad_project_file_is_one_line_with_file_line_and_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("veredicto.toml"),
        "golden = \"g.jsonl\"\n\n[policy]\ntop_k = 5\nnoise_celing = 0.5\n",
    )
    .unwrap();
    let o = veredicto_in(dir.path(), &["runs", "list"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("veredicto.toml:5: field `policy.noise_celing`"),
        "{err}"
    );
    assert!(err.contains("did you mean `noise_ceiling`?"), "{err}");
}

#[test]
fn baseline_takes_the_same_values_everywhere_and_is_checked_first() {
    for cmd in [
        &["compare"][..],
        &["report"],
        &["exam", "--golden", "g", "--run", "r"],
    ] {
        let mut args = cmd.to_vec();
        args.extend(["--baseline", "previus"]);
        let o = veredicto(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains("did you mean `previous`?"), "{args:?}: {err}");
    }
    for cmd in ["compare", "report"] {
        let o = veredicto(&[cmd, "--help"]);
        assert!(
            stdout(&o).contains("[default: 20]"),
            "{cmd}: one --window default"
        );
    }
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let o = veredicto(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let text = stdout(&o);
        assert!(
            text.contains("veredicto") && text.contains("init"),
            "{shell}"
        );
    }
}

/// `veredicto … | head`: the reader goes away; the command ends quietly with 0.
#[test]
fn a_closed_pipe_ends_quietly_with_zero() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["completions", "bash"][..],
        &["models", "list"],
        &["init", "--dir", "x"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_veredicto"))
            .args(args)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("error"), "{args:?}: {err}");
    }
}

#[test]
fn color_follows_the_flag_and_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], no_color: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_veredicto"));
        c.args(args).current_dir(dir.path());
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        c.output().unwrap()
    };
    let bad = ["runs", "show", "nosuchrun", "--history", "nope.db"];
    let always = run(&[&bad[..], &["--color", "always"]].concat(), true);
    assert!(stderr(&always).contains("\u{1b}["), "{}", stderr(&always));
    let never = run(&[&bad[..], &["--color", "never"]].concat(), false);
    assert!(!stderr(&never).contains('\u{1b}'));
    let auto = run(&bad, false);
    assert!(
        !stderr(&auto).contains('\u{1b}'),
        "not a terminal: no colour"
    );
}

#[test]
fn quiet_silences_notes_but_not_results() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.jsonl"),
        "{\"id\":\"a\",\"text\":\"uno\",\"vector\":[1,0,0]}\n",
    )
    .unwrap();
    let o = veredicto_in(
        dir.path(),
        &["ingest", "--corpus", "c.jsonl", "--index", "i", "--quiet"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 chunks"));
    let o = veredicto_in(
        dir.path(),
        &["ingest", "--corpus", "c.jsonl", "--index", "j"],
    );
    assert!(stderr(&o).contains("ingest took"), "{}", stderr(&o));
}

fn hash_folder(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Regression: re-ingesting the same corpus appended an empty batch and rewrote the
/// manifest.
#[test]
fn a_no_op_re_ingest_changes_no_index_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("veredicto.toml"),
        "corpus = \"c.jsonl\"\n[source]\nindex = \"idx\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c.jsonl"),
        "{\"id\":\"a\",\"text\":\"uno\",\"vector\":[1,0,0]}\n{\"id\":\"b\",\"text\":\"dos\",\"vector\":[0,1,0]}\n",
    )
    .unwrap();
    let first = veredicto_in(dir.path(), &["ingest"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let before = hash_folder(&dir.path().join("idx"));
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let again = veredicto_in(&sub, &["ingest", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let v: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(v["unchanged"], true);
    assert_eq!(v["batch"], serde_json::Value::Null);
    assert_eq!(before, hash_folder(&dir.path().join("idx")));
}

#[test]
fn every_command_with_output_takes_format_and_json() {
    for (cmd, formats) in [
        (&["init"][..], "human, json"),
        (&["ingest"], "human, json"),
        (&["search"], "human, json"),
        (&["index", "verify"], "human, json"),
        (&["runs", "list"], "human, json"),
        (&["runs", "show"], "human, json, markdown, junit"),
        (&["compare"], "human, json, markdown, junit"),
        (&["report"], "html, human, json, markdown, junit"),
        (&["history", "check"], "human, json"),
        (&["history", "migrate"], "human, json"),
        (&["models", "list"], "human, json"),
        (&["audit", "check"], "human, json, markdown"),
        (&["audit", "verify"], "human, json"),
        (&["audit", "impact"], "human, json"),
        (&["audit", "compare"], "human, json"),
    ] {
        let mut args = cmd.to_vec();
        args.push("--help");
        let o = veredicto(&args);
        let help = stdout(&o);
        assert!(
            help.contains(&format!("[possible values: {formats}]")),
            "{cmd:?}: {help}"
        );
        assert!(help.contains("--json"), "{cmd:?}");
    }
}

/// Regression: a buried chunk's score was printed with every digit of an f64
/// (`score 0.46958407759666443`); queries of the run outside the golden set are named.
#[test]
fn scores_have_the_tables_precision_and_stray_queries_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let golden = write(
        dir.path(),
        "g.jsonl",
        "{\"id\": \"q1\", \"query\": \"x\", \"expected\": [\"d3\"], \"top_k\": 2}\n",
    );
    let run = write(
        dir.path(),
        "r.trec",
        "q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.8 t\nq1 Q0 d3 3 0.46958407759666443 t\nq-stray Q0 d1 1 0.5 t\n",
    );
    let o = veredicto_in(
        dir.path(),
        &["exam", "--golden", &golden, "--run", &run, "--no-record"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("(score 0.4696)"), "{out}");
    assert!(!out.contains("0.46958407759666443"), "{out}");
    let all = format!("{out}{}", stderr(&o));
    assert!(all.contains("q-stray"), "{all}");
}

#[test]
fn unknown_flags_and_commands_get_a_suggestion() {
    let o = veredicto(&["compare", "--baselin", "previous"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a similar argument exists: '--baseline'"),
        "{}",
        stderr(&o)
    );
    let o = veredicto(&["runs", "lst"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a similar subcommand exists: 'list'"),
        "{}",
        stderr(&o)
    );
}

/// Regression: a bad `--baseline` was found after the run had been written.
#[test]
fn a_missing_baseline_run_is_found_before_anything_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    rack_project(dir.path());
    let exam = |extra: &[&str]| {
        let mut args = vec![
            "exam",
            "--golden",
            "golden.jsonl",
            "--run",
            "run-accept.trec",
        ];
        args.extend_from_slice(extra);
        veredicto_in(dir.path(), &args)
    };
    assert_eq!(exam(&[]).status.code(), Some(0));
    let runs = || {
        let o = veredicto_in(dir.path(), &["runs", "list", "--json"]);
        serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(runs(), 1);
    let o = exam(&["--compare", "--baseline", "01ZZZZZZZZ"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("--baseline 01ZZZZZZZZ"), "{err}");
    assert!(!err.contains("recorded run"), "{err}");
    assert_eq!(runs(), 1, "nothing recorded");
    // `none`: recorded, no comparison.
    let o = exam(&["--compare", "--baseline", "none"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("comparison with"));
}

#[test]
fn exam_runs_from_the_project_file_alone_and_names_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    rack_project(dir.path());
    let o = veredicto_in(dir.path(), &["exam"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give --golden FILE"), "{}", stderr(&o));
    let o = veredicto_in(dir.path(), &["exam", "--golden", "golden.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("give --run FILE, --index DIR or --retriever URI"),
        "{}",
        stderr(&o)
    );
    std::fs::write(
        dir.path().join("veredicto.toml"),
        "golden = \"golden.jsonl\"\ncorpus = \"corpus.jsonl\"\n[source]\nrun = \"run-stop.trec\"\n[policy]\ntop_k = 10\nnoise_ceiling = 0.9\nmin_mean_quality = 0\nmax_failing_fraction = 1.0\ngold_label = \"nothing\"\n",
    )
    .unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let o = veredicto_in(&sub, &["exam", "--json", "--no-record"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["policy"]["noise_ceiling"], 0.9,
        "the [policy] table is the policy"
    );
    assert_eq!(v["cases"].as_array().unwrap().len(), 12);
}
