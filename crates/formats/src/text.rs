//! Small helpers shared by the line-oriented readers.

use crate::error::{FormatError, Result};
use std::path::Path;

/// Reads a whole file as UTF-8, dropping a leading byte-order mark.
pub fn read_to_string(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let bytes = strip_bom(&bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_owned()),
        Err(e) => {
            let line = 1 + bytes[..e.valid_up_to()]
                .iter()
                .filter(|b| **b == b'\n')
                .count();
            Err(FormatError::invalid(
                path,
                line,
                "-",
                "file is not valid UTF-8",
            ))
        }
    }
}

/// Drops a UTF-8 byte-order mark, if present.
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// Iterates over `(1-based line number, line)` with any trailing `\r` removed.
pub fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
}
