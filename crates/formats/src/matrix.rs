//! Matrix files (`matrix.toml`): the configurations `veredicto matrix` examines, one exam
//! each. Errors name the file, the line and the field (for example `matrix.toml:7:` and the
//! field `config[1].top_k`).

use crate::error::{FormatError, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A matrix file. Relative paths are resolved against the file's folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// The golden set every configuration is examined on.
    pub golden: PathBuf,
    /// The policy file (optional: the defaults).
    pub policy: Option<PathBuf>,
    /// A corpus for the diagnosis and reranking (optional).
    pub corpus: Option<PathBuf>,
    /// The exam date (`YYYY-MM-DD`) for every configuration (optional: today).
    pub as_of: Option<String>,
    /// The documents a configuration's `chunk` cuts (needed by those configurations).
    pub documents: Option<PathBuf>,
    /// The configurations, in file order.
    pub configs: Vec<MatrixConfig>,
}

/// A chunking a configuration asks `veredicto matrix` to make itself
/// (`chunk = {size = 300, overlap = 60, unit = "chars", split = "sentences"}`): the
/// documents are cut so, ingested into an index of their own with the configuration's
/// model, and that index examined.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkSpec {
    /// Most units per chunk.
    pub size: usize,
    /// Units shared by consecutive chunks (less than `size`).
    #[serde(default)]
    pub overlap: usize,
    /// `chars` (default) or `tokens` (of the configuration's model's tokenizer).
    #[serde(default = "default_unit")]
    pub unit: String,
    /// `text` (default), `markdown` or `sentences`.
    #[serde(default = "default_split")]
    pub split: String,
}

fn default_unit() -> String {
    "chars".into()
}

fn default_split() -> String {
    "text".into()
}

/// One configuration: what produced the knowledge base (model, chunking) and how it is
/// searched (retriever, top-K, rerank).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixConfig {
    /// A unique name: the row of the table, the run's label in the history.
    pub name: String,
    /// veredicto's own index folder (exactly one of index, retriever, run).
    #[serde(default)]
    pub index: Option<PathBuf>,
    /// A live retriever URI (docs/retrievers.md).
    #[serde(default)]
    pub retriever: Option<String>,
    /// A saved run (TREC or JSONL).
    #[serde(default)]
    pub run: Option<String>,
    /// The query embedding model (folder or known name), when the retriever needs one.
    #[serde(default)]
    pub model: Option<String>,
    /// The K of the exam (overrides the policy's `top_k`).
    #[serde(default)]
    pub top_k: Option<u32>,
    /// A reranker (model folder or URL).
    #[serde(default)]
    pub rerank: Option<String>,
    /// Declared chunk size and overlap of this configuration's corpus (recorded).
    #[serde(default)]
    pub chunk_size: Option<u32>,
    #[serde(default)]
    pub chunk_overlap: Option<u32>,
    /// Results asked per case.
    #[serde(default)]
    pub depth: Option<usize>,
    /// A chunking veredicto makes itself from the matrix's `documents` (instead of
    /// `index`, `retriever` or `run`; needs `model`).
    #[serde(default)]
    pub chunk: Option<ChunkSpec>,
    /// The arms of a `fusion:` retriever, in order (`index:` and `run:` paths relative to
    /// the matrix file), so that a row can be a hybrid configuration.
    #[serde(default)]
    pub arms: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    golden: PathBuf,
    #[serde(default)]
    policy: Option<PathBuf>,
    #[serde(default)]
    corpus: Option<PathBuf>,
    #[serde(default)]
    as_of: Option<String>,
    #[serde(default)]
    documents: Option<PathBuf>,
    #[serde(default)]
    config: Vec<MatrixConfig>,
}

/// Reads and checks a matrix file.
pub fn read_matrix(path: &Path) -> Result<Matrix> {
    let source = crate::text::read_to_string(path)?;
    parse_matrix(path, &source)
}

/// Parses and checks matrix TOML; `path` locates errors and relative paths.
pub fn parse_matrix(path: &Path, source: &str) -> Result<Matrix> {
    let file: File = toml::from_str(source).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let line = e.span().map_or(0, |s| {
            1 + source[..s.start.min(source.len())].matches('\n').count()
        });
        let field = message
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
            .or_else(|| {
                message
                    .strip_prefix("missing field `")
                    .and_then(|r| r.split('`').next())
            })
            .unwrap_or("-")
            .to_owned();
        FormatError::invalid(path, line, field, message)
    })?;
    let err = |i: usize, field: &str, message: String| {
        FormatError::invalid(
            path,
            config_line(source, i, field),
            format!("config[{i}].{field}"),
            message,
        )
    };
    if file.config.is_empty() {
        return Err(FormatError::invalid(
            path,
            0,
            "config",
            "no configuration: add [[config]] tables",
        ));
    }
    let mut seen = std::collections::BTreeMap::new();
    for (i, c) in file.config.iter().enumerate() {
        if c.name.trim().is_empty() {
            return Err(err(i, "name", "must not be empty".into()));
        }
        if let Some(first) = seen.insert(c.name.clone(), i) {
            return Err(err(
                i,
                "name",
                format!(
                    "duplicate configuration name `{}` (also config[{first}])",
                    veredicto_core::redact::short(&c.name)
                ),
            ));
        }
        let sources = [
            c.index.is_some(),
            c.retriever.is_some(),
            c.run.is_some(),
            c.chunk.is_some(),
        ]
        .iter()
        .filter(|&&b| b)
        .count();
        if sources != 1 {
            return Err(err(
                i,
                "name",
                format!("needs exactly one of index, retriever, run, chunk (found {sources})"),
            ));
        }
        if let Some(ch) = &c.chunk {
            if file.documents.is_none() {
                return Err(err(
                    i,
                    "chunk",
                    "a chunking needs the documents to cut: add `documents = \"documents.jsonl\"` at the top of the file".into(),
                ));
            }
            if c.model.is_none() {
                return Err(err(
                    i,
                    "chunk",
                    "a chunking is ingested with the configuration's model: add `model`".into(),
                ));
            }
            if ch.size == 0 {
                return Err(err(i, "chunk", "`size` must be at least 1, got 0".into()));
            }
            if ch.overlap >= ch.size {
                return Err(err(
                    i,
                    "chunk",
                    format!(
                        "`overlap` {} must be less than `size` {}",
                        ch.overlap, ch.size
                    ),
                ));
            }
            if !["chars", "tokens"].contains(&ch.unit.as_str()) {
                return Err(err(
                    i,
                    "chunk",
                    format!(
                        "`unit` must be chars or tokens, got `{}`",
                        veredicto_core::redact::short(&ch.unit)
                    ),
                ));
            }
            if !["text", "markdown", "sentences"].contains(&ch.split.as_str()) {
                return Err(err(
                    i,
                    "chunk",
                    format!(
                        "`split` must be text, markdown or sentences, got `{}`",
                        veredicto_core::redact::short(&ch.split)
                    ),
                ));
            }
            if c.chunk_size.is_some() || c.chunk_overlap.is_some() {
                return Err(err(
                    i,
                    "chunk",
                    "`chunk` declares the chunking itself: leave out chunk_size and chunk_overlap"
                        .into(),
                ));
            }
        }
        let fusion = c
            .retriever
            .as_deref()
            .and_then(|r| r.get(..7))
            .is_some_and(|h| h.eq_ignore_ascii_case("fusion:"));
        if fusion && c.arms.len() < 2 {
            return Err(err(
                i,
                "retriever",
                "a fusion needs its arms: `arms = [\"index:kb?mode=bm25\", \"index:kb\"]` (at least two)".into(),
            ));
        }
        if !fusion && !c.arms.is_empty() {
            return Err(err(
                i,
                "arms",
                "arms are a fusion's: give `retriever = \"fusion:rrf\"` (or combsum, combmnz, combmax, wsum) with them".into(),
            ));
        }
        if c.top_k == Some(0) {
            return Err(err(i, "top_k", "must be at least 1, got 0".into()));
        }
        if c.depth == Some(0) {
            return Err(err(i, "depth", "must be at least 1, got 0".into()));
        }
    }
    if let Some(d) = &file.as_of {
        if let Err(e) = veredicto_core::time::check_date(d) {
            let line = source
                .lines()
                .position(|l| l.trim_start().starts_with("as_of"))
                .map_or(0, |i| i + 1);
            return Err(FormatError::invalid(path, line, "as_of", e.to_string()));
        }
    }
    let base = path.parent().unwrap_or(Path::new(""));
    let resolve = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
    let configs = file
        .config
        .into_iter()
        .map(|mut c| {
            c.index = c.index.map(resolve);
            c.arms = c
                .arms
                .iter()
                .map(|a| crate::config::arm_value(base, a))
                .collect();
            c
        })
        .collect();
    Ok(Matrix {
        golden: resolve(file.golden),
        policy: file.policy.map(resolve),
        corpus: file.corpus.map(resolve),
        as_of: file.as_of,
        documents: file.documents.map(resolve),
        configs,
    })
}

/// The line of `field` in the `i`-th `[[config]]` table, else of its header (0 if none).
fn config_line(source: &str, index: usize, field: &str) -> usize {
    let mut seen: Option<usize> = None;
    let mut header = 0;
    for (n, raw) in source.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('[') {
            if line.replace(' ', "") == "[[config]]" {
                seen = Some(seen.map_or(0, |s| s + 1));
                if seen == Some(index) {
                    header = n + 1;
                }
            } else if seen == Some(index) {
                break;
            }
            continue;
        }
        if seen == Some(index) {
            if let Some((k, _)) = line.split_once('=') {
                if k.trim() == field {
                    return n + 1;
                }
            }
        }
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Matrix> {
        parse_matrix(Path::new("/m/matrix.toml"), s)
    }

    const GOOD: &str = r#"golden = "golden.jsonl"
policy = "/abs/policy.toml"

[[config]]
name = "minilm-k10"
index = "kb-minilm"
top_k = 10

[[config]]
name = "e5-k5"
retriever = "index:kb-e5"
model = "multilingual-e5-small"
top_k = 5
chunk_size = 512
"#;

    #[test]
    fn configurations_are_read_in_order_with_paths_resolved() {
        let m = parse(GOOD).unwrap();
        assert_eq!(m.golden, Path::new("/m/golden.jsonl"));
        assert_eq!(m.policy.as_deref(), Some(Path::new("/abs/policy.toml")));
        let names: Vec<_> = m.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["minilm-k10", "e5-k5"]);
        assert_eq!(
            m.configs[0].index.as_deref(),
            Some(Path::new("/m/kb-minilm"))
        );
        assert_eq!(m.configs[1].chunk_size, Some(512));
    }

    #[test]
    fn bad_input_names_file_line_and_field() {
        let e = parse(&GOOD.replace("top_k = 5", "top_k = 0"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/m/matrix.toml:13: field `config[1].top_k`"),
            "{e}"
        );
        let e = parse(&GOOD.replace("chunk_size", "chunk_sise"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/m/matrix.toml:14: field `chunk_sise`"),
            "{e}"
        );
        let e = parse(&GOOD.replace("e5-k5", "minilm-k10"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/m/matrix.toml:10: field `config[1].name`: duplicate"),
            "{e}"
        );
        let e = parse(&GOOD.replace("index = \"kb-minilm\"\n", ""))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/m/matrix.toml:5: field `config[0].name`"),
            "{e}"
        );
        let chunked = GOOD.replace(
            "index = \"kb-minilm\"",
            "model = \"m\"\nchunk = {size = 300, overlap = 300}",
        );
        let e = parse(&format!("documents = \"d.jsonl\"\n{chunked}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/m/matrix.toml:8: field `config[0].chunk`: `overlap` 300 must be less than `size` 300"),
            "{e}"
        );
        let e = parse(&chunked).unwrap_err().to_string();
        assert!(e.contains("a chunking needs the documents"), "{e}");
        let m = parse(&format!(
            "documents = \"d.jsonl\"\n{}",
            chunked.replace("overlap = 300", "split = \"sentences\"")
        ))
        .unwrap();
        assert_eq!(m.documents.as_deref(), Some(Path::new("/m/d.jsonl")));
        let ch = m.configs[0].chunk.as_ref().unwrap();
        assert_eq!(
            (ch.size, ch.overlap, ch.unit.as_str(), ch.split.as_str()),
            (300, 0, "chars", "sentences")
        );
        let e = parse("policy = \"p\"\n").unwrap_err().to_string();
        assert!(e.contains("field `golden`"), "{e}");
        let e = parse("golden = \"g\"\n").unwrap_err().to_string();
        assert!(e.contains("no configuration"), "{e}");
    }
}
