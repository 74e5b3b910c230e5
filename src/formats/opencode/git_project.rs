//! The project id OpenCode resolves for a folder on this machine, read the way OpenCode reads it
//! (`Project.fromDirectory`): the nearest `.git` above the folder; the id cached in
//! `<.git>/opencode` (or in the main worktree's `.git/opencode` for a linked git worktree);
//! otherwise the smallest root commit of `HEAD` (`git rev-list --max-parents=0 HEAD`, sorted),
//! which OpenCode then caches there. A folder with no `.git` above it resolves to `global`.
//!
//! Only reads: the cache file and `git rev-list`. A folder that does not exist here (a store
//! copied from another machine) resolves to nothing, and callers fall back on what the store
//! says. Results are memoised per folder for the life of the process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};

pub use crate::session::Resolved;
use crate::session::{Analysis, FoldersHere, Project, canonical_folder};

fn memo() -> &'static Mutex<HashMap<PathBuf, Option<Resolved>>> {
    static MEMO: OnceLock<Mutex<HashMap<PathBuf, Option<Resolved>>>> = OnceLock::new();
    MEMO.get_or_init(Mutex::default)
}

/// The project OpenCode resolves for `folder` on this machine; `None` when the folder is not
/// here (or is not absolute), or when its repository's id cannot be read.
pub fn resolve(folder: &str) -> Option<Resolved> {
    let folder = Path::new(folder);
    if !folder.is_absolute() {
        return None;
    }
    if let Ok(m) = memo().lock()
        && let Some(r) = m.get(folder)
    {
        return r.clone();
    }
    let r = resolve_uncached(folder);
    if let Ok(mut m) = memo().lock() {
        m.insert(folder.to_path_buf(), r.clone());
    }
    r
}

fn resolve_uncached(folder: &Path) -> Option<Resolved> {
    if !folder.is_dir() {
        return None;
    }
    let Some(dotgit) = folder
        .ancestors()
        .map(|a| a.join(".git"))
        .find(|g| g.exists())
    else {
        return Some(Resolved {
            id: "global".into(),
            worktree: PathBuf::from("/"),
        });
    };
    let sandbox = dotgit.parent()?.to_path_buf();
    // A linked worktree's `.git` is a file `gitdir: <dir>`; its `commondir` names the main
    // repository's `.git`.
    let common = if dotgit.is_dir() {
        dotgit.clone()
    } else {
        let text = std::fs::read_to_string(&dotgit).ok()?;
        let gitdir = sandbox.join(text.trim().strip_prefix("gitdir:")?.trim());
        let common = std::fs::read_to_string(gitdir.join("commondir"))
            .ok()
            .map_or_else(|| gitdir.clone(), |c| gitdir.join(c.trim()));
        std::fs::canonicalize(&common).unwrap_or(common)
    };
    let worktree = if common == dotgit {
        sandbox.clone()
    } else {
        common.parent()?.to_path_buf()
    };
    let cached = |dir: &Path| {
        std::fs::read_to_string(dir.join("opencode"))
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let id = cached(&dotgit)
        .or_else(|| cached(&worktree.join(".git")))
        .or_else(|| root_commit(&sandbox))?;
    Some(Resolved { id, worktree })
}

/// The smallest root commit of `HEAD` in `dir`, as OpenCode picks it.
fn root_commit(dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["rev-list", "--max-parents=0", "HEAD"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let mut roots: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    roots.sort_unstable();
    roots.first().map(|r| (*r).to_owned())
}

/// Hands `analysis` the store's project rows and what `session-hidden` needs to know of this
/// machine: how OpenCode resolves the folders whose resolution can decide something. Those are
/// a worktree that several project rows claim (as written, and in canonical form; one row's
/// worktree is listed whatever it resolves to), and the folder of a session filed under no row
/// or under `global`. Resolving reads `.git` and may start `git`, so nothing else is resolved.
pub fn attach(analysis: &mut Analysis, projects: &Option<Arc<[Project]>>) {
    analysis.projects.clone_from(projects);
    let Some(projects) = projects else {
        return;
    };
    let mut claims: HashMap<String, Vec<&str>> = HashMap::new();
    for p in projects.iter() {
        if let Some(w) = &p.worktree {
            claims.entry(canonical_folder(w)).or_default().push(w);
        }
    }
    let mut folders: Vec<String> = Vec::new();
    for (canonical, raw) in claims {
        if raw.len() > 1 {
            folders.extend(raw.into_iter().map(str::to_owned));
            folders.push(canonical);
        }
    }
    let filed = |s: &crate::session::Session| {
        s.project_id
            .as_deref()
            .is_some_and(|id| id != "global" && projects.iter().any(|p| p.id == id))
    };
    folders.extend(
        analysis
            .sessions
            .iter()
            .filter(|s| !filed(s))
            .filter_map(|s| s.directory.clone()),
    );
    let mut here = FoldersHere::default();
    for folder in folders {
        if let std::collections::hash_map::Entry::Vacant(e) = here.0.entry(folder) {
            let resolved = resolve(e.key());
            e.insert(resolved);
        }
    }
    analysis.here = here;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_is_not_here_resolves_to_nothing() {
        assert_eq!(resolve("/nonexistent/rewind/test/folder"), None);
        assert_eq!(resolve("relative/folder"), None);
    }

    #[test]
    fn the_cached_id_wins_and_subfolders_share_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(repo.join(".git/opencode"), "abc123\n").unwrap();
        let r = resolve(repo.join("src/deep").to_str().unwrap()).unwrap();
        assert_eq!(r.id, "abc123");
        assert_eq!(r.worktree, repo);
    }

    #[test]
    fn a_linked_worktree_reads_the_main_repository_cache() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(main.join(".git/worktrees/linked")).unwrap();
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(main.join(".git/opencode"), "rootid").unwrap();
        std::fs::write(main.join(".git/worktrees/linked/commondir"), "../..").unwrap();
        std::fs::write(
            linked.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/linked").display()),
        )
        .unwrap();
        let r = resolve(linked.to_str().unwrap()).unwrap();
        assert_eq!(r.id, "rootid");
        assert_eq!(
            r.worktree,
            std::fs::canonicalize(&main).unwrap_or(main.clone())
        );
    }
}
