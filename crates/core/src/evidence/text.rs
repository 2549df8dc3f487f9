//! Documents' texts: offsets in Unicode scalar values, the one normalisation quotes and chunk
//! texts are compared under, and locating a quote exactly.
//!
//! **Normalisation** (the only one): the text is put in Unicode Normalization Form C (NFC,
//! canonical composition: `e` + combining acute and `é` read the same), then every run of
//! white space (Unicode `White_Space`: spaces, tabs, line breaks, no-break spaces) becomes
//! one space. Nothing else changes: case, punctuation, quotes and dashes are compared as
//! they are. Quotes and chunk texts are also trimmed of white space at both ends.
//!
//! **Locating** a quote: its normalised text must occur in the document's normalised text;
//! every starting position counts (occurrences may overlap). The match maps back to the
//! document's own offsets: a run of white space maps to the whole run, and where NFC changed
//! a character sequence the span widens to the whole sequence (a base character with its
//! combining marks), so that the span always holds what matched.

use memchr::memmem::Finder;
use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

/// Characters between two recorded byte offsets of a [`DocText`].
const SAMPLE: usize = 64;

/// A document's text with fast conversion between character and byte offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocText {
    text: String,
    chars: usize,
    /// Byte offset of every [`SAMPLE`]-th character (empty for ASCII text, where characters
    /// are bytes).
    samples: Vec<usize>,
}

impl DocText {
    pub fn new(text: String) -> DocText {
        if text.is_ascii() {
            return DocText {
                chars: text.len(),
                text,
                samples: Vec::new(),
            };
        }
        let mut samples = Vec::with_capacity(text.len() / SAMPLE + 1);
        let mut chars = 0usize;
        for (b, _) in text.char_indices() {
            if chars.is_multiple_of(SAMPLE) {
                samples.push(b);
            }
            chars += 1;
        }
        DocText {
            text,
            chars,
            samples,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its length in characters.
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// The byte offset of character `i` (`i` may be the length: the end).
    pub fn byte_of(&self, i: usize) -> Option<usize> {
        if i > self.chars {
            return None;
        }
        if self.samples.is_empty() {
            return Some(i);
        }
        if i == self.chars {
            return Some(self.text.len());
        }
        let from = self.samples[i / SAMPLE];
        let skip = i % SAMPLE;
        self.text[from..]
            .char_indices()
            .nth(skip)
            .map(|(b, _)| from + b)
    }

    /// Characters `start..end`, when they are within the text and `start <= end`.
    pub fn slice(&self, start: usize, end: usize) -> Option<&str> {
        if start > end {
            return None;
        }
        let a = self.byte_of(start)?;
        let b = self.byte_of(end)?;
        Some(&self.text[a..b])
    }

    /// The character offset of byte `b`, when `b` is on a character boundary.
    pub fn char_of_byte(&self, b: usize) -> Option<usize> {
        if !self.text.is_char_boundary(b) {
            return None;
        }
        if self.samples.is_empty() {
            return Some(b);
        }
        // The last sample at or before `b`, then count forward.
        let k = self.samples.partition_point(|&s| s <= b).saturating_sub(1);
        let from = self.samples[k];
        Some(k * SAMPLE + self.text[from..b].chars().count())
    }

    /// The character offset of UTF-16 code unit `u`, when `u` does not fall inside a
    /// surrogate pair.
    pub fn char_of_utf16(&self, u: usize) -> Option<usize> {
        if self.samples.is_empty() {
            return (u <= self.text.len()).then_some(u);
        }
        let mut units = 0usize;
        for (i, c) in self.text.chars().enumerate() {
            if units == u {
                return Some(i);
            }
            units += c.len_utf16();
            if units > u {
                return None;
            }
        }
        (units == u).then_some(self.chars)
    }

    /// Converts an offset given in `unit` to characters; `None` when it is beyond the text or
    /// not on a character boundary.
    pub fn to_chars(&self, offset: usize, unit: super::OffsetUnit) -> Option<usize> {
        match unit {
            super::OffsetUnit::Chars => (offset <= self.chars).then_some(offset),
            super::OffsetUnit::Bytes => self.char_of_byte(offset),
            super::OffsetUnit::Utf16 => self.char_of_utf16(offset),
        }
    }
}

/// A text under the normalisation, with where each of its characters came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    text: String,
    /// Per character of `text`: the original character offset where it starts.
    origin: Vec<u32>,
    /// Characters of the original text.
    original_chars: usize,
}

/// Whether a segment may start before `c`: NFC never composes across such a position
/// (a starter that is NFC on its own).
fn safe_boundary(c: char) -> bool {
    c.is_ascii()
        || (canonical_combining_class(c) == 0
            && is_nfc_quick(std::iter::once(c)) == IsNormalized::Yes)
}

impl Normalized {
    /// Normalises `s` (NFC, then runs of white space as one space; not trimmed).
    pub fn new(s: &str) -> Normalized {
        let mut text = String::with_capacity(s.len());
        let mut origin: Vec<u32> = Vec::with_capacity(s.len());
        let mut in_space = false;
        let mut push = |c: char, at: usize, text: &mut String, origin: &mut Vec<u32>| {
            if c.is_whitespace() {
                if in_space {
                    return;
                }
                in_space = true;
                text.push(' ');
            } else {
                in_space = false;
                text.push(c);
            }
            origin.push(at as u32);
        };
        if s.is_ascii() {
            for (i, b) in s.bytes().enumerate() {
                push(char::from(b), i, &mut text, &mut origin);
            }
            return Normalized {
                text,
                origin,
                original_chars: s.len(),
            };
        }
        let chars: Vec<(usize, char)> = s.char_indices().collect();
        let n = chars.len();
        let mut i = 0;
        while i < n {
            // One segment: a safe starter and what follows up to the next safe boundary.
            let mut j = i + 1;
            while j < n && !safe_boundary(chars[j].1) {
                j += 1;
            }
            let from = chars[i].0;
            let to = if j < n { chars[j].0 } else { s.len() };
            let seg = &s[from..to];
            if j == i + 1 && safe_boundary(chars[i].1) {
                push(chars[i].1, i, &mut text, &mut origin);
            } else {
                let nfc: String = seg.nfc().collect();
                if nfc == seg {
                    for (k, c) in seg.chars().enumerate() {
                        push(c, i + k, &mut text, &mut origin);
                    }
                } else {
                    // Changed by NFC: every character of it maps to the whole segment.
                    for c in nfc.chars() {
                        push(c, i, &mut text, &mut origin);
                    }
                }
            }
            i = j;
        }
        Normalized {
            text,
            origin,
            original_chars: n,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The original span `(start, end)` of normalised characters `a..b` (`a < b`): from where
    /// character `a` starts to where the first character after `b - 1` that starts later
    /// begins (the end of the original text when none does).
    pub fn original_span(&self, a: usize, b: usize) -> (usize, usize) {
        let start = self.origin[a] as usize;
        let last = self.origin[b - 1];
        let end = self.origin[b..]
            .iter()
            .find(|&&o| o > last)
            .map_or(self.original_chars, |&o| o as usize);
        (start, end)
    }

    /// The normalised character offset of byte `b` of the normalised text.
    fn char_at_byte(&self, b: usize) -> usize {
        if self.text.len() == self.origin.len() {
            b
        } else {
            self.text[..b].chars().count()
        }
    }
}

/// `s` normalised and trimmed, as quotes and chunk texts are compared.
pub fn normalized_trimmed(s: &str) -> String {
    Normalized::new(s).as_str().trim_matches(' ').to_owned()
}

/// Why a quote could not be located.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocateError {
    #[error("the quote is empty (after normalisation)")]
    Empty,
    #[error("the quote is not in the document's text (compared after NFC normalisation, with every run of white space as one space)")]
    NotFound,
    #[error("the quote occurs {count} times in the document's text: say which with `occurrence` (1 to {count})")]
    Ambiguous { count: usize },
    #[error(
        "`occurrence` is {occurrence} but the quote occurs {count} time(s) in the document's text"
    )]
    NoSuchOccurrence { occurrence: usize, count: usize },
}

/// A document prepared for locating quotes: its normalised text and a way back to its own
/// offsets. Build once per document, locate many quotes.
#[derive(Debug, Clone)]
pub struct Locator {
    norm: Normalized,
}

impl Locator {
    pub fn new(doc: &str) -> Locator {
        Locator {
            norm: Normalized::new(doc),
        }
    }

    /// Byte positions (in the normalised text) where `needle` starts, overlapping ones too.
    fn positions(&self, needle: &str) -> Vec<usize> {
        let hay = self.norm.as_str().as_bytes();
        let finder = Finder::new(needle.as_bytes());
        let mut out = Vec::new();
        let mut from = 0usize;
        while from <= hay.len() {
            match finder.find(&hay[from..]) {
                Some(p) => {
                    out.push(from + p);
                    // The next position that can start a character.
                    from += p + 1;
                    while from < hay.len() && (hay[from] & 0xC0) == 0x80 {
                        from += 1;
                    }
                }
                None => break,
            }
        }
        out
    }

    /// How many times `quote` occurs (after normalisation and trimming).
    pub fn count(&self, quote: &str) -> usize {
        let needle = normalized_trimmed(quote);
        if needle.is_empty() {
            return 0;
        }
        self.positions(&needle).len()
    }

    /// The span `(start, end)` of `quote` in the document's own character offsets. With
    /// `occurrence` (1-based) the n-th match in text order is taken; without it the quote
    /// must occur exactly once.
    pub fn locate(
        &self,
        quote: &str,
        occurrence: Option<usize>,
    ) -> Result<(usize, usize), LocateError> {
        let needle = normalized_trimmed(quote);
        if needle.is_empty() {
            return Err(LocateError::Empty);
        }
        let found = self.positions(&needle);
        let count = found.len();
        let at = match (count, occurrence) {
            (0, _) => return Err(LocateError::NotFound),
            (_, Some(n)) if n == 0 || n > count => {
                return Err(LocateError::NoSuchOccurrence {
                    occurrence: n,
                    count,
                })
            }
            (_, Some(n)) => found[n - 1],
            (1, None) => found[0],
            (_, None) => return Err(LocateError::Ambiguous { count }),
        };
        let a = self.norm.char_at_byte(at);
        let b = a + needle.chars().count();
        Ok(self.norm.original_span(a, b))
    }
}

/// Whether `chunk_text` is what characters `start..end` of `doc` say, under the
/// normalisation (both trimmed).
pub fn same_text(doc_slice: &str, chunk_text: &str) -> bool {
    normalized_trimmed(doc_slice) == normalized_trimmed(chunk_text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locate(doc: &str, quote: &str) -> Result<(usize, usize), LocateError> {
        Locator::new(doc).locate(quote, None)
    }

    fn chars(doc: &str, (a, b): (usize, usize)) -> String {
        doc.chars().skip(a).take(b - a).collect()
    }

    #[test]
    fn a_quote_is_found_across_line_breaks_and_mapped_back() {
        let doc = "La cuota se calcula\n   aplicando la escala. Fin.";
        let span = locate(doc, "se calcula aplicando").unwrap();
        assert_eq!(chars(doc, span), "se calcula\n   aplicando");
        assert_eq!(
            locate(doc, "  Fin.  ").map(|s| chars(doc, s)).unwrap(),
            "Fin."
        );
    }

    #[test]
    fn composed_and_decomposed_accents_match_and_offsets_count_scalar_values() {
        // "é" written as e + U+0301 in the document, precomposed in the quote.
        let doc = "caf\u{65}\u{301} con leche, más café";
        let span = locate(doc, "café con").unwrap();
        assert_eq!(span, (0, 9));
        assert_eq!(chars(doc, span), "caf\u{65}\u{301} con");
        // The precomposed one at the end: 20 scalar values before it.
        let span = Locator::new(doc).locate("café", Some(2)).unwrap();
        assert_eq!(chars(doc, span), "café");
    }

    #[test]
    fn missing_ambiguous_and_chosen_occurrences() {
        let doc = "a b a b a";
        assert_eq!(locate(doc, "c"), Err(LocateError::NotFound));
        assert_eq!(locate(doc, "a b"), Err(LocateError::Ambiguous { count: 2 }));
        // Overlapping occurrences count: "a b a" starts at 0 and 4.
        assert_eq!(Locator::new(doc).count("a b a"), 2);
        assert_eq!(Locator::new(doc).locate("a b", Some(2)), Ok((4, 7)));
        assert_eq!(
            Locator::new(doc).locate("a b", Some(3)),
            Err(LocateError::NoSuchOccurrence {
                occurrence: 3,
                count: 2
            })
        );
        assert_eq!(locate(doc, " \n "), Err(LocateError::Empty));
    }

    #[test]
    fn offsets_convert_from_bytes_and_utf16() {
        let t = DocText::new("añ😀b".repeat(40));
        // "a" 1 byte, "ñ" 2 bytes, "😀" 4 bytes (2 UTF-16 units), "b" 1 byte.
        assert_eq!(t.char_of_byte(3), Some(2));
        assert_eq!(t.char_of_byte(2), None, "inside ñ");
        assert_eq!(t.char_of_utf16(4), Some(3));
        assert_eq!(t.char_of_utf16(3), None, "inside the surrogate pair");
        assert_eq!(t.char_of_byte(8 * 40), Some(160));
        assert_eq!(t.char_of_byte(8 * 39 + 3), Some(39 * 4 + 2));
        assert_eq!(t.slice(158, 160), Some("😀b"));
        assert_eq!(t.slice(159, 161), None);
        assert_eq!(t.byte_of(160), Some(320));
        let a = DocText::new("plain".into());
        assert_eq!(a.slice(1, 3), Some("la"));
        assert_eq!(a.to_chars(5, super::super::OffsetUnit::Utf16), Some(5));
        assert_eq!(a.to_chars(6, super::super::OffsetUnit::Bytes), None);
    }

    #[test]
    fn no_break_spaces_and_tabs_are_white_space() {
        let doc = "Artículo\u{a0}5.\tLa\r\nbase";
        assert_eq!(
            locate(doc, "Artículo 5. La base").map(|s| chars(doc, s)),
            Ok(doc.to_owned())
        );
        assert!(same_text("  x \n y ", "x y"));
    }
}
