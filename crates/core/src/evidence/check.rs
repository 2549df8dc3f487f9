//! `golden check` and `golden convert`: where each evidence item sits in a chunking, and a
//! chunk-ID golden set rewritten as evidence spans.
//!
//! An item's place in a chunking (every chunk located in its document):
//! - **held**: the share of its characters that at least one chunk holds (a character
//!   counts once); below `evidence_coverage` no ranking of this chunking can retrieve it:
//!   the chunking dropped text (`dropped`);
//! - **split**: two or more chunks hold parts of it and none holds `evidence_coverage` of it
//!   alone, while together they do: a retriever must bring back several chunks for it;
//! - **whole**: one chunk holds enough of it.
//!
//! Converting a chunk-ID case: each expected chunk becomes the item spanning that chunk
//! (`doc_id`, `start`, `end`, its grade), in the order of `expected`. Under the exam's rules
//! an item that is exactly one chunk's span is retrieved when that chunk is (or when other
//! chunks that cover it are), so with non-overlapping chunks the converted set gives the
//! same measures as the chunk-ID set.

use super::{EvidenceItem, SpanIndex};
use crate::case::{Case, Corpus};
use serde::Serialize;

const EPS: f64 = 1e-9;

/// One chunk holding characters of an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    pub id: String,
    pub start: usize,
    pub end: usize,
}

/// How a chunking holds one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// One chunk holds enough of it.
    Whole,
    /// Only several chunks together hold enough of it.
    Split,
    /// The chunks together do not hold enough of it (the chunking dropped text, or no chunk
    /// is located in its document).
    Dropped,
}

/// Where one evidence item sits in a chunking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemPlace {
    pub case_id: String,
    /// Its position in the case's `evidence`.
    pub item: usize,
    pub doc_id: String,
    pub start: usize,
    pub end: usize,
    pub grade: u32,
    pub placement: Placement,
    /// The share of it all chunks together hold (0 to 1).
    pub held: f64,
    /// The largest share one chunk holds.
    pub best_single: f64,
    /// Characters of it that no chunk holds.
    pub uncovered: usize,
    /// Every chunk holding characters of it, in document order.
    pub chunks: Vec<Holder>,
}

/// Where every item of `cases` sits in the chunking `index`, in case and item order.
/// Each item costs one lookup in the index (its overlapping chunks), never a scan.
pub fn place_items(cases: &[Case], index: &SpanIndex, coverage: f64) -> Vec<ItemPlace> {
    let mut out = Vec::new();
    for case in cases {
        for (i, item) in case.evidence.iter().enumerate() {
            out.push(place(&case.id, i, item, index, coverage));
        }
    }
    out
}

fn place(
    case_id: &str,
    i: usize,
    item: &EvidenceItem,
    index: &SpanIndex,
    coverage: f64,
) -> ItemPlace {
    let len = item.len();
    let mut chunks = Vec::new();
    let mut best = 0usize;
    // Chunks come in document order (by start): a running reach gives the union.
    let mut held = 0usize;
    let mut reach = item.start;
    for e in index.overlapping(&item.doc_id, item.start, item.end) {
        let (s, t) = (e.start.max(item.start), e.end.min(item.end));
        best = best.max(t.saturating_sub(s));
        if t > reach {
            held += t - s.max(reach);
            reach = t;
        }
        chunks.push(Holder {
            id: e.id.clone(),
            start: e.start,
            end: e.end,
        });
    }
    let share = |n: usize| if len == 0 { 0.0 } else { n as f64 / len as f64 };
    let need = coverage * len as f64;
    let placement = if len == 0 || (held as f64) + EPS < need {
        Placement::Dropped
    } else if (best as f64) + EPS >= need {
        Placement::Whole
    } else {
        Placement::Split
    };
    ItemPlace {
        case_id: case_id.to_owned(),
        item: i,
        doc_id: item.doc_id.clone(),
        start: item.start,
        end: item.end,
        grade: item.grade,
        placement,
        held: share(held),
        best_single: share(best),
        uncovered: len - held.min(len),
        chunks,
    }
}

/// A gold case whose gold chunk is graded below another expected chunk of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GradeWarning {
    pub case_id: String,
    /// The gold chunk.
    pub chunk: String,
    pub grade: u32,
    /// The highest grade in the case, and a chunk that has it.
    pub highest: u32,
    pub highest_chunk: String,
}

/// Gold chunks (the corpus' `gold` label, or every expected chunk of a case declared
/// `gold`) graded below the highest grade of their case: a gold chunk is the case's best
/// evidence, so a lower grade is likely a mistake in the golden set.
pub fn grade_warnings(cases: &[Case], corpus: Option<&Corpus>) -> Vec<GradeWarning> {
    let mut out = Vec::new();
    for case in cases {
        let Some((highest_chunk, highest)) = case
            .expected
            .iter()
            .map(|id| (id, case.grade_of(id)))
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
        else {
            continue;
        };
        for id in &case.expected {
            let gold = corpus
                .and_then(|c| c.get(id))
                .is_some_and(|c| c.has_label("gold"));
            let grade = case.grade_of(id);
            if (gold || (case.gold && corpus.is_none())) && grade < highest {
                out.push(GradeWarning {
                    case_id: case.id.clone(),
                    chunk: id.clone(),
                    grade,
                    highest,
                    highest_chunk: highest_chunk.clone(),
                });
            }
        }
    }
    out
}

/// Why an expected chunk cannot become an evidence span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConvertProblem {
    /// The corpus has no chunk with this ID.
    NotInCorpus,
    /// The chunk is not located in a document (no `doc_id`, or no offsets and its text
    /// could not be found).
    Unlocated,
}

/// Case `case` (chunk IDs) as evidence spans: one item per expected chunk, in order, with
/// its grade. The first expected chunk that cannot be converted is the error, with its
/// position in `expected`.
pub fn convert_case(
    case: &Case,
    corpus: &Corpus,
) -> Result<Vec<EvidenceItem>, (usize, ConvertProblem)> {
    let mut items: Vec<EvidenceItem> = Vec::with_capacity(case.expected.len());
    for (i, id) in case.expected.iter().enumerate() {
        let chunk = corpus.get(id).ok_or((i, ConvertProblem::NotInCorpus))?;
        let span = chunk.span().ok_or((i, ConvertProblem::Unlocated))?;
        let grade = case.grade_of(id);
        // Two expected chunks with the same span are one piece of evidence (the higher
        // grade kept).
        if let Some(same) = items
            .iter_mut()
            .find(|x| x.doc_id == span.doc_id && x.start == span.start && x.end == span.end)
        {
            same.grade = same.grade.max(grade);
            continue;
        }
        items.push(EvidenceItem {
            doc_id: span.doc_id.to_owned(),
            start: span.start,
            end: span.end,
            grade,
            quote: None,
        });
    }
    Ok(items)
}

/// What `golden check` found (rendered by the report crate).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub golden: String,
    pub corpus: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<String>,
    pub cases: usize,
    /// Cases that name evidence spans.
    pub evidence_cases: usize,
    /// Evidence items located, and the quotes among them.
    pub items: usize,
    pub quotes: usize,
    /// Chunks in the corpus, and those located in a document.
    pub chunks: usize,
    pub chunks_located: usize,
    /// Located by their offsets (checked against the document when documents are given),
    /// and by their text.
    pub by_offsets: usize,
    pub by_text: usize,
    /// Chunks with a `doc_id` that could not be located (`id (line N: reason)`).
    pub unlocated_chunks: Vec<String>,
    pub evidence_coverage: f64,
    /// Items held whole by one chunk, split across several, dropped by the chunking.
    pub whole: usize,
    pub split: usize,
    pub dropped: usize,
    /// Every item's place, in case and item order.
    pub places: Vec<ItemPlace>,
    /// Items the golden set could not locate (a quote not found or ambiguous, offsets out
    /// of range, a repeated item): one `file:line: field …: …` line each.
    pub problems: Vec<String>,
    /// Gold chunks graded below another expected chunk of their case.
    pub grade_warnings: Vec<GradeWarning>,
}

impl CheckReport {
    /// Every item located and none dropped by the chunking.
    pub fn clean(&self) -> bool {
        self.problems.is_empty() && self.dropped == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Chunk;

    fn case(id: &str, evidence: Vec<EvidenceItem>) -> Case {
        Case {
            id: id.into(),
            query: "q".into(),
            expected: Vec::new(),
            grades: Default::default(),
            evidence,
            top_k: None,
            domain: None,
            tags: Vec::new(),
            gold: false,
            query_vector: None,
            filters: None,
        }
    }

    fn item(doc: &str, start: usize, end: usize) -> EvidenceItem {
        EvidenceItem {
            doc_id: doc.into(),
            start,
            end,
            grade: 1,
            quote: None,
        }
    }

    #[test]
    fn items_are_whole_split_or_dropped() {
        let index = SpanIndex::new([
            ("d", 0, 50, "c1"),
            ("d", 40, 100, "c2"),
            ("d", 120, 200, "c3"),
        ]);
        let cases = [case(
            "q",
            vec![
                item("d", 10, 30),
                item("d", 30, 80),
                item("d", 90, 130),
                item("e", 0, 5),
            ],
        )];
        let got = place_items(&cases, &index, 1.0);
        let p: Vec<_> = got.iter().map(|x| x.placement).collect();
        assert_eq!(
            p,
            [
                Placement::Whole,
                Placement::Split,
                Placement::Dropped,
                Placement::Dropped
            ]
        );
        assert_eq!(got[1].chunks.len(), 2);
        assert_eq!(got[2].uncovered, 20);
        assert!((got[2].held - 0.5).abs() < 1e-12);
        assert_eq!(got[3].uncovered, 5);
        // Under half coverage the split item is held whole by c2 (40 of 50).
        let got = place_items(&cases, &index, 0.5);
        assert_eq!(got[1].placement, Placement::Whole);
        assert_eq!(
            got[2].placement,
            Placement::Split,
            "10 + 10 of 40 characters"
        );
    }

    #[test]
    fn chunk_ids_become_the_chunks_spans() {
        let chunk = |id: &str, s: usize, e: usize| Chunk {
            id: id.into(),
            doc_id: Some("d".into()),
            start: Some(s),
            end: Some(e),
            ..Default::default()
        };
        let corpus = Corpus::new([
            chunk("a", 0, 10),
            chunk("b", 10, 20),
            Chunk {
                id: "x".into(),
                ..Default::default()
            },
        ]);
        let mut c = case("q", Vec::new());
        c.expected = vec!["b".into(), "a".into()];
        c.grades.insert("a".into(), 2);
        let items = convert_case(&c, &corpus).unwrap();
        assert_eq!(
            items
                .iter()
                .map(|i| (i.start, i.end, i.grade))
                .collect::<Vec<_>>(),
            [(10, 20, 1), (0, 10, 2)]
        );
        c.expected = vec!["a".into(), "x".into()];
        assert_eq!(
            convert_case(&c, &corpus),
            Err((1, ConvertProblem::Unlocated))
        );
        c.expected = vec!["zz".into()];
        assert_eq!(
            convert_case(&c, &corpus),
            Err((0, ConvertProblem::NotInCorpus))
        );
    }

    #[test]
    fn a_gold_chunk_graded_below_another_is_warned() {
        let corpus = Corpus::new([
            Chunk {
                id: "g".into(),
                labels: vec!["gold".into()],
                ..Default::default()
            },
            Chunk {
                id: "s".into(),
                ..Default::default()
            },
        ]);
        let mut c = case("q", Vec::new());
        c.expected = vec!["g".into(), "s".into()];
        c.grades.insert("s".into(), 3);
        let w = grade_warnings(std::slice::from_ref(&c), Some(&corpus));
        assert_eq!(w.len(), 1);
        assert_eq!((w[0].chunk.as_str(), w[0].highest), ("g", 3));
        c.grades.clear();
        assert!(grade_warnings(&[c], Some(&corpus)).is_empty());
    }
}
