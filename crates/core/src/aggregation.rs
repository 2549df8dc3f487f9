//! Questions that similarity search cannot answer: counts over a collection ("how many
//! contracts expire this quarter"), superlatives over a set ("the most expensive supplier"),
//! series over time ("month by month") and sums or averages. A retriever returns a few
//! passages; these questions need every item of a collection compared or added up, so they
//! belong to a query over structured data, not to the retrieval exam. They are flagged with
//! the reason, so that they are routed elsewhere and not counted as retrieval failures.
//!
//! The patterns are Spanish and English, matched on the normalised question
//! ([`normalize`]: lower case, accents and punctuation removed). A plain "how many days of
//! leave" is a fact lookup, not an aggregation: a count is flagged only with a collection
//! noun (contracts, suppliers, invoices…) or a time window (this quarter, este mes…).

use serde::{Deserialize, Serialize};

/// Why a question is an aggregation, with the words that matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Aggregation {
    /// `count`, `superlative`, `series` or `sum_or_average`.
    pub kind: String,
    /// The words of the question that matched.
    pub matched: String,
    /// A sentence for people.
    pub reason: String,
}

/// Lower case, accents removed (á→a, ñ→n, ü→u…), every character that is not a letter or a
/// digit replaced by a space, runs of spaces collapsed, trimmed.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = true;
    for c in text.chars().flat_map(char::to_lowercase) {
        let c = fold_accent(c);
        if c.is_alphanumeric() {
            out.push(c);
            space = false;
        } else if !space {
            out.push(' ');
            space = true;
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// The base letter of a Latin letter with an accent (lower case input).
pub fn fold_accent(c: char) -> char {
    match c {
        'á' | 'à' | 'â' | 'ä' | 'ã' | 'å' => 'a',
        'é' | 'è' | 'ê' | 'ë' => 'e',
        'í' | 'ì' | 'î' | 'ï' => 'i',
        'ó' | 'ò' | 'ô' | 'ö' | 'õ' => 'o',
        'ú' | 'ù' | 'û' | 'ü' => 'u',
        'ñ' => 'n',
        'ç' => 'c',
        other => other,
    }
}

const COUNT_WORDS: &[&str] = &[
    "how many",
    "number of",
    "count of",
    "count the",
    "cuantos",
    "cuantas",
    "numero de",
    "cantidad de",
];

/// Plural nouns of collections (stems: `contract` matches `contracts`, `contrato` matches
/// `contratos`).
const COLLECTIONS: &[&str] = &[
    "contract",
    "supplier",
    "vendor",
    "invoice",
    "customer",
    "client",
    "employee",
    "document",
    "order",
    "ticket",
    "project",
    "provider",
    "contrato",
    "proveedor",
    "factura",
    "cliente",
    "empleado",
    "trabajador",
    "documento",
    "pedido",
    "expediente",
    "proyecto",
    "incidencia",
];

const TIME_WINDOWS: &[&str] = &[
    "this quarter",
    "this month",
    "this year",
    "last quarter",
    "last month",
    "last year",
    "next quarter",
    "next month",
    "per quarter",
    "este trimestre",
    "este mes",
    "este ano",
    "el trimestre",
    "proximo trimestre",
    "proximo mes",
    "ultimo trimestre",
    "ultimo mes",
    "por trimestre",
];

const SUPERLATIVES: &[&str] = &[
    "most expensive",
    "least expensive",
    "cheapest",
    "highest",
    "lowest",
    "largest",
    "biggest",
    "smallest",
    "top 3",
    "top 5",
    "top 10",
    "ranking",
    "mas caro",
    "mas cara",
    "mas barato",
    "mas barata",
    "mas alto",
    "mas alta",
    "mas bajo",
    "mas baja",
    "mayor importe",
    "menor importe",
    "el que mas",
    "la que mas",
    "los que mas",
    "las que mas",
];

/// Series over time. "monthly salary" or "per month" alone are facts, not series.
const SERIES: &[&str] = &[
    "month by month",
    "quarter by quarter",
    "year by year",
    "year over year",
    "over time",
    "trend",
    "broken down by month",
    "mes a mes",
    "trimestre a trimestre",
    "ano a ano",
    "ano tras ano",
    "desglosado por mes",
    "por meses",
    "evolucion",
    "tendencia",
];

const SUMS: &[&str] = &[
    "in total",
    "the total",
    "sum of",
    "average",
    "on average",
    "en total",
    "suma de",
    "promedio",
    "media de",
    "el total",
];

/// Whether `phrase` occurs in the normalised `text` as whole words.
fn has_phrase(text: &str, phrase: &str) -> bool {
    let padded = format!(" {text} ");
    padded.contains(&format!(" {phrase} "))
}

/// The first phrase of `list` in `text`.
fn first<'a>(text: &str, list: &[&'a str]) -> Option<&'a str> {
    list.iter().copied().find(|p| has_phrase(text, p))
}

/// Whether `question` asks for an aggregation, and why. Rules, in order: a series over
/// time; a superlative over a set; a sum or average; a count with a collection noun within
/// the three words after the count word, or with a time window anywhere.
pub fn classify(question: &str) -> Option<Aggregation> {
    let text = normalize(question);
    if let Some(p) = first(&text, SERIES) {
        return Some(Aggregation {
            kind: "series".into(),
            matched: p.into(),
            reason: "asks for a series over time: each period must be computed from every item, \
                     which similarity search does not return"
                .into(),
        });
    }
    if let Some(p) = first(&text, SUPERLATIVES) {
        return Some(Aggregation {
            kind: "superlative".into(),
            matched: p.into(),
            reason: "asks for the extreme of a set: every item must be compared, similarity \
                     search returns only the passages most like the question"
                .into(),
        });
    }
    if let Some(p) = first(&text, SUMS) {
        return Some(Aggregation {
            kind: "sum_or_average".into(),
            matched: p.into(),
            reason: "asks for a sum or an average over many items, which no single passage holds"
                .into(),
        });
    }
    let words: Vec<&str> = text.split(' ').collect();
    for cw in COUNT_WORDS {
        let n = cw.split(' ').count();
        for i in 0..words.len().saturating_sub(n - 1) {
            if words[i..i + n].join(" ") != *cw {
                continue;
            }
            let after = &words[i + n..(i + n + 3).min(words.len())];
            let noun = after.iter().find(|w| {
                COLLECTIONS
                    .iter()
                    .any(|c| w.starts_with(c) && w.ends_with('s'))
            });
            let window = first(&text, TIME_WINDOWS);
            if noun.is_some() || window.is_some() {
                let matched = match (noun, window) {
                    (Some(n), Some(w)) => format!("{cw} {n} … {w}"),
                    (Some(n), None) => format!("{cw} {n}"),
                    (None, Some(w)) => format!("{cw} … {w}"),
                    (None, None) => unreachable!(),
                };
                return Some(Aggregation {
                    kind: "count".into(),
                    matched,
                    reason: "counts the items of a collection that meet a condition: every item \
                             must be checked, similarity search returns a few"
                        .into(),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregations_in_spanish_and_english_are_flagged_with_their_kind() {
        let cases = [
            ("How many contracts expire this quarter?", "count"),
            ("¿Cuántos contratos vencen este trimestre?", "count"),
            ("Who is the most expensive supplier?", "superlative"),
            ("¿Cuál es el proveedor más caro?", "superlative"),
            ("Invoices month by month in 2025", "series"),
            ("Gasto en dietas mes a mes", "series"),
            ("What is the average invoice amount?", "sum_or_average"),
            ("¿Cuánto gastamos en total en viajes?", "sum_or_average"),
            ("Número de facturas pendientes", "count"),
        ];
        for (q, kind) in cases {
            let a = classify(q).unwrap_or_else(|| panic!("{q} not flagged"));
            assert_eq!(a.kind, kind, "{q}");
            assert!(!a.reason.is_empty());
        }
    }

    #[test]
    fn fact_lookups_with_a_count_word_are_not_aggregations() {
        for q in [
            "¿Cuántos días de asuntos propios corresponden?",
            "¿Cuál es el salario base mensual del grupo II y cuántas pagas hay?",
            "What is the monthly fee per month for a self-employed worker?",
            "A total of 1,000 people in the UK are asymptomatic carriers of vCJD infection.",
            "How many days of paternity leave do I get?",
            "¿Cómo se calcula el IRPF 2025 para autónomos?",
            "¿Qué percibos exige un desplazamiento internacional?",
        ] {
            assert_eq!(classify(q), None, "{q}");
        }
    }

    #[test]
    fn normalize_folds_case_accents_and_punctuation() {
        assert_eq!(
            normalize("  ¿Cuántos DÍAS, de año?  "),
            "cuantos dias de ano"
        );
    }
}
