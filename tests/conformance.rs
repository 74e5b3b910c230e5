//! Differential conformance against the real OpenCode.
//!
//! Installs the real client from npm (`opencode-ai`, the version in `client::OPENCODE_VERSION`),
//! drives it offline against a scripted provider on 127.0.0.1 (`conformance/mock.rs`), and
//! checks that rewind agrees with what the client stored and what it sent:
//!
//! - a healthy session comes out clean;
//! - the request rewind rebuilds (`rewind request`) is the request the client sends when the
//!   session is continued: same roles, same block order, same tool ids;
//! - a stored error, a stream fault, a kill or a known corruption is named;
//! - a repaired session is resumed by the client with a well-formed request, and a tool rewind
//!   closed reaches the model as an error;
//! - repair leaves a session the client is writing alone.
//!
//! It takes minutes, so `cargo test` lists it as ignored with the reason; run it with
//! `bash scripts/conformance.sh` (or `cargo test --test conformance -- --ignored --nocapture`).
//! Without node/npm it says so and passes: there is nothing to compare with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "conformance/client.rs"]
mod client;
#[path = "conformance/mock.rs"]
mod mock;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use client::{Client, Provider, poll, request_problems, shape};
use serde_json::{Value, json};

type Shape = Vec<(String, Vec<String>)>;

struct Suite {
    client: Client,
    mock: mock::Mock,
    rewind: PathBuf,
    cases: PathBuf,
    results: Vec<(String, Result<String, String>, Duration)>,
}

/// The scenarios OpenCode runs through healthy, per provider.
const HEALTHY: &[(&str, Provider)] = &[
    ("text", Provider::OpenAiCompatible),
    ("tool", Provider::OpenAiCompatible),
    ("toolerr", Provider::OpenAiCompatible),
    ("parallel", Provider::OpenAiCompatible),
    ("reasoning", Provider::OpenAiCompatible),
    ("texttool", Provider::OpenAiCompatible),
    ("tooltext", Provider::OpenAiCompatible),
    ("retry500", Provider::OpenAiCompatible),
    ("drop", Provider::OpenAiCompatible),
    ("text", Provider::Anthropic),
    ("tool", Provider::Anthropic),
    ("parallel", Provider::Anthropic),
    ("reasoning", Provider::Anthropic),
    ("tooltext", Provider::Anthropic),
    ("retry529", Provider::Anthropic),
];

#[test]
#[ignore = "drives the real OpenCode from npm for minutes: run `bash scripts/conformance.sh`"]
fn real_opencode_agrees_with_rewind() {
    let start = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/conformance");
    let mock = mock::Mock::start();
    let client = match client::install(&root, mock.port) {
        Ok(c) => c,
        Err(why) => {
            println!("conformance: SKIPPED, {why}: the suite needs node and npm");
            return;
        }
    };
    let cases = root.join("cases");
    let _ = std::fs::remove_dir_all(&cases);
    std::fs::create_dir_all(&cases).unwrap();
    let mut s = Suite {
        client,
        mock,
        rewind: PathBuf::from(env!("CARGO_BIN_EXE_rewind")),
        cases,
        results: Vec::new(),
    };
    println!(
        "conformance: rewind against real OpenCode {} (mock provider on 127.0.0.1:{})",
        client::OPENCODE_VERSION,
        s.mock.port
    );
    for &(scn, p) in HEALTHY {
        s.case(&format!("healthy:{}:{scn}", p.name()), |s, name| {
            s.healthy(name, scn, p)
        });
    }
    for (scn, p) in [
        ("concat", Provider::OpenAiCompatible),
        ("badjson", Provider::OpenAiCompatible),
        ("errevent", Provider::OpenAiCompatible),
        ("errevent", Provider::Anthropic),
    ] {
        s.case(&format!("fault:{}:{scn}", p.name()), |s, name| {
            s.fault(name, scn, p)
        });
    }
    for p in [Provider::OpenAiCompatible, Provider::Anthropic] {
        let base = format!("base:{}:tool", p.name());
        let ok = s.case(&base, |s, name| s.healthy(name, "tool", p));
        for edit in Edit::ALL {
            let name = format!("edit:{}:{}", p.name(), edit.name());
            if ok {
                s.case(&name, |s, name| s.corrupted(name, &base, edit, p));
            } else {
                s.results
                    .push((name, Err("its base run failed".into()), Duration::ZERO));
            }
        }
    }
    s.case("kill-mid-tool:anthropic", |s, name| {
        s.killed(name, Provider::Anthropic)
    });
    s.case("export-repair-import:anthropic", |s, name| {
        s.export_roundtrip(name, "kill-mid-tool:anthropic", Provider::Anthropic)
    });
    s.case("user-abort:openai", |s, name| {
        s.user_abort(name, Provider::OpenAiCompatible)
    });
    s.case("repair-while-idle:openai", |s, name| {
        s.repair_idle(name, "edit:openai:running-mid", Provider::OpenAiCompatible)
    });
    s.case("repair-while-streaming:openai", |s, name| {
        s.repair_streaming(name, "edit:openai:running-mid", Provider::OpenAiCompatible)
    });
    s.case("hidden-sessions:openai", |s, name| {
        s.hidden_sessions(name, Provider::OpenAiCompatible)
    });

    let failed: Vec<_> = s.results.iter().filter(|r| r.1.is_err()).collect();
    println!(
        "conformance: {} cases, {} passed, {} failed, in {:.0} s",
        s.results.len(),
        s.results.len() - failed.len(),
        failed.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        failed.is_empty(),
        "real OpenCode disagrees with rewind:\n{}",
        failed
            .iter()
            .map(|(n, r, _)| format!("  {n}: {}", r.as_ref().err().map_or("", |e| e.as_str())))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A known corruption, applied to a healthy tool session the way the bugs leave it.
#[derive(Clone, Copy)]
enum Edit {
    /// A tool status the schema does not allow (`failed`).
    Failed,
    /// Text after the tool in the same step, the next message gone (the retry merge).
    Merged,
    /// A tool left `running`, its step unclosed, while the session went on.
    RunningMid,
    /// An empty text part in a finished message (the client drops it before sending).
    EmptyText,
    /// A text part of only whitespace (sent as it is; Anthropic refuses it).
    BlankText,
    /// The second tool call carries the first one's id.
    DuplicateCallId,
}

impl Edit {
    const ALL: [Edit; 6] = [
        Edit::Failed,
        Edit::Merged,
        Edit::RunningMid,
        Edit::EmptyText,
        Edit::BlankText,
        Edit::DuplicateCallId,
    ];
    fn name(self) -> &'static str {
        match self {
            Edit::Failed => "failed",
            Edit::Merged => "merged",
            Edit::RunningMid => "running-mid",
            Edit::EmptyText => "empty-text",
            Edit::BlankText => "blank-text",
            Edit::DuplicateCallId => "duplicate-call-id",
        }
    }
    /// Whether `rewind repair` fixes it (a duplicate id needs a person to choose).
    fn repairable(self) -> bool {
        !matches!(self, Edit::DuplicateCallId)
    }
    /// The rule rewind must name for it; none where this client version sends a well-formed
    /// request all the same (it reorders a merged step, drops an empty block).
    fn rule(self, p: Provider) -> Option<&'static str> {
        match self {
            Edit::Failed => Some("schema-violation"),
            Edit::Merged | Edit::EmptyText => None,
            Edit::RunningMid => Some("tool-never-finished"),
            Edit::BlankText => (p == Provider::Anthropic).then_some("empty-text-part"),
            Edit::DuplicateCallId => Some("tool-call-duplicate"),
        }
    }
}

impl Suite {
    /// Runs one case, prints its line, keeps its result; true when it passed.
    fn case(
        &mut self,
        name: &str,
        f: impl FnOnce(&mut Suite, &str) -> Result<String, String>,
    ) -> bool {
        if std::env::var("REWIND_CONFORMANCE_ONLY")
            .is_ok_and(|only| !only.split(',').any(|o| name.contains(o)))
        {
            return true;
        }
        let t = Instant::now();
        let r = f(self, name);
        let d = t.elapsed();
        let (word, detail) = match &r {
            Ok(d) => ("PASS", d.as_str()),
            Err(e) => ("FAIL", e.as_str()),
        };
        println!("  {word}  {name:<40} {:>5.1} s  {detail}", d.as_secs_f64());
        let ok = r.is_ok();
        self.results.push((name.to_string(), r, d));
        ok
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.cases.join(name.replace(':', "-"))
    }

    /// Runs `SCN:<scn> go` into a fresh data folder and returns its database and session.
    fn fresh(&self, name: &str, scn: &str, p: Provider) -> Result<(PathBuf, String), String> {
        let dir = self.dir(name);
        let data = dir.join("data");
        std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
        let run = self.client.run(&data, p, None, &format!("SCN:{scn} go"));
        let db = data.join("opencode/opencode.db");
        if !db.exists() {
            return Err(format!(
                "the client wrote no database: {}",
                tail(&run.stderr)
            ));
        }
        let sid = first_session(&db)?;
        Ok((db, sid))
    }

    /// Copies a case's data folder into a new case.
    fn copy(&self, from: &str, to: &str) -> Result<PathBuf, String> {
        let (src, dst) = (self.dir(from).join("data"), self.dir(to).join("data"));
        let _ = std::fs::remove_dir_all(&dst);
        std::fs::create_dir_all(self.dir(to)).map_err(|e| e.to_string())?;
        let ok = Command::new("cp")
            .arg("-a")
            .arg(&src)
            .arg(&dst)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(format!("cannot copy {}", src.display()));
        }
        Ok(dst.join("opencode/opencode.db"))
    }

    fn healthy(&mut self, name: &str, scn: &str, p: Provider) -> Result<String, String> {
        let (db, sid) = self.fresh(name, scn, p)?;
        let rules = self.rules(&db)?;
        if !rules.is_empty() {
            return Err(format!("findings on a healthy session: {}", join(&rules)));
        }
        let (predicted, real) = self.continue_and_compare(&db, &sid, p)?;
        Ok(format!(
            "clean; next request matches ({} messages)",
            predicted.len().max(real)
        ))
    }

    fn fault(&mut self, name: &str, scn: &str, p: Provider) -> Result<String, String> {
        let (db, sid) = self.fresh(name, scn, p)?;
        let stored = stored_errors(&db)?;
        let rules = self.rules(&db)?;
        let named = [
            "session-error",
            "sse-concatenated-events",
            "sse-invalid-json",
            "stream-error-fatal",
            "stream-provider-error",
        ];
        if !stored.is_empty() && !rules.iter().any(|r| named.contains(&r.as_str())) {
            return Err(format!(
                "the client stored {} but rewind reports: {}",
                stored.join(", "),
                join(&rules)
            ));
        }
        if stored.is_empty() && !rules.is_empty() {
            return Err(format!(
                "the client recovered, stored no error, yet rewind reports {}",
                join(&rules)
            ));
        }
        self.continue_and_compare(&db, &sid, p)?;
        Ok(if stored.is_empty() {
            "recovered by retry; clean; next request matches".into()
        } else {
            format!(
                "stored {}; rewind: {}; next request matches",
                stored.join(", "),
                join(&rules)
            )
        })
    }

    fn corrupted(
        &mut self,
        name: &str,
        base: &str,
        edit: Edit,
        p: Provider,
    ) -> Result<String, String> {
        let db = self.copy(base, name)?;
        let sid = first_session(&db)?;
        apply(&db, edit)?;
        // Found later, not while the client writes it: repair refuses a session touched in
        // the last minutes.
        age(&db)?;
        let rules = self.rules(&db)?;
        let Some(rule) = edit.rule(p) else {
            if !rules.is_empty() {
                return Err(format!(
                    "rewind reports {} where this client sends a well-formed request",
                    join(&rules)
                ));
            }
            self.continue_and_compare(&db, &sid, p)?;
            return Ok("clean; the client handles it, the next request matches".into());
        };
        if !rules.contains(rule) {
            return Err(format!("rewind does not name {rule}: {}", join(&rules)));
        }
        // What the client does with the broken session, against what rewind predicts.
        let broken = self.copy(name, &format!("{name}:broken"))?;
        let before = match self.continue_and_compare_as(&broken, &sid, p, true) {
            Ok(_) => "the client resumes it as predicted".to_string(),
            Err(e) if e.starts_with("the client sent no request") => {
                if !rules
                    .iter()
                    .any(|r| r == "validation-crash" || r == "schema-violation")
                {
                    return Err(format!(
                        "the client cannot load it, rewind does not say so: {}",
                        join(&rules)
                    ));
                }
                "the client cannot load it, as rewind says".into()
            }
            Err(e) => return Err(format!("before repair: {e}")),
        };
        let repaired = self.copy(name, &format!("{name}:repaired"))?;
        let out = self.rewind_out(&["repair"], &repaired)?;
        if !edit.repairable() {
            // Which of two calls is the real one needs a person: rewind leaves it alone.
            if !out.contains("nothing to repair") {
                return Err(format!(
                    "repair changed a corruption it should leave to a person: {}",
                    tail(&out)
                ));
            }
            return Ok(format!("{rule}: {before}; left to a person, as documented"));
        }
        let after = self.rules(&repaired)?;
        if !after.is_empty() {
            return Err(format!(
                "after repair rewind still reports {} (repair said: {})",
                join(&after),
                tail(&out)
            ));
        }
        self.continue_and_compare(&repaired, &sid, p)?;
        Ok(format!("{rule}: {before}; repaired, resumed well-formed"))
    }

    fn killed(&mut self, name: &str, p: Provider) -> Result<String, String> {
        let dir = self.dir(name);
        let data = dir.join("data");
        std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
        let db = data.join("opencode/opencode.db");
        let mut child = self.client.spawn(&data, p, "SCN:sleeptool go");
        let running = poll(Duration::from_secs(60), || {
            db.exists()
                && query_one(
                    &db,
                    "select id from part where json_extract(data,'$.state.status')='running'",
                )
                .is_some()
        });
        std::thread::sleep(Duration::from_millis(500));
        client::kill_tree(child.id());
        let _ = child.wait();
        if !running {
            return Err("the tool never ran".into());
        }
        let sid = first_session(&db)?;
        let rules = self.rules(&db)?;
        if !rules.contains("tool-never-finished") {
            return Err(format!(
                "rewind does not name the tool left running: {}",
                join(&rules)
            ));
        }
        let broken = self.copy(name, &format!("{name}:broken"))?;
        let (_, _) = self.continue_and_compare(&broken, &sid, p)?;
        let repaired = self.copy(name, &format!("{name}:repaired"))?;
        age(&repaired)?;
        self.rewind_out(&["repair"], &repaired)?;
        let mark = self.mock.mark();
        self.client.run(
            repaired.parent().unwrap().parent().unwrap(),
            p,
            Some(&sid),
            "SCN:text continue",
        );
        let req = self
            .mock
            .since(mark)
            .into_iter()
            .next()
            .ok_or("the client sent no request after repair")?;
        let anthropic = p == Provider::Anthropic;
        let problems = request_problems(&req.body, anthropic);
        if !problems.is_empty() {
            return Err(format!(
                "after repair the request is malformed: {}",
                problems.join("; ")
            ));
        }
        let results: Vec<String> = shape(&req.body, anthropic)
            .into_iter()
            .flat_map(|(_, b)| b)
            .filter(|b| b.starts_with("tool_result:"))
            .collect();
        if anthropic && !results.iter().any(|b| b.ends_with(":error")) {
            return Err(format!(
                "after repair the closed tool reaches the model as a success: {}",
                results.join(", ")
            ));
        }
        Ok("tool-never-finished; prediction matches; repaired tool sent as an error".into())
    }

    fn export_roundtrip(&mut self, name: &str, from: &str, p: Provider) -> Result<String, String> {
        let db = self.copy(from, name)?;
        let data = db.parent().unwrap().parent().unwrap().to_path_buf();
        let sid = first_session(&db)?;
        let dir = self.dir(name);
        let mut cmd = self.client.command(&data, p);
        cmd.args(["export", &sid]);
        let out = client::wait(cmd, Duration::from_secs(60));
        let export = dir.join("session.json");
        let json_start = out
            .stdout
            .find('{')
            .ok_or("opencode export printed no JSON")?;
        std::fs::write(&export, &out.stdout[json_start..]).map_err(|e| e.to_string())?;
        let before = self.rules(&export)?;
        if before.is_empty() {
            return Err("rewind finds nothing in the export of a killed session".into());
        }
        self.rewind_out(&["repair"], &export)?;
        let repaired = std::fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains("repaired"))
            })
            .ok_or("repair wrote no repaired export")?;
        let after = self.rules(&repaired)?;
        if !after.is_empty() {
            return Err(format!("the repaired export still has {}", join(&after)));
        }
        let mut del = self.client.command(&data, p);
        del.args(["session", "delete", &sid]);
        client::wait(del, Duration::from_secs(60));
        let mut imp = self.client.command(&data, p);
        imp.arg("import").arg(&repaired);
        let r = client::wait(imp, Duration::from_secs(60));
        if !r.ok {
            return Err(format!("opencode import failed: {}", tail(&r.stderr)));
        }
        self.continue_and_compare(&db, &sid, p)?;
        Ok(format!(
            "export: {}; repaired, imported, resumed as predicted",
            join(&before)
        ))
    }

    fn user_abort(&mut self, name: &str, p: Provider) -> Result<String, String> {
        let data = self.dir(name).join("data");
        std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
        let db = data.join("opencode/opencode.db");
        let port = free_port();
        let mut cmd = self.client.command(&data, p);
        let log =
            std::fs::File::create(self.dir(name).join("serve.log")).map_err(|e| e.to_string())?;
        cmd.args(["serve", "--port", &port.to_string()])
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        let mut serve = cmd.spawn().map_err(|e| e.to_string())?;
        let result = (|| {
            if !poll(Duration::from_secs(60), || {
                http(port, "GET", "/session", None).is_some()
            }) {
                return Err("opencode serve did not start".to_string());
            }
            let created =
                http(port, "POST", "/session", Some(json!({}))).ok_or("cannot create a session")?;
            let sid = created["id"].as_str().ok_or("no session id")?.to_string();
            http(
                port,
                "POST",
                &format!("/session/{sid}/prompt_async"),
                Some(json!({"parts": [{"type": "text", "text": "SCN:sleeptool go"}]})),
            );
            if !poll(Duration::from_secs(60), || {
                query_one(
                    &db,
                    "select id from part where json_extract(data,'$.state.status')='running'",
                )
                .is_some()
            }) {
                return Err("the tool never ran".to_string());
            }
            std::thread::sleep(Duration::from_secs(1));
            http(
                port,
                "POST",
                &format!("/session/{sid}/abort"),
                Some(json!({})),
            );
            std::thread::sleep(Duration::from_secs(2));
            Ok(sid)
        })();
        client::kill_tree(serve.id());
        let _ = serve.wait();
        result?;
        let stored = stored_errors(&db)?;
        if !stored.iter().any(|e| e == "MessageAbortedError") {
            return Err(format!("the client stored no abort: {}", stored.join(", ")));
        }
        let doc = self.diagnose(&db)?;
        let loud: Vec<String> = doc["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                format!(
                    "{} ({})",
                    f["rule"].as_str().unwrap_or("?"),
                    f["severity"].as_str().unwrap_or("?")
                )
            })
            .collect();
        if !loud.is_empty() {
            return Err(format!("a user's stop is reported: {}", loud.join(", ")));
        }
        let summary = &doc["files"][0]["sessions"][0]["stopped_by_user"];
        if summary != 1 {
            return Err(format!("the summary does not count the stop: {summary}"));
        }
        Ok("MessageAbortedError stored; no finding, the summary counts the stop".into())
    }

    fn repair_idle(&mut self, name: &str, from: &str, p: Provider) -> Result<String, String> {
        let db = self.copy(from, name)?;
        let data = db.parent().unwrap().parent().unwrap().to_path_buf();
        let sid = first_session(&db)?;
        age(&db)?;
        let port = free_port();
        let mut cmd = self.client.command(&data, p);
        let log =
            std::fs::File::create(self.dir(name).join("serve.log")).map_err(|e| e.to_string())?;
        cmd.args(["serve", "--port", &port.to_string()])
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log);
        let mut serve = cmd.spawn().map_err(|e| e.to_string())?;
        let result = (|| {
            if !poll(Duration::from_secs(60), || {
                http(port, "GET", "/session", None).is_some()
            }) {
                return Err("opencode serve did not start".to_string());
            }
            http(port, "GET", &format!("/session/{sid}/message"), None);
            let out = self.rewind_out(&["repair"], &db)?;
            let after = self.rules(&db)?;
            if !after.is_empty() {
                return Err(format!(
                    "repair while serve idles left {}: {}",
                    join(&after),
                    tail(&out)
                ));
            }
            let mark = self.mock.mark();
            http(
                port,
                "POST",
                &format!("/session/{sid}/message"),
                Some(json!({"parts": [{"type": "text", "text": "SCN:text continue"}]})),
            );
            let req = self
                .mock
                .since(mark)
                .into_iter()
                .next()
                .ok_or("the server sent no request after repair")?;
            let problems = request_problems(&req.body, p == Provider::Anthropic);
            if !problems.is_empty() {
                return Err(format!(
                    "after repair the request is malformed: {}",
                    problems.join("; ")
                ));
            }
            Ok(())
        })();
        client::kill_tree(serve.id());
        let _ = serve.wait();
        result?;
        Ok("repaired while serve held the store; resumed through serve, well-formed".into())
    }

    fn repair_streaming(&mut self, name: &str, from: &str, p: Provider) -> Result<String, String> {
        let db = self.copy(from, name)?;
        let data = db.parent().unwrap().parent().unwrap().to_path_buf();
        let mut child = self.client.spawn(&data, p, "SCN:slow go");
        let streaming = poll(Duration::from_secs(60), || {
            query_one(&db, "select p.id from part p join message m on m.id=p.message_id where json_extract(m.data,'$.role')='assistant' and json_extract(m.data,'$.time.completed') is null and json_extract(p.data,'$.type')='text'").is_some()
        });
        if !streaming {
            client::kill_tree(child.id());
            let _ = child.wait();
            return Err("the slow stream never started".into());
        }
        let out = Command::new(&self.rewind)
            .args(["repair", "--color", "never"])
            .arg(&db)
            .output();
        let finished = poll(Duration::from_secs(60), || {
            matches!(child.try_wait(), Ok(Some(_)))
        });
        if !finished {
            client::kill_tree(child.id());
        }
        let _ = child.wait();
        let out = out.map_err(|e| e.to_string())?;
        let code = out.status.code().unwrap_or(-1);
        let said = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        let streamed = query_one(
            &db,
            "select session_id from part where data like '%SCN:slow%'",
        )
        .ok_or("no streamed session")?;
        let marked = query_one(&db, &format!("select count(*) from part where session_id='{streamed}' and json_extract(data,'$.metadata.rewind') is not null")).unwrap_or_default();
        if marked != "0" {
            return Err(format!(
                "repair changed {marked} part(s) of the session OpenCode was writing (exit {code}: {})",
                tail(&said)
            ));
        }
        let doc = self.diagnose(&db)?;
        let damaged: Vec<String> = doc["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["session_id"] == streamed.as_str())
            .map(|f| f["rule"].as_str().unwrap_or("?").to_string())
            .collect();
        if !damaged.is_empty() {
            return Err(format!(
                "the streamed session ended damaged: {}",
                damaged.join(", ")
            ));
        }
        Ok(format!(
            "repair exit {code} while the client streamed; the streamed session untouched and clean"
        ))
    }

    /// Rebuilds the next request with rewind, continues the session with the real client, and
    /// compares the two. Returns the prediction and how many messages the client sent.
    fn continue_and_compare(
        &mut self,
        db: &Path,
        sid: &str,
        p: Provider,
    ) -> Result<(Shape, usize), String> {
        self.continue_and_compare_as(db, sid, p, false)
    }

    /// As `continue_and_compare`; with `broken` (rewind named what breaks it), a malformed
    /// request from the client is expected.
    fn continue_and_compare_as(
        &mut self,
        db: &Path,
        sid: &str,
        p: Provider,
        broken: bool,
    ) -> Result<(Shape, usize), String> {
        let predicted = self.predict(db, sid, p)?;
        let data = db
            .parent()
            .and_then(Path::parent)
            .ok_or("bad data folder")?
            .to_path_buf();
        let mark = self.mock.mark();
        let run = self.client.run(&data, p, Some(sid), "SCN:text continue");
        let req = self.mock.since(mark).into_iter().next().ok_or_else(|| {
            format!(
                "the client sent no request: {}",
                tail(&(run.stderr + &run.stdout))
            )
        })?;
        // Kept beside the case's store, for a look at what the client sent.
        let _ = std::fs::write(
            data.with_file_name("request.json"),
            serde_json::to_string_pretty(&req.body).unwrap_or_default(),
        );
        let anthropic = p == Provider::Anthropic;
        let problems = request_problems(&req.body, anthropic);
        // A broken session: rewind already named the rule that breaks the request.
        if !problems.is_empty() && !broken {
            return Err(format!(
                "the client's request is malformed ({}) and rewind's prediction was {}",
                problems.join("; "),
                render(&predicted)
            ));
        }
        let mut real = shape(&req.body, anthropic);
        drop_prompt(&mut real);
        let norm = |s: &Shape| -> Shape {
            s.iter()
                .map(|(r, b)| {
                    (
                        r.clone(),
                        b.iter()
                            .map(|b| {
                                let b = if b == "text:empty" {
                                    "text".to_string()
                                } else {
                                    b.clone()
                                };
                                if anthropic {
                                    b
                                } else {
                                    b.trim_end_matches(":error").to_string()
                                }
                            })
                            .collect(),
                    )
                })
                .collect()
        };
        let (pn, rn) = (norm(&predicted), norm(&real));
        if pn != rn {
            return Err(format!(
                "rewind predicts {}\n        the client sent {}",
                render(&pn),
                render(&rn)
            ));
        }
        Ok((predicted, real.len()))
    }

    /// rewind's rebuilt request.
    fn predict(&self, db: &Path, sid: &str, p: Provider) -> Result<Shape, String> {
        let out = Command::new(&self.rewind)
            .args([
                "request",
                "--format",
                "json",
                "--session",
                sid,
                "--provider",
                p.name(),
            ])
            .arg(db)
            .output()
            .map_err(|e| e.to_string())?;
        let doc: Value = serde_json::from_slice(&out.stdout).map_err(|_| {
            format!(
                "rewind request printed no JSON: {}",
                tail(&String::from_utf8_lossy(&out.stderr))
            )
        })?;
        let shape = doc["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                let role = m["role"].as_str().unwrap_or("?").to_string();
                let blocks = m["blocks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|b| {
                        let id = b["id"].as_str().unwrap_or("");
                        match b["type"].as_str().unwrap_or("?") {
                            "text" => "text".to_string(),
                            "reasoning" => "reasoning".to_string(),
                            "tool_use" => format!("tool_use:{id}"),
                            "tool_result" => format!(
                                "tool_result:{id}{}",
                                if b["is_error"] == true { ":error" } else { "" }
                            ),
                            other => format!("other:{other}"),
                        }
                    })
                    .collect();
                (role, blocks)
            })
            .collect();
        Ok(shape)
    }

    /// Sessions hidden from OpenCode's list the ways users report (a project row gone, a
    /// duplicate project row for the worktree, filed under `global` from a subfolder), plus one
    /// OpenCode brings back by itself (`global` at the worktree itself): rewind's prediction must
    /// be what the real `opencode session list` shows, and after `rewind repair` the real list
    /// must show every session.
    fn hidden_sessions(&mut self, name: &str, p: Provider) -> Result<String, String> {
        let dir = self.dir(name);
        let (data, repo) = (dir.join("data"), dir.join("repo"));
        std::fs::create_dir_all(repo.join("sub")).map_err(|e| e.to_string())?;
        let git = |args: &[&str]| {
            Command::new("git")
                .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
                .args(args)
                .current_dir(&repo)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !git(&["init", "-q"]) || !git(&["commit", "-q", "--allow-empty", "-m", "root"]) {
            return Err("git init/commit failed in the case's repository".into());
        }
        for _ in 0..5 {
            let mut cmd = self.client.command(&data, p);
            // OpenCode takes its folder from `PWD` when it is set.
            cmd.current_dir(&repo).env("PWD", &repo).args([
                "run",
                "SCN:text go",
                "--format",
                "json",
            ]);
            let run = client::wait(cmd, Duration::from_secs(150));
            if !run.ok {
                return Err(format!("opencode run failed: {}", tail(&run.stderr)));
            }
        }
        let db = data.join("opencode/opencode.db");
        let all = self.listed(&data, &repo, p)?;
        if all.len() != 5 {
            return Err(format!(
                "the real list shows {} of 5 new sessions",
                all.len()
            ));
        }
        let ids: Vec<String> = all.iter().cloned().collect();
        let repo_s = repo.to_string_lossy().to_string();
        let c = open(&db)?;
        c.execute_batch(&format!(
            "PRAGMA foreign_keys = OFF;
             INSERT OR IGNORE INTO project (id, worktree, vcs, time_created, time_updated, sandboxes)
               VALUES ('global', '/', NULL, 0, 0, '[]');
             INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes)
               VALUES ('prj_duplicate', '{repo_s}', 'git', 0, 9999999999999, '[]');
             UPDATE session SET project_id = 'prj_gone' WHERE id = '{}';
             UPDATE session SET project_id = 'prj_duplicate' WHERE id = '{}';
             UPDATE session SET project_id = 'global', directory = '{repo_s}/sub' WHERE id = '{}';
             UPDATE session SET project_id = 'global' WHERE id = '{}';",
            ids[0], ids[1], ids[2], ids[3]
        ))
        .map_err(|e| format!("cannot hide the sessions: {e}"))?;
        drop(c);
        // rewind's prediction, before the real client runs (it refiles the last one).
        let doc = self.diagnose(&db)?;
        let predicted: BTreeSet<String> = doc["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["rule"] == "session-hidden" && f["severity"] == "warning")
            .filter_map(|f| f["session_id"].as_str().map(str::to_string))
            .collect();
        let shown = self.listed(&data, &repo, p)?;
        let real: BTreeSet<String> = all.difference(&shown).cloned().collect();
        if predicted != real {
            return Err(format!(
                "rewind says hidden: {}; the real list hides: {}",
                join(&predicted),
                join(&real)
            ));
        }
        let out = self.rewind_out(&["repair"], &db)?;
        if !out.contains("applied 3 changes") {
            return Err(format!("rewind repair: {}", tail(&out)));
        }
        let after = self.listed(&data, &repo, p)?;
        if after != all {
            return Err(format!(
                "after the repair the real list shows {} of {} sessions",
                after.len(),
                all.len()
            ));
        }
        let again = self.rewind_out(&["repair"], &db)?;
        if !again.contains("nothing to repair") {
            return Err(format!("a second repair is not a no-op: {}", tail(&again)));
        }
        Ok(format!(
            "{} hidden, as the real list; all {} listed after the repair",
            real.len(),
            all.len()
        ))
    }

    /// The ids `opencode session list` shows, run in `folder`.
    fn listed(&self, data: &Path, folder: &Path, p: Provider) -> Result<BTreeSet<String>, String> {
        let mut cmd = self.client.command(data, p);
        cmd.current_dir(folder)
            .env("PWD", folder)
            .args(["session", "list", "--format", "json"]);
        let run = client::wait(cmd, Duration::from_secs(60));
        if run.ok && run.stdout.trim().is_empty() {
            return Ok(BTreeSet::new());
        }
        let v: Value = serde_json::from_str(run.stdout.trim()).map_err(|_| {
            format!(
                "opencode session list printed no JSON: {}",
                tail(&(run.stdout.clone() + &run.stderr))
            )
        })?;
        Ok(v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["id"].as_str().map(str::to_string))
            .collect())
    }

    fn diagnose(&self, path: &Path) -> Result<Value, String> {
        let out = Command::new(&self.rewind)
            .args(["diagnose", "--format", "json"])
            .arg(path)
            .output()
            .map_err(|e| e.to_string())?;
        serde_json::from_slice(&out.stdout).map_err(|_| {
            format!(
                "rewind diagnose printed no JSON: {}",
                tail(&String::from_utf8_lossy(&out.stderr))
            )
        })
    }

    fn rules(&self, path: &Path) -> Result<BTreeSet<String>, String> {
        let doc = self.diagnose(path)?;
        Ok(doc["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["rule"].as_str().map(str::to_string))
            .collect())
    }

    fn rewind_out(&self, args: &[&str], path: &Path) -> Result<String, String> {
        let out = Command::new(&self.rewind)
            .args(args)
            .args(["--color", "never"])
            .arg(path)
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(2) {
            return Err(format!("rewind {} failed: {}", args.join(" "), tail(&text)));
        }
        Ok(text)
    }
}

/// Drops the continue prompt the client appended: the last user text block.
fn drop_prompt(s: &mut Shape) {
    if let Some((role, blocks)) = s.last_mut()
        && role == "user"
    {
        if let Some(i) = blocks.iter().rposition(|b| b.starts_with("text")) {
            blocks.remove(i);
        }
        if blocks.is_empty() {
            s.pop();
        }
    }
}

fn render(s: &Shape) -> String {
    s.iter()
        .map(|(r, b)| format!("{r}[{}]", b.join(",")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn join(s: &BTreeSet<String>) -> String {
    if s.is_empty() {
        "none".into()
    } else {
        s.iter().cloned().collect::<Vec<_>>().join(" ")
    }
}

fn tail(s: &str) -> String {
    let t: Vec<&str> = s.trim().lines().rev().take(3).collect();
    let t = t.into_iter().rev().collect::<Vec<_>>().join(" | ");
    t.chars().take(300).collect()
}

fn open(db: &Path) -> Result<rusqlite::Connection, String> {
    let c = rusqlite::Connection::open(db).map_err(|e| e.to_string())?;
    c.busy_timeout(Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    Ok(c)
}

fn query_one(db: &Path, sql: &str) -> Option<String> {
    let c = open(db).ok()?;
    c.query_row(sql, [], |r| {
        let v: rusqlite::types::Value = r.get(0)?;
        Ok(match v {
            rusqlite::types::Value::Text(t) => t,
            rusqlite::types::Value::Integer(i) => i.to_string(),
            other => format!("{other:?}"),
        })
    })
    .ok()
}

fn first_session(db: &Path) -> Result<String, String> {
    query_one(db, "select id from session order by time_created limit 1")
        .ok_or_else(|| format!("no session in {}", db.display()))
}

/// The names of the errors the client stored on messages.
fn stored_errors(db: &Path) -> Result<Vec<String>, String> {
    let c = open(db)?;
    let mut st = c
        .prepare("select json_extract(data,'$.error.name') from message where json_extract(data,'$.error') is not null order by id")
        .map_err(|e| e.to_string())?;
    let rows = st
        .query_map([], |r| r.get::<_, Option<String>>(0))
        .map_err(|e| e.to_string())?;
    Ok(rows.filter_map(|r| r.ok().flatten()).collect())
}

/// Makes every row of the store an hour older: a session nobody has written for a while.
fn age(db: &Path) -> Result<(), String> {
    let c = open(db)?;
    for t in ["session", "message", "part"] {
        c.execute(&format!("update {t} set time_updated = time_updated - 3600000, time_created = time_created - 3600000"), [])
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Applies a known corruption to the store's first tool session, with plain SQL.
fn apply(db: &Path, edit: Edit) -> Result<(), String> {
    let c = open(db)?;
    let one = |sql: &str| -> Result<String, String> {
        c.query_row(sql, [], |r| r.get::<_, String>(0))
            .map_err(|e| format!("{sql}: {e}"))
    };
    let a = one(
        "select id from message where json_extract(data,'$.finish') in ('tool-calls','tool_use') order by id limit 1",
    )?;
    let b = one(
        "select id from message where json_extract(data,'$.role')='assistant' order by id desc limit 1",
    )?;
    let tool = one(&format!(
        "select id from part where message_id='{a}' and json_extract(data,'$.type')='tool'"
    ))?;
    let exec = |sql: &str| {
        c.execute(sql, [])
            .map(|_| ())
            .map_err(|e| format!("{sql}: {e}"))
    };
    match edit {
        Edit::Failed => exec(&format!(
            "update part set data=json_set(data,'$.state.status','failed','$.state.error','Command failed: boom') where id='{tool}'"
        )),
        Edit::Merged => {
            let text = one(&format!(
                "select id from part where message_id='{b}' and json_extract(data,'$.type')='text'"
            ))?;
            exec(&format!(
                "insert into part(id,message_id,session_id,time_created,time_updated,data) select '{tool}z','{a}',session_id,time_created,time_updated,data from part where id='{text}'"
            ))?;
            exec(&format!(
                "update message set data=json_set(data,'$.finish','stop') where id='{a}'"
            ))?;
            exec(&format!("delete from part where message_id='{b}'"))?;
            exec(&format!("delete from message where id='{b}'"))
        }
        Edit::RunningMid => {
            exec(&format!(
                "update part set data=json_set(json_remove(data,'$.state.output','$.state.title','$.state.time.end'),'$.state.status','running') where id='{tool}'"
            ))?;
            exec(&format!(
                "delete from part where message_id='{a}' and json_extract(data,'$.type')='step-finish'"
            ))
        }
        Edit::EmptyText => exec(&format!(
            "update part set data=json_set(data,'$.text','') where message_id='{b}' and json_extract(data,'$.type')='text'"
        )),
        Edit::BlankText => exec(&format!(
            "update part set data=json_set(data,'$.text',char(10)) where message_id='{b}' and json_extract(data,'$.type')='text'"
        )),
        Edit::DuplicateCallId => {
            // A second step calling a tool again under the first call's id.
            exec(&format!(
                "insert into part(id,message_id,session_id,time_created,time_updated,data) select '{tool}z','{b}',session_id,time_created,time_updated,data from part where id='{tool}'"
            ))?;
            let text = one(&format!(
                "select id from part where message_id='{b}' and json_extract(data,'$.type')='text'"
            ))?;
            // Keep the call before the closing text, in the same order OpenCode would write it.
            exec(&format!("update part set id='{text}z' where id='{text}'"))
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(18093)
}

/// A small HTTP/1.1 request to `opencode serve`; the JSON it answered, if any.
fn http(port: u16, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    // A request made while the server starts may never be answered: a GET (the readiness
    // poll) gives up soon and is asked again.
    let wait = if method == "GET" { 5 } else { 90 };
    s.set_read_timeout(Some(Duration::from_secs(wait))).ok()?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).ok()?;
    // The server keeps the connection open: read the head, then exactly the body it announces.
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    let (head, mut body) = loop {
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        out.extend_from_slice(&buf[..n]);
        if let Some(i) = out.windows(4).position(|w| w == b"\r\n\r\n") {
            break (
                String::from_utf8_lossy(&out[..i]).to_string(),
                out[i + 4..].to_vec(),
            );
        }
    };
    if !head.starts_with("HTTP/1.1 2") {
        return None;
    }
    let lower = head.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let chunked = lower.contains("transfer-encoding: chunked");
    loop {
        let done = match length {
            Some(n) => body.len() >= n,
            None if chunked => body.ends_with(b"0\r\n\r\n"),
            None => false,
        };
        if done {
            break;
        }
        let n = s.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&body).to_string();
    let text = if chunked { dechunk(&text) } else { text };
    Some(serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}
