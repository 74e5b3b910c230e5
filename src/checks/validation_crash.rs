use super::incidents::incidents;
use super::Check;
use crate::diagnostic::{Finding, Ids};
use crate::model::zod;
use crate::session::{Analysis, ErrorInfo, Event, EventKind, PartRecord};

declare_check! {
    /// ## What it does
    /// Finds crashes caused by the agent's own validation: a `ZodError` logged by the processor,
    /// carried by the session's error (`UnknownError` wrapping it) or printed raw to stderr. It
    /// decodes the issue tree into plain words — which union failed, which discriminator at which
    /// path, which values are allowed, which alternatives do not apply — and names the part that
    /// was being written when it happened.
    ///
    /// ## Why it matters
    /// A write that fails validation throws inside the stream processor. The part being written
    /// keeps its previous state forever (a tool stuck `running`), the step never finishes, and the
    /// session dies with an error whose text is a JSON dump few people can read.
    ///
    /// ## Example
    /// ```text
    /// "error": { "name": "ZodError", "message": "[ { \"code\": \"invalid_union\", … \"discriminator\": \"status\", \"path\": [\"state\", \"status\"] … ] }
    /// ```
    /// decoded: *a tool state was written with a `status` outside pending | running | completed | error*.
    ///
    /// ## How to fix
    /// Fix the writer so it only writes values the schema allows (link-assistant/agent ≤ 0.8.16
    /// wrote `status: "failed"` for tool errors; the schema's value is `error`). Then repair the
    /// stored session: `rewind repair` closes the tool and the step the crash left open.
    pub struct ValidationCrash {
        name: "validation-crash",
        severity: Error,
        summary: "The agent crashed on its own schema validation (a ZodError), decoded into plain words",
    }
}

struct Occurrence<'a> {
    event: &'a Event,
    info: &'a ErrorInfo,
    decoded: zod::Decoded,
}

impl Check for ValidationCrash {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        for incident in incidents(analysis) {
            let mut groups: Vec<Vec<Occurrence<'_>>> = Vec::new();
            for (event, info) in incident.errors() {
                let Some(issues) = zod::parse_issues(&info.message) else {
                    continue;
                };
                let decoded = zod::decode(&issues);
                let occurrence = Occurrence {
                    event,
                    info,
                    decoded,
                };
                match groups
                    .iter_mut()
                    .find(|g| g[0].decoded.headline == occurrence.decoded.headline)
                {
                    Some(g) => g.push(occurrence),
                    None => groups.push(vec![occurrence]),
                }
            }
            for group in groups {
                out.push(finding(analysis, &group, incident.session));
            }
        }
    }
}

fn finding(analysis: &Analysis, group: &[Occurrence<'_>], session: Option<&str>) -> Finding {
    let first = &group[0];
    let decoded = &first.decoded;
    let where_ = match &first.event.kind {
        EventKind::Log { service, .. } => format!(" (logged by {service})"),
        _ => String::new(),
    };
    let mut f = ValidationCrash::META
        .finding(format!(
            "the agent crashed on its own validation{where_}: {}",
            decoded.headline
        ))
        .at(
            first.info.message_span.unwrap_or(first.event.span.head()),
            "ZodError thrown here",
        );
    for o in &group[1..] {
        let text = match &o.event.kind {
            EventKind::SessionError(i) => format!(
                "the session's error ({}) carries the same ZodError",
                i.name.as_deref().unwrap_or("error")
            ),
            EventKind::RawError(_) => "thrown again, uncaught, and printed raw".into(),
            EventKind::ProcessCrash(i) => format!(
                "the process died of it ({})",
                i.name.as_deref().unwrap_or("crash")
            ),
            _ => "logged again here".into(),
        };
        f = f.also(
            Some(o.info.message_span.unwrap_or(o.event.span.head())),
            text,
        );
    }
    if !decoded.details.is_empty() {
        f = f.note(decoded.details.join("\n"));
    }
    let mut ids = Ids {
        session_id: session.map(str::to_owned),
        ..Ids::default()
    };
    let tool_state_failed = decoded
        .discriminator
        .as_ref()
        .is_some_and(|d| d.path.ends_with("state.status"));
    if tool_state_failed {
        f = f.note("the value that was written is not in the log: the write was rejected before it was stored");
        if let Some(part) = in_flight_tool(analysis, session, first.event.seq)
            && let Some(t) = part.part.tool()
        {
            f = f.also(
                part.status_span(),
                format!(
                    "tool `{}` was `{}` here; its terminal write is the one that was rejected",
                    t.tool,
                    t.state.status()
                ),
            );
            ids = ids
                .message(part.part.message_id.clone())
                .part(part.part.id.clone())
                .call(t.call_id.clone());
        }
        f = f.help(
            "the agent wrote a tool status its schema does not allow (link-assistant/agent ≤ 0.8.16 wrote `failed` for tool errors; the schema's value is `error`): upgrade the agent, then `rewind repair` the stored session",
        );
    } else if decoded.paths.iter().any(|p| p.contains("diffs["))
        && first.info.message.contains("NaN")
    {
        f = f.help(
            "a file diff count was NaN: `git diff --numstat` reports binary files as `-`, which parses as NaN; the summary must treat them as 0",
        );
    } else {
        f = f.help("a value the agent produced does not satisfy its own schema; the notes above say which field and what is allowed");
    }
    f.ids(ids)
}

/// The tool part most likely being written when the crash happened: the latest tool of the session
/// still pending or running at that point.
fn in_flight_tool<'a>(
    analysis: &'a Analysis,
    session: Option<&str>,
    before: u64,
) -> Option<&'a PartRecord> {
    analysis
        .parts()
        .filter(|(s, _, _)| session.is_none_or(|id| s.id == id))
        .map(|(_, _, p)| p)
        .filter(|p| p.part.tool().is_some_and(|t| !t.state.is_terminal()))
        .filter_map(|p| p.last().filter(|o| o.seq < before).map(|o| (o.seq, p)))
        .max_by_key(|(seq, _)| *seq)
        .map(|(_, p)| p)
}
