use super::Check;
use super::fix::{Fix, FixContext};
use crate::checks::diagnostic::{Finding, Ids, Severity};
use crate::session::{
    Analysis, FoldersHere, Generation, Project, Session, canonical_folder as canonical,
    drive_letter as drive,
};

declare_check! {
    /// ## What it does
    /// Reports a session that the client's list of sessions would not show, and says why: a
    /// session of an OpenCode database hidden from OpenCode's session list, or a Gemini CLI
    /// session file its resume picker leaves out (below). OpenCode lists the root sessions (no `parent_id`) of one project: the
    /// project it resolves for the folder it runs in (the git root commit id since 1.2.21,
    /// `global` outside git), optionally only those whose `directory` equals the folder, newest
    /// `time_updated` first. A session is not listed when:
    ///
    /// * its `project_id` names no `project` row;
    /// * OpenCode resolves its project's worktree to another project id: another `project` row
    ///   claims the same worktree, or the folder's id changed (OpenCode reads the id cached in
    ///   `.git/opencode`, else the repository's root commit). When the worktree is on this
    ///   machine, rewind resolves it the same way; otherwise it takes the row OpenCode touched
    ///   last (OpenCode updates the project it opens). Sessions of the other rows are not listed;
    /// * it is filed under `global` while its `directory` is inside a git project: run in that
    ///   folder, OpenCode lists the git project's sessions, not `global`'s. (A `global` session
    ///   whose folder is exactly the project's worktree is not reported: OpenCode files it under
    ///   the project the next time it opens that folder.)
    /// * its `directory` is not under its project's worktree nor any of its other folders (git
    ///   worktrees, `project_directory`): the folder was moved or renamed;
    /// * its `directory` differs from the folder only by its form (a trailing slash, another
    ///   drive-letter case, or empty), so a list by folder never matches it.
    ///
    /// The last two hide the session only from lists by folder (the project's list still
    /// shows it): they are reported as info.
    ///
    /// In a database OpenCode 2.x has taken over (it has `session_v2`), 2.x lists `session_v2`
    /// rows by project, and a session is not listed when:
    ///
    /// * it is only in the 1.x `session` table, and 2.x's one-time import of the 1.x sessions
    ///   (`kv` `migration.v1-v2`) has already run: a 1.x OpenCode wrote it afterwards, and 2.x
    ///   never imports it (anomalyco/opencode #49641, #50130);
    /// * it is filed under `global`: 1.x's catch-all project for folders outside git, which the
    ///   import keeps, while 2.x gives every folder a project of its own (#50800, #50551).
    ///
    /// Only a missing project row is checked besides these: 2.x resolves folders by its own
    /// rules, which rewind does not assume.
    ///
    /// Gemini CLI's picker (`--resume`, `/resume`) lists the `session-*` files of the project's
    /// `chats` folder that it can load and that hold conversation (`hasResumableContent`: a
    /// prompt that is not a command or context it adds itself, or a reply). A file that cannot
    /// be loaded (a legacy JSON document cut short, a JSON-lines file whose metadata line is
    /// lost) is left out and its conversation with it: a warning. A file with nothing to resume
    /// is left out too, and Gemini CLI deletes such a file when its session ends: information.
    ///
    /// ## Why it matters
    /// "All my sessions are gone": the rows are intact in `opencode.db`, yet `opencode session
    /// list` and the TUI do not show them. Nothing is lost; the session is filed where no list
    /// looks.
    ///
    /// ## Example
    /// ```text
    /// session  ses_a1  project_id = 'global'  directory = '/home/me/app'
    /// project  4f2c…   worktree   = '/home/me/app'  vcs = 'git'
    /// ```
    ///
    /// ## How to fix
    /// Close OpenCode and run `rewind repair opencode.db`: it files each hidden session under
    /// the project OpenCode resolves for its folder (`--project ID` to choose one), merges the
    /// sessions of duplicate project rows into the one OpenCode resolves, and with
    /// `--relink OLD=NEW` gives sessions of a moved folder its new place. Nothing is deleted.
    /// By hand, after a backup of `opencode.db` with its `-wal` and `-shm` files:
    /// `UPDATE session SET project_id = '<id>', directory = '<folder>' WHERE id = '<session>';`
    pub struct SessionHidden {
        name: "session-hidden",
        severity: Warning,
        summary: "The client's session list would not show this session",
        fix: "the session's `project_id` is set to the project OpenCode resolves for its folder (or `--project ID`; duplicate project rows are merged this way); with `--relink OLD=NEW`, a moved folder's sessions get its new place. Rows are updated, never deleted",
    }
}

/// Why OpenCode's session list would not show a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hidden {
    /// No `project` row has the session's `project_id`.
    NoProject { project_id: String },
    /// Other `project` rows claim the same worktree; OpenCode resolves it to `shown` (for
    /// certain when `certain`: the folder is on this machine and was resolved as OpenCode does;
    /// otherwise `shown` is the row OpenCode touched last).
    SharedWorktree {
        worktree: String,
        shown: String,
        certain: bool,
    },
    /// The session's folder is not under its project's worktree.
    Moved { directory: String, worktree: String },
    /// The session's folder is under its project's worktree but written differently.
    Form {
        directory: String,
        worktree: String,
        how: &'static str,
    },
    /// Only in the 1.x tables of a store whose 1.x sessions OpenCode 2.x already imported.
    NotImported,
    /// A `session_v2` row filed under 1.x's catch-all project `global`.
    GlobalInV2 { directory: String },
    /// Filed under `global`, while its folder is inside the git project `project`.
    GlobalInsideGit {
        directory: String,
        project: String,
        worktree: String,
        /// `project` is the only row for that worktree, or the folder was resolved here.
        certain: bool,
    },
}

impl Hidden {
    /// The session is hidden only from lists by folder: the project's list still shows it.
    pub fn by_folder_only(&self) -> bool {
        matches!(self, Hidden::Moved { .. } | Hidden::Form { .. })
    }

    /// Why, in one sentence.
    pub fn reason(&self) -> String {
        match self {
            Hidden::NoProject { project_id } => {
                format!("its project `{project_id}` has no `project` row")
            }
            Hidden::SharedWorktree {
                worktree,
                shown,
                certain: true,
            } => format!(
                "another project claims its worktree `{worktree}`, and OpenCode resolves that folder to `{shown}`"
            ),
            Hidden::SharedWorktree {
                worktree, shown, ..
            } => format!(
                "another project claims its worktree `{worktree}`, and OpenCode last opened that folder as `{shown}`"
            ),
            Hidden::Moved {
                directory,
                worktree,
            } => format!(
                "its folder `{directory}` is not under its project's worktree `{worktree}` (moved or renamed)"
            ),
            Hidden::Form {
                directory,
                worktree,
                how,
            } => format!(
                "its folder `{directory}` differs from its project's worktree `{worktree}` only by {how}"
            ),
            Hidden::NotImported => "it is only in OpenCode 1.x's `session` table, written after OpenCode 2.x imported the 1.x sessions (`kv` `migration.v1-v2` is completed), and 2.x lists only `session_v2`".to_owned(),
            Hidden::GlobalInV2 { directory } => format!(
                "it is filed under 1.x's catch-all project `global`, but OpenCode 2.x gives its folder `{directory}` a project of its own and lists by project"
            ),
            Hidden::GlobalInsideGit {
                directory,
                project,
                worktree,
                ..
            } => format!(
                "it is filed under `global`, but its folder `{directory}` is inside the git project `{project}` (`{worktree}`)"
            ),
        }
    }

    /// Where the session would still appear, in words.
    pub fn appears(&self) -> String {
        match self {
            Hidden::NoProject { .. } => {
                "in no list, until OpenCode resolves a folder to that project id again".to_owned()
            }
            Hidden::SharedWorktree { .. } => {
                "in no list while OpenCode resolves its worktree to the other project".to_owned()
            }
            Hidden::Moved { worktree, .. } => format!(
                "in the list of `{worktree}`, but in no list of its own folder, which the project no longer claims"
            ),
            Hidden::Form { .. } => {
                "in the project's list, but in no list by folder (it matches folders exactly)"
                    .to_owned()
            }
            Hidden::GlobalInsideGit { .. } => {
                "only when OpenCode runs outside any git repository (project `global`)".to_owned()
            }
            Hidden::NotImported => {
                "in OpenCode 1.x's lists, but in no list of OpenCode 2.x".to_owned()
            }
            Hidden::GlobalInV2 { .. } => {
                "in OpenCode 2.x's list of every session (\"show all\"), but not in its folder's".to_owned()
            }
        }
    }
}

impl Check for SessionHidden {
    fn fix(&self, f: &Finding, ctx: &mut FixContext<'_>) -> Fix {
        let session = ctx.session;
        let Some(why) = hidden(session, ctx.projects, ctx.here) else {
            return Fix::Skipped;
        };
        let directory = session.directory.clone().unwrap_or_default();
        let from = session.project_id.clone().unwrap_or_default();
        if why == Hidden::NotImported {
            ctx.unfixable(format!(
                "session {}: {}; rewind does not convert 1.x rows to 2.x's: export it with OpenCode 1.x (`opencode export {}`) and import the file with OpenCode 2.x (`opencode import FILE`)",
                session.id,
                why.reason(),
                crate::text::shell_quote(&session.id)
            ));
            return Fix::Unfixable;
        }
        if why.by_folder_only() {
            let Some(new) =
                relinked(&directory, &ctx.relink.folders).filter(|new| *new != directory)
            else {
                ctx.unfixable(format!(
                    "session {}: {}; pass --relink OLD=NEW with the folder's new place",
                    session.id,
                    why.reason()
                ));
                return Fix::Unfixable;
            };
            let words = format!("directory `{directory}` → `{new}`");
            return ctx.update_session(f, None, Some(new), words);
        }
        let target = match (&ctx.relink.project, &why) {
            (Some(p), _) => Some(p.clone()),
            (
                None,
                Hidden::SharedWorktree {
                    shown,
                    certain: true,
                    ..
                },
            ) => Some(shown.clone()),
            (
                None,
                Hidden::GlobalInsideGit {
                    project,
                    certain: true,
                    ..
                },
            ) => Some(project.clone()),
            (None, Hidden::SharedWorktree { .. } | Hidden::GlobalInsideGit { .. }) => None,
            (None, Hidden::NoProject { .. }) => resolved_row(&directory, ctx.projects, ctx.here),
            // The folder's own project: 2.x creates it the first time it runs there.
            (None, Hidden::GlobalInV2 { .. }) => folder_project(&directory, ctx.projects)
                .or_else(|| resolved_row(&directory, ctx.projects, ctx.here))
                .filter(|p| p != "global"),
            (None, Hidden::NotImported) => None,
            (None, Hidden::Moved { .. } | Hidden::Form { .. }) => None,
        };
        let Some(target) = target.filter(|t| ctx.projects.iter().any(|p| &p.id == t)) else {
            ctx.unfixable(format!(
                "session {}: {}; rewind cannot tell which project OpenCode resolves for `{directory}` (open OpenCode once in that folder so it records its project, then repair again; or pass --project ID)",
                session.id,
                why.reason()
            ));
            return Fix::Unfixable;
        };
        if target == from {
            return Fix::Skipped;
        }
        let words = format!("project_id `{from}` → `{target}` (listed again in `{directory}`)");
        ctx.update_session(f, Some(target), None, words)
    }

    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        if let Some(facts) = analysis.transcript.as_deref() {
            let session = analysis.sessions.first().map(|s| s.id.clone());
            for u in &facts.unlisted {
                let mut f = Self::META
                    .finding(format!(
                        "{}'s resume picker would not show session `{}`: {}",
                        facts.client,
                        session.as_deref().unwrap_or("?"),
                        u.why
                    ))
                    .at(u.span, "here")
                    .severity(if u.lost {
                        Severity::Warning
                    } else {
                        Severity::Info
                    });
                for n in &u.notes {
                    f = f.note(n.clone());
                }
                let ids = match &session {
                    Some(s) => Ids::default().session(s.clone()),
                    None => Ids::default(),
                };
                out.push(f.ids(ids));
            }
        }
        let Some(projects) = analysis.projects.as_deref() else {
            return;
        };
        for session in &analysis.sessions {
            let Some(why) = hidden(session, projects, &analysis.here) else {
                continue;
            };
            // A folder that moved or is written differently hides the session from lists by
            // folder only; the project's list still shows it.
            let (severity, list) = if why.by_folder_only() {
                (Severity::Info, "OpenCode's session list by folder")
            } else {
                (Severity::Warning, "OpenCode's session list")
            };
            out.push(
                Self::META
                    .finding(format!(
                        "{list} would not show session `{}`: {}",
                        session.id,
                        why.reason()
                    ))
                    .note(format!("it would appear {}", why.appears()))
                    .note("its rows are intact; nothing is lost")
                    .help(if why.by_folder_only() {
                        "`rewind repair --relink OLD=NEW` gives the sessions of a moved folder its new place"
                    } else {
                        "`rewind repair` files it under the project OpenCode resolves for its folder"
                    })
                    .ids(Ids::default().session(session.id.clone()))
                    .severity(severity),
            );
        }
    }
}

/// Why OpenCode's list would not show `session`, given every project of its database; `None`
/// when it would (or when the session is a child, listed under its parent).
pub fn hidden(session: &Session, projects: &[Project], here: &FoldersHere) -> Option<Hidden> {
    if session.parent_id.is_some() {
        return None;
    }
    if session.generation == Some(Generation::V1Only { imported: true }) {
        return Some(Hidden::NotImported);
    }
    let project_id = session.project_id.as_deref()?;
    let Some(project) = projects.iter().find(|p| p.id == project_id) else {
        return Some(Hidden::NoProject {
            project_id: project_id.to_owned(),
        });
    };
    match session.generation {
        Some(Generation::V2) if project.id == "global" => {
            return Some(Hidden::GlobalInV2 {
                directory: session.directory.clone().unwrap_or_default(),
            });
        }
        // 2.x resolves folders by its own rules: nothing more is assumed.
        Some(Generation::V2) => return None,
        // A 1.x session 2.x has not imported yet: it will be, with its 1.x project.
        Some(Generation::V1Only { .. }) | None => {}
    }
    let directory = session.directory.as_deref().unwrap_or_default();
    if project.id == "global" {
        let dir = canonical(directory);
        if dir.is_empty() {
            return None;
        }
        let inside = projects
            .iter()
            .filter(|p| p.id != "global" && p.vcs.as_deref() == Some("git"))
            .flat_map(|p| {
                p.worktree
                    .iter()
                    .chain(&p.folders)
                    .map(move |f| (p, canonical(f)))
            })
            .filter(|(_, wt)| !wt.is_empty() && wt != "/" && under(&dir, wt))
            .max_by_key(|(_, wt)| wt.len())?;
        // `Project.fromDirectory` files the `global` sessions whose folder is exactly the
        // worktree under the project each time OpenCode opens it: those come back by themselves.
        if inside.0.worktree.as_deref() == Some(directory) {
            return None;
        }
        let worktree = inside.0.worktree.clone().unwrap_or_default();
        let (project, certain) =
            shown_for(&worktree, projects, here).unwrap_or_else(|| (inside.0.id.clone(), false));
        return Some(Hidden::GlobalInsideGit {
            directory: directory.to_owned(),
            project,
            worktree,
            certain,
        });
    }
    let worktree_raw = project.worktree.as_deref().unwrap_or_default();
    let worktree = canonical(worktree_raw);
    if !worktree.is_empty()
        && worktree != "/"
        && let Some((shown, certain)) = shown_for(worktree_raw, projects, here)
        && shown != project.id
    {
        return Some(Hidden::SharedWorktree {
            worktree: worktree_raw.to_owned(),
            shown,
            certain,
        });
    }
    if worktree.is_empty() || worktree == "/" {
        return None;
    }
    let form = |how| {
        Some(Hidden::Form {
            directory: directory.to_owned(),
            worktree: worktree_raw.to_owned(),
            how,
        })
    };
    if directory.trim().is_empty() {
        return form("being empty");
    }
    let dir = canonical(directory);
    let claimed = under(&dir, &worktree)
        || project
            .folders
            .iter()
            .map(|f| canonical(f))
            .any(|f| !f.is_empty() && under(&dir, &f));
    if !claimed {
        return Some(Hidden::Moved {
            directory: directory.to_owned(),
            worktree: worktree_raw.to_owned(),
        });
    }
    if directory.len() > 1 && (directory.ends_with('/') || directory.ends_with('\\')) {
        return form("a trailing slash");
    }
    if let (Some(a), Some(b)) = (drive(directory), drive(worktree_raw))
        && a != b
    {
        return form("the case of its drive letter");
    }
    None
}

/// The project OpenCode resolves `worktree` to, among the rows that claim it: the id it resolves
/// on this machine when the folder is here and a row has it, else the row OpenCode touched last;
/// and whether that is certain (resolved here, or the only row).
fn shown_for(worktree: &str, projects: &[Project], here: &FoldersHere) -> Option<(String, bool)> {
    let canon = canonical(worktree);
    let claiming: Vec<&Project> = projects
        .iter()
        .filter(|p| p.worktree.as_deref().map(canonical).as_deref() == Some(&*canon))
        .collect();
    // One row: it is the one listed, whatever the folder resolves to (nothing to read).
    if let [only] = claiming.as_slice() {
        return Some((only.id.clone(), true));
    }
    let here = here.resolve(worktree)
        .map(|r| r.id)
        .filter(|id| claiming.iter().any(|p| &p.id == id));
    if let Some(id) = here {
        return Some((id, true));
    }
    claiming
        .iter()
        .max_by(|a, b| {
            a.time_updated
                .cmp(&b.time_updated)
                .then_with(|| b.id.cmp(&a.id))
        })
        .map(|p| (p.id.clone(), false))
}

/// The project whose worktree is exactly `directory` (not `global`): the one OpenCode 2.x makes
/// for a folder outside git.
fn folder_project(directory: &str, projects: &[Project]) -> Option<String> {
    let dir = canonical(directory);
    let mut claiming = projects.iter().filter(|p| {
        p.id != "global" && p.worktree.as_deref().map(canonical).as_deref() == Some(&*dir)
    });
    let first = claiming.next()?;
    claiming.next().is_none().then(|| first.id.clone())
}

/// The project row a session of `directory` belongs to: the id OpenCode resolves for the
/// folder on this machine when a row has it, else the row whose worktree (or other folder) holds
/// the folder most closely, else `global` when the folder is here and outside git.
fn resolved_row(directory: &str, projects: &[Project], folders: &FoldersHere) -> Option<String> {
    let here = folders.resolve(directory);
    if let Some(r) = &here
        && r.id != "global"
        && projects.iter().any(|p| p.id == r.id)
    {
        return Some(r.id.clone());
    }
    let dir = canonical(directory);
    if !dir.is_empty()
        && let Some((p, wt)) = projects
            .iter()
            .filter(|p| p.id != "global")
            .flat_map(|p| p.worktree.iter().chain(&p.folders).map(move |f| (p, canonical(f))))
            .filter(|(_, wt)| !wt.is_empty() && wt != "/" && under(&dir, wt))
            .max_by_key(|(_, wt)| wt.len())
    {
        // Only when one row claims that folder: between several, a guess could hide the session
        // again.
        let claims = |q: &Project| {
            q.worktree
                .iter()
                .chain(&q.folders)
                .any(|f| canonical(f) == wt)
        };
        if projects.iter().filter(|q| claims(q)).count() == 1 {
            return Some(p.id.clone());
        }
        return shown_for(&wt, projects, folders).filter(|(_, c)| *c).map(|(id, _)| id);
    }
    here.filter(|r| r.id == "global").map(|r| r.id)
}

/// `directory` under the new folder of the first `OLD=NEW` pair that holds it.
fn relinked(directory: &str, folders: &[(String, String)]) -> Option<String> {
    let dir = canonical(directory);
    folders.iter().find_map(|(old, new)| {
        let old = canonical(old);
        if !under(&dir, &old) {
            return None;
        }
        let rest = &dir[old.len()..];
        let new = canonical(new);
        let rest = rest.trim_start_matches('/');
        Some(if rest.is_empty() {
            new
        } else if new.ends_with('/') {
            format!("{new}{rest}")
        } else {
            format!("{new}/{rest}")
        })
    })
}

/// `dir` is `root` or inside it (both canonical).
fn under(dir: &str, root: &str) -> bool {
    dir == root
        || dir
            .strip_prefix(root)
            .is_some_and(|rest| root.ends_with('/') || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(id: &str, worktree: &str, updated: i64) -> Project {
        Project {
            id: id.into(),
            worktree: Some(worktree.into()),
            vcs: (id != "global").then(|| "git".into()),
            time_updated: Some(updated),
            folders: vec![format!("{worktree}-ui")],
        }
    }

    fn session(project_id: &str, directory: &str) -> Session {
        Session {
            id: "ses_1".into(),
            project_id: Some(project_id.into()),
            directory: Some(directory.into()),
            ..Session::default()
        }
    }

    fn why(project_id: &str, directory: &str) -> Option<Hidden> {
        let projects = [
            project("global", "/", 1),
            project("p_app", "/home/me/app", 5),
            project("p_old", "/home/me/dup", 1),
            project("p_new", "/home/me/dup/", 9),
            project("p_win", "C:\\src\\tool", 1),
        ];
        hidden(&session(project_id, directory), &projects, &FoldersHere::default())
    }

    #[test]
    fn listed_sessions_are_not_reported() {
        assert_eq!(why("p_app", "/home/me/app"), None);
        assert_eq!(why("p_app", "/home/me/app/sub"), None);
        assert_eq!(why("global", "/tmp/scratch"), None);
        assert_eq!(why("p_new", "/home/me/dup"), None);
        assert_eq!(why("p_win", "C:\\src\\tool\\x"), None);
        assert_eq!(why("p_app", "/home/me/app-ui/web"), None, "a git worktree");
        let mut child = session("p_gone", "/x");
        child.parent_id = Some("ses_0".into());
        assert_eq!(hidden(&child, &[], &FoldersHere::default()), None);
    }

    #[test]
    fn each_cause_is_told() {
        assert!(matches!(why("p_gone", "/x"), Some(Hidden::NoProject { .. })));
        assert!(matches!(
            why("p_old", "/home/me/dup"),
            Some(Hidden::SharedWorktree { shown, .. }) if shown == "p_new"
        ));
        assert!(matches!(
            why("p_app", "/home/me/application"),
            Some(Hidden::Moved { .. })
        ));
        assert!(matches!(
            why("p_app", "/home/me/app/"),
            Some(Hidden::Form { how: "a trailing slash", .. })
        ));
        assert!(matches!(
            why("p_win", "c:\\src\\tool"),
            Some(Hidden::Form { how: "the case of its drive letter", .. })
        ));
        assert!(matches!(
            why("p_app", ""),
            Some(Hidden::Form { how: "being empty", .. })
        ));
        assert!(matches!(
            why("global", "/home/me/app/src"),
            Some(Hidden::GlobalInsideGit { project, .. }) if project == "p_app"
        ));
    }

    #[test]
    fn folders_compare_in_one_form() {
        assert_eq!(canonical("c:\\a\\b\\"), "C:/a/b");
        assert_eq!(canonical("/"), "/");
        assert_eq!(canonical("C:/"), "C:/");
        assert!(under("/a/b", "/a"));
        assert!(!under("/ab", "/a"));
        assert!(under("C:/x", "C:/"));
    }
}
