//! Many alike findings in one file: the outputs read by people (human, HTML, GitHub) show the
//! first few of a group and count the rest, so their size does not grow with the count; the
//! machine formats list every finding. Running out of memory is one line and exit status 2.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::rewind;

/// An agent log of one session whose one step starts `n` tools that are left running: `n`
/// alike `tool-never-finished` findings (their ids and line numbers differ).
fn running_tools(n: usize) -> tempfile::NamedTempFile {
    let s = "ses_000001";
    let m = "msg_00000001";
    let mut text = format!(
        "{{\"type\":\"step_start\",\"timestamp\":1,\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_start\",\"sessionID\":\"{s}\",\"messageID\":\"{m}\",\"type\":\"step-start\"}}}}\n"
    );
    for i in 0..n {
        text.push_str(&format!(
            "{{\"type\":\"tool_use\",\"timestamp\":{t},\"sessionID\":\"{s}\",\"part\":{{\"id\":\"prt_{i:08}\",\"sessionID\":\"{s}\",\"messageID\":\"{m}\",\"type\":\"tool\",\"callID\":\"call_{i:08}\",\"tool\":\"bash\",\"state\":{{\"status\":\"running\",\"input\":{{\"command\":\"ls\"}},\"time\":{{\"start\":{t}}}}}}}}}\n",
            t = i + 2
        ));
    }
    let file = tempfile::Builder::new().suffix(".log").tempfile().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

fn run(log: &std::path::Path, format: &str, env: &[(&str, &std::path::Path)]) -> String {
    let mut cmd = rewind();
    cmd.args(["diagnose", "--format", format]).arg(log);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{format}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// How many `tool-never-finished` findings `format` lists for a log of `n` running tools.
fn count(n: usize, format: &str) -> usize {
    let log = running_tools(n);
    let stdout = run(log.path(), format, &[]);
    match format {
        "json" => {
            let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            let all = doc["findings"].as_array().unwrap();
            all.iter()
                .filter(|f| f["rule"] == "tool-never-finished")
                .count()
        }
        "sarif" => {
            let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            let all = doc["runs"][0]["results"].as_array().unwrap();
            all.iter()
                .filter(|r| r["ruleId"] == "tool-never-finished")
                .count()
        }
        "jsonl" => stdout
            .lines()
            .filter(|l| l.contains("\"rule\":\"tool-never-finished\""))
            .count(),
        "junit" => stdout.matches("[tool-never-finished]").count(),
        "concise" => stdout.matches("[tool-never-finished]").count(),
        _ => unreachable!(),
    }
}

#[test]
fn the_machine_formats_and_concise_list_every_finding() {
    for format in ["json", "sarif", "jsonl", "junit", "concise"] {
        assert_eq!(count(300, format), 300, "{format}");
    }
}

#[test]
fn people_outputs_stay_the_same_size_as_alike_findings_grow() {
    // Past 300 entries a session's timeline is cut: both logs are past it.
    let (small, large) = (running_tools(500), running_tools(2000));
    let dir = tempfile::tempdir().unwrap();
    for format in ["human", "html", "github"] {
        let summary = |name: &str| dir.path().join(format!("{format}-{name}.md"));
        let a = run(
            small.path(),
            format,
            &[("GITHUB_STEP_SUMMARY", &summary("small"))],
        );
        let b = run(
            large.path(),
            format,
            &[("GITHUB_STEP_SUMMARY", &summary("large"))],
        );
        // The counts' digits (and the page's size line) differ; nothing else grows.
        assert!(
            b.len() < a.len() + 400,
            "{format}: {} bytes for 500 findings, {} for 2000",
            a.len(),
            b.len()
        );
        assert!(
            b.contains("1,995 more like these"),
            "{format} counts the rest: {b}"
        );
        if format == "github" {
            let (ma, mb) = (
                std::fs::read_to_string(summary("small")).unwrap(),
                std::fs::read_to_string(summary("large")).unwrap(),
            );
            assert!(mb.len() < ma.len() + 100, "{ma}\n---\n{mb}");
            assert!(mb.contains("1,995 more like these"), "{mb}");
            // The step left open, and the first 5 tools.
            assert_eq!(b.lines().filter(|l| l.starts_with("::error")).count(), 6);
        }
    }
}

/// Running out of memory under an address-space limit: one line on standard error, exit 2.
#[cfg(target_os = "linux")]
#[test]
fn running_out_of_memory_is_one_line_and_exit_2() {
    use std::process::Command;
    let prlimit = ["/usr/bin/prlimit", "/bin/prlimit"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(prlimit) = prlimit else {
        println!("skipped: no prlimit to limit the address space");
        return;
    };
    let bin = assert_cmd::cargo::cargo_bin("rewind");
    // About 14 MB, which a diagnosis cannot hold in 100 MiB of address space.
    let log = running_tools(50_000);
    let limited = |limit_mb: u64, args: &[&std::ffi::OsStr]| {
        Command::new(prlimit)
            .arg(format!("--as={}", limit_mb * 1024 * 1024))
            .arg(&bin)
            .args(args)
            .output()
            .unwrap()
    };
    // The limit must leave room to start: `rewind --version` runs under it.
    let limit = 100;
    let start = limited(limit, &["--version".as_ref()]);
    if !start.status.success() {
        println!(
            "skipped: rewind cannot start under a {limit} MiB address space here ({:?})",
            start.status
        );
        return;
    }
    let out = limited(
        limit,
        &[
            "diagnose".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            log.path().as_os_str(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(1) {
        println!("skipped: the input fitted in {limit} MiB here");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Mostly the allocator's failure; a thread that cannot get its stack says so instead.
    assert!(
        stderr.starts_with("error: out of memory") || stderr.contains("cannot start a thread"),
        "{stderr}"
    );
}
