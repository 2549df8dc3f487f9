//! `tune`: a fusion's parameters swept over a grid on a training part of the golden set and
//! judged on the held-out part (or k folds), with the paired significance of the chosen
//! setting against the current one and against the best single arm. Each arm is asked once
//! per case; every setting fuses those answers again (the selection and the statistics are
//! [`veredicto_core::tune`]'s).

use std::collections::BTreeMap;
use std::path::Path;

use veredicto_core::case::Case;
use veredicto_core::compare::stats::sign_flip_test;
use veredicto_core::exam::{evaluate, ExamInput};
use veredicto_core::fusion::Fusion;
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};
use veredicto_core::tune::{
    assign, held_out, mean_over, settings, GridParam, HeldOutComparison, Objective, SettingScore,
    Split, TuneReport,
};
use veredicto_embed::Embedder;
use veredicto_retrieve::{pass, Retriever};

use crate::{Events, Result};

/// Sign patterns drawn when a test has more than 20 non-zero differences.
const PERMUTATIONS: usize = 10_000;

/// One tune.
pub struct TuneRequest<'a> {
    /// The fusion as given after `fusion:` (`rrf?k=60`): the current setting, and the base
    /// the grid's values replace parameters of.
    pub base: &'a str,
    /// The arms, opened, in order.
    pub arms: &'a [Box<dyn Retriever>],
    /// The query embedder, when an arm reads vectors and cases lack them.
    pub embedder: Option<&'a dyn Embedder>,
    /// The golden cases.
    pub cases: &'a [Case],
    /// The policy (each case's K, the measures).
    pub policy: &'a Policy,
    /// The grid.
    pub grid: &'a [GridParam],
    /// Holdout or folds.
    pub split: Split,
    /// The seed of the split and of the tests.
    pub seed: u64,
    /// The per-case score maximised.
    pub objective: Objective,
    /// Depth, concurrency and the answer rules of each arm's pass.
    pub pass: pass::Settings<'a>,
    /// Progress and notes.
    pub events: Events<'a>,
}

/// Runs the tune.
pub fn tune(r: TuneRequest<'_>) -> Result<TuneReport> {
    let current: Fusion = r
        .base
        .parse()
        .map_err(|e| crate::Error::msg(format!("fusion:{}: {e}", r.base)))?;
    current
        .check_arms(r.arms.len())
        .map_err(|e| crate::Error::msg(format!("fusion:{}: {e} (--arm URI)", r.base)))?;
    let grid = settings(r.base, r.grid, r.arms.len()).map_err(crate::Error::msg)?;
    let n = r.cases.len();
    if n < 4 {
        crate::bail!("tune needs at least 4 cases to hold some out, the golden set has {n}");
    }
    if let Split::Folds(k) = r.split {
        if k < 2 || k > n {
            crate::bail!("--folds {k}: expected between 2 and the number of cases ({n})");
        }
    }
    // Each arm answers every case once.
    let k_of = |c: &Case| veredicto_core::exam::stages::k_of(r.policy, c);
    let mut runs = Vec::with_capacity(r.arms.len());
    for (i, arm) in r.arms.iter().enumerate() {
        r.events.note(format!(
            "tune: arm {} {}: {} cases",
            i + 1,
            arm.describe(),
            n
        ));
        let retrieval = pass::retrieve(
            arm.as_ref(),
            r.embedder,
            None,
            r.cases,
            &k_of,
            &pass::Settings {
                latency_sample: 0,
                ..r.pass
            },
        )?;
        if let Some((case, error)) = retrieval.failures.iter().next() {
            crate::bail!(
                "arm {} {} failed for {} case(s) (first `{}`: {error}): a tune needs every arm's answer to every case",
                i + 1,
                arm.describe(),
                retrieval.failures.len(),
                veredicto_core::redact::short(case)
            );
        }
        runs.push(retrieval.run);
    }
    let notes = BTreeMap::new();
    let score = |run: &Run| -> Vec<f64> {
        let report = evaluate(ExamInput {
            cases: r.cases,
            run,
            corpus: None,
            policy: r.policy,
            notes: &notes,
            as_of: None,
        });
        report.cases.iter().map(|c| r.objective.of(c)).collect()
    };
    let depth = r.pass.depth;
    let fused_run = |fusion: &Fusion| -> Result<Run> {
        let mut run = Run {
            name: format!("fusion:{fusion}"),
            ..Run::default()
        };
        for c in r.cases {
            let lists: Vec<Vec<(&str, Option<f64>)>> = runs
                .iter()
                .map(|arm| {
                    arm.queries
                        .get(&c.id)
                        .map(|l| {
                            l.iter()
                                .take(depth)
                                .map(|h| (h.id.as_str(), h.score))
                                .collect()
                        })
                        .unwrap_or_default()
                })
                .collect();
            let fused = fusion.fuse(&lists).map_err(|e| {
                crate::Error::msg(format!(
                    "fusion:{fusion}: case `{}`: {e}",
                    veredicto_core::redact::short(&c.id)
                ))
            })?;
            run.queries.insert(
                c.id.clone(),
                fused
                    .into_iter()
                    .take(depth)
                    .map(|d| Retrieved {
                        id: d.id,
                        score: Some(d.score),
                    })
                    .collect(),
            );
        }
        Ok(run)
    };
    let grid_scores: Vec<Vec<f64>> = grid
        .iter()
        .map(|f| fused_run(f).map(|run| score(&run)))
        .collect::<Result<_>>()?;
    let current_scores = score(&fused_run(&current)?);
    let arm_scores: Vec<Vec<f64>> = runs.iter().map(score).collect();
    let arm_names: Vec<String> = r
        .arms
        .iter()
        .enumerate()
        .map(|(i, a)| format!("arm {} {}", i + 1, a.describe()))
        .collect();

    let folds = assign(n, r.split, r.seed);
    let fold_count = match r.split {
        Split::Holdout(_) => 1,
        Split::Folds(k) => k,
    };
    let (tuned, chosen_per_fold) = held_out(&grid_scores, &folds, r.split);
    let (best_arm_scores, arm_per_fold) = held_out(&arm_scores, &folds, r.split);
    let held: Vec<usize> = (0..n).filter(|&i| tuned[i].is_some()).collect();
    let value = |v: &[Option<f64>], i: usize| v[i].unwrap_or(0.0);
    let held_mean =
        |v: &dyn Fn(usize) -> f64| held.iter().map(|&i| v(i)).sum::<f64>() / held.len() as f64;
    let tuned_mean = held_mean(&|i| value(&tuned, i));
    // The training part's mean of a per-fold choice, averaged over folds.
    let training_mean = |per_fold: Vec<&[f64]>| {
        per_fold
            .iter()
            .enumerate()
            .filter_map(|(f, scores)| mean_over(scores, &|i| folds[i] != Some(f)))
            .sum::<f64>()
            / fold_count as f64
    };
    let tuned_training = training_mean(
        chosen_per_fold
            .iter()
            .map(|&c| grid_scores[c].as_slice())
            .collect(),
    );
    let compare =
        |against: String, other: &dyn Fn(usize) -> f64, other_training: f64, label: &str| {
            let diffs: Vec<f64> = held.iter().map(|&i| value(&tuned, i) - other(i)).collect();
            let mean = held_mean(other);
            HeldOutComparison {
                against,
                mean,
                delta: tuned_mean - mean,
                delta_training: tuned_training - other_training,
                test: sign_flip_test(
                    &diffs,
                    20,
                    PERMUTATIONS,
                    veredicto_core::compare::rng::derive_seed(r.seed, label),
                ),
            }
        };
    let current_training = training_mean(vec![current_scores.as_slice(); fold_count]);
    let against_current = compare(
        format!("current {current}"),
        &|i| current_scores[i],
        current_training,
        "tune-current",
    );
    let best_arm = arm_per_fold.first().copied().unwrap_or(0);
    let arm_label = if arm_per_fold.iter().all(|&a| a == best_arm) {
        format!("best single arm ({})", arm_names[best_arm])
    } else {
        "best single arm (chosen per fold)".to_owned()
    };
    let against_arm = compare(
        arm_label,
        &|i| value(&best_arm_scores, i),
        training_mean(
            arm_per_fold
                .iter()
                .map(|&a| arm_scores[a].as_slice())
                .collect(),
        ),
        "tune-arm",
    );
    let chosen = match r.split {
        Split::Holdout(_) => chosen_per_fold[0],
        Split::Folds(_) => veredicto_core::tune::best(&grid_scores, &|_| true),
    };
    let training_only = against_current.delta_training > 0.0 && against_current.delta <= 0.0;
    Ok(TuneReport {
        current: current.to_string(),
        arms: r.arms.iter().map(|a| a.describe()).collect(),
        cases: n,
        objective: r.objective,
        split: match r.split {
            Split::Holdout(_) => "holdout".into(),
            Split::Folds(_) => "folds".into(),
        },
        split_value: match r.split {
            Split::Holdout(f) => f,
            Split::Folds(k) => k as f64,
        },
        held_out_cases: held.len(),
        seed: r.seed,
        settings: grid
            .iter()
            .zip(&grid_scores)
            .map(|(f, s)| SettingScore {
                fusion: f.to_string(),
                mean_all: s.iter().sum::<f64>() / n as f64,
                mean_training: training_mean(vec![s.as_slice(); fold_count]),
            })
            .collect(),
        chosen: grid[chosen].to_string(),
        chosen_per_fold: match r.split {
            Split::Holdout(_) => Vec::new(),
            Split::Folds(_) => chosen_per_fold
                .iter()
                .map(|&c| grid[c].to_string())
                .collect(),
        },
        held_out_mean: tuned_mean,
        comparisons: vec![against_current, against_arm],
        training_only,
    })
}

/// Writes `fusion = "…"` into the policy file `path`: replaces the key when the file has
/// it, else adds it before the first table; creates the file when it does not exist. The
/// result is read back as a policy (an error names the file, line and field).
pub fn write_policy(path: &Path, fusion: &str) -> Result<()> {
    // A canonical fusion holds no quote or backslash: a JSON string is a TOML one.
    let line = format!("fusion = {}", serde_json::Value::String(fusion.to_owned()));
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => crate::bail!("reading {}: {e}", path.display()),
    };
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let first_table = lines
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .unwrap_or(lines.len());
    let existing = lines[..first_table].iter().position(|l| {
        let t = l.trim_start();
        t.strip_prefix("fusion")
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    });
    let comment = "# The declared fusion stage (written by `veredicto tune --write-policy`): an exam of a fusion with other parameters is refused.".to_owned();
    match existing {
        Some(i) => lines[i] = line,
        None => {
            lines.insert(first_table, line);
            lines.insert(first_table, comment);
            if first_table < lines.len() - 2 {
                lines.insert(first_table + 2, String::new());
            }
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    veredicto_formats::policy::PolicyFile::parse(path, &out)?;
    crate::files::write_atomic(path, out.as_bytes())
        .map_err(|e| crate::Error::msg(format!("writing {}: {e}", path.display())))
}
