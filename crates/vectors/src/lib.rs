//! veredicto's embedded vectors written where a vector store can load them (JSONL, NumPy
//! `.npy`, Parquet), and the check that a store's vectors were made by the model the exam embeds
//! queries with ([`check_vectors`]: a table embedded with another model, or left behind by a
//! model upgrade, has stored vectors far from the recomputed ones).
//!
//! Files are written beside their destination and renamed into place when complete, after
//! an fsync: a failed write leaves nothing half-written.

#![warn(missing_docs)]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why writing or checking vectors failed.
#[derive(Debug, thiserror::Error)]
pub enum VectorsError {
    /// Writing the output file.
    #[error("{}: {source}", path.display())]
    Write {
        /// The destination.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A vector whose dimension differs from the first one's.
    #[error("vector of `{id}` has dimension {got}, the others have {want}")]
    Dimension {
        /// The chunk or case ID (cut to 200 characters).
        id: String,
        /// Its dimension.
        got: usize,
        /// The first vector's.
        want: usize,
    },
}

fn short(s: &str) -> String {
    s.chars().take(200).collect()
}

fn same_dimension<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a [f32])>,
) -> Result<usize, VectorsError> {
    let mut want = None;
    for (id, v) in rows {
        match want {
            None => want = Some(v.len()),
            Some(w) if w != v.len() => {
                return Err(VectorsError::Dimension {
                    id: short(id),
                    got: v.len(),
                    want: w,
                })
            }
            _ => {}
        }
    }
    Ok(want.unwrap_or(0))
}

/// Writes `path` atomically with what `fill` writes.
fn atomic(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<&File>) -> std::io::Result<()>,
) -> Result<(), VectorsError> {
    let err = |source| VectorsError::Write {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    {
        let mut w = BufWriter::new(tmp.as_file());
        fill(&mut w).map_err(err)?;
        w.flush().map_err(err)?;
    }
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// One JSON object a line, `{"id": ID, "vector": [...], "model": MODEL}` (`model`: the
/// embedder's fingerprint hash, so a store can keep which model made each vector).
pub fn write_jsonl(
    path: &Path,
    rows: &[(String, Vec<f32>)],
    model: &str,
) -> Result<(), VectorsError> {
    same_dimension(rows.iter().map(|(id, v)| (id.as_str(), v.as_slice())))?;
    atomic(path, |w| {
        for (id, v) in rows {
            let line = serde_json::json!({"id": id, "vector": v, "model": model});
            serde_json::to_writer(&mut *w, &line)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// The vectors as a NumPy `.npy` file (format 1.0, `<f4`, C order, shape `(rows, dim)`),
/// in the order of `rows`; the IDs, in the same order, one a line in `ids_path`.
pub fn write_npy(
    path: &Path,
    ids_path: &Path,
    rows: &[(String, Vec<f32>)],
) -> Result<(), VectorsError> {
    let dim = same_dimension(rows.iter().map(|(id, v)| (id.as_str(), v.as_slice())))?;
    atomic(path, |w| {
        let dict = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}",
            rows.len(),
            dim
        );
        // magic (6) + version (2) + header length (2) + dict, padded with spaces and ended by
        // a newline to a multiple of 64 bytes
        let unpadded = 10 + dict.len() + 1;
        let header_len = dict.len() + 1 + (64 - unpadded % 64) % 64;
        w.write_all(b"\x93NUMPY\x01\x00")?;
        w.write_all(&(header_len as u16).to_le_bytes())?;
        w.write_all(dict.as_bytes())?;
        w.write_all(&vec![b' '; header_len - dict.len() - 1])?;
        w.write_all(b"\n")?;
        for (_, v) in rows {
            for x in v {
                w.write_all(&x.to_le_bytes())?;
            }
        }
        Ok(())
    })?;
    atomic(ids_path, |w| {
        for (id, _) in rows {
            writeln!(w, "{}", id.replace('\n', " "))?;
        }
        Ok(())
    })
}

/// The Parquet schema: the JSONL output's fields, the vector as Parquet's standard
/// three-level list of float32 (Arrow reads it as `list<element: float not null>`).
const PARQUET_SCHEMA: &str = "
message veredicto_vectors {
  required binary id (UTF8);
  required group vector (LIST) {
    repeated group list {
      required float element;
    }
  }
  required binary model (UTF8);
}";

/// The vectors as a Parquet file with the columns of the JSONL output, in the order of
/// `rows`: `id` (string), `vector` (a list of float32, every row of the same length) and
/// `model` (the embedder's fingerprint hash). One row group, no compression (any reader can
/// open it), written by the `parquet` crate's column writers.
pub fn write_parquet(
    path: &Path,
    rows: &[(String, Vec<f32>)],
    model: &str,
) -> Result<(), VectorsError> {
    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType, FloatType};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::types::ColumnPath;

    same_dimension(rows.iter().map(|(id, v)| (id.as_str(), v.as_slice())))?;
    let schema = Arc::new(
        parquet::schema::parser::parse_message_type(PARQUET_SCHEMA)
            .expect("the Parquet schema is valid"),
    );
    let properties = Arc::new(
        WriterProperties::builder()
            .set_compression(Compression::UNCOMPRESSED)
            .set_created_by("veredicto".to_owned())
            // floats rarely repeat: plain pages, no dictionary attempt
            .set_column_dictionary_enabled(
                ColumnPath::from(vec![
                    "vector".to_owned(),
                    "list".to_owned(),
                    "element".to_owned(),
                ]),
                false,
            )
            .build(),
    );
    let ids: Vec<ByteArray> = rows
        .iter()
        .map(|(id, _)| ByteArray::from(id.as_str()))
        .collect();
    let models: Vec<ByteArray> = rows.iter().map(|_| ByteArray::from(model)).collect();
    // A row's list: its first value at repetition level 0, the others at 1; an empty list
    // is one definition level 0 and no value.
    let (mut values, mut def, mut rep) = (Vec::new(), Vec::new(), Vec::new());
    for (_, v) in rows {
        if v.is_empty() {
            def.push(0);
            rep.push(0);
        }
        for (i, x) in v.iter().enumerate() {
            values.push(*x);
            def.push(1);
            rep.push(i16::from(i > 0));
        }
    }
    let io = std::io::Error::other;
    atomic(path, |w| {
        let mut writer = SerializedFileWriter::new(w, schema, properties).map_err(io)?;
        let mut group = writer.next_row_group().map_err(io)?;
        let mut index = 0;
        while let Some(mut column) = group.next_column().map_err(io)? {
            match index {
                0 => column
                    .typed::<ByteArrayType>()
                    .write_batch(&ids, None, None),
                1 => column
                    .typed::<FloatType>()
                    .write_batch(&values, Some(&def), Some(&rep)),
                _ => column
                    .typed::<ByteArrayType>()
                    .write_batch(&models, None, None),
            }
            .map_err(io)?;
            column.close().map_err(io)?;
            index += 1;
        }
        group.close().map_err(io)?;
        writer.close().map_err(io)?;
        Ok(())
    })
}

/// Below this cosine a stored vector is not the query model's.
pub const SAME_MODEL_COSINE: f64 = 0.99;

/// What [`check_vectors`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorCheck {
    /// Chunks compared.
    pub compared: usize,
    /// The cosine between stored and recomputed vector, per chunk, in input order.
    pub cosines: Vec<(String, f64)>,
    /// Their mean.
    pub mean: f64,
    /// The lowest, with its chunk.
    pub lowest: Option<(String, f64)>,
    /// Chunks whose cosine is below [`SAME_MODEL_COSINE`].
    pub below: usize,
    /// Stored vectors whose dimension differs from the recomputed one: another model for sure.
    pub other_dimension: Vec<String>,
}

impl VectorCheck {
    /// Whether the store looks embedded with another model: a vector of another dimension,
    /// or a mean cosine below [`SAME_MODEL_COSINE`].
    pub fn other_model(&self) -> bool {
        !self.other_dimension.is_empty() || (self.compared > 0 && self.mean < SAME_MODEL_COSINE)
    }

    /// One line for the report.
    pub fn summary(&self) -> String {
        if !self.other_dimension.is_empty() {
            return format!(
                "the table was embedded with another model: {} of {} stored vectors have another dimension than the query model's (first: `{}`)",
                self.other_dimension.len(),
                self.compared + self.other_dimension.len(),
                short(&self.other_dimension[0])
            );
        }
        let lowest = self.lowest.as_ref().map_or(String::new(), |(id, c)| {
            format!(", lowest {c:.3} (`{}`)", short(id))
        });
        let head = if self.other_model() {
            "the table was embedded with another model: "
        } else {
            ""
        };
        format!(
            "{head}mean cosine {:.3} between stored and recomputed vectors over {} chunks{lowest}; {} below {SAME_MODEL_COSINE}",
            self.mean, self.compared, self.below
        )
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// Compares stored vectors with the same chunks re-embedded by the query model: `(id,
/// stored, recomputed)`. Pure: the caller samples the chunks (in a documented order) and
/// embeds their text.
pub fn check_vectors(pairs: &[(String, Vec<f32>, Vec<f32>)]) -> VectorCheck {
    let mut cosines = Vec::new();
    let mut other_dimension = Vec::new();
    for (id, stored, recomputed) in pairs {
        if stored.len() != recomputed.len() {
            other_dimension.push(id.clone());
        } else {
            cosines.push((id.clone(), cosine(stored, recomputed)));
        }
    }
    let compared = cosines.len();
    let mean = if compared == 0 {
        0.0
    } else {
        cosines.iter().map(|(_, c)| c).sum::<f64>() / compared as f64
    };
    // Lowest cosine; ties by ID.
    let lowest = cosines
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .cloned();
    let below = cosines
        .iter()
        .filter(|(_, c)| *c < SAME_MODEL_COSINE)
        .count();
    VectorCheck {
        compared,
        cosines,
        mean,
        lowest,
        below,
        other_dimension,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::{Field, ListAccessor, RowAccessor};

    fn rows() -> Vec<(String, Vec<f32>)> {
        // values whose bits matter: a negative zero, a subnormal, the largest float
        vec![
            ("c1".to_owned(), vec![0.25, -0.0, 1e-40]),
            ("c2 ñ".to_owned(), vec![f32::MAX, -1.5, 0.1]),
            ("c3".to_owned(), vec![3.0, 2.0, 1.0]),
        ]
    }

    #[test]
    fn parquet_reads_back_bit_identical_to_the_npy_output() {
        let dir = tempfile::tempdir().unwrap();
        let (pq, npy) = (dir.path().join("v.parquet"), dir.path().join("v.npy"));
        write_parquet(&pq, &rows(), "sha256:ab").unwrap();
        write_npy(&npy, &dir.path().join("v.npy.ids.txt"), &rows()).unwrap();
        let reader = SerializedFileReader::new(File::open(&pq).unwrap()).unwrap();
        let meta = reader.metadata().file_metadata();
        assert_eq!(meta.num_rows(), 3);
        let mut ids = Vec::new();
        let mut bits = Vec::new();
        for row in reader.get_row_iter(None).unwrap() {
            let row = row.unwrap();
            ids.push(row.get_string(0).unwrap().clone());
            let list = row.get_list(1).unwrap();
            for i in 0..list.len() {
                bits.push(list.get_float(i).unwrap().to_bits());
            }
            assert_eq!(row.get_string(2).unwrap(), "sha256:ab");
            assert!(
                matches!(row.get_column_iter().nth(1), Some((name, Field::ListInternal(_))) if name == "vector")
            );
        }
        assert_eq!(ids, ["c1", "c2 ñ", "c3"]);
        // the .npy's data: after its header, the floats little-endian in row order
        let bytes = std::fs::read(&npy).unwrap();
        let header = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let npy_bits: Vec<u32> = bytes[header..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(bits, npy_bits);
        assert_eq!(bits[1], (-0.0f32).to_bits());
    }

    #[test]
    fn parquet_refuses_mixed_dimensions_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let pq = dir.path().join("v.parquet");
        let mut rows = rows();
        rows[2].1.push(0.0);
        let e = write_parquet(&pq, &rows, "m").unwrap_err();
        assert!(e
            .to_string()
            .contains("vector of `c3` has dimension 4, the others have 3"));
        assert!(!pq.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
