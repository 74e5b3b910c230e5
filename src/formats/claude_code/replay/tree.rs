//! The transcript's tree: damage to it (missing parents, cycles, duplicated records) and the
//! branches the active history leaves behind.

use std::collections::HashSet;

use super::{Block, Reader, Rec};
use crate::FastMap;
use crate::session::{StrandedCall, TranscriptFacts, TreeDamage, TreeDamageKind};

impl Reader {
    /// Damage to the tree: a `parentUuid` naming no record (on the active history: the client
    /// loses what is above it), a cycle, a duplicated `uuid`; and branches the active history
    /// leaves behind (what the client does when a turn is resumed or rewound), unless a
    /// stranded call already tells of them.
    pub(super) fn tree(
        &self,
        path: &[usize],
        on_path: &HashSet<usize>,
        session: &str,
        client: &str,
        facts: &mut TranscriptFacts,
    ) {
        let mut push = |kind, span, message: String, related, notes| {
            facts.tree.push(TreeDamage {
                kind,
                session: session.to_owned(),
                span,
                message,
                related,
                notes,
            });
        };
        let main_sidechain = path.last().is_some_and(|&i| self.records[i].sidechain);
        let talk = |r: &Rec| r.converses() && !r.synthetic && r.sidechain == main_sidechain;
        let total = self.records.iter().filter(|r| talk(r)).count();
        let reachable = path.iter().filter(|&&i| talk(&self.records[i])).count();
        // A cycle: the walk from the leaf comes back to a record.
        if let Some(&top) = path.first()
            && let Some(p) = self.records[top].parent.as_ref()
            && let Some(&j) = self.index.get(p)
            && on_path.contains(&j)
        {
            let rec = &self.records[top];
            push(
                TreeDamageKind::Cycle,
                rec.span.head(),
                format!(
                    "the records' parentUuid links go round in a circle: record {} names {}, which is already on the way down to the leaf",
                    rec.uuid, self.records[j].uuid
                ),
                vec![(
                    self.records[j].span.head(),
                    "the record it names".to_owned(),
                )],
                vec![format!(
                    "written by {client}; a client that walks the history back from the leaf never reaches a root here"
                )],
            );
        }
        for (i, rec) in self.records.iter().enumerate() {
            let Some(parent) = rec.parent.as_ref() else {
                continue;
            };
            // A subagent's records may start from a record of its parent's file.
            if self.index.contains_key(parent) || rec.sidechain {
                continue;
            }
            let live = path.first() == Some(&i);
            let span = rec.parent_span.unwrap_or(rec.span.head());
            let message = if live {
                format!(
                    "the active history stops at record {}: its parentUuid {parent} names no record in the file, so the client resumes with only {reachable} of the file's {total} conversation records (this one and those after it)",
                    rec.uuid
                )
            } else {
                format!(
                    "record {} names parent {parent}, which is not in the file: the branch it starts is cut off from the rest",
                    rec.uuid
                )
            };
            let related = match path.last().filter(|_| live) {
                Some(&leaf) => vec![(
                    self.records[leaf].span.head(),
                    "the active history ends here: the leaf the client resumes from".to_owned(),
                )],
                None => Vec::new(),
            };
            push(
                TreeDamageKind::MissingParent { live },
                span,
                message,
                related,
                vec![format!(
                    "written by {client}; Claude Code rebuilds the history by walking parentUuid back from the leaf, and a gap truncates it silently (anthropics/claude-code#22107, #58554)"
                )],
            );
        }
        for (span, uuid) in &self.duplicates {
            push(
                TreeDamageKind::DuplicateUuid,
                *span,
                format!(
                    "two records have uuid {uuid}: a child naming it may be linked to the wrong one"
                ),
                Vec::new(),
                Vec::new(),
            );
        }
        // Branches: each record off the path, mapped to the first record of its branch (the
        // child of a record on the path). Parents come before children in the file.
        let stranded: HashSet<&str> = facts
            .stranded_calls
            .iter()
            .map(|c| c.call_id.as_str())
            .collect();
        let mut root: Vec<Option<usize>> = vec![None; self.records.len()];
        let mut branches: Vec<(usize, usize, usize, bool)> = Vec::new(); // root, talk, last, stranded
        let mut branch_of: FastMap<usize, usize> = FastMap::default(); // root → its branch
        let live_child = self.children_on_path(path);
        for (i, rec) in self.records.iter().enumerate() {
            if on_path.contains(&i) || rec.sidechain != main_sidechain {
                continue;
            }
            let Some(p) = self.parent_of(rec) else {
                continue;
            };
            let r = if on_path.contains(&p) {
                Some(i)
            } else if p < i {
                root[p]
            } else {
                None
            };
            root[i] = r;
            let Some(r) = r else {
                continue;
            };
            let strands = rec
                .blocks
                .iter()
                .any(|b| matches!(b, Block::ToolUse { id, .. } if stranded.contains(id.as_str())));
            match branch_of.get(&r).and_then(|&k| branches.get_mut(k)) {
                Some(b) => {
                    b.1 += usize::from(talk(rec));
                    b.2 = i;
                    b.3 |= strands;
                }
                None => {
                    branch_of.insert(r, branches.len());
                    branches.push((r, usize::from(talk(rec)), i, strands));
                }
            }
        }
        for (r, talked, last, strands) in branches {
            if talked == 0 || strands {
                continue;
            }
            let rec = &self.records[r];
            let Some(fork) = self.parent_of(rec) else {
                continue;
            };
            let fork = &self.records[fork];
            let live = live_child
                .get(fork.uuid.as_str())
                .map(|&k| &self.records[k]);
            let related = live
                .map(|c| {
                    vec![(
                        c.span.head(),
                        "the active history goes on from the same record here".to_owned(),
                    )]
                })
                .unwrap_or_default();
            let ended = &self.records[last];
            let how = if ended.api_error.is_some() {
                "it ends with an API error"
            } else if ended.ty == "user" {
                "it ends with a user turn that got no reply"
            } else {
                "it ends normally"
            };
            push(
                TreeDamageKind::Abandoned,
                rec.span.head(),
                format!(
                    "a branch of {talked} conversation record{} leaves the active history after record {}; {how}",
                    if talked == 1 { "" } else { "s" },
                    fork.uuid
                ),
                related,
                vec![format!(
                    "written by {client}; Claude Code branches this way when a turn is resumed after an interruption or rewound (/rewind, an edited prompt): the branch stays on disk and is not sent"
                )],
            );
        }
    }

    /// A compaction the active history starts from (a `compact_boundary` first on the path)
    /// whose summary is missing or empty: Claude Code writes the boundary, then the summary as
    /// the user record after it (`isCompactSummary`); what came before the boundary is no longer
    /// sent. Only a compaction that left messages behind is one.
    pub(super) fn lost_summary(&self, path: &[usize], facts: &mut TranscriptFacts) {
        let Some(&first) = path.first() else {
            return;
        };
        let boundary = &self.records[first];
        if !boundary.boundary {
            return;
        }
        // The records a `preservedSegment` keeps (its tail back to its head) are still sent.
        let mut kept: HashSet<usize> = HashSet::new();
        if let Some(p) = &boundary.preserved {
            let mut at = self.index.get(&p.tail).copied();
            while let Some(i) = at {
                if !kept.insert(i) {
                    break;
                }
                if self.records[i].uuid == p.head {
                    break;
                }
                at = self.parent_of(&self.records[i]);
            }
        }
        let dropped = self
            .records
            .iter()
            .enumerate()
            .filter(|(i, r)| {
                r.seq < boundary.seq
                    && !kept.contains(i)
                    && !r.sidechain
                    && !r.meta
                    && matches!(r.ty.as_str(), "user" | "assistant")
            })
            .count();
        if dropped == 0 {
            return;
        }
        let summary = path[1..]
            .iter()
            .map(|&i| &self.records[i])
            .find(|r| r.ty == "user" && !r.meta);
        let (span, what, label) = match summary {
            Some(r) if r.compact_summary => {
                match &r.text {
                    Some((t, _)) if !t.trim().is_empty() => return,
                    _ => {}
                }
                let at = r.text.as_ref().and_then(|(_, at)| *at).unwrap_or(r.span);
                (at, "its summary is empty", "the empty summary")
            }
            _ => (
                boundary.span,
                "no summary follows it (no `isCompactSummary` record)",
                "the compaction",
            ),
        };
        facts.lost_summaries.push(crate::session::LostSummary {
            span,
            what: what.to_owned(),
            label,
            dropped,
        });
    }

    /// Every `tool_use` of the file that is not on the active history, and why.
    pub(super) fn off_history(
        &self,
        path: &[usize],
        on_path: &HashSet<usize>,
        facts: &mut TranscriptFacts,
    ) {
        let first_on_path = path.first().map_or(0, |&i| self.records[i].seq);
        let compacted = path.first().is_some_and(|&i| self.records[i].boundary);
        for (i, rec) in self.records.iter().enumerate() {
            if on_path.contains(&i) {
                continue;
            }
            for block in &rec.blocks {
                let Block::ToolUse { id, span, .. } = block else {
                    continue;
                };
                let why = if compacted && rec.seq < first_on_path {
                    "before the compaction the active history starts from"
                } else if rec.sidechain {
                    "in a sidechain (a subagent's conversation)"
                } else {
                    "on a branch the active history does not take"
                };
                facts
                    .off_history_calls
                    .push((id.clone(), *span, why.to_owned()));
            }
        }
    }

    /// The first record of the active history whose parent is each uuid (where the history
    /// goes on from a record a branch also leaves).
    fn children_on_path(&self, path: &[usize]) -> FastMap<&str, usize> {
        crate::first_of(
            (path.iter()).filter_map(|&k| Some((self.records[k].parent.as_deref()?, k))),
        )
    }

    /// The record of the active history that the walk up from `start` (itself included)
    /// reaches, or `None` (no parent, or a cycle). What each record walked through reaches is
    /// kept in `forks`, so that the calls of one long branch do not walk it each.
    fn fork(
        &self,
        start: Option<usize>,
        on_path: &HashSet<usize>,
        forks: &mut [Option<Option<usize>>],
    ) -> Option<usize> {
        let mut walked = Vec::new();
        let mut at = start;
        let reached = loop {
            let Some(j) = at else {
                break None;
            };
            if on_path.contains(&j) {
                break Some(j);
            }
            if let Some(known) = forks.get(j).copied().flatten() {
                break known;
            }
            if walked.len() > self.records.len() {
                break None; // a cycle
            }
            walked.push(j);
            at = self.parent_of(&self.records[j]);
        };
        for j in walked {
            if let Some(slot) = forks.get_mut(j) {
                *slot = Some(reached);
            }
        }
        reached
    }

    /// `tool_use` blocks off the active history that no `tool_result` in the file answers.
    /// Every call id a `tool_result` of the file answers, on any branch.
    pub(super) fn answered(&self) -> HashSet<&str> {
        self.records.iter().flat_map(Rec::result_ids).collect()
    }

    pub(super) fn stranded(
        &self,
        path: &[usize],
        on_path: &HashSet<usize>,
        session: &str,
        client: &str,
        facts: &mut TranscriptFacts,
    ) {
        let answered = self.answered();
        let main_sidechain = path.last().is_some_and(|&i| self.records[i].sidechain);
        let live_child = self.children_on_path(path);
        let mut forks = vec![None; self.records.len()];
        for (i, rec) in self.records.iter().enumerate() {
            if on_path.contains(&i) || rec.sidechain != main_sidechain {
                continue;
            }
            for block in &rec.blocks {
                let Block::ToolUse { id, name, span } = block else {
                    continue;
                };
                if answered.contains(id.as_str()) {
                    continue;
                }
                // Where this branch leaves the active history.
                let parent = self.parent_of(rec);
                let mut related = Vec::new();
                let why = match self.fork(parent, on_path, &mut forks) {
                    Some(j) => {
                        let fork = &self.records[j];
                        if let Some(child) =
                            live_child.get(fork.uuid.as_str()).map(|&k| &self.records[k])
                        {
                            related.push((
                                child.span.head(),
                                "the active history goes on from the same parent here".to_owned(),
                            ));
                        }
                        format!(
                            "it lies on a dead-end branch: the active history leaves record {} by another child",
                            fork.uuid
                        )
                    }
                    None => "it is not on the active history (before a compaction, or on a branch of its own)".to_owned(),
                };
                facts.stranded_calls.push(StrandedCall {
                    session: session.to_owned(),
                    call_id: id.clone(),
                    tool: name.clone(),
                    span: *span,
                    why,
                    related,
                    notes: vec![format!(
                        "written by {client}; the client rebuilds its requests from the active history only, so this call is not sent (Claude Code 2.1.197 branches a resumed turn from the record before an unanswered `tool_use`); the record stays on disk"
                    )],
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::claude_code::read as claude_transcript;
    use crate::source::FileId;
    use serde_json::{Value, json};

    /// A transcript with branches off the history (one long, one in a cycle), and resumes with
    /// hidden prompts.
    fn branching_transcript() -> String {
        let mut lines: Vec<String> = Vec::new();
        let mut rec = |t: &str, u: &str, p: Option<&str>, content: Value, extra: Value| {
            let mut extra = extra;
            let model = extra
                .as_object_mut()
                .and_then(|e| e.remove("model"))
                .unwrap_or(json!("m"));
            let message = if t == "assistant" {
                json!({"id": format!("m_{u}"), "model": model, "content": content})
            } else {
                json!({"role": t, "content": content})
            };
            let mut o = json!({"type": t, "uuid": u, "parentUuid": p, "sessionId": "s",
                               "message": message});
            if let (Some(o), Some(e)) = (o.as_object_mut(), extra.as_object()) {
                o.extend(e.clone());
            }
            lines.push(o.to_string());
        };
        let mut prev: Option<String> = None;
        for i in 0..20 {
            let p = format!("p{i}");
            rec("user", &p, prev.as_deref(), json!("go"), json!({}));
            let mut at = p.clone();
            if i % 3 == 0 {
                rec(
                    "user",
                    &format!("h{i}"),
                    Some(&at),
                    json!("Continue."),
                    json!({"isMeta": true}),
                );
                at = format!("h{i}");
                let reply = json!([{"type": "text", "text": "No response requested."}]);
                let synthetic = json!({"model": "<synthetic>"});
                rec("assistant", &format!("s{i}"), Some(&at), reply, synthetic);
                at = format!("s{i}");
                rec(
                    "user",
                    &format!("r{i}"),
                    Some(&at),
                    json!("go on"),
                    json!({}),
                );
                at = format!("r{i}");
            }
            let mut branch = p.clone();
            for d in 0..(i % 4) {
                let call = json!([{"type": "tool_use", "id": format!("t{i}_{d}"), "name": "R",
                                   "input": {}}]);
                rec(
                    "assistant",
                    &format!("b{i}_{d}"),
                    Some(&branch),
                    call,
                    json!({}),
                );
                branch = format!("b{i}_{d}");
            }
            rec(
                "assistant",
                &format!("a{i}"),
                Some(&at),
                json!([{"type": "text", "text": "ok"}]),
                json!({}),
            );
            prev = Some(format!("a{i}"));
        }
        // A cycle off the history, with a call in it.
        let call = json!([{"type": "tool_use", "id": "tc", "name": "R", "input": {}}]);
        rec("assistant", "c1", Some("c2"), call.clone(), json!({}));
        rec("assistant", "c2", Some("c1"), call, json!({}));
        lines.push(r#"{"type":"last-prompt","leafUuid":"a19","sessionId":"s"}"#.into());
        lines.join("\n") + "\n"
    }

    #[test]
    fn forks_children_and_hidden_prompts_are_found_as_the_walks_found_them() {
        let text = branching_transcript();
        let mut r = Reader::default();
        let read = claude_transcript::read(text.as_bytes(), FileId(0), &mut |line| r.line(line));
        assert!(read.is_ok());
        let path = r.active_path();
        let on_path: HashSet<usize> = path.iter().copied().collect();
        let parent = |j: usize| r.parent_of(&r.records[j]);
        let mut forks = vec![None; r.records.len()];
        let children = r.children_on_path(&path);
        let mut reached = 0;
        for i in (0..r.records.len()).rev() {
            // The walk as it was: up from the parent until the history, or too many steps.
            let mut at = parent(i);
            let mut steps = 0;
            while let Some(j) = at {
                if on_path.contains(&j) || steps > r.records.len() {
                    break;
                }
                steps += 1;
                at = parent(j);
            }
            let walked = at.filter(|j| on_path.contains(j));
            assert_eq!(
                r.fork(parent(i), &on_path, &mut forks),
                walked,
                "{}",
                r.records[i].uuid
            );
            reached += usize::from(walked.is_some());
            let uuid = r.records[i].uuid.as_str();
            let child = path
                .iter()
                .copied()
                .find(|&k| r.records[k].parent.as_deref() == Some(uuid));
            assert_eq!(children.get(uuid).copied(), child, "{uuid}");
        }
        assert!(reached > 40, "{reached}");
        let facts = r.finish(FileId(0)).transcript;
        let inserted: usize = facts
            .iter()
            .flat_map(|f| &f.unanswered)
            .map(|u| u.inserted.len())
            .sum();
        assert_eq!(inserted, 7);
    }
}
