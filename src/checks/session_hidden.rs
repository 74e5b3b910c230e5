use super::Check;
use crate::diagnostic::{Finding, Ids, Severity};
use crate::session::{Analysis, Project, Session};

declare_check! {
    /// ## What it does
    /// Reports a session of an OpenCode database that OpenCode's session list would not show,
    /// and says why. OpenCode lists the root sessions (no `parent_id`) of one project: the
    /// project it resolves for the folder it runs in (the git root commit id since 1.2.21,
    /// `global` outside git), optionally only those whose `directory` equals the folder, newest
    /// `time_updated` first. A session is not listed when:
    ///
    /// * its `project_id` names no `project` row;
    /// * another `project` row claims the same worktree: OpenCode resolves that folder to one of
    ///   them (the one it opened last), and the sessions of the others are never listed;
    /// * it is filed under `global` while its `directory` is inside a git project: run in that
    ///   folder, OpenCode lists the git project's sessions, not `global`'s;
    /// * its `directory` is not under its project's worktree nor any of its other folders (git
    ///   worktrees, `project_directory`): the folder was moved or renamed;
    /// * its `directory` differs from the folder only by its form (a trailing slash, another
    ///   drive-letter case, or empty), so a list by folder never matches it.
    ///
    /// The last two hide the session only from lists by folder (the project's list still
    /// shows it): they are reported as info.
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
    /// Close OpenCode and back up `opencode.db` with its `-wal` and `-shm` files. Then file the
    /// session under the project OpenCode resolves for its folder and, if needed, give it that
    /// folder as it is written now:
    /// `UPDATE session SET project_id = '<id>', directory = '<folder>' WHERE id = '<session>';`
    pub struct SessionHidden {
        name: "session-hidden",
        severity: Warning,
        summary: "OpenCode's session list would not show this session",
    }
}

/// Why OpenCode's session list would not show a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hidden {
    /// No `project` row has the session's `project_id`.
    NoProject { project_id: String },
    /// Other `project` rows claim the same worktree; OpenCode resolves it to `shown`.
    SharedWorktree { worktree: String, shown: String },
    /// The session's folder is not under its project's worktree.
    Moved { directory: String, worktree: String },
    /// The session's folder is under its project's worktree but written differently.
    Form {
        directory: String,
        worktree: String,
        how: &'static str,
    },
    /// Filed under `global`, while its folder is inside the git project `project`.
    GlobalInsideGit {
        directory: String,
        project: String,
        worktree: String,
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
            Hidden::SharedWorktree { worktree, shown } => format!(
                "another project claims its worktree `{worktree}`, and OpenCode resolves that folder to `{shown}`"
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
            Hidden::GlobalInsideGit {
                directory,
                project,
                worktree,
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
        }
    }
}

impl Check for SessionHidden {
    fn run(&self, analysis: &Analysis, out: &mut Vec<Finding>) {
        let Some(projects) = analysis.projects.as_deref() else {
            return;
        };
        for session in &analysis.sessions {
            let Some(why) = hidden(session, projects) else {
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
                    .help("`rewind explain session-hidden` gives the SQL that files it under the right project")
                    .ids(Ids::default().session(session.id.clone()))
                    .severity(severity),
            );
        }
    }
}

/// Why OpenCode's list would not show `session`, given every project of its database; `None`
/// when it would (or when the session is a child, listed under its parent).
pub fn hidden(session: &Session, projects: &[Project]) -> Option<Hidden> {
    if session.parent_id.is_some() {
        return None;
    }
    let project_id = session.project_id.as_deref()?;
    let Some(project) = projects.iter().find(|p| p.id == project_id) else {
        return Some(Hidden::NoProject {
            project_id: project_id.to_owned(),
        });
    };
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
        return Some(Hidden::GlobalInsideGit {
            directory: directory.to_owned(),
            project: inside.0.id.clone(),
            worktree: inside.0.worktree.clone().unwrap_or_default(),
        });
    }
    let worktree_raw = project.worktree.as_deref().unwrap_or_default();
    let worktree = canonical(worktree_raw);
    if !worktree.is_empty() && worktree != "/" {
        let shown = projects
            .iter()
            .filter(|p| p.worktree.as_deref().map(canonical).as_deref() == Some(&*worktree))
            .max_by(|a, b| {
                a.time_updated
                    .cmp(&b.time_updated)
                    .then_with(|| b.id.cmp(&a.id))
            });
        if let Some(shown) = shown
            && shown.id != project.id
        {
            return Some(Hidden::SharedWorktree {
                worktree: worktree_raw.to_owned(),
                shown: shown.id.clone(),
            });
        }
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

/// The drive letter of a Windows path (`C:\…`, `c:/…`).
fn drive(path: &str) -> Option<char> {
    let mut chars = path.chars();
    let letter = chars.next().filter(char::is_ascii_alphabetic)?;
    (chars.next() == Some(':')).then_some(letter)
}

/// A folder in one form: `/` separators, no trailing slash, an upper-case drive letter.
fn canonical(path: &str) -> String {
    let mut p = path.trim().replace('\\', "/");
    while p.len() > 1 && p.ends_with('/') && !p.ends_with(":/") {
        p.pop();
    }
    if let Some(letter) = drive(&p) {
        p.replace_range(..1, &letter.to_ascii_uppercase().to_string());
    }
    p
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
        hidden(&session(project_id, directory), &projects)
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
        assert_eq!(hidden(&child, &[]), None);
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
