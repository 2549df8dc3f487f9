//! One writer per index: an exclusive lock on `.NAME.lock` beside the index folder `NAME`,
//! and the removal of temporary folders left by writers that died.
//!
//! The lock file sits beside the folder (not inside it) because a commit swaps the folder
//! itself. The lock is an `flock` on that file: the kernel releases it when its holder exits
//! or is killed, so a crashed writer never leaves a lock behind. The holder writes its PID in
//! the file so that a writer that cannot get the lock can name it.

use crate::error::{IndexError, Result};
use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lock files held by this process (so that [`crate::Plan::apply`] knows whether its caller
/// already holds the lock, and does not wait for itself).
static HELD: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// How long [`crate::Plan::apply`] waits for the lock when its caller does not hold it.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(300);

/// The exclusive writer lock of an index folder; released when dropped (or when the process
/// ends, however it ends).
///
/// Take it before opening the index that is about to be updated, and keep it until
/// [`crate::Plan::apply`] has returned: then no other writer can slip a batch in between the
/// read and the write. Readers ([`crate::Index::open`]) take no lock: they keep reading the
/// version they opened while a writer swaps in a new one.
#[derive(Debug)]
pub struct WriterLock {
    file: File,
    path: PathBuf,
    dir: PathBuf,
}

/// `.NAME.lock` beside `dir`.
pub(crate) fn lock_path(dir: &Path) -> Result<PathBuf> {
    let (parent, name) = parent_and_name(dir)?;
    let mut file = std::ffi::OsString::from(".");
    file.push(name);
    file.push(".lock");
    Ok(parent.join(file))
}

pub(crate) fn parent_and_name(dir: &Path) -> Result<(PathBuf, std::ffi::OsString)> {
    let name = dir.file_name().ok_or_else(|| IndexError::Destination {
        path: dir.to_path_buf(),
        message: "has no folder name".into(),
    })?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name.to_os_string()))
}

/// The key under which a lock file is recorded in [`HELD`] (canonical parent + file name).
fn held_key(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(p), Some(n)) => fs::canonicalize(if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        })
        .map(|p| p.join(n))
        .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

impl WriterLock {
    /// Takes the writer lock of index folder `dir` (which need not exist yet; its parent is
    /// created), waiting up to `wait` for another writer to finish. On timeout the error
    /// names the lock file and the PID of the process holding it. Then removes the
    /// temporary folders that writers which died left beside `dir`.
    pub fn acquire(dir: &Path, wait: Duration) -> Result<WriterLock> {
        let path = lock_path(dir)?;
        let (parent, _) = parent_and_name(dir)?;
        fs::create_dir_all(&parent).map_err(|e| IndexError::io(&parent, e))?;
        let key = held_key(&path);
        if with_held(|h| h.contains(&key)) {
            return Err(IndexError::Locked {
                path,
                holder: format!("this process (PID {})", std::process::id()),
                waited: Duration::ZERO,
            });
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| IndexError::io(&path, e))?;
        let start = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            match try_lock(&file) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return Err(IndexError::io(&path, e)),
            }
            let waited = start.elapsed();
            if waited >= wait {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let holder = match text.trim().parse::<u32>() {
                    Ok(pid) => format!("PID {pid}"),
                    Err(_) => "a process that has not written its PID yet".to_string(),
                };
                return Err(IndexError::Locked {
                    path,
                    holder,
                    waited,
                });
            }
            std::thread::sleep(pause.min(wait - waited));
            pause = (pause * 2).min(Duration::from_millis(200));
        }
        // Ours: record the PID for whoever waits next.
        let pid = std::process::id().to_string();
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)).map(drop))
            .and_then(|()| file.write_all(pid.as_bytes()))
            .map_err(|e| IndexError::io(&path, e))?;
        with_held(|h| h.insert(key));
        let lock = WriterLock {
            file,
            path,
            dir: dir.to_path_buf(),
        };
        remove_stale_temporaries(&lock.dir)?;
        Ok(lock)
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The index folder it protects.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        let key = held_key(&self.path);
        with_held(|h| h.remove(&key));
        // Closing the file releases the flock; say so explicitly for clarity.
        let _ = unlock(&self.file);
    }
}

fn with_held<R>(f: impl FnOnce(&mut HashSet<PathBuf>) -> R) -> R {
    let mut guard = HELD.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashSet::new))
}

/// Whether this process holds the writer lock of `dir`.
pub(crate) fn held_by_us(dir: &Path) -> Result<bool> {
    let key = held_key(&lock_path(dir)?);
    Ok(with_held(|h| h.contains(&key)))
}

#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a file descriptor we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(false),
        Some(libc::EINTR) => Ok(false),
        _ => Err(err),
    }
}

#[cfg(unix)]
fn unlock(file: &File) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a file descriptor we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn try_lock(_file: &File) -> std::io::Result<bool> {
    Ok(true)
}

#[cfg(not(unix))]
fn unlock(_file: &File) -> std::io::Result<()> {
    Ok(())
}

/// Whether process `pid` is alive (`kill(pid, 0)`; a process we may not signal is alive).
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}

/// The PID in a temporary folder name `.NAME.tmp-PID-N` or `.NAME.tmp-PID-N.old`.
pub(crate) fn temporary_pid(file_name: &str, name: &str) -> Option<u32> {
    let rest = file_name.strip_prefix('.')?.strip_prefix(name)?;
    let rest = rest.strip_prefix(".tmp-")?;
    let rest = rest.strip_suffix(".old").unwrap_or(rest);
    let (pid, n) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

/// Removes `.NAME.tmp-PID-N[.old]` folders beside `dir` whose writer is gone. Called with the
/// lock held: every writer holds the lock while its temporary folder exists, so a folder of
/// another PID is stale; a dead PID's folder is removed in any case. When `dir` itself is
/// missing and a writer died between moving the old index aside and the new one in (systems
/// without an atomic exchange), the old index is moved back instead of being removed.
pub(crate) fn remove_stale_temporaries(dir: &Path) -> Result<()> {
    let (parent, name) = parent_and_name(dir)?;
    let Some(name) = name.to_str() else {
        return Ok(());
    };
    let entries = match fs::read_dir(&parent) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(IndexError::io(&parent, e)),
    };
    let me = std::process::id();
    let mut stale: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| IndexError::io(&parent, e))?;
        let file_name = entry.file_name();
        let Some(file_name) = file_name.to_str() else {
            continue;
        };
        let Some(pid) = temporary_pid(file_name, name) else {
            continue;
        };
        if pid != me || !alive(pid) {
            stale.push(entry.path());
        }
    }
    // Sorted: the same folders are handled in the same order on every run.
    stale.sort();
    for path in stale {
        let is_old = path.extension().is_some_and(|e| e == "old");
        if is_old && !dir.exists() {
            fs::rename(&path, dir).map_err(|e| IndexError::io(&path, e))?;
            continue;
        }
        match fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(IndexError::io(&path, e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_are_recognised_strictly() {
        assert_eq!(temporary_pid(".kb.tmp-123-0", "kb"), Some(123));
        assert_eq!(temporary_pid(".kb.tmp-123-45.old", "kb"), Some(123));
        assert_eq!(temporary_pid(".kb.tmp-123", "kb"), None);
        assert_eq!(temporary_pid(".kb.tmp-x-1", "kb"), None);
        assert_eq!(temporary_pid(".kb2.tmp-1-1", "kb"), None);
        assert_eq!(temporary_pid("kb.tmp-1-1", "kb"), None);
        assert_eq!(temporary_pid(".kb.lock", "kb"), None);
    }
}
