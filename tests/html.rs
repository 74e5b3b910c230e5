//! `--format html`: one self-contained page per run, checked as text and, when a Chromium is
//! installed, as the DOM a real browser builds from it (plus a screenshot).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{repo, rewind};

fn html(args: &[&str], files: &[&Path]) -> (i32, String) {
    let out = rewind()
        .arg("diagnose")
        .args(["--format", "html"])
        .args(args)
        .args(files)
        .output()
        .expect("run rewind");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8 page"),
    )
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// What every page must be: one document, no script, a restrictive policy, balanced sections.
fn assert_page(page: &str) {
    assert!(page.starts_with("<!DOCTYPE html>"), "{}", &page[..100]);
    assert_eq!(count(page, "<html"), 1);
    assert_eq!(count(page, "</html>"), 1);
    assert_eq!(count(page, "<body>"), 1);
    assert_eq!(count(page, "</body>"), 1);
    assert!(page.contains("http-equiv=\"Content-Security-Policy\""));
    assert!(page.contains("default-src 'none'"));
    assert!(!page.contains("<script"), "no script element");
    assert!(
        !page.contains('\u{1}'),
        "unit placeholders are all replaced"
    );
    // Inside tags (the input never puts a `<` there: it is escaped): no event handler, no
    // resource to load, links only within the page.
    for tag in page.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap_or_default();
        assert!(!tag.contains(" on"), "event handler in <{tag}>");
        assert!(!tag.contains("src="), "resource in <{tag}>");
        assert!(
            !tag.contains("href=") || tag.contains("href=\"#"),
            "link out in <{tag}>"
        );
    }
    for tag in ["section", "details", "ol", "li", "pre", "summary", "table"] {
        assert_eq!(
            count(page, &format!("<{tag}>")) + count(page, &format!("<{tag} ")),
            count(page, &format!("</{tag}>")),
            "balanced <{tag}>"
        );
    }
    assert!(page.contains("page size: "));
}

#[test]
fn an_agent_log_and_a_stream_capture_render_with_their_findings_and_timelines() {
    let log = repo("samples/zod-failed-status.log");
    let sse = repo("samples/sse-concatenated-chunk.sse");
    let (code, page) = html(&[], &[&log, &sse]);
    assert_eq!(code, 1, "errors fail the run as with any format");
    assert_page(&page);
    assert_eq!(count(&page, "<section class=\"unit\""), 2);
    for rule in [
        "[validation-crash]",
        "[session-error]",
        "[sse-concatenated-events]",
    ] {
        assert!(page.contains(rule), "{rule} missing");
    }
    for id in ["ses_2d9e3a1c0ffeQk4VYbq7XN2mTd", "capture"] {
        assert!(page.contains(&format!("<span class=\"sid\">{id}</span>")));
    }
    // Root cause first, pinned on the timeline, with its annotated source.
    let root = page.find("root cause").expect("a root cause");
    assert!(root < page.find("[session-error]").unwrap());
    assert!(page.contains("class=\"timeline\""));
    assert!(page.contains("pinned sev-error"));
    assert!(page.contains("<mark class=\"p\">"));
    assert!(page.contains("ZodError thrown here"));
    // Stream facts: the skipped event, the tool's transitions, the outcome.
    assert!(page.contains("skipped by the processor"));
    assert!(page.contains("pending (event 3) → running (event 8, +5)"));
    assert!(page.contains("outcome: completed (finish: tool-calls)"));
    // Ids are unique across units.
    let ids: Vec<&str> = page
        .split(" id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(ids.len(), unique.len());
    // Every link to a finding or entry has its target.
    for href in page.split("href=\"#").skip(1) {
        let target = href.split('"').next().unwrap();
        assert!(ids.contains(&target), "dangling link #{target}");
    }
}

#[test]
fn markup_in_the_input_is_shown_escaped() {
    let (code, page) = html(&[], &[&repo("tests/fixtures/html/script-in-log.log")]);
    assert_eq!(code, 1);
    assert_page(&page);
    assert!(page.contains("I&#39;ll write &lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;"));
    assert!(page.contains("&lt;img src=x onerror=alert(3)&gt;"));
    assert!(page.contains("[tool-error-dropped]"));
}

#[test]
fn sessions_without_findings_are_one_collapsed_line() {
    let (code, page) = html(&[], &[&repo("samples/clean-session.log")]);
    assert_eq!(code, 0);
    assert_page(&page);
    assert!(page.contains("<details class=\"session clean\""));
    assert!(!page.contains(" open>"));
    assert!(page.contains("no findings"));
}

/// Runs a command for at most `limit`, returning whether it exited successfully.
fn run_for(cmd: &mut Command, limit: Duration) -> bool {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status.success();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_real_browser_builds_the_sessions_findings_and_timeline() {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        eprintln!("skipped: /usr/bin/chromium is not installed (apt-get install chromium)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page_path = dir.path().join("report.html");
    let (_, page) = html(
        &[],
        &[
            &repo("samples/zod-failed-status.log"),
            &repo("tests/fixtures/html/script-in-log.log"),
        ],
    );
    std::fs::write(&page_path, &page).unwrap();
    let url = format!("file://{}", page_path.display());
    let base = |cmd: &mut Command| {
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ));
    };
    let mut dump = Command::new(chromium);
    base(&mut dump);
    let out = dump
        .args(["--dump-dom", &url])
        .stderr(Stdio::null())
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("<details class=\"session findings\""), "{dom}");
    assert!(dom.contains("ses_2d9e3a1c0ffeQk4VYbq7XN2mTd"));
    assert!(dom.contains("class=\"finding sev-error\""));
    assert!(dom.contains("[validation-crash]"));
    assert!(dom.contains("<ol class=\"timeline\">"));
    assert!(dom.contains("<ul class=\"pins\">"));
    // The parser kept the structure as written (a misnested tag would be moved or dropped).
    for needle in [
        "<section class=\"unit\"",
        "<details ",
        "class=\"finding ",
        "<li class=\"entry ",
        "<ol class=\"steps\">",
        "<mark ",
        "<pre>",
    ] {
        assert_eq!(count(&dom, needle), count(&page, needle), "{needle}");
    }
    // The input's markup stayed text: the browser built no script or image from it.
    assert!(!dom.contains("<script") && !dom.contains("<img"));
    assert!(dom.contains("&lt;script&gt;alert('pwned')&lt;/script&gt;"));

    let png = dir.path().join("report.png");
    let mut shot = Command::new(chromium);
    base(&mut shot);
    shot.arg(format!("--screenshot={}", png.display()))
        .args(["--window-size=1280,1600", &url]);
    assert!(run_for(&mut shot, Duration::from_secs(90)));
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(bytes.len() > 10_000, "a screenshot with content");
}

#[test]
fn long_timelines_are_capped_and_say_what_was_elided() {
    let sample = std::fs::read_to_string(repo("samples/pending-tool-aborted.log")).unwrap();
    let lines: Vec<&str> = sample.lines().collect();
    let text = lines[1];
    let mut big = String::new();
    big.push_str(lines[0]);
    big.push('\n');
    for i in 0..2000 {
        big.push_str(&text.replace(
            "prt_d480ec80a001Xc5Vb6Nm7Qw8Er",
            &format!("prt_d480ec80a001Xc5Vb6N{i:07}"),
        ));
        big.push('\n');
    }
    for l in &lines[2..] {
        big.push_str(l);
        big.push('\n');
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.log");
    std::fs::write(&path, big).unwrap();
    let (code, page) = html(&[], &[&path]);
    assert_eq!(code, 1);
    assert_page(&page);
    let entries = count(&page, "<li class=\"entry ");
    assert!(entries <= 300, "{entries} entries rendered");
    assert!(page.contains("entries elided ("), "the elision is said");
    // The entries the findings are about are kept.
    assert!(page.contains("pinned sev-error"));
    assert!(page.contains("[tool-error-dropped]"));
    assert!(page.len() < 400_000, "page of {} bytes", page.len());
}

#[test]
fn check_writes_the_page_too() {
    let out = rewind()
        .args(["check", "--no-config", "--format", "html"])
        .arg(repo("samples"))
        .output()
        .expect("run rewind");
    let page = String::from_utf8(out.stdout).unwrap();
    assert_page(&page);
    assert!(count(&page, "<section class=\"unit\"") >= 8);
    assert!(page.contains("<ul class=\"files\">"));
}

#[test]
fn a_database_renders_its_sessions_rows_as_sources() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::opencode::build_db(
        &dir.path().join("opencode.db"),
        &common::opencode::sessions(),
    );
    let (code, page) = html(&[], &[&db]);
    assert_eq!(code, 1);
    assert_page(&page);
    assert!(page.contains("<span class=\"sid\">ses_pr16751</span>"));
    assert!(page.contains("<details class=\"session findings\""));
    // Labels point into rows rendered as text, named by their locator.
    assert!(page.contains("opencode.db › "));
    assert!(page.contains("class=\"timeline\""));
    // A store's sessions without findings are one line, without a timeline.
    assert!(page.contains("no findings: timeline not rendered"));
    // The summary leads to the sessions with findings, and only to them.
    assert_links(&page);
    let jump = page.split("<ul class=\"jump\">").nth(1).unwrap();
    let jump = jump.split("</ul>").next().unwrap();
    assert!(jump.contains(">ses_pr16751</a>"), "{jump}");
    assert_eq!(count(jump, "<a href=\"#"), count(&page, " open>"), "{jump}");
}

#[test]
fn past_a_hundred_findings_a_session_lists_the_rest_one_line_each() {
    // 150 tools left running, each of its own name: 150 findings none alike, and the step.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.log");
    let (s, m) = ("ses_1", "msg_1");
    let mut log = format!(
        "{{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_s\",\"sessionID\":\"{s}\",\"messageID\":\"{m}\",\"type\":\"step-start\"}}}}\n"
    );
    for i in 0..150u8 {
        let name: String = [b'a' + i / 26, b'a' + i % 26]
            .iter()
            .map(|&b| b as char)
            .collect();
        log.push_str(&format!(
            "{{\"type\":\"tool_use\",\"timestamp\":2,\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_{i}\",\"sessionID\":\"{s}\",\"messageID\":\"{m}\",\"type\":\"tool\",\"callID\":\"call_{i}\",\"tool\":\"tool{name}\",\"state\":{{\"status\":\"running\",\"input\":{{}},\"time\":{{\"start\":2}}}}}}}}\n"
        ));
    }
    std::fs::write(&path, log).unwrap();
    let (code, page) = html(&[], &[&path]);
    assert_eq!(code, 1);
    assert_page(&page);
    assert_links(&page);
    let full = count(&page, "<li class=\"finding sev-");
    let brief = count(&page, "<li class=\"finding brief sev-");
    assert_eq!(full, 100);
    assert_eq!(brief, 51);
    assert!(page.contains(&format!("{brief} more findings, one line each")));
    // Only the full ones carry source lines.
    assert!(count(&page, "<div class=\"src\">") <= full);
}

#[test]
fn alike_findings_past_the_first_five_are_counted() {
    // 150 events cut alike: one group of 150 `sse-invalid-json` findings.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.sse");
    std::fs::write(&path, "data: {\"a\":\n\n".repeat(150)).unwrap();
    let (code, page) = html(&[], &[&path]);
    assert_eq!(code, 1);
    assert_page(&page);
    assert_links(&page);
    assert_eq!(count(&page, "[sse-invalid-json]</span>"), 5, "{page}");
    assert!(page.contains("and 145 more like these ([sse-invalid-json]"));
    assert_eq!(count(&page, "<li class=\"finding brief sev-"), 0);
}

/// `rewind replay CAPTURE --compare P1 P2 --format html`.
fn compare_html(capture: &Path, p1: &str, p2: &str) -> (i32, String) {
    let out = rewind()
        .arg("replay")
        .arg(capture)
        .args(["--compare", p1, p2, "--format", "html"])
        .output()
        .expect("run rewind");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8 page"),
    )
}

/// The ids of a page, each once, and every in-page link with its target.
fn assert_links(page: &str) {
    let ids: Vec<&str> = page
        .split(" id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "duplicate ids");
    for href in page.split("href=\"#").skip(1) {
        let target = href.split('"').next().unwrap();
        assert!(ids.contains(&target), "dangling link #{target}");
    }
}

/// The rows of a comparison table, as (class, cells' text without tags).
fn compare_rows(page: &str) -> Vec<(String, String)> {
    let body = page.split("<tbody>").nth(1).unwrap_or_default();
    let body = body.split("</tbody>").next().unwrap_or_default();
    body.split("<tr class=\"")
        .skip(1)
        .map(|r| {
            let class = r.split('"').next().unwrap().to_owned();
            let mut text = String::new();
            let mut inside = false;
            for c in r.split_once('>').map_or("", |x| x.1).chars() {
                match c {
                    '<' => inside = true,
                    '>' => inside = false,
                    _ if !inside => text.push(c),
                    _ => {}
                }
            }
            (class, text)
        })
        .collect()
}

#[test]
fn replay_compare_puts_two_timelines_side_by_side_and_marks_the_first_divergence() {
    let (code, page) = compare_html(
        &repo("samples/sse-concatenated-chunk.sse"),
        "opencode",
        "opencode-fixed",
    );
    assert_eq!(code, 1, "the first processor's errors fail the run");
    assert_page(&page);
    assert_links(&page);
    assert!(
        page.contains("<th class=\"proc\">opencode</th><th class=\"proc\">opencode-fixed</th>")
    );
    // Outcomes and findings of each run, the differing ones highlighted.
    assert!(page.contains("<tr class=\"diff\"><th>outcome</th><td>failed at event 4"));
    assert!(page.contains("<td>completed (finish: tool-calls)</td>"));
    assert!(page.contains("<tr class=\"diff\"><th>findings</th>"));
    let rows = compare_rows(&page);
    assert!(rows.len() >= 8, "{rows:?}");
    // The rows before the divergence are the same under both; the first differing row is the
    // only one marked first, and it is where opencode throws on the concatenated event.
    let first = rows.iter().position(|(c, _)| c == "diff first").unwrap();
    assert!(first >= 3, "{rows:?}");
    assert!(rows[..first].iter().all(|(c, _)| c == "same"), "{rows:?}");
    assert!(
        rows[first]
            .1
            .starts_with("event 4 (line 10) first divergence")
    );
    assert!(rows[first].1.contains("threw"), "{:?}", rows[first]);
    assert_eq!(rows.iter().filter(|(c, _)| c == "diff first").count(), 1);
    assert!(rows.iter().filter(|(c, _)| c == "diff").count() >= 4);
    // The fixed processor skips the event where opencode stops; the tool ends differently.
    assert!(
        rows.iter()
            .any(|(c, t)| c == "diff" && t.contains("skipped the malformed event"))
    );
    assert!(rows.iter().any(|(c, t)| c == "diff"
        && t.contains("→ error: &quot;Tool execution aborted&quot;")
        && t.contains("→ running · awaiting execution")));
    // A tool is one row per transition: both processors start the call the same way.
    assert!(rows.iter().any(|(c, t)| c == "same"
        && t.starts_with("event 3 (line 8)")
        && t.contains("call_read_0 pending")));
    // Anchored, linked from the verdict, focused when the page opens (no script).
    assert_eq!(count(&page, " id=\"diverge\""), 1);
    assert_eq!(count(&page, " autofocus"), 1);
    assert!(
        page.contains(
            "The processors diverge first at <a href=\"#c1-diverge\">event 4 (line 10)</a>"
        )
    );
    assert!(page.find("id=\"diverge\"").unwrap() > page.find("<tbody>").unwrap());
}

#[test]
fn replay_compare_of_processors_that_agree_marks_nothing() {
    let (code, page) = compare_html(
        &repo("tests/fixtures/stream/healthy-chat.sse"),
        "opencode",
        "opencode-fixed",
    );
    assert_eq!(code, 0);
    assert_page(&page);
    assert_links(&page);
    assert!(page.contains("class=\"verdict same\" id=\"c1-no-divergence\""));
    assert!(page.contains("The processors agree at every position"));
    let rows = compare_rows(&page);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|(c, _)| c == "same"), "{rows:?}");
    assert!(!page.contains("class=\"diff"));
    assert!(!page.contains("id=\"diverge\"") && !page.contains("autofocus"));
}

#[test]
fn replay_without_compare_writes_the_report_page() {
    let out = rewind()
        .arg("replay")
        .arg(repo("samples/sse-concatenated-chunk.sse"))
        .args(["--format", "html"])
        .output()
        .expect("run rewind");
    let page = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_page(&page);
    assert_eq!(count(&page, "<section class=\"unit\""), 1);
    assert!(page.contains("[sse-concatenated-events]"));
}

/// Chromium's DOM of a page, or `None` (with a message) when it is not installed.
fn browser_dom(page: &str) -> Option<String> {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        eprintln!("skipped: /usr/bin/chromium is not installed (apt-get install chromium)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let page_path = dir.path().join("page.html");
    std::fs::write(&page_path, page).unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .args(["--dump-dom", &format!("file://{}", page_path.display())])
        .stderr(Stdio::null())
        .output()
        .expect("run chromium");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_real_browser_builds_the_comparison_as_written() {
    let (_, page) = compare_html(
        &repo("samples/sse-concatenated-chunk.sse"),
        "opencode",
        "opencode-fixed",
    );
    let Some(dom) = browser_dom(&page) else {
        return;
    };
    assert!(dom.contains("<table class=\"compare\">"), "{dom}");
    assert!(dom.contains("<tr class=\"diff first\""));
    assert!(dom.contains("id=\"diverge\""));
    // The parser kept the structure: every row and cell where it was written.
    for needle in [
        "<tr class=\"same\"",
        "<tr class=\"diff\"",
        "<tr class=\"diff first\"",
        "<td class=\"run",
        "<td class=\"pos\"",
        "<section class=\"unit compare\"",
    ] {
        assert_eq!(count(&dom, needle), count(&page, needle), "{needle}");
    }
    assert!(!dom.contains("<script"));
}

/// A legacy storage folder holding the sessions of an `opencode export` document.
fn storage_from_export(export: &Path, root: &Path) {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(export).unwrap()).unwrap();
    let sid = doc["info"]["id"].as_str().unwrap().to_owned();
    std::fs::create_dir_all(root.join("session/prj_1")).unwrap();
    std::fs::write(
        root.join(format!("session/prj_1/{sid}.json")),
        doc["info"].to_string(),
    )
    .unwrap();
    for m in doc["messages"].as_array().unwrap() {
        let mid = m["info"]["id"].as_str().unwrap();
        std::fs::create_dir_all(root.join(format!("message/{sid}"))).unwrap();
        std::fs::write(
            root.join(format!("message/{sid}/{mid}.json")),
            m["info"].to_string(),
        )
        .unwrap();
        std::fs::create_dir_all(root.join(format!("part/{mid}"))).unwrap();
        for p in m["parts"].as_array().unwrap() {
            let pid = p["id"].as_str().unwrap();
            std::fs::write(root.join(format!("part/{mid}/{pid}.json")), p.to_string()).unwrap();
        }
    }
}

/// The format `diagnose --format json` recognises a file as.
fn format_of(path: &Path) -> String {
    let (_, doc) = common::diagnose_json(path, &[]);
    doc["files"][0]["format"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A page for one input: well formed, its unit and its sessions rendered, no markup from it.
fn assert_input_page(path: &Path, format: &str) {
    assert_eq!(format_of(path), format, "{}", path.display());
    let (code, page) = html(&[], &[path]);
    assert!(code == 0 || code == 1, "{}: exit {code}", path.display());
    assert_page(&page);
    assert_links(&page);
    // One unit per file, a database one per session.
    assert!(
        count(&page, "<section class=\"unit\"") >= 1,
        "{}",
        path.display()
    );
    assert!(
        page.contains("<details class=\"session "),
        "{}: no session section",
        path.display()
    );
    assert!(page.contains("<span class=\"sid\">"), "{}", path.display());
}

#[test]
fn every_kind_of_input_renders_a_page_with_its_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::opencode::build_db(
        &dir.path().join("opencode.db"),
        &common::opencode::sessions(),
    );
    let storage = dir.path().join("storage");
    storage_from_export(&repo("tests/fixtures/checks/export-healthy.json"), &storage);
    let chunks = dir.path().join("capture.chunks.txt");
    std::fs::write(
        &chunks,
        "{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"<script>alert(1)</script>\"},\"finish_reason\":null}]}\n{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n",
    )
    .unwrap();
    let cases: Vec<(std::path::PathBuf, &str)> = vec![
        (repo("samples/zod-failed-status.log"), "agent-log"),
        (repo("tests/fixtures/html/script-in-log.log"), "agent-log"),
        (repo("samples/sse-concatenated-chunk.sse"), "sse"),
        (chunks, "json-lines"),
        (
            repo("tests/fixtures/checks/tool-use-without-result.json"),
            "http-recording",
        ),
        (repo("samples/har-streaming-response.har"), "har"),
        (db, "opencode-db"),
        (
            repo("tests/fixtures/checks/export-healthy.json"),
            "opencode-export",
        ),
        (storage, "opencode-storage"),
        (
            repo("tests/fixtures/checks/session-hidden.sql"),
            "opencode-sql-dump",
        ),
        (
            repo("tests/fixtures/transcripts/claude-orphan-tool.jsonl"),
            "claude-transcript",
        ),
        (
            repo("tests/fixtures/transcripts/codex-task-error.jsonl"),
            "codex-rollout",
        ),
    ];
    for (path, format) in &cases {
        assert_input_page(path, format);
    }
}

#[test]
#[cfg_attr(
    not(rewind_corpus),
    ignore = "../shared/corpus not found (set REWIND_CORPUS to its path)"
)]
fn every_kind_of_input_of_the_corpus_renders_a_page() {
    let corpus = common::corpus();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    let sql =
        std::fs::read_to_string(corpus.join("opencode/opencode-1.18-multi-session.sql")).unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(&sql)
        .unwrap();
    let first_in = |rel: &str, ext: &str| -> std::path::PathBuf {
        let mut found: Vec<_> = walk(&corpus.join(rel))
            .into_iter()
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
                name.ends_with(ext) && name != "requests.jsonl"
            })
            .collect();
        found.sort();
        found
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no {ext} under {rel}"))
    };
    let cases = [
        (
            corpus.join("agent-logs/issue-149-zod-failed-status.log"),
            "agent-log",
        ),
        (corpus.join("sse/openai-chat/opencode-malformed.sse"), "sse"),
        (first_in("sse/ai-sdk-chunks", ".chunks.txt"), "json-lines"),
        (
            corpus.join("sse/recordings/native-anthropic-tool-call.json"),
            "http-recording",
        ),
        (db, "opencode-db"),
        (
            first_in("transcripts/claude-code/tool", ".jsonl"),
            "claude-transcript",
        ),
        (first_in("transcripts/codex", ".jsonl"), "codex-rollout"),
    ];
    for (path, format) in &cases {
        assert_input_page(path, format);
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn past_fifty_sessions_with_findings_the_others_are_collapsed_and_linked() {
    let sample = std::fs::read_to_string(repo("samples/pending-tool-aborted.log")).unwrap();
    let mut log = String::new();
    for i in 0..60 {
        log.push_str(
            &sample
                .replace("ses_", &format!("ses_{i:02}"))
                .replace("msg_", &format!("msg_{i:02}"))
                .replace("prt_", &format!("prt_{i:02}")),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.log");
    std::fs::write(&path, log).unwrap();
    let (code, page) = html(&[], &[&path]);
    assert_eq!(code, 1);
    assert_page(&page);
    assert_links(&page);
    assert_eq!(count(&page, "<details class=\"session findings\""), 60);
    assert_eq!(count(&page, " open><summary>"), 50);
    assert!(page.contains("Sessions with findings (60); the first 50 are expanded:"));
    let jump = page.split("<ul class=\"jump\">").nth(1).unwrap();
    let jump = jump.split("</ul>").next().unwrap();
    assert_eq!(count(jump, "<a href=\"#"), 60);
}

#[test]
fn replay_compare_of_a_recorded_request_without_stream_names_both_processors() {
    let (_, page) = compare_html(
        &repo("tests/fixtures/checks/tool-use-without-result.json"),
        "opencode",
        "opencode-fixed",
    );
    assert_page(&page);
    assert_links(&page);
    assert!(
        page.contains("<th class=\"proc\">opencode</th><th class=\"proc\">opencode-fixed</th>")
    );
    assert!(page.contains("recorded request only (no stream)"));
    assert!(page.contains("neither put anything on the timeline"));
    assert!(!page.contains("<table class=\"compare\">"));
}

#[test]
fn a_log_of_many_sessions_stays_within_the_page_budget() {
    // 20,000 sessions that each fail: in full, one timeline and two finding cards each would
    // make a page of over 100 MB. Past the budget the rest are listed one finding a line.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.log");
    let mut log = String::new();
    for i in 0..20_000 {
        let s = format!("ses_{i:08}");
        log.push_str(&format!(
            "{{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_{i:08}\",\"sessionID\":\"{s}\",\"messageID\":\"msg_{i:08}\",\"type\":\"step-start\"}}}}\n{{\"type\":\"error\",\"timestamp\":2,\"sessionID\":\"{s}\",\"error\":{{\"name\":\"UnknownError\",\"data\":{{\"message\":\"boom {i}\"}}}}}}\n"
        ));
    }
    std::fs::write(&path, log).unwrap();
    let (code, page) = html(&[], &[&path]);
    assert_eq!(code, 1);
    assert_page(&page);
    assert!(page.len() < 40 << 20, "{} bytes", page.len());
    assert_eq!(count(&page, "part of the page reached 16384 KiB"), 1);
    // Every session with findings is still there, the late ones one finding a line.
    assert_eq!(count(&page, "<details class=\"session findings\""), 20_000);
    let brief = count(&page, "<li class=\"finding brief sev-");
    assert!(brief > 20_000, "{brief}");
    assert!(page.contains("id=\"u1-s19999\""));
}
