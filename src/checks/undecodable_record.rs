use super::Check;
use super::streams::{event_no, facts};
use crate::checks::diagnostic::{Finding, Severity};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports records rewind could not decode: a JSON object in a log that is not valid JSON, or
    /// that the input ends inside (a truncated log). A stream capture most of whose events do
    /// not fit the protocol it was read under is another protocol's: it is noted (at `info`)
    /// as not understood, and nothing else about it is diagnosed. A record a wrapper mangled
    /// (`\^[` written for ESC inside a string, a raw control character) is read leniently, with
    /// those taken as spaces, and noted at `info`: what it holds is diagnosed with the rest.
    ///
    /// ## Why it matters
    /// What cannot be decoded cannot be checked: a tool update or an error hidden in that record is
    /// invisible to every other check, so the diagnosis of that stretch of the log is incomplete.
    /// A log that ends inside an object was cut off — often because the process was killed.
    ///
    /// ## Example
    /// ```text
    /// [2026-02-01T12:30:28.417Z] [INFO] {
    /// [2026-02-01T12:30:28.417Z] [INFO]   "type": "tool_use",
    /// <end of file>
    /// ```
    ///
    /// ## How to fix
    /// Use the complete log if there is one. Otherwise the rest of the diagnosis still stands;
    /// only the undecodable record is missing from it.
    pub struct UndecodableRecord {
        name: "undecodable-record",
        severity: Warning,
        summary: "A record could not be decoded (invalid JSON, or the input ends inside it)",
    }
}

impl Check for UndecodableRecord {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        // The records a lenient reading recovered (a wrapper mangled them).
        let recovered: crate::FastSet<(crate::source::FileId, u64)> = (analysis.salvaged.iter())
            .filter(|s| s.recovered)
            .map(|s| (s.span.file, s.span.offset))
            .collect();
        for rec in &analysis.undecodable {
            let f = if recovered.contains(&(rec.span.file, rec.span.offset)) {
                Self::META
                    .finding(format!(
                        "this record is not valid JSON ({}), but only because a wrapper mangled it: read with the mangled escapes taken as spaces, it was diagnosed with the rest",
                        rec.reason
                    ))
                    .severity(Severity::Info)
                    .at(rec.at.unwrap_or(rec.span.head()), "mangled here")
                    .also(rec.at.map(|_| rec.span.head()), "the record starts here")
                    .note("a backslash before a character no JSON escape starts with (`\\^[`, caret notation for ESC, written by a wrapper that made control characters visible), or a raw control character inside a string")
            } else if rec.truncated {
                Self::META
                    .finding("the input ends inside this record: the file was truncated")
                    .at(rec.span.head(), "this record is never closed")
            } else {
                Self::META
                    .finding(format!("could not decode this record: {}", rec.reason))
                    .at(rec.at.unwrap_or(rec.span.head()), "decoding stopped here")
                    .also(rec.at.map(|_| rec.span.head()), "the record starts here")
            };
            out.push(f);
        }
        if let Some(n) = facts(analysis).and_then(|f| f.not_understood.as_ref()) {
            out.push(
                Self::META
                    .finding(format!(
                        "this stream is not one rewind can read: {} of its {} events do not fit the {} protocol it was taken for, so nothing in it is diagnosed",
                        n.unfit, n.of, n.protocol
                    ))
                    .severity(Severity::Info)
                    .at(n.first.1.head(), format!("event {} is the first that does not fit", event_no(n.first.0)))
                    .note("rewind reads OpenAI Chat Completions and Responses, Anthropic Messages, Gemini, Cohere v2 and Bedrock ConverseStream streams, AI SDK UI message streams and AG-UI events")
                    .help("check that this is a model's streamed response; if it is another provider's, rewind cannot diagnose it yet"),
            );
        }
    }
}
