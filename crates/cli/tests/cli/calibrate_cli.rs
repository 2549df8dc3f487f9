//! `veredicto calibrate` end to end on the bundled example: the distribution it used, a
//! policy file that the exam loads, no overwrite without --force, and the day-one notes of
//! the exam (uncalibrated defaults, structural noise, unknown gold label).

use crate::common;
use common::*;
use serde_json::Value;

fn calibrate_args(dir: &std::path::Path, source: &[&str], extra: &[&str]) -> std::process::Output {
    let golden = example("golden.jsonl");
    let corpus = example("corpus.jsonl");
    let policy = example("policy.toml");
    let notes = example("notes.jsonl");
    let mut args = vec![
        "calibrate",
        "--golden",
        golden.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--notes",
        notes.to_str().unwrap(),
        "--as-of",
        "2025-11-14",
    ];
    args.extend_from_slice(source);
    args.extend_from_slice(extra);
    veredicto_in(dir, &args)
}

#[test]
fn calibrate_writes_a_policy_the_exam_loads_and_never_overwrites_silently() {
    let dir = tempfile::tempdir().unwrap();
    let run = example("run-stop.trec");
    let o = calibrate_args(dir.path(), &["--run", run.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("healthy cases: 10 of 12"), "{text}");
    assert!(
        text.contains("90th percentile of noise / K 0.80 + one result in 10 (0.10), rounded up to 0.05 = noise_ceiling 0.90 (was 0.30)"),
        "{text}"
    );
    assert!(text.contains("wrote policy.toml"), "{text}");
    let written = std::fs::read_to_string(dir.path().join("policy.toml")).unwrap();
    assert!(written.contains("\nnoise_ceiling = 0.9 "), "{written}");
    assert!(written.starts_with("# veredicto acceptance policy, calibrated"));

    // The exam reads it: the effective policy carries the calibrated ceiling.
    let golden = example("golden.jsonl");
    let corpus = example("corpus.jsonl");
    let exam = veredicto_in(
        dir.path(),
        &[
            "exam",
            "--golden",
            golden.to_str().unwrap(),
            "--run",
            run.to_str().unwrap(),
            "--corpus",
            corpus.to_str().unwrap(),
            "--policy",
            "policy.toml",
            "--no-record",
            "--json",
        ],
    );
    assert_eq!(exam.status.code(), Some(1), "{}", stderr(&exam));
    let report: Value = serde_json::from_str(&stdout(&exam)).unwrap();
    assert_eq!(report["policy"]["noise_ceiling"], 0.9);
    assert_eq!(report["policy_calibrated"], true);

    // A second calibration refuses to replace the file (exit 2, file unchanged)…
    std::fs::write(dir.path().join("policy.toml"), "top_k = 7\n").unwrap();
    let again = calibrate_args(dir.path(), &["--run", run.to_str().unwrap()], &[]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("policy.toml exists: give --force to replace it"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("policy.toml")).unwrap(),
        "top_k = 7\n"
    );
    // …unless told to.
    let forced = calibrate_args(dir.path(), &["--run", run.to_str().unwrap()], &["--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("policy.toml")).unwrap(),
        written
    );
}

#[test]
fn calibrate_json_and_dry_run_through_a_retriever_uri() {
    let dir = tempfile::tempdir().unwrap();
    let run = format!("run:{}", example("run-accept.trec").display());
    let o = calibrate_args(
        dir.path(),
        &["--retriever", &run],
        &["--dry-run", "--json", "--out", "p.toml"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["noise"]["overall"]["healthy_cases"], 12);
    assert_eq!(v["noise_ceiling"], 0.4);
    assert_eq!(v["reliable"], false);
    assert_eq!(v["verdict_before"], "accept");
    assert_eq!(v["verdict_after"], "accept");
    assert!(!dir.path().join("p.toml").exists());
}

#[test]
fn tables_of_other_commands_are_carried_over() {
    let dir = tempfile::tempdir().unwrap();
    let start = write(
        dir.path(),
        "start.toml",
        "top_k = 10\n\n[grounding]\nmin_support = 0.8\n\n[corpus]\nmax_duplicates = 3\n",
    );
    let golden = example("golden.jsonl");
    let run = example("run-accept.trec");
    let corpus = example("corpus.jsonl");
    let o = veredicto_in(
        dir.path(),
        &[
            "calibrate",
            "--golden",
            golden.to_str().unwrap(),
            "--run",
            run.to_str().unwrap(),
            "--corpus",
            corpus.to_str().unwrap(),
            "--policy",
            &start,
            "--out",
            "calibrated.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written = std::fs::read_to_string(dir.path().join("calibrated.toml")).unwrap();
    assert!(
        written.contains("[grounding]\nmin_support = 0.8\n"),
        "{written}"
    );
    assert!(
        written.contains("[corpus]\nmax_duplicates = 3\n"),
        "{written}"
    );
}

#[test]
fn too_few_healthy_cases_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = example("run-stop.trec");
    let o = calibrate_args(
        dir.path(),
        &["--run", run.to_str().unwrap()],
        &["--min-healthy", "11"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("only 10 of 12 cases are healthy"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("policy.toml").exists());
}

#[test]
fn exam_without_policy_says_once_that_the_defaults_are_uncalibrated() {
    let golden = example("golden.jsonl");
    let run = example("run-accept.trec");
    let corpus = example("corpus.jsonl");
    let o = veredicto(&[
        "exam",
        "--golden",
        golden.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--no-record",
    ]);
    let text = stdout(&o);
    assert_eq!(
        text.matches("not calibrated on this suite").count(),
        1,
        "{text}"
    );
    assert!(text.contains("veredicto calibrate"), "{text}");
    // Without the corpus nothing tells which chunks are gold: a warning.
    let o = veredicto(&[
        "exam",
        "--golden",
        golden.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
        "--no-record",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["policy_calibrated"], false);
    assert_eq!(v["warnings"][0]["kind"], "gold_unknown");
    assert_eq!(v["warnings"][0]["gold_label"], "SINTESIS_CURADA");
}

#[test]
fn noise_that_no_ranking_can_fix_is_explained_not_blamed_on_descriptions() {
    // One expected chunk ranked first among ten scored results, default policy.
    let dir = tempfile::tempdir().unwrap();
    let golden = write(
        dir.path(),
        "golden.jsonl",
        "{\"id\": \"q1\", \"query\": \"¿Cuántos días de vacaciones?\", \"expected\": [\"a\"], \"gold\": true}\n",
    );
    let run: String = (1..=10)
        .map(|r| {
            let id = if r == 1 {
                "a".to_owned()
            } else {
                format!("x{r}")
            };
            format!("q1 Q0 {id} {r} {:.2} t\n", 1.0 - f64::from(r) / 100.0)
        })
        .collect();
    let run = write(dir.path(), "run.trec", &run);
    let o = veredicto_in(
        dir.path(),
        &["exam", "--golden", &golden, "--run", &run, "--no-record"],
    );
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.contains("diagnosis [noise] K = 10, 1 expected chunk at rank 1: the other 9 necessarily score below it (ceiling 3); lower this case's top_k to 1, or calibrate (veredicto calibrate)"),
        "{text}"
    );
    assert!(!text.contains("generic descriptions"), "{text}");
}

#[test]
fn calibrate_format_takes_the_shared_values_and_json_is_its_alias() {
    let dir = tempfile::tempdir().unwrap();
    let run = format!("run:{}", example("run-accept.trec").display());
    let by = |extra: &[&str]| {
        let mut args = vec!["--dry-run", "--out", "p.toml"];
        args.extend_from_slice(extra);
        calibrate_args(dir.path(), &["--retriever", &run], &args)
    };
    let alias = by(&["--json"]);
    let format = by(&["--format", "json"]);
    assert_eq!(alias.status.code(), Some(0), "{}", stderr(&alias));
    assert_eq!(format.status.code(), Some(0), "{}", stderr(&format));
    assert_eq!(stdout(&alias), stdout(&format));
    serde_json::from_str::<Value>(&stdout(&format)).unwrap();
    let human = by(&["--format", "human"]);
    assert_eq!(human.status.code(), Some(0), "{}", stderr(&human));
    assert!(serde_json::from_str::<Value>(&stdout(&human)).is_err());
    // A format calibrate has no renderer for is refused at parse time, naming the choices.
    let bad = by(&["--format", "markdown"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = stderr(&bad);
    assert!(
        err.contains("markdown") && err.contains("human") && err.contains("json"),
        "{err}"
    );
}

/// 30 cases with one expected chunk each, ranked first among ten results with falling
/// scores (a perfect retriever); the first five declared gold.
fn perfect_one_chunk_suite(dir: &std::path::Path) -> (String, String) {
    let mut golden = String::new();
    let mut run = String::new();
    for i in 1..=30 {
        let gold = if i <= 5 { ", \"gold\": true" } else { "" };
        golden.push_str(&format!(
            "{{\"id\": \"q{i:02}\", \"query\": \"question {i}\", \"expected\": [\"c{i:02}\"]{gold}}}\n"
        ));
        for r in 1..=10 {
            let id = if r == 1 {
                format!("c{i:02}")
            } else {
                format!("c{i:02}_x{r}")
            };
            run.push_str(&format!(
                "q{i:02} Q0 {id} {r} {:.2} perfect\n",
                1.0 - f64::from(r) / 100.0
            ));
        }
    }
    (
        write(dir, "golden.jsonl", &golden),
        write(dir, "run.trec", &run),
    )
}

#[test]
fn a_perfect_one_chunk_suite_stops_on_the_uncalibrated_ceiling_not_on_gold_failures() {
    let dir = tempfile::tempdir().unwrap();
    let (golden, run) = perfect_one_chunk_suite(dir.path());
    let exam = |extra: &[&str]| {
        let mut args = vec!["exam", "--golden", &golden, "--run", &run, "--no-record"];
        args.extend_from_slice(extra);
        veredicto_in(dir.path(), &args)
    };
    let o = exam(&[]);
    // The method's verdict is unchanged: every case is over the default ceiling.
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    let reasons: Vec<&str> = text
        .split("verdict: STOP\n")
        .nth(1)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("  - "))
        .collect();
    assert_eq!(reasons.len(), 1, "{text}");
    assert!(
        reasons[0].starts_with("  - structural_noise: the noise ceiling is not calibrated for this suite: 30 cases (5 gold) fail on noise alone that a perfect ranking would also have"),
        "{text}"
    );
    assert!(!text.contains("gold_case_failed"), "{text}");
    assert!(!text.contains("FAIL noise"), "{text}");
    let o = exam(&["--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["reasons"], serde_json::json!(["structural_noise"]));
    assert_eq!(v["summary"]["failing_gold"], 5);
    assert_eq!(v["summary"]["structural_only"], 30);
    assert_eq!(v["summary"]["structural_only_gold"], 5);
    assert_eq!(
        v["cases"][0]["reasons"],
        serde_json::json!(["structural_noise"])
    );
}

#[test]
fn calibrating_a_one_chunk_suite_says_the_noise_rule_can_fail_no_case() {
    let dir = tempfile::tempdir().unwrap();
    let (golden, run) = perfect_one_chunk_suite(dir.path());
    let o = veredicto_in(
        dir.path(),
        &["calibrate", "--golden", &golden, "--run", &run],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let says = "with one expected chunk per case the noise rule cannot tell healthy from noisy cases: list the other relevant chunks of each case to make it informative";
    assert!(
        text.contains(&format!("noise rule not informative: {says}")),
        "{text}"
    );
    assert!(
        text.contains("none of the 30 cases can fail the noise rule"),
        "{text}"
    );
    let written = std::fs::read_to_string(dir.path().join("policy.toml")).unwrap();
    assert!(
        written.contains(&format!("# noise rule not informative: {says}\n")),
        "{written}"
    );
    assert!(
        written.contains(
            "noise_ceiling = 1.0           # calibrated, but it can fail no case of this suite"
        ),
        "{written}"
    );
    let o = veredicto_in(
        dir.path(),
        &[
            "calibrate",
            "--golden",
            &golden,
            "--run",
            &run,
            "--dry-run",
            "--json",
        ],
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["noise_ceiling"], 1.0);
    assert_eq!(v["noise_rule_informative"], false);
    assert_eq!(
        v["noise_rule"]["uninformative"],
        "one_expected_chunk_per_case"
    );
    assert_eq!(v["noise_rule"]["reason"], says);
    assert_eq!(v["noise_rule"]["cases_it_can_fail"], 0);
    assert_eq!(v["noise_rule"]["nearest"]["most_noise"], 9);
    assert_eq!(v["noise_rule"]["nearest"]["max_noise"], 10);
}

/// In a project made by `init`, a bare `calibrate` reads the golden set, the corpus, the
/// source and the `[policy]` from veredicto.toml and starts from that policy, and
/// `--write-project` points the project at the policy it wrote (the `[policy]` table gives
/// way to `policy_file`), so that the next exam uses it. Before, a bare `calibrate` failed
/// with "required arguments were not provided", and the policy it wrote could not be named
/// next to the table `init` wrote.
#[test]
fn calibrate_in_an_init_project_starts_from_its_policy_and_writes_the_project() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["golden.jsonl", "corpus.jsonl", "run-accept.trec"] {
        std::fs::copy(example(f), dir.path().join(f)).unwrap();
    }
    let o = veredicto_in(
        dir.path(),
        &[
            "init",
            "--run",
            "run-accept.trec",
            "--corpus",
            "corpus.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let project = dir.path().join("veredicto.toml");
    let toml = std::fs::read_to_string(&project).unwrap();
    assert!(toml.contains("top_k = 10"), "{toml}");
    std::fs::write(&project, toml.replace("top_k = 10", "top_k = 7")).unwrap();

    let o = veredicto_in(
        dir.path(),
        &["calibrate", "--as-of", "2025-11-14", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.path().join("policy.toml").exists());

    let o = veredicto_in(
        dir.path(),
        &["calibrate", "--as-of", "2025-11-14", "--write-project"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("pointed veredicto.toml at it (policy_file)"),
        "{}",
        stdout(&o)
    );
    let written = std::fs::read_to_string(dir.path().join("policy.toml")).unwrap();
    assert!(
        written.contains("top_k = 7"),
        "started from the project's policy: {written}"
    );
    let toml = std::fs::read_to_string(&project).unwrap();
    assert!(toml.contains("policy_file = \"policy.toml\""), "{toml}");
    assert!(!toml.contains("[policy]"), "{toml}");
    assert!(toml.contains("run = \"run-accept.trec\""), "{toml}");

    // The exam now reads the calibrated policy from the project.
    let o = veredicto_in(
        dir.path(),
        &["exam", "--json", "--no-record", "--as-of", "2025-11-14"],
    );
    let report: Value = serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| {
        panic!("{e}: {}", stderr(&o));
    });
    assert_eq!(report["policy_calibrated"], true);

    // Calibrating again updates the project's own policy file in place.
    let o = veredicto_in(
        dir.path(),
        &["calibrate", "--as-of", "2025-11-14", "--write-project"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let toml = std::fs::read_to_string(&project).unwrap();
    assert_eq!(toml.matches("policy_file").count(), 1, "{toml}");
}
