//! Redacting a text file as a stream: line by line, each line through [`Scanner`], written as
//! it is read. Lines keep their ends, so line numbers do not move.

use std::io::{BufRead, Write};

use super::Redactor;
use super::scan::Scanner;

/// How a file's lines relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Each line stands alone (JSON Lines, logs, SSE): the JSON nesting starts afresh on each.
    Lines,
    /// One document over many lines (a pretty-printed recording, HAR, export): the nesting
    /// carries over, so a HAR header's `value` knows the `name` on the line before.
    Document,
}

/// Longest private key block gathered across lines of plain text.
const MAX_BLOCK: usize = 1 << 20;

/// Reads `input` to its end, writing it redacted to `output`; `label` names the file in the
/// places of the replacements.
pub fn redact_stream(
    r: &mut Redactor,
    label: &str,
    layout: Layout,
    mut input: impl BufRead,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    let mut scanner = Scanner::new();
    let mut line = Vec::new();
    let mut number: u64 = 0;
    // A private key written over several lines of plain text, gathered to be redacted whole.
    let mut block: Vec<u8> = Vec::new();
    let mut block_start = 0;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        if block.is_empty() && opens_key_block(&line) {
            block_start = number;
        }
        if !block.is_empty() || opens_key_block(&line) {
            block.extend_from_slice(&line);
            if !closes_key_block(&block) && block.len() < MAX_BLOCK {
                continue;
            }
            r.set_place(label, block_start.to_string());
            if layout == Layout::Lines {
                scanner.reset();
            }
            let text = std::mem::take(&mut block);
            write_redacted(r, &mut scanner, &text, output)?;
            continue;
        }
        r.set_place(label, number.to_string());
        if layout == Layout::Lines {
            scanner.reset();
        }
        write_redacted(r, &mut scanner, &line, output)?;
    }
    if !block.is_empty() {
        r.set_place(label, block_start.to_string());
        write_redacted(r, &mut scanner, &block, output)?;
    }
    output.flush()
}

fn write_redacted(
    r: &mut Redactor,
    scanner: &mut Scanner,
    text: &[u8],
    output: &mut dyn Write,
) -> std::io::Result<()> {
    match scanner.redact(r, text) {
        Some(new) => output.write_all(&new),
        None => output.write_all(text),
    }
}

/// A line of plain text opening a private key block it does not close.
fn opens_key_block(line: &[u8]) -> bool {
    memchr::memmem::find(line, b"-----BEGIN").is_some()
        && memchr::memmem::find(line, b"PRIVATE KEY").is_some()
        && !closes_key_block(line)
}

fn closes_key_block(text: &[u8]) -> bool {
    memchr::memmem::find(text, b"-----END").is_some()
}

#[cfg(test)]
mod tests {
    use super::super::Options;
    use super::*;

    fn run(layout: Layout, text: &str) -> String {
        let mut r = Redactor::new(&Options::default()).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        redact_stream(&mut r, "f", layout, text.as_bytes(), &mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn a_document_keeps_its_nesting_across_lines() {
        let text = "{\n  \"headers\": [\n    {\n      \"name\": \"authorization\",\n      \"value\": \"abc\"\n    }\n  ]\n}\n";
        assert!(run(Layout::Document, text).contains("\"[REDACTED:authorization:1]\""));
        assert!(run(Layout::Lines, text).contains("\"abc\""));
    }

    #[test]
    fn a_private_key_over_lines_is_redacted_and_lines_stay() {
        let text = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\nBBBB\n-----END OPENSSH PRIVATE KEY-----\nafter\n";
        assert_eq!(
            run(Layout::Lines, text),
            "before\n[REDACTED:private-key:1]\n\n\n\nafter\n"
        );
    }
}
