//! Audit packages: a deterministic set of files plus `manifest.json` (SHA-256 of every file,
//! tool version, what is missing and, for a recorded run, the run ID and the case file's
//! SHA-256) and `manifest.sha256` (SHA-256 of the manifest itself, so that no byte of any file
//! can change unnoticed). Written as a directory or a `.tar.gz` (sorted entries, mtime 0, mode
//! 0644, uid/gid 0, gzip header without time or name). Reading is in `package_read`.

use crate::error::GroundingError;
use crate::load::hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use veredicto_core::redact::short;

pub const MANIFEST: &str = "manifest.json";
pub const MANIFEST_HASH: &str = "manifest.sha256";
/// The `format` of manifests this version writes and verifies.
pub const PACKAGE_FORMAT: &str = "veredicto-audit-package/1";

/// A package in memory: relative path -> bytes (sorted by path).
pub type Files = BTreeMap<String, Vec<u8>>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: String,
    pub tool: String,
    pub tool_version: String,
    /// The recorded audit run the package was made from (absent for a bare case file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<ManifestRun>,
    pub files: Vec<ManifestEntry>,
    /// Parts an audit package should hold that were not available, with why.
    pub missing: Vec<MissingPart>,
}

/// Ties a package to its recorded run: the run ID and the SHA-256 of its case file, which is
/// packaged as `cases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestRun {
    pub id: String,
    /// The case file's path inside the package (`cases/<name>`).
    pub cases: String,
    pub cases_sha256: String,
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

/// Size and SHA-256 of one package member (what verification compares).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub bytes: u64,
    pub sha256: String,
}

/// Members by path.
pub type Members = BTreeMap<String, Member>;

pub fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// The members of an in-memory package.
pub fn members_of(files: &Files) -> Members {
    files
        .iter()
        .map(|(p, b)| {
            (
                p.clone(),
                Member {
                    bytes: b.len() as u64,
                    sha256: sha256_hex(b),
                },
            )
        })
        .collect()
}

/// Why `p` may not be a member path, if it may not: members are relative `/`-separated paths
/// of normal components (no empty, `.` or `..` component on either side of a `/` or `\`, no leading `/`, no
/// control character), at most 1024 bytes. Every path written or read is checked, so that
/// nothing is written outside the target and nothing is read ambiguously.
pub fn unsafe_member_path(p: &str) -> Option<String> {
    let why = if p.is_empty() {
        "empty path"
    } else if p.len() > 1024 {
        "longer than 1024 bytes"
    } else if p.starts_with('/') {
        "absolute path"
    } else if p.chars().any(char::is_control) {
        "contains a control character"
    } else if p
        .split(['/', '\\'])
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        // A backslash is part of a file name here, but a separator where the package may be
        // unpacked (Windows): no `..` may hide behind one either.
        "has an empty, `.` or `..` component (with `/` or `\\` as separator)"
    } else {
        return None;
    };
    Some(why.to_string())
}

/// Adds `manifest.json` and `manifest.sha256` to `files` (which must not contain them).
pub fn seal(files: Files, tool_version: &str, missing: Vec<MissingPart>) -> Files {
    seal_run(files, tool_version, missing, None)
}

/// [`seal`], recording the audit run the package was made from in the manifest.
pub fn seal_run(
    mut files: Files,
    tool_version: &str,
    missing: Vec<MissingPart>,
    run: Option<ManifestRun>,
) -> Files {
    files.remove(MANIFEST);
    files.remove(MANIFEST_HASH);
    let manifest = Manifest {
        format: PACKAGE_FORMAT.into(),
        tool: "veredicto".into(),
        tool_version: tool_version.into(),
        run,
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

/// Every difference between a package in memory and its manifest (empty = verified).
pub fn verify_files(files: &Files) -> Vec<String> {
    compare_with_manifest(
        &members_of(files),
        files.get(MANIFEST).map(Vec::as_slice),
        files.get(MANIFEST_HASH).map(Vec::as_slice),
    )
    .0
}

/// Compares members with the manifest: the manifest's own hash, its format, every listed file
/// (size and SHA-256), extra files, and the run binding (the case file's SHA-256).
pub(crate) fn compare_with_manifest(
    members: &Members,
    manifest: Option<&[u8]>,
    manifest_hash: Option<&[u8]>,
) -> (Vec<String>, Option<Manifest>) {
    let mut diffs = Vec::new();
    let Some(m) = manifest else {
        diffs.push(format!("missing {MANIFEST}"));
        return (diffs, None);
    };
    match manifest_hash {
        None => diffs.push(format!("missing {MANIFEST_HASH}")),
        Some(h) => {
            let want = format!("{}  {MANIFEST}\n", sha256_hex(m));
            if h != want.as_bytes() {
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
            return (diffs, None);
        }
    };
    if manifest.format != PACKAGE_FORMAT {
        diffs.push(format!(
            "{MANIFEST}: unknown format `{}` (this version verifies {PACKAGE_FORMAT})",
            short(&manifest.format)
        ));
    }
    let mut listed = BTreeSet::new();
    for e in &manifest.files {
        if let Some(why) = unsafe_member_path(&e.path) {
            diffs.push(format!(
                "{MANIFEST}: unsafe path `{}`: {why}",
                short(&e.path)
            ));
            continue;
        }
        if e.path == MANIFEST || e.path == MANIFEST_HASH {
            diffs.push(format!("{MANIFEST}: lists {} as a file", e.path));
            continue;
        }
        if !listed.insert(e.path.as_str()) {
            diffs.push(format!("{MANIFEST}: lists {} twice", e.path));
            continue;
        }
        match members.get(&e.path) {
            None => diffs.push(format!("missing file: {}", e.path)),
            Some(got) => {
                if got.sha256 != e.sha256 || got.bytes != e.bytes {
                    diffs.push(format!(
                        "changed: {} (manifest sha256 {} / {} bytes, found {} / {} bytes)",
                        e.path,
                        short(&e.sha256),
                        e.bytes,
                        got.sha256,
                        got.bytes
                    ));
                }
            }
        }
    }
    for p in members.keys() {
        if p != MANIFEST && p != MANIFEST_HASH && !listed.contains(p.as_str()) {
            diffs.push(format!("extra file: {p}"));
        }
    }
    if let Some(run) = &manifest.run {
        match members.get(&run.cases) {
            Some(c) if c.sha256 == run.cases_sha256 && listed.contains(run.cases.as_str()) => {}
            Some(c) => diffs.push(format!(
                "{MANIFEST}: run {}: case file {} has SHA-256 {}, the run's is {}",
                short(&run.id),
                run.cases,
                c.sha256,
                short(&run.cases_sha256)
            )),
            None => diffs.push(format!(
                "{MANIFEST}: run {}: its case file {} is not in the package",
                short(&run.id),
                short(&run.cases)
            )),
        }
    }
    (diffs, Some(manifest))
}

/// The outcome of verifying a package, with what was and was not checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    /// Every member read (path, size, SHA-256), manifest files included.
    pub members: Members,
    /// Every difference and structural problem (empty = verified).
    pub differences: Vec<String>,
    pub checked: Vec<String>,
    pub not_checked: Vec<String>,
    /// The run the manifest names, if any.
    pub run: Option<ManifestRun>,
}

impl Verification {
    pub fn verified(&self) -> bool {
        self.differences.is_empty()
    }
}

/// What the recorded run holds, as the history gives it: for [`check_recorded_run`].
#[derive(Debug, Clone, Copy)]
pub struct RecordedRun<'a> {
    pub id: &'a str,
    pub cases_sha256: &'a str,
    /// The run's review records, one JSON text each, in appended order.
    pub reviews: &'a [String],
    pub suggestions: &'a [String],
}

/// Where the history was looked up, for the messages.
const NOT_CHECKED_HISTORY: &str =
    "that the run exists and holds this case file and these records: give --history";

/// Checks a verified-or-not package against the run it names, as recorded in a history
/// (`history` names it in messages): the case file's SHA-256, and `reviews.jsonl` /
/// `suggestions.jsonl` must be the run's records (or their first k: records appended after
/// packaging are allowed). `run` = `None`: the history has no run of that ID.
pub fn check_recorded_run(v: &mut Verification, run: Option<RecordedRun<'_>>, history: &str) {
    v.not_checked.retain(|n| !n.contains(NOT_CHECKED_HISTORY));
    let Some(mrun) = v.run.clone() else {
        v.not_checked.push(format!(
            "the history {history}: the package names no recorded run (made from a case file)"
        ));
        return;
    };
    let Some(run) = run else {
        v.differences.push(format!(
            "run {}: not in the history {history}",
            short(&mrun.id)
        ));
        return;
    };
    let mut ok = Vec::new();
    // Histories may write the digest as `sha256:<hex>`.
    let recorded = run
        .cases_sha256
        .strip_prefix("sha256:")
        .unwrap_or(run.cases_sha256);
    if recorded != mrun.cases_sha256 {
        v.differences.push(format!(
            "run {}: the history's case file has SHA-256 {}, the package's {}",
            run.id,
            short(recorded),
            short(&mrun.cases_sha256)
        ));
    } else {
        ok.push(format!("case file SHA-256 {recorded}"));
    }
    for (file, lines, what) in [
        ("reviews.jsonl", run.reviews, "review"),
        ("suggestions.jsonl", run.suggestions, "suggestion"),
    ] {
        match prefix_of_records(v.members.get(file), lines) {
            Some(k) => ok.push(format!(
                "{file} = the run's first {k} of {} {what} record(s)",
                lines.len()
            )),
            None => v.differences.push(format!(
                "run {}: {file} is not the run's {what} records as recorded in the history",
                run.id
            )),
        }
    }
    v.checked.push(format!(
        "audit run {} in {history}: {}",
        run.id,
        ok.join("; ")
    ));
}

/// k when the member is the first k lines (each + `\n`) of `lines` (absent = 0 lines).
fn prefix_of_records(member: Option<&Member>, lines: &[String]) -> Option<usize> {
    let Some(m) = member else { return Some(0) };
    let mut h = Sha256::new();
    let mut len = 0u64;
    if m.bytes == 0 && m.sha256 == sha256_hex(b"") {
        return Some(0);
    }
    for (k, l) in lines.iter().enumerate() {
        h.update(l.as_bytes());
        h.update(b"\n");
        len += l.len() as u64 + 1;
        if len == m.bytes && hex(&h.clone().finalize()) == m.sha256 {
            return Some(k + 1);
        }
        if len > m.bytes {
            break;
        }
    }
    None
}

/// Builds a [`Verification`] from members read and structural problems found on reading.
pub(crate) fn verification(
    members: Members,
    manifest: Option<&[u8]>,
    manifest_hash: Option<&[u8]>,
    problems: Vec<String>,
    structure: &str,
) -> Verification {
    let (diffs, manifest) = compare_with_manifest(&members, manifest, manifest_hash);
    let mut differences = problems;
    differences.extend(diffs);
    let files = members.len();
    let mut checked = vec![
        structure.to_string(),
        format!("{MANIFEST_HASH} against the SHA-256 of {MANIFEST}"),
        format!("{files} files against the manifest: size and SHA-256 of each, missing, extra"),
    ];
    let mut not_checked = vec![format!(
        "who made the package: {MANIFEST_HASH} is a checksum, not a signature; whoever changes \
         files can re-hash the manifest, which only a check against the history can catch"
    )];
    let run = manifest.as_ref().and_then(|m| m.run.clone());
    match &run {
        Some(r) => {
            checked.push(format!(
                "the manifest names audit run {} and its case file {} (SHA-256 {})",
                short(&r.id),
                short(&r.cases),
                short(&r.cases_sha256)
            ));
            not_checked.push(NOT_CHECKED_HISTORY.to_string());
        }
        None => not_checked.push(
            "a recorded run: the package names none (made from a case file), so nothing ties \
             it to a history"
                .into(),
        ),
    }
    not_checked.push(
        "that derived files (sheet, metrics, answers, citations, retrieval, comparison, notes) \
         follow from the case file and the records: they are checked against the manifest only"
            .into(),
    );
    Verification {
        members,
        differences,
        checked,
        not_checked,
        run,
    }
}

fn mkdir_inside(p: &Path) -> Result<(), GroundingError> {
    match std::fs::create_dir(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Only a real folder we made; never a link.
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.is_dir() => Ok(()),
                _ => Err(GroundingError::Package {
                    path: p.to_path_buf(),
                    message: "exists and is not a folder".into(),
                }),
            }
        }
        Err(e) => Err(GroundingError::io(p, e)),
    }
}

/// Writes the files under `dir` (created; must be empty or absent, and not a link). Every
/// member path is checked first ([`unsafe_member_path`]): nothing is written outside `dir`.
pub fn write_dir(dir: &Path, files: &Files) -> Result<(), GroundingError> {
    for p in files.keys() {
        if let Some(why) = unsafe_member_path(p) {
            return Err(GroundingError::Package {
                path: dir.to_path_buf(),
                message: format!("refusing to write member `{}`: {why}", short(p)),
            });
        }
    }
    if let Ok(m) = std::fs::symlink_metadata(dir) {
        if m.file_type().is_symlink() {
            return Err(GroundingError::Package {
                path: dir.to_path_buf(),
                message: "output directory is a symbolic link".into(),
            });
        }
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
    std::fs::create_dir(&tmp).map_err(|e| GroundingError::io(&tmp, e))?;
    let written = (|| {
        for (p, b) in files {
            let mut full = tmp.clone();
            let parts: Vec<&str> = p.split('/').collect();
            for sub in &parts[..parts.len() - 1] {
                full.push(sub);
                mkdir_inside(&full)?;
            }
            full.push(parts[parts.len() - 1]);
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&full)
                .map_err(|e| GroundingError::io(&full, e))?;
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

/// The `.tar.gz` bytes of a package, deterministic. Member paths are checked first.
pub fn tar_gz(files: &Files) -> Result<Vec<u8>, std::io::Error> {
    for p in files.keys() {
        if let Some(why) = unsafe_member_path(p) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("refusing to write member `{}`: {why}", short(p)),
            ));
        }
    }
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
