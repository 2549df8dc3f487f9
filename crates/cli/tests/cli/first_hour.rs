//! docs/first-hour.md is test-backed: every `$ veredicto …` line of its console blocks runs,
//! in order, in a fresh folder holding the bundled example's corpus and golden set; each exit
//! code and each output line shown must match (`…` in a shown line matches anything). Needs
//! multilingual-e5-small in `models/` (`scripts/fetch-e5.sh`).

use crate::common;
use common::*;
use std::path::Path;
use std::process::Command;

/// The representation the page's step 5 adds to `silver_finanzas_123`.
const FIX: &str = "Escala del IRPF 2025 para autónomos: tramos de base liquidable, cuota íntegra y tipo aplicable para calcular el impuesto.";

struct Step {
    args: Vec<String>,
    shown: Vec<String>,
    exit: Option<i32>,
}

fn steps(doc: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut in_console = false;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push(Step {
                args: cmd.split_whitespace().skip(1).map(str::to_owned).collect(),
                shown: Vec::new(),
                exit: None,
            });
        } else if let Some(step) = out.last_mut() {
            if let Some(code) = line
                .strip_prefix("[exit ")
                .and_then(|r| r.strip_suffix(']'))
            {
                step.exit = Some(code.parse().expect("exit code"));
            } else if !line.trim().is_empty() {
                step.shown.push(line.to_owned());
            }
        }
    }
    out
}

/// Whether `actual` holds `shown`'s pieces between the `…` wildcards, in order.
fn matches(shown: &str, actual: &str) -> bool {
    let mut rest = actual;
    for (i, piece) in shown.split('…').enumerate() {
        if piece.is_empty() {
            continue;
        }
        let found = if i == 0 {
            rest.starts_with(piece).then_some(0)
        } else {
            rest.find(piece)
        };
        match found {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    !shown.ends_with(|c| c != '…') || rest.is_empty()
}

fn apply_fix(dir: &Path) {
    let path = dir.join("corpus.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let fixed: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            if v["id"] == "silver_finanzas_123" {
                v["representation"] = FIX.into();
            }
            serde_json::to_string(&v).unwrap()
        })
        .collect();
    std::fs::write(&path, fixed.join("\n") + "\n").unwrap();
}

#[test]
fn the_first_hour_transcript_runs_as_written() {
    let doc = std::fs::read_to_string(workspace().join("docs/first-hour.md")).unwrap();
    assert!(doc.contains(FIX), "the page shows the fix the test applies");
    let models = workspace().join("models");
    assert!(
        models
            .join("multilingual-e5-small/e5-small-q4.bin")
            .is_file(),
        "run scripts/fetch-e5.sh first"
    );
    let dir = tempfile::tempdir().unwrap();
    for f in ["corpus.jsonl", "golden.jsonl"] {
        std::fs::copy(example(f), dir.path().join(f)).unwrap();
    }
    let run = |args: &[String]| {
        Command::new(env!("CARGO_BIN_EXE_veredicto"))
            .args(args)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env("VEREDICTO_MODELS", &models)
            .output()
            .expect("run veredicto")
    };
    let steps = steps(&doc);
    assert!(steps.len() >= 10, "{} steps", steps.len());
    let mut ingests = 0;
    for step in &steps {
        if step.args.first().map(String::as_str) == Some("ingest") {
            ingests += 1;
            if ingests == 2 {
                apply_fix(dir.path());
            }
        }
        let o = run(&step.args);
        let actual = format!("{}{}", stdout(&o), stderr(&o));
        if let Some(code) = step.exit {
            assert_eq!(
                o.status.code(),
                Some(code),
                "veredicto {}\n{actual}",
                step.args.join(" ")
            );
        }
        for shown in &step.shown {
            assert!(
                actual.lines().any(|l| matches(shown, l)),
                "veredicto {}: the page shows\n{shown}\nbut the output is\n{actual}",
                step.args.join(" ")
            );
        }
    }
    assert!(dir.path().join("report.html").is_file());
}

#[test]
fn wildcards_match_what_they_stand_for() {
    assert!(matches("recorded run … in x", "recorded run 01ABC in x"));
    assert!(!matches("recorded run … in x", "recorded run 01ABC in y"));
    assert!(matches("latency search: …", "latency search: p50 1 ms"));
    assert!(matches("a", "a"));
    assert!(!matches("a", "ab"));
}
