//! Stage 3 of the pipeline: what the model receives.
//!
//! Agents rebuild the model's input from their store on every turn. This module holds that input
//! in a provider-neutral shape — [`ModelRequest`]s made of [`ModelMessage`]s with the roles and
//! blocks of the AI SDK's model messages (system, user, assistant, tool; text, reasoning,
//! tool-call, tool-result) — and, in [`provider`], the rules each provider enforces on it, with
//! the exact error text the provider answers when a rule is broken.
//!
//! Requests come from two places: a recorded request body (an HTTP recording or HAR), or a
//! session rebuilt the way the agent rebuilds it (OpenCode's `toModelMessages` followed by the AI
//! SDK's `convertToModelMessages`).

pub mod opencode;
pub mod provider;
pub mod request;
pub mod transcript;

pub use crate::request::{
    Block, BlockKind, ModelMessage, ModelRequest, Provider, RecordedResponse, Role,
};
