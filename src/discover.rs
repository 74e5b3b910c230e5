//! Finding the recordings to check: files, folders (walked like ripgrep walks them: `.gitignore`
//! and `.ignore` respected, hidden files skipped) and glob patterns (`'recordings/**/*.sse'`).

use std::path::{Path, PathBuf};

use globset::Glob;
use ignore::WalkBuilder;

/// A file found, with its shard key: its path below the root it was found under (see
/// [`crate::shard::key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    pub key: String,
}

/// What discovery found.
#[derive(Debug, Default)]
pub struct Found {
    /// Files named explicitly: errors about them are errors.
    pub explicit: Vec<Candidate>,
    /// Files found by walking: those that are not recordings are skipped.
    pub walked: Vec<Candidate>,
    /// Arguments that matched nothing: (argument, why).
    pub missing: Vec<(String, String)>,
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Hidden folders where the agents keep their sessions: a walk enters them (and, under
/// `.local`, only `share/opencode` and `share/kilo`) although it skips every other hidden file.
const AGENT_STORES: &[&str] = &[".claude", ".codex", ".copilot", ".gemini"];

/// Whether a walk from its root enters the entry at `rel` (its path below the root): hidden
/// entries are skipped as ripgrep skips them, except the agents' stores and what they hold.
fn enters(rel: &Path) -> bool {
    let parts: Vec<&str> = rel.iter().map(|c| c.to_str().unwrap_or_default()).collect();
    if let Some(k) = parts.iter().position(|c| *c == ".local") {
        return matches!(
            &parts[k + 1..],
            [] | ["share"] | ["share", "opencode" | "kilo", ..]
        );
    }
    let mut store = false;
    for part in &parts {
        if AGENT_STORES.contains(part) {
            store = true;
        } else if part.starts_with('.') && !store {
            return false;
        }
    }
    true
}

fn walker(root: &Path) -> ignore::Walk {
    let base = root.to_path_buf();
    WalkBuilder::new(root)
        .require_git(false)
        .follow_links(false)
        .hidden(false)
        .filter_entry(move |e| enters(e.path().strip_prefix(&base).unwrap_or(e.path())))
        .sort_by_file_path(|a, b| a.cmp(b))
        .build()
}

/// Expands `args` into files.
pub fn discover(args: &[PathBuf]) -> Found {
    let mut found = Found::default();
    for arg in args {
        let text = arg.to_string_lossy();
        if crate::ingest::input::is_stdin(arg) {
            found.explicit.push(Candidate {
                path: arg.clone(),
                key: "-".to_owned(),
            });
            continue;
        }
        if is_glob(&text) && !arg.exists() {
            // Walk from the longest literal prefix and keep what the pattern matches.
            let literal: PathBuf = arg
                .components()
                .take_while(|c| !is_glob(&c.as_os_str().to_string_lossy()))
                .collect();
            let root = if literal.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                literal
            };
            let matcher = match Glob::new(&text) {
                Ok(g) => g.compile_matcher(),
                Err(e) => {
                    found
                        .missing
                        .push((text.into_owned(), format!("bad pattern: {e}")));
                    continue;
                }
            };
            let before = found.walked.len();
            for entry in walker(&root).flatten() {
                let p = entry.path();
                let shown = p.strip_prefix("./").unwrap_or(p);
                if entry.file_type().is_some_and(|t| t.is_file()) && matcher.is_match(shown) {
                    found.walked.push(Candidate {
                        key: crate::shard::key(&root, p),
                        path: shown.to_path_buf(),
                    });
                }
            }
            if found.walked.len() == before {
                found
                    .missing
                    .push((text.into_owned(), "no file matches this pattern".into()));
            }
            continue;
        }
        match std::fs::metadata(arg) {
            Err(e) => found.missing.push((text.into_owned(), e.to_string())),
            Ok(m) if m.is_dir() => {
                for entry in walker(arg).flatten() {
                    if entry.file_type().is_some_and(|t| t.is_file()) {
                        found.walked.push(Candidate {
                            key: crate::shard::key(arg, entry.path()),
                            path: entry.into_path(),
                        });
                    }
                }
            }
            Ok(_) => found.explicit.push(Candidate {
                path: arg.clone(),
                key: crate::shard::key(arg, arg),
            }),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paths of `walked`, below `root`.
    fn relative_names(walked: &[Candidate], root: &std::path::Path) -> Vec<String> {
        walked
            .iter()
            .map(|c| {
                c.path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    #[test]
    fn walks_folders_respecting_gitignore_and_globs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("rec/sub")).unwrap();
        std::fs::create_dir_all(d.join("rec/.hidden")).unwrap();
        for f in [
            "rec/a.sse",
            "rec/sub/b.log",
            "rec/skip.log",
            "rec/.hidden/c.sse",
        ] {
            std::fs::write(d.join(f), "data: {}\n\n").unwrap();
        }
        std::fs::write(d.join("rec/.gitignore"), "skip.log\n").unwrap();
        let found = discover(&[d.join("rec")]);
        let names = relative_names(&found.walked, d);
        assert_eq!(names, ["rec/a.sse", "rec/sub/b.log"]);

        let pattern = d.join("rec/**/*.log");
        let found = discover(&[pattern]);
        assert_eq!(found.walked.len(), 1);
        assert!(found.walked[0].path.ends_with("sub/b.log"));
        assert_eq!(found.walked[0].key, "sub/b.log");

        let found = discover(&[d.join("nope"), d.join("rec/a.sse")]);
        assert_eq!(found.missing.len(), 1);
        assert_eq!(found.explicit.len(), 1);
    }

    #[test]
    fn walks_into_the_agents_hidden_stores_only() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for f in [
            ".claude/projects/-home-me-app/s1.jsonl",
            ".codex/sessions/2026/11/28/rollout-1.jsonl",
            ".local/share/opencode/opencode.db",
            ".local/share/other/x.log",
            ".cache/y.log",
            "work/.git/z.log",
            "work/a.log",
        ] {
            let p = d.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let found = discover(&[d.to_path_buf()]);
        let names = relative_names(&found.walked, d);
        assert_eq!(
            names,
            [
                ".claude/projects/-home-me-app/s1.jsonl",
                ".codex/sessions/2026/11/28/rollout-1.jsonl",
                ".local/share/opencode/opencode.db",
                "work/a.log",
            ]
        );
    }
}
