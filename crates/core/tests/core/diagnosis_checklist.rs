//! The diagnosis checklist (SPEC §4), one crafted corpus per item, built from variations of
//! examples/rack's IRPF table chunk: each failing case's findings say what they saw.

use std::collections::BTreeMap;
use veredicto_core::case::{Case, Chunk, Corpus};
use veredicto_core::diagnosis::Check;
use veredicto_core::exam::{evaluate, CaseResult, ExamInput};
use veredicto_core::policy::Policy;
use veredicto_core::run::{Retrieved, Run};

const TABLE: &str = "| Base liquidable hasta (€) | Tipo estatal (%) |\n|---|---|\n| 12.450 | 9,5 |\n| 20.200 | 12 |\n| 35.200 | 15 |\n";

/// The IRPF case of seed 000 with `table` as its third expected chunk, buried at rank 15
/// behind chunks of batch `2025-11-14-viajes`.
fn exam_with(table: Chunk) -> CaseResult {
    let case = Case {
        id: "q-irpf".into(),
        query: "¿Cómo se calcula el IRPF 2025 para autónomos?".into(),
        expected: vec![
            "gold_001".into(),
            "silver_legal_045".into(),
            table.id.clone(),
        ],
        grades: Default::default(),
        evidence: Vec::new(),
        top_k: Some(10),
        domain: Some("fiscal".into()),
        tags: vec!["numeric".into()],
        gold: false,
        query_vector: None,
        filters: None,
    };
    let mut chunks = vec![
        Chunk {
            id: "gold_001".into(),
            text: Some("Síntesis del cálculo del IRPF para autónomos.".into()),
            representation: Some("Cómo se calcula el IRPF de un autónomo".into()),
            domain: Some("fiscal".into()),
            ..Chunk::default()
        },
        Chunk {
            id: "silver_legal_045".into(),
            text: Some(
                "Artículo 28 de la Ley del IRPF: rendimientos de actividades económicas.".into(),
            ),
            representation: Some("Artículo de la ley sobre rendimientos de autónomos".into()),
            domain: Some("fiscal".into()),
            ..Chunk::default()
        },
    ];
    let mut list = vec![
        Retrieved {
            id: "gold_001".into(),
            score: Some(0.9),
        },
        Retrieved {
            id: "silver_legal_045".into(),
            score: Some(0.85),
        },
    ];
    for i in 3..=14 {
        let id = format!("nuevo_{i}");
        chunks.push(Chunk {
            id: id.clone(),
            text: Some("Procedimiento de gastos de viaje.".into()),
            ingest_batch: Some("2025-11-14-viajes".into()),
            ..Chunk::default()
        });
        list.push(Retrieved {
            id,
            score: Some(0.84 - i as f64 / 100.0),
        });
    }
    if table.id != "missing_chunk" {
        list.push(Retrieved {
            id: table.id.clone(),
            score: Some(0.5),
        });
        chunks.push(table);
    }
    let corpus = Corpus::new(chunks);
    let mut run = Run::default();
    run.queries.insert("q-irpf".into(), list);
    let policy = Policy {
        noise_ceiling: 1.0,
        ..Policy::default()
    };
    let notes = BTreeMap::new();
    let r = evaluate(ExamInput {
        cases: std::slice::from_ref(&case),
        run: &run,
        corpus: Some(&corpus),
        policy: &policy,
        notes: &notes,
        as_of: Some("2025-11-14"),
    });
    r.cases.into_iter().next().unwrap()
}

fn table(id: &str) -> Chunk {
    Chunk {
        id: id.into(),
        doc_id: Some("DOC-IRPF".into()),
        text: Some(TABLE.into()),
        representation: Some(
            "Escala estatal del IRPF 2025: tramos de base liquidable y tipos para autónomos".into(),
        ),
        domain: Some("fiscal".into()),
        ..Chunk::default()
    }
}

/// The findings about the table chunk, as `(check, text)`.
fn findings(c: &CaseResult, id: &str) -> Vec<(Check, String)> {
    assert!(!c.passed);
    c.diagnosis
        .iter()
        .filter(|f| f.chunk.as_deref() == Some(id))
        .map(|f| (f.check, veredicto_report::findings::finding_sentence(f)))
        .collect()
}

fn has(f: &[(Check, String)], check: Check, text: &str) -> bool {
    f.iter().any(|(c, t)| *c == check && t.contains(text))
}

#[test]
fn corpus_expected_chunk_missing() {
    let c = exam_with(Chunk {
        id: "missing_chunk".into(),
        ..Chunk::default()
    });
    let f = findings(&c, "missing_chunk");
    assert_eq!(
        f,
        vec![(Check::Corpus, "expected chunk not in the corpus".to_owned())]
    );
}

#[test]
fn chunking_table_without_header_row() {
    let mut t = table("t");
    t.text = Some("| 12.450 | 9,5 |\n| 20.200 | 12 |\n| 35.200 | 15 |\n".into());
    let f = findings(&exam_with(t), "t");
    assert!(
        has(&f, Check::Chunking, "table without a header row"),
        "{f:?}"
    );
}

#[test]
fn chunking_table_cut_mid_row() {
    let mut t = table("t");
    t.text = Some(format!("{TABLE}| 60.000 | 22,"));
    let f = findings(&exam_with(t), "t");
    assert!(has(&f, Check::Chunking, "table cut mid-row"), "{f:?}");
}

#[test]
fn chunking_text_cut_mid_sentence() {
    let mut t = table("t");
    t.text = Some(
        "Los autónomos que tributan por estimación directa aplican la escala general y".into(),
    );
    let f = findings(&exam_with(t), "t");
    assert!(has(&f, Check::Chunking, "ends mid-sentence"), "{f:?}");
}

#[test]
fn chunking_absurd_lengths() {
    let mut t = table("t");
    t.text = Some("Tabla.".into());
    assert!(has(
        &findings(&exam_with(t), "t"),
        Check::Chunking,
        "very short chunk"
    ));
    let mut t = table("t");
    t.text = Some(format!(
        "{}.",
        "Texto largo de la ley del IRPF. ".repeat(300)
    ));
    assert!(has(
        &findings(&exam_with(t), "t"),
        Check::Chunking,
        "very long chunk"
    ));
}

#[test]
fn description_missing_for_a_table() {
    let mut t = table("silver_finanzas_123");
    t.representation = None;
    let f = findings(&exam_with(t), "silver_finanzas_123");
    assert!(
        has(&f, Check::Description, "table without a description"),
        "{f:?}"
    );
}

#[test]
fn description_mostly_numbers_or_the_raw_table() {
    let mut t = table("t");
    t.representation = Some("12.450 9,5 20.200 12 35.200 15 60.000 22".into());
    assert!(has(
        &findings(&exam_with(t), "t"),
        Check::Description,
        "mostly numbers"
    ));
    let mut t = table("t");
    t.representation = Some(TABLE.into());
    assert!(has(
        &findings(&exam_with(t), "t"),
        Check::Description,
        "raw table"
    ));
}

#[test]
fn labelling_wrong_domain_and_ended_validity() {
    let mut t = table("t");
    t.domain = Some("viajes".into());
    assert!(has(
        &findings(&exam_with(t), "t"),
        Check::Labelling,
        "differs from the case's `fiscal`"
    ));
    let mut t = table("t");
    t.valid_to = Some("2024-12-31".into());
    assert!(has(
        &findings(&exam_with(t), "t"),
        Check::Labelling,
        "validity window ended on 2024-12-31"
    ));
}

#[test]
fn embedding_sane_but_buried_names_the_outranking_batch() {
    let c = exam_with(table("t"));
    let f: Vec<_> = c
        .diagnosis
        .iter()
        .filter(|f| f.chunk.as_deref() == Some("t"))
        .collect();
    assert_eq!(f.len(), 1, "only the embedding item: {f:?}");
    assert_eq!(f[0].check, Check::Embedding);
    let text = veredicto_report::findings::finding_sentence(f[0]);
    assert!(text.contains("buried at rank 15"), "{text}");
    assert_eq!(f[0].outranked_by.len(), 10);
    assert!(f[0]
        .outranked_by
        .iter()
        .all(|o| o.ingest_batch.as_deref() == Some("2025-11-14-viajes")));
}

#[test]
fn checklist_order_is_chunking_description_labelling() {
    let mut t = table("t");
    t.text = Some("| 12.450 | 9,5 |\n| 20.200 | 12 |\n".into());
    t.representation = None;
    t.domain = Some("viajes".into());
    let mut checks: Vec<Check> = findings(&exam_with(t), "t")
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    checks.dedup();
    assert_eq!(
        checks,
        vec![Check::Chunking, Check::Description, Check::Labelling]
    );
}

#[test]
fn a_chunking_finding_keeps_the_outranking_evidence() {
    // A very short chunk: the checklist stops at `chunking`, and what buried it stays shown.
    let mut t = table("t");
    t.text = Some("| a | b |\n|---|---|\n".into());
    let c = exam_with(t);
    let mine: Vec<_> = c
        .diagnosis
        .iter()
        .filter(|f| f.chunk.as_deref() == Some("t"))
        .collect();
    assert_eq!(mine[0].check, Check::Chunking);
    assert!(mine.iter().all(|f| f.check != Check::Embedding));
    assert!(mine
        .iter()
        .any(|f| veredicto_report::findings::finding_sentence(f).contains("very short chunk")));
    // The outrankers sit on the first finding about the chunk: ten, best first.
    assert_eq!(mine[0].outranked_by.len(), 10);
    assert_eq!(mine[0].outranked_by[0].id, "nuevo_3");
    assert_eq!(mine[0].outranked_by[0].rank, 3);
    assert!(mine[0]
        .outranked_by
        .iter()
        .all(|o| o.ingest_batch.as_deref() == Some("2025-11-14-viajes")));
}
