//! The short fuzz run of CI: every target for a fixed number of mutated inputs from a fixed
//! seed (so a failure reproduces exactly), the regression corpus replayed, and proptest's
//! structure-aware JSON lines through the JSONL readers.
//!
//! Times are not asserted here (speed limits are checked by the release campaign,
//! `cargo run --release -p veredicto-fuzz --bin fuzz`); only a hang (an input still running
//! after the watchdog's limit) ends the run.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use veredicto_fuzz::{targets, Budget, Campaign, Limits, Verdict};

/// Mutated inputs per target in CI (18 targets; about 20 s of CPU in a debug build).
const CI_EXECUTIONS: u64 = 250;
const CI_SEED: u64 = 20_251_130;

fn ci_limits() -> Limits {
    Limits {
        slow: Duration::MAX,
        hang: Duration::from_secs(60),
    }
}

fn work(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("veredicto-fuzz-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_target_survives_a_short_seeded_run() {
    let campaign = Campaign {
        seed: CI_SEED,
        budget: Budget::Executions(CI_EXECUTIONS),
        limits: ci_limits(),
        findings_dir: None,
    };
    let mut failures = Vec::new();
    for t in targets::TARGETS {
        let st = veredicto_fuzz::run_campaign(t, &campaign);
        eprintln!(
            "{:<17} {:>5} inputs  {} panics  {} errors without the file  slowest {:.1} ms ({} bytes)",
            st.target,
            st.executions,
            st.panics,
            st.unnamed,
            st.slowest.0.as_secs_f64() * 1e3,
            st.slowest.1
        );
        assert!(st.executions > CI_EXECUTIONS, "{}: ran too few", st.target);
        for f in st.findings.iter().filter(|f| f.kind != "slow") {
            failures.push(format!(
                "{}: {}: {} (input sha256 {})",
                t.name,
                f.kind,
                f.detail,
                &veredicto_fuzz::sha_hex(&f.input)[..16]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_seed_is_accepted() {
    // The mutants start from valid files: if a seed is refused, the seeds (or a parser) are wrong.
    let dir = work("seeds");
    for t in targets::TARGETS {
        for (i, seed) in targets::seeds(t).iter().enumerate() {
            let out = veredicto_fuzz::check(t, seed, &dir);
            assert_eq!(out.verdict, Verdict::Ok, "{} seed {i}", t.name);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// `corpus/PENDING`: files (relative to `corpus/`) whose defect is being fixed elsewhere,
/// one per line with the reason after `#`.
fn pending() -> Vec<String> {
    std::fs::read_to_string(corpus_dir().join("PENDING"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn replay_all(want_pending: bool) -> Vec<String> {
    let pending = pending();
    let dir = work(if want_pending { "pending" } else { "replay" });
    let mut problems = Vec::new();
    let mut count = 0;
    for t in targets::TARGETS {
        let tdir = corpus_dir().join(t.name);
        for (path, out) in veredicto_fuzz::replay(&tdir, t, &dir) {
            let rel = path
                .strip_prefix(corpus_dir())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if pending.contains(&rel) != want_pending {
                continue;
            }
            count += 1;
            if out.verdict.is_failure() || out.elapsed > ci_limits().hang {
                problems.push(format!("{rel}: {:?} in {:?}", out.verdict, out.elapsed));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(want_pending || count > 0, "the regression corpus is empty");
    problems
}

#[test]
fn regression_corpus_replays_clean() {
    let problems = replay_all(false);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The corpus files of defects fixed on other branches; run with `--ignored` once merged,
/// then remove them from `corpus/PENDING`.
#[test]
#[ignore = "defects listed in corpus/PENDING are fixed on other branches"]
fn pending_corpus_replays_clean() {
    let problems = replay_all(true);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn pending_list_names_existing_files() {
    for rel in pending() {
        assert!(corpus_dir().join(&rel).is_file(), "corpus/PENDING: {rel}");
    }
}

/// JSON values built from a target's own field names, of every type (structure-aware).
fn json_value(words: &'static [&'static str]) -> impl Strategy<Value = serde_json::Value> {
    let word = prop::sample::select(words).prop_map(|w| w.trim_matches('"').to_string());
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|i| serde_json::json!(i)),
        any::<f64>().prop_map(|f| serde_json::json!(f)),
        word.clone().prop_map(serde_json::Value::String),
        ".{0,40}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(
                prop::sample::select(words).prop_map(|w| w.trim_matches('"').to_string()),
                inner,
                0..6
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn jsonl_lines(words: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    let key = prop::sample::select(words).prop_map(|w| w.trim_matches('"').to_string());
    prop::collection::vec(
        prop::collection::btree_map(key, json_value(words), 0..8),
        1..6,
    )
    .prop_map(|lines| {
        let mut out = Vec::new();
        for l in lines {
            let obj: serde_json::Map<String, serde_json::Value> = l.into_iter().collect();
            out.extend_from_slice(serde_json::Value::Object(obj).to_string().as_bytes());
            out.push(b'\n');
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn generated_jsonl_is_read_or_refused_cleanly(
        input in jsonl_lines(&[
            "id", "_id", "query", "expected", "top_k", "domain", "tags", "gold", "query_vector",
            "text", "title", "doc_id", "labels", "facets", "valid_from", "valid_to",
            "vector", "query_id", "results", "score", "note", "case", "answer", "claim",
            "support", "reason", "reviewer", "time", "diagnosis", "supported", "suggestion",
            "label", "probabilities", "confidence",
        ]),
    ) {
        let dir = work("prop");
        for name in ["golden-jsonl", "corpus", "run-jsonl", "notes", "review-log", "suggestion-log"] {
            let t = targets::target(name).unwrap();
            let out = veredicto_fuzz::check(t, &input, &dir);
            prop_assert!(!out.verdict.is_failure(), "{name}: {:?}", out.verdict);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
