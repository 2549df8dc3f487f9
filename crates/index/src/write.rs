//! Atomic folder writes: build beside the destination, sync, swap in at the very end.

use crate::error::{IndexError, Result};
use crate::manifest::{files, FileRecord};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary folder `.NAME.tmp-PID-N` beside the destination `NAME`. Dropped or
/// abandoned: removed. Committed: synced and swapped with the destination.
pub(crate) struct AtomicDir {
    dest: PathBuf,
    parent: PathBuf,
    temp: PathBuf,
    done: bool,
}

impl AtomicDir {
    /// Prepares a temporary folder for a new version of `dest`. Refuses a `dest` that exists
    /// and is neither an index folder nor an empty folder (so nothing else gets replaced).
    pub(crate) fn create(dest: &Path) -> Result<AtomicDir> {
        let name = dest.file_name().ok_or_else(|| IndexError::Destination {
            path: dest.to_path_buf(),
            message: "has no folder name".into(),
        })?;
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        match fs::metadata(dest) {
            Ok(meta) if !meta.is_dir() => {
                return Err(IndexError::Destination {
                    path: dest.to_path_buf(),
                    message: "exists and is not a folder".into(),
                })
            }
            Ok(_) => {
                let is_index = dest.join(files::MANIFEST).is_file();
                let empty = fs::read_dir(dest)
                    .map_err(|e| IndexError::io(dest, e))?
                    .next()
                    .is_none();
                if !is_index && !empty {
                    return Err(IndexError::Destination {
                        path: dest.to_path_buf(),
                        message: format!(
                            "exists, is not empty and has no {}: refusing to replace it",
                            files::MANIFEST
                        ),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(IndexError::io(dest, e)),
        }
        if !parent.is_dir() {
            fs::create_dir_all(&parent).map_err(|e| IndexError::io(&parent, e))?;
            // The new folder's entry must survive a crash too.
            if let Some(grand) = parent.parent().filter(|g| !g.as_os_str().is_empty()) {
                sync_dir(grand)?;
            }
        }
        let pid = std::process::id();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let mut temp_name = std::ffi::OsString::from(".");
            temp_name.push(name);
            temp_name.push(format!(".tmp-{pid}-{n}"));
            let temp = parent.join(temp_name);
            match fs::create_dir(&temp) {
                Ok(()) => {
                    return Ok(AtomicDir {
                        dest: dest.to_path_buf(),
                        parent,
                        temp,
                        done: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1_000_000 => {}
                Err(e) => return Err(IndexError::io(&temp, e)),
            }
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.temp.join(name)
    }

    /// Writes and syncs one small file.
    pub(crate) fn write_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let path = self.path(name);
        let mut f = File::create(&path).map_err(|e| IndexError::io(&path, e))?;
        f.write_all(bytes).map_err(|e| IndexError::io(&path, e))?;
        f.sync_all().map_err(|e| IndexError::io(&path, e))
    }

    /// Removes the temporary folder; the destination is untouched.
    pub(crate) fn abandon(mut self) {
        self.done = true;
        let _ = fs::remove_dir_all(&self.temp);
    }

    /// Syncs the temporary folder and puts it in place of the destination.
    pub(crate) fn commit(mut self) -> Result<()> {
        sync_dir(&self.temp)?;
        let exists = self.dest.exists();
        if exists {
            if !exchange(&self.temp, &self.dest)? {
                // No atomic exchange here: move the old folder aside, then the new one in.
                let mut aside = self.temp.clone().into_os_string();
                aside.push(".old");
                let aside = PathBuf::from(aside);
                fs::rename(&self.dest, &aside).map_err(|e| IndexError::io(&self.dest, e))?;
                if let Err(e) = fs::rename(&self.temp, &self.dest) {
                    // Put the old index back.
                    let _ = fs::rename(&aside, &self.dest);
                    return Err(IndexError::io(&self.dest, e));
                }
                self.done = true;
                sync_dir(&self.parent)?;
                let _ = fs::remove_dir_all(&aside);
                return Ok(());
            }
            // The old index is now at the temporary path.
            self.done = true;
            sync_dir(&self.parent)?;
            let _ = fs::remove_dir_all(&self.temp);
        } else {
            fs::rename(&self.temp, &self.dest).map_err(|e| IndexError::io(&self.dest, e))?;
            self.done = true;
            sync_dir(&self.parent)?;
        }
        Ok(())
    }
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_dir_all(&self.temp);
        }
    }
}

pub(crate) fn sync_dir(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let f = File::open(path).map_err(|e| IndexError::io(path, e))?;
        f.sync_all().map_err(|e| IndexError::io(path, e))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Atomically exchanges two folders (Linux `renameat2(RENAME_EXCHANGE)`). `Ok(false)` when
/// the system or file system cannot.
fn exchange(a: &Path, b: &Path) -> Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let to_c = |p: &Path| {
            std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| IndexError::Destination {
                path: p.to_path_buf(),
                message: "path contains a NUL byte".into(),
            })
        };
        let (ca, cb) = (to_c(a)?, to_c(b)?);
        // SAFETY: both pointers are valid NUL-terminated strings for the duration of the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                libc::AT_FDCWD,
                ca.as_ptr(),
                libc::AT_FDCWD,
                cb.as_ptr(),
                libc::RENAME_EXCHANGE,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => Ok(false),
            _ => Err(IndexError::io(b, err)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (a, b);
        Ok(false)
    }
}

/// A buffered file writer that hashes and counts what it writes.
pub(crate) struct HashingWriter {
    name: String,
    path: PathBuf,
    out: BufWriter<File>,
    hasher: Sha256,
    bytes: u64,
}

impl HashingWriter {
    pub(crate) fn create(dir: &AtomicDir, name: &str) -> Result<HashingWriter> {
        let path = dir.path(name);
        let file = File::create(&path).map_err(|e| IndexError::io(&path, e))?;
        Ok(HashingWriter {
            name: name.to_string(),
            path,
            out: BufWriter::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
            bytes: 0,
        })
    }

    /// Bytes written so far.
    pub(crate) fn position(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn write(&mut self, buf: &[u8]) -> Result<()> {
        self.hasher.update(buf);
        self.bytes += buf.len() as u64;
        self.out
            .write_all(buf)
            .map_err(|e| IndexError::io(&self.path, e))
    }

    /// Flushes, syncs, and returns the file's name and record.
    pub(crate) fn finish(self) -> Result<(String, FileRecord)> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| IndexError::io(&self.path, e.into_error()))?;
        file.sync_all().map_err(|e| IndexError::io(&self.path, e))?;
        Ok((
            self.name,
            FileRecord {
                bytes: self.bytes,
                sha256: crate::hash_hex(&self.hasher.finalize()),
            },
        ))
    }
}
