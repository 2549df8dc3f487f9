//! Writing results: to stdout, or to a file through a temporary file and a rename so that a
//! failure never leaves a partial file behind.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically (temp file in the same folder, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    veredicto_app::files::write_atomic(path, bytes)
}

/// Prints to stdout through the printer ([`crate::printer::stdout`]); a closed pipe
/// (`| head`) is not an error.
pub fn print_stdout(text: &str) -> std::io::Result<()> {
    crate::printer::stdout(text)
}

/// A writer for human-readable output that shows control characters from the data (ESC,
/// BEL, CR…) as `\u{…}` escapes instead of passing them to the terminal; newlines and tabs
/// are kept. Text comes from `write!`, one whole UTF-8 piece per call. With `raw` (JSON
/// output, already escaped by the serialiser) bytes pass unchanged.
pub struct TerminalSafe<W: Write> {
    pub inner: W,
    pub raw: bool,
}

impl<W: Write> Write for TerminalSafe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.raw {
            return self.inner.write(buf);
        }
        match std::str::from_utf8(buf) {
            Ok(text) => {
                self.inner
                    .write_all(veredicto_core::redact::escape_lines(text).as_bytes())?;
                Ok(buf.len())
            }
            Err(_) => self.inner.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Standard output for human-readable text ([`TerminalSafe`]); `json` passes bytes as they are.
pub fn human_stdout(json: bool) -> TerminalSafe<std::io::StdoutLock<'static>> {
    TerminalSafe {
        inner: std::io::stdout().lock(),
        raw: json,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_writer_escapes_control_characters_only() {
        let mut w = TerminalSafe {
            inner: Vec::new(),
            raw: false,
        };
        let id = String::from("q\u{1b}[2J\u{7}");
        writeln!(w, "case {id}: año\tok").unwrap();
        assert_eq!(
            String::from_utf8(w.inner).unwrap(),
            "case q\\u{1b}[2J\\u{7}: año\tok\n"
        );
    }
}
