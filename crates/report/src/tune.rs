//! `veredicto tune`: the sweep, the held-out report and its significance, as text or JSON.

use veredicto_core::tune::TuneReport;

/// The tune in words: the split, every setting's training mean, the chosen setting, the
/// held-out comparison with the current setting and the best single arm, and a warning
/// when the chosen setting wins on the training part only.
pub fn human(t: &TuneReport) -> String {
    let mut s = String::new();
    let split = if t.split == "folds" {
        format!("{} folds (each case held out once)", t.split_value)
    } else {
        format!(
            "{} of {} cases held out ({:.0}%)",
            t.held_out_cases,
            t.cases,
            t.split_value * 100.0
        )
    };
    s.push_str(&format!(
        "tune fusion:{} over {} arms · {} cases · objective {} · {split} · seed {}\n",
        t.current,
        t.arms.len(),
        t.cases,
        t.objective.name(),
        t.seed
    ));
    for (i, a) in t.arms.iter().enumerate() {
        s.push_str(&format!("  arm {} {a}\n", i + 1));
    }
    s.push_str(&format!(
        "{} settings, training mean (mean over all cases):\n",
        t.settings.len()
    ));
    for g in &t.settings {
        let mark = if g.fusion == t.chosen {
            "  <- chosen"
        } else {
            ""
        };
        s.push_str(&format!(
            "  {:<32} {:.4} ({:.4}){mark}\n",
            g.fusion, g.mean_training, g.mean_all
        ));
    }
    if !t.chosen_per_fold.is_empty() {
        s.push_str(&format!(
            "chosen without each fold: {}\n",
            t.chosen_per_fold.join(", ")
        ));
    }
    s.push_str(&format!(
        "chosen: {}\nheld-out {}: tuned {:.4}\n",
        t.chosen,
        t.objective.name(),
        t.held_out_mean
    ));
    for c in &t.comparisons {
        s.push_str(&format!(
            "  vs {}: {:.4} · difference {:+.4} (training {:+.4}) · p = {:.4}{}\n",
            c.against,
            c.mean,
            c.delta,
            c.delta_training,
            c.test.p_value,
            if c.test.p_value < 0.05 {
                " (significant at 0.05)"
            } else {
                " (not significant)"
            }
        ));
    }
    if t.training_only {
        s.push_str(&format!(
            "warning: the chosen setting {} beats the current {} on the training part only: on the held-out cases it does not, so keep the current setting\n",
            t.chosen, t.current
        ));
    }
    s
}

/// The tune as pretty JSON.
pub fn json(t: &TuneReport) -> String {
    let mut s = serde_json::to_string_pretty(t).unwrap_or_default();
    s.push('\n');
    s
}
