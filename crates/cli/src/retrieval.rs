//! Writing what a retriever returned (`exam --save-run`).

use anyhow::Context;
use std::path::Path;
use veredicto_core::run::Run;
use veredicto_formats::run::{jsonl_run_text, trec_run_text};

/// Writes a run that `--run FILE` reads back to the same lists in the same order: JSONL
/// when `path` ends in `.jsonl` (every score as the retriever gave it, or none), else TREC
/// (`qid Q0 docid rank score tag`), where a list whose scores do not give its order gets
/// rank-derived scores (said on standard error), and a run with an ID TREC cannot hold is
/// written as JSONL instead (said too).
pub fn save_run(path: &Path, run: &Run, tag: &str) -> anyhow::Result<()> {
    let shown = path.display();
    let jsonl = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("jsonl"));
    let saved = if jsonl {
        jsonl_run_text(run).with_context(|| format!("--save-run {shown}"))?
    } else {
        match trec_run_text(run, tag) {
            Ok(saved) => {
                if !saved.rank_scored.is_empty() {
                    crate::printer::note(&format!(
                        "{shown}: {} case(s) with tied, missing or unordered scores are written with rank-derived scores (n, n-1, …, 1), so that trec_eval and --run read them in the exam's order: {}; save to a .jsonl file to keep the retriever's scores",
                        saved.rank_scored.len(),
                        veredicto_core::redact::short(&saved.rank_scored.join(", "))
                    ));
                }
                saved
            }
            Err(e) => {
                crate::printer::warn(&format!(
                    "{shown}: {e}: written as a JSONL run instead (--run reads both)"
                ));
                jsonl_run_text(run).with_context(|| format!("--save-run {shown}"))?
            }
        }
    };
    crate::output::write_atomic(path, saved.text.as_bytes())
        .with_context(|| format!("writing {shown}"))
}
