//! Known models through the binary: `models list|fetch`, `--model NAME`, and an index that
//! remembers its model. Needs multilingual-e5-small in `models/multilingual-e5-small`
//! (`scripts/fetch-e5.sh`) and all-MiniLM-L6-v2 in `models/all-MiniLM-L6-v2`
//! (`scripts/fetch-model.sh`); nothing is downloaded here.

use crate::common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// Runs the binary in `cwd` with `VEREDICTO_MODELS=models` (or unset when `None`).
fn run(cwd: &Path, models: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_veredicto"));
    c.args(args).current_dir(cwd).env("NO_COLOR", "1");
    match models {
        Some(m) => c.env("VEREDICTO_MODELS", m),
        None => c
            .env_remove("VEREDICTO_MODELS")
            .env("HOME", cwd)
            .env_remove("XDG_CACHE_HOME"),
    };
    c.output().expect("run veredicto")
}

/// A models folder where multilingual-e5-small is fetched (a link to the repository's copy)
/// and all-minilm-l6-v2 is not.
fn models_folder() -> tempfile::TempDir {
    let e5 = workspace().join("models/multilingual-e5-small");
    assert!(
        e5.join("e5-small-q4.bin").is_file(),
        "run scripts/fetch-e5.sh first ({} missing)",
        e5.display()
    );
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&e5, dir.path().join("multilingual-e5-small")).unwrap();
    dir
}

#[test]
fn models_list_shows_what_is_fetched_and_unknown_names_are_refused() {
    let models = models_folder();
    let cwd = tempfile::tempdir().unwrap();
    let o = run(
        cwd.path(),
        Some(models.path()),
        &["models", "list", "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let by_name = |n: &str| {
        v["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == n)
            .cloned()
            .unwrap()
    };
    let e5 = by_name("multilingual-e5-small");
    assert_eq!(e5["fetched"], true);
    assert_eq!(
        e5["files"][0]["sha256"],
        "sha256:1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
    );
    assert_eq!(by_name("all-minilm-l6-v2")["fetched"], false);

    let o = run(
        cwd.path(),
        Some(models.path()),
        &["models", "fetch", "bert-base"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("unknown model `bert-base`; known: all-minilm-l6-v2, multilingual-e5-small"),
        "{}",
        stderr(&o)
    );

    let corpus = example("corpus.jsonl");
    let o = run(
        cwd.path(),
        Some(models.path()),
        &[
            "ingest",
            "--corpus",
            corpus.to_str().unwrap(),
            "--index",
            "idx",
            "--model",
            "all-minilm-l6-v2",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("model all-minilm-l6-v2 is not fetched")
            && stderr(&o).contains("veredicto models fetch all-minilm-l6-v2"),
        "{}",
        stderr(&o)
    );
    assert!(!cwd.path().join("idx").exists(), "nothing written");
}

#[test]
fn an_index_remembers_its_model_and_refuses_another_naming_both() {
    let models = models_folder();
    let work = tempfile::tempdir().unwrap();
    let index = work.path().join("idx");
    let index_s = index.to_str().unwrap();
    let corpus = example("corpus.jsonl");
    let o = run(
        work.path(),
        Some(models.path()),
        &[
            "ingest",
            "--corpus",
            corpus.to_str().unwrap(),
            "--index",
            index_s,
            "--model",
            "multilingual-e5-small",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["truncated"]["max_tokens"], 512);
    assert_eq!(v["truncated"]["chunks"], 0);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(index.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["model"]["name"], "multilingual-e5-small");
    assert!(manifest["model"]["folder"]
        .as_str()
        .unwrap()
        .ends_with("multilingual-e5-small"));

    // Another working folder, no VEREDICTO_MODELS, no --model: the index's model is used.
    let elsewhere = tempfile::tempdir().unwrap();
    let o = run(
        elsewhere.path(),
        None,
        &[
            "search",
            "--index",
            index_s,
            "--json",
            "¿Cuántos días de vacaciones tengo?",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let golden = example("golden.jsonl");
    let o = run(
        elsewhere.path(),
        None,
        &[
            "exam",
            "--index",
            index_s,
            "--golden",
            golden.to_str().unwrap(),
            "--no-record",
            "--json",
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let exam: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        exam["summary"]["mean_recall"].as_f64().unwrap() > 0.9,
        "{}",
        exam["summary"]
    );

    // A different model is refused, naming both.
    let minilm = workspace().join("models/all-MiniLM-L6-v2");
    let o = run(
        elsewhere.path(),
        None,
        &[
            "search",
            "--index",
            index_s,
            "--model",
            minilm.to_str().unwrap(),
            "dietas",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("built with model multilingual-e5-small")
            && err.contains("but model all-MiniLM-L6-v2"),
        "{err}"
    );
}

/// Without `--model` and without an index that records one, the default is
/// multilingual-e5-small: used when fetched, else refused with the command that fetches it
/// (all-MiniLM-L6-v2 in `models/all-MiniLM-L6-v2` of the working folder, the old default, is
/// no longer picked).
#[test]
fn the_default_model_is_multilingual_e5_small() {
    let corpus = example("corpus.jsonl");
    let corpus = corpus.to_str().unwrap();

    // Not fetched: a clear error, exit 2, nothing written, even with MiniLM at the old path.
    let empty = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(cwd.path().join("models")).unwrap();
    std::os::unix::fs::symlink(
        workspace().join("models/all-MiniLM-L6-v2"),
        cwd.path().join("models/all-MiniLM-L6-v2"),
    )
    .unwrap();
    let o = run(
        cwd.path(),
        Some(empty.path()),
        &["ingest", "--corpus", corpus, "--index", "idx"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("the default model multilingual-e5-small is not fetched")
            && err.contains("run `veredicto models fetch multilingual-e5-small`"),
        "{err}"
    );
    assert!(!cwd.path().join("idx").exists(), "nothing written");

    // Fetched into the models folder: used, and recorded in the index.
    let models = models_folder();
    let o = run(
        cwd.path(),
        Some(models.path()),
        &["ingest", "--corpus", corpus, "--index", "idx", "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(cwd.path().join("idx/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["model"]["name"], "multilingual-e5-small");
    assert_eq!(manifest["model"]["max_tokens"], 512);
}

/// The truncation warning of ingest is a warning on stderr; stdout keeps only the result
/// (before, the sentence was written to stdout with the summary).
#[test]
fn ingest_warns_about_truncated_chunks_on_stderr_not_stdout() {
    let models = models_folder();
    let work = tempfile::tempdir().unwrap();
    let long = "palabra ".repeat(700);
    let corpus = work.path().join("corpus.jsonl");
    std::fs::write(
        &corpus,
        format!("{{\"id\":\"long\",\"text\":\"{}\"}}\n", long.trim()),
    )
    .unwrap();
    let o = run(
        work.path(),
        Some(models.path()),
        &[
            "ingest",
            "--corpus",
            corpus.to_str().unwrap(),
            "--index",
            work.path().join("idx").to_str().unwrap(),
            "--model",
            "multilingual-e5-small",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("truncated"), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(
            "warning: 1 of 1 embedded chunks are longer than 512 tokens and were embedded truncated to their first 512 tokens"
        ),
        "{}",
        stderr(&o)
    );
}

/// Off a terminal, ingest prints a progress line at most every 5 s while it embeds, under
/// `--json` too (progress is on stderr); before, `--json` hid it, and a long ingest printed
/// nothing on stderr.
#[test]
fn ingest_prints_progress_lines_off_a_terminal_under_json() {
    let models = models_folder();
    let work = tempfile::tempdir().unwrap();
    let long = "palabra ".repeat(600);
    let corpus = work.path().join("corpus.jsonl");
    let lines: String = (0..12)
        .map(|i| format!("{{\"id\":\"c{i}\",\"text\":\"{i} {}\"}}\n", long.trim()))
        .collect();
    std::fs::write(&corpus, lines).unwrap();
    let started = std::time::Instant::now();
    let o = run(
        work.path(),
        Some(models.path()),
        &[
            "ingest",
            "--corpus",
            corpus.to_str().unwrap(),
            "--index",
            work.path().join("idx").to_str().unwrap(),
            "--model",
            "multilingual-e5-small",
            "--json",
        ],
    );
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice::<Value>(&o.stdout).expect("stdout is the JSON alone");
    if took > std::time::Duration::from_secs(7) {
        assert!(
            stderr(&o).contains("/12 chunks embedded ("),
            "{took:?}: {}",
            stderr(&o)
        );
    } else {
        eprintln!("ingest took {took:?}: too fast to need a progress line");
    }
}
