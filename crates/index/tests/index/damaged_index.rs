//! A damaged index never gives a result silently.
//!
//! Regression tests: byte mutations of `vectors.f32` were accepted (651 of 1,000), and a NaN
//! row was ranked first with no score; then a swapped pair of rows and 13 of 20 single-bit
//! flips still passed the check made before the first search (only `verify` caught them).
//! Now the check before the first search catches every one of them (block checksums, or the
//! whole file's hash for an index written before them), search never returns a non-finite
//! score, and ingest refuses to copy damaged vectors.
// A test may say what it skips and why (a missing server, model or privilege), or
// show figures it measured.
#![allow(clippy::print_stderr)]

use crate::common;
use common::*;
use veredicto_index::*;

fn items(n: usize, dim: usize) -> Vec<(String, Vec<f32>)> {
    (0..n)
        .map(|i| {
            let v: Vec<f32> = (0..dim)
                .map(|d| ((i * 7 + d * 3) % 11) as f32 - 4.5)
                .collect();
            (format!("c{i:03}"), v)
        })
        .collect()
}

#[test]
fn every_byte_mutation_of_vectors_is_caught_by_verify_and_before_the_first_search() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, &items(64, 8), |_| ChunkMeta::default());
    let vpath = dir.join(files::VECTORS);
    let clean = std::fs::read(&vpath).unwrap();
    let query = [0.3f32, -0.2, 0.9, 0.1, 0.0, 0.4, -0.7, 0.2];
    let ids: Vec<String> = vec!["c000".into(), "c031".into(), "c063".into()];
    let mut seed = 42u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let trials = 1000;
    let (mut by_verify, mut by_search) = (0, 0);
    for _ in 0..trials {
        let at = (next() as usize) % clean.len();
        let flip = 1 + (next() % 255) as u8;
        let mut bytes = clean.clone();
        bytes[at] ^= flip;
        std::fs::write(&vpath, &bytes).unwrap();
        // Sizes are unchanged: the index opens.
        let index = Index::open(&dir).unwrap();
        if index.verify().is_err() {
            by_verify += 1;
        }
        let q = Query {
            vector: &query,
            k: 10,
            filter: None,
            rank_ids: &ids,
        };
        let fresh = Index::open(&dir).unwrap();
        match fresh.search_batch(&[q]) {
            Err(e) => {
                assert!(e.to_string().contains("vectors.f32"), "{e}");
                by_search += 1;
            }
            Ok(results) => {
                // Whatever passes the cheap check still gives finite scores only.
                for r in &results {
                    assert!(r.hits.iter().all(|h| h.score.is_finite()));
                    assert!(r
                        .ranks
                        .iter()
                        .all(|k| k.score().is_some_and(f32::is_finite)));
                }
            }
        }
    }
    std::fs::write(&vpath, &clean).unwrap();
    eprintln!(
        "vectors.f32 byte mutations: {trials}; caught by verify: {by_verify}; \
         caught by the check before the first search: {by_search}"
    );
    assert_eq!(by_verify, trials, "verify must catch every mutation");
    assert_eq!(by_search, trials, "no search may rank a damaged vector");
}

/// A deterministic generator for the damage below.
fn lcg(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    }
}

/// Unit vectors of dimension 16 over `n` rows (more than one checksum block when `n` is
/// above 4,096).
fn unit_items(n: usize) -> Vec<(String, Vec<f32>)> {
    let mut next = lcg(7);
    (0..n)
        .map(|i| {
            let v: Vec<f32> = (0..16)
                .map(|_| (next() % 1000) as f32 / 500.0 - 1.0)
                .collect();
            (format!("c{i:05}"), normalize(&v).expect("non-zero"))
        })
        .collect()
}

fn one_query() -> Vec<f32> {
    (0..16).map(|d| ((d * 5 % 7) as f32) - 3.0).collect()
}

/// The error of the first search of a freshly opened index (`None`: it gave results).
fn first_search_error(dir: &std::path::Path) -> Option<String> {
    let index = Index::open(dir).expect("the sizes are intact: it opens");
    let ids = vec!["c00000".to_string()];
    let q = one_query();
    let query = Query {
        vector: &q,
        k: 10,
        filter: None,
        rank_ids: &ids,
    };
    index.search_batch(&[query]).err().map(|e| e.to_string())
}

/// A swapped pair of rows keeps every norm (and so passed the norm check): the block
/// checksum sees it before any result is given, naming the file and the block, whether the
/// two rows are in one block or in two.
#[test]
fn a_swapped_pair_of_vector_rows_is_caught_before_the_first_search() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    let n = VECTOR_BLOCK_ROWS + 904;
    build(&dir, &unit_items(n), |_| ChunkMeta::default());
    let vpath = dir.join(files::VECTORS);
    let clean = std::fs::read(&vpath).unwrap();
    assert!(first_search_error(&dir).is_none());
    let row = 16 * 4;
    for (a, b, block) in [
        (3, 10, "block 0 (rows 0-4095"),
        (10, n - 2, "block 0 (rows 0-4095"),
    ] {
        let mut bytes = clean.clone();
        let (ra, rb) = (
            clean[a * row..(a + 1) * row].to_vec(),
            clean[b * row..(b + 1) * row].to_vec(),
        );
        bytes[a * row..(a + 1) * row].copy_from_slice(&rb);
        bytes[b * row..(b + 1) * row].copy_from_slice(&ra);
        std::fs::write(&vpath, &bytes).unwrap();
        let e = first_search_error(&dir).expect("refused");
        assert!(
            e.contains("vectors.f32") && e.contains(block) && e.contains("checksum"),
            "rows {a} and {b}: {e}"
        );
        // Every reader of figures refuses the same way: ranks, top-k, verify.
        let index = Index::open(&dir).unwrap();
        assert!(index.rank_of(&one_query(), "c00003", None).is_err());
        assert!(index.search(&one_query(), 3, None).is_err());
        assert!(index.verify().is_err());
    }
    // Rows swapped inside the second block only: that block is named.
    let mut bytes = clean.clone();
    let (a, b) = (VECTOR_BLOCK_ROWS + 1, VECTOR_BLOCK_ROWS + 2);
    let ra = clean[a * row..(a + 1) * row].to_vec();
    let rb = clean[b * row..(b + 1) * row].to_vec();
    bytes[a * row..(a + 1) * row].copy_from_slice(&rb);
    bytes[b * row..(b + 1) * row].copy_from_slice(&ra);
    std::fs::write(&vpath, &bytes).unwrap();
    let e = first_search_error(&dir).expect("refused");
    assert!(
        e.contains(&format!(
            "block 1 (rows {VECTOR_BLOCK_ROWS}-{}, chunks \"c04096\" to \"c{:05}\")",
            n - 1,
            n - 1
        )),
        "{e}"
    );
    std::fs::write(&vpath, &clean).unwrap();
    assert!(first_search_error(&dir).is_none());
}

/// 20 single-bit flips anywhere in `vectors.f32` (13 of them used to pass the check before
/// the first search): every one is refused before a result is given.
#[test]
fn twenty_single_bit_flips_are_all_caught_before_the_first_search() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, &unit_items(300), |_| ChunkMeta::default());
    let vpath = dir.join(files::VECTORS);
    let clean = std::fs::read(&vpath).unwrap();
    let mut next = lcg(2025);
    let mut by_block = 0;
    for trial in 0..20 {
        let at = next() as usize % clean.len();
        let bit = next() % 8;
        let mut bytes = clean.clone();
        bytes[at] ^= 1 << bit;
        std::fs::write(&vpath, &bytes).unwrap();
        let e = first_search_error(&dir)
            .unwrap_or_else(|| panic!("flip {trial} (byte {at}, bit {bit}) gave results"));
        assert!(e.contains("vectors.f32"), "{e}");
        assert!(e.contains("block 0"), "{e}");
        by_block += usize::from(e.contains("checksum"));
    }
    eprintln!("20 single-bit flips: all caught; {by_block} by the block checksum alone (the rest changed a norm)");
    assert!(by_block > 0);
    std::fs::write(&vpath, &clean).unwrap();
    assert!(first_search_error(&dir).is_none());
}

/// An index written before block checksums (format version 2) still opens and searches;
/// its vector file is hashed whole before the first search instead, so the same damage is
/// refused there too (at a higher cost, until the next ingest rewrites it).
#[test]
fn an_index_without_block_checksums_has_its_vectors_hashed_whole_before_the_first_search() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, &unit_items(300), |_| ChunkMeta::default());
    let mpath = dir.join(files::MANIFEST);
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mpath).unwrap()).unwrap();
    m["format_version"] = serde_json::json!(2);
    m.as_object_mut().unwrap().remove("vector_blocks");
    std::fs::write(&mpath, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let old = Index::open(&dir).unwrap();
    assert!(!old.has_block_checksums());
    assert_eq!(old.manifest().format_version, 2);
    assert!(first_search_error(&dir).is_none());
    let vpath = dir.join(files::VECTORS);
    let clean = std::fs::read(&vpath).unwrap();
    let mut bytes = clean.clone();
    bytes[100] ^= 0x01; // the lowest mantissa bit: no norm moves
    std::fs::write(&vpath, &bytes).unwrap();
    let e = first_search_error(&dir).expect("refused");
    assert!(
        e.contains("vectors.f32") && e.contains("does not match the manifest"),
        "{e}"
    );
    std::fs::write(&vpath, &clean).unwrap();

    // The next ingest (nothing changed, nothing embedded) writes block checksums.
    let corpus: Vec<ChunkInput> = old
        .chunks()
        .map(|c| ChunkInput {
            id: c.id().to_string(),
            text: format!("text of {}", c.id()),
            meta: c.meta().clone(),
            record: c.record().unwrap(),
        })
        .collect();
    let plan = Plan::new(Some(&old), corpus, settings(16, 1)).unwrap();
    assert_eq!(plan.embed_count(), 0);
    let new = plan
        .apply(
            &[] as &[Vec<f32>],
            &batch("b2", "2025-02-01T00:00:00Z"),
            &dir,
        )
        .unwrap();
    assert_eq!(new.manifest().format_version, FORMAT_VERSION);
    assert!(new.has_block_checksums());
    assert_eq!(new.vectors(), old.vectors());
}

/// The block checksums in the manifest are checked on open: a wrong count or a value that
/// is not 8 hex digits names `manifest.json`; a changed checksum names the block.
#[test]
fn damaged_block_checksums_in_the_manifest_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, &unit_items(50), |_| ChunkMeta::default());
    let mpath = dir.join(files::MANIFEST);
    let clean = std::fs::read(&mpath).unwrap();
    let m: serde_json::Value = serde_json::from_slice(&clean).unwrap();
    assert_eq!(m["vector_blocks"]["rows"], VECTOR_BLOCK_ROWS);
    assert_eq!(
        m["vector_blocks"]["crc32"].as_array().map(Vec::len),
        Some(1)
    );
    let edits: [(&str, serde_json::Value); 4] = [
        ("crc32", serde_json::json!([])),
        ("crc32", serde_json::json!(["xyz"])),
        ("rows", serde_json::json!(0)),
        ("missing", serde_json::Value::Null),
    ];
    for (key, value) in edits {
        let mut m = m.clone();
        if key == "missing" {
            m.as_object_mut().unwrap().remove("vector_blocks");
        } else {
            m["vector_blocks"][key] = value;
        }
        std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
        let e = Index::open(&dir).unwrap_err().to_string();
        assert!(
            e.contains("manifest.json") && e.contains("vector_blocks"),
            "{key}: {e}"
        );
    }
    let mut m = m.clone();
    let sum = m["vector_blocks"]["crc32"][0].as_str().unwrap().to_string();
    let other = if sum == "00000000" {
        "00000001"
    } else {
        "00000000"
    };
    m["vector_blocks"]["crc32"][0] = serde_json::json!(other);
    std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    let e = first_search_error(&dir).expect("refused");
    assert!(
        e.contains("block 0") && e.contains(&format!("expected {other}")),
        "{e}"
    );
    std::fs::write(&mpath, &clean).unwrap();
    Index::open(&dir).unwrap().verify().unwrap();
}

#[test]
fn a_nan_vector_is_an_error_never_rank_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, &items(20, 4), |_| ChunkMeta::default());
    let vpath = dir.join(files::VECTORS);
    let mut bytes = std::fs::read(&vpath).unwrap();
    // Row 5, component 2 := NaN.
    let at = (5 * 4 + 2) * 4;
    bytes[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&vpath, &bytes).unwrap();
    let index = Index::open(&dir).unwrap();
    let e = index
        .rank_of(&[1.0, 0.0, 0.0, 0.0], "c005", None)
        .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, IndexError::Corrupt { .. }), "{text}");
    assert!(
        text.contains("vectors.f32") && text.contains("row 5") && text.contains("c005"),
        "{text}"
    );
    assert!(index.search(&[1.0, 0.0, 0.0, 0.0], 3, None).is_err());
    let e = index.verify().unwrap_err();
    assert!(e.to_string().contains("vectors.f32"), "{e}");
}

#[test]
fn chunk_table_damage_is_caught_before_the_first_search_and_manifest_damage_on_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, &items(10, 4), |i| ChunkMeta {
        domain: Some(format!("d{}", i % 2)),
        ..ChunkMeta::default()
    });
    let cpath = dir.join(files::CHUNK_TABLE);
    let clean = std::fs::read(&cpath).unwrap();
    let query = [0.3f32, -0.2, 0.9, 0.1];
    // One bit of a text hash (rows: 64 + 10 × 48 bytes; hashes follow): the structure is
    // intact, so the index opens, but its first search compares the table's SHA-256 with the
    // manifest and refuses; so does verify().
    let mut changed = clean.clone();
    changed[64 + 10 * 48 + 5] ^= 0x01;
    std::fs::write(&cpath, &changed).unwrap();
    let index = Index::open(&dir).unwrap();
    let e = index.search(&query, 3, None).unwrap_err();
    assert!(
        e.to_string().contains("chunks.bin") && e.to_string().contains("does not match"),
        "{e}"
    );
    let e = Index::open(&dir).unwrap().verify().unwrap_err();
    assert!(e.to_string().contains("chunks.bin"), "{e}");
    // A metadata byte garbled (same size): refused before the first search too, filtered or not.
    let heap = clean.len() - 1;
    let mut garbled = clean.clone();
    garbled[heap] ^= 0x20;
    std::fs::write(&cpath, &garbled).unwrap();
    let filter: Filter = "domain=d1".parse().unwrap();
    let e = Index::open(&dir)
        .unwrap()
        .search(&query, 3, Some(&filter))
        .unwrap_err();
    assert!(e.to_string().contains("chunks.bin"), "{e}");
    // One byte more: caught on open by the size.
    let mut longer = clean.clone();
    longer.push(b' ');
    std::fs::write(&cpath, &longer).unwrap();
    let e = Index::open(&dir).unwrap_err();
    assert!(
        e.to_string().contains("chunks.bin") && e.to_string().contains("bytes"),
        "{e}"
    );
    std::fs::write(&cpath, &clean).unwrap();
    Index::open(&dir).unwrap().verify().unwrap();

    // The manifest's record of vectors.f32 disagreeing with count × dimension.
    let mpath = dir.join(files::MANIFEST);
    let manifest = std::fs::read_to_string(&mpath).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    value["files"]["vectors.f32"]["bytes"] = serde_json::json!(4);
    std::fs::write(&mpath, value.to_string()).unwrap();
    let e = Index::open(&dir).unwrap_err();
    assert!(e.to_string().contains("manifest.json"), "{e}");
    // A data file missing from `files`.
    value = serde_json::from_str(&manifest).unwrap();
    value["files"]
        .as_object_mut()
        .unwrap()
        .remove("records.jsonl");
    std::fs::write(&mpath, value.to_string()).unwrap();
    assert!(Index::open(&dir).is_err());
    std::fs::write(&mpath, &manifest).unwrap();
    Index::open(&dir).unwrap().verify().unwrap();
}

#[test]
fn ingest_refuses_to_copy_damaged_vectors_into_a_new_version() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kb");
    build(&dir, &items(10, 4), |_| ChunkMeta::default());
    let vpath = dir.join(files::VECTORS);
    let mut bytes = std::fs::read(&vpath).unwrap();
    bytes[17] ^= 0x80; // a sign bit: the norm is unchanged, only the hash sees it
    std::fs::write(&vpath, &bytes).unwrap();
    let before = std::fs::read(dir.join(files::MANIFEST)).unwrap();
    let base = Index::open(&dir).unwrap();
    let corpus: Vec<ChunkInput> = base
        .chunks()
        .map(|c| ChunkInput::new(c.id(), format!("text of {}", c.id())))
        .collect();
    let plan = Plan::new(Some(&base), corpus, settings(4, 1)).unwrap();
    assert_eq!(plan.embed_count(), 0);
    let e = plan
        .apply(&[] as &[Vec<f32>], &batch("b2", "t"), &dir)
        .unwrap_err();
    assert!(e.to_string().contains("vectors.f32"), "{e}");
    assert_eq!(std::fs::read(dir.join(files::MANIFEST)).unwrap(), before);
}

#[test]
fn a_format_1_chunk_table_is_still_hashed_on_every_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("v1");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/index-v1");
    std::fs::create_dir_all(&dir).unwrap();
    for name in [
        "manifest.json",
        "chunks.jsonl",
        "records.jsonl",
        "vectors.f32",
    ] {
        std::fs::copy(src.join(name), dir.join(name)).unwrap();
    }
    let cpath = dir.join("chunks.jsonl");
    let clean = std::fs::read_to_string(&cpath).unwrap();
    // A hex digit of a text hash: still a valid line, so only the hash can tell.
    let at = clean.find("sha256:").unwrap() + 7;
    let digit = if &clean[at..at + 1] == "0" { "1" } else { "0" };
    let changed = format!("{}{digit}{}", &clean[..at], &clean[at + 1..]);
    std::fs::write(&cpath, &changed).unwrap();
    let e = Index::open(&dir).unwrap_err();
    assert!(
        e.to_string().contains("chunks.jsonl") && e.to_string().contains("does not match"),
        "{e}"
    );
    std::fs::write(&cpath, &clean).unwrap();
    Index::open(&dir).unwrap().verify().unwrap();
}
