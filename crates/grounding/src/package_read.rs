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

/// What a tar type flag is, for messages (regular files are `'0'` and NUL).
fn entry_kind(t: u8) -> &'static str {
    match t {
        b'2' => "a symbolic link",
        b'1' => "a hard link",
        b'6' => "a FIFO",
        b'3' | b'4' => "a device",
        b'5' => "a directory entry",
        b'S' => "a sparse file",
        _ => "not a regular file",
    }
}

/// Largest GNU long-name / long-link or PAX extended header read (they are held in memory).
const MAX_EXTENSION_BYTES: u64 = 64 * 1024;
const BLOCK: usize = 512;

/// An octal (or GNU base-256) number field of a tar header.
fn tar_number(f: &[u8]) -> Option<u64> {
    if f.first().is_some_and(|b| b & 0x80 != 0) {
        let mut v: u64 = u64::from(f[0] & 0x7f);
        for &b in &f[1..] {
            v = v.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return Some(v);
    }
    let t: Vec<u8> = f
        .iter()
        .copied()
        .take_while(|&b| b != 0)
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    if t.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(std::str::from_utf8(&t).ok()?, 8).ok()
}

fn cstr(f: &[u8]) -> &[u8] {
    &f[..f.iter().position(|&b| b == 0).unwrap_or(f.len())]
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` at a clean end of stream before the first byte.
fn read_block(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the archive ends inside a block",
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Reads `n` bytes of `r` and the padding to the next block, into a bounded buffer.
fn read_padded(r: &mut impl Read, n: u64) -> std::io::Result<Vec<u8>> {
    let padded = n.div_ceil(BLOCK as u64) * BLOCK as u64;
    let mut v = vec![0u8; padded as usize];
    if !read_block(r, &mut v)? && padded > 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the archive ends inside an entry",
        ));
    }
    v.truncate(n as usize);
    Ok(v)
}

/// Skips the padding after `n` data bytes.
fn skip_padding(r: &mut impl Read, n: u64) -> std::io::Result<()> {
    let pad = (BLOCK as u64 - n % BLOCK as u64) % BLOCK as u64;
    let mut b = [0u8; BLOCK];
    if pad > 0 && !read_block(r, &mut b[..pad as usize])? {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the archive ends inside an entry",
        ));
    }
    Ok(())
}

/// `path` and `size` of PAX records (`"<len> <key>=<value>\n"`).
fn pax_records(data: &[u8]) -> std::io::Result<(Option<Vec<u8>>, Option<u64>)> {
    let bad = || std::io::Error::other("malformed PAX extended header");
    let (mut path, mut size) = (None, None);
    let mut rest = data;
    while !rest.is_empty() {
        let sp = rest.iter().position(|&b| b == b' ').ok_or_else(bad)?;
        let len: usize = std::str::from_utf8(&rest[..sp])
            .ok()
            .and_then(|x| x.parse().ok())
            .ok_or_else(bad)?;
        if len <= sp + 1 || len > rest.len() || rest[len - 1] != b'\n' {
            return Err(bad());
        }
        let rec = &rest[sp + 1..len - 1];
        let eq = rec.iter().position(|&b| b == b'=').ok_or_else(bad)?;
        let (k, v) = (&rec[..eq], &rec[eq + 1..]);
        match k {
            b"path" => path = Some(v.to_vec()),
            b"size" => {
                size = Some(
                    std::str::from_utf8(v)
                        .ok()
                        .and_then(|x| x.parse().ok())
                        .ok_or_else(bad)?,
                )
            }
            _ => {}
        }
        rest = &rest[len..];
    }
    Ok((path, size))
}

/// Reads a `.tar.gz` package from `r` (`path` names it in messages). The tar stream is parsed
/// here, strictly: header checksums are checked, GNU long names and PAX `path` / `size`
/// records are honoured (each extension at most 64 KiB), and member data is streamed.
pub fn scan_tar_gz<R: BufRead>(
    path: &Path,
    r: R,
    limits: &ReadLimits,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Scan, GroundingError> {
    let hit = Rc::new(Cell::new(false));
    let mut s = Capped {
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
    let mut count = 0usize;
    let mut long_name: Option<Vec<u8>> = None;
    let mut pax: (Option<Vec<u8>>, Option<u64>) = (None, None);
    let mut h = [0u8; BLOCK];
    let mut offset = 0u64;
    loop {
        if !read_block(&mut s, &mut h).map_err(fail)? {
            // No end-of-archive marker: every entry was complete, the marker is missing.
            scan.problems
                .push("the archive has no end-of-archive marker".to_string());
            break;
        }
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let at = offset;
        let stored = tar_number(&h[148..156]);
        let sum: u64 = h
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    u64::from(b)
                }
            })
            .sum();
        if stored != Some(sum) {
            return Err(fail(std::io::Error::other(format!(
                "bad header checksum at byte {at}"
            ))));
        }
        count += 1;
        if count > limits.max_members {
            return Err(pkg_err(
                path,
                format!(
                    "more than {} entries (raise the limit with --max-members)",
                    limits.max_members
                ),
            ));
        }
        let header_size = tar_number(&h[124..136]).ok_or_else(|| {
            fail(std::io::Error::other(format!(
                "bad size field at byte {at}"
            )))
        })?;
        let t = h[156];
        let size = match t {
            b'L' | b'K' | b'x' | b'g' => header_size,
            _ => pax.1.take().unwrap_or(header_size),
        };
        offset += BLOCK as u64 + size.div_ceil(BLOCK as u64) * BLOCK as u64;
        if matches!(t, b'L' | b'K' | b'x' | b'g') {
            if size > MAX_EXTENSION_BYTES {
                return Err(fail(std::io::Error::other(format!(
                    "an extended header of {size} bytes at byte {at} (at most {MAX_EXTENSION_BYTES})"
                ))));
            }
            let data = read_padded(&mut s, size).map_err(fail)?;
            match t {
                b'L' => long_name = Some(cstr(&data).to_vec()),
                b'x' => pax = pax_records(&data).map_err(fail)?,
                _ => {}
            }
            continue;
        }
        let raw = match (pax.0.take(), long_name.take()) {
            (Some(p), _) => p,
            (None, Some(l)) => l,
            (None, None) => {
                let name = cstr(&h[0..100]);
                let prefix = cstr(&h[345..500]);
                if &h[257..263] == b"ustar\0" && !prefix.is_empty() {
                    let mut p = prefix.to_vec();
                    p.push(b'/');
                    p.extend_from_slice(name);
                    p
                } else {
                    name.to_vec()
                }
            }
        };
        let name = String::from_utf8_lossy(&raw).into_owned();
        let problem = if t != b'0' && t != 0 {
            Some(format!(
                "member {} is {}: only regular files are accepted",
                short(&name),
                entry_kind(t)
            ))
        } else if std::str::from_utf8(&raw).is_err() {
            Some(format!("member name is not UTF-8: {}", short(&name)))
        } else {
            unsafe_member_path(&name)
                .map(|why| format!("unsafe member path `{}`: {why}", short(&name)))
        };
        if let Some(p) = problem {
            scan.problems.push(p);
            // Skip its data (links and devices normally have none).
            let mut rest = (&mut s).take(size);
            std::io::copy(&mut rest, &mut std::io::sink()).map_err(fail)?;
            if rest.limit() > 0 {
                return Err(fail(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the archive ends inside an entry",
                )));
            }
            skip_padding(&mut s, size).map_err(fail)?;
            continue;
        }
        if size > limits.max_member_bytes {
            return Err(too_big(
                path,
                &format!("member {}", short(&name)),
                limits.max_member_bytes,
                "--max-member-bytes",
            ));
        }
        let mut body = (&mut s).take(size);
        let (m, kept) = match read_member(path, &name, &mut body, size, keep(&name)) {
            Err(_) if hit.get() => return Err(fail(std::io::Error::other("limit"))),
            x => x?,
        };
        if m.bytes != size {
            return Err(fail(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("the archive ends inside member {}", short(&name)),
            )));
        }
        skip_padding(&mut s, size).map_err(fail)?;
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
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match s.read(&mut buf) {
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
    let mut file = s.inner.into_inner();
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
