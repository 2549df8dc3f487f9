//! The on-disk format: byte-identical output, versioning, corruption, atomic replacement.

use crate::common;
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
            "chunks.bin",
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
    assert_eq!(m["format_version"], 4);
    // One CRC-32 per block of 4,096 rows of vectors.f32 (here one block).
    assert_eq!(m["vector_blocks"]["rows"], 4096);
    let raw = std::fs::read(dir.join("vectors.f32")).unwrap();
    let mut crc = crc32fast::Hasher::new();
    crc.update(&raw);
    assert_eq!(
        m["vector_blocks"]["crc32"],
        serde_json::json!([format!("{:08x}", crc.finalize())])
    );
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
    // chunks.bin: a 64-byte header, 48-byte rows, 32-byte text hashes, then the heap of IDs
    // and metadata (no vector-hash section: a model embedded these chunks).
    let table = std::fs::read(dir.join("chunks.bin")).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes(table[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(table[at..at + 8].try_into().unwrap());
    assert_eq!(&table[..8], b"VRDCHNK\0");
    assert_eq!(
        (u32_at(8), u32_at(12), u64_at(16), u64_at(24)),
        (1, 48, 3, 0)
    );
    let heap_at = 64 + 3 * 48 + 3 * 32;
    assert_eq!(table.len() as u64, heap_at as u64 + u64_at(32));
    let (id_off, id_len) = (u64_at(64) as usize, u32_at(72) as usize);
    let id = &table[heap_at + id_off..heap_at + id_off + id_len];
    assert_eq!(id, index.chunk(0).id().as_bytes());
    assert_eq!(u32_at(76), 0, "batch position");
    let hash = &table[64 + 3 * 48..64 + 3 * 48 + 32];
    assert_eq!(hash, index.chunk(0).text_hash().0);
    let flags = u32_at(64 + 44);
    assert_eq!(flags, 2 | 4, "metadata and record, no vector hash");
    let (meta_off, meta_len) = (u64_at(64 + 32) as usize, u32_at(64 + 40) as usize);
    let meta: serde_json::Value =
        serde_json::from_slice(&table[heap_at + meta_off..heap_at + meta_off + meta_len]).unwrap();
    assert_eq!(meta["valid_from"], "2024-01-01");
    let (rec_off, rec_len) = (u64_at(64 + 16) as usize, u64_at(64 + 24) as usize);
    let records = std::fs::read(dir.join("records.jsonl")).unwrap();
    let record: serde_json::Value =
        serde_json::from_slice(&records[rec_off..rec_off + rec_len]).unwrap();
    assert_eq!(record["id"], index.chunk(0).id());
    assert_eq!(index.chunk(0).ingest_batch(), "b1");
    assert_eq!(index.chunk(0).ingested_at(), "2025-01-01T00:00:00Z");
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
                found: 5,
                supported: 4,
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

    // A truncated chunks.bin.
    let cpath = dir.join("chunks.bin");
    let table = std::fs::read(&cpath).unwrap();
    std::fs::write(&cpath, &table[..table.len() - 5]).unwrap();
    let e = Index::open(&dir).unwrap_err();
    assert!(e.to_string().contains("chunks.bin"), "{e}");
    assert!(e.to_string().contains("bytes"), "{e}");

    // Rows out of ID order name the row (same size: found by the structure check on open).
    let mut swapped = table.clone();
    let (a, b) = (64 + 3 * 48, 64 + 4 * 48);
    let row3 = swapped[a..a + 48].to_vec();
    let row4 = swapped[b..b + 48].to_vec();
    swapped[a..a + 48].copy_from_slice(&row4);
    swapped[b..b + 48].copy_from_slice(&row3);
    std::fs::write(&cpath, &swapped).unwrap();
    let e = Index::open(&dir).unwrap_err();
    assert!(e.to_string().contains("chunks.bin"), "{e}");
    assert!(e.to_string().contains("row 4"), "{e}");
    assert!(e.to_string().contains("ascending"), "{e}");
    std::fs::write(&cpath, &table).unwrap();

    // Format version 1 (chunks.jsonl): a truncated table, and a garbled line naming the line.
    let v1 = tmp.path().join("v1");
    copy_v1_fixture(&v1);
    let cpath = v1.join("chunks.jsonl");
    let chunks = std::fs::read_to_string(&cpath).unwrap();
    let cut: String = chunks.lines().take(9).map(|l| format!("{l}\n")).collect();
    std::fs::write(&cpath, cut).unwrap();
    let e = Index::open(&v1).unwrap_err();
    assert!(e.to_string().contains("chunks.jsonl"), "{e}");
    assert!(e.to_string().contains("9 lines"), "{e}");
    let mut lines: Vec<&str> = chunks.lines().collect();
    lines[3] = "{not json";
    std::fs::write(&cpath, lines.join("\n") + "\n").unwrap();
    let e = Index::open(&v1).unwrap_err();
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

#[test]
fn a_format_1_index_opens_searches_alike_and_is_rewritten_in_the_current_format_by_the_next_ingest()
{
    let tmp = tempfile::tempdir().unwrap();
    let v1 = tmp.path().join("v1");
    copy_v1_fixture(&v1);
    let old = Index::open(&v1).unwrap();
    assert_eq!(old.manifest().format_version, 1);
    old.verify().unwrap();
    assert_eq!(old.len(), 10);
    assert_eq!(old.chunk(3).id(), "c03");
    assert_eq!(old.chunk(3).meta().domain.as_deref(), Some("d1"));
    assert_eq!(
        old.chunk(3).record().unwrap().unwrap(),
        serde_json::json!({"id": "c03", "n": 3})
    );
    // The same chunks rebuilt in format 2 answer every query identically.
    let items: Vec<(String, Vec<f32>)> = (0..10)
        .map(|i| {
            let v = (0..4)
                .map(|d| ((i * 7 + d * 3) % 11) as f32 - 4.5)
                .collect();
            (format!("c{i:02}"), v)
        })
        .collect();
    let v2 = build(&tmp.path().join("v2"), &items, |i| ChunkMeta {
        domain: Some(format!("d{}", i % 2)),
        labels: if i % 3 == 0 { vec!["L".into()] } else { vec![] },
        ..ChunkMeta::default()
    });
    assert_eq!(v2.manifest().format_version, FORMAT_VERSION);
    let filter: Filter = "domain=d1".parse().unwrap();
    let ids: Vec<String> = vec!["c00".into(), "c05".into(), "nope".into()];
    for q in [[0.3f32, -0.2, 0.9, 0.1], [-1.0, 0.5, 0.0, 0.25]] {
        for f in [None, Some(&filter)] {
            let query = Query {
                vector: &q,
                k: 4,
                filter: f,
                rank_ids: &ids,
            };
            assert_eq!(
                old.search_batch(&[query]).unwrap(),
                v2.search_batch(&[query]).unwrap()
            );
        }
    }
    // The next ingest (nothing changed) writes the current format and keeps every vector
    // bit for bit.
    let corpus: Vec<ChunkInput> = old
        .chunks()
        .map(|c| ChunkInput {
            id: c.id().to_string(),
            text: format!("text of {}", c.id()),
            meta: c.meta().clone(),
            record: c.record().unwrap(),
        })
        .collect();
    let plan = Plan::new(Some(&old), corpus, settings(4, 1)).unwrap();
    assert_eq!(plan.embed_count(), 0);
    let new = plan
        .apply(
            &[] as &[Vec<f32>],
            &batch("b2", "2025-02-01T00:00:00Z"),
            &v1,
        )
        .unwrap();
    assert_eq!(new.manifest().format_version, FORMAT_VERSION);
    assert!(new.has_block_checksums() && !old.has_block_checksums());
    assert!(v1.join("chunks.bin").is_file() && !v1.join("chunks.jsonl").exists());
    assert_eq!(new.vectors(), old.vectors());
    assert_eq!(new.chunk(3).meta(), old.chunk(3).meta());
    assert_eq!(new.chunk(3).ingest_batch(), "b1");
    new.verify().unwrap();
}

fn copy_v1_fixture(dest: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/index-v1");
    std::fs::create_dir_all(dest).unwrap();
    for name in [
        "manifest.json",
        "chunks.jsonl",
        "records.jsonl",
        "vectors.f32",
    ] {
        std::fs::copy(src.join(name), dest.join(name)).unwrap();
    }
}
