//! Golden sets with evidence spans: quotes located in the documents' text, and the errors
//! (quote missing or ambiguous, both `expected` and `evidence`) naming file, line and field.

use std::io::Write;
use veredicto_formats::documents::read_documents;
use veredicto_formats::golden::read_golden_with;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

fn docs() -> tempfile::NamedTempFile {
    file(concat!(
        r#"{"id": "D1", "text": "La cuota  se calcula\naplicando la escala. Otra frase. Otra frase."}"#,
        "\n"
    ))
}

#[test]
fn a_quote_is_located_after_normalising_white_space() {
    let d = docs();
    let documents = read_documents(d.path()).unwrap();
    let g = file(concat!(
        r#"{"id": "q1", "query": "¿cuota?", "evidence": [{"doc_id": "D1", "quote": "cuota se calcula aplicando", "grade": 2}, {"doc_id": "D1", "start": 0, "end": 2}]}"#,
        "\n"
    ));
    let cases = read_golden_with(g.path(), Some(&documents)).unwrap();
    let ev = &cases[0].evidence;
    assert_eq!((ev[0].start, ev[0].end, ev[0].grade), (3, 30, 2));
    assert_eq!((ev[1].start, ev[1].end, ev[1].grade), (0, 2, 1));
}

#[test]
fn a_missing_or_ambiguous_quote_names_the_line_and_field() {
    let d = docs();
    let documents = read_documents(d.path()).unwrap();
    let g = file(concat!(
        r#"{"id": "q1", "query": "a", "evidence": [{"doc_id": "D1", "quote": "Otra frase."}]}"#,
        "\n"
    ));
    let err = read_golden_with(g.path(), Some(&documents))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(":1:") && err.contains("evidence[0].quote"),
        "{err}"
    );
    let g = file(concat!(
        r#"{"id": "q1", "query": "a", "evidence": [{"doc_id": "D1", "quote": "Otra frase.", "occurrence": 2}]}"#,
        "\n",
        r#"{"id": "q2", "query": "a", "evidence": [{"doc_id": "D1", "quote": "no está"}]}"#,
        "\n"
    ));
    let err = read_golden_with(g.path(), Some(&documents))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(":2:") && err.contains("evidence[0].quote"),
        "{err}"
    );
}

#[test]
fn a_case_with_both_expected_and_evidence_is_an_error() {
    let g = file(concat!(
        r#"{"id": "q1", "query": "a", "expected": ["c1"], "evidence": [{"doc_id": "D1", "start": 0, "end": 2}]}"#,
        "\n"
    ));
    let err = read_golden_with(g.path(), None).unwrap_err().to_string();
    assert!(err.contains(":1:") && err.contains("not both"), "{err}");
}
