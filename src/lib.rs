//! rewind: forensics and repair for AI coding-agent sessions.
//!
//! The crate is layered, bottom first (`tests/layers.rs` holds every module to using only its
//! own layer and the ones below; DEVELOPERS.md, "Layers"):
//!
//! * `core`, `source`, `text`: the kinds of input, the errors and exit status, spans, text;
//! * `json`, `ingest`: the JSON kernel, opening inputs;
//! * `model`, `request`, `session`: OpenCode's data model, the model's input, the session model;
//! * `protocols`: SSE framing, stream decoders and processors, request bodies, provider rules;
//! * `formats`: one folder per input format (recognition, reading, replay, the rebuilt request,
//!   repair), registered once in `formats!`;
//! * `checks`: the session model → findings, one rule per file;
//! * `report`: findings → people and machines (annotated snippets, JSON, SARIF, HTML…);
//! * `pipeline`: the engine, recognise → read → replay → check → report;
//! * `cli`, `commands`: the binary's front end.
//!
//! The modules are private: the public surface is the binary's entry points, [`run_args`] for
//! running rewind in process, and [`streams`] for the stream benchmark and the chunk-boundary
//! tests.

#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

/// A hash map for the many keys of a large input (ids of parts, messages, calls): foldhash costs
/// less per short key than the standard SipHash, and is seeded per process as well.
type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// The set of [`FastMap`].
type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// Each key with the value it first comes with: the index that replaces a search from the start
/// (`find`, `position`), which finds the first of a repeated key too.
fn first_of<K: Eq + std::hash::Hash, V>(pairs: impl IntoIterator<Item = (K, V)>) -> FastMap<K, V> {
    let mut map = FastMap::default();
    for (k, v) in pairs {
        map.entry(k).or_insert(v);
    }
    map
}

mod baseline;
mod checks;
mod cli;
mod commands;
mod config;
mod core;
mod discover;
mod formats;
mod ingest;
mod json;
mod model;
mod pipeline;
mod progress;
mod protocols;
mod redact;
mod report;
mod request;
mod session;
mod shard;
mod source;
#[cfg(test)]
mod testing;
mod text;

pub use cli::{Cli, run};
pub use commands::print_error;
pub use core::ExitStatus;

/// Stream framing and replay, driven directly by the SSE benchmark and the chunk-boundary tests.
pub mod streams {
    pub use crate::core::Format;
    pub use crate::formats::recognize::sniff;
    pub use crate::formats::recording::read as recording;
    pub use crate::protocols::capture::{Envelope, Framing, Locator, Payload};
    pub use crate::protocols::stream::{Profile, StreamOptions, replay_reader};
    pub use crate::source::FileId;
}

/// Which JSON members redaction never rewrites (ids and times a rule may depend on), shared
/// with the redaction property test so that it plants nothing there.
pub mod redaction {
    pub use crate::redact::detect::is_kept_key;
}

/// Runs rewind in this process as the binary would with `args` (the first one is the program
/// name), writing what it would print to `stdout` and `stderr`; returns the exit status. For
/// tests and the fuzz harness; the process-wide signal handler is not installed.
pub fn run_args<I, T>(
    args: I,
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser;
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = write!(stderr, "{}", e.render());
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let color = cli.color.enabled_on_stderr();
    let (status, out, err) = commands::capture(|| match cli::dispatch(cli) {
        Ok(status) => status,
        Err(err) if err.is_broken_pipe() => core::ExitStatus::Clean,
        Err(err) => {
            commands::print_error(&err, color);
            core::ExitStatus::Error
        }
    });
    let _ = stdout.write_all(&out);
    let _ = stderr.write_all(&err);
    status as u8
}
