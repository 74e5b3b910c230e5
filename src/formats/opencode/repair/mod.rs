//! Repair of stored OpenCode sessions: the minimal change that makes a session resumable, with
//! the original preserved.
//!
//! [`plan`] asks each finding's rule for its fix ([`Check::fix`]): the rules own their changes
//! (`rewind rules --format json` lists them, and a test holds the repair table of `docs/repair.md` to the
//! rules' declarations). Changes are edits of the stored JSON; every changed or added record carries a
//! `rewind` marker (in the tool state's `metadata`, the part's `metadata`, or the message's top
//! level) that says which rule changed what. The marker explains a change and exempts nothing:
//! the checks read marked records like any other. The one deletion is an empty text part
//! (`empty-text-part`), which OpenCode itself leaves out of the requests it builds: it is deleted
//! only after the backup is made and checked, and the plan quotes the row. [`db`] applies a plan
//! to a database safely; [`export`] writes a repaired copy of an `opencode export` document;
//! [`storage`] moves the files of a legacy storage folder that OpenCode cannot parse aside.
//!
//! Claude Code transcripts and Codex rollouts are repaired by [`transcript`], which finds what
//! it repairs on the records themselves and rewrites the file through a temporary file.

pub mod db;
pub mod export;
pub mod live;
pub mod storage;

use std::collections::BTreeSet;

use crate::checks::diagnostic::Finding;
use crate::checks::fix::{FixContext, key, now_ms};
use crate::formats::opencode::db::Schema;
use crate::formats::opencode::request::{self as rebuild, ProviderChoice};
use crate::formats::opencode::stored::StoredSession;
use crate::session::Analysis;

pub use crate::checks::fix::{Change, Edit, FindingKey, Relink, SessionPlan};

/// What a repair works on besides the store: which sessions, and how they are rebuilt when they
/// are diagnosed before and after.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only these sessions (all when empty).
    pub sessions: Vec<String>,
    /// The OpenCode version whose history reconstruction to follow (default: the store's).
    pub opencode_version: Option<String>,
    /// Which provider rules the rebuilt requests are checked against.
    pub provider: ProviderChoice,
    /// Repair sessions that look like OpenCode is writing them (see [`live`]).
    pub force: bool,
    /// Where hidden sessions may be filed (`--project`, `--relink`).
    pub relink: Relink,
}

impl Options {
    /// How a store's sessions are rebuilt (see [`rebuild::Options::for_store`]).
    fn rebuild_options(
        &self,
        store_version: Option<&str>,
        schema: Option<&Schema>,
    ) -> rebuild::Options {
        rebuild::Options::for_store(
            self.opencode_version.as_deref().or(store_version),
            schema,
            self.provider,
        )
    }
}

/// Plans the repair of one session from its stored records, its analysis and its findings: each
/// finding's rule plans its own fix, edits of existing records first (in finding order), then
/// step boundaries (in message order).
pub fn plan(
    stored: &StoredSession,
    analysis: &Analysis,
    findings: &[Finding],
    relink: &Relink,
) -> SessionPlan {
    let Some(session) = analysis.sessions.first() else {
        return SessionPlan {
            session_id: stored.id.clone(),
            ..SessionPlan::default()
        };
    };
    let projects = analysis.projects.as_deref().unwrap_or_default();
    let mut ctx = FixContext::new(
        stored,
        session,
        findings,
        now_ms(),
        projects,
        &analysis.here,
        relink,
    );
    for phase in 0..=1 {
        let mut these: Vec<&Finding> = findings
            .iter()
            .filter(|f| f.rule.check().fix_phase() == phase)
            .collect();
        if phase > 0 {
            // In message order (the first message of an id; findings on none last).
            these.sort_by_key(|f| {
                (f.ids.message_id.as_deref())
                    .and_then(|m| ctx.message_position(m))
                    .unwrap_or(usize::MAX)
            });
        }
        for f in these {
            f.rule.check().fix(f, &mut ctx);
        }
    }
    ctx.plan
}

/// Checks a re-diagnosis: every finding the plans fix is gone, and nothing new appeared.
pub fn verify(
    before: &[Finding],
    after: &[Finding],
    fixes: &BTreeSet<FindingKey>,
) -> Result<(), String> {
    let before: BTreeSet<FindingKey> = before.iter().map(key).collect();
    let mut problems = Vec::new();
    for f in after {
        let k = key(f);
        if fixes.contains(&k) {
            problems.push(format!(
                "still reported after the repair: [{}] {}",
                f.rule,
                f.message.unescaped()
            ));
        } else if !before.contains(&k) {
            problems.push(format!(
                "new after the repair: [{}] {}",
                f.rule,
                f.message.unescaped()
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}
