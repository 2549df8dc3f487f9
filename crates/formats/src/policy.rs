//! Policy files (SPEC §3): TOML whose top-level keys are the exam's [`Policy`], with one
//! table per other command that reads the same file (`[corpus]`, `[ingest]`,
//! `[grounding]`). A file is parsed once into a [`PolicyFile`]; absent keys take the
//! documented defaults; unknown keys and out-of-range values are errors naming the line
//! and the key.

use crate::error::{FormatError, Result};
use crate::text;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::path::Path;
use veredicto_core::gate::IngestPolicy;
use veredicto_core::hygiene::CorpusPolicy;
use veredicto_core::policy::{GroundingPolicy, Policy};

/// A policy file, parsed once: the exam's keys and each other command's table, typed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolicyFile {
    /// The exam's policy (the top-level keys).
    pub exam: Policy,
    /// `[corpus]`: `corpus check`'s thresholds.
    pub corpus: CorpusPolicy,
    /// `[ingest]`: the ingestion gate's limits (not part of the exam policy's fingerprint:
    /// it judges ingests, not retrieval).
    pub ingest: IngestPolicy,
    /// `[grounding]`: the grounding audit's thresholds.
    pub grounding: GroundingPolicy,
    /// The other commands' tables as TOML text, to carry into a rewritten policy (empty
    /// when there are none).
    pub others: String,
}

/// A part of a policy file ([`PolicyFile::parse_sections`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The exam's top-level keys.
    Exam,
    /// `[corpus]`.
    Corpus,
    /// `[ingest]`.
    Ingest,
    /// `[grounding]`.
    Grounding,
}

impl Section {
    /// Every section.
    pub const ALL: [Section; 4] = [
        Section::Exam,
        Section::Corpus,
        Section::Ingest,
        Section::Grounding,
    ];
}

impl PolicyFile {
    /// Reads and checks a whole policy file.
    pub fn read(path: &Path) -> Result<PolicyFile> {
        let source = text::read_to_string(path)?;
        PolicyFile::parse(path, &source)
    }

    /// Parses and checks a whole policy file's text; `path` is only used in messages.
    pub fn parse(path: &Path, source: &str) -> Result<PolicyFile> {
        PolicyFile::parse_sections(path, source, &Section::ALL)
    }

    /// Reads only `sections` of a policy file (the others keep their defaults and are not
    /// checked): the grounding audit reads its `[grounding]` table from any TOML file.
    pub fn read_sections(path: &Path, sections: &[Section]) -> Result<PolicyFile> {
        let source = text::read_to_string(path)?;
        PolicyFile::parse_sections(path, &source, sections)
    }

    /// [`PolicyFile::read_sections`] on text already read.
    pub fn parse_sections(path: &Path, source: &str, sections: &[Section]) -> Result<PolicyFile> {
        let mut file = PolicyFile::default();
        for section in sections {
            match section {
                Section::Exam => file.exam = exam_keys(path, source)?,
                Section::Corpus => file.corpus = corpus_table(path, source)?,
                Section::Ingest => file.ingest = ingest_table(path, source)?,
                Section::Grounding => file.grounding = grounding_table(path, source)?,
            }
        }
        if sections.contains(&Section::Exam) {
            file.others = tables_of_others(path, source)?;
        }
        Ok(file)
    }
}

/// Reads and validates a policy file's exam policy (the other commands' tables must be
/// tables and are not checked here).
pub fn read_policy(path: &Path) -> Result<Policy> {
    Ok(PolicyFile::read_sections(path, &[Section::Exam])?.exam)
}

/// Parses and validates policy TOML's exam policy (as [`read_policy`]); `path` is only
/// used in messages.
pub fn parse_policy(path: &Path, source: &str) -> Result<Policy> {
    Ok(PolicyFile::parse_sections(path, source, &[Section::Exam])?.exam)
}

/// The exam's keys of a policy file; the other commands' tables must be tables and are
/// read by their own sections.
fn exam_keys(path: &Path, source: &str) -> Result<Policy> {
    let ExamKeys(policy) = toml::from_str(source).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let (field, message) = match crate::config::unknown_field(&message) {
            Some((field, expected)) => {
                let hint = crate::config::did_you_mean(&field, expected.iter().map(String::as_str))
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                let message = format!("{hint}{message}");
                (field, message)
            }
            None => ("-".to_owned(), message),
        };
        // An unknown top-level key is reported by the filter around `[grounding]`, whose
        // span is the whole table: find the key's own line.
        let line = Some(key_line(source, &field))
            .filter(|&l| l > 0)
            .or_else(|| {
                e.span()
                    .map(|s| 1 + source[..s.start.min(source.len())].matches('\n').count())
            })
            .unwrap_or(0);
        FormatError::invalid(path, line, field, message)
    })?;
    policy.validate().map_err(|e| {
        let line = key_line(source, &e.key);
        FormatError::invalid(path, line, e.key.clone(), e.message)
    })?;
    Ok(policy)
}

/// The top level of a policy file: [`Policy`]'s keys, and the tables of other commands.
struct ExamKeys(Policy);

impl<'de> Deserialize<'de> for ExamKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct TopLevel;
        impl<'de> Visitor<'de> for TopLevel {
            type Value = ExamKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a policy table")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<ExamKeys, A::Error> {
                Policy::deserialize(MapAccessDeserializer::new(WithoutGrounding(map))).map(ExamKeys)
            }
        }
        d.deserialize_map(TopLevel)
    }
}

/// Tables of the policy file read by other commands: `[grounding]` (the grounding audit),
/// `[corpus]` (`corpus check`), `[ingest]` (`gate`).
const TABLES_OF_OTHERS: &[&str] = &["grounding", "corpus", "ingest"];

/// The tables of other commands (`[grounding]`, `[corpus]`, `[ingest]`) of a policy file, as
/// TOML text to append to a rewritten policy (`veredicto calibrate`), so that rewriting the
/// exam's keys loses none of them; empty when the file has none. Comments inside them are
/// not kept.
fn tables_of_others(path: &Path, source: &str) -> Result<String> {
    let table: toml::Table = toml::from_str(source).map_err(|e| {
        FormatError::invalid(
            path,
            0,
            "-".to_owned(),
            e.message().trim().replace('\n', " "),
        )
    })?;
    let mut out = String::new();
    for name in TABLES_OF_OTHERS {
        if let Some(value) = table.get(*name) {
            let mut one = toml::Table::new();
            one.insert((*name).to_owned(), value.clone());
            let text = toml::to_string(&one)
                .map_err(|e| FormatError::invalid(path, 0, (*name).to_owned(), e.to_string()))?;
            out.push('\n');
            out.push_str(&text);
        }
    }
    Ok(out)
}

/// The entries of a map except the [`TABLES_OF_OTHERS`], each of which must hold a table.
struct WithoutGrounding<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for WithoutGrounding<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.0.next_key::<String>()? else {
                return Ok(None);
            };
            if TABLES_OF_OTHERS.contains(&key.as_str()) {
                self.0.next_value::<toml::Table>()?;
                continue;
            }
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, A::Error> {
        self.0.next_value_seed(seed)
    }
}

/// The `[corpus]` table (`corpus check`'s thresholds); an absent table gives the defaults.
fn corpus_table(path: &Path, source: &str) -> Result<CorpusPolicy> {
    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        corpus: Option<veredicto_core::hygiene::CorpusPolicy>,
    }
    let file: File = toml::from_str(source).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let field = crate::config::unknown_field(&message)
            .map(|(f, _)| format!("corpus.{f}"))
            .unwrap_or_else(|| "corpus".to_owned());
        let line = Some(key_line(source, &field))
            .filter(|&l| l > 0)
            .or_else(|| {
                e.span()
                    .map(|s| 1 + source[..s.start.min(source.len())].matches('\n').count())
            })
            .unwrap_or(0);
        FormatError::invalid(path, line, field, message)
    })?;
    let policy = file.corpus.unwrap_or_default();
    policy.validate().map_err(|(key, message)| {
        FormatError::invalid(path, key_line(source, &key), key, message)
    })?;
    Ok(policy)
}

/// The `[ingest]` table (the ingestion gate's limits); a file without it gives the default
/// (no rejected line allowed).
fn ingest_table(path: &Path, source: &str) -> Result<IngestPolicy> {
    let table: toml::Table = toml::from_str(source)
        .map_err(|e| FormatError::invalid(path, 0, "-", e.message().trim().replace('\n', " ")))?;
    let Some(value) = table.get("ingest").cloned() else {
        return Ok(Default::default());
    };
    let policy: IngestPolicy = value.try_into().map_err(|e: toml::de::Error| {
        let message = e.message().trim().replace('\n', " ");
        let field = unknown_field(&message)
            .map(|f| format!("ingest.{f}"))
            .unwrap_or_else(|| "ingest".to_owned());
        let line = key_line(source, &field).max(key_line_of_table(source, "ingest"));
        FormatError::invalid(path, line, field, message)
    })?;
    policy.validate().map_err(|e| {
        let line = key_line(source, &e.key);
        FormatError::invalid(path, line, e.key.clone(), e.message)
    })?;
    Ok(policy)
}

/// The `[grounding]` table (the grounding audit's thresholds); absent, nothing is checked.
fn grounding_table(path: &Path, source: &str) -> Result<GroundingPolicy> {
    let table: toml::Table = toml::from_str(source)
        .map_err(|e| FormatError::invalid(path, 0, "-", e.message().trim().replace('\n', " ")))?;
    let Some(value) = table.get("grounding").cloned() else {
        return Ok(GroundingPolicy::default());
    };
    let policy: GroundingPolicy = value.try_into().map_err(|e: toml::de::Error| {
        let message = e.message().trim().replace('\n', " ");
        let field = unknown_field(&message)
            .map(|f| format!("grounding.{f}"))
            .unwrap_or_else(|| "grounding".to_owned());
        let line = key_line(source, &field).max(key_line_of_table(source, "grounding"));
        FormatError::invalid(path, line, field, message)
    })?;
    policy.validate().map_err(|e| {
        let line = key_line(source, &e.key).max(key_line_of_table(source, "grounding"));
        FormatError::invalid(path, line, e.key.clone(), e.message)
    })?;
    Ok(policy)
}

/// The line of `boost.rules[I].LEAF` (`rest` is `I].LEAF` or `I]`): the LEAF key after the
/// I-th (0-based) `[[boost.rules]]` header, else that header's line.
fn rule_line(source: &str, rest: &str) -> usize {
    let (index, leaf) = match rest.split_once(']') {
        Some((i, l)) => (i.parse::<usize>().unwrap_or(0), l.trim_start_matches('.')),
        None => (0, ""),
    };
    let mut seen = None;
    let mut header = 0;
    for (i, raw) in source.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('[') {
            if line.replace(' ', "") == "[[boost.rules]]" {
                seen = Some(seen.map_or(0, |s: usize| s + 1));
                if seen == Some(index) {
                    header = i + 1;
                }
            } else if seen == Some(index) {
                break;
            }
            continue;
        }
        if seen == Some(index) && !leaf.is_empty() {
            if let Some((k, _)) = line.split_once('=') {
                if k.trim().trim_matches('"') == leaf {
                    return i + 1;
                }
            }
        }
    }
    header
}

/// The line of a `[table]` header (0 when absent).
fn key_line_of_table(source: &str, table: &str) -> usize {
    source
        .lines()
        .position(|l| {
            l.trim().trim_matches(|c| c == '[' || c == ']').trim() == table
                && l.trim().starts_with('[')
        })
        .map_or(0, |i| i + 1)
}

/// The key named by serde's "unknown field `x`" message.
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest.split('`').next()?.to_owned())
}

/// Best-effort line of a key path (`domains.viajes.top_k` looks for `top_k` after the
/// `[domains.viajes]` header; `measures[1]` looks for `measures`).
pub(crate) fn key_line(source: &str, key: &str) -> usize {
    if let Some(rest) = key.strip_prefix("boost.rules[") {
        return rule_line(source, rest);
    }
    let key = key.split('[').next().unwrap_or(key);
    let (table, leaf) = match key.rsplit_once('.') {
        Some((t, l)) => (Some(t), l),
        None => (None, key),
    };
    let mut in_table = table.is_none();
    for (i, raw) in source.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('[') {
            let header = line.trim_matches(|c| c == '[' || c == ']').trim();
            in_table = table.is_some_and(|t| t == header);
            continue;
        }
        if in_table {
            if let Some((k, _)) = line.split_once('=') {
                if k.trim().trim_matches('"') == leaf {
                    return i + 1;
                }
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Policy> {
        parse_policy(Path::new("policy.toml"), s)
    }

    fn parse_corpus_policy(path: &Path, s: &str) -> Result<CorpusPolicy> {
        PolicyFile::parse_sections(path, s, &[Section::Corpus]).map(|f| f.corpus)
    }

    fn parse_ingest_policy(path: &Path, s: &str) -> Result<IngestPolicy> {
        PolicyFile::parse(path, s).map(|f| f.ingest)
    }

    #[test]
    fn empty_file_is_the_default_policy() {
        assert_eq!(parse("").unwrap(), Policy::default());
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let err = parse("top_k = 10\nrecal_floor = 0.9\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("policy.toml:2: field `recal_floor`: did you mean `recall_floor`?"),
            "{err}"
        );
    }

    #[test]
    fn out_of_range_names_line_and_key() {
        let err = parse("top_k = 10\n\n[domains.viajes]\nnoise_ceiling = 1.5\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("policy.toml:4: field `domains.viajes.noise_ceiling`"),
            "{err}"
        );
        let err = parse("top_k = 0\n").unwrap_err().to_string();
        assert!(err.starts_with("policy.toml:1: field `top_k`"), "{err}");
    }

    /// One policy file serves the exam and the grounding audit: the exam refused it.
    #[test]
    fn policy_with_a_grounding_table_is_accepted() {
        let p =
            parse("top_k = 5\n\n[grounding]\nmin_support = 0.9\n\n[domains.viajes]\ntop_k = 3\n")
                .unwrap();
        assert_eq!(p.top_k, 5);
        assert_eq!(p.domains["viajes"].top_k, Some(3));
        let err = parse("grounding = 3\n").unwrap_err().to_string();
        assert!(err.starts_with("policy.toml:1:"), "{err}");
        let err = parse("[grounding]\nx = 1\n[domains.a]\ntop_kk = 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("policy.toml:4: field `top_kk`"), "{err}");
    }

    #[test]
    fn corpus_table_is_left_to_corpus_check_and_read_by_it() {
        let src = "top_k = 5\n\n[corpus]\nmax_obsolete = 2\nexpected_batches = [\"b1\"]\n";
        assert_eq!(parse(src).unwrap().top_k, 5);
        let c = parse_corpus_policy(Path::new("policy.toml"), src).unwrap();
        assert_eq!(c.max_obsolete, Some(2));
        assert_eq!(c.expected_batches, vec!["b1"]);
        assert_eq!(c.near_duplicate_cosine, 0.95);
        let err = parse_corpus_policy(
            Path::new("policy.toml"),
            "top_k = 5\n[corpus]\nmax_obsolet = 1\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("policy.toml:3: field `corpus.max_obsolet`"),
            "{err}"
        );
        let err = parse_corpus_policy(
            Path::new("policy.toml"),
            "[corpus]\nnear_duplicate_cosine = 1.5\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("policy.toml:2: field `corpus.near_duplicate_cosine`"),
            "{err}"
        );
        let err = parse_corpus_policy(Path::new("policy.toml"), "[corpus]\nmax_drift = -1\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("policy.toml:2:"), "{err}");
        assert_eq!(
            parse_corpus_policy(Path::new("p.toml"), "top_k = 3\n").unwrap(),
            veredicto_core::hygiene::CorpusPolicy::default()
        );
    }

    #[test]
    fn ingest_table_is_read_apart_and_checked() {
        let src = "top_k = 5\n\n[ingest]\nmax_rejected = 3\nmax_rejected_percent = 1.5\n";
        assert_eq!(parse(src).unwrap().top_k, 5);
        assert_eq!(
            parse(src).unwrap().fingerprint(),
            parse("top_k = 5\n").unwrap().fingerprint()
        );
        let p = parse_ingest_policy(Path::new("policy.toml"), src).unwrap();
        assert_eq!(p.max_rejected, Some(3));
        assert_eq!(p.max_rejected_percent, Some(1.5));
        let p = parse_ingest_policy(Path::new("policy.toml"), "top_k = 5\n").unwrap();
        assert_eq!(p, Default::default());
        let err = parse_ingest_policy(Path::new("policy.toml"), "[ingest]\nmax_rejectd = 3\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("policy.toml:2: field `ingest.max_rejectd`"),
            "{err}"
        );
        let err = parse_ingest_policy(
            Path::new("policy.toml"),
            "\n[ingest]\nmax_rejected_percent = 200\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("policy.toml:3: field `ingest.max_rejected_percent`"),
            "{err}"
        );
    }

    #[test]
    fn boost_rules_are_part_of_the_policy_and_its_fingerprint() {
        let src = "top_k = 5\n\n[[boost.rules]]\nlabel = \"SINTESIS_CURADA\"\nfactor = 1.2\n\n[[boost.rules]]\ndomain = \"laboral\"\nadd = 0.05\n";
        let p = parse(src).unwrap();
        let rules = &p.boost.as_ref().unwrap().rules;
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].factor, Some(1.2));
        assert_ne!(p.fingerprint(), parse("top_k = 5\n").unwrap().fingerprint());
        // No boost: the fingerprint of a policy is what it was before boosts existed.
        assert!(!serde_json::to_string(&parse("top_k = 5\n").unwrap())
            .unwrap()
            .contains("boost"));
        let bad = "top_k = 5\n[[boost.rules]]\nlabel = \"G\"\nfactor = 1.2\n[[boost.rules]]\nlabel = \"G\"\nfactor = -1\n";
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.starts_with("policy.toml:7: field `boost.rules[1].factor`"),
            "{err}"
        );
        let err = parse("[[boost.rules]]\nlabel = \"G\"\nfactr = 2\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("factr"), "{err}");
    }

    #[test]
    fn negative_top_k_is_rejected() {
        let err = parse("top_k = -3\n").unwrap_err().to_string();
        assert!(err.starts_with("policy.toml:1:"), "{err}");
    }
}
