//! A mutation fuzzer on stable Rust: mutates the corpus (`../shared/corpus` when present),
//! `samples/` and `tests/fixtures/`, and runs every command, input kind and output format on
//! each mutant in this process (`rewind::run_args`), catching panics and flagging inputs that
//! take longer than a time limit. Inputs that once failed are kept in `tests/fixtures/fuzz/` and
//! run by `fuzz_regressions` on every `cargo test`.
//!
//! * `cargo test --test fuzz`: a short seeded run (`REWIND_FUZZ_SECS`, default 3 s).
//! * The long run: `REWIND_FUZZ_SECS=1800 cargo test --release --test fuzz -- --ignored --nocapture`
//!   prints the inputs run, the CPU time, panics and timeouts. `REWIND_FUZZ_SEED` picks the seed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `0..n` (`0` when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Pieces of the protocols and of JSON that make mutants reach deep code.
const TOKENS: &[&str] = &[
    "data: ",
    "data:",
    "data: [DONE]\n\n",
    "event: ",
    "event: error\n",
    "id: 7\n",
    "retry: 10\n",
    ": ping\n",
    "\n\n",
    "\r\n",
    "\r",
    "{\"type\":",
    "{\"type\":\"tool_use\",",
    "{\"type\":\"step_finish\",",
    "\"status\":\"failed\"",
    "\"status\":\"running\"",
    "\"finish_reason\":\"tool_calls\"",
    "\"choices\":[{\"delta\":{\"content\":\"",
    "message_start",
    "content_block_delta",
    "response.completed",
    "[2026-03-25T10:13:20.082Z] [INFO] ",
    "ZodError: [",
    "\"sessionID\":\"ses_",
    "\"callID\":\"call_",
    "INSERT INTO part VALUES(",
    "CREATE TABLE `message`",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    "\\u00e9",
    "\\ud83d",
    ",",
    ":",
    "null",
    "é",
    "€",
    "😀",
    "\u{202e}",
    "\u{feff}",
    "\u{1b}[31m",
    "\u{0}",
    "\u{fffd}",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "1e308",
    "-1e-400",
    "0.0000000000000000000001",
    "NaN",
    "99999999999999999999999999999999",
];

fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = data.len();
        match rng.below(10) {
            // Bit flip.
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            // Random bytes inserted.
            1 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                data.splice(at..at, bytes);
            }
            // A range deleted.
            2 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(256));
                data.drain(at..at + n);
            }
            // Spliced with another seed.
            3 if !other.is_empty() => {
                let at = rng.below(len + 1);
                let from = rng.below(other.len());
                let n = 1 + rng.below((other.len() - from).min(4096));
                data.truncate(at);
                data.extend_from_slice(&other[from..from + n]);
            }
            // Truncated.
            4 if len > 0 => data.truncate(rng.below(len)),
            // Two chunks swapped.
            5 if len > 8 => {
                let a = rng.below(len / 2);
                let b = len / 2 + rng.below(len / 2);
                let n = 1 + rng.below((len / 2 - a).min(len - b).min(512));
                let first = data[a..a + n].to_vec();
                let second = data[b..b + n].to_vec();
                data[a..a + n].copy_from_slice(&second);
                data[b..b + n].copy_from_slice(&first);
            }
            // A range duplicated.
            6 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(1024));
                let copy = data[at..at + n].to_vec();
                data.splice(at..at, copy);
            }
            // A line ending or a byte replaced by a protocol token, or a token inserted.
            _ => {
                let token = rng.pick(TOKENS).as_bytes();
                let at = rng.below(len + 1);
                if rng.below(2) == 0 && at < len {
                    data.splice(at..at + 1, token.iter().copied());
                } else {
                    data.splice(at..at, token.iter().copied());
                }
            }
        }
    }
    data
}

/// The command lines every input is run with (the input path is appended).
fn command_lines() -> Vec<Vec<String>> {
    let v = |args: &[&str]| args.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let mut lines = Vec::new();
    for format in ["human", "json", "jsonl", "sarif", "github", "junit"] {
        lines.push(v(&["diagnose", "--color", "always", "--format", format]));
        lines.push(v(&["check", "--no-config", "-j", "1", "--format", format]));
    }
    for kind in [
        "agent-log",
        "sse",
        "json-lines",
        "http-recording",
        "har",
        "opencode-db",
        "opencode-export",
        "opencode-sql-dump",
    ] {
        lines.push(v(&["diagnose", "--format", "json", "--input", kind]));
    }
    lines.push(v(&["replay"]));
    lines.push(v(&["replay", "--format", "json"]));
    lines.push(v(&["replay", "--compare", "opencode", "opencode-fixed"]));
    lines.push(v(&[
        "replay",
        "--processor",
        "tanstack-pre-727",
        "--format",
        "json",
    ]));
    lines.push(v(&["replay", "--processor", "agent-0.8"]));
    lines.push(v(&["sessions"]));
    lines.push(v(&["sessions", "--format", "json"]));
    lines.push(v(&["repair", "--dry-run"]));
    lines.push(v(&[
        "check",
        "--no-config",
        "-j",
        "1",
        "--forget-from-parts",
        "1",
    ]));
    lines
}

thread_local! {
    /// Set on the threads whose panics the harness records instead of printing.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Installs (once) a panic hook that stays silent on the harness's worker threads.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                default(info);
            }
        }));
    });
}

/// Why an input failed (its fields are read through `Debug` in the test's messages).
#[allow(dead_code)]
#[derive(Debug)]
enum Failure {
    Panic {
        args: Vec<String>,
        message: String,
    },
    Status {
        args: Vec<String>,
        status: u8,
        stderr: String,
    },
    /// The input read as an agent log gave other output when the replay forgot what it no
    /// longer needed (`--forget-from-parts 0`) than with the whole model.
    Differs {
        whole: String,
        forgetting: String,
    },
    Timeout,
}

/// The command line whose output must not change when a log's replay forgets, and the option
/// that makes it forget from the first message.
const DIFFERENTIAL: [&str; 5] = ["diagnose", "--format", "json", "--input", "agent-log"];
const FORGETTING: [&str; 2] = ["--forget-from-parts", "0"];

/// Runs every command line on `input` (written to a file in `dir`) on a worker thread; a run
/// that has not ended after `limit` is a timeout (its thread is left behind). `differential`
/// also compares the input's diagnosis as an agent log with and without forgetting.
fn run_input(
    input: &[u8],
    dir: &Path,
    limit: Duration,
    lines: &[Vec<String>],
    differential: bool,
) -> Option<Failure> {
    quiet_panics();
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("input-{n}"));
    std::fs::write(&path, input).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut lines = lines.to_vec();
    if differential {
        let whole: Vec<String> = DIFFERENTIAL.iter().map(|s| (*s).to_owned()).collect();
        let mut forgetting = whole.clone();
        forgetting.extend(FORGETTING.iter().map(|s| (*s).to_owned()));
        lines.push(whole);
        lines.push(forgetting);
    }
    let worker_path = path.clone();
    std::thread::spawn(move || {
        QUIET.with(|q| q.set(true));
        let mut failure = None;
        let mut outputs = Vec::new();
        for line in &lines {
            let mut args = vec!["rewind".to_owned()];
            args.extend(line.iter().cloned());
            args.push(worker_path.display().to_string());
            let run = std::panic::catch_unwind(|| {
                let (mut out, mut err) = (Vec::new(), Vec::new());
                let status = rewind::run_args(&args, &mut out, &mut err);
                (status, out, err)
            });
            match run {
                Err(payload) => {
                    let message = payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default();
                    failure = Some(Failure::Panic {
                        args: line.clone(),
                        message,
                    });
                    break;
                }
                Ok((status, _, err)) if status > 2 => {
                    failure = Some(Failure::Status {
                        args: line.clone(),
                        status,
                        stderr: String::from_utf8_lossy(&err).into_owned(),
                    });
                    break;
                }
                Ok((status, out, _)) => outputs.push((status, out)),
            }
        }
        if failure.is_none()
            && differential
            && let [.., (s1, whole), (s2, forgetting)] = outputs.as_slice()
            && (s1 != s2 || whole != forgetting)
        {
            failure = Some(Failure::Differs {
                whole: String::from_utf8_lossy(whole).into_owned(),
                forgetting: String::from_utf8_lossy(forgetting).into_owned(),
            });
        }
        let _ = tx.send(failure);
    });
    let result = match rx.recv_timeout(limit) {
        Ok(failure) => failure,
        Err(_) => Some(Failure::Timeout),
    };
    if !matches!(result, Some(Failure::Timeout)) {
        let _ = std::fs::remove_file(&path);
    }
    result
}

/// Files under `dir` (recursively) up to `max` bytes.
fn files_under(dir: &Path, max: u64, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, max, out);
        } else if p.metadata().is_ok_and(|m| m.is_file() && m.len() <= max) {
            out.push(p);
        }
    }
}

/// The seed inputs up to `max` bytes (the regression fixtures are run on their own).
fn seeds(max: u64) -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    files_under(&common::corpus(), max, &mut paths);
    files_under(&common::repo("samples"), max, &mut paths);
    files_under(&common::repo("tests/fixtures"), max, &mut paths);
    paths.retain(|p| !p.starts_with(regression_dir()));
    paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| !b.is_empty())
        .collect()
}

fn regression_dir() -> PathBuf {
    common::repo("tests/fixtures/fuzz")
}

/// Keeps a failing input as a regression fixture; returns its path.
fn keep(input: &[u8], what: &str) -> PathBuf {
    let dir = regression_dir();
    std::fs::create_dir_all(&dir).unwrap();
    // FNV-1a: a stable name for the same bytes.
    let hash = input.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let path = dir.join(format!("{what}-{hash:016x}.bin"));
    std::fs::write(&path, input).unwrap();
    path
}

struct Stats {
    inputs: u64,
    panics: Vec<(PathBuf, String)>,
    timeouts: Vec<PathBuf>,
}

fn fuzz(secs: u64, seed: u64, limit: Duration, max_seed: u64) -> Stats {
    let seeds = seeds(max_seed);
    assert!(!seeds.is_empty(), "no seed inputs");
    let lines = command_lines();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(seed);
    let mut stats = Stats {
        inputs: 0,
        panics: Vec::new(),
        timeouts: Vec::new(),
    };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(secs) {
        let a = rng.pick(&seeds);
        let b = rng.pick(&seeds);
        let input = mutate(&mut rng, a, b);
        // A few command lines per input keeps the run varied; every line runs on some inputs.
        let chosen: Vec<Vec<String>> = (0..4).map(|_| rng.pick(&lines).clone()).collect();
        let differential = rng.below(2) == 0;
        stats.inputs += 1;
        match run_input(&input, dir.path(), limit, &chosen, differential) {
            None => {}
            Some(Failure::Timeout) => {
                let p = keep(&input, "timeout");
                eprintln!("timeout ({limit:?}): {}", p.display());
                stats.timeouts.push(p);
            }
            Some(
                f @ (Failure::Panic { .. } | Failure::Status { .. } | Failure::Differs { .. }),
            ) => {
                let p = keep(&input, "panic");
                eprintln!("failure: {f:?}: {}", p.display());
                stats.panics.push((p, format!("{f:?}")));
            }
        }
    }
    stats
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn cpu_seconds() -> f64 {
    // utime + stime of this process, from /proc (Linux); 0 elsewhere.
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = fields
        .get(11..13)
        .map(|f| f.iter().filter_map(|t| t.parse::<f64>().ok()).sum())
        .unwrap_or(0.0);
    ticks / 100.0
}

fn report(stats: &Stats, wall: Duration) {
    eprintln!(
        "fuzz: {} inputs in {:.0} s wall, {:.1} CPU-minutes; {} panics, {} timeouts",
        stats.inputs,
        wall.as_secs_f64(),
        cpu_seconds() / 60.0,
        stats.panics.len(),
        stats.timeouts.len()
    );
}

#[test]
fn fuzz_short_seeded_run() {
    let start = Instant::now();
    let stats = fuzz(
        env_u64("REWIND_FUZZ_SECS", 3),
        env_u64("REWIND_FUZZ_SEED", 1),
        Duration::from_secs(env_u64("REWIND_FUZZ_LIMIT", 60)),
        // Small seeds keep the short run's time per input far below the limit on any machine.
        env_u64("REWIND_FUZZ_MAX_SEED", 256 << 10),
    );
    report(&stats, start.elapsed());
    assert!(
        stats.panics.is_empty() && stats.timeouts.is_empty(),
        "failing inputs were kept in tests/fixtures/fuzz/: {:?} {:?}",
        stats.panics,
        stats.timeouts
    );
}

#[test]
#[ignore = "the long run: REWIND_FUZZ_SECS=1800 cargo test --release --test fuzz -- --ignored --nocapture"]
fn fuzz_long_run() {
    let start = Instant::now();
    let stats = fuzz(
        env_u64("REWIND_FUZZ_SECS", 600),
        env_u64("REWIND_FUZZ_SEED", 0x5eed),
        Duration::from_secs(env_u64("REWIND_FUZZ_LIMIT", 20)),
        env_u64("REWIND_FUZZ_MAX_SEED", 2 << 20),
    );
    report(&stats, start.elapsed());
    assert!(stats.panics.is_empty() && stats.timeouts.is_empty());
}

/// Every input that once failed, with every command line.
#[test]
fn fuzz_regressions() {
    let mut paths = Vec::new();
    files_under(&regression_dir(), u64::MAX, &mut paths);
    let lines = command_lines();
    let dir = tempfile::tempdir().unwrap();
    for path in paths {
        let input = std::fs::read(&path).unwrap();
        let failure = run_input(&input, dir.path(), Duration::from_secs(120), &lines, true);
        assert!(failure.is_none(), "{}: {failure:?}", path.display());
    }
}
