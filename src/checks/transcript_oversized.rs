use super::Check;
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::session::Analysis;

/// A file this big is read slowly on resume: information (a 12 MB session froze `/resume`,
/// anthropics/claude-code#24457).
const FILE_INFO: u64 = 16 << 20;
/// Half of V8's longest string (2^29 − 24 UTF-16 units): a client that reads the file as one
/// string fails on it ("RangeError: Invalid string length", a 780 MB transcript).
const FILE_WARN: u64 = 256 << 20;
/// Claude Code's code that reads a raw transcript gives up above 50 MiB
/// (`MAX_TRANSCRIPT_READ_BYTES` in its session storage, as analyses of its source report; it
/// guards against running out of memory on multi-GB sessions).
const CLAUDE_READ_MAX: u64 = 50 << 20;
/// A line this long is unusual (Claude Code caps tool output well below it): information.
const LINE_INFO: u64 = 2 << 20;
/// A 12.8-million-character line froze resume (anthropics/claude-code#24118).
const LINE_WARN: u64 = 10 << 20;
/// Anthropic's request size limit for the Messages API (32 MB): inline images on the history
/// Claude Code sends add up to the request.
const REQUEST_MAX: u64 = 32_000_000;
/// Inline images in a rollout worth a word (rollouts grew to tens of GB from inline images,
/// openai/codex#40111).
const ROLLOUT_IMAGES_INFO: u64 = 16 << 20;

declare_check! {
    /// ## What it does
    /// Measures a Claude Code transcript or Codex rollout: its size, its longest line, and its
    /// inline base64 images. Information from 16 MiB per file or 2 MiB per line (or 16 MiB of
    /// images in a rollout); a warning from 256 MiB per file (a Claude Code transcript: over
    /// 50 MiB, the most its raw-transcript readers take) or 10 MiB per line, for an image
    /// on Claude Code's active history whose base64 data is over 5 MiB (the limit Anthropic
    /// enforces per image), and for images on that history adding up to more than Anthropic's
    /// 32 MB request limit. No other limit is documented for the transcripts themselves: the
    /// other thresholds are conservative, from the sizes users reported trouble with.
    ///
    /// ## Why it matters
    /// The clients read the whole transcript on resume: large ones freeze or run out of memory
    /// (a 12.8-million-character line, anthropics/claude-code#24118; a 12 MB session, #24457; a
    /// 780 MB transcript and "RangeError: Invalid string length"), and a Codex rollout grew to
    /// 98 GB from inline images (openai/codex#40111). An image over the API's limit is sent
    /// again with every request and rejected every time.
    ///
    /// ## Example
    /// ```text
    /// {"type":"user","message":{"content":[{"type":"tool_result","content":[
    ///   {"type":"image","source":{"type":"base64","data":"iVBORw0KGgo…(7 MB)…"}}]}]},…}
    /// ```
    ///
    /// ## How to fix
    /// Start a new session (or compact) instead of resuming a huge one; keep screenshots and
    /// large outputs in files the agent reads in parts. Back the transcript up before cutting
    /// an oversized image or output out of it.
    pub struct TranscriptOversized {
        name: "transcript-oversized",
        severity: Warning,
        summary: "A transcript, one of its lines or its inline images are large enough to slow or break a resume",
    }
}

fn mib(n: u64) -> String {
    format!("{:.1} MiB", n as f64 / f64::from(1u32 << 20))
}

impl Check for TranscriptOversized {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(facts) = analysis.transcript.as_deref() else {
            return;
        };
        let size = &facts.size;
        let ids = Ids {
            session_id: analysis.sessions.first().map(|s| s.id.clone()),
            ..Ids::default()
        };
        let claude = analysis.format.is_claude_code();
        let mut push = |f: Finding| out.push(f.ids(ids.clone()));
        if size.bytes >= FILE_INFO
            && let Some((_, line)) = size.largest_line
        {
            let warn = size.bytes >= FILE_WARN || (claude && size.bytes > CLAUDE_READ_MAX);
            push(
                Self::META
                    .finding(format!(
                        "the transcript is {} long ({} lines); {} reads all of it on resume",
                        mib(size.bytes),
                        analysis.counts.get("lines").copied().unwrap_or_default(),
                        facts.client
                    ))
                    .severity(if warn { Severity::Warning } else { Severity::Info })
                    .at(line.head(), "its longest line starts here")
                    .note(if claude && size.bytes > CLAUDE_READ_MAX {
                        "Claude Code's readers of a raw transcript give up above 50 MiB (`MAX_TRANSCRIPT_READ_BYTES`); on resume it reads past a compaction in parts, but a session never compacted is read whole"
                    } else {
                        "the client reads the whole file on resume; users reported freezes from 12 MB sessions and failures from a 780 MB one"
                    })
                    .help("start a new session (or compact) rather than resuming a transcript this size"),
            );
        }
        if let Some((n, line)) = size.largest_line
            && n >= LINE_INFO
            && !size.big_images.iter().any(|(_, s)| s.offset >= line.offset && s.offset < line.offset + line.len)
        {
            push(
                Self::META
                    .finding(format!("one line of the transcript is {} long", mib(n)))
                    .severity(if n >= LINE_WARN { Severity::Warning } else { Severity::Info })
                    .at(line.head(), "this line")
                    .help("a tool output or pasted text this size is sent back with every request; keep it in a file"),
            );
        }
        if claude {
            for &(n, span) in &size.big_images {
                push(
                    Self::META
                        .finding(format!(
                            "an inline image on the active history is {} of base64, over the 5 MiB Anthropic accepts per image: every request that carries it is rejected",
                            mib(n)
                        ))
                        .at(span.head(), "this image's data")
                        .help("remove the image from the history (back the transcript up first) or resume from before it"),
                );
            }
            if size.image_bytes_sent > REQUEST_MAX {
                push(
                    Self::META
                        .finding(format!(
                            "the {} inline images on the active history add up to {}, over the 32 MB Anthropic accepts per request (413 request_too_large)",
                            size.images,
                            mib(size.image_bytes_sent)
                        ))
                        .at(size.largest_line.map_or_else(|| analysis_start(analysis), |(_, s)| s.head()), "the longest line")
                        .help("compact the session or start a new one; keep screenshots in files"),
                );
            }
        } else if size.image_bytes >= ROLLOUT_IMAGES_INFO
            && let Some((_, line)) = size.largest_line
        {
            push(
                Self::META
                    .finding(format!(
                        "the rollout holds {} inline images, {} in all",
                        size.images,
                        mib(size.image_bytes)
                    ))
                    .severity(Severity::Info)
                    .at(line.head(), "its longest line")
                    .help("inline images make rollouts grow fast (openai/codex#40111); keep screenshots in files"),
            );
        }
    }
}

/// The start of the input.
fn analysis_start(analysis: &Analysis) -> crate::source::Span {
    crate::source::Span::new(analysis.file, 0, 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{TranscriptFacts, TranscriptSize};
    use crate::source::{FileId, Span};

    fn run(format: crate::core::Format, size: TranscriptSize) -> Vec<(Severity, String)> {
        let mut a = Analysis::new(FileId(0), format);
        a.transcript = Some(Box::new(TranscriptFacts {
            client: "Claude Code 2.1.197".into(),
            size,
            ..TranscriptFacts::default()
        }));
        let mut out = Vec::new();
        TranscriptOversized.run(&a, &mut out);
        out.into_iter().map(|f| (f.severity, f.message.into_unescaped())).collect()
    }

    fn line(len: u64) -> Option<(u64, Span)> {
        Some((len, Span::new(FileId(0), 100, len)))
    }

    #[test]
    fn normal_sizes_say_nothing() {
        let size = TranscriptSize {
            bytes: 3 << 20,
            largest_line: line(300 << 10),
            images: 2,
            image_bytes: 1 << 20,
            image_bytes_sent: 1 << 20,
            big_images: Vec::new(),
        };
        assert!(run(crate::testing::formats::CLAUDE_CODE, size).is_empty());
    }

    #[test]
    fn a_claude_transcript_over_50_mib_is_a_warning_a_rollout_is_not() {
        let size = TranscriptSize {
            bytes: 60 << 20,
            largest_line: line(300 << 10),
            ..TranscriptSize::default()
        };
        let f = run(crate::testing::formats::CLAUDE_CODE, size.clone());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, Severity::Warning);
        let f = run(crate::testing::formats::CODEX, size);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, Severity::Info);
    }

    #[test]
    fn a_huge_file_and_line_are_warnings() {
        let size = TranscriptSize {
            bytes: 300 << 20,
            largest_line: line(12 << 20),
            ..TranscriptSize::default()
        };
        let f = run(crate::testing::formats::CLAUDE_CODE, size);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().all(|(s, _)| *s == Severity::Warning), "{f:?}");
    }

    #[test]
    fn an_image_over_the_api_limit_is_a_warning_and_not_also_a_long_line() {
        let image = Span::new(FileId(0), 150, 6 << 20);
        let size = TranscriptSize {
            bytes: 7 << 20,
            largest_line: line(7 << 20),
            images: 1,
            image_bytes: 6 << 20,
            image_bytes_sent: 6 << 20,
            big_images: vec![(6 << 20, image)],
        };
        let f = run(crate::testing::formats::CLAUDE_CODE, size);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].1.contains("5 MiB"), "{f:?}");
        assert_eq!(f[0].0, Severity::Warning);
    }

    #[test]
    fn images_over_the_request_limit_are_a_warning() {
        let size = TranscriptSize {
            bytes: 40 << 20,
            largest_line: line(1 << 20),
            images: 20,
            image_bytes: 40 << 20,
            image_bytes_sent: 40 << 20,
            big_images: Vec::new(),
        };
        let f = run(crate::testing::formats::CLAUDE_CODE, size);
        assert!(
            f.iter()
                .any(|(s, m)| *s == Severity::Warning && m.contains("32 MB")),
            "{f:?}"
        );
    }
}
