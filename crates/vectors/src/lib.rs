//! veredicto's embedded vectors written where a vector store can load them (JSONL, NumPy
//! `.npy`), and the check that a store's vectors were made by the model the exam embeds
//! queries with ([`check_vectors`]: a table embedded with another model, or left behind by a
//! model upgrade, has stored vectors far from the recomputed ones).
//!
//! Files are written beside their destination and renamed into place when complete, after
//! an fsync: a failed write leaves nothing half-written.

#![warn(missing_docs)]

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

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
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
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
