//! OpenCode database fixtures, built with rusqlite from the DDL OpenCode itself uses
//! (`opencode-storage.md` §1.4: `schema.gen.ts` for a current database, the initial drizzle
//! migration for a 1.2 one).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use serde_json::{Value, json};

/// The tables of a current (1.18) database, as `schema.gen.ts` creates them.
pub const SCHEMA_CURRENT: &str = r#"
CREATE TABLE `migration` (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL);
CREATE TABLE `event_sequence` (`aggregate_id` text PRIMARY KEY, `seq` integer NOT NULL, `owner_id` text);
CREATE TABLE `event` (`id` text PRIMARY KEY, `aggregate_id` text NOT NULL, `seq` integer NOT NULL, `created` integer NOT NULL,
  `type` text NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_event_aggregate_id_event_sequence_aggregate_id_fk` FOREIGN KEY (`aggregate_id`) REFERENCES `event_sequence`(`aggregate_id`) ON DELETE CASCADE);
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text, `icon_url` text,
  `icon_url_override` text, `icon_color` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_initialized` integer, `sandboxes` text NOT NULL, `commands` text);
CREATE TABLE `message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `data` text NOT NULL,
  CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE);
CREATE TABLE `part` (
  `id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE);
CREATE TABLE `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text, `fork_session_id` text,
  `fork_message_id` text, `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer,
  `summary_files` integer, `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL,
  `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,
  `tokens_reasoning` integer DEFAULT 0 NOT NULL, `tokens_cache_read` integer DEFAULT 0 NOT NULL,
  `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text, `agent` text, `model` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_compacting` integer, `time_archived` integer,
  CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE);
CREATE UNIQUE INDEX `event_aggregate_seq_idx` ON `event` (`aggregate_id`,`seq`);
CREATE INDEX `event_aggregate_type_seq_idx` ON `event` (`aggregate_id`,`type`,`seq`);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_workspace_idx` ON `session` (`workspace_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
"#;

/// The tables of a 1.2 database: the initial drizzle migration (`familiar_lady_ursula`).
pub const SCHEMA_1_2: &str = r#"
CREATE TABLE `__drizzle_migrations` (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric, name text);
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text, `icon_url` text,
  `icon_color` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_initialized` integer,
  `sandboxes` text NOT NULL);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,
  CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE);
CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `parent_id` text, `slug` text NOT NULL,
  `directory` text NOT NULL, `title` text NOT NULL, `version` text NOT NULL, `share_url` text,
  `summary_additions` integer, `summary_deletions` integer, `summary_files` integer, `summary_diffs` text,
  `revert` text, `permission` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
  `time_compacting` integer, `time_archived` integer,
  CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE);
CREATE INDEX `message_session_idx` ON `message` (`session_id`);
CREATE INDEX `part_message_idx` ON `part` (`message_id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
"#;

pub const T0: i64 = 1_771_000_000_000;

/// An OpenCode-format id: `<prefix>_` + 12 hex (ms × 4096 + counter) + 14 base62 characters.
pub fn oc_id(prefix: &str, ms: i64, counter: i64) -> String {
    let v = (ms * 4096 + counter) & 0xFFFF_FFFF_FFFF;
    format!("{prefix}_{v:012x}Fx{counter:012}")
}

pub fn msg_id(n: i64) -> String {
    oc_id("msg", T0 + n * 1000, 1)
}

pub fn prt_id(msg: i64, n: i64) -> String {
    oc_id("prt", T0 + msg * 1000, n + 1)
}

pub fn user_info(ms: i64) -> Value {
    json!({"role": "user", "time": {"created": ms}, "agent": "build",
           "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}})
}

pub fn assistant_info(ms: i64, parent: &str, completed: bool) -> Value {
    let mut v = json!({"role": "assistant", "time": {"created": ms}, "parentID": parent,
           "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build", "agent": "build",
           "path": {"cwd": "/w", "root": "/w"}, "cost": 0.01,
           "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}});
    if completed {
        v["time"]["completed"] = json!(ms + 500);
        v["finish"] = json!("stop");
    }
    v
}

pub fn text(s: &str) -> Value {
    json!({"type": "text", "text": s, "time": {"start": T0, "end": T0 + 1}})
}

pub fn step_start() -> Value {
    json!({"type": "step-start"})
}

pub fn step_finish() -> Value {
    json!({"type": "step-finish", "reason": "tool-calls", "cost": 0.01,
           "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}})
}

pub fn tool(name: &str, call: &str, state: Value) -> Value {
    json!({"type": "tool", "tool": name, "callID": call, "state": state})
}

pub fn completed(input: Value, output: &str) -> Value {
    json!({"status": "completed", "input": input, "output": output, "title": "", "metadata": {},
           "time": {"start": T0, "end": T0 + 10}})
}

pub fn aborted_empty() -> Value {
    json!({"status": "error", "input": {}, "error": "Tool execution aborted",
           "time": {"start": T0, "end": T0}})
}

/// A message to insert: its number (for ids and times), info and parts.
pub struct Msg {
    pub n: i64,
    pub info: Value,
    pub parts: Vec<Value>,
}

/// A session to insert.
pub struct Ses {
    pub id: &'static str,
    pub title: &'static str,
    pub messages: Vec<Msg>,
}

/// One user prompt and one assistant reply with `parts`.
pub fn exchange(first: i64, parts: Vec<Value>, completed: bool) -> Vec<Msg> {
    let user = msg_id(first);
    vec![
        Msg {
            n: first,
            info: user_info(T0 + first * 1000),
            parts: vec![text("please do it")],
        },
        Msg {
            n: first + 1,
            info: assistant_info(T0 + (first + 1) * 1000, &user, completed),
            parts,
        },
    ]
}

/// Healthy: must stay clean, and untouched by repair.
fn healthy() -> Ses {
    Ses {
        id: "ses_healthy",
        title: "Healthy session",
        messages: exchange(
            60,
            vec![
                step_start(),
                text("Reading it."),
                tool(
                    "read",
                    "toolu_06Fine",
                    completed(json!({"filePath": "c.ts"}), "ok"),
                ),
                step_finish(),
                step_start(),
                text("Done."),
                step_finish(),
            ],
            true,
        ),
    }
}

/// The fixture sessions: one per corruption, and a healthy one.
pub fn sessions() -> Vec<Ses> {
    vec![
        // PR #16751's recorded message: two steps merged after a retry, the first tool's error
        // dropped while it was pending.
        Ses {
            id: "ses_pr16751",
            title: "Merged steps after a retry",
            messages: exchange(
                10,
                vec![
                    step_start(),
                    text("Let me ask."),
                    tool("question", "toolu_01Aborted", aborted_empty()),
                    text("Asking again."),
                    tool(
                        "question",
                        "toolu_02Answered",
                        completed(json!({"questions": ["ok?"]}), "yes"),
                    ),
                    step_finish(),
                ],
                true,
            ),
        },
        // The process died mid-step: a tool stuck pending, no step-finish, no completion time.
        Ses {
            id: "ses_crash",
            title: "Crash while a tool was pending",
            messages: exchange(
                20,
                vec![
                    step_start(),
                    text("Writing the file."),
                    tool(
                        "write",
                        "toolu_03Pending",
                        json!({"status": "pending", "input": {}, "raw": ""}),
                    ),
                ],
                false,
            ),
        },
        // A status outside the schema.
        Ses {
            id: "ses_failed",
            title: "Invalid tool status",
            messages: exchange(
                30,
                vec![
                    step_start(),
                    tool(
                        "edit",
                        "toolu_04Failed",
                        json!({"status": "failed", "input": {"filePath": "a.ts"}, "error": "patch did not apply",
                               "time": {"start": T0, "end": T0 + 5}}),
                    ),
                    step_finish(),
                ],
                true,
            ),
        },
        // A text part of only whitespace: sent as it is, and refused by Anthropic. (An empty
        // text part is dropped before sending and is no finding.)
        Ses {
            id: "ses_empty",
            title: "Empty text part",
            messages: exchange(40, vec![step_start(), text("\n"), step_finish()], true),
        },
        // One call id on two parts.
        Ses {
            id: "ses_dup",
            title: "Duplicated call id",
            messages: exchange(
                50,
                vec![
                    step_start(),
                    tool("read", "toolu_05Twice", aborted_empty()),
                    tool(
                        "read",
                        "toolu_05Twice",
                        completed(json!({"filePath": "b.ts"}), "contents"),
                    ),
                    step_finish(),
                ],
                true,
            ),
        },
        healthy(),
    ]
}

/// Builds a current (1.18) database at `path` with `sessions`, and an event log for them.
pub fn build_db(path: &Path, sessions: &[Ses]) -> PathBuf {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_CURRENT).unwrap();
    conn.execute(
        "INSERT INTO migration VALUES ('20260709025533_drop-todo', ?1)",
        [T0],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO project VALUES ('prj_1', '/w', 'git', NULL, NULL, NULL, NULL, ?1, ?1, NULL, '[]', NULL)",
        [T0],
    )
    .unwrap();
    for s in sessions {
        insert_session(&conn, s, true);
    }
    path.to_path_buf()
}

/// Builds a 1.2 database (initial migration, drizzle journal, no event log).
pub fn build_db_1_2(path: &Path, sessions: &[Ses]) -> PathBuf {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(SCHEMA_1_2).unwrap();
    conn.execute(
        "INSERT INTO __drizzle_migrations (hash, created_at, name) VALUES ('x', 0, '20260127222353_familiar_lady_ursula')",
        [],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO project VALUES ('prj_1', '/w', 'git', NULL, NULL, NULL, ?1, ?1, NULL, '[]')",
        [T0],
    )
    .unwrap();
    for s in sessions {
        insert_session(&conn, s, false);
    }
    path.to_path_buf()
}

fn insert_session(conn: &Connection, s: &Ses, current: bool) {
    if current {
        conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, time_created, time_updated) VALUES (?1, 'prj_1', ?1, '/w', ?2, '1.18.33', 0.01, 10, 5, ?3, ?3)",
            params![s.id, s.title, T0],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO event_sequence (aggregate_id, seq) VALUES (?1, 0)",
            [s.id],
        )
        .unwrap();
    } else {
        conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (?1, 'prj_1', ?1, '/w', ?2, '1.2.15', ?3, ?3)",
            params![s.id, s.title, T0],
        )
        .unwrap();
    }
    let mut seq = 0;
    let mut event = |ty: &str, data: Value| {
        if !current {
            return;
        }
        seq += 1;
        conn.execute(
            "INSERT INTO event (id, aggregate_id, seq, created, type, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![format!("evt_{}_{seq:04}", s.id), s.id, seq, T0 + seq, ty, data.to_string()],
        )
        .unwrap();
        conn.execute(
            "UPDATE event_sequence SET seq = ?2 WHERE aggregate_id = ?1",
            params![s.id, seq],
        )
        .unwrap();
    };
    for m in &s.messages {
        let id = msg_id(m.n);
        let ms = T0 + m.n * 1000;
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            params![id, s.id, ms, m.info.to_string()],
        )
        .unwrap();
        let mut info = m.info.clone();
        info["id"] = json!(id);
        info["sessionID"] = json!(s.id);
        event(
            "message.updated.1",
            json!({"sessionID": s.id, "info": info}),
        );
        for (k, p) in m.parts.iter().enumerate() {
            let pid = prt_id(m.n, k as i64);
            conn.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![pid, id, s.id, ms, p.to_string()],
            )
            .unwrap();
            let mut part = p.clone();
            part["id"] = json!(pid);
            part["messageID"] = json!(id);
            part["sessionID"] = json!(s.id);
            event(
                "message.part.updated.1",
                json!({"sessionID": s.id, "part": part, "time": ms}),
            );
        }
    }
}

/// Every file in `dir` with its bytes, for before/after comparisons.
pub fn dir_state(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Every row of a session's messages and parts, as text, for byte comparisons.
pub fn session_rows(db: &Path, session: &str) -> Vec<String> {
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut out = Vec::new();
    for sql in [
        "SELECT id || '|' || time_created || '|' || time_updated || '|' || data FROM message WHERE session_id = ?1 ORDER BY id",
        "SELECT id || '|' || message_id || '|' || time_created || '|' || time_updated || '|' || data FROM part WHERE session_id = ?1 ORDER BY id",
        "SELECT id || '|' || title || '|' || cost || '|' || tokens_input || '|' || time_updated FROM session WHERE id = ?1",
    ] {
        let mut stmt = conn.prepare(sql).unwrap();
        let rows = stmt
            .query_map([session], |r| r.get::<_, String>(0))
            .unwrap();
        out.extend(rows.map(|r| r.unwrap()));
    }
    out
}
