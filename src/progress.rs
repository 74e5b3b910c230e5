//! A progress indicator on standard error for long work (large inputs, large stores, `check`
//! over many files). It is drawn only when standard error is a terminal, the report is for people
//! (`human` or `concise`, without `--quiet`) and not in CI (`$CI` set): pipes, files, machine
//! formats and CI logs get nothing.
//!
//! For one input file its line says how many bytes were read of how many, the percentage and
//! the time left; for standard input or a FIFO (whose size is unknown) the bytes read so far; for
//! a database or a storage folder (read by SQLite, or as many files) the units diagnosed.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs at least this large get an indicator.
const LARGE_INPUT: u64 = 8 << 20;

/// How often the line of an input being read is brought up to date.
const TICK: Duration = Duration::from_millis(120);

/// A progress bar or spinner, or nothing.
#[derive(Debug, Default, Clone)]
pub struct Progress(Option<ProgressBar>);

/// The one place it is decided whether an indicator is drawn: on a terminal, for people, never
/// in CI.
pub fn decide(stderr_is_terminal: bool, for_people: bool, in_ci: bool) -> bool {
    stderr_is_terminal && for_people && !in_ci
}

fn shown(for_people: bool) -> bool {
    decide(
        std::io::stderr().is_terminal() && !crate::commands::capturing(),
        for_people,
        std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0"),
    )
}

/// What is known of the input being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Size {
    /// A file of this many bytes.
    Known(u64),
    /// Standard input or a FIFO.
    Unknown,
}

/// The indicator's line for an input: `12.0 MiB of 48.0 MiB (25%), about 9 s left`, or
/// `12.0 MiB read` when the size is unknown. The estimate appears once a second has passed and
/// some bytes were read (before that it would be a guess).
fn input_line(read: u64, size: Size, elapsed: Duration) -> String {
    match size {
        Size::Unknown => format!("{} read", bytes(read)),
        Size::Known(total) => {
            let read = read.min(total);
            let percent = (read as u128 * 100)
                .checked_div(total as u128)
                .unwrap_or(100);
            let mut line = format!("{} of {} ({percent}%)", bytes(read), bytes(total));
            if read > 0 && read < total && elapsed >= Duration::from_secs(1) {
                let left = elapsed.as_secs_f64() * (total - read) as f64 / read as f64;
                line.push_str(&format!(", about {} left", seconds(left)));
            }
            line
        }
    }
}

/// `512 B`, `3.4 KiB`, `12.0 MiB`, `1.2 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `9 s`, `2 min 5 s`, `1 h 3 min`.
fn seconds(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

impl Progress {
    /// A bar over `n` files (when there are more than a few), when `for_people` (the report is
    /// human or concise, and not `--quiet`).
    pub fn files(n: usize, for_people: bool) -> Progress {
        if n < 20 || !shown(for_people) {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {pos}/{len} files [{bar:30}] {elapsed}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(TICK);
        Progress(Some(bar))
    }

    /// An indicator while one large input (a big file, standard input, a database, a storage
    /// folder) is read, when `for_people`.
    pub fn input(path: &Path, for_people: bool) -> Progress {
        if !shown(for_people) {
            return Progress(None);
        }
        let name = crate::text::InputText::from(&path.display().to_string()).for_terminal();
        // Never open a one-shot input (a pipe, standard input) here: that would consume it.
        let size = if crate::ingest::input::is_one_shot(path) {
            Size::Unknown
        } else {
            match std::fs::metadata(path) {
                Ok(m)
                    if m.is_file()
                        && !crate::ingest::input::is_sqlite_file(path)
                        && m.len() >= LARGE_INPUT =>
                {
                    Size::Known(m.len())
                }
                Ok(m)
                    if m.is_dir()
                        || (m.is_file() && crate::ingest::input::is_sqlite_file(path)) =>
                {
                    return Progress::units(&name);
                }
                _ => return Progress(None),
            }
        };
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
            bar.set_style(style);
        }
        let start = crate::ingest::bytes_read();
        let since = Instant::now();
        let message = move || {
            let read = crate::ingest::bytes_read().saturating_sub(start);
            format!("{name}: {}", input_line(read, size, since.elapsed()))
        };
        bar.set_message(message());
        bar.enable_steady_tick(TICK);
        let ticking = bar.clone();
        // Brings the line up to date until the bar is finished (or the process ends).
        let _ = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                while !ticking.is_finished() {
                    std::thread::sleep(TICK);
                    ticking.set_message(message());
                }
            });
        Progress(Some(bar))
    }

    /// A spinner counting the units diagnosed (sessions of a store).
    fn units(name: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {prefix}: {pos} units diagnosed, {elapsed}")
        {
            bar.set_style(style);
        }
        bar.set_prefix(name.to_owned());
        bar.enable_steady_tick(TICK);
        Progress(Some(bar))
    }

    /// One more unit (a file checked, a session diagnosed).
    pub fn inc(&self) {
        if let Some(b) = &self.0 {
            b.inc(1);
        }
    }

    /// Runs `f` with the indicator cleared, so output to the same terminal is not torn.
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.0 {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// Removes the indicator.
    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_on_a_terminal_for_people_outside_ci() {
        assert!(decide(true, true, false));
        assert!(!decide(false, true, false), "not in a pipe or a file");
        assert!(
            !decide(true, false, false),
            "not with --quiet or a machine format"
        );
        assert!(!decide(true, true, true), "never in CI");
    }

    #[test]
    fn a_file_shows_bytes_percent_and_time_left() {
        let mib = 1 << 20;
        let total = Size::Known(48 * mib);
        assert_eq!(input_line(0, total, Duration::ZERO), "0 B of 48.0 MiB (0%)");
        // No estimate before a second has passed.
        assert_eq!(
            input_line(12 * mib, total, Duration::from_millis(500)),
            "12.0 MiB of 48.0 MiB (25%)"
        );
        assert_eq!(
            input_line(12 * mib, total, Duration::from_secs(3)),
            "12.0 MiB of 48.0 MiB (25%), about 9 s left"
        );
        assert_eq!(
            input_line(mib, total, Duration::from_secs(10)),
            "1.0 MiB of 48.0 MiB (2%), about 7 min 50 s left"
        );
        // Read again (a rule that needs a second pass): never past the whole.
        assert_eq!(
            input_line(60 * mib, total, Duration::from_secs(10)),
            "48.0 MiB of 48.0 MiB (100%)"
        );
        assert_eq!(
            input_line(0, Size::Known(0), Duration::ZERO),
            "0 B of 0 B (100%)"
        );
    }

    #[test]
    fn standard_input_shows_a_byte_count() {
        assert_eq!(
            input_line(1536, Size::Unknown, Duration::from_secs(5)),
            "1.5 KiB read"
        );
        assert_eq!(input_line(17, Size::Unknown, Duration::ZERO), "17 B read");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(seconds(4000.0), "1 h 6 min");
    }
}
