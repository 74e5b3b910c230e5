use super::Check;
use crate::checks::diagnostic::{Finding, Ids};
use crate::session::Analysis;

declare_check! {
    /// ## What it does
    /// Reads the subagents Claude Code stores beside a session's transcript
    /// (`<sessionId>/subagents/agent-<agentId>.jsonl` with `agent-<agentId>.meta.json`) and
    /// reports one whose `toolUseId` names no tool call of the parent transcript (its Task or
    /// Agent call), or whose meta file names no call at all.
    ///
    /// ## Why it matters
    /// The meta file is the only link from a subagent's conversation to the call that started
    /// it: the parent's `tool_result` only quotes the agent's id in its text. When the call is
    /// not in the parent (records lost, the folder copied from another session, a transcript
    /// edited by hand), the subagent's work cannot be placed in the session, and tools that
    /// show subagents under their call lose it.
    ///
    /// ## Example
    /// ```text
    /// subagents/agent-ab5d896e48aef0b55.meta.json:
    /// {"agentType":"general-purpose","description":"…","toolUseId":"toolu_01Gone","spawnDepth":1}
    /// (no tool_use with id toolu_01Gone in <sessionId>.jsonl)
    /// ```
    ///
    /// ## How to fix
    /// Check that the `subagents` folder belongs to this session (its folder name is the
    /// session's id); if the parent lost the call, the subagent's own transcript still holds its
    /// work. Correct `toolUseId` when the call is there under another id.
    pub struct SubagentOrphaned {
        name: "subagent-orphaned",
        severity: Warning,
        summary: "A subagent stored beside a Claude Code transcript names no call of the parent",
    }
}

impl Check for SubagentOrphaned {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(facts) = analysis.transcript.as_deref() else {
            return;
        };
        let session = analysis.sessions.first().map(|s| s.id.clone());
        for agent in &facts.subagents {
            let f = match &agent.tool_use_id {
                Some((id, _)) if facts.file_calls.contains(id) => continue,
                Some((id, span)) => Self::META
                    .finding(format!(
                        "subagent {} names tool call {id}, which is not in the parent transcript",
                        agent.agent_id
                    ))
                    .at(*span, "no tool_use of the parent has this id")
                    .ids({
                        let mut ids = Ids::default().call(id.clone());
                        ids.session_id.clone_from(&session);
                        ids
                    }),
                None => Self::META
                    .finding(format!(
                        "subagent {}'s meta file names no tool call (`toolUseId`)",
                        agent.agent_id
                    ))
                    .at(agent.span, "no `toolUseId` here")
                    .ids({
                        let mut ids = Ids::default();
                        ids.session_id.clone_from(&session);
                        ids
                    }),
            };
            let f = if agent.transcript {
                f.note("the subagent's own transcript is there: its work is kept, only its link to the parent is broken")
            } else {
                f.note("the subagent's own transcript (`agent-<agentId>.jsonl`) is missing too")
            };
            out.push(f.help(
                "check that the `subagents` folder belongs to this session; `rewind explain subagent-orphaned` says more",
            ));
        }
    }
}
