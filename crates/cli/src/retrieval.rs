//! Writing what the index retriever returned (`veredicto_index::retriever`).

use anyhow::Context;
use std::path::Path;
use veredicto_core::run::Run;

/// Writes a run as TREC lines (`qid Q0 docid rank score tag`), ranks as listed.
pub fn write_trec_run(path: &Path, run: &Run, tag: &str) -> anyhow::Result<()> {
    let mut out = String::new();
    for (qid, results) in &run.queries {
        for (i, r) in results.iter().enumerate() {
            out.push_str(&format!(
                "{qid} Q0 {} {} {} {tag}\n",
                r.id,
                i + 1,
                r.score.unwrap_or(0.0)
            ));
        }
    }
    crate::output::write_atomic(path, out.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
