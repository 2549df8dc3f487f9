//! A pull-request comment: verdict, reasons, summary, and the failing cases.

use crate::fmt;
use veredicto_core::exam::{ExamReport, Verdict};
use veredicto_core::redact::{markdown_code as code, markdown_text as cell};

pub fn render(r: &ExamReport) -> String {
    let s = &r.summary;
    let mut out = String::new();
    match r.verdict {
        Verdict::Accept => out.push_str("## veredicto: ✅ accept\n\n"),
        Verdict::Stop => out.push_str("## veredicto: ❌ stop\n\n"),
    }
    for reason in fmt::stop_reasons(r) {
        out.push_str(&format!("- {}\n", cell(&reason)));
    }
    if let Some(line) = crate::explain::retriever_failures_line(r) {
        out.push_str(&format!("- {}\n", cell(&line)));
    }
    if !r.reasons.is_empty() || r.summary.retriever_failures > 0 {
        out.push('\n');
    }
    let mut notes: Vec<String> = crate::explain::warning_lines(r);
    notes.extend(crate::explain::uncalibrated_note(r));
    notes.extend(crate::explain::duplicates_line(r));
    for n in &notes {
        out.push_str(&format!("> {}\n", cell(n)));
    }
    if !notes.is_empty() {
        out.push('\n');
    }
    out.push_str("| cases | gold | mean QS | mean recall | MRR | mean P@K | mean nDCG | failing | over noise |\n");
    out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    out.push_str(&format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        s.cases,
        s.gold_cases,
        fmt::qs(s.mean_quality),
        fmt::pct(s.mean_recall),
        fmt::f3(s.mrr),
        fmt::f3(s.mean_precision),
        fmt::f3(s.mean_ndcg),
        s.failing,
        s.over_noise
    ));
    out.push_str(&format!(
        "\n<sub>QS: Quality Score (0 below the recall floor, 100 at full recall) · noise: top-K results below the worst expected chunk / the most allowed ({})</sub>\n",
        crate::explain::RULES_DOC
    ));
    if let Some(line) = fmt::exactness(r) {
        out.push_str(&format!("\n{}\n", cell(&line)));
    }
    if let Some(f) = &r.fusion {
        let timed = f.arms.iter().any(|a| a.latency.is_some());
        out.push_str(&format!(
            "\n### Fusion {}\n\n| ranking | recall@K | cases only it finds |{}\n|---|---:|---|{}\n",
            code(&f.method),
            if timed { " time |" } else { "" },
            if timed { "---|" } else { "" }
        ));
        out.push_str(&format!(
            "| fused | {} | |{}\n",
            fmt::recall_or_dash(f.recall),
            if timed { " |" } else { "" }
        ));
        for (i, a) in f.arms.iter().enumerate() {
            let time = if timed {
                format!(" {} |", cell(&fmt::arm_latency(a).unwrap_or_default()))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "| arm {} {} | {} | {} ({}) |{time}\n",
                i + 1,
                code(&a.uri),
                fmt::recall_or_dash(a.recall),
                a.only_found.len(),
                cell(&fmt::only_found(&a.only_found))
            ));
        }
    }
    if let Some(line) = fmt::stored_vectors(r) {
        out.push_str(&format!("\n{}\n", cell(&line)));
    }
    let failing: Vec<_> = r.cases.iter().filter(|c| !c.passed).collect();
    if !failing.is_empty() {
        out.push_str("\n### Failing cases\n\n");
        out.push_str("| case | gold | recall | QS | noise | reasons | expected (rank) | note |\n");
        out.push_str("|---|:-:|---:|---:|---:|---|---|---|\n");
        for c in failing {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                code(&c.id),
                if c.gold { "yes" } else { "" },
                fmt::pct(c.recall),
                fmt::qs(c.quality),
                fmt::noise(c),
                cell(&fmt::reasons(c)),
                cell(&fmt::expected_ranks(c)),
                cell(c.note.as_deref().unwrap_or("")),
            ));
        }
        let findings: Vec<String> = r
            .cases
            .iter()
            .flat_map(|c| {
                c.diagnosis.iter().map(move |f| {
                    format!(
                        "- {}{}: {}",
                        code(&c.id),
                        f.chunk
                            .as_deref()
                            .map(|x| format!(" / {}", code(x)))
                            .unwrap_or_default(),
                        cell(&crate::explain::finding_text(c, f))
                    )
                })
            })
            .collect();
        if !findings.is_empty() {
            out.push_str("\n<details><summary>Diagnosis</summary>\n\n");
            for f in findings {
                out.push_str(&f);
                out.push('\n');
            }
            out.push_str("\n</details>\n");
        }
    }
    out.push_str(&format!(
        "\n<sub>policy {} · golden {} · run {}</sub>\n",
        cell(short(&r.policy_fingerprint)),
        cell(short(&r.golden_fingerprint)),
        code(&r.run.name)
    ));
    out
}

fn short(fp: &str) -> &str {
    &fp[..fp.len().min(19)]
}
