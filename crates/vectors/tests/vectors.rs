use veredicto_vectors::*;

fn rows() -> Vec<(String, Vec<f32>)> {
    vec![
        ("a".into(), vec![1.0, 0.0, 0.5]),
        ("b".into(), vec![0.0, 1.0, -2.25]),
    ]
}

#[test]
fn npy_file_has_numpys_header_and_little_endian_floats() {
    let dir = tempfile::tempdir().unwrap();
    let (npy, ids) = (dir.path().join("v.npy"), dir.path().join("v.ids"));
    write_npy(&npy, &ids, &rows()).unwrap();
    let bytes = std::fs::read(&npy).unwrap();
    assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + header_len) % 64, 0);
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
    assert!(header.ends_with('\n'));
    let data = &bytes[10 + header_len..];
    assert_eq!(data.len(), 6 * 4);
    assert_eq!(f32::from_le_bytes(data[20..24].try_into().unwrap()), -2.25);
    assert_eq!(std::fs::read_to_string(&ids).unwrap(), "a\nb\n");
}

#[test]
fn jsonl_lines_carry_id_vector_and_model_and_mixed_dimensions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.jsonl");
    write_jsonl(&out, &rows(), "sha256:ab").unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        r#"{"id":"a","vector":[1.0,0.0,0.5],"model":"sha256:ab"}"#
    );
    let mut bad = rows();
    bad[1].1.pop();
    let e = write_jsonl(&dir.path().join("bad.jsonl"), &bad, "m").unwrap_err();
    assert_eq!(
        e.to_string(),
        "vector of `b` has dimension 2, the others have 3"
    );
    assert!(!dir.path().join("bad.jsonl").exists());
}

#[test]
fn check_vectors_catches_a_table_embedded_with_another_model() {
    let same: Vec<(String, Vec<f32>, Vec<f32>)> = rows()
        .into_iter()
        .map(|(id, v)| {
            let w: Vec<f32> = v.iter().map(|x| x * 1.0001 + 1e-5).collect();
            (id, v, w)
        })
        .collect();
    let c = check_vectors(&same);
    assert!(!c.other_model(), "{}", c.summary());
    assert!(c.mean > 0.999);
    // Another model: unrelated directions.
    let other = vec![
        ("a".to_owned(), vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]),
        ("b".to_owned(), vec![0.0, 1.0, 0.0], vec![0.6, 0.8, 0.0]),
    ];
    let c = check_vectors(&other);
    assert!(c.other_model());
    assert_eq!(c.below, 2);
    assert_eq!(
        c.summary(),
        "the table was embedded with another model: mean cosine 0.400 between stored and recomputed vectors over 2 chunks, lowest 0.000 (`a`); 2 below 0.99"
    );
    let dims = check_vectors(&[("a".to_owned(), vec![1.0; 4], vec![1.0; 3])]);
    assert!(dims.other_model());
    assert!(
        dims.summary().contains("another dimension"),
        "{}",
        dims.summary()
    );
}
