//! What Claude Code transcripts and Codex rollouts share, each client's own part living in its
//! folder: the frame of the rebuilt next request (`claude_code/request.rs` and
//! `codex/request.rs` rebuild the messages), and the repair that rewrites either file (backup,
//! the torn last line, applying and verifying a plan; `claude_code/repair.rs` and
//! `codex/repair.rs` plan on the client's records).

pub mod repair;
pub mod request;
#[cfg(test)]
mod request_corpus;
