//! Several files in one input, for the parsers that read a folder (a BEIR folder, an index,
//! an audit package folder).
//!
//! Format: every file starts with a line `@@@ NAME` preceded by a newline; its content runs
//! to the next such line. Decoding never fails: text before the first header is ignored, and
//! a name that is not a plain relative path (letters, digits, `.`, `_`, `-`, at most three
//! `/`-separated parts, no `.` or `..` part) drops that file, so a mutated bundle can never
//! write outside the folder it is unpacked into.

use std::path::Path;

const MARK: &[u8] = b"\n@@@ ";

/// Joins files into one input.
pub fn encode(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, content) in files {
        out.extend_from_slice(MARK);
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(content);
    }
    out
}

/// Splits an input into files (later duplicates of a name replace earlier ones).
pub fn decode(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut starts = Vec::new();
    let mut i = 0;
    while let Some(p) = find(&bytes[i..], MARK) {
        starts.push(i + p);
        i += p + MARK.len();
    }
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let body = &bytes[s + MARK.len()..starts.get(k + 1).copied().unwrap_or(bytes.len())];
        let (name, content) = match body.iter().position(|&b| b == b'\n') {
            Some(n) => (&body[..n], &body[n + 1..]),
            None => (body, &[][..]),
        };
        let Some(name) = std::str::from_utf8(name).ok().filter(|n| safe_name(n)) else {
            continue;
        };
        files.retain(|(n, _)| n != name);
        files.push((name.to_owned(), content.to_vec()));
    }
    files
}

/// Writes decoded files under `dir` (which must exist). A file whose path collides with a
/// folder (or the reverse) is skipped.
pub fn unpack(files: &[(String, Vec<u8>)], dir: &Path) -> std::io::Result<()> {
    for (name, content) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            if std::fs::create_dir_all(parent).is_err() {
                continue;
            }
        }
        if path.is_dir() {
            continue;
        }
        std::fs::write(&path, content)?;
    }
    Ok(())
}

fn safe_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    !name.is_empty()
        && name.len() <= 100
        && parts.len() <= 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && *p != "."
                && *p != ".."
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_unsafe_names_dropped() {
        let files = vec![
            ("a.json".to_string(), b"{}\n".to_vec()),
            ("qrels/test.tsv".to_string(), b"1\t2\t3".to_vec()),
        ];
        assert_eq!(decode(&encode(&files)), files);
        let evil = encode(&[
            ("../x".to_string(), b"no".to_vec()),
            ("/etc/y".to_string(), b"no".to_vec()),
            ("ok".to_string(), b"yes".to_vec()),
        ]);
        assert_eq!(decode(&evil), vec![("ok".to_string(), b"yes".to_vec())]);
    }
}
