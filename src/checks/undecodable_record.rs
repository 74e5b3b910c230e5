use super::Check;
use crate::checks::diagnostic::Finding;
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reports records rewind could not decode: a JSON object in a log that is not valid JSON, or
    /// that the input ends inside (a truncated log).
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
        for rec in &analysis.undecodable {
            let f = if rec.truncated {
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
    }
}
