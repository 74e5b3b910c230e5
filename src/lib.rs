//! rewind: forensics and repair for AI coding-agent sessions.
//!
//! The crate is a one-way pipeline, one module per stage:
//!
//! * [`ingest`]: bytes → records with byte spans (agent logs, SSE captures, recordings, stores);
//! * [`replay`]: records → the session model ([`session`]), re-running the agent's processor;
//! * [`reconstruct`]: sessions → the requests the model receives, and the providers' rules;
//! * [`checks`]: the session model → [`diagnostic::Finding`]s, one check per file;
//! * [`report`]: findings → people and machines (annotated snippets, JSON).
//!
//! [`pipeline`] wires the stages together; [`cli`] and [`commands`] are the binary's front end.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod baseline;
pub mod checks;
pub mod cli;
pub mod commands;
pub mod config;
pub mod diagnostic;
pub mod discover;
pub mod error;
pub mod ingest;
pub mod model;
pub mod pipeline;
pub mod reconstruct;
pub mod repair;
pub mod replay;
pub mod report;
pub mod session;
pub mod source;
pub mod text;
