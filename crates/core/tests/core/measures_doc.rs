//! docs/measures.md carries the registry table; this test regenerates it from the registry
//! and fails if the document is stale. `VEREDICTO_BLESS=1 cargo test -p veredicto-core --test
//! measures_doc` rewrites the block.

use std::path::PathBuf;
use veredicto_core::measure::{registry, Aggregate, Syntax};

const START: &str = "<!-- registry:start (generated from crates/core/src/measure.rs; see crates/core/tests/core/measures_doc.rs) -->";
const END: &str = "<!-- registry:end -->";

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn table() -> String {
    let mut out = String::new();
    out.push_str("| canonical | trec_eval | summary | formula | what it measures |\n");
    out.push_str("| --- | --- | --- | --- | --- |\n");
    for s in registry() {
        let trec = match (s.trec, s.params) {
            (None, _) => "(none)".to_string(),
            (Some(t), Syntax::AtRank | Syntax::AtValue) => format!("`{t}.k`, `{t}_k`"),
            (Some(t), Syntax::Plain) => format!("`{t}`"),
            (Some(t), _) => format!("`{t}`, `{t}.params`"),
        };
        let summary = match s.aggregate {
            Aggregate::Mean => "mean",
            Aggregate::Sum => "sum",
            Aggregate::GeometricMean => "geometric mean",
            Aggregate::Count => "count",
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            s.syntax,
            trec,
            summary,
            cell(s.formula),
            cell(s.description)
        ));
    }
    out
}

#[test]
fn docs_measures_md_lists_the_registry() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/measures.md");
    let mut doc = std::fs::read_to_string(&path).expect("read docs/measures.md");
    let (Some(a), Some(b)) = (doc.find(START), doc.find(END)) else {
        panic!("docs/measures.md lacks the registry markers");
    };
    let current = &doc[a + START.len()..b];
    let wanted = format!("\n{}", table());
    if current != wanted {
        if std::env::var_os("VEREDICTO_BLESS").is_some() {
            let new = format!("{}{START}{wanted}{}", &doc[..a], &doc[b..]);
            std::fs::write(&path, &new).expect("write docs/measures.md");
            doc = new;
        } else {
            panic!("docs/measures.md is stale: run with VEREDICTO_BLESS=1 to regenerate");
        }
    }
    for s in registry() {
        assert!(doc.contains(s.syntax), "{} missing", s.syntax);
    }
}
