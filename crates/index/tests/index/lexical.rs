//! The lexical (BM25) arm: scores against a naive re-implementation, incremental ingest equal
//! to a fresh build, ties, ranks, determinism, integrity, old indexes.

use crate::common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use veredicto_index::*;

/// A small corpus: `(id, text)`.
fn corpus() -> Vec<(String, String)> {
    [
        ("a1", "The cat sat on the mat"),
        ("a2", "Cats and dogs are running in the park"),
        ("a3", "A dog runs after the cat"),
        ("b1", "Quantum mechanics of running particles"),
        ("b2", "The mat was red and the cat was black"),
        ("b3", "Dogs, dogs, dogs: a study of dog behaviour"),
        ("c1", "Nothing in common with the others"),
        ("c2", "The cat sat on the mat"),
        ("c3", "Parks and recreation for dogs and cats"),
    ]
    .iter()
    .map(|(i, t)| (i.to_string(), t.to_string()))
    .collect()
}

fn inputs(items: &[(String, String)]) -> Vec<ChunkInput> {
    items
        .iter()
        .enumerate()
        .map(|(i, (id, text))| ChunkInput {
            id: id.clone(),
            text: text.clone(),
            meta: ChunkMeta {
                domain: Some(if i % 2 == 0 { "even" } else { "odd" }.into()),
                ..ChunkMeta::default()
            },
            record: Some(serde_json::json!({"id": id, "text": text})),
        })
        .collect()
}

/// A vector per text (any non-zero vector will do for these tests).
fn vector_of(text: &str) -> Vec<f32> {
    let n = text.len() as f32;
    vec![
        1.0 + n,
        2.0,
        (text.bytes().map(u32::from).sum::<u32>() % 7) as f32,
    ]
}

/// Ingests `items` into `dir` (on top of `old` when given) with the lexical choice.
fn ingest(
    dir: &Path,
    old: Option<&Index>,
    items: &[(String, String)],
    lexical: Option<Option<Analyzer>>,
    name: &str,
) -> Index {
    let mut plan = Plan::new(old, inputs(items), settings(3, 1)).expect("plan");
    if let Some(choice) = lexical {
        plan = plan.with_lexical(choice);
    }
    let vectors: Vec<Vec<f32>> = plan.to_embed().iter().map(|(_, t)| vector_of(t)).collect();
    plan.apply(&vectors, &batch(name, "2025-01-01T00:00:00Z"), dir)
        .expect("apply")
}

fn search(index: &Index, text: &str, k: usize, rank_ids: &[String]) -> QueryResult {
    index
        .search_lexical(&[LexicalQuery {
            text,
            k,
            filter: None,
            rank_ids,
        }])
        .expect("search")
        .pop()
        .expect("one result")
}

fn ids(index: &Index, hits: &[Hit]) -> Vec<String> {
    hits.iter()
        .map(|h| index.chunk(h.row).id().to_string())
        .collect()
}

/// BM25 computed by hand from the analysed terms (every text is shorter than 40 terms, so
/// tantivy's stored length is exact), in the same f32 operations.
fn naive_bm25(items: &[(String, String)], analyzer: Analyzer, query: &str) -> Vec<(String, f32)> {
    let docs: Vec<(String, Vec<String>)> = items
        .iter()
        .map(|(id, t)| (id.clone(), analyzer.terms(t)))
        .collect();
    let n = docs.len() as u64;
    let total: u64 = docs.iter().map(|(_, t)| t.len() as u64).sum();
    let avg = total as f32 / n as f32;
    let mut distinct: Vec<(String, u32)> = Vec::new();
    for t in analyzer.terms(query) {
        match distinct.iter_mut().find(|(s, _)| *s == t) {
            Some((_, c)) => *c += 1,
            None => distinct.push((t, 1)),
        }
    }
    let mut out: Vec<(String, f32)> = Vec::new();
    for (id, terms) in &docs {
        let mut score = 0.0f32;
        let mut matched = false;
        for (t, qtf) in &distinct {
            let df = docs.iter().filter(|(_, d)| d.contains(t)).count() as u64;
            if df == 0 {
                continue;
            }
            let tf = terms.iter().filter(|x| *x == t).count() as u32;
            if tf == 0 {
                continue;
            }
            matched = true;
            let x = ((n - df) as f32 + 0.5) / (df as f32 + 0.5);
            let idf = (1.0 + x).ln();
            let weight = idf * (1.0 + 1.2) * (*qtf as f32);
            let norm = 1.2 * (1.0 - 0.75 + 0.75 * terms.len() as f32 / avg);
            score += weight * (tf as f32 / (tf as f32 + norm));
        }
        if matched {
            out.push((id.clone(), score));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

const QUERIES: [&str; 7] = [
    "cat on a mat",
    "dogs dogs running",
    "the",
    "quantum cats",
    "parks",
    "nothing matches zzz",
    "",
];

#[test]
fn bm25_scores_equal_a_naive_reimplementation_of_the_formula() {
    let tmp = tempfile::tempdir().unwrap();
    let items = corpus();
    let index = ingest(
        &tmp.path().join("i"),
        None,
        &items,
        Some(Some(Analyzer::English)),
        "b1",
    );
    for q in QUERIES {
        let got = search(&index, q, 100, &[]);
        let want = naive_bm25(&items, Analyzer::English, q);
        let got: Vec<(String, f32)> = got
            .hits
            .iter()
            .map(|h| (index.chunk(h.row).id().to_string(), h.score))
            .collect();
        assert_eq!(got.len(), want.len(), "query {q:?}: {got:?} vs {want:?}");
        for ((gi, gs), (wi, ws)) in got.iter().zip(&want) {
            assert_eq!(gi, wi, "query {q:?}: {got:?} vs {want:?}");
            assert!(
                (gs - ws).abs() <= 1e-6 * ws.abs().max(1.0),
                "query {q:?}, {gi}: {gs} vs {ws}"
            );
        }
    }
}

#[test]
fn ties_break_by_chunk_id_ascending_and_ranks_reach_past_k() {
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest(
        &tmp.path().join("i"),
        None,
        &corpus(),
        Some(Some(Analyzer::English)),
        "b1",
    );
    // a1 and c2 have the same text: the same score, a1 first.
    let r = search(&index, "cat sat mat", 2, &[]);
    assert_eq!(ids(&index, &r.hits), ["a1", "c2"]);
    assert_eq!(r.hits[0].score, r.hits[1].score);
    let wanted: Vec<String> = ["c2", "a3", "c1", "zz"].map(String::from).to_vec();
    let r = search(&index, "cat sat mat", 1, &wanted);
    assert_eq!(ids(&index, &r.hits), ["a1"]);
    assert_eq!(r.ranks[0].rank(), Some(2));
    let full = search(&index, "cat sat mat", 100, &[]);
    let a3 = ids(&index, &full.hits)
        .iter()
        .position(|i| i == "a3")
        .unwrap();
    assert_eq!(r.ranks[1].rank(), Some(a3 + 1));
    assert_eq!(r.ranks[1].score(), Some(full.hits[a3].score));
    assert_eq!(r.ranks[2], Rank::Unmatched);
    assert_eq!(r.ranks[3], Rank::NotInIndex);
}

#[test]
fn a_filter_excludes_chunks_from_hits_and_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let index = ingest(
        &tmp.path().join("i"),
        None,
        &corpus(),
        Some(Some(Analyzer::English)),
        "b1",
    );
    let filter: Filter = "domain=even".parse().unwrap();
    let wanted: Vec<String> = ["a2", "a3"].map(String::from).to_vec();
    let r = index
        .search_lexical(&[LexicalQuery {
            text: "cat dogs",
            k: 100,
            filter: Some(&filter),
            rank_ids: &wanted,
        }])
        .unwrap()
        .pop()
        .unwrap();
    assert!(r
        .hits
        .iter()
        .all(|h| index.chunk(h.row).meta().domain.as_deref() == Some("even")));
    assert!(matches!(r.ranks[0], Rank::FilteredOut { score } if score > 0.0));
    assert!(r.ranks[1].rank().is_some());
}

/// One query's hits (ID, score bits) and ranks.
type Answer = (Vec<(String, u32)>, Vec<Rank>);

/// Every query's hits and ranks, with the IDs, for comparing two indexes.
fn all_results(index: &Index) -> Vec<Answer> {
    let wanted: Vec<String> = index.chunks().map(|c| c.id().to_string()).collect();
    let queries: Vec<LexicalQuery<'_>> = QUERIES
        .iter()
        .chain(&["red black", "behaviour of dogs", "recreation"])
        .map(|q| LexicalQuery {
            text: q,
            k: 5,
            filter: None,
            rank_ids: &wanted,
        })
        .collect();
    index
        .search_lexical(&queries)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.hits
                    .iter()
                    .map(|h| (index.chunk(h.row).id().to_string(), h.score.to_bits()))
                    .collect(),
                r.ranks,
            )
        })
        .collect()
}

#[test]
fn an_incremental_ingest_gives_the_scores_of_a_fresh_build_bit_for_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("inc");
    let first = corpus();
    let old = ingest(&dir, None, &first, Some(Some(Analyzer::English)), "b1");
    // Added, changed and removed chunks; the arm is kept without being asked for.
    let mut second: Vec<(String, String)> = first
        .iter()
        .filter(|(id, _)| id != "b1" && id != "c1")
        .cloned()
        .collect();
    second[0].1 = "A mat for the dog".into();
    second.push(("d1".into(), "Black cats sat on red mats in parks".into()));
    second.push(("d2".into(), "Running dogs".into()));
    let plan = Plan::new(Some(&old), inputs(&second), settings(3, 1)).unwrap();
    assert_eq!(
        plan.lexical_work(),
        Some(LexicalWork {
            analyzer: Analyzer::English,
            analysed: 3,
            removed: 3,
            rebuilt: false,
        })
    );
    drop(plan);
    let updated = ingest(&dir, Some(&old), &second, None, "b2");
    assert_eq!(updated.lexical().unwrap().documents, second.len());
    let fresh = ingest(
        &tmp.path().join("fresh"),
        None,
        &second,
        Some(Some(Analyzer::English)),
        "b1",
    );
    assert_eq!(all_results(&updated), all_results(&fresh));
    assert_eq!(
        updated.lexical().unwrap().tokens,
        fresh.lexical().unwrap().tokens
    );
    updated.verify().unwrap();
}

#[test]
fn lexical_results_do_not_depend_on_the_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |threads: usize, name: &str| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let index = ingest(
                &tmp.path().join(name),
                None,
                &corpus(),
                Some(Some(Analyzer::English)),
                "b1",
            );
            all_results(&index)
        })
    };
    assert_eq!(run(1, "one"), run(2, "two"));
}

#[test]
fn an_index_without_a_bm25_arm_says_so_and_an_ingest_can_add_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("i");
    let old = ingest(&dir, None, &corpus(), None, "b1");
    assert!(!old.has_lexical());
    let err = old
        .search_lexical(&[LexicalQuery {
            text: "cat",
            k: 3,
            filter: None,
            rank_ids: &[],
        }])
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, IndexError::NoLexicalArm { .. }), "{text}");
    assert!(text.contains("has no BM25 arm"), "{text}");
    assert!(text.contains("manifest.json"), "{text}");
    // Same corpus: nothing to embed, the arm is built from every chunk.
    let plan = Plan::new(Some(&old), inputs(&corpus()), settings(3, 1))
        .unwrap()
        .with_lexical(Some(Analyzer::English));
    assert_eq!(plan.embed_count(), 0);
    assert_eq!(plan.lexical_work().map(|w| w.rebuilt), Some(true));
    let vectors: Vec<Vec<f32>> = Vec::new();
    let new = plan
        .apply(&vectors, &batch("b2", "2025-01-02T00:00:00Z"), &dir)
        .unwrap();
    assert_eq!(search(&new, "cat", 1, &[]).hits.len(), 1);
    // And drop it again.
    let dropped = ingest(&dir, Some(&new), &corpus(), Some(None), "b3");
    assert!(!dropped.has_lexical());
    assert!(!dir.join("lexical").exists());
    assert!(dropped
        .manifest()
        .files
        .keys()
        .all(|k| !k.starts_with("lexical/")));
}

#[test]
fn an_index_of_format_version_3_opens_and_an_ingest_adds_the_arm() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("i");
    ingest(&dir, None, &corpus(), None, "b1");
    // What a build of format version 3 wrote: the same files, version 3.
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["format_version"] = serde_json::json!(3);
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let old = Index::open(&dir).unwrap();
    assert_eq!(old.manifest().format_version, 3);
    old.verify().unwrap();
    let new = ingest(
        &dir,
        Some(&old),
        &corpus(),
        Some(Some(Analyzer::Spanish)),
        "b2",
    );
    assert_eq!(new.manifest().format_version, FORMAT_VERSION);
    assert_eq!(new.lexical().unwrap().analyzer, Analyzer::Spanish);
    let r = search(&new, "mat", 2, &[]);
    assert_eq!(ids(&new, &r.hits), ["a1", "c2"]);
}

#[test]
fn another_analyser_rebuilds_the_arm() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("i");
    let items = vec![
        ("e1".to_string(), "Las acciones del gobierno".to_string()),
        ("e2".to_string(), "La acción de gobernar".to_string()),
        ("e3".to_string(), "Un texto sin relación".to_string()),
    ];
    let en = ingest(&dir, None, &items, Some(Some(Analyzer::English)), "b1");
    let plan = Plan::new(Some(&en), inputs(&items), settings(3, 1))
        .unwrap()
        .with_lexical(Some(Analyzer::Spanish));
    assert_eq!(plan.lexical_work().map(|w| w.rebuilt), Some(true));
    drop(plan);
    let es = ingest(&dir, Some(&en), &items, Some(Some(Analyzer::Spanish)), "b2");
    // Spanish stemming and accent folding: "accion" finds both spellings and the plural.
    let r = search(&es, "accion", 10, &[]);
    assert_eq!(ids(&es, &r.hits), ["e1", "e2"]);
}

#[test]
fn the_manifest_lists_and_checksums_every_bm25_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("i");
    let index = ingest(&dir, None, &corpus(), Some(Some(Analyzer::English)), "b1");
    let m = index.manifest();
    assert_eq!(m.format_version, 4);
    let listed: Vec<&String> = m
        .files
        .keys()
        .filter(|k| k.starts_with("lexical/"))
        .collect();
    assert!(listed.iter().any(|k| *k == "lexical/meta.json"));
    let on_disk: Vec<String> = std::fs::read_dir(dir.join("lexical"))
        .unwrap()
        .map(|e| format!("lexical/{}", e.unwrap().file_name().to_string_lossy()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(listed, on_disk.iter().collect::<Vec<_>>());
    let section = m.lexical.as_ref().unwrap();
    assert_eq!(section.engine, "tantivy 0.27");
    assert_eq!(section.scoring, "bm25 k1=1.2 b=0.75");
    assert_eq!(section.documents, corpus().len());
    let raw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(raw["lexical"]["analyzer"], "english");
    assert_eq!(raw["lexical"]["analyzer_version"], 1);
}

/// Flips one byte of the largest lexical file (other than tantivy's own manifest).
fn damage_largest_lexical_file(dir: &Path) -> String {
    let mut largest: Option<(u64, std::path::PathBuf)> = None;
    for e in std::fs::read_dir(dir.join("lexical")).unwrap() {
        let e = e.unwrap();
        let len = e.metadata().unwrap().len();
        if largest.as_ref().is_none_or(|(l, _)| len > *l) {
            largest = Some((len, e.path()));
        }
    }
    let (_, path) = largest.unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn a_damaged_bm25_file_is_refused_before_the_first_lexical_search() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("i");
    let index = ingest(&dir, None, &corpus(), Some(Some(Analyzer::English)), "b1");
    drop(index);
    let name = damage_largest_lexical_file(&dir);
    let index = Index::open(&dir).unwrap();
    let err = index
        .search_lexical(&[LexicalQuery {
            text: "cat",
            k: 3,
            filter: None,
            rank_ids: &[],
        }])
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("lexical/{name}")), "{err}");
    assert!(err.contains("does not match the manifest"), "{err}");
    // verify() names it too, and an ingest does not carry the damage into a new version.
    let err = index.verify().unwrap_err().to_string();
    assert!(err.contains(&format!("lexical/{name}")), "{err}");
    let mut items = corpus();
    items.push(("z9".into(), "one more chunk".into()));
    let plan = Plan::new(Some(&index), inputs(&items), settings(3, 1)).unwrap();
    let vectors: Vec<Vec<f32>> = plan.to_embed().iter().map(|(_, t)| vector_of(t)).collect();
    let err = plan
        .apply(&vectors, &batch("b2", "2025-01-02T00:00:00Z"), &dir)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("lexical/{name}")), "{err}");
}

#[test]
fn a_truncated_bm25_file_is_refused_when_the_index_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("i");
    drop(ingest(
        &dir,
        None,
        &corpus(),
        Some(Some(Analyzer::English)),
        "b1",
    ));
    let path = dir.join("lexical/meta.json");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
    let err = Index::open(&dir).unwrap_err().to_string();
    assert!(err.contains("lexical/meta.json"), "{err}");
}

#[test]
fn a_lexical_search_writes_nothing_into_the_index_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("i");
    drop(ingest(
        &dir,
        None,
        &corpus(),
        Some(Some(Analyzer::English)),
        "b1",
    ));
    let listing = |d: &Path| -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for sub in [d.to_path_buf(), d.join("lexical")] {
            for e in std::fs::read_dir(&sub).unwrap() {
                let e = e.unwrap();
                out.insert(e.path().display().to_string(), e.metadata().unwrap().len());
            }
        }
        out
    };
    let before = listing(&dir);
    let index = Index::open(&dir).unwrap();
    assert!(!search(&index, "cat", 3, &[]).hits.is_empty());
    drop(index);
    assert_eq!(before, listing(&dir));
}
