//! A [`Write`] adapter that redacts what passes through it, line by line: put in front of a
//! report's output, no format can quote a secret, whichever printer wrote it.

use std::io::Write;

use super::Redactor;
use super::scan::Scanner;

/// Redacts each line written through it with [`Scanner`] before passing it on.
pub struct Redacting<W: Write> {
    inner: W,
    redactor: Redactor,
    scanner: Scanner,
    line: Vec<u8>,
}

impl<W: Write> Redacting<W> {
    pub fn new(inner: W, redactor: Redactor) -> Self {
        Redacting {
            inner,
            redactor,
            scanner: Scanner::new(),
            line: Vec::new(),
        }
    }

    fn emit_line(&mut self) -> std::io::Result<()> {
        // Each line is read on its own: a report's lines are not one JSON document to follow.
        self.scanner.reset();
        let line = std::mem::take(&mut self.line);
        match self.scanner.redact(&mut self.redactor, &line) {
            Some(new) => self.inner.write_all(&new),
            None => self.inner.write_all(&line),
        }
    }
}

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(k) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..=k]);
            self.emit_line()?;
            rest = &rest[k + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.line.is_empty() {
            self.emit_line()?;
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for Redacting<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::super::Options;
    use super::*;

    #[test]
    fn lines_are_redacted_however_they_are_written() {
        let r = Redactor::new(&Options::default()).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        {
            let mut w = Redacting::new(&mut out, r);
            for piece in ["mail: bo", "b@corp.", "io\nnext ", "line bob@corp.io"] {
                w.write_all(piece.as_bytes())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
        assert_eq!(
            String::from_utf8_lossy(&out),
            "mail: [REDACTED:email:1]\nnext line [REDACTED:email:1]"
        );
    }
}
