//! `session-hidden`: sessions whose rows are intact but that OpenCode's session list would not
//! show. One database per cause, built from OpenCode's DDL, and the healthy twin of each.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::opencode::*;
use common::*;
use rusqlite::{Connection, params};
use serde_json::Value;

/// A current database with one healthy session (`ses_healthy`, project `prj_1` at `/w`), then
/// `sql` run on it.
fn db_with(sql: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let healthy: Vec<Ses> = sessions()
        .into_iter()
        .filter(|s| s.id == "ses_healthy")
        .collect();
    let path = build_db(&dir.path().join("opencode.db"), &healthy);
    let conn = Connection::open(&path).unwrap();
    // Rows that break a foreign key arrive the way OpenCode's own migrations write them: with
    // the keys off.
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    conn.execute_batch(sql).unwrap();
    (dir, path)
}

/// `(severity, message)` of each `session-hidden` finding.
fn hidden_findings(db: &Path) -> Vec<(String, String)> {
    let (code, doc) = diagnose_json(db, &["--select", "session-hidden"]);
    assert!(code == 0 || code == 1, "exit {code}");
    of_rule(&findings(&doc), "session-hidden")
        .iter()
        .map(|f| {
            assert_eq!(f["session_id"], "ses_healthy");
            (
                f["severity"].as_str().unwrap().to_owned(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn hidden_messages(db: &Path) -> Vec<String> {
    hidden_findings(db).into_iter().map(|(_, m)| m).collect()
}

/// Hidden from every list of its folder (warning), or only from lists by folder (info).
fn assert_hidden(sql: &str, because: &str) {
    let (_dir, db) = db_with(sql);
    let found = hidden_findings(&db);
    assert_eq!(found.len(), 1, "{sql}: {found:?}");
    let (severity, message) = &found[0];
    assert!(message.contains(because), "{sql}: {message}");
    let by_folder = message.starts_with("OpenCode's session list by folder");
    assert_eq!(
        severity,
        if by_folder { "info" } else { "warning" },
        "{message}"
    );
    let folder_causes = ["not under its project's worktree", "only by"];
    assert_eq!(
        by_folder,
        folder_causes.iter().any(|c| because.contains(c)),
        "{message}"
    );
}

fn assert_listed(sql: &str) {
    let (_dir, db) = db_with(sql);
    assert_eq!(hidden_messages(&db), Vec::<String>::new(), "{sql}");
}

#[test]
fn a_session_under_its_project_is_listed() {
    assert_listed("");
    assert_listed("UPDATE session SET directory = '/w/packages/core'");
    // A second project elsewhere changes nothing.
    assert_listed(
        "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES ('prj_2', '/other', 'git', 0, 0, '[]')",
    );
}

#[test]
fn a_project_id_without_a_project_row() {
    assert_hidden(
        "UPDATE session SET project_id = 'prj_gone'",
        "its project `prj_gone` has no `project` row",
    );
}

#[test]
fn two_projects_claiming_one_worktree() {
    let both = "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES ('prj_2', '/w', 'git', 0, 9999999999999, '[]')";
    assert_hidden(
        both,
        "another project claims its worktree `/w`, and OpenCode last opened that folder as `prj_2`",
    );
    // The twin: the session is filed under the project OpenCode opened last.
    assert_listed(&format!("{both}; UPDATE session SET project_id = 'prj_2'"));
}

#[test]
fn a_folder_moved_away_from_its_worktree() {
    assert_hidden(
        "UPDATE session SET directory = '/old/w'",
        "its folder `/old/w` is not under its project's worktree `/w`",
    );
    // A sibling whose name starts like the worktree is not inside it.
    assert_hidden(
        "UPDATE session SET directory = '/w2'",
        "is not under its project's worktree",
    );
}

#[test]
fn a_git_worktree_or_further_folder_of_the_project_is_not_a_move() {
    assert_listed(
        "UPDATE project SET sandboxes = '[\"/w-feature\"]'; UPDATE session SET directory = '/w-feature/src'",
    );
    assert_listed(
        "CREATE TABLE `project_directory` (`project_id` text NOT NULL, `directory` text NOT NULL, `type` text, `strategy` text, `time_created` integer NOT NULL, CONSTRAINT `project_directory_pk` PRIMARY KEY(`project_id`, `directory`)); INSERT INTO project_directory VALUES ('prj_1', '/srv/w', NULL, NULL, 0); UPDATE session SET directory = '/srv/w'",
    );
    // A `sandboxes` value that is not an array of folders claims nothing.
    assert_hidden(
        "UPDATE project SET sandboxes = '{}'; UPDATE session SET directory = '/w-feature'",
        "is not under its project's worktree",
    );
}

#[test]
fn a_folder_written_in_another_form() {
    assert_hidden(
        "UPDATE session SET directory = '/w/'",
        "only by a trailing slash",
    );
    assert_hidden("UPDATE session SET directory = ''", "only by being empty");
    assert_hidden(
        "UPDATE project SET worktree = 'C:\\src\\w'; UPDATE session SET directory = 'c:\\src\\w'",
        "only by the case of its drive letter",
    );
    assert_listed(
        "UPDATE project SET worktree = 'C:\\src\\w'; UPDATE session SET directory = 'C:\\src\\w\\lib'",
    );
}

#[test]
fn a_global_session_inside_a_git_project() {
    let global = "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES ('global', '/', NULL, 0, 0, '[]'); UPDATE session SET project_id = 'global'";
    assert_hidden(
        &format!("{global}, directory = '/w/src'"),
        "it is filed under `global`, but its folder `/w/src` is inside the git project `prj_1` (`/w`)",
    );
    assert_listed(&format!("{global}, directory = '/tmp/scratch'"));
}

#[test]
fn child_sessions_are_listed_under_their_parent() {
    assert_listed("UPDATE session SET parent_id = 'ses_other', project_id = 'prj_gone'");
}

#[test]
fn a_database_without_projects_says_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = build_db_1_2(&dir.path().join("opencode.db"), &sessions());
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE project").unwrap();
    drop(conn);
    assert_eq!(hidden_messages(&path), Vec::<String>::new());
}

#[test]
fn the_sessions_command_marks_hidden_sessions_and_says_where_they_appear() {
    let (_dir, db) = db_with("");
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (?1, 'prj_gone', ?1, '/w', 'Lost', '1.18.33', ?2, ?2)",
        params!["ses_lost", T0],
    )
    .unwrap();
    drop(conn);
    let out = rewind()
        .args(["sessions", "--format", "json"])
        .arg(&db)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = doc["sessions"].as_array().unwrap();
    let of = |id: &str| list.iter().find(|s| s["id"] == id).unwrap();
    assert_eq!(of("ses_healthy")["listed"], true);
    assert!(of("ses_healthy").get("hidden").is_none());
    assert_eq!(of("ses_lost")["listed"], false);
    assert!(
        of("ses_lost")["hidden"]["appears"]
            .as_str()
            .unwrap()
            .contains("in no list")
    );
    // Wide enough for the table's cells and the notes to keep to one line.
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("sessions")
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(hidden from OpenCode's list)"), "{text}");
    assert!(text.contains("1 session OpenCode would not list"), "{text}");
    assert!(
        text.contains("ses_lost: its project `prj_gone` has no `project` row"),
        "{text}"
    );
}

#[test]
fn a_global_session_at_the_worktree_itself_comes_back_by_itself() {
    // OpenCode files it under the project the next time it opens that folder.
    assert_listed(
        "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES ('global', '/', NULL, 0, 0, '[]'); UPDATE session SET project_id = 'global', directory = '/w'",
    );
}

/// A git folder on this machine whose cached OpenCode id is `id`.
fn git_folder(dir: &Path, id: &str) -> String {
    let w = dir.join("repo");
    std::fs::create_dir_all(w.join(".git")).unwrap();
    std::fs::create_dir_all(w.join("src")).unwrap();
    std::fs::write(w.join(".git/opencode"), id).unwrap();
    w.to_str().unwrap().to_owned()
}

#[test]
fn a_folder_on_this_machine_is_resolved_as_opencode_resolves_it() {
    let here = tempfile::tempdir().unwrap();
    let w = git_folder(here.path(), "prj_1");
    // prj_2 was touched last, but the folder's cached id is prj_1: OpenCode lists prj_1's.
    let sql = format!(
        "UPDATE project SET worktree = '{w}'; INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES ('prj_2', '{w}', 'git', 0, 9999999999999, '[]'); UPDATE session SET directory = '{w}'"
    );
    assert_listed(&sql);
    assert_hidden(
        &format!("{sql}; UPDATE session SET project_id = 'prj_2'"),
        &format!(
            "another project claims its worktree `{w}`, and OpenCode resolves that folder to `prj_1`"
        ),
    );
}

/// `rewind repair DB ARGS…`: exit code and standard output.
fn repair(db: &Path, args: &[&str]) -> (i32, String, String) {
    // Wide enough for the plan's cells to keep to one line.
    let out = rewind()
        .env("COLUMNS", "240")
        .arg("repair")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn column(db: &Path, sql: &str) -> String {
    Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get::<_, String>(0))
        .unwrap()
}

fn backups(db: &Path) -> usize {
    std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".rewind-backup-"))
        .count()
}

#[test]
fn repair_files_a_session_without_project_under_the_project_of_its_folder() {
    let (_dir, db) = db_with("UPDATE session SET project_id = 'prj_gone', directory = '/w/src'");
    let (code, out, _) = repair(&db, &["--dry-run"]);
    assert_eq!(code, 0);
    assert!(out.contains("project_id `prj_gone` → `prj_1`"), "{out}");
    assert_eq!(column(&db, "SELECT project_id FROM session"), "prj_gone");
    assert_eq!(backups(&db), 0, "a dry run writes nothing");
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("applied 1 changes"), "{out}");
    assert_eq!(column(&db, "SELECT project_id FROM session"), "prj_1");
    assert_eq!(column(&db, "SELECT directory FROM session"), "/w/src");
    assert_eq!(backups(&db), 1);
    assert_eq!(hidden_messages(&db), Vec::<String>::new());
    // Idempotent.
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0);
    assert!(out.contains("nothing to repair"), "{out}");
    assert_eq!(backups(&db), 1);
}

#[test]
fn repair_moves_a_global_session_inside_a_git_project_to_that_project() {
    let (_dir, db) = db_with(
        "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES ('global', '/', NULL, 0, 0, '[]'); UPDATE session SET project_id = 'global', directory = '/w/src'",
    );
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(column(&db, "SELECT project_id FROM session"), "prj_1");
    // Nothing is deleted: both project rows stay.
    assert_eq!(column(&db, "SELECT count(*) || '' FROM project"), "2");
}

#[test]
fn repair_merges_duplicate_projects_only_when_it_knows_which_one_opencode_resolves() {
    let dup = "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES ('prj_2', '/w', 'git', 0, 9999999999999, '[]')";
    // `/w` is not on this machine: which row OpenCode resolves is a guess, and a guess could
    // hide the session again.
    let (_dir, db) = db_with(dup);
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("not repaired: session ses_healthy"), "{out}");
    assert!(out.contains("--project ID"), "{out}");
    assert_eq!(column(&db, "SELECT project_id FROM session"), "prj_1");
    assert_eq!(backups(&db), 0);
    // The user says which.
    let (code, out, _) = repair(&db, &["--project", "prj_2"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(column(&db, "SELECT project_id FROM session"), "prj_2");
    assert_eq!(hidden_messages(&db), Vec::<String>::new());
    assert_eq!(
        column(&db, "SELECT count(*) || '' FROM project"),
        "2",
        "nothing deleted"
    );

    // On this machine, the folder says which.
    let here = tempfile::tempdir().unwrap();
    let w = git_folder(here.path(), "prj_1");
    let (_dir, db) = db_with(&format!(
        "UPDATE project SET worktree = '{w}'; INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) VALUES ('prj_2', '{w}', 'git', 0, 9999999999999, '[]'); UPDATE session SET project_id = 'prj_2', directory = '{w}'"
    ));
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("project_id `prj_2` → `prj_1`"), "{out}");
    assert_eq!(column(&db, "SELECT project_id FROM session"), "prj_1");
}

#[test]
fn repair_relinks_a_moved_folder_only_when_asked() {
    let (_dir, db) = db_with("UPDATE session SET directory = '/old/w/lib'");
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0);
    assert!(out.contains("pass --relink OLD=NEW"), "{out}");
    assert_eq!(column(&db, "SELECT directory FROM session"), "/old/w/lib");
    let (code, out, _) = repair(&db, &["--relink", "/old/w=/w"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("directory `/old/w/lib` → `/w/lib`"), "{out}");
    assert_eq!(column(&db, "SELECT directory FROM session"), "/w/lib");
    assert_eq!(hidden_messages(&db), Vec::<String>::new());
    // A relink that does not put the folder under its project is rolled back, not half-done.
    let (_dir, db) = db_with("UPDATE session SET directory = '/old/w'");
    let (code, _, err) = repair(&db, &["--relink", "/old/w=/elsewhere"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("still reported after the repair"), "{err}");
    assert!(err.contains("the database was not changed"), "{err}");
    assert_eq!(column(&db, "SELECT directory FROM session"), "/old/w");
    assert_eq!(backups(&db), 0);
}

#[test]
fn repair_refuses_an_unknown_project_or_a_malformed_relink() {
    let (_dir, db) = db_with("UPDATE session SET project_id = 'prj_gone'");
    let (code, _, err) = repair(&db, &["--project", "prj_nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("--project prj_nope"), "{err}");
    assert!(err.contains("`prj_1`"), "{err}");
    let (code, _, err) = repair(&db, &["--relink", "/only-one-folder"]);
    assert_eq!(code, 2);
    assert!(err.contains("is not OLD=NEW"), "{err}");
    assert_eq!(column(&db, "SELECT project_id FROM session"), "prj_gone");
}

/// A database built from `tests/fixtures/opencode-2.0/migrated.sql` (a store OpenCode 2.x took
/// over from 1.x), then `sql` run on it.
fn store_2x(sql: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("opencode.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        &std::fs::read_to_string(repo("tests/fixtures/opencode-2.0/migrated.sql")).unwrap(),
    )
    .unwrap();
    conn.execute_batch(sql).unwrap();
    drop(conn);
    (dir, path)
}

/// `session id → message` of each `session-hidden` finding.
fn hidden_by_session(db: &Path) -> Vec<(String, String)> {
    let (_, doc) = diagnose_json(db, &["--select", "session-hidden"]);
    of_rule(&findings(&doc), "session-hidden")
        .iter()
        .map(|f| {
            (
                f["session_id"].as_str().unwrap().to_owned(),
                f["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn opencode_2_lists_session_v2_rows_by_project() {
    let (_dir, db) = store_2x("");
    let found = hidden_by_session(&db);
    let ids: Vec<&str> = found.iter().map(|(s, _)| s.as_str()).collect();
    // Written by 2.x, or imported under its git project: listed.
    assert_eq!(ids, ["ses_notes_global", "ses_v1_late"], "{found:?}");
    assert!(
        found[0].1.contains("1.x's catch-all project `global`"),
        "{found:?}"
    );
    assert!(
        found[1].1.contains("2.x lists only `session_v2`"),
        "{found:?}"
    );
    // The imported session is read from its `session_message` rows, as 2.x reads it.
    let out = rewind()
        .args(["sessions", "--format", "json"])
        .arg(&db)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "ses_imported",
            "ses_notes_global",
            "ses_v2_native",
            "ses_v1_late"
        ]
    );
}

#[test]
fn a_1x_session_before_the_import_has_run_is_not_hidden() {
    // 2.x imports it when it starts.
    let (_dir, db) = store_2x("DELETE FROM kv");
    let found = hidden_by_session(&db);
    assert_eq!(
        found.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        ["ses_notes_global"],
        "{found:?}"
    );
}

#[test]
fn repair_refiles_a_global_session_v2_row_under_its_folders_project() {
    let (_dir, db) = store_2x("");
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("project_id `global` → `d4f0b7e2a1c3958e6f0a2b4c6d8e0f1a3b5c7d9e`"),
        "{out}"
    );
    // What 2.x cannot see is not converted, and the plan says how to bring it over.
    assert!(
        out.contains("not repaired: session ses_v1_late") && out.contains("opencode import"),
        "{out}"
    );
    assert_eq!(
        column(
            &db,
            "SELECT project_id FROM session_v2 WHERE id = 'ses_notes_global'"
        ),
        "d4f0b7e2a1c3958e6f0a2b4c6d8e0f1a3b5c7d9e"
    );
    // The 1.x copy stays as 1.x wrote it (1.x lists it under `global`).
    assert_eq!(
        column(
            &db,
            "SELECT project_id FROM session WHERE id = 'ses_notes_global'"
        ),
        "global"
    );
    assert_eq!(
        hidden_by_session(&db)
            .iter()
            .map(|(s, _)| s.as_str())
            .collect::<Vec<_>>(),
        ["ses_v1_late"]
    );
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0);
    assert!(out.contains("nothing to repair"), "{out}");
    assert_eq!(backups(&db), 1);
}

#[test]
fn repair_leaves_a_global_session_v2_row_alone_until_its_folder_has_a_project() {
    let (_dir, db) = store_2x(
        "DELETE FROM project WHERE worktree = '/home/me/notes'; DELETE FROM session WHERE id = 'ses_v1_late'",
    );
    let (code, out, _) = repair(&db, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("open OpenCode once in that folder"), "{out}");
    assert_eq!(
        column(
            &db,
            "SELECT project_id FROM session_v2 WHERE id = 'ses_notes_global'"
        ),
        "global"
    );
    assert_eq!(backups(&db), 0);
}
