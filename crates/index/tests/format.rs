//! The on-disk format: byte-identical output, versioning, corruption, atomic replacement.

mod common;

use common::*;
use std::path::Path;
use veredicto_index::*;

fn items(n: usize, dim: usize) -> Vec<(String, Vec<f32>)> {
    (0..n)
        .map(|i| {
            let v = (0..dim)
                .map(|j| ((i * 31 + j * 17) % 23) as f32 - 11.0 + 0.25)
                .collect();
            (format!("chunk-{:04}", (i * 7919) % 10_000), v)
        })
        .collect()
}

fn meta(i: usize) -> ChunkMeta {
    ChunkMeta {
        domain: Some(format!("d{}", i % 3)),
        labels: vec![format!("L{}", i % 2)],
        facets: [
            ("z".to_string(), serde_json::json!(i)),
            ("a".to_string(), serde_json::json!("x")),
        ]
        .into_iter()
        .collect(),
        valid_from: Some("2024-01-01".into()),
        valid_to: None,
    }
}

fn build_with_threads(dir: &Path, threads: usize) -> Index {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| build(dir, &items(500, 9), meta))
}

#[test]
fn same_inputs_give_identical_files_whatever_the_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let one = tmp.path().join("one");
    let two = tmp.path().join("two");
    let again = tmp.path().join("again");
    build_with_threads(&one, 1);
    build_with_threads(&two, 2);
    build_with_threads(&again, 2);
    let a = files_of(&one);
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        [
            "chunks.jsonl",
            "manifest.json",
            "records.jsonl",
            "vectors.f32"
        ]
    );
    assert_eq!(a, files_of(&two));
    assert_eq!(a, files_of(&again));
    // The manifest's file hashes hold.
    Index::open(&one).unwrap().verify().unwrap();
}

#[test]
fn files_have_the_documented_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let index = build(&dir, &items(3, 2), meta);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["format"], "veredicto-index");
    assert_eq!(m["format_version"], 1);
    assert_eq!(m["dimension"], 2);
    assert_eq!(m["count"], 3);
    assert_eq!(m["metric"], "cosine");
    assert_eq!(m["field"], "representation");
    assert_eq!(m["model_hash"], fake_hash(1));
    assert_eq!(m["batches"][0]["name"], "b1");
    // vectors.f32: row-major little-endian f32, rows in ID order, L2-normalised.
    let raw = std::fs::read(dir.join("vectors.f32")).unwrap();
    assert_eq!(raw.len(), 3 * 2 * 4);
    let first_row: Vec<f32> = raw[..8]
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(first_row, index.vector(0));
    let norm: f32 = first_row.iter().map(|x| x * x).sum();
    assert!((norm - 1.0).abs() < 1e-6);
    // chunks.jsonl: one line per row.
    let chunks = std::fs::read_to_string(dir.join("chunks.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(chunks.lines().next().unwrap()).unwrap();
    assert_eq!(line["id"], index.chunk(0).id());
    assert!(line["text_hash"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(line["ingest_batch"], "b1");
    assert_eq!(line["ingested_at"], "2025-01-01T00:00:00Z");
    assert_eq!(line["valid_from"], "2024-01-01");
    assert_eq!(chunks.lines().count(), 3);
}

#[test]
fn a_newer_format_version_is_refused_naming_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir, &items(3, 2), meta);
    let path = dir.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    m["format_version"] = serde_json::json!(FORMAT_VERSION + 1);
    m["something_new"] = serde_json::json!(true);
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    let e = Index::open(&dir).unwrap_err();
    assert!(
        matches!(
            e,
            IndexError::NewerFormat {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{e}"
    );
    let text = e.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("newer"), "{text}");
}

#[test]
fn corrupt_files_give_errors_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    build(&dir, &items(10, 4), meta);

    // Truncated vectors.
    let vpath = dir.join("vectors.f32");
    let bytes = std::fs::read(&vpath).unwrap();
    std::fs::write(&vpath, &bytes[..bytes.len() - 3]).unwrap();
    let e = Index::open(&dir).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, IndexError::Corrupt { .. }));
    assert!(text.contains(&vpath.display().to_string()), "{text}");
    assert!(text.contains("truncated"), "{text}");

    // A flipped byte is found by verify().
    let mut flipped = bytes.clone();
    flipped[5] ^= 0x40;
    std::fs::write(&vpath, &flipped).unwrap();
    let index = Index::open(&dir).unwrap();
    let e = index.verify().unwrap_err();
    assert!(e.to_string().contains("vectors.f32"), "{e}");
    std::fs::write(&vpath, &bytes).unwrap();

    // A truncated chunks.jsonl.
    let cpath = dir.join("chunks.jsonl");
    let chunks = std::fs::read_to_string(&cpath).unwrap();
    let cut: String = chunks.lines().take(9).map(|l| format!("{l}\n")).collect();
    std::fs::write(&cpath, cut).unwrap();
    let e = Index::open(&dir).unwrap_err();
    assert!(e.to_string().contains("chunks.jsonl"), "{e}");
    assert!(e.to_string().contains("9 lines"), "{e}");

    // A garbled line names the line.
    let mut lines: Vec<&str> = chunks.lines().collect();
    lines[3] = "{not json";
    std::fs::write(&cpath, lines.join("\n") + "\n").unwrap();
    let e = Index::open(&dir).unwrap_err();
    assert!(e.to_string().contains("chunks.jsonl:4:"), "{e}");

    // Not an index at all.
    let e = Index::open(tmp.path()).unwrap_err();
    assert!(matches!(e, IndexError::Io { .. }), "{e}");
    assert!(e.to_string().contains("manifest.json"), "{e}");
}

#[test]
fn an_error_mid_apply_leaves_the_old_index_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let index = build(&dir, &items(20, 3), meta);
    let before = files_of(&dir);

    // The bad vector belongs to the last row in ID order, so the new files are half
    // written when it is found.
    let mut corpus: Vec<ChunkInput> = index
        .chunks()
        .map(|c| ChunkInput {
            id: c.id().to_string(),
            text: format!("new text of {}", c.id()),
            meta: ChunkMeta::default(),
            record: None,
        })
        .collect();
    corpus.push(ChunkInput::new("zzz-last", "bad"));
    let plan = Plan::new(Some(&index), corpus, settings(3, 1)).unwrap();
    let mut vectors: Vec<Vec<f32>> = plan
        .to_embed()
        .iter()
        .map(|_| vec![1.0, 2.0, 3.0])
        .collect();
    *vectors.last_mut().unwrap() = vec![f32::NAN, 0.0, 1.0];
    let e = plan.apply(&vectors, &batch("b2", "t2"), &dir).unwrap_err();
    assert_eq!(
        e.to_string(),
        "vector for chunk \"zzz-last\": has a NaN or infinite component, or is all zeros"
    );
    assert_eq!(files_of(&dir), before, "old index changed");
    // No temporary folder is left behind.
    let mut leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    leftovers.sort();
    // The writer lock file stays beside the index (empty of meaning once released).
    assert_eq!(leftovers, [".idx.lock", "idx"]);
    // The old index still opens and searches.
    let reopened = Index::open(&dir).unwrap();
    assert_eq!(reopened.len(), 20);
    assert_eq!(reopened.search(&[1.0, 0.0, 0.0], 3, None).unwrap().len(), 3);
}

#[test]
fn replacing_swaps_the_folder_and_refuses_foreign_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let old = build(&dir, &items(5, 3), meta);
    // An open index keeps working while it is replaced (its files are mapped).
    let first = old.vector(0).to_vec();
    let new = build(&dir, &items(8, 3), meta);
    assert_eq!(new.len(), 8);
    assert_eq!(old.vector(0), first.as_slice());
    assert_eq!(Index::open(&dir).unwrap().len(), 8);
    let mut leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    leftovers.sort();
    // The writer lock file stays beside the index (empty of meaning once released).
    assert_eq!(leftovers, [".idx.lock", "idx"]);

    // A folder with other things in it is not replaced.
    let foreign = tmp.path().join("docs");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "keep me").unwrap();
    let plan = Plan::new(None, vec![ChunkInput::new("a", "a")], settings(2, 1)).unwrap();
    let e = plan
        .apply(&[vec![1.0, 0.0]], &batch("b", "t"), &foreign)
        .unwrap_err();
    assert!(matches!(e, IndexError::Destination { .. }), "{e}");
    assert_eq!(
        std::fs::read_to_string(foreign.join("notes.txt")).unwrap(),
        "keep me"
    );
}

#[test]
fn an_empty_index_opens_and_searches() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx");
    let plan = Plan::new(None, Vec::new(), settings(4, 1)).unwrap();
    let index = plan.apply::<Vec<f32>>(&[], &batch("b", "t"), &dir).unwrap();
    assert!(index.is_empty());
    assert!(index
        .search(&[1.0, 0.0, 0.0, 0.0], 10, None)
        .unwrap()
        .is_empty());
    assert_eq!(
        index.rank_of(&[1.0, 0.0, 0.0, 0.0], "x", None).unwrap(),
        Rank::NotInIndex
    );
    Index::open(&dir).unwrap().verify().unwrap();
}
