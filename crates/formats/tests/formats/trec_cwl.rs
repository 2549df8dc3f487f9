//! A second peer: per-query AP, RR, P@k and RBP from ir_measures' cwl fixture
//! (tests/data/ir_measures-cwl, values produced by cwl_eval), within 1e-4.
//!
//! Reads the files with the public readers, builds each query's judged ranking and computes
//! the measures from their ir_measures names through the registry.

use std::path::PathBuf;
use veredicto_core::measure::Measure;
use veredicto_core::trec::{EvalOptions, QueryQrels, ResRels};
use veredicto_formats::trec::{read_qrels, read_run};

fn dir() -> PathBuf {
    let data = match std::env::var_os("VEREDICTO_TEST_DATA") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data"),
    };
    let dir = data.join("ir_measures-cwl");
    assert!(
        dir.is_dir(),
        "cwl fixture not found at {} (set VEREDICTO_TEST_DATA)",
        dir.display()
    );
    dir
}

#[test]
fn cwl_eval_values_agree() {
    let dir = dir();
    let qrels = read_qrels(&dir.join("cwl.qrels")).expect("qrels");
    let run = read_run(&dir.join("cwl.run")).expect("run");
    let expected = std::fs::read_to_string(dir.join("expected_cwl_eval.tsv")).expect("tsv");
    let mut checked = 0;
    for line in expected.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (name, qid, want) = (cols[0], cols[1], cols[2]);
        // ir_measures' binary-relevance parameter is implied for RBP here.
        let name = if name == "RBP(p=0.9, rel=1)" {
            "RBP(p=0.9)"
        } else {
            name
        };
        let Ok(measure) = name.parse::<Measure>() else {
            continue; // cwl_eval measures veredicto does not implement (INST, BPM, ...)
        };
        let want: f64 = want.parse().expect("expected value");
        let judged = qrels.query(qid).expect("qrels query");
        let qq = QueryQrels::new(judged.judgments.iter().map(|j| (j.docno.as_bytes(), j.rel)))
            .expect("judgements");
        let ranking = &run.query(qid).expect("run query").docs;
        let rr = ResRels::from_ranking(
            ranking,
            |d| d.docno.as_bytes(),
            &qq,
            &EvalOptions::default(),
        )
        .expect("ranking");
        let got = measure.compute(&rr);
        assert!(
            (got - want).abs() <= 1e-4,
            "{measure} for {qid}: got {got:.6}, cwl_eval {want}"
        );
        checked += 1;
    }
    // AP, RR, P@1, P@5, P@10, P@20 and RBP for three queries.
    assert_eq!(checked, 21);
}
