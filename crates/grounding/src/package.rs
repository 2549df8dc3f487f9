//! Audit packages: a deterministic set of files plus `manifest.json` (SHA-256 of every file,
//! tool version, what is missing) and `manifest.sha256` (SHA-256 of the manifest itself, so
//! that no byte of any file can change unnoticed). Written as a directory or a `.tar.gz`
//! (sorted entries, mtime 0, mode 0644, uid/gid 0, gzip header without time or name).

use crate::error::GroundingError;
use crate::load::hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

pub const MANIFEST: &str = "manifest.json";
pub const MANIFEST_HASH: &str = "manifest.sha256";

/// A package in memory: relative path -> bytes (sorted by path).
pub type Files = BTreeMap<String, Vec<u8>>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: String,
    pub tool: String,
    pub tool_version: String,
    pub files: Vec<ManifestEntry>,
    /// Parts an audit package should hold that were not available, with why.
    pub missing: Vec<MissingPart>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissingPart {
    pub part: String,
    pub reason: String,
}

pub fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// Adds `manifest.json` and `manifest.sha256` to `files` (which must not contain them).
pub fn seal(mut files: Files, tool_version: &str, missing: Vec<MissingPart>) -> Files {
    files.remove(MANIFEST);
    files.remove(MANIFEST_HASH);
    let manifest = Manifest {
        format: "veredicto-audit-package/1".into(),
        tool: "veredicto".into(),
        tool_version: tool_version.into(),
        files: files
            .iter()
            .map(|(p, b)| ManifestEntry {
                path: p.clone(),
                bytes: b.len() as u64,
                sha256: sha256_hex(b),
            })
            .collect(),
        missing,
    };
    let mut m = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    m.push(b'\n');
    let h = format!("{}  {MANIFEST}\n", sha256_hex(&m));
    files.insert(MANIFEST.into(), m);
    files.insert(MANIFEST_HASH.into(), h.into_bytes());
    files
}

/// Every difference between a package and its manifest (empty = verified).
pub fn verify_files(files: &Files) -> Vec<String> {
    let mut diffs = Vec::new();
    let Some(m) = files.get(MANIFEST) else {
        diffs.push(format!("missing {MANIFEST}"));
        return diffs;
    };
    match files.get(MANIFEST_HASH) {
        None => diffs.push(format!("missing {MANIFEST_HASH}")),
        Some(h) => {
            let want = format!("{}  {MANIFEST}\n", sha256_hex(m));
            if h.as_slice() != want.as_bytes() {
                diffs.push(format!(
                    "{MANIFEST_HASH}: does not match the SHA-256 of {MANIFEST} ({})",
                    sha256_hex(m)
                ));
            }
        }
    }
    let manifest: Manifest = match serde_json::from_slice(m) {
        Ok(x) => x,
        Err(e) => {
            diffs.push(format!("{MANIFEST}: unreadable: {e}"));
            return diffs;
        }
    };
    let mut listed = std::collections::BTreeSet::new();
    for e in &manifest.files {
        listed.insert(e.path.as_str());
        match files.get(&e.path) {
            None => diffs.push(format!("missing file: {}", e.path)),
            Some(b) => {
                let got = sha256_hex(b);
                if got != e.sha256 || b.len() as u64 != e.bytes {
                    diffs.push(format!(
                        "changed: {} (manifest sha256 {} / {} bytes, found {} / {} bytes)",
                        e.path,
                        e.sha256,
                        e.bytes,
                        got,
                        b.len()
                    ));
                }
            }
        }
    }
    for p in files.keys() {
        if p != MANIFEST && p != MANIFEST_HASH && !listed.contains(p.as_str()) {
            diffs.push(format!("extra file: {p}"));
        }
    }
    diffs
}

/// Writes the files under `dir` (created; must be empty or absent).
pub fn write_dir(dir: &Path, files: &Files) -> Result<(), GroundingError> {
    if dir.exists() {
        let mut rd = std::fs::read_dir(dir).map_err(|e| GroundingError::io(dir, e))?;
        if rd.next().is_some() {
            return Err(GroundingError::Package {
                path: dir.to_path_buf(),
                message: "output directory is not empty".into(),
            });
        }
    }
    // Written beside the target, then renamed into place: a failure leaves no partial package.
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "package".into());
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| GroundingError::io(parent, e))?;
    let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let written = (|| {
        for (p, b) in files {
            let full = tmp.join(p);
            if let Some(sub) = full.parent() {
                std::fs::create_dir_all(sub).map_err(|e| GroundingError::io(sub, e))?;
            }
            let mut f = std::fs::File::create(&full).map_err(|e| GroundingError::io(&full, e))?;
            std::io::Write::write_all(&mut f, b)
                .and_then(|()| f.sync_all())
                .map_err(|e| GroundingError::io(&full, e))?;
        }
        if dir.exists() {
            std::fs::remove_dir(dir).map_err(|e| GroundingError::io(dir, e))?;
        }
        std::fs::rename(&tmp, dir).map_err(|e| GroundingError::io(dir, e))
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    written
}

/// The `.tar.gz` bytes of a package, deterministic.
pub fn tar_gz(files: &Files) -> Result<Vec<u8>, std::io::Error> {
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    let mut t = tar::Builder::new(gz);
    t.mode(tar::HeaderMode::Deterministic);
    for (p, b) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(b.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        t.append_data(&mut h, p, b.as_slice())?;
    }
    t.into_inner()?.finish()
}

/// Reads a package from a directory (recursively) or a `.tar.gz` file.
pub fn read_package(path: &Path) -> Result<Files, GroundingError> {
    let meta = std::fs::metadata(path).map_err(|e| GroundingError::io(path, e))?;
    let mut files = Files::new();
    if meta.is_dir() {
        let mut stack: Vec<PathBuf> = vec![path.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).map_err(|e| GroundingError::io(&d, e))? {
                let e = e.map_err(|e| GroundingError::io(&d, e))?;
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let rel = p
                        .strip_prefix(path)
                        // Members are named with `/` between path components; a `\\` is
                        // part of a file name on Unix, not a separator.
                        .map(|r| {
                            r.components()
                                .map(|c| c.as_os_str().to_string_lossy())
                                .collect::<Vec<_>>()
                                .join("/")
                        })
                        .unwrap_or_default();
                    let b = std::fs::read(&p).map_err(|e| GroundingError::io(&p, e))?;
                    files.insert(rel, b);
                }
            }
        }
    } else {
        let f = std::fs::File::open(path).map_err(|e| GroundingError::io(path, e))?;
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
        let bad = |e: std::io::Error| GroundingError::Package {
            path: path.to_path_buf(),
            message: format!("not a readable .tar.gz package: {e}"),
        };
        for e in a.entries().map_err(bad)? {
            let mut e = e.map_err(bad)?;
            if !e.header().entry_type().is_file() {
                continue;
            }
            let name = e.path().map_err(bad)?.to_string_lossy().into_owned();
            let mut b = Vec::new();
            e.read_to_end(&mut b).map_err(bad)?;
            files.insert(name, b);
        }
    }
    Ok(files)
}
