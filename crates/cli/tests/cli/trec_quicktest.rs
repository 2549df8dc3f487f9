//! `veredicto trec` against trec_eval's own quicktest: the qrels, runs and expected outputs of
//! trec_eval 10.0's `make quicktest` (tests/data/trec_eval-tests), compared byte for byte.
//!
//! The data folder is `<workspace>/tests/data/trec_eval-tests/test`, or
//! `$VEREDICTO_TEST_DATA/trec_eval-tests/test` when `VEREDICTO_TEST_DATA` is set.

use std::path::PathBuf;
use std::process::{Command, Output};

fn test_data() -> PathBuf {
    match std::env::var_os("VEREDICTO_TEST_DATA") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data"),
    }
}

fn data() -> PathBuf {
    let dir = test_data().join("trec_eval-tests/test");
    assert!(
        dir.is_dir(),
        "trec_eval test data not found at {} (set VEREDICTO_TEST_DATA)",
        dir.display()
    );
    dir
}

fn veredicto(args: &[&str]) -> Output {
    let dir = data();
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix("test/") {
            Some(file) => dir.join(file).to_string_lossy().into_owned(),
            None => a.to_string(),
        })
        .collect();
    Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .arg("trec")
        .args(&args)
        .output()
        .expect("run veredicto")
}

/// Runs `veredicto trec ARGS` and compares its output with `expected` line for line.
fn check(expected: &str, args: &[&str]) {
    let out = veredicto(args);
    assert!(
        out.status.success(),
        "veredicto trec {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read(data().join(expected)).expect("read expected output");
    if out.stdout != want {
        let got = String::from_utf8_lossy(&out.stdout);
        let want = String::from_utf8_lossy(&want);
        let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            assert_eq!(a, b, "{expected}: line {} differs", i + 1);
        }
        assert_eq!(g.len(), w.len(), "{expected}: number of lines differs");
        panic!("{expected}: output differs (line ends?)");
    }
}

#[test]
fn official_measures() {
    check("out.test", &["test/qrels.test", "test/results.test"]);
}

#[test]
fn qrels_with_comments_and_hash_in_docno() {
    check(
        "out.test",
        &["test/qrels.test.with-comments", "test/results.test"],
    );
}

#[test]
fn ids_with_hash_signs() {
    check(
        "out.comment.test",
        &["test/qrels.comment.test", "test/results.comment.test"],
    );
}

#[test]
fn all_trec() {
    check(
        "out.test.a",
        &["-m", "all_trec", "test/qrels.test", "test/results.test"],
    );
}

#[test]
fn all_trec_per_query() {
    check(
        "out.test.aq",
        &[
            "-m",
            "all_trec",
            "-q",
            "test/qrels.test",
            "test/results.test",
        ],
    );
}

#[test]
fn complete_rel_info() {
    check(
        "out.test.aqc",
        &[
            "-m",
            "all_trec",
            "-q",
            "-c",
            "test/qrels.test",
            "test/results.trunc",
        ],
    );
}

#[test]
fn complete_rel_info_max_retrieved() {
    check(
        "out.test.aqcM",
        &[
            "-m",
            "all_trec",
            "-q",
            "-c",
            "-M100",
            "test/qrels.test",
            "test/results.trunc",
        ],
    );
}

#[test]
fn relevance_level_and_relstring() {
    check(
        "out.test.aql",
        &[
            "-m",
            "all_trec",
            "-mrelstring.20",
            "-q",
            "-l2",
            "test/qrels.rel_level",
            "test/results.test",
        ],
    );
}

#[test]
fn measure_parameters() {
    check(
        "out.test.meas_params",
        &[
            "-q",
            "-miprec_at_recall..10,.20,.25,.75,.50",
            "-m",
            "P.5,7,3",
            "-m",
            "recall.20,2000",
            "-m",
            "Rprec_mult.5.0,0.2,0.35",
            "-mutility.2,-1,0,0",
            "-m",
            "11pt_avg..25,.5,.75",
            "-mndcg.1=3,2=9,4=4.5",
            "-mndcg_cut.10,20,23.4",
            "-msuccess.2,5,20",
            "test/qrels.test",
            "test/results.test",
        ],
    );
}

#[test]
fn zscores() {
    check(
        "out.test.aqZ",
        &[
            "-q",
            "-m",
            "all_trec",
            "-Z",
            "test/zscores_file",
            "test/qrels.test",
            "test/results.test",
        ],
    );
}

#[test]
fn output_does_not_depend_on_thread_count() {
    let run = |threads: &str| {
        let dir = data();
        Command::new(env!("CARGO_BIN_EXE_veredicto"))
            .env("RAYON_NUM_THREADS", threads)
            .args(["trec", "-q", "-m", "all_trec"])
            .arg(dir.join("qrels.comment.test"))
            .arg(dir.join("results.comment.test"))
            .output()
            .expect("run veredicto")
    };
    let one = run("1");
    assert!(one.status.success());
    assert_eq!(one.stdout, run("3").stdout);
}

#[test]
fn unknown_measure_exits_2_and_lists_measures() {
    let out = veredicto(&["-m", "nope", "test/qrels.test", "test/results.test"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown measure 'nope'"), "{err}");
    assert!(err.contains("ndcg_cut") && err.contains("nDCG@k"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn canonical_names_work_with_m() {
    let a = veredicto(&[
        "-m",
        "nDCG@10",
        "-m",
        "P@5",
        "test/qrels.test",
        "test/results.test",
    ]);
    let b = veredicto(&[
        "-m",
        "ndcg_cut.10",
        "-m",
        "P.5",
        "test/qrels.test",
        "test/results.test",
    ]);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn list_comes_from_the_registry() {
    let out = Command::new(env!("CARGO_BIN_EXE_veredicto"))
        .args(["trec", "--list"])
        .output()
        .expect("run veredicto");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for spec in veredicto_core::measure::registry() {
        assert!(text.contains(spec.syntax), "--list lacks {}", spec.syntax);
        if let Some(t) = spec.trec {
            assert!(text.contains(t), "--list lacks {t}");
        }
    }
}

#[test]
fn bad_run_line_names_file_line_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run.txt");
    std::fs::write(&run, "301 Q0 a 1 1.5 r\n301 Q0 b 2 abc r\n").expect("write");
    let out = veredicto(&["test/qrels.test", run.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("run.txt:2: field `score`: not a number: 'abc'"),
        "{err}"
    );
}

#[test]
fn duplicate_document_in_a_query_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run.txt");
    std::fs::write(&run, "301 Q0 a 1 1.5 r\n301 Q0 b 2 1 r\n301 Q0 a 3 0.5 r\n").expect("write");
    let out = veredicto(&["test/qrels.test", run.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'a' more than once (lines 1, 3)"), "{err}");
    // trec_eval only checks the documents kept by -M.
    let out = veredicto(&["-M2", "test/qrels.test", run.to_str().expect("utf-8 path")]);
    assert!(out.status.success());
}
