//! The user documentation stays navigable and self-contained: the docs index lists every
//! page, and no user page or help text cites internal documents (the spec, its sections, the
//! founding examples by number, the style guide).

use crate::common;
use common::*;

/// README.md, every page under docs/ and the examples' READMEs.
fn user_pages() -> Vec<std::path::PathBuf> {
    let root = workspace();
    let mut pages = vec![root.join("README.md")];
    for dir in ["docs", "examples/rack", "examples/grounding"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = entry.unwrap().path();
            let keep = match dir {
                "docs" => p.extension().is_some_and(|e| e == "md" || e == "yml"),
                _ => p.file_name().is_some_and(|n| n == "README.md"),
            };
            if keep {
                pages.push(p);
            }
        }
    }
    pages.sort();
    pages
}

/// Internal references: "SPEC", "§", "STYLE item", "seed 000"-style numbers, "the seed(s)".
fn internal_references(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        // "seed 000" (a founding example by number), not "seed 1986359909" (a random seed).
        let numbered_seed = lower.match_indices("seed ").any(|(at, _)| {
            let digits = lower[at + 5..]
                .chars()
                .take_while(char::is_ascii_digit)
                .count();
            digits == 3 && lower[at + 5..].starts_with('0')
        });
        if line.contains("SPEC")
            || line.contains('§')
            || line.contains("STYLE")
            || numbered_seed
            || lower.contains("the seed's")
            || lower.contains("as in the seeds")
            || lower.contains("seeds/0")
        {
            found.push(format!("{}: {line}", i + 1));
        }
    }
    found
}

#[test]
fn docs_index_lists_every_page() {
    let index = std::fs::read_to_string(workspace().join("docs/README.md")).unwrap();
    for entry in std::fs::read_dir(workspace().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        assert!(
            index.contains(&format!("]({name})")),
            "docs/README.md does not link {name}"
        );
    }
}

#[test]
fn user_pages_cite_no_internal_documents() {
    let mut bad = Vec::new();
    for page in user_pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for hit in internal_references(&text) {
            bad.push(format!("{}:{hit}", page.display()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn help_texts_cite_no_internal_documents() {
    let top = veredicto(&["--help"]);
    let text = stdout(&top);
    let mut bad = internal_references(&text);
    // Every subcommand's help, one level down.
    let commands: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() > 5, "{text}");
    for c in &commands {
        let o = veredicto(&[c, "--help"]);
        for hit in internal_references(&stdout(&o)) {
            bad.push(format!("{c}: {hit}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_detector_finds_what_it_looks_for() {
    assert_eq!(internal_references("see SPEC §3").len(), 1);
    assert_eq!(internal_references("seed 000's calibrations").len(), 1);
    assert!(internal_references("--seed 1 (the random seed)").is_empty());
    assert!(internal_references("Holm across metrics; seed 1986359909").is_empty());
}
