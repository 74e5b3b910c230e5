//! The event list of a capture must not depend on how its bytes were chunked. Every capture of the
//! corpus (and every sample) is framed whole, one byte at a time (every offset a boundary at
//! once), split in two at every byte offset (captures up to 8 KiB; larger ones at every offset of
//! their first and last 2 KiB and around every line end), and split at random points; the whole
//! event list must be the same each time. Recordings are walked through readers that return 1 to
//! 7 bytes at a time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use rewind::streams::FileId;
use rewind::streams::recording;
use rewind::streams::{Envelope, Framing, Payload};
use rewind::streams::{Format, sniff};

type Event = (
    u64,
    Option<String>,
    String,
    u64,
    u64,
    u64,
    Vec<(usize, u64)>,
    bool,
);

fn own(p: &Payload<'_>) -> Event {
    (
        p.index,
        p.event_type.map(str::to_owned),
        p.data.to_owned(),
        p.start,
        p.end,
        p.line,
        p.segments.to_vec(),
        p.unterminated,
    )
}

fn frame(env: Envelope, chunks: &[&[u8]]) -> Vec<Event> {
    let mut f = Framing::new(env);
    let mut out = Vec::new();
    for c in chunks {
        f.feed(c, &mut |p| {
            out.push(own(p));
            Ok(())
        })
        .unwrap();
    }
    f.finish(&mut |p| {
        out.push(own(p));
        Ok(())
    })
    .unwrap();
    // `event:` lines without data dispatch nothing; where they are must not depend on chunking.
    let sse = f.stats().sse;
    for n in [sse.first_named_without_data, sse.last_named_without_data]
        .into_iter()
        .flatten()
    {
        out.push((
            u64::MAX,
            Some(n.event_type),
            String::new(),
            n.start,
            n.end,
            0,
            Vec::new(),
            n.unterminated,
        ));
    }
    out
}

/// A small deterministic generator (xorshift) for the random split points.
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

fn check_capture(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let env = match sniff(path, &bytes[..bytes.len().min(16 * 1024)]).unwrap() {
        Format::Sse => Envelope::Sse,
        Format::JsonLines => Envelope::JsonLines,
        other => panic!("{}: {other:?}", path.display()),
    };
    let whole = frame(env, &[&bytes]);
    assert!(!whole.is_empty(), "{}", path.display());
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(
        frame(env, &singles),
        whole,
        "{}: one byte at a time",
        path.display()
    );
    let mut offsets: Vec<usize> = if bytes.len() <= 8 * 1024 {
        (0..=bytes.len()).collect()
    } else {
        let mut v: Vec<usize> = (0..2048).chain(bytes.len() - 2048..=bytes.len()).collect();
        for (i, b) in bytes.iter().enumerate() {
            if *b == b'\n' || *b == b'\r' {
                v.extend(i.saturating_sub(2)..(i + 3).min(bytes.len()));
            }
        }
        v
    };
    offsets.sort_unstable();
    offsets.dedup();
    for k in offsets {
        assert_eq!(
            frame(env, &[&bytes[..k], &bytes[k..]]),
            whole,
            "{}: split at {k}",
            path.display()
        );
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64);
    for round in 0..200 {
        let mut cuts: Vec<usize> = (0..1 + rng.next(12))
            .map(|_| rng.next(bytes.len() + 1))
            .collect();
        cuts.sort_unstable();
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut at = 0;
        for c in cuts {
            chunks.push(&bytes[at..c]);
            at = c;
        }
        chunks.push(&bytes[at..]);
        assert_eq!(
            frame(env, &chunks),
            whole,
            "{}: random split {round}",
            path.display()
        );
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn samples_frame_the_same_however_chunked() {
    for name in ["sse-concatenated-chunk.sse", "tanstack-tool-error.sse"] {
        check_capture(&common::repo("samples").join(name));
    }
    let mut fixtures = Vec::new();
    files(&common::repo("tests/fixtures/stream"), &mut fixtures);
    // Text captures only (a binary event-stream capture is read whole, not pushed in chunks),
    // and not the one rewind refuses as no stream it knows.
    fixtures.retain(|f| {
        f.extension()
            .is_some_and(|e| e == "sse" || e == "jsonl" || e == "txt")
            && !f.ends_with("providers/cohere-v1-unknown.jsonl")
    });
    for f in fixtures {
        check_capture(&f);
    }
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn corpus_captures_frame_the_same_however_chunked() {
    let mut all = Vec::new();
    files(&common::corpus().join("sse"), &mut all);
    all.sort();
    let captures: Vec<&PathBuf> = all
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sse" || e == "txt"))
        .collect();
    assert!(captures.len() >= 17, "{} captures", captures.len());
    for p in captures {
        check_capture(p);
    }
}

/// A reader returning at most `n` bytes per read.
struct Trickle<'a>(&'a [u8], usize);
impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.1.min(buf.len()).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn exchanges(bytes: &[u8], format: Format, step: usize) -> Vec<String> {
    let reader = std::io::BufReader::with_capacity(step, Trickle(bytes, step));
    let mut out = Vec::new();
    recording::read(reader, FileId(0), format, &mut |ex| {
        for body in [&ex.request_body, &ex.response_body].into_iter().flatten() {
            let (text, loc) = body.decode(FileId(0)).unwrap();
            let span = loc.span(0, text.len() as u64);
            out.push(format!("{}:{}:{}:{text}", ex.index, span.offset, span.len));
        }
        Ok(())
    })
    .unwrap();
    out
}

#[test]
fn recordings_walk_the_same_however_chunked() {
    let mut docs = vec![(
        common::repo("samples/har-streaming-response.har"),
        Format::Har,
    )];
    let mut all = Vec::new();
    files(&common::corpus().join("sse/recordings"), &mut all);
    docs.extend(all.into_iter().map(|p| (p, Format::HttpRecording)));
    for (path, format) in docs {
        let bytes = std::fs::read(&path).unwrap();
        let whole = exchanges(&bytes, format, 64 * 1024);
        assert!(!whole.is_empty(), "{}", path.display());
        for step in 1..8 {
            assert_eq!(
                exchanges(&bytes, format, step),
                whole,
                "{}: {step}-byte reads",
                path.display()
            );
        }
    }
}
