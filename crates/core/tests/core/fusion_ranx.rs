//! The fusion methods against ranx's `fuse` (PyPI), the oracle: the same runs fused by both,
//! every fused score compared.
//!
//! The Python interpreter is `$VEREDICTO_RANX_PYTHON`, else `python3`; `scripts/test.sh`
//! installs ranx into a virtual environment and sets the variable. Without ranx the test
//! says so on standard error and passes (nothing to compare against).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use veredicto_core::fusion::Fusion;

/// A small deterministic generator (64-bit LCG, the high bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 31) as f64
    }
}

type Arm = Vec<(String, Option<f64>)>;
/// One comparison: the arms' runs and the fusions (ours, ranx's) to apply to them.
type Job = (Vec<BTreeMap<String, Arm>>, Vec<(String, Value)>);

/// `arms` runs of `queries` queries: each query's list of 1 to 30 documents out of 40, in
/// strictly descending score order (no ties: ranx re-sorts by score). Arm 1's scores are
/// BM25-like (0 to 25), arm 2's cosines (−1 to 1), arm 3's raw log-probabilities (−40 to 0).
fn runs(seed: u64, arms: usize, queries: usize) -> Vec<BTreeMap<String, Arm>> {
    let mut g = Lcg(seed);
    let ranges = [(0.0, 25.0), (-1.0, 1.0), (-40.0, 0.0)];
    (0..arms)
        .map(|a| {
            (0..queries)
                .map(|q| {
                    let n = 1 + g.below(30) as usize;
                    let mut docs: Vec<u64> = (0..40).collect();
                    for i in 0..n {
                        let j = i + g.below(40 - i as u64) as usize;
                        docs.swap(i, j);
                    }
                    let (lo, hi) = ranges[a % 3];
                    let mut scores: Vec<f64> = (0..n).map(|_| lo + (hi - lo) * g.unit()).collect();
                    scores.sort_by(|x, y| y.total_cmp(x));
                    scores.dedup();
                    let list = docs
                        .iter()
                        .zip(&scores)
                        .map(|(d, s)| (format!("d{d}"), Some(*s)))
                        .collect();
                    (format!("q{q}"), list)
                })
                .collect()
        })
        .collect()
}

/// Our fusion text and ranx's (method, norm, params) for it.
fn configs(arms: usize) -> Vec<(String, Value)> {
    let mut out = vec![
        (
            "rrf?k=60".to_string(),
            json!({"method": "rrf", "norm": null, "params": {"k": 60}}),
        ),
        (
            "rrf?k=5".to_string(),
            json!({"method": "rrf", "norm": null, "params": {"k": 5}}),
        ),
    ];
    let weights: Vec<f64> = [0.7, 0.3, 0.45][..arms].to_vec();
    let w_text = weights
        .iter()
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join(",");
    for (ours, theirs) in [
        ("none", Value::Null),
        ("min-max", json!("min-max")),
        ("zscore", json!("zmuv")),
        ("rank", json!("rank")),
    ] {
        for (method, ranx_method) in [("combsum", "sum"), ("combmnz", "mnz"), ("combmax", "max")] {
            out.push((
                format!("{method}?norm={ours}"),
                json!({"method": ranx_method, "norm": theirs, "params": {}}),
            ));
        }
        out.push((
            format!("wsum?w={w_text}&norm={ours}"),
            json!({"method": "wsum", "norm": theirs, "params": {"weights": weights}}),
        ));
    }
    out
}

fn python() -> String {
    std::env::var("VEREDICTO_RANX_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// The runs as ranx reads them: `{query: {doc: score}}`.
fn runs_json(runs: &[BTreeMap<String, Arm>]) -> Vec<Value> {
    runs.iter()
        .map(|r| {
            Value::Object(
                r.iter()
                    .map(|(q, list)| {
                        let docs = list
                            .iter()
                            .map(|(d, s)| (d.clone(), json!(s.unwrap())))
                            .collect();
                        (q.clone(), Value::Object(docs))
                    })
                    .collect(),
            )
        })
        .collect()
}

/// ranx's answer to the jobs, or `None` when ranx cannot be imported (one Python process:
/// numba compiles ranx's functions once).
fn ranx_fuse(jobs: &[Job]) -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ranx_fuse.py");
    let input = json!({
        "jobs": jobs
            .iter()
            .map(|(runs, configs)| json!({
                "runs": runs_json(runs),
                "configs": configs.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>(),
            }))
            .collect::<Vec<_>>(),
    });
    let mut child = match Command::new(python())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "SKIPPED fusion_ranx: cannot start {} ({e}); set VEREDICTO_RANX_PYTHON to a Python with ranx (scripts/test.sh does)",
                python()
            );
            return None;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.code() == Some(3) {
        eprintln!(
            "SKIPPED fusion_ranx: {} (set VEREDICTO_RANX_PYTHON to a Python with ranx; scripts/test.sh installs one)",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    assert!(
        out.status.success(),
        "ranx_fuse.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// Fuses generated runs of two and of three arms with every method and normalisation, here
/// and in ranx, and compares every fused score: the same documents per query, each score
/// within 1e-9 (relative above 1) of ranx's, and the order by score, then ID.
#[test]
fn fused_scores_equal_ranx_fuse_for_every_method_and_normalisation() {
    let queries = 25;
    let jobs: Vec<_> = [(7, 2), (11, 3)]
        .iter()
        .map(|&(seed, arms)| (runs(seed, arms, queries), configs(arms)))
        .collect();
    let Some(theirs) = ranx_fuse(&jobs) else {
        return;
    };
    for (j, (runs, configs)) in jobs.iter().enumerate() {
        let mut max_diff = 0.0f64;
        let mut compared = 0usize;
        for (c, (text, _)) in configs.iter().enumerate() {
            let fusion: Fusion = text.parse().unwrap();
            let fused_ranx = &theirs["jobs"][j]["fused"][c];
            for q in 0..queries {
                let q = format!("q{q}");
                let lists: Vec<Arm> = runs.iter().map(|r| r[&q].clone()).collect();
                let ours = fusion.fuse(&lists).unwrap();
                let want = fused_ranx[&q].as_object().unwrap();
                assert_eq!(ours.len(), want.len(), "{text} {q}: documents fused");
                for (i, d) in ours.iter().enumerate() {
                    let w = want
                        .get(&d.id)
                        .unwrap_or_else(|| panic!("{text} {q}: ranx has no {}", d.id))
                        .as_f64()
                        .unwrap();
                    let diff = (d.score - w).abs();
                    max_diff = max_diff.max(diff);
                    compared += 1;
                    assert!(
                        diff <= 1e-9 * w.abs().max(1.0),
                        "{text} {q} {}: ours {} ranx {w}",
                        d.id,
                        d.score
                    );
                    if i > 0 {
                        let prev = &ours[i - 1];
                        assert!(
                            prev.score > d.score || (prev.score == d.score && prev.id < d.id),
                            "{text} {q}: order at {i}"
                        );
                    }
                }
            }
        }
        eprintln!(
            "fusion_ranx: {} arms, {} fusions x {queries} queries, {compared} fused scores compared with ranx {}, max abs difference {max_diff:e}",
            runs.len(),
            configs.len(),
            theirs["ranx"]
        );
    }
}
