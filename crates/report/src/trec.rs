//! The text of `veredicto trec --list`: every measure of the registry (canonical name,
//! trec_eval name, description), then the sets.

use std::fmt::Write as _;
use veredicto_core::measure::{registry, Syntax};
use veredicto_core::trec::plan::SETS;

/// The `--list` table, from the registry.
pub fn measure_list() -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:<28}{:<24}DESCRIPTION", "CANONICAL", "TREC_EVAL");
    for s in registry() {
        let trec = match (s.trec, s.params) {
            (None, _) => "-".to_string(),
            (Some(t), Syntax::AtRank | Syntax::AtValue) => format!("{t}.k"),
            (Some(t), Syntax::Plain) => t.to_string(),
            (Some(t), _) => format!("{t}[.params]"),
        };
        let _ = writeln!(out, "{:<28}{:<24}{}", s.syntax, trec, s.description);
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<28}{:<24}Relevance of the first n documents (per query, with -q).",
        "-", "relstring[.n]"
    );
    let _ = writeln!(
        out,
        "{:<28}{:<24}Run tag of the run file's last line.",
        "-", "runid"
    );
    for (name, members) in SETS {
        let _ = writeln!(out, "set {name}: {}", members.join(" "));
    }
    out
}
