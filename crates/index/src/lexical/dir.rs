//! A read-only tantivy [`Directory`] over the lexical files mapped when the index was
//! opened: tantivy reads exactly the bytes of the version the index opened (the files were
//! opened relative to its folder handle), takes no lock, writes nothing and watches nothing,
//! so a search works on a read-only folder and never mixes two versions of the index.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, OwnedBytes, WatchCallback, WatchHandle, WritePtr,
};

/// The lexical files by name (inside `lexical/`), as mapped.
#[derive(Clone)]
pub(crate) struct MappedDir {
    files: Arc<BTreeMap<PathBuf, OwnedBytes>>,
}

impl std::fmt::Debug for MappedDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedDir")
            .field("files", &self.files.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl MappedDir {
    pub(crate) fn new(files: BTreeMap<PathBuf, OwnedBytes>) -> MappedDir {
        MappedDir {
            files: Arc::new(files),
        }
    }

    fn get(&self, path: &Path) -> Result<&OwnedBytes, OpenReadError> {
        self.files
            .get(path)
            .ok_or_else(|| OpenReadError::FileDoesNotExist(path.to_path_buf()))
    }
}

fn read_only() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        "the lexical arm is opened read-only",
    )
}

impl Directory for MappedDir {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        Ok(Arc::new(self.get(path)?.clone()))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        Ok(self.files.contains_key(path))
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_path_buf(),
        })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        Ok(self.get(path)?.as_slice().to_vec())
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> std::io::Result<()> {
        Err(read_only())
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        // Nothing is ever written here: readers need no lock.
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, _watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        Ok(WatchHandle::empty())
    }
}
