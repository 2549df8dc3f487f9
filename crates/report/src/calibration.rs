//! `veredicto calibrate`'s output: the distribution it used (terminal text or JSON) and the
//! commented policy file it writes.

use veredicto_core::exam::calibrate::{Calibration, Uninformative};
use veredicto_core::exam::Verdict;
use veredicto_core::policy::{Field, Policy};
use veredicto_core::redact::escape_control;

/// The suite's verdict before and after calibration (the CLI re-examines the same results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdicts {
    pub before: Verdict,
    pub after: Verdict,
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Accept => "ACCEPT",
        Verdict::Stop => "STOP",
    }
}

fn frac(v: f64) -> String {
    format!("{v:.2}")
}

/// The lines that say what the ceiling was computed from (shared by the terminal text and
/// the policy file's comments, which prefix them with `# `).
fn explanation(c: &Calibration) -> Vec<String> {
    let d = &c.noise.overall;
    let mut out = vec![format!(
        "healthy cases: {} of {} (recall 1: every expected chunk inside the top-K, noise defined); left out: {} missing an expected chunk, {} with noise undefined",
        d.healthy_cases,
        c.cases,
        c.cases - d.healthy_cases - d.undefined,
        d.undefined
    )];
    let k = d.k.unwrap_or(0);
    out.push(format!(
        "noise (results below the worst expected chunk) among the healthy cases, most at K = {k}:"
    ));
    let widest = d.distribution.values().copied().max().unwrap_or(1);
    for (noise, cases) in &d.distribution {
        let bar = "#".repeat((cases * 30).div_ceil(widest));
        out.push(format!("  {noise:>3}  {bar} {cases}"));
    }
    out.push(format!(
        "90th percentile of noise / K {} + one result in {k} ({}), rounded up to 0.05 = noise_ceiling {} (was {})",
        frac(d.p90_fraction.unwrap_or(0.0)),
        frac(1.0 / f64::from(k.max(1))),
        frac(c.noise_ceiling),
        frac(c.previous_noise_ceiling)
    ));
    if !c.reliable {
        out.push(format!(
            "provisional: {} healthy cases (20 make it reliable); calibrate again as the golden set grows",
            d.healthy_cases
        ));
    }
    for dc in &c.domains {
        let name = escape_control(&veredicto_core::redact::short(&dc.domain));
        out.push(match dc.calibrated {
            Some(v) => format!(
                "domain {name}: noise_ceiling {} -> {} (from its own healthy cases)",
                frac(dc.previous),
                frac(v)
            ),
            None => format!(
                "domain {name}: its noise_ceiling {} is removed (fewer than {} healthy cases in it; the global ceiling applies)",
                frac(dc.previous),
                c.settings.min_healthy
            ),
        });
    }
    if c.suggestions.is_empty() {
        out.push("top_k: every case's expected list can fill its K under this ceiling".to_owned());
    } else {
        out.push(format!(
            "top_k suggestions ({} case(s) whose K exceeds what their expected list can fill; set \"top_k\" on the case in the golden set):",
            c.suggestions.len()
        ));
        for s in &c.suggestions {
            let chunks = if s.expected == 1 {
                "1 expected chunk".to_owned()
            } else {
                format!("{} expected chunks", s.expected)
            };
            out.push(format!(
                "  {}: K = {}, {chunks}: a perfect ranking leaves {} below, ceiling {} → top_k {}",
                escape_control(&veredicto_core::redact::short(&s.case)),
                s.k,
                s.perfect_noise,
                s.max_noise,
                s.suggested_top_k
            ));
        }
    }
    out.extend(noise_rule_lines(c));
    out
}

/// The sentence saying why the calibrated ceiling cannot fail any case, when it cannot.
pub fn uninformative_reason(c: &Calibration) -> Option<String> {
    Some(match c.noise_rule.uninformative? {
        Uninformative::OneExpectedChunkPerCase => "with one expected chunk per case the noise rule cannot tell healthy from noisy cases: list the other relevant chunks of each case to make it informative".to_owned(),
        Uninformative::ExpectedListsTooShort => "the calibrated ceiling can no longer fail any case of this suite: it allows as much noise as a case can have while passing recall, which with expected lists this short for their K is most of the top K: list the other relevant chunks of each case to make it informative".to_owned(),
    })
}

/// Whether the calibrated ceiling can still fail the suite's cases, in words.
fn noise_rule_lines(c: &Calibration) -> Vec<String> {
    let n = &c.noise_rule;
    let total = n.cases_it_can_fail + n.cases_it_cannot_fail;
    let mut out = Vec::new();
    if let Some(reason) = uninformative_reason(c) {
        out.push(format!("noise rule not informative: {reason}"));
        if let Some(near) = &n.nearest {
            out.push(format!(
                "  the ceiling allows {} of {} results below the worst expected chunk; a case that passes recall has at most {} below it (K = {} minus {}, the fewest expected chunks in the top K that pass recall): none of the {total} cases can fail the noise rule",
                near.max_noise,
                near.k,
                near.most_noise,
                near.k,
                near.k - near.most_noise
            ));
        }
    } else if n.cases_it_cannot_fail > 0 {
        let one = if n.one_expected_chunk > 0 {
            format!(", {} with one expected chunk", n.one_expected_chunk)
        } else {
            String::new()
        };
        out.push(format!(
            "noise rule: the calibrated ceiling can fail {} of {total} cases while their recall passes; not the other {}{one} (as much noise as they can have while passing recall is within the ceiling)",
            n.cases_it_can_fail, n.cases_it_cannot_fail
        ));
    } else {
        out.push(format!(
            "noise rule: the calibrated ceiling can fail each of the {total} cases while its recall passes"
        ));
    }
    out
}

/// The terminal text of a calibration. `wrote` is the policy file written, if any.
pub fn render_human(c: &Calibration, verdicts: Option<Verdicts>, wrote: Option<&str>) -> String {
    let mut out = String::new();
    for line in explanation(c) {
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(v) = verdicts {
        out.push_str(&format!(
            "verdict on the same results: {} with the examined policy, {} with the calibrated one\n",
            verdict(v.before),
            verdict(v.after)
        ));
    }
    if let Some(path) = wrote {
        out.push_str(&format!(
            "wrote {}: pass it to the exam with --policy\n",
            escape_control(path)
        ));
    }
    out
}

/// The calibration as JSON (its fields, plus the verdicts when given).
pub fn render_json(c: &Calibration, verdicts: Option<Verdicts>) -> String {
    let mut v = serde_json::to_value(c).unwrap_or_default();
    if let (Some(reason), Some(rule)) = (
        uninformative_reason(c),
        v.get_mut("noise_rule").and_then(|r| r.as_object_mut()),
    ) {
        rule.insert("reason".into(), reason.into());
    }
    if let (Some(vs), Some(map)) = (verdicts, v.as_object_mut()) {
        map.insert(
            "verdict_before".into(),
            verdict(vs.before).to_lowercase().into(),
        );
        map.insert(
            "verdict_after".into(),
            verdict(vs.after).to_lowercase().into(),
        );
    }
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML float (always with a decimal point or exponent).
fn toml_f64(v: f64) -> String {
    format!("{v:?}")
}

/// `key = value` padded so that comments line up.
fn keyed(key: &str, value: String, comment: &str) -> String {
    let left = format!("{key} = {value}");
    let pad = 30usize.saturating_sub(left.chars().count()).max(1);
    format!("{left}{}# {comment}\n", " ".repeat(pad))
}

/// The calibrated policy as a commented TOML file that `--policy` reads back as
/// [`Calibration::policy`]. `golden` names the golden set it was calibrated on (its
/// fingerprint); no time goes into the file, so the same calibration writes the same bytes.
pub fn policy_toml(c: &Calibration, golden: &str) -> String {
    let p: &Policy = &c.policy;
    let mut out = String::new();
    out.push_str("# veredicto acceptance policy, calibrated by `veredicto calibrate`\n");
    out.push_str(&format!(
        "# on the golden set {}.\n",
        escape_control(&veredicto_core::redact::short(golden))
    ));
    out.push_str(
        "# Keep it beside the golden set; calibrate again when the golden set changes, never\n# between two runs you mean to compare.\n#\n",
    );
    for line in explanation(c) {
        out.push_str(&format!("# {line}\n"));
    }
    out.push('\n');
    if let Some(v) = &p.version {
        out.push_str(&keyed(
            "version",
            toml_str(v),
            "free label, kept with the golden set",
        ));
    }
    out.push_str(&keyed(
        "top_k",
        p.top_k.to_string(),
        "K for cases without their own top_k",
    ));
    out.push_str(&keyed(
        "recall_floor",
        toml_f64(p.recall_floor),
        "recall below this: Quality Score 0, the case fails",
    ));
    out.push_str(&keyed(
        "min_mean_quality",
        toml_f64(p.min_mean_quality),
        "mean Quality Score (0..100) needed to accept",
    ));
    out.push_str(&keyed(
        "noise_ceiling",
        toml_f64(p.noise_ceiling),
        if c.noise_rule_informative {
            "calibrated: most top-K results below the worst expected chunk, as a fraction of K"
        } else {
            "calibrated, but it can fail no case of this suite (see the note above)"
        },
    ));
    out.push_str(&keyed(
        "gold_label",
        toml_str(&p.gold_label),
        "the corpus label that makes a chunk (and its cases) gold",
    ));
    out.push_str(&keyed(
        "max_failing_fraction",
        toml_f64(p.max_failing_fraction),
        "non-gold failing cases tolerated, as a fraction of all cases",
    ));
    out.push_str(&keyed(
        "require_notes",
        p.require_notes.to_string(),
        "each non-gold failing case needs a note",
    ));
    let measures: Vec<String> = p.measures.iter().map(|m| toml_str(m)).collect();
    out.push_str(&keyed(
        "measures",
        format!("[{}]", measures.join(", ")),
        "extra measures reported per case and on average",
    ));
    let field = match p.field {
        Field::Representation => "representation",
        Field::Text => "text",
    };
    out.push_str(&keyed(
        "field",
        toml_str(field),
        "the chunk field that is embedded and searched",
    ));
    for (name, d) in &p.domains {
        out.push_str(&format!("\n[domains.{}]\n", toml_str(name)));
        if let Some(k) = d.top_k {
            out.push_str(&keyed("top_k", k.to_string(), "this domain's K"));
        }
        if let Some(v) = d.recall_floor {
            out.push_str(&keyed(
                "recall_floor",
                toml_f64(v),
                "this domain's recall floor",
            ));
        }
        if let Some(v) = d.noise_ceiling {
            out.push_str(&keyed(
                "noise_ceiling",
                toml_f64(v),
                "this domain's ceiling",
            ));
        }
    }
    out
}
