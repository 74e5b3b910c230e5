//! What Claude Code transcripts and Codex rollouts share: the next request rebuilt from the
//! stored history, and the repair that rewrites either file.

pub mod repair;
pub mod request;
