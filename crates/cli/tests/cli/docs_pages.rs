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

/// The top-level commands, from `veredicto --help`.
fn commands() -> Vec<String> {
    let text = stdout(&veredicto(&["--help"]));
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn every_command_help_ends_with_examples_and_groups_the_global_options() {
    let commands = commands();
    assert!(commands.len() > 15, "{commands:?}");
    for c in &commands {
        for flag in ["--help", "-h"] {
            let o = veredicto(&[c, flag]);
            assert_eq!(o.status.code(), Some(0), "{c} {flag}");
            let help = stdout(&o);
            // The last section is the examples: two or three command lines.
            let (_, tail) = help
                .rsplit_once("\nExamples:\n")
                .unwrap_or_else(|| panic!("{c} {flag}: no examples at the end:\n{help}"));
            let examples: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
            assert!(
                (2..=3).contains(&examples.len())
                    && examples.iter().all(|l| l.starts_with("  ")
                        && l.chars().count() <= 98
                        && l.contains("veredicto ")
                        && l.contains(c.as_str())),
                "{c} {flag}: {examples:?}"
            );
            // The options every command takes stand apart, under their own heading, and
            // only there.
            let (own, global) = help
                .split_once("\nGlobal options:\n")
                .unwrap_or_else(|| panic!("{c} {flag}: no global options heading:\n{help}"));
            for opt in ["--color", "--quiet", "--verbose"] {
                assert!(global.contains(opt), "{c} {flag}: {opt}");
                assert!(
                    !own.contains(&format!("  {opt}")),
                    "{c} {flag}: {opt} listed twice"
                );
            }
        }
    }
}

#[test]
fn the_help_of_commands_taking_a_retriever_lists_every_scheme_the_parser_accepts() {
    for c in ["exam", "calibrate", "search"] {
        let help = stdout(&veredicto(&[c, "--help"]));
        let (_, list) = help
            .split_once("\nRetrievers (--retriever URI")
            .unwrap_or_else(|| panic!("{c}: no retriever list:\n{help}"));
        let list: Vec<&str> = list
            .lines()
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .collect();
        // The list is the parser's own table, one line a scheme, none missing, none extra.
        assert_eq!(
            list.len(),
            veredicto_retrieve::SCHEME_LIST.len(),
            "{c}: {list:?}"
        );
        for (line, scheme) in list.iter().zip(veredicto_retrieve::SCHEME_LIST) {
            assert!(
                line.trim_start().starts_with(scheme.form) && line.ends_with(scheme.about),
                "{c}: {line}"
            );
            for prefix in scheme.prefixes {
                assert!(
                    veredicto_retrieve::scheme_of(&format!("{prefix}x")).is_some(),
                    "{prefix}"
                );
            }
        }
        // Every family of URI the parser opens is named.
        for family in [
            "index:",
            "run:",
            "http(s)://",
            "cmd:",
            "postgres://",
            "qdrant+",
            "opensearch+",
            "elasticsearch+",
        ] {
            assert!(list.iter().any(|l| l.contains(family)), "{c}: {family}");
        }
    }
}
