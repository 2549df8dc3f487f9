//! The analysers of the lexical arm: how a text becomes the terms BM25 counts.
//!
//! One pipeline per language, the same at ingest and at query time:
//!
//! 1. split on every character that is not alphanumeric (Unicode letters and digits);
//! 2. drop tokens longer than [`MAX_TOKEN_BYTES`] bytes (base64, hashes, URLs run together);
//! 3. lower-case (Unicode);
//! 4. remove the language's stop words (English: Lucene's 33 words, as Elasticsearch and
//!    Anserini do; Spanish: the Snowball list), matched before accents are folded;
//! 5. fold accents and other diacritics to ASCII (`acción` → `accion`, `ñ` → `n`,
//!    `ß` → `ss`), so a query typed without accents finds the accented text;
//! 6. stem with the language's Snowball stemmer (English: Porter2; Spanish: Snowball Spanish).
//!
//! Folding comes before stemming so that `acción`, `accion` and `acciones` reach the stemmer
//! in one spelling. [`ANALYZER_VERSION`] is recorded in the manifest: a change to any step
//! bumps it, and an index whose lexical arm was analysed by another version is re-analysed at
//! the next ingest and refused by search until then (its terms would not match the query's).

use serde::{Deserialize, Serialize};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer, Token, TokenStream,
};

/// Tokens longer than this (in bytes, before lower-casing) are dropped.
pub const MAX_TOKEN_BYTES: usize = 40;

/// Version of the analysis pipeline (the steps above); recorded with every lexical arm.
pub const ANALYZER_VERSION: u32 = 1;

/// The language of a lexical arm's analyser (per index, recorded in the manifest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Analyzer {
    /// English: Lucene's stop words, Snowball English (Porter2) stemming.
    #[serde(rename = "english")]
    English,
    /// Spanish: Snowball's stop words and stemmer.
    #[serde(rename = "spanish")]
    Spanish,
}

impl Analyzer {
    /// Every analyser, for help texts.
    pub const ALL: [Analyzer; 2] = [Analyzer::English, Analyzer::Spanish];

    /// The canonical name (`english`, `spanish`).
    pub fn name(self) -> &'static str {
        match self {
            Analyzer::English => "english",
            Analyzer::Spanish => "spanish",
        }
    }

    /// The name the analyser is registered under in the tantivy index's schema.
    pub(crate) fn tokenizer_name(self) -> &'static str {
        match self {
            Analyzer::English => "veredicto_english",
            Analyzer::Spanish => "veredicto_spanish",
        }
    }

    fn language(self) -> Language {
        match self {
            Analyzer::English => Language::English,
            Analyzer::Spanish => Language::Spanish,
        }
    }

    /// The tantivy analyser of this language (steps 1 to 6 above).
    pub(crate) fn text_analyzer(self) -> TextAnalyzer {
        let language = self.language();
        let builder = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
            .filter(LowerCaser);
        // Both languages have a stop-word list in tantivy; an empty filter otherwise.
        let stop = StopWordFilter::new(language).unwrap_or_else(|| StopWordFilter::remove([]));
        builder
            .filter(stop)
            .filter(AsciiFoldingFilter)
            .filter(Stemmer::new(language))
            .build()
    }

    /// The terms of `text`, in text order, repeated terms repeated.
    pub fn terms(self, text: &str) -> Vec<String> {
        let mut analyzer = self.text_analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    /// The tokens of `text` for indexing (with their offsets and positions).
    pub(crate) fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<Token> {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().clone());
        }
        out
    }
}

impl std::fmt::Display for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Analyzer {
    type Err = String;

    fn from_str(s: &str) -> Result<Analyzer, String> {
        match s.to_ascii_lowercase().as_str() {
            "english" | "en" => Ok(Analyzer::English),
            "spanish" | "es" => Ok(Analyzer::Spanish),
            _ => Err(format!(
                "unknown analyser {:?}: expected english or spanish",
                veredicto_core::redact::short(s)
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Analyzer;

    #[test]
    fn spanish_folds_accents_before_stemming_so_both_spellings_meet() {
        let a = Analyzer::Spanish;
        assert_eq!(a.terms("acción"), a.terms("accion"));
        assert_eq!(a.terms("Información"), a.terms("informacion"));
        assert_eq!(a.terms("acciones"), a.terms("ACCIÓN"));
        assert_eq!(a.terms("año"), a.terms("ano"));
        // Stop words go, accented or not as written in the list.
        assert_eq!(a.terms("de la más"), Vec::<String>::new());
    }

    #[test]
    fn english_lowercases_stems_and_drops_lucene_stop_words() {
        let a = Analyzer::English;
        assert_eq!(a.terms("The Running of the Dogs"), ["run", "dog"]);
        assert_eq!(a.terms("café"), a.terms("cafe"));
        // Tokens split on punctuation; a BOM is not a letter.
        assert_eq!(a.terms("\u{feff}T-cells, 5%"), ["t", "cell", "5"]);
        let long = "x".repeat(super::MAX_TOKEN_BYTES + 1);
        assert_eq!(a.terms(&format!("{long} word")), ["word"]);
    }

    #[test]
    fn analyser_names_parse_back() {
        for a in Analyzer::ALL {
            assert_eq!(a.name().parse::<Analyzer>(), Ok(a));
        }
        assert!("french".parse::<Analyzer>().is_err());
    }
}
