//! What the two UI-level decoders ([`super::ui_stream`] and [`super::ag_ui`]) keep track of:
//! tool calls, open texts, and the stream's terminal event.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use super::part::PartKind;
use super::protocol::{Focus, Out};
use crate::source::Span;

#[derive(Clone, Debug)]
pub struct Tool {
    pub name: String,
    pub args: String,
    pub at: Span,
    /// Its input is complete (`tool-input-available` / `TOOL_CALL_END`).
    pub called: bool,
}

/// Shared bookkeeping of the two decoders.
#[derive(Default)]
pub struct Book {
    pub tools: BTreeMap<String, Tool>,
    pub texts: BTreeMap<String, Span>,
    pub ended_texts: HashSet<String>,
    pub step_open: bool,
    pub finished: Option<(String, Span)>,
}

impl Book {
    /// An event after the stream's terminal event; `ty` names it (only then).
    pub fn after_terminal(&self, ty: impl FnOnce() -> String, out: &mut Out) {
        if let Some((name, at)) = &self.finished {
            let ty = ty();
            out.anomaly(
                format!("`{ty}` arrives after the stream's {name}"),
                false,
                Focus::path(&["type"]),
            );
            if let Some(a) = out.anomalies.last_mut() {
                a.related.push((*at, "the stream ended here".into()));
            }
        }
    }

    pub fn tool_outcome(
        &mut self,
        id: &str,
        ty: &str,
        error_before_call_benign: bool,
        out: &mut Out,
    ) {
        match self.tools.get_mut(id) {
            None => out.anomaly(
                format!("`{ty}` for tool call {id}, which never started"),
                false,
                Focus::path(&["toolCallId"]),
            ),
            Some(t) => {
                if !t.called {
                    out.anomaly(
                        format!("`{ty}` for tool call {id} arrives before its input was complete (before the tool call itself)"),
                        error_before_call_benign,
                        Focus::path(&["toolCallId"]),
                    );
                    let at = t.at;
                    if let Some(a) = out.anomalies.last_mut() {
                        a.related.push((at, "the tool call started here".into()));
                    }
                }
            }
        }
    }

    /// A tool call's input starts streaming: it is tracked, and the part is emitted.
    pub fn start_tool(
        &mut self,
        call: Cow<'_, str>,
        name: String,
        provider_executed: bool,
        at: Span,
        out: &mut Out,
    ) {
        self.tools.insert(
            call.to_string(),
            Tool {
                name: name.clone(),
                args: String::new(),
                at,
                called: false,
            },
        );
        out.part_at(
            PartKind::ToolInputStart {
                id: call.into_owned(),
                name,
                provider_executed,
            },
            Focus::path(&["toolCallId"]),
        );
    }

    /// A piece of a tool call's input; `orphan` words the anomaly when the call never started.
    pub fn tool_delta(
        &mut self,
        call: Cow<'_, str>,
        delta: &str,
        orphan: impl FnOnce(&str) -> String,
        out: &mut Out,
    ) {
        match self.tools.get_mut(call.as_ref()) {
            Some(t) => {
                t.args.push_str(delta);
                out.part(PartKind::ToolInputDelta {
                    id: call.into_owned(),
                    delta: delta.to_owned(),
                });
            }
            None => out.anomaly(orphan(&call), false, Focus::path(&["toolCallId"])),
        }
    }

    pub fn open_at_end(&self) -> Vec<crate::session::OpenAtEnd> {
        use crate::session::OpenAtEnd;
        let mut out: Vec<OpenAtEnd> = self
            .tools
            .iter()
            .filter(|(_, t)| !t.called)
            .map(|(id, t)| {
                OpenAtEnd::call(
                    format!("tool call `{}` ({id}) never got its input", t.name),
                    t.at,
                    id,
                )
            })
            .collect();
        out.extend(
            self.texts
                .iter()
                .map(|(id, at)| OpenAtEnd::new(format!("text {id} was never ended"), *at)),
        );
        out
    }
}
