//! Whether OpenCode may be writing a session right now, and whether the database changed between
//! two points of a repair.
//!
//! OpenCode holds no lock between its writes: while it streams a reply it writes a part, waits for
//! the provider or a tool, and writes again, keeping the message in memory. A repair of that
//! message in between is overwritten by OpenCode's next write, or overwrites what OpenCode wrote,
//! and the session ends up inconsistent (a message with two step-finishes, a tool closed twice).
//! Taking the write lock cannot prevent that, so a repair refuses (unless `--force`):
//!
//! * a session whose **last message is still open** — an assistant reply with no
//!   `time.completed` and no `error`, a reply that ended in tool calls (OpenCode's loop goes on to
//!   the next step), or a user prompt with no reply yet — **and** whose newest row (session,
//!   message or part `time_updated`) is less than [`LIVE_WINDOW_MS`] old. A session whose last
//!   message stayed open longer than that is one OpenCode stopped writing (it died or was
//!   killed): that is what the repair is for. A session whose last message is finished is idle,
//!   however recent: OpenCode does not rewrite a finished reply.
//! * a database that **changed between the plan and the write lock** (`PRAGMA data_version`,
//!   SQLite's counter of commits by other connections, covers the WAL too; and each planned
//!   session's newest `time_updated` and row counts): another process is writing.
//!
//! The window is 10 minutes: the longest a live OpenCode is known to go without writing to a
//! session it is working on. Its `bash` tool runs a command for up to 10 minutes (its largest
//! timeout) and writes nothing while a silent command runs; a provider retry waits with back-off
//! between attempts; a slow model may take minutes before its first token.

use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;

/// How recent a session's newest write must be, with its last message open, for the session to
/// count as being written (ms).
pub const LIVE_WINDOW_MS: i64 = 10 * 60 * 1000;

/// Why a session's last message is open, in words, or `None` when it is finished.
pub fn open_last_message(info: &Value) -> Option<&'static str> {
    match info.get("role").and_then(Value::as_str) {
        Some("user") => Some("its last message is a prompt with no reply yet"),
        Some("assistant") => {
            let completed = info
                .get("time")
                .and_then(|t| t.get("completed"))
                .is_some_and(|c| !c.is_null());
            let error = info.get("error").is_some_and(|e| !e.is_null());
            if error {
                None
            } else if !completed {
                Some("its last reply has no completion time and no error")
            } else if info.get("finish").and_then(Value::as_str) == Some("tool-calls") {
                Some("its last reply ended in tool calls, so OpenCode goes on to the next step")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// What the database says about a session's activity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    /// The newest `time_updated` of the session's row, messages and parts (ms).
    pub newest_write: Option<i64>,
    pub messages: i64,
    pub parts: i64,
}

/// A session's activity, read from `conn` (missing columns read as unknown).
pub fn activity(conn: &Connection, session: &str) -> Activity {
    let one = |sql: &str| -> Option<i64> {
        conn.query_row(sql, [session], |r| r.get::<_, Option<i64>>(0))
            .optional()
            .ok()
            .flatten()
            .flatten()
    };
    // A time as a number whatever SQLite stores it as: the column is INTEGER, but a fractional
    // time is kept as a REAL and a non-numeric text as text, which `max` would rank above every
    // number; `CAST(… AS REAL)` reads each as a number (text that is none as 0).
    let time = |sql: &str| -> Option<i64> {
        conn.query_row(sql, [session], |r| r.get::<_, Option<f64>>(0))
            .optional()
            .ok()
            .flatten()
            .flatten()
            .filter(|t| t.is_finite())
            .map(|t| t.floor() as i64)
    };
    let newest_write = [
        "SELECT CAST(time_updated AS REAL) FROM session WHERE id = ?1",
        "SELECT max(CAST(time_updated AS REAL)) FROM message WHERE session_id = ?1",
        "SELECT max(CAST(time_updated AS REAL)) FROM part WHERE session_id = ?1",
        // OpenCode 2.x's tables (a query on a table that is not there reads as unknown).
        "SELECT CAST(time_updated AS REAL) FROM session_v2 WHERE id = ?1",
        "SELECT max(CAST(time_updated AS REAL)) FROM session_message WHERE session_id = ?1",
    ]
    .iter()
    .filter_map(|sql| time(sql))
    .max();
    Activity {
        newest_write,
        messages: one("SELECT count(*) FROM message WHERE session_id = ?1").unwrap_or(0),
        parts: one("SELECT count(*) FROM part WHERE session_id = ?1").unwrap_or(0),
    }
}

/// The info of a session's last message (OpenCode's order: `time_created`, then id).
fn last_message(conn: &Connection, session: &str) -> Option<Value> {
    let text: String = conn
        .query_row(
            "SELECT data FROM message WHERE session_id = ?1 ORDER BY time_created DESC, id DESC LIMIT 1",
            [session],
            |r| r.get(0),
        )
        .optional()
        .ok()
        .flatten()?;
    serde_json::from_str(&text).ok()
}

/// Why `session` looks like OpenCode is writing it at `now` (ms), in words, or `None`.
pub fn being_written(conn: &Connection, session: &str, now: i64) -> Option<String> {
    let info = last_message(conn, session)?;
    let why = open_last_message(&info)?;
    let newest = activity(conn, session).newest_write?;
    let age = now - newest;
    if age >= LIVE_WINDOW_MS {
        return None;
    }
    let when = if age < 0 {
        "its newest row is dated in the future (a clock change?)".to_owned()
    } else {
        format!(
            "it was last written {} ago (less than {} minutes)",
            seconds(age),
            LIVE_WINDOW_MS / 60_000
        )
    };
    Some(format!("session {session}: {why}, and {when}"))
}

fn seconds(ms: i64) -> String {
    let s = ms / 1000;
    if s < 120 {
        format!("{s} s")
    } else {
        format!("{} min", s / 60)
    }
}

/// What must not change between the plan and the commit: SQLite's count of other connections'
/// commits, and each planned session's activity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    data_version: Option<i64>,
    sessions: Vec<(String, Activity)>,
}

impl Fingerprint {
    pub fn read<'a>(conn: &Connection, sessions: impl IntoIterator<Item = &'a str>) -> Self {
        Fingerprint {
            data_version: conn.query_row("PRAGMA data_version", [], |r| r.get(0)).ok(),
            sessions: sessions
                .into_iter()
                .map(|s| (s.to_owned(), activity(conn, s)))
                .collect(),
        }
    }

    /// The sessions fingerprinted.
    pub fn session_ids(&self) -> impl Iterator<Item = &str> {
        self.sessions.iter().map(|(id, _)| id.as_str())
    }

    /// Whether any fingerprinted session changed.
    pub fn sessions_differ(&self, later: &Fingerprint) -> bool {
        self.sessions != later.sessions
    }

    /// Whether another connection committed since `self` was read (the sessions' activity is
    /// not compared: the repair's own writes change it).
    pub fn others_committed(&self, conn: &Connection) -> bool {
        let now: Option<i64> = conn.query_row("PRAGMA data_version", [], |r| r.get(0)).ok();
        now != self.data_version
    }

    /// What differs between two readings, in words (empty when nothing does).
    pub fn differences(&self, later: &Fingerprint) -> Vec<String> {
        let mut out = Vec::new();
        if self.data_version != later.data_version {
            out.push("another connection committed to the database".to_owned());
        }
        for ((id, a), (_, b)) in self.sessions.iter().zip(&later.sessions) {
            if a != b {
                out.push(format!(
                    "session {id} changed ({} → {} messages, {} → {} parts, newest write {} → {})",
                    a.messages,
                    b.messages,
                    a.parts,
                    b.parts,
                    a.newest_write.unwrap_or(0),
                    b.newest_write.unwrap_or(0)
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn open_and_finished_last_messages() {
        let open = |v: Value| open_last_message(&v).is_some();
        assert!(open(json!({"role": "user", "time": {"created": 1}})));
        assert!(open(json!({"role": "assistant", "time": {"created": 1}})));
        assert!(open(
            json!({"role": "assistant", "time": {"created": 1, "completed": null}})
        ));
        assert!(open(
            json!({"role": "assistant", "time": {"created": 1, "completed": 2}, "finish": "tool-calls"})
        ));
        assert!(!open(
            json!({"role": "assistant", "time": {"created": 1, "completed": 2}, "finish": "stop"})
        ));
        assert!(!open(
            json!({"role": "assistant", "time": {"created": 1}, "error": {"name": "MessageAbortedError"}})
        ));
        assert!(!open(json!({"role": "system"})));
    }

    fn db(updated: i64, info: Value) -> Connection {
        let conn = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(
            "CREATE TABLE session (id TEXT, time_updated INTEGER);
             CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
             CREATE TABLE part (id TEXT, session_id TEXT, time_updated INTEGER);
             INSERT INTO session VALUES ('s', 0);",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        conn.execute(
            "INSERT INTO message VALUES ('m1', 's', 1, 1, '{\"role\":\"user\"}'), ('m2', 's', 2, 2, ?1)",
            [info.to_string()],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        conn.execute("INSERT INTO part VALUES ('p', 's', ?1)", [updated])
            .unwrap_or_else(|e| panic!("{e}"));
        conn
    }

    #[test]
    fn an_open_reply_written_within_the_window_is_being_written() {
        let now = 100 * LIVE_WINDOW_MS;
        let streaming = json!({"role": "assistant", "time": {"created": 2}});
        let why = being_written(&db(now - 3_000, streaming.clone()), "s", now).unwrap_or_default();
        assert!(
            why.contains("no completion time") && why.contains("3 s ago"),
            "{why}"
        );
        // Open, but silent for longer than the window: OpenCode died.
        assert!(being_written(&db(now - LIVE_WINDOW_MS, streaming), "s", now).is_none());
        // Written a moment ago, but finished: idle.
        let done =
            json!({"role": "assistant", "time": {"created": 2, "completed": 3}, "finish": "stop"});
        assert!(being_written(&db(now - 1_000, done), "s", now).is_none());
    }

    /// adversarial, note A: `time_updated` is an INTEGER column, but SQLite keeps what it is
    /// given, so a fractional time is a REAL (and a time written as text that is not a number
    /// stays text): the guard reads them as numbers, not only integers.
    #[test]
    fn a_fractional_or_text_time_is_still_a_recent_write() {
        let now = 100 * LIVE_WINDOW_MS;
        let streaming = json!({"role": "assistant", "time": {"created": 2}});
        for newest in [
            format!("{}.5", now - 3_000),
            format!("'{}.25'", now - 3_000),
        ] {
            let conn = db(0, streaming.clone());
            conn.execute(
                &format!("INSERT INTO part VALUES ('p2', 's', {newest})"),
                [],
            )
            .unwrap_or_else(|e| panic!("{e}"));
            // A stray text in another row does not hide the numbers either.
            conn.execute("INSERT INTO part VALUES ('p3', 's', 'soon')", [])
                .unwrap_or_else(|e| panic!("{e}"));
            let why = being_written(&conn, "s", now).unwrap_or_default();
            assert!(why.contains("3 s ago"), "{newest}: {why:?}");
            assert_eq!(activity(&conn, "s").newest_write, Some(now - 3_000));
        }
    }

    #[test]
    fn a_fingerprint_sees_another_connections_commit() {
        for mode in ["WAL", "DELETE"] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let path = dir.path().join("x.db");
            let a = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
            a.execute_batch(&format!(
                "PRAGMA journal_mode={mode}; CREATE TABLE session (id TEXT, time_updated INTEGER); CREATE TABLE message (id TEXT, session_id TEXT, time_updated INTEGER); CREATE TABLE part (id TEXT, session_id TEXT, time_updated INTEGER); INSERT INTO session VALUES ('s', 1);"
            ))
            .unwrap_or_else(|e| panic!("{e}"));
            // Read inside a read transaction, as the plan is.
            a.execute_batch("BEGIN").unwrap_or_else(|e| panic!("{e}"));
            let before = Fingerprint::read(&a, ["s"]);
            a.execute_batch("COMMIT").unwrap_or_else(|e| panic!("{e}"));
            assert!(
                before.differences(&Fingerprint::read(&a, ["s"])).is_empty(),
                "{mode}"
            );
            // The connection's own writes are not another connection's commit.
            a.execute("INSERT INTO part VALUES ('p0', 's', 1)", [])
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(!before.others_committed(&a), "{mode}");
            let b = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
            b.execute("INSERT INTO part VALUES ('p', 's', 5)", [])
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(before.others_committed(&a), "{mode}");
            let later = Fingerprint::read(&a, ["s"]);
            let d = before.differences(&later);
            assert_eq!(d.len(), 2, "{mode}: {d:?}");
        }
    }
}
