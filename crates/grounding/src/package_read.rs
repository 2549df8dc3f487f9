//! Reading audit packages without trusting them: members are streamed and hashed; only regular
//! files are read, each path once, and nothing may follow the end of the archive or the gzip
//! stream; links are never followed and FIFOs or devices never opened; member size, total size
//! and member count are capped ([`ReadLimits`]).

use crate::error::GroundingError;
use crate::package::{
    unsafe_member_path, verification, Files, Member, Members, Verification, MANIFEST, MANIFEST_HASH,
};
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use veredicto_core::redact::short;

/// Default cap on one member's size: 256 MiB.
pub const DEFAULT_MAX_MEMBER_BYTES: u64 = 256 << 20;
/// Default cap on the total: 1 GiB (decompressed archive bytes, or the sum of a folder's files).
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Default cap on the number of members (entries of any kind).
pub const DEFAULT_MAX_MEMBERS: usize = 10_000;

/// Caps applied while reading a package; going past one is an error (nothing more is read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    pub max_member_bytes: u64,
    pub max_total_bytes: u64,
    pub max_members: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_member_bytes: DEFAULT_MAX_MEMBER_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            max_members: DEFAULT_MAX_MEMBERS,
        }
    }
}

/// A package as read: every member's size and hash, the bytes of the members asked for, and
/// structural problems (non-regular members, duplicates, unsafe paths, trailing data).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scan {
    pub members: Members,
    pub kept: Files,
    pub problems: Vec<String>,
    /// True for a `.tar.gz`, false for a folder.
    pub archive: bool,
}

fn pkg_err(path: &Path, message: String) -> GroundingError {
    GroundingError::Package {
        path: path.to_path_buf(),
        message,
    }
}

fn too_big(path: &Path, what: &str, limit: u64, flag: &str) -> GroundingError {
    pkg_err(
        path,
        format!("{what} is larger than the limit of {limit} bytes (raise it with {flag})"),
    )
}

/// Streams `r` into a hash (and into memory when `keep`), failing past `limit` bytes.
fn read_member(
    path: &Path,
    name: &str,
    r: &mut dyn Read,
    limit: u64,
    keep: bool,
) -> Result<(Member, Option<Vec<u8>>), GroundingError> {
    let mut h = Sha256::new();
    let mut kept = keep.then(Vec::new);
    let mut n = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let k = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(path, e)),
        };
        n += k as u64;
        if n > limit {
            return Err(too_big(
                path,
                &format!("member {}", short(name)),
                limit,
                "--max-member-bytes",
            ));
        }
        h.update(&buf[..k]);
        if let Some(v) = kept.as_mut() {
            v.extend_from_slice(&buf[..k]);
        }
    }
    let member = Member {
        bytes: n,
        sha256: crate::load::hex(&h.finalize()),
    };
    Ok((member, kept))
}

fn read_error(path: &Path, e: std::io::Error) -> GroundingError {
    pkg_err(path, format!("not a readable package: {e}"))
}

/// Opens `p` only if it is a regular file: never through a link, never blocking on a FIFO.
fn open_regular(p: &Path) -> std::io::Result<Option<File>> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let f = match o.open(p) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(f.metadata()?.is_file().then_some(f))
}

fn kind_name(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Reads a package (folder or `.tar.gz`), keeping the bytes of the members `keep` accepts.
pub fn scan_package(
    path: &Path,
    limits: &ReadLimits,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Scan, GroundingError> {
    // The path given may itself be a link; nothing inside a package is followed.
    let meta = std::fs::metadata(path).map_err(|e| GroundingError::io(path, e))?;
    if meta.is_dir() {
        return scan_dir(path, limits, keep);
    }
    if !meta.is_file() {
        return Err(pkg_err(
            path,
            format!(
                "not a package: {} (a folder or a .tar.gz file is)",
                kind_name(&meta.file_type())
            ),
        ));
    }
    let f = open_regular(path)
        .map_err(|e| GroundingError::io(path, e))?
        .ok_or_else(|| pkg_err(path, "not a regular file".into()))?;
    scan_tar_gz(path, BufReader::new(f), limits, keep)
}

fn scan_dir(
    root: &Path,
    limits: &ReadLimits,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Scan, GroundingError> {
    let mut scan = Scan::default();
    let mut total = 0u64;
    let mut count = 0usize;
    let mut stack: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let mut entries = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(|e| GroundingError::io(&dir, e))? {
            let e = e.map_err(|e| GroundingError::io(&dir, e))?;
            let t = e.file_type().map_err(|x| GroundingError::io(e.path(), x))?;
            entries.push((e.file_name(), e.path(), t));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, full, t) in entries {
            count += 1;
            if count > limits.max_members {
                return Err(pkg_err(
                    root,
                    format!(
                        "more than {} entries (raise the limit with --max-members)",
                        limits.max_members
                    ),
                ));
            }
            let Some(name) = name.to_str() else {
                scan.problems.push(format!(
                    "file name is not UTF-8: {}",
                    short(&name.to_string_lossy())
                ));
                continue;
            };
            let rel = format!("{prefix}{name}");
            if t.is_dir() {
                stack.push((full, format!("{rel}/")));
                continue;
            }
            if !t.is_file() {
                scan.problems.push(format!(
                    "{} is {}: only regular files are read",
                    short(&rel),
                    kind_name(&t)
                ));
                continue;
            }
            if let Some(why) = unsafe_member_path(&rel) {
                scan.problems
                    .push(format!("unsafe member path `{}`: {why}", short(&rel)));
                continue;
            }
            let Some(mut f) = open_regular(&full).map_err(|e| GroundingError::io(&full, e))? else {
                scan.problems
                    .push(format!("{} is not a regular file: not read", short(&rel)));
                continue;
            };
            let (m, kept) = read_member(root, &rel, &mut f, limits.max_member_bytes, keep(&rel))?;
            total += m.bytes;
            if total > limits.max_total_bytes {
                return Err(too_big(
                    root,
                    "the package",
                    limits.max_total_bytes,
                    "--max-total-bytes",
                ));
            }
            if let Some(b) = kept {
                scan.kept.insert(rel.clone(), b);
            }
            scan.members.insert(rel, m);
        }
    }
    Ok(scan)
}

/// Counts decompressed bytes and fails past a limit (so a gzip bomb stops early).
struct Capped<R> {
    inner: R,
    left: u64,
    hit: Rc<Cell<bool>>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            self.hit.set(true);
            return Err(std::io::Error::other("size limit reached"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

fn entry_kind(t: tar::EntryType) -> &'static str {
    match t {
        tar::EntryType::Symlink => "a symbolic link",
        tar::EntryType::Link => "a hard link",
        tar::EntryType::Fifo => "a FIFO",
        tar::EntryType::Char | tar::EntryType::Block => "a device",
        tar::EntryType::Directory => "a directory entry",
        tar::EntryType::GNUSparse => "a sparse file",
        _ => "not a regular file",
    }
}

/// Reads a `.tar.gz` package from `r` (`path` names it in messages).
pub fn scan_tar_gz<R: BufRead>(
    path: &Path,
    r: R,
    limits: &ReadLimits,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Scan, GroundingError> {
    let hit = Rc::new(Cell::new(false));
    let capped = Capped {
        inner: flate2::bufread::GzDecoder::new(r),
        left: limits.max_total_bytes,
        hit: hit.clone(),
    };
    let fail = |e: std::io::Error| {
        if hit.get() {
            too_big(
                path,
                "the decompressed package",
                limits.max_total_bytes,
                "--max-total-bytes",
            )
        } else {
            pkg_err(path, format!("not a readable .tar.gz package: {e}"))
        }
    };
    let mut scan = Scan {
        archive: true,
        ..Scan::default()
    };
    let mut a = tar::Archive::new(capped);
    let mut count = 0usize;
    for e in a.entries().map_err(fail)? {
        let mut e = e.map_err(fail)?;
        count += 1;
        if count > limits.max_members {
            return Err(pkg_err(
                path,
                format!(
                    "more than {} members (raise the limit with --max-members)",
                    limits.max_members
                ),
            ));
        }
        let raw = e.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw).into_owned();
        let t = e.header().entry_type();
        if t != tar::EntryType::Regular {
            scan.problems.push(format!(
                "member {} is {}: only regular files are accepted",
                short(&name),
                entry_kind(t)
            ));
            continue;
        }
        if std::str::from_utf8(&raw).is_err() {
            scan.problems
                .push(format!("member name is not UTF-8: {}", short(&name)));
            continue;
        }
        if let Some(why) = unsafe_member_path(&name) {
            scan.problems
                .push(format!("unsafe member path `{}`: {why}", short(&name)));
            continue;
        }
        if e.size() > limits.max_member_bytes {
            return Err(too_big(
                path,
                &format!("member {}", short(&name)),
                limits.max_member_bytes,
                "--max-member-bytes",
            ));
        }
        let (m, kept) = match read_member(path, &name, &mut e, limits.max_member_bytes, keep(&name))
        {
            Err(_) if hit.get() => return Err(fail(std::io::Error::other("limit"))),
            x => x?,
        };
        if scan.members.contains_key(&name) {
            scan.problems.push(format!(
                "member {} appears more than once (an extracting tool would keep only one)",
                short(&name)
            ));
            scan.kept.remove(&name);
            continue;
        }
        if let Some(b) = kept {
            scan.kept.insert(name.clone(), b);
        }
        scan.members.insert(name, m);
    }
    // After the end-of-archive marker: only zero padding, then the end of the gzip stream,
    // then the end of the file.
    let mut rest = a.into_inner();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match rest.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(fail(e)),
        };
        if n == 0 {
            break;
        }
        if buf[..n].iter().any(|&b| b != 0) {
            scan.problems
                .push("data after the end-of-archive marker".to_string());
            return Ok(scan);
        }
    }
    let mut file = rest.inner.into_inner();
    if !file.fill_buf().map_err(fail)?.is_empty() {
        scan.problems
            .push("data after the end of the gzip stream".to_string());
    }
    Ok(scan)
}

/// Reads a package from a folder or a `.tar.gz` file, with the default limits.
pub fn read_package(path: &Path) -> Result<Files, GroundingError> {
    read_package_with(path, &ReadLimits::default())
}

fn into_files(path: &Path, scan: Scan) -> Result<Files, GroundingError> {
    if !scan.problems.is_empty() {
        return Err(pkg_err(path, scan.problems.join("; ")));
    }
    Ok(scan.kept)
}

/// Reads every member into memory (within `limits`); a structural problem is an error.
pub fn read_package_with(path: &Path, limits: &ReadLimits) -> Result<Files, GroundingError> {
    into_files(path, scan_package(path, limits, &|_| true)?)
}

/// Reads a `.tar.gz` package from bytes (`path` names it in messages).
pub fn read_package_bytes(
    path: &Path,
    bytes: &[u8],
    limits: &ReadLimits,
) -> Result<Files, GroundingError> {
    into_files(path, scan_tar_gz(path, bytes, limits, &|_| true)?)
}

/// Verifies a package against its manifest, streaming: see [`Verification`] for what is and
/// is not checked. Unreadable packages and exceeded limits are errors.
pub fn verify_package(path: &Path, limits: &ReadLimits) -> Result<Verification, GroundingError> {
    let scan = scan_package(path, limits, &|p| p == MANIFEST || p == MANIFEST_HASH)?;
    Ok(verification_of(scan))
}

/// [`verify_package`] for `.tar.gz` bytes.
pub fn verify_package_bytes(
    path: &Path,
    bytes: &[u8],
    limits: &ReadLimits,
) -> Result<Verification, GroundingError> {
    let scan = scan_tar_gz(path, bytes, limits, &|p| {
        p == MANIFEST || p == MANIFEST_HASH
    })?;
    Ok(verification_of(scan))
}

fn verification_of(scan: Scan) -> Verification {
    let structure = if scan.archive {
        "archive structure: regular files only, each path once, safe relative paths, nothing \
         after the end-of-archive marker or the gzip stream"
    } else {
        "folder structure: regular files only (no link followed, no FIFO or device opened), \
         safe relative paths"
    };
    verification(
        scan.members,
        scan.kept.get(MANIFEST).map(Vec::as_slice),
        scan.kept.get(MANIFEST_HASH).map(Vec::as_slice),
        scan.problems,
        structure,
    )
}
