//! Codex homes built from the SQL dumps and `layout` files of `tests/fixtures/codex-home/`
//! (see its README): each home's `state_5.sqlite` and `thread_history_1.sqlite` are the
//! recorded dumps plus the variant's `state.sql` / `history.sql`, and each path in its `layout`
//! is a copy of the recorded rollout. A `state_5.txt` becomes a `state_5.sqlite` that is not a
//! database.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::repo;

/// The recorded rollout every home's `layout` places.
pub const ROLLOUT: &str = "tests/fixtures/codex-home/rollout-2026-11-28T20-48-58-01a223eb-145e-7562-9121-ab33480ae7fb.jsonl";

/// Builds one home in `dir` from its `layout` (and `state.sql`, `history.sql`, `state_5.txt`).
pub fn build_home(dir: &Path) {
    let shared = repo("tests/fixtures/codex-home");
    for name in ["sessions", "archived_sessions"] {
        let _ = std::fs::remove_dir_all(dir.join(name));
    }
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.contains(".sqlite") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
    let db = |name: &str, dump: &str, extra: &str| {
        let conn = rusqlite::Connection::open(dir.join(name)).unwrap();
        conn.execute_batch(&std::fs::read_to_string(shared.join(dump)).unwrap())
            .unwrap();
        if let Ok(sql) = std::fs::read_to_string(dir.join(extra)) {
            conn.execute_batch(&sql).unwrap();
        }
    };
    match std::fs::read(dir.join("state_5.txt")) {
        Ok(text) => std::fs::write(dir.join("state_5.sqlite"), text).unwrap(),
        Err(_) => db("state_5.sqlite", "state_5.sql", "state.sql"),
    }
    db(
        "thread_history_1.sqlite",
        "thread_history_1.sql",
        "history.sql",
    );
    let layout = std::fs::read_to_string(dir.join("layout")).unwrap();
    for rel in layout.lines().filter(|l| !l.trim().is_empty()) {
        let to = dir.join(rel.trim());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo(ROLLOUT), to).unwrap();
    }
}

/// Builds every fixture home of the repository once per test process: the variants under
/// `tests/fixtures/codex-home/` and the rules' clean twins `tests/fixtures/rules/*.clean.codex`.
pub fn build_fixture_homes() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for parent in ["tests/fixtures/codex-home", "tests/fixtures/rules"] {
            for e in std::fs::read_dir(repo(parent)).unwrap().flatten() {
                if e.path().join("layout").is_file() {
                    dirs.push(e.path());
                }
            }
        }
        for d in dirs {
            build_home(&d);
        }
    });
}

/// A copy of fixture home `variant` in a fresh temporary folder (for tests that write to it).
pub fn temp_home(variant: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join(".codex");
    std::fs::create_dir_all(&home).unwrap();
    let from = repo("tests/fixtures/codex-home").join(variant);
    for f in ["layout", "state.sql", "history.sql", "state_5.txt"] {
        if from.join(f).is_file() {
            std::fs::copy(from.join(f), home.join(f)).unwrap();
        }
    }
    build_home(&home);
    // The rows name the rollouts where this home is, as Codex writes them.
    if let Ok(conn) = rusqlite::Connection::open(home.join("state_5.sqlite")) {
        let _ = conn.execute(
            "UPDATE threads SET rollout_path = replace(rollout_path, '/home/me/.codex', ?1)",
            [home.to_string_lossy()],
        );
    }
    (tmp, home)
}
