//! Output written before it can be placed: a document whose findings come after what only the
//! end of the run knows (the JSON document's `files`, SARIF's invocations, JUnit's counts) writes
//! each finding as it comes into a spool, and copies the spool into place at the end. The spool is
//! memory up to [`IN_MEMORY`] bytes and an unnamed temporary file past that (removed by the system
//! when it is closed, even on a crash), so that memory stays bounded however many findings a run
//! has; nothing is ever written next to the inputs.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

/// Bytes a spool keeps in memory before it moves to a temporary file.
pub const IN_MEMORY: usize = 8 * 1024 * 1024;

/// Bytes kept to be copied out once.
#[derive(Default)]
pub struct Spool {
    memory: Vec<u8>,
    file: Option<BufWriter<File>>,
    limit: Option<usize>,
    len: u64,
}

impl Spool {
    pub fn new() -> Self {
        Self::default()
    }

    /// A spool that moves to a file past `limit` bytes.
    #[cfg(test)]
    fn with_limit(limit: usize) -> Self {
        Self {
            limit: Some(limit),
            ..Self::default()
        }
    }

    /// How many bytes were written.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes everything written so far into `out`, and empties the spool.
    pub fn copy_to<W: Write + ?Sized>(&mut self, out: &mut W) -> io::Result<()> {
        if let Some(file) = self.file.take() {
            let mut file = file.into_inner().map_err(|e| e.into_error())?;
            file.seek(SeekFrom::Start(0))?;
            io::copy(&mut io::BufReader::new(file), out)?;
        }
        out.write_all(&self.memory)?;
        self.memory = Vec::new();
        self.len = 0;
        Ok(())
    }
}

impl Spool {
    /// Writes bytes `start..start + len` of what was written into `out` (the spool is kept).
    pub fn copy_range<W: Write + ?Sized>(
        &mut self,
        start: u64,
        len: u64,
        out: &mut W,
    ) -> io::Result<()> {
        use std::io::Read;
        match &mut self.file {
            Some(file) => {
                file.flush()?;
                let file = file.get_mut();
                file.seek(SeekFrom::Start(start))?;
                let copied = io::copy(&mut (&mut *file).take(len), out)?;
                file.seek(SeekFrom::End(0))?;
                if copied != len {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the spool is shorter than what was written to it",
                    ));
                }
                Ok(())
            }
            None => {
                let range = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(start + len).ok())
                    .and_then(|(a, b)| self.memory.get(a..b))
                    .ok_or_else(|| io::Error::other("a range past the spool's end"))?;
                out.write_all(range)
            }
        }
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.len += buf.len() as u64;
        if let Some(file) = &mut self.file {
            file.write_all(buf)?;
            return Ok(buf.len());
        }
        if self.memory.len() + buf.len() > self.limit.unwrap_or(IN_MEMORY) {
            let mut file = BufWriter::new(tempfile::tempfile()?);
            file.write_all(&self.memory)?;
            file.write_all(buf)?;
            self.memory = Vec::new();
            self.file = Some(file);
        } else {
            self.memory.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_comes_back_in_order_from_memory_or_file() {
        for limit in [1 << 20, 10] {
            let mut spool = Spool::with_limit(limit);
            for i in 0..100 {
                write!(spool, "{i},").unwrap();
            }
            assert_eq!(spool.file.is_some(), limit == 10);
            let want: String = (0..100).map(|i| format!("{i},")).collect();
            assert_eq!(spool.len(), want.len() as u64);
            let mut out = Vec::new();
            spool.copy_to(&mut out).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want);
            assert!(spool.is_empty());
        }
    }

    #[test]
    fn ranges_are_copied_from_memory_or_file() {
        for limit in [1 << 20, 10] {
            let mut spool = Spool::with_limit(limit);
            spool.write_all(b"hello, ").unwrap();
            spool.write_all(b"world").unwrap();
            let mut out = Vec::new();
            spool.copy_range(3, 6, &mut out).unwrap();
            spool.write_all(b"!").unwrap();
            spool.copy_range(12, 1, &mut out).unwrap();
            assert_eq!(out, b"lo, wo!");
            assert!(spool.copy_range(10, 10, &mut out).is_err());
        }
    }
}
