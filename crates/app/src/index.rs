//! Maintenance of veredicto's own index folder.

use std::collections::BTreeMap;
use std::path::Path;

use veredicto_index::{FileRecord, Index};

use crate::Result;

/// An index found intact by [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Chunks in the index.
    pub chunks: usize,
    /// Each data file's size and SHA-256, by name, as the manifest records them.
    pub files: BTreeMap<String, FileRecord>,
}

impl Verified {
    /// Bytes of all the data files.
    pub fn bytes(&self) -> u64 {
        self.files.values().map(|f| f.bytes).sum()
    }
}

/// Checks every file of the index at `dir` against its manifest (sizes, SHA-256, finite
/// unit vectors); the error names the first file that is not intact.
pub fn verify(dir: &Path) -> Result<Verified> {
    let index = Index::open(dir)?;
    index.verify()?;
    Ok(Verified {
        chunks: index.len(),
        files: index.manifest().files.clone(),
    })
}
