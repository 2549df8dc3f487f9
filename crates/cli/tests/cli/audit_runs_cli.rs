//! `veredicto audit` over recorded runs: record, replay, compare by run ID, reviews and
//! suggestions kept in the history database, packages of a run, and a chat judge served by
//! a local HTTP server on 127.0.0.1.

use crate::common;
/// The local HTTP server of veredicto-embed's tests (read-only reuse).
use crate::tiny;
use common::{stderr, stdout, veredicto_in, workspace};
use std::path::{Path, PathBuf};
use tiny::{Reply, Server};

fn example(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(workspace().join("examples/grounding").join(name), &to).expect("copy");
    to
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `veredicto audit ...` in `dir` with its history at `dir/h.db`.
fn run(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut a = vec![args[0], "--history", "h.db"];
    a.extend_from_slice(&args[1..]);
    veredicto_in(dir, &a)
}

fn record(dir: &Path, file: &Path) -> String {
    let o = run(
        dir,
        &["audit", "record", s(file), "--time", "2026-11-30T10:00:00Z"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();
    assert_eq!(id.len(), 26, "{id}");
    id
}

#[test]
fn record_review_replay_compare_and_package_a_run() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let cases = example(d, "q017.yaml");
    let base = record(d, &cases);

    // A review of the run goes to the history, not beside the file.
    let o = run(
        d,
        &[
            "audit",
            "review",
            &base[..10],
            "--claim",
            "C-017-2",
            "--support",
            "partially_supported",
            "--reason",
            "30 días sólo para compras directas",
            "--reviewer",
            "ana",
            "--time",
            "2026-11-30T11:00:00Z",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("annex (disagrees with supported)"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains(&format!("audit run {base}")),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("q017.yaml.reviews.jsonl").exists());

    // The sheet of the run shows the annex; the file's sheet does not.
    let o = run(d, &["audit", "sheet", &base, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let row = rows
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["claim_id"] == "C-017-2")
        .expect("C-017-2");
    assert_eq!(row["support"], "supported", "the original verdict stays");
    assert!(row["annexes"][0]
        .as_str()
        .expect("annex")
        .contains("ana: partially_supported"));
    let o = run(d, &["audit", "sheet", s(&cases), "--format", "json"]);
    assert!(!stdout(&o).contains("ana: partially_supported"));
    // Reviewing the file that was recorded says where the run is.
    let o = run(
        d,
        &[
            "audit",
            "review",
            s(&cases),
            "--claim",
            "C-017-1",
            "--support",
            "unsupported",
            "--reason",
            "igual",
            "--reviewer",
            "eva",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("recorded as audit run {base}")),
        "{}",
        stderr(&o)
    );

    // Replay: new answers to the same frozen case, recorded as a new run.
    let replay_file = example(d, "q017-replay.yaml");
    let o = run(
        d,
        &[
            "audit",
            "replay",
            &base,
            s(&replay_file),
            "--json",
            "--time",
            "2026-11-30T12:00:00Z",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let c: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let replay = c["new"].as_str().expect("new id").to_string();
    assert_eq!(c["base"], base.as_str());
    assert_ne!(replay, base);
    assert!(!c["compared"].as_array().expect("compared").is_empty());
    // The configuration travels inside the recorded case files: the replay says what changed.
    assert!(c["compared"][0]["configuration_changes"]
        .as_array()
        .expect("changes")
        .contains(&serde_json::json!(
            "generation model changed: example-llm-2026-05 → example-llm-2026-07"
        )));

    // compare RUN_A RUN_B gives the same answer by ID.
    let o = run(d, &["audit", "compare", &base, &replay, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let again: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(again, c);

    // The listing shows both, newest first, with the replay link and the review count.
    let o = run(d, &["audit", "runs", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(list[0]["id"], replay.as_str());
    assert_eq!(list[0]["replay_of"], base.as_str());
    assert_eq!(list[1]["reviews"], 1);
    assert_eq!(list[1]["counts"]["claims"], 4);

    // A package of the replay: compared with its base by default, verifies, deterministic.
    let o = run(d, &["audit", "package", &replay, "--out", "p1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(d, &["audit", "package", &replay, "--out", "p2.tar.gz"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let version: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("p1/version.json")).expect("version"))
            .expect("json");
    assert_eq!(version["run"]["id"], replay.as_str());
    assert_eq!(version["run"]["replay_of"], base.as_str());
    assert_eq!(version["run"]["compared_with"], base.as_str());
    assert_eq!(version["created"], "2026-11-30T12:00:00Z");
    assert_eq!(
        version["configurations"][0]["configuration"]["model"],
        "example-llm-2026-07"
    );
    assert_eq!(
        version["configurations"][0]["configuration"]["prompt_version"],
        "answer-v4-bounded"
    );
    assert!(d.join("p1/comparison.json").is_file());
    assert!(d.join("p1/cases/q017-replay.yaml").is_file());
    for p in ["p1", "p2.tar.gz"] {
        let o = run(d, &["audit", "verify", p]);
        assert_eq!(o.status.code(), Some(0), "{p}: {}", stdout(&o));
    }
    let o = run(d, &["audit", "package", &replay, "--out", "p3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(d.join("p1/manifest.json")).expect("m1"),
        std::fs::read(d.join("p3/manifest.json")).expect("m3"),
        "packaging the same run twice gives the same manifest"
    );
    // The base's package carries the review made in the history.
    let o = run(d, &["audit", "package", &base, "--out", "pb"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let reviews = std::fs::read_to_string(d.join("pb/reviews.jsonl")).expect("reviews");
    assert!(reviews.contains("\"reviewer\":\"ana\""), "{reviews}");
}

#[test]
fn record_carries_the_logs_beside_the_file_and_replay_refuses_other_cases() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let cases = example(d, "q017.yaml");
    let o = run(
        d,
        &[
            "audit",
            "review",
            s(&cases),
            "--claim",
            "C-017-4",
            "--support",
            "not_evaluable",
            "--reason",
            "falta la versión nueva de /refunds",
            "--reviewer",
            "luis",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(d.join("q017.yaml.reviews.jsonl").is_file());
    let id = record(d, &cases);
    let o = run(d, &["audit", "runs", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(
        list[0]["reviews"], 1,
        "the file's review log was carried into the run"
    );

    // P7 is not a replay of Q-017: exit 2, nothing recorded.
    let p7 = example(d, "p7.yaml");
    let o = run(d, &["audit", "replay", &id, s(&p7)]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("not a replay"), "{}", stderr(&o));
    let o = run(d, &["audit", "runs", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(list.as_array().expect("list").len(), 1);

    // Unknown runs and missing files are clear errors (exit 2).
    let o = run(d, &["audit", "check", "01ZZZZZZ"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no audit run matches"),
        "{}",
        stderr(&o)
    );
    let o = run(d, &["audit", "check", "missing.yaml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such case file"), "{}", stderr(&o));
    // A review of an unknown claim appends nothing.
    let o = run(
        d,
        &[
            "audit",
            "review",
            &id,
            "--claim",
            "C-404",
            "--support",
            "supported",
            "--reason",
            "x",
            "--reviewer",
            "r",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let o = run(d, &["audit", "runs", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(list[0]["reviews"], 1);
}

/// A judge that reads the prompt like a careful (if simple) reviewer: `supported` when every
/// content word of the claim appears in the cited passages, else `unsupported`; claim
/// C-017-3 gets an unreadable reply. Asked about an answer's relevance (`relevance/1`), it
/// says `addresses` when the answer shares a content word with the question, else
/// `off_topic`.
fn judge_reply(req: &tiny::Request) -> Reply {
    assert!(req.path.ends_with("/v1/chat/completions"), "{}", req.path);
    let msgs = req.body["messages"].as_array().expect("messages");
    assert_eq!(msgs[0]["role"], "system");
    let system = msgs[0]["content"].as_str().expect("system");
    if system.starts_with("You audit whether an answer addresses the question") {
        let user = msgs[1]["content"].as_str().expect("user").to_lowercase();
        let (question, answer) = user
            .strip_prefix("question:\n")
            .and_then(|u| u.split_once("\n\nanswer:\n"))
            .expect("question and answer");
        let shared = question
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() > 5)
            .any(|w| answer.contains(w));
        let verdict = if shared { "addresses" } else { "off_topic" };
        return Reply::json(
            200,
            serde_json::json!({
                "model": "tiny-judge",
                "choices": [{"message": {"role": "assistant", "content":
                    format!("{{\"verdict\": \"{verdict}\", \"confidence\": 0.6, \"reason\": \"shared words\"}}")}}],
            }),
        );
    }
    assert!(msgs[0]["content"]
        .as_str()
        .expect("system")
        .starts_with("You audit whether a claim is supported"));
    assert_eq!(req.body["temperature"], 0);
    assert_eq!(req.body["seed"], 7);
    let user = msgs[1]["content"].as_str().expect("user");
    let claim = user
        .strip_prefix("Claim:\n")
        .and_then(|u| u.split("\n\nCited passages:").next())
        .expect("claim");
    let passages = user
        .split("Cited passages:")
        .nth(1)
        .expect("passages")
        .to_lowercase();
    let content = if claim.contains("reembolso empieza") {
        "I think it is fine".to_string()
    } else {
        let words: Vec<String> = claim
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() > 4)
            .map(str::to_lowercase)
            .collect();
        let ok = words.iter().all(|w| passages.contains(w.as_str()));
        let verdict = if ok { "supported" } else { "unsupported" };
        format!("```json\n{{\"verdict\": \"{verdict}\", \"confidence\": 0.8, \"reason\": \"word check\"}}\n```")
    };
    Reply::json(
        200,
        serde_json::json!({
            "model": "tiny-judge",
            "choices": [{"message": {"role": "assistant", "content": content}}],
        }),
    )
}

#[test]
fn an_unreadable_judge_reply_is_an_error_on_one_line_not_a_stop() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let cases = example(d, "q017.yaml");
    let id = record(d, &cases);
    let server = Server::start(4, |_, req| judge_reply(req));
    let o = run(
        d,
        &[
            "audit",
            "suggest",
            &id,
            "--judge",
            &server.url,
            "--judge-model",
            "tiny-judge",
            "--seed",
            "7",
            "--time",
            "2026-11-30T13:00:00Z",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    // The line names the claim and what is wrong with the reply, and says what was kept.
    assert!(
        errors[0].starts_with("veredicto: error: the judge's reply for ")
            && errors[0].contains("C-017-3 could not be read: ")
            && errors[0].contains("3 suggestion(s) appended"),
        "{err}"
    );
}

#[test]
fn a_chat_judge_suggests_beside_the_reviewer_and_agreement_is_measured() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let cases = example(d, "q017.yaml");
    let id = record(d, &cases);
    // Three claims of Q-017 cite a passage (C-017-4 has no citation: skipped), and its one
    // answer is asked about relevance.
    let server = Server::start(4, |_, req| judge_reply(req));
    let o = run(
        d,
        &[
            "audit",
            "suggest",
            &id,
            "--judge",
            &server.url,
            "--judge-model",
            "tiny-judge",
            "--seed",
            "7",
            "--time",
            "2026-11-30T13:00:00Z",
        ],
    );
    // An unreadable reply is an error of the command (exit 2), not a stop of a gate; the
    // readable suggestions are shown and kept.
    assert_eq!(
        o.status.code(),
        Some(2),
        "one reply was unreadable: {}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("error: the judge's reply for Q-017 C-017-3 could not be read"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("C-017-3"), "{}", stderr(&o));
    assert_eq!(server.count(), 4);
    let out = stdout(&o);
    assert!(out.contains("C-017-1: suggested unsupported"), "{out}");
    assert!(out.contains("C-017-2: suggested"), "{out}");
    assert!(
        out.contains("Q-017 A-017: relevance suggested addresses (0.600); reviewer: pending"),
        "{out}"
    );

    // The sheet shows the suggestion beside the reviewer's verdict, which is unchanged.
    let o = run(d, &["audit", "sheet", &id, "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let r1 = &rows[0];
    assert_eq!(r1["claim_id"], "C-017-1");
    assert_eq!(r1["support"], "unsupported");
    assert_eq!(r1["suggested_support"], "unsupported");
    assert_eq!(r1["suggestion_score"], 0.8);
    let by = r1["suggestion_by"].as_str().expect("by");
    assert!(
        by.contains("tiny-judge @ ") && by.contains("judge/1 sha256:"),
        "{by}"
    );
    assert_eq!(
        rows[2]["suggested_support"], "",
        "no suggestion for the unreadable reply"
    );
    // The answer's relevance suggestion has its own row, beside no verdict (pending).
    let rel = &rows[4];
    assert_eq!(
        (
            &rel["row"],
            &rel["answer_id"],
            &rel["support"],
            &rel["suggested_support"]
        ),
        (
            &serde_json::json!("relevance"),
            &serde_json::json!("A-017"),
            &serde_json::json!("pending"),
            &serde_json::json!("addresses")
        )
    );
    assert!(rel["suggestion_by"]
        .as_str()
        .unwrap_or("")
        .contains("relevance/1 sha256:"));

    // Agreement between the suggestions and the verdicts in force (2 pairs).
    let o = run(d, &["audit", "agreement", &id, "--suggestions", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(a["agreement"]["pairs"], 2);

    // A judge that is down is a clear error and nothing is appended.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let o = run(
        d,
        &[
            "audit",
            "suggest",
            &id,
            "--judge",
            &format!("http://127.0.0.1:{port}"),
            "--judge-model",
            "m",
            "--timeout",
            "2",
            "--retries",
            "0",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("judge for claim C-017-1"),
        "{}",
        stderr(&o)
    );
    let o = run(d, &["audit", "runs", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(
        list[0]["suggestions"], 3,
        "2 claims' and 1 answer's suggestions"
    );
}

#[test]
fn a_relevance_verdict_on_a_recorded_run_is_kept_in_the_history_and_its_package() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path();
    let cases = example(d, "q017.yaml");
    let id = record(d, &cases);
    let o = run(
        d,
        &[
            "audit",
            "review",
            &id,
            "--answer",
            "A-017",
            "--relevance",
            "partly",
            "--reason",
            "answers the refund timing, not only whether final sale can be returned",
            "--reviewer",
            "ana",
            "--time",
            "2026-11-30T11:00:00Z",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("to audit run {id} in ")),
        "{}",
        stderr(&o)
    );
    assert!(
        !d.join("q017.yaml.reviews.jsonl").exists(),
        "a run's records go to the history"
    );
    let o = run(d, &["audit", "check", &id, "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "partly is no miss: {}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["answers"][0]["relevance"]["verdict"], "partly");
    assert_eq!(v["totals"]["relevance"]["partly"], 1);
    // Packaged from the history, hashed, and checked against the history on verify.
    let o = run(d, &["audit", "package", &id, "--out", "pkg"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let reviews = std::fs::read_to_string(d.join("pkg/reviews.jsonl")).expect("reviews");
    assert!(reviews.contains("\"relevance\":\"partly\""), "{reviews}");
    let o = run(d, &["audit", "verify", "pkg"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("reviews.jsonl = the run's first 1 of 1 review record(s)"),
        "{}",
        stdout(&o)
    );
}
