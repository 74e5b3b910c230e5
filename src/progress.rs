//! A progress indicator on standard error for long work (large inputs, large stores, `check`
//! over many files), shown only when standard error is a terminal: pipes, files and CI logs get
//! nothing.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs at least this large get a spinner.
const LARGE_INPUT: u64 = 8 << 20;

/// A progress bar or spinner, or nothing.
#[derive(Debug, Default, Clone)]
pub struct Progress(Option<ProgressBar>);

fn shown() -> bool {
    std::io::stderr().is_terminal() && !crate::commands::capturing()
}

impl Progress {
    /// A bar over `n` files (when there are more than a few).
    pub fn files(n: usize) -> Progress {
        if n < 20 || !shown() {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{spinner} {pos}/{len} files [{bar:30}] {elapsed}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(bar))
    }

    /// A spinner while one large input (a big file, a database, a storage folder) is read.
    pub fn input(path: &Path) -> Progress {
        if !shown() {
            return Progress(None);
        }
        // Never open a one-shot input (a pipe, standard input) here: that would consume it.
        let large = std::fs::metadata(path)
            .is_ok_and(|m| m.is_dir() || (m.is_file() && (m.len() >= LARGE_INPUT || is_db(path))));
        if !large {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message(format!("{}: reading", path.display()));
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(bar))
    }

    /// One more unit (a file checked, a session diagnosed).
    pub fn inc(&self) {
        if let Some(b) = &self.0 {
            b.inc(1);
            if b.length().is_none() {
                b.set_message(format!("{} units diagnosed", b.position()));
            }
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

fn is_db(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == b"SQLite format 3\0")
}
