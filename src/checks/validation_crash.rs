use super::incidents::incidents;
use super::Check;
use crate::FastMap;
use crate::checks::diagnostic::{Finding, Ids};
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
        let mut in_flight = InFlight::default();
        for incident in incidents(analysis) {
            let mut groups: Vec<Vec<Occurrence<'_>>> = Vec::new();
            let mut by_headline: FastMap<String, usize> = FastMap::default();
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
                match by_headline
                    .get(&occurrence.decoded.headline)
                    .and_then(|&k| groups.get_mut(k))
                {
                    Some(g) => g.push(occurrence),
                    None => {
                        by_headline.insert(occurrence.decoded.headline.clone(), groups.len());
                        groups.push(vec![occurrence]);
                    }
                }
            }
            for group in groups {
                out.push(finding(analysis, &group, incident.session, &mut in_flight));
            }
        }
    }
}

fn finding<'a>(
    analysis: &'a Analysis,
    group: &[Occurrence<'_>],
    session: Option<&str>,
    in_flight: &mut InFlight<'a>,
) -> Finding {
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
        if let Some(part) = in_flight.tool(analysis, session, first.event.seq)
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
/// still pending or running at that point. The unfinished tools of each session (and of all) are
/// gathered once, by their last write, and searched per crash.
#[derive(Default)]
struct InFlight<'a> {
    /// By session id, and of every session, by last write; built at the first crash.
    open: Option<OpenTools<'a>>,
}

/// The unfinished tools of each session, and of all.
type OpenTools<'a> = (FastMap<&'a str, Vec<Open<'a>>>, Vec<Open<'a>>);

/// An unfinished tool and the sequence number of its last write.
type Open<'a> = (u64, &'a PartRecord);

impl<'a> InFlight<'a> {
    fn tool(
        &mut self,
        analysis: &'a Analysis,
        session: Option<&str>,
        before: u64,
    ) -> Option<&'a PartRecord> {
        let (by_session, all) = self.open.get_or_insert_with(|| {
            let mut by_session: FastMap<&str, Vec<Open<'a>>> = FastMap::default();
            let mut all = Vec::new();
            for (s, _, p) in analysis.parts() {
                if p.part.tool().is_none_or(|t| t.state.is_terminal()) {
                    continue;
                }
                if let Some(o) = p.last() {
                    by_session.entry(s.id.as_str()).or_default().push((o.seq, p));
                    all.push((o.seq, p));
                }
            }
            // Stable: of equal writes, the last in part order stays last (as `max_by_key`).
            for open in by_session.values_mut() {
                open.sort_by_key(|(seq, _)| *seq);
            }
            all.sort_by_key(|(seq, _)| *seq);
            (by_session, all)
        });
        let open = match session {
            Some(id) => by_session.get(id).map_or(&[][..], Vec::as_slice),
            None => all.as_slice(),
        };
        let k = open.partition_point(|(seq, _)| *seq < before);
        k.checked_sub(1).and_then(|k| open.get(k)).map(|(_, p)| *p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Part;
    use crate::session::{Message, Observation, Session};
    use crate::source::{FileId, Span};

    /// The search as it was: a walk of every part per crash.
    fn walked<'a>(
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

    #[test]
    fn the_tool_in_flight_is_the_one_a_walk_finds() {
        let write = |seq| Observation {
            seq,
            span: Span::new(FileId(0), 0, 0),
            status: None,
            status_span: None,
        };
        // Tools running, pending and completed; equal last writes; a session id repeated.
        let tool = |id: &str, status: &str, seqs: &[u64]| {
            let mut state = serde_json::json!({"status": status, "input": {}, "time": {"start": 1}});
            if status == "completed" {
                state = serde_json::json!({"status": status, "input": {}, "output": "o",
                    "title": "t", "metadata": {}, "time": {"start": 1, "end": 2}});
            }
            PartRecord {
                part: Part::from_value(&serde_json::json!({"id": id, "type": "tool",
                    "callID": id, "tool": "bash", "state": state})),
                history: seqs.iter().map(|&s| write(s)).collect(),
            }
        };
        let session = |id: &str, parts| Session {
            id: id.into(),
            messages: vec![Message {
                id: format!("msg_{id}"),
                parts,
                ..Message::default()
            }],
            ..Session::default()
        };
        let mut analysis = Analysis::new(FileId(0), crate::testing::formats::AGENT_LOG);
        analysis.sessions = vec![
            session("a", vec![tool("p1", "running", &[3, 9]), tool("p2", "pending", &[9])]),
            session("b", vec![tool("p3", "completed", &[4]), tool("p4", "running", &[6])]),
            session("a", vec![tool("p5", "running", &[12, 2]), tool("p6", "pending", &[])]),
        ];
        let mut in_flight = InFlight::default();
        let mut found = 0;
        for session in [None, Some("a"), Some("b"), Some("c")] {
            for before in 0..16 {
                let got = in_flight.tool(&analysis, session, before);
                let want = walked(&analysis, session, before);
                assert_eq!(
                    got.map(std::ptr::from_ref),
                    want.map(std::ptr::from_ref),
                    "{session:?} {before}"
                );
                found += usize::from(got.is_some());
            }
        }
        assert!(found > 20, "{found}");
    }
}
