//! The next request of a Copilot CLI session, rebuilt from its events the way Copilot CLI
//! 1.0.102 does it (observed: the real client driven offline against a scripted provider, its
//! requests recorded): the main agent's messages in order; each tool call is followed by its
//! result; a call with no result gets a synthetic one right after its assistant message
//! ("The execution of this tool, or a previous tool was interrupted."), not written to the
//! file. A call left open at the very end is first answered on disk by the resume itself (an
//! `interrupted` error), which the request then carries. A result whose call is in no message
//! of the history is left out (assumed, as the provider would refuse it; not observed).
//!
//! Instructions and tool definitions are not rebuilt: the request holds the conversation's
//! roles, block order and ids.

use crate::formats::codex::request::rebuild;
use crate::formats::transcript::request::rebuilt;
use crate::request::{ModelRequest, Provider};
use crate::session::Analysis;

/// The request Copilot CLI sends next, when `analysis` is its session's; `model` is the model
/// the session last selected (a Claude model is asked through Anthropic's Messages API).
pub fn next_request(analysis: &Analysis, model: Option<&str>) -> Option<ModelRequest> {
    let facts = analysis.transcript.as_deref()?;
    let provider = if model.is_some_and(|m| m.contains("claude")) {
        Provider::Anthropic
    } else {
        Provider::OpenAi
    };
    Some(rebuilt(analysis, provider, rebuild(&facts.history)))
}
