//! The exit status contract, and whether the process exits once its command is done.

use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status contract: 0 clean, 1 findings at or above `--fail-on`, 2 usage, I/O or
/// format errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Clean = 0,
    Findings = 1,
    Error = 2,
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(s: ExitStatus) -> Self {
        std::process::ExitCode::from(s as u8)
    }
}

/// Whether the process exits when the command is done (the binary's way, `cli::run`), as
/// opposed to running commands one after the other in process (`cli::dispatch`,
/// `rewind::run_args`): only then may a command leave what it built to the operating system
/// instead of freeing it.
static EXITS_AFTER: AtomicBool = AtomicBool::new(false);

/// See [`EXITS_AFTER`].
pub(crate) fn exits_after() -> bool {
    EXITS_AFTER.load(Ordering::Relaxed)
}

/// Says that the process exits once the command is done.
pub(crate) fn set_exits_after() {
    EXITS_AFTER.store(true, Ordering::Relaxed);
}
